"""``#if``/``#elif``/``#ifdef``/``#ifndef`` decided as the C preprocessor does
(``kernel_model.conditionals``), for both readers of a file's ``#define``s: the integer
constants of specs and drafts (``spec.defines``) and the macros the passes expand
(``kernel_model.macros``); a condition cudalens cannot evaluate keeps every branch and says
why."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens.kernel_model.conditionals import Unevaluable, evaluate
from cudalens.kernel_model.macros import file_macros, header_macros, why_no_value
from cudalens.kernel_model.syntax import parse
from cudalens.spec.defines import file_constants, unsure_defines
from cudalens.target import load_target

MACROS = {"N": (None, "1024"), "M": (None, "(N / 4)"), "TWICE": (("x",), "((x) * 2)"),
          "STR": (("x",), "#x"), "MODE": (None, "fast"), "EMPTY": (None, "")}


def lookup(name):
    return MACROS.get(name)


@pytest.mark.parametrize("condition, value", [
    ("N == 1024", 1), ("M > 255 && M < 257", 1), ("defined(N) && !defined NOPE", 1),
    ("TWICE(M) == 512", 1), ("-1 < 0", 1), ("-1 < 0u", 0), ("0x10 | 0b1", 17),
    ("(1 << 4) >> 2", 4), ("7 % -3", 1), ("-7 / 2", -3), ("10 ^ 3 & 6", 8),
    ("NOT_A_MACRO + 1", 1), ("N > 512 ? 32 : 16", 32), ("'A' == 65", 1), ("1024ULL == N", 1),
    ("0 && N / 0", 0), ("1 || 1 / 0", 1), ("true + false", 1), ("~0u == 18446744073709551615u", 1),
    ("__CUDACC__", 1), ("defined(__cplusplus)", 1), ("0 && __CUDA_ARCH__ >= 800", 0),
])
def test_conditions_evaluate_as_the_preprocessor_does(condition, value):
    assert evaluate(condition, lookup) == value


@pytest.mark.parametrize("condition, why", [
    ("STR(a)", "STR is a function-like macro cudalens cannot expand (it uses #, ## or ...)"),
    ("PICK(1)", "'PICK(' calls no macro cudalens knows of"),
    ("MODE == 1", "a macro's replacement 'fast' is not an integer"),
    ("N / 0", "a division by zero"),
    ("EMPTY", "the condition is empty"),
    ("1.5 > 1", "'1.5' is not an integer"),
    ("__CUDA_ARCH__ >= 800", "__CUDA_ARCH__ is defined only when nvcc compiles device code, "
                             "as the architecture compiled for, and not in the host pass"),
    ("defined(__CUDA_ARCH__)", "__CUDA_ARCH__ is defined only when nvcc compiles device "
                               "code, as the architecture compiled for, and not in the host pass"),
    ("__has_include(<cub/cub.cuh>)", "__has_include(...) asks the compiler, which cudalens "
                                     "cannot do"),
])
def test_conditions_that_cannot_be_evaluated_say_why(condition, why):
    with pytest.raises(Unevaluable) as exc:
        evaluate(condition, lookup)
    assert str(exc.value) == why


PROBES = {
    "eq": "#if BLOCK == 256\n#define TILE 16\n#else\n#define TILE 32\n#endif\n",
    "and": "#if defined(BLOCK) && BLOCK > 200\n#define WIDE 1\n#else\n#define WIDE 0\n#endif\n",
    "elif": "#if BLOCK == 64\n#define STEP 1\n#elif BLOCK == 128\n#define STEP 2\n#else\n"
            "#define STEP 3\n#endif\n",
    "nested": "#if BLOCK > 100\n#ifdef USE_BIG\n#define ROWS 8192\n#else\n#define ROWS 4096\n"
              "#endif\n#else\n#define ROWS 64\n#endif\n",
    "default": "#ifndef LEN\n#define LEN 4096\n#endif\n",
}


@pytest.mark.parametrize("block, big, expected", [
    (256, False, {"TILE": 16, "WIDE": 1, "STEP": 3, "ROWS": 4096, "LEN": 4096}),
    (128, False, {"TILE": 32, "WIDE": 0, "STEP": 2, "ROWS": 4096, "LEN": 4096}),
    (64, True, {"TILE": 32, "WIDE": 0, "STEP": 1, "ROWS": 64, "LEN": 4096}),
    (256, True, {"TILE": 16, "WIDE": 1, "STEP": 3, "ROWS": 8192, "LEN": 4096}),
])
def test_both_readers_take_the_branch_compiled(block, big, expected):
    text = f"#define BLOCK {block}\n" + "".join(PROBES.values())
    build = {"USE_BIG": 1} if big else None
    constants = file_constants(text, build)
    assert {k: constants[k] for k in expected} == expected
    found = header_macros([("a.h", text)], build=[("USE_BIG", "1")] if big else [])
    assert {k: int(found.macros[k].body) for k in expected} == expected
    assert not found.unknown


def test_build_defines_count_before_the_first_line():
    text = "#ifndef LEN\n#define LEN 4096\n#endif\n#if LEN < 2048\n#define HALF 1\n#else\n" \
           "#define HALF 0\n#endif\n"
    assert file_constants(text) == {"LEN": 4096, "HALF": 0}
    assert file_constants(text, {"LEN": 1024}) == {"LEN": 1024, "HALF": 1}
    found = header_macros([("a.h", text)], build=[("LEN", "1024")])
    assert found.macros["LEN"].origin == "-D" and found.macros["HALF"].body == "1"


def test_a_condition_on_the_arch_keeps_every_branch_and_says_why():
    text = "#if __CUDA_ARCH__ >= 800\n#define K 64\n#else\n#define K 32\n#endif\n" \
           "__global__ void k(float *a) { a[threadIdx.x % K] = 0.0f; }\n"
    # the spec side keeps today's first definition, and says it is a guess
    assert file_constants(text)["K"] == 64
    assert unsure_defines(text) == {"K": "K is defined under '#if __CUDA_ARCH__ >= 800' "
                                          "(line 1), which cudalens cannot evaluate: "
                                          "__CUDA_ARCH__ is defined only when nvcc compiles "
                                          "device code, as the architecture compiled for, and "
                                          "not in the host pass"}
    assert "K" not in file_macros(parse(text))
    assert why_no_value("K", text) == (
        "K is defined differently at line 2 and at line 4, under '#else (the branch after "
        "#if __CUDA_ARCH__ >= 800)' (line 3), which cudalens cannot evaluate: __CUDA_ARCH__ "
        "is defined only when nvcc compiles device code, as the architecture compiled for, "
        "and not in the host pass")


def test_a_define_under_a_condition_not_taken_is_not_expanded():
    text = "#define BLOCK 128\n#if BLOCK == 256\n#define BOUND n\n#endif\n" \
           "__global__ void k(float *a, int n) { if (threadIdx.x < BOUND) a[0] = 0.0f; }\n"
    assert "BOUND" not in file_macros(parse(text))
    assert why_no_value("BOUND", text) == ("BOUND is defined only under '#if BLOCK == 256' "
                                           "(line 2), a branch not taken, at line 3")
    taken = text.replace("BLOCK 128", "BLOCK 256")
    assert file_macros(parse(taken))["BOUND"].body == "n"


KERNEL = """#define BLOCK 128
#if BLOCK == 256
#define N 4096
#elif BLOCK >= 128 && defined(BLOCK)
#define N 2048
#else
#define N 1024
#endif

__global__ void fill(float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        out[i] = 1.0f;
}

int main()
{
    float *d;
    cudaMalloc(&d, N * sizeof(float));
    fill<<<(N + BLOCK - 1) / BLOCK, BLOCK>>>(d);
    return 0;
}
"""


def draft(tmp_path: Path, text: str, toml: str = ""):
    root = tmp_path / "proj"
    root.mkdir(parents=True)
    (root / ".git").mkdir()
    if toml:
        (root / "cudalens.toml").write_text(toml)
    cu = root / "fill.cu"
    cu.write_text(text)
    return load_target(cu, "fill")


def lengths(spec) -> dict[str, str]:
    return {p.name: p.length for p in spec.params if hasattr(p, "length")}


def test_a_guard_bound_under_elif_gives_the_drafts_length_and_grid(tmp_path):
    spec = draft(tmp_path, KERNEL).spec
    assert lengths(spec) == {"out": "2048"}
    assert spec.launch.grid == ("ceil_div(2048, block.x)",)
    assert not any(n.startswith("define ") for n in spec.notes), spec.notes


def test_the_builds_define_picks_the_branch_of_the_draft(tmp_path):
    text = KERNEL.replace("#define BLOCK 128\n", "#ifndef BLOCK\n#define BLOCK 128\n#endif\n")
    spec = draft(tmp_path, text, "[build]\ndefines = { BLOCK = 256 }\n").spec
    assert lengths(spec) == {"out": "4096"}
    assert spec.launch.grid == ("ceil_div(4096, block.x)",)


def test_an_unevaluable_condition_keeps_the_first_branch_with_a_note(tmp_path):
    spec = draft(tmp_path, KERNEL.replace("#if BLOCK == 256", "#if PICK(BLOCK)")).spec
    assert lengths(spec) == {"out": "4096"}  # as before: the first definition
    assert "define N = 4096: N is defined under '#if PICK(BLOCK)' (line 2), which cudalens " \
           "cannot evaluate: 'PICK(' calls no macro cudalens knows of; GUESS, check that " \
           "branch is the one compiled" in spec.notes


def test_the_cli_prints_the_evaluated_draft(tmp_path, capsys):
    from cudalens.cli import main

    root = tmp_path / "cli"
    root.mkdir()
    cu = root / "fill.cu"
    cu.write_text(KERNEL.replace("BLOCK 128", "BLOCK 64"))
    with pytest.raises(SystemExit) as exc:
        main(["spec", str(cu)])
    assert exc.value.code in (0, None)
    out = capsys.readouterr().out
    assert "out out: float[1024]" in out and "grid = ceil_div(1024, block.x)" in out


def test_a_pass_expands_the_branch_taken(tmp_path):
    from cudalens.engine.plan import plan_for_target

    text = KERNEL.replace("#define N 2048", "#define N n").replace(
        "fill(float *out)", "fill(float *out, int n)").replace("(d);", "(d, 2048);")
    target = draft(tmp_path, text)
    assert file_macros(parse(target.text))["N"].body == "n"
    plan = plan_for_target(target)
    assert any("gridstride" in c.passes for c in plan.candidates), \
        [(n.pass_name, n.reason) for n in plan.not_applied]
    target = draft(tmp_path / "b", text.replace("BLOCK 128", "BLOCK 256"))
    grid = [n for n in plan_for_target(target).not_applied if n.pass_name == "gridstride"]
    assert [n.reason for n in grid] == [
        "the guard's bound 'N' (line 13) is not a scalar parameter of the kernel"]

"""The spec corpus (tests/data/spec_corpus): drafts against hand-checked specs, the specs'
own validity, and the kernels compiled with real nvcc. No GPU needed.

Prints the per-kernel comparison and the exact-draft rate (run with ``-s`` to see it)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import pytest

import spec_corpus as sc
from cudalens.spec.model import BufferDecl
from cudalens.spec.parser import load_spec_for
from cudalens.spec.resolve import build_problem, instance_name

MIN_KERNELS = 25
MIN_EXACT_RATE = 0.80


@pytest.fixture(scope="module")
def entries():
    return sc.entries()


@pytest.fixture(scope="module")
def verdicts(entries):
    return [sc.compare(e, sc.draft_of(e)) for e in entries]


def test_corpus_size_and_pairs(entries):
    cus = sorted(p.stem for p in sc.CORPUS.glob("*.cu"))
    specs = sorted(p.name.removesuffix(".cu.spec") for p in sc.CORPUS.glob("*.spec"))
    assert cus == specs
    assert len(entries) >= MIN_KERNELS


def test_no_draft_faults_and_exact_rate(verdicts):
    print("\n" + sc.report(verdicts))
    faults = {v.name: v.faults for v in verdicts if v.faults}
    assert faults == {}
    rate = sum(v.exact for v in verdicts) / len(verdicts)
    assert rate >= MIN_EXACT_RATE, sc.report(verdicts)


def test_drafts_mark_what_they_guessed(entries, verdicts):
    """Every float scalar of every draft is from a launch site or marked GUESS, and the AdamW
    step takes its values from the launch (no silent 1.5 that turns it into NaN)."""
    adamw = next(v.draft for v in verdicts if v.name == "adamw")
    values = {p.name: p.expr for p in adamw.params if not isinstance(p, BufferDecl)}
    assert values == {"num_parameters": "num_parameters", "learning_rate": "1e-3",
                      "beta1": "0.9", "beta2": "0.999", "beta1_correction": "0.1",
                      "beta2_correction": "0.001", "eps": "1e-8", "weight_decay": "0.01"}
    assert "scalar beta1 = 0.9: from the launch at line 22 ('beta1')" in adamw.notes
    assert "scalar beta1_correction = 0.1: GUESS (the usual value for that name), confirm it" \
        in adamw.notes


def test_comparison_catches_faulting_drafts(entries):
    """The checker is not vacuous: a too-short length, row pointers without csr and an index
    range past the table each count as a fault."""
    spmv = next(e for e in entries if e.name == "spmv_csr")
    draft = sc.draft_of(spmv)
    assert sc.compare(spmv, draft).exact
    broken = replace(draft, params=tuple(
        replace(p, length="rows") if p.name == "values" else
        replace(p, fill="uniform", fill_args=()) if p.name == "row_ptr" else
        replace(p, high="rows + 5") if p.name == "col_idx" else p for p in draft.params))
    faults = sc.compare(spmv, broken).faults
    assert faults == [
        "row_ptr: row pointers drafted as uniform, not csr",
        "col_idx: index values drafted in (0, 1048581), outside the checked (0, 1048576)",
        "values: drafted length rows = 1048576, shorter than the checked nnz = 16777216",
    ]


@pytest.mark.parametrize("name, notes", [
    # the note gives the value drafted: 1024 rows halved with the defaults beside it
    ("encoder_fwd", ["size n_wte = 512: rows of wte, indexed by values read from inp; GUESS, "
                     "set it", "out: element type floatX is __nv_bfloat16"]),
    ("reduce_sum", ["drafted for reduce_sum<float, 256>, the first of 2 instances "
                    "(reduce_sum<float, 256>, reduce_sum<int, 128>): pick another with "
                    "--kernel 'NAME<ARGS>'"]),
    ("softmax_fwd", ["shared = block.x * 4: from the launch at line 33 "
                     "('block_size * sizeof(float)')"]),
    ("row_sum_smem", ["shared = C * 4: from the launch at line 20 ('smem')"]),
    ("spmv_csr", ["size nnz = 1 << 24: non-zeros of the CSR rows in row_ptr (a loop runs from "
                  "row_ptr[r] to row_ptr[r + 1]); GUESS, set it"]),
    # the pack loaded before the store's check: N in whole blocks of 256 packs of 8
    ("bf16_pack8", ["multiple N = 2048: 'reinterpret_cast<Packed8*>(out)[idx]' moves 8 elements "
                    "(16 bytes) from an index checked against N in steps of 8, so N stays a "
                    "multiple of 8 (whole vectors: a ragged N would read or write past its end); "
                    "and the launch covers N with whole blocks of 2048 elements with no bounds "
                    "check on some access, so the ragged size stays a multiple of that"]),
    ("encoder_block", ["block C: from the launch at line 10, which passes the kernel's own "
                       "argument as the block, so threadIdx is below it",
                       "size C = 256: the launch's block.x (line 10), so at most 1024; GUESS, "
                       "set it"]),
    ("sgemm_2d_blocktile", ["template arguments of sgemm2DBlocktiling<BM, BN, BK, TM, TN> differ "
                            "between the launches (BM = 128 (line 66), 64 (line 72); BN = 128 "
                            "(line 66), 64 (line 72)): drafted for the first, at line 66, under "
                            "'if (M >= 128 && N >= 128)': the drafted sizes (M = 4096, N = 4096) "
                            "take that branch; other sizes take another instance (name it with "
                            "--kernel 'NAME<ARGS>')"]),
])
def test_draft_notes_say_what_was_inferred(verdicts, name, notes):
    draft = next(v.draft for v in verdicts if v.name == name)
    for note in notes:
        assert note in draft.notes


def test_every_checked_spec_resolves_and_fits_its_kernel(entries):
    for e in entries:
        spec = load_spec_for(e.path, e.kernel, e.text, instance=e.checked.kernel,
                             context="\n".join(e.headers + (e.text,)))
        assert spec is not None and spec.kernel == e.checked.kernel
        problem = build_problem(spec, e.kernel)
        assert [c.label for c in problem.cases] == ["nominal", "ragged"]
        assert problem.cases[0].bytes_moved > 0
        assert [a.name for a in problem.cases[0].args] == [p.name for p in e.kernel.parameters]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_corpus_compiles_and_each_instance_is_found(entries, tmp_path):
    from gpu_runner.cubin import find_kernel_symbol

    for e in entries:
        out = tmp_path / f"{e.name}.cubin"
        done = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-I", str(sc.CORPUS), "-o",
                               str(out), str(e.path)], capture_output=True, text=True)
        assert done.returncode == 0, f"{e.name}: {done.stderr[-2000:]}"
        name = instance_name(e.kernel.qualified_name, e.checked)
        assert find_kernel_symbol(out.read_bytes(), name), e.name

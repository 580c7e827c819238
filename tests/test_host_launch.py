"""``cudalens.host_launch``: a candidate's launch written at the host code's launch sites,
with the spec's sizes read from the site's arguments, and the reasons a site cannot be."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens.host_launch import Unmappable, c_expression, plan_launches, site_config
from cudalens.source.parser import parse_source
from cudalens.spec.model import LaunchDecl
from cudalens.spec.parser import parse_spec

KERNEL = """__global__ void k(const float* x, float* y, int rows, int cols, int n)
{
}
"""
SPEC = """kernel k
size rows = 100
size cols = 64
size total = rows * cols
scalar rows: int = rows
scalar cols: int = cols
scalar n: int = total
in x: float[total]
out y: float[total]
block = 256
grid = ceil_div(rows, block.x)
"""


def _kernel_and_spec():
    kernel = parse_source(KERNEL, "k.cu").kernel("k")
    spec = parse_spec(SPEC, "k.cu.spec")["k"]
    return kernel, spec


ARGS = ("d_x", "d_y", "h.rows", "n_cols", "h.rows * n_cols")


def test_ceil_div_min_max_and_block_become_cxx():
    names = {"rows": "r", "cols": "(c + 1)"}
    assert c_expression("ceil_div(rows, block.x)", names, ("64",)) == "(r + 64 - 1) / 64"
    assert c_expression("min(rows, 8 * cols)", names, ()) == \
        "r < (8 * (c + 1)) ? r : (8 * (c + 1))"
    assert c_expression("block.y * 2", names, ("32",)) == "1 * 2"
    with pytest.raises(Unmappable, match="the launch uses 'depth', which is not passed"):
        c_expression("depth * 2", names, ())


def test_a_2d_launch_is_written_with_dim3_and_sizes_from_the_arguments():
    kernel, spec = _kernel_and_spec()
    launch = LaunchDecl(block=("32", "4"), grid=("ceil_div(cols, 32)", "ceil_div(rows, 32)"))
    assert site_config(spec, kernel, launch, ("g", "b"), ARGS) == \
        "<<<dim3((n_cols + 32 - 1) / 32, ((h.rows) + 32 - 1) / 32), dim3(32, 4)>>>"


def test_a_derived_size_is_mapped_through_its_definition_and_the_stream_is_kept():
    kernel, spec = _kernel_and_spec()
    launch = LaunchDecl(block=("128",), grid=("ceil_div(total, 512)",), shared="block.x * 4")
    # total is passed as n: that argument is used
    assert site_config(spec, kernel, launch, ("g", "b", "0", "stream"), ARGS) == \
        "<<<((h.rows * n_cols) + 512 - 1) / 512, 128, 128 * 4, stream>>>"
    # without a parameter carrying it, total is rows * cols of the site's arguments
    no_n = spec.__class__(**{**spec.__dict__, "params": spec.params[:2] + spec.params[3:]})
    assert site_config(no_n, kernel, launch, ("g", "b", "0", "stream"), ARGS) == \
        "<<<(((h.rows) * n_cols) + 512 - 1) / 512, 128, 128 * 4, stream>>>"
    # the spec's own shared memory (0) keeps the site's shared argument
    launch = LaunchDecl(block=("128",), grid=("ceil_div(rows, 4)",))
    assert site_config(spec, kernel, launch, ("g", "b", "smem", "s"), ARGS) == \
        "<<<((h.rows) + 4 - 1) / 4, 128, smem, s>>>"


@pytest.mark.parametrize("launch,args,reason", [
    (LaunchDecl(block=("256",), grid=("8 * sm_count",)), ARGS,
     "the launch uses sm_count, the GPU's number of SMs, which the host code must query"),
    (LaunchDecl(block=("128",), grid=("ceil_div(rows, 4)",)),
     ("d_x", "d_y", "r++", "c", "n"),
     "the argument 'r++' (parameter rows) has a side effect; the launch would evaluate it again"),
    (LaunchDecl(block=("128",), grid=("ceil_div(rows, 4)",)), ("args...",),
     "the launch passes 1 argument(s) where k has 5 parameter(s) (a parameter pack or a "
     "macro): the sizes cannot be read from it"),
])
def test_sites_that_cannot_be_mapped_say_why(launch, args, reason):
    kernel, spec = _kernel_and_spec()
    with pytest.raises(Unmappable) as exc:
        site_config(spec, kernel, launch, ("g", "b"), args)
    assert str(exc.value).startswith(reason)


def test_plan_finds_sites_in_host_files_and_skips_other_kernels(tmp_path: Path):
    kernel, spec = _kernel_and_spec()
    (tmp_path / "k.cu").write_text(KERNEL)
    (tmp_path / "host.cpp").write_text(
        "void go() {\n  k<<<(rows + 255) / 256, 256>>>(x, y, rows, cols, rows * cols);\n"
        "  other<<<1, 1>>>(x);\n}\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.cu").write_text("void g() { k<<<1, 1>>>(a, b, c, d, e); }\n")
    plan = plan_launches(tmp_path, kernel, spec,
                         LaunchDecl(block=("64",), grid=("ceil_div(rows, 2)",)))
    assert [(e.path.name, e.line, e.column, e.config, e.new) for e in plan.edits] == [
        ("host.cpp", 1, 3, "<<<(rows + 255) / 256, 256>>>", "<<<(rows + 2 - 1) / 2, 64>>>")]
    assert plan.unmapped == ()
    assert plan.new_texts()[(tmp_path / "host.cpp").resolve()] == (
        "void go() {\n  k<<<(rows + 2 - 1) / 2, 64>>>(x, y, rows, cols, rows * cols);\n"
        "  other<<<1, 1>>>(x);\n}\n")


def test_a_namesake_kernel_defined_elsewhere_keeps_its_launches(tmp_path: Path):
    # a/k.cu is optimized; b/ has its own kernel k and a program launching that one
    kernel, spec = _kernel_and_spec()
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "k.cu").write_text(KERNEL)
    host = "#include \"k.cu\"\nvoid go() { k<<<1, 256>>>(x, y, rows, cols, n); }\n"
    (tmp_path / "b" / "main.cu").write_text(host)
    (tmp_path / "a" / "main.cu").write_text(host)
    launch = LaunchDecl(block=("64",), grid=("ceil_div(rows, 2)",))
    plan = plan_launches(tmp_path, kernel, spec, launch, kernel_path=tmp_path / "a" / "k.cu")
    assert [(e.path.parent.name, e.path.name) for e in plan.edits] == [("a", "main.cu")]
    # a declaration-only host file (separate compilation) is taken as launching ours
    (tmp_path / "c.cpp").write_text("__global__ void k(const float*, float*, int, int, int);\n"
                                    "void f() { k<<<1, 256>>>(x, y, rows, cols, n); }\n")
    plan = plan_launches(tmp_path, kernel, spec, launch, kernel_path=tmp_path / "a" / "k.cu")
    assert sorted(str(e.path.relative_to(tmp_path)) for e in plan.edits) == ["a/main.cu", "c.cpp"]


def test_a_kernel_in_an_included_file_has_its_launches_in_the_including_file_rewritten(
        tmp_path: Path):
    # Rodinia's shape: main.cu includes kernel.cu and launches k; one more launch is written
    # in a macro, which is named and left alone.
    kernel, spec = _kernel_and_spec()
    (tmp_path / ".git").mkdir()
    (tmp_path / "kernel.cu").write_text(KERNEL)
    main = ("#include \"kernel.cu\"\n"
            "#define RUN_K(g, b) \\\n"
            "    k<<<g, b>>>(dx, dy, rows, cols, rows * cols)\n"
            "\n"
            "int main() {\n"
            "    int rows = 100, cols = 64;\n"
            "    float *dx, *dy;\n"
            "    k<<<(rows + 255) / 256, 256>>>(dx, dy, rows, cols, rows * cols);\n"
            "    RUN_K(4, 256);\n"
            "    return 0;\n"
            "}\n")
    (tmp_path / "main.cu").write_text(main)
    launch = LaunchDecl(block=("64",), grid=("ceil_div(rows, 2)",))
    plan = plan_launches(tmp_path, kernel, spec, launch, kernel_path=tmp_path / "kernel.cu",
                         texts={tmp_path / "kernel.cu": KERNEL})
    assert [(e.where(tmp_path), e.config, e.new) for e in plan.edits] == [
        ("main.cu:8:6", "<<<(rows + 255) / 256, 256>>>", "<<<(rows + 2 - 1) / 2, 64>>>")]
    lines = plan.new_texts()[(tmp_path / "main.cu").resolve()].split("\n")
    assert lines[7] == "    k<<<(rows + 2 - 1) / 2, 64>>>(dx, dy, rows, cols, rows * cols);"
    assert lines[2] == "    k<<<g, b>>>(dx, dy, rows, cols, rows * cols)"  # the macro's
    assert [(u.where(tmp_path), u.call, u.reason) for u in plan.unmapped] == [
        ("main.cu:3:5", "#define RUN_K(g, b) k<<<g, b>>>(dx, dy, rows, cols, rows * cols)",
         "the launch is in the definition of the macro RUN_K: its uses may pass other "
         "configurations, so it is not rewritten")]

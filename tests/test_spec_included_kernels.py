"""Kernels kept in a ``.cu`` file that the host file ``#include``s (Rodinia's layout: ``bfs.cu``
holds ``main`` and ``#include "kernel.cu"``; new-user report, R7).

``spec``, ``plan`` and ``optimize`` on the including file, which defines no kernel, name the
included files that do and the command to run on one; ``--kernel`` of a kernel in an included
file says the same for that kernel. The kernel file's draft reads the launch sites of the file of
its folder that includes it (sizes, block), its notes naming that file's lines; a file in another
folder, or a kernel file with launches of its own, is drafted as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cudalens.cli import main
from cudalens.target import host_files, included_kernels, load_target

HOST = """#include <cstdio>
#define THREADS 128
#include "frontier_kernel.cu"
#include "mark_kernel.cu"

int main()
{
    int nodes = 4096;
    float *level = 0;
    int *flags = 0;
    dim3 grid((nodes + THREADS - 1) / THREADS), block(THREADS);
    expand<<<grid, block>>>(level, nodes);
    mark<<<grid, block>>>(flags, nodes);
    return 0;
}
"""
EXPAND = """__global__ void expand(float *level, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) level[i] = level[i] + 1.0f;
}
"""
MARK = """__global__ void mark(int *flags, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) flags[i] = 1;
}
"""


@pytest.fixture
def graph(tmp_path, monkeypatch) -> Path:
    """``graph/frontier.cu`` (host code) including ``frontier_kernel.cu`` and
    ``mark_kernel.cu``; the working folder is ``graph``'s parent."""
    folder = tmp_path / "graph"
    folder.mkdir()
    (folder / "frontier.cu").write_text(HOST)
    (folder / "frontier_kernel.cu").write_text(EXPAND)
    (folder / "mark_kernel.cu").write_text(MARK)
    monkeypatch.chdir(tmp_path)
    return folder


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def _stderr(result) -> str:
    return " ".join(result.stderr.split())  # rich may wrap long lines


def test_the_including_file_names_the_files_with_kernels_and_the_command(graph):
    listed = ('graph/frontier_kernel.cu (line 3: #include "frontier_kernel.cu") defines expand; '
              'graph/mark_kernel.cu (line 4: #include "mark_kernel.cu") defines mark')
    for command in ("spec", "plan", "optimize"):
        result = _run(command, "graph/frontier.cu")
        assert result.exit_code == 2, (command, result.output)
        assert _stderr(result) == (
            f"error: graph/frontier.cu: expected at least one __global__ kernel, found none; the "
            f"kernels are in the files it includes: {listed}; run cudalens on one of them: "
            f"cudalens {command} graph/frontier_kernel.cu --kernel expand"), command
    result = _run("plan", "graph/frontier.cu", "--kernel", "mark")
    assert result.exit_code == 2
    assert _stderr(result).endswith(
        '; the kernels are in the file it includes: graph/mark_kernel.cu (line 4: #include '
        '"mark_kernel.cu") defines mark; run cudalens on that file: cudalens plan '
        'graph/mark_kernel.cu --kernel mark')


def test_a_kernel_named_in_a_file_that_has_others_points_at_its_included_file(graph):
    host = graph / "frontier.cu"
    host.write_text(HOST.replace("int main()", "__global__ void local_k(int* p) { p[0] = 1; }\n"
                                               "int main()"))
    result = _run("spec", "graph/frontier.cu", "--kernel", "mark")
    assert result.exit_code == 2
    assert _stderr(result) == (
        "error: graph/frontier.cu: no __global__ kernel named 'mark' (found: local_k); the "
        "kernels are in the file it includes: graph/mark_kernel.cu (line 4: #include "
        "\"mark_kernel.cu\") defines mark; run cudalens on that file: cudalens spec "
        "graph/mark_kernel.cu --kernel mark")


def test_included_kernels_skips_angle_includes_missing_files_and_kernel_free_files(graph):
    (graph / "util.cuh").write_text("__device__ inline int twice(int v) { return 2 * v; }\n")
    text = '#include <cstdio>\n#include "missing.cu"\n#include "util.cuh"\n' + HOST
    found = included_kernels(graph / "frontier.cu", text)
    assert [(f.path.name, f.line, f.kernels) for f in found] == [
        ("frontier_kernel.cu", 6, ("expand",)), ("mark_kernel.cu", 7, ("mark",))]


def test_the_kernel_files_draft_reads_the_launch_in_the_file_including_it(graph):
    assert [(h.path.name, h.line) for h in host_files(graph / "mark_kernel.cu", MARK)] == \
        [("frontier.cu", 4)]
    result = _run("spec", "graph/frontier_kernel.cu")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "# draft inferred from graph/frontier_kernel.cu; review it, then save it as "
        "graph/frontier_kernel.cu.spec",
        "kernel expand",
        "# launch sites from frontier.cu, which includes this file at its line 3",
        "# size n = 4096: from the host code (the launch at line 12 of frontier.cu passes "
        "'nodes' = (4096))",
        "# block 128: the launch at line 12 of frontier.cu",
        "size n = 4096",
        "inout level: float[n]",
        "scalar n: int = n",
        "block = 128",
        "grid = ceil_div(n, block.x)",
    ]
    target = load_target(graph / "mark_kernel.cu")
    assert target.text == MARK and target.spec.launch.block == ("128",)
    assert [s.name for s in target.spec.sizes] == ["n"]
    assert target.spec.sizes[0].expr == "4096"
    assert _run("plan", "graph/mark_kernel.cu").exit_code == 0


def test_a_host_in_another_folder_or_a_kernel_file_with_its_own_launch_is_not_read(graph):
    sub = graph / "kernels"
    sub.mkdir()
    (sub / "frontier_kernel.cu").write_text(EXPAND)
    (graph / "frontier.cu").write_text(HOST.replace('"frontier_kernel.cu"',
                                                    '"kernels/frontier_kernel.cu"'))
    assert host_files(sub / "frontier_kernel.cu", EXPAND) == ()
    drafted = load_target(sub / "frontier_kernel.cu").spec
    assert drafted.sizes[0].expr == "1 << 24"
    own = EXPAND + "void go(float* l) { expand<<<(1000 + 63) / 64, 64>>>(l, 1000); }\n"
    (graph / "frontier_kernel.cu").write_text(own)
    assert host_files(graph / "frontier_kernel.cu", own) == ()
    spec = load_target(graph / "frontier_kernel.cu").spec
    assert spec.launch.block == ("64",) and spec.sizes[0].expr == "1000"
    assert not any("frontier.cu" in n for n in spec.notes)

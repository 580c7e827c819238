"""The language server's spec cache (``cudalens.lsp.documents.SpecCache``) for a kernel file
that launches nothing, drafted from the launch sites of a file including it: editing that host
file refreshes the draft when the kernel file is analyzed again."""

from __future__ import annotations

from pathlib import Path

from cudalens.lsp.documents import SpecCache, analyze, path_to_uri

KERNEL = """__global__ void shift(float *out, const float *in, float by, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) out[i] = in[i] + by;
}
"""


def _host(block: int) -> str:
    return ("#include \"shift.cu\"\n"
            "\n"
            "void run(float *d_out, const float *d_in, int count) {\n"
            f"    shift<<<(count + {block - 1}) / {block}, {block}>>>(d_out, d_in, 1.5f, count);\n"
            "}\n")


def test_editing_the_including_file_refreshes_the_kernel_files_draft(tmp_path: Path):
    kernel_path = tmp_path / "shift.cu"
    kernel_path.write_text(KERNEL)
    host = tmp_path / "main.cu"
    host.write_text(_host(128))
    cache = SpecCache()

    def draft():
        snap = analyze(path_to_uri(kernel_path), kernel_path, 1, KERNEL, "utf-16", specs=cache)
        (view,) = snap.kernels
        assert view.spec_error == "" and view.spec_origin == "inferred"
        return view.spec

    first = draft()
    assert first.launch.block == ("128",)
    assert first.notes[0] == "launch sites from main.cu, which includes this file at its line 1"
    assert draft() is first  # unchanged host: the cached draft
    host.write_text(_host(64))
    second = draft()
    assert second.launch.block == ("64",)
    # the host no longer includes the kernel file: the draft is the file's own again
    host.write_text("void run() {}\n")
    assert "launch sites from main.cu" not in " ".join(draft().notes)

"""``cudalens.formatting`` and the search's use of it: with a workspace ``.clang-format``
(LLVM base, 4-space indent, Allman braces) a candidate's kernel is formatted with it by the
real clang-format (the PyPI wheel of the ``format``/``test`` extras), and every line outside
the kernel stays as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens import formatting
from cudalens.optimizer.context import make_context
from cudalens.optimizer.passes import vectorize_gridstride
from cudalens.optimizer.staged_search import propose
from cudalens.spec.parser import parse_spec

needs_clang_format = pytest.mark.skipif(
    formatting.find_clang_format() is None,
    reason="clang-format not installed (pip install 'cudalens[format]')")

STYLE = "BasedOnStyle: LLVM\nIndentWidth: 4\nBreakBeforeBraces: Allman\nColumnLimit: 100\n"

SOURCE = """\
// saxpy in a project whose other code is laid out its own way.
static   int   untouched_before( int a ){ return a+1; }

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}

static   int   untouched_after( int a ){ return a-1; }
"""

SPEC = """\
kernel saxpy
size n = 1 << 20
scalar n: int = n
scalar a: float = 2.0
in x: float[n]
inout y: float[n]
block = 256
grid = ceil_div(n, block.x)
"""


def _workspace(tmp_path: Path, style: bool) -> Path:
    if style:
        (tmp_path / ".clang-format").write_text(STYLE, encoding="utf-8")
    src = tmp_path / "src" / "saxpy.cu"
    src.parent.mkdir()
    src.write_text(SOURCE, encoding="utf-8")
    return src


def _context(path: Path):
    spec = parse_spec(SPEC, str(path) + ".spec")["saxpy"]
    return make_context(path.read_text(encoding="utf-8"), str(path), "saxpy", spec)


def test_style_file_is_found_in_a_parent_directory(tmp_path):
    src = _workspace(tmp_path, style=True)
    assert formatting.find_style_file(src) == (tmp_path / ".clang-format").resolve()


def test_kernel_lines_cover_the_definition_only():
    lines = formatting.kernel_lines(SOURCE, "saxpy.cu", "saxpy")
    assert lines == formatting.LineRange(4, 9)


def test_without_a_style_file_nothing_changes(tmp_path):
    src = _workspace(tmp_path, style=False)
    assert formatting.find_style_file(src) is None
    text = src.read_text(encoding="utf-8")
    assert formatting.format_kernel(text, src, "saxpy") == text


def test_missing_clang_format_is_reported_with_the_fix(tmp_path, monkeypatch):
    src = _workspace(tmp_path, style=True)
    monkeypatch.setattr(formatting, "find_clang_format", lambda: None)
    with pytest.raises(formatting.FormatError, match=r"clang-format not found: install "
                                                    r"cudalens\[format\]"):
        formatting.format_lines(SOURCE, src, formatting.LineRange(4, 9))
    # format_kernel leaves the text as generated rather than failing the search
    assert formatting.format_kernel(SOURCE, src, "saxpy") == SOURCE


@needs_clang_format
def test_rewritten_kernel_is_formatted_and_nothing_else_changes(tmp_path):
    src = _workspace(tmp_path, style=True)
    ctx = _context(src)
    rewritten = vectorize_gridstride.apply(ctx).source
    out = formatting.format_kernel(rewritten, src, "saxpy")
    before, after = rewritten.splitlines(), out.splitlines()
    k = formatting.kernel_lines(out, src, "saxpy")
    k_in = formatting.kernel_lines(rewritten, src, "saxpy")
    # lines outside the kernel: identical, in both directions
    assert after[:k.first - 1] == before[:k_in.first - 1]
    assert after[k.last:] == before[k_in.last:]
    assert "static   int   untouched_before( int a ){ return a+1; }" in after
    assert "static   int   untouched_after( int a ){ return a-1; }" in after
    kernel = after[k.first - 1:k.last]
    # Allman braces: the function's and the loop's opening braces on their own lines
    assert kernel[0] == "__global__ void saxpy(int n, float a, const float *x, float *y)"
    assert kernel[1] == "{"
    assert "    for (; i < n; i += stride)" in kernel
    loop = kernel.index("    for (; i < n; i += stride)")
    assert kernel[loop + 1] == "    {"
    assert kernel[loop + 2] == "        y[i] = a * x[i] + y[i];"
    # 4-space indentation inside the vector loop (LLVM puts the pointer star on the name)
    assert "            float4 x4 = reinterpret_cast<const float4 *>(x)[v];" in kernel
    # formatting it again changes nothing
    assert formatting.format_kernel(out, src, "saxpy") == out


@needs_clang_format
def test_search_candidates_come_formatted(tmp_path):
    src = _workspace(tmp_path, style=True)
    ctx = _context(src)
    cands = propose(ctx, budget=24, seed=0)
    vec = [c for c in cands if "vectorize_gridstride" in c.passes]
    assert vec, [c.label for c in cands]
    for c in cands:
        lines = c.source.splitlines()
        if c.source == ctx.text:  # launch-only candidates leave the file as it was
            continue
        assert "static   int   untouched_before( int a ){ return a+1; }" in lines, c.label
        k = formatting.kernel_lines(c.source, src, "saxpy")
        kernel = lines[k.first - 1:k.last]
        assert "{" in kernel, f"{c.label}: function brace not on its own line"
        assert formatting.format_kernel(c.source, src, "saxpy") == c.source, c.label

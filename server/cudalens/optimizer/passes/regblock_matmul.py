"""Pass ``regblock_matmul``: a naive fp32 matrix product with 2D thread tiles.

``tiled_matmul`` divides the global loads by the tile width, but every multiply-add still
reads one operand from shared memory. Here a block computes a ``BM x BN`` tile of C; each of
its ``BM/TM x BN/TN`` threads holds ``TM x TN`` outputs in registers and, per step ``p``,
loads ``TM`` values of A and ``TN`` of B from shared memory (two 16-byte loads each) for
``TM * TN`` multiply-adds: shared-memory traffic per FMA drops from 2 loads to
``(TM + TN) / (TM * TN)`` (a quarter at 8x8). ``BK``-deep slabs of A and B are staged in
shared memory with 16-byte global loads where the operand is contiguous along one index
(S. Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance", 2022, kernels
5-6; V. Volkov and J. Demmel, "Benchmarking GPUs to Tune Dense Linear Algebra", SC 2008).

Recognized: the naive product of ``tiled_matmul`` (``tiled_matmul.match``), with float
operands each contiguous along ``p`` or along its row/column index.

Ragged sizes: a 16-byte load is used only when its four elements are in range and its address
is 16-byte aligned (checked per load, so odd leading dimensions and offsets work); otherwise
the four elements are loaded one by one, zero outside the matrices. Each output adds the
original statement's terms in the order ``p = 0 .. K-1`` (the last slab stops at K), so the
results are bit for bit the original's. C threads own columns ``tx*4 .. tx*4+3`` and the
same four ``BN/2`` further on, so a warp's shared reads of B are contiguous.

Parameters (``SHAPES``): ``(BM, BN, BK, TM, TN)``; block ``BN/TN x BM/TM``, grid
``ceil_div(x bound, BN) x ceil_div(y bound, BM)``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from cudalens.optimizer import index2d, structural
from cudalens.optimizer.affine import split_linear
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.passes import tiled_matmul
from cudalens.optimizer.reasons import Reason
from cudalens.kernel_model.syntax import walk
from cudalens.spec import dtypes
from cudalens.spec.poly import Poly

name = "regblock_matmul"

# (BM, BN, BK, TM, TN), the default first: 256 threads of 8x8 outputs; a deeper slab; half
# the block (more blocks for small matrices); 4x4 outputs per thread.
SHAPES: tuple[tuple[int, int, int, int, int], ...] = (
    (128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (128, 64, 8, 8, 8), (64, 64, 8, 4, 4))

# What one block may declare as static __shared__ arrays (CUDA C++ Programming Guide,
# "Shared Memory": more must be dynamic, opted into per kernel); the largest double-buffered
# shape, 128x128x16, takes 32 KiB.
STATIC_SHARED_LIMIT = 48 * 1024


def shared_bytes(bm: int, bn: int, bk: int, stages: int) -> int:
    """Bytes of the ``stages`` pairs of fp32 slabs (``bk x bm`` of A, ``bk x bn`` of B)."""
    return stages * bk * (bm + bn) * 4


def _along(poly: Poly, k: str, d: str) -> Optional[str]:
    """Which index the operand is contiguous along: ``"k"``, ``"d"`` or None."""
    if split_linear(poly, k)[0] == Poly.const(1):
        return "k"
    if split_linear(poly, d)[0] == Poly.const(1):
        return "d"
    return None


def _plan(ctx: PassContext):
    """(reason, match) for ``ctx`` with its row pointers folded (``row_pointers.inline``);
    ``apply`` rewrites that folded text."""
    reason, m = structural.plan(ctx, tiled_matmul._early(ctx), tiled_matmul.match,
                                index2d.NoMatch)
    if reason is not None:
        return reason, None
    for buf, ctype in ((m.y_name, m.y_type), (m.x_name, m.x_type)):
        c_spec = dtypes.spec_type_for_c(ctx.c_type(ctype)) or ""
        if dtypes.SPEC_TYPES.get(c_spec) != "float32" or \
                dtypes.numpy_dtype(ctx.spec.param(buf).type) != "float32":
            return (f"{buf} holds {ctype}; the pass register-blocks fp32 products (float4 "
                    f"loads)"), None
    for side, buf, poly, d in (("y", m.y_name, m.polys[0], m.grid.y.var),
                               ("x", m.x_name, m.polys[1], m.grid.x.var)):
        if _along(poly, m.var, d) is None:
            node = m.read_y if side == "y" else m.read_x
            line = m.grid.parsed.line_of(node)
            return Reason(f"'{m.grid.parsed.text_of(node)}' (line {line}) is contiguous "
                          f"neither along {m.var} nor along {d}: no 16-byte loads of {buf}",
                          line), None
    return None, m


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a naive fp32 matrix product the pass can register-block,
    else the reason."""
    ctx, reason = tiled_matmul.prepare(ctx)
    return reason if reason is not None else _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application per shape of ``SHAPES`` with one shared buffer per operand, 128x128x8
    with 8x8 per thread first (the default), then the same shapes double-buffered
    (``stages=2``: their own family, ``regblock-matmul+dbuf``)."""
    return tuple({**dict(zip(("bm", "bn", "bk", "tm", "tn"), s)), "stages": n}
                 for n in (1, 2) for s in SHAPES)


def _paren(text: str) -> str:
    return text if re.fullmatch(r"[A-Za-z_]\w*", text) else f"({text})"


def _loader(w, tile: str, read: str, along: str, d: tuple[str, str, str, str],
            k: tuple[str, str, str], names: dict) -> None:
    """Lines staging one operand's ``kBK x kB?`` slab into ``tile[kk][dd]``.

    ``d`` = (C type, name, first index of the block, bound) of the row/column index, ``k`` =
    (C type, name, bound) of the loop counter; ``along`` the contiguous index.
    """
    dt, dv, d0, dbound = d
    kt, kv, kbound = k
    c, dd, kk, e, v4 = names["c"], names["dd"], names["kk"], names["e"], names["v4"]
    width, p0, nt = names["width"], names["p0"], "kThreads"
    chunks = f"{width} * kBK / 4"
    w(2, "#pragma unroll")
    w(2, f"for (int {c} = {names['tid']}; {c} < {chunks}; {c} += {nt}) {{")
    if along == "k":  # four consecutive k of one row/column: stored down the slab
        _chunk(w, 3, along, d, k, names)
        w(3, f"if ({dv} < {dbound} && {kv} + 3 < {kbound} && "
             f"reinterpret_cast<size_t>(&{read}) % 16 == 0) {{")
        w(4, f"const float4 {v4} = *reinterpret_cast<const float4*>(&{read});")
        w(4, f"{tile}[{kk}][{dd}] = {v4}.x; {tile}[{kk} + 1][{dd}] = {v4}.y;")
        w(4, f"{tile}[{kk} + 2][{dd}] = {v4}.z; {tile}[{kk} + 3][{dd}] = {v4}.w;")
        w(3, "} else {")
        w(4, "#pragma unroll")
        w(4, f"for (int {e} = 0; {e} < 4; ++{e}) {{")
        w(5, f"const {kt} {kv} = {p0} + {kk} + {e};")
        w(5, f"{tile}[{kk} + {e}][{dd}] = ({dv} < {dbound} && {kv} < {kbound}) ? {read} : 0.0f;")
    else:  # four consecutive rows/columns at one k: one 16-byte store
        _chunk(w, 3, along, d, k, names)
        w(3, f"if ({kv} < {kbound} && {dv} + 3 < {dbound} && "
             f"reinterpret_cast<size_t>(&{read}) % 16 == 0) {{")
        w(4, f"*reinterpret_cast<float4*>(&{tile}[{kk}][{dd}]) =")
        w(5, f"*reinterpret_cast<const float4*>(&{read});")
        w(3, "} else {")
        w(4, "#pragma unroll")
        w(4, f"for (int {e} = 0; {e} < 4; ++{e}) {{")
        w(5, f"const {dt} {dv} = {d0} + {dd} + {e};")
        w(5, f"{tile}[{kk}][{dd} + {e}] = ({kv} < {kbound} && {dv} < {dbound}) ? {read} : 0.0f;")
    w(4, "}")
    w(3, "}")
    w(2, "}")


def _chunk(w, depth: int, along: str, d: tuple[str, str, str, str], k: tuple[str, str, str],
           names: dict, index_only: bool = False) -> None:
    """The declarations placing chunk ``names["c"]`` (four floats) in the slab: its slab
    indices ``dd``/``kk`` and, unless ``index_only``, the row/column and ``k`` it loads.
    ``d``, ``k`` and ``along`` as for ``_loader``."""
    dt, dv, d0, _ = d
    kt, kv, _ = k
    c, dd, kk, width, p0 = names["c"], names["dd"], names["kk"], names["width"], names["p0"]
    if along == "k":
        w(depth, f"const int {dd} = {c} / (kBK / 4), {kk} = {c} % (kBK / 4) * 4;")
        if not index_only:
            w(depth, f"const {dt} {dv} = {d0} + {dd};")
            w(depth, f"const {kt} {kv} = {p0} + {kk};")
    else:
        w(depth, f"const int {kk} = {c} / ({width} / 4), {dd} = {c} % ({width} / 4) * 4;")
        if not index_only:
            w(depth, f"const {kt} {kv} = {p0} + {kk};")
            w(depth, f"const {dt} {dv} = {d0} + {dd};")


def _per_thread(w, names: dict, chunks: int, threads: int) -> int:
    """Opens the loop over this thread's chunks of a slab (``chunks`` of them over
    ``threads`` threads: chunk ``tid + l * kThreads``, the mapping ``_loader`` uses); returns
    the depth of its body. Closed by ``_close``."""
    c, lv, width = names["c"], names["l"], names["width"]
    w(2, "#pragma unroll")
    w(2, f"for (int {lv} = 0; {lv} < {_count(width)}; ++{lv}) {{")
    w(3, f"const int {c} = {names['tid']} + {lv} * kThreads;")
    if chunks % threads == 0:
        return 3
    w(3, f"if ({c} < {width} * kBK / 4) {{")
    return 4


def _close(w, depth: int) -> None:
    for dep in range(depth - 1, 1, -1):
        w(dep, "}")


def _count(width: str) -> str:
    """Chunks of a ``kBK x width`` slab per thread, rounded up (C++ text)."""
    return f"({width} * kBK / 4 + kThreads - 1) / kThreads"


def _fetch(w, regs: str, read: str, along: str, d: tuple[str, str, str, str],
           k: tuple[str, str, str], names: dict, chunks: int, threads: int) -> None:
    """Lines loading this thread's chunks of one operand's slab at ``names["p0"]`` into the
    float4 registers ``regs[l]``: 16 bytes at a time where in range and aligned, else four
    elements, zero outside the matrix (as ``_loader``)."""
    dt, dv, d0, dbound = d
    kt, kv, kbound = k
    dd, kk, e, lv, v = names["dd"], names["kk"], names["e"], names["l"], names["v"]
    p0 = names["p0"]
    depth = _per_thread(w, names, chunks, threads)
    _chunk(w, depth, along, d, k, names)
    if along == "k":
        cond = f"{dv} < {dbound} && {kv} + 3 < {kbound}"
        one = (f"const {kt} {kv} = {p0} + {kk} + {e};", f"{dv} < {dbound} && {kv} < {kbound}")
    else:
        cond = f"{kv} < {kbound} && {dv} + 3 < {dbound}"
        one = (f"const {dt} {dv} = {d0} + {dd} + {e};", f"{kv} < {kbound} && {dv} < {dbound}")
    w(depth, f"if ({cond} && reinterpret_cast<size_t>(&{read}) % 16 == 0) {{")
    w(depth + 1, f"{regs}[{lv}] = *reinterpret_cast<const float4*>(&{read});")
    w(depth, "} else {")
    w(depth + 1, f"float {v}[4];")
    w(depth + 1, "#pragma unroll")
    w(depth + 1, f"for (int {e} = 0; {e} < 4; ++{e}) {{")
    w(depth + 2, one[0])
    w(depth + 2, f"{v}[{e}] = ({one[1]}) ? {read} : 0.0f;")
    w(depth + 1, "}")
    w(depth + 1, f"{regs}[{lv}] = make_float4({v}[0], {v}[1], {v}[2], {v}[3]);")
    w(depth, "}")
    _close(w, depth)


def _stash(w, tile: str, regs: str, along: str, d: tuple[str, str, str, str],
           k: tuple[str, str, str], names: dict, chunks: int, threads: int) -> None:
    """Lines storing what ``_fetch`` loaded into ``tile[kk][dd]`` (``tile`` one buffer), laid
    out as ``_loader`` lays it out."""
    dd, kk, r = names["dd"], names["kk"], f"{regs}[{names['l']}]"
    depth = _per_thread(w, names, chunks, threads)
    _chunk(w, depth, along, d, k, names, index_only=True)
    if along == "k":
        w(depth, f"{tile}[{kk}][{dd}] = {r}.x; {tile}[{kk} + 1][{dd}] = {r}.y;")
        w(depth, f"{tile}[{kk} + 2][{dd}] = {r}.z; {tile}[{kk} + 3][{dd}] = {r}.w;")
    else:
        w(depth, f"*reinterpret_cast<float4*>(&{tile}[{kk}][{dd}]) = {r};")
    _close(w, depth)


def apply(ctx: PassContext, bm: int = 128, bn: int = 128, bk: int = 8, tm: int = 8,
          tn: int = 8, stages: int = 1) -> PassResult:
    """The register-blocked kernel for shape ``(bm, bn, bk, tm, tn)`` (module doc) with
    ``stages`` shared buffers per operand: 1, or 2 (double buffering, module doc).

    Raises:
        PassNotApplicable: the precondition fails (the message says why).
        ValueError: the shape is not one of ``SHAPES``, ``stages`` is not 1 or 2, or the
            slabs would take more than ``STATIC_SHARED_LIMIT`` bytes.
    """
    if (bm, bn, bk, tm, tn) not in SHAPES:
        raise ValueError(f"(bm, bn, bk, tm, tn) must be one of {SHAPES}, found "
                         f"{(bm, bn, bk, tm, tn)!r}")
    if stages not in (1, 2):
        raise ValueError(f"stages must be 1 or 2, found {stages!r}")
    if shared_bytes(bm, bn, bk, stages) > STATIC_SHARED_LIMIT:
        raise ValueError(f"{stages} slabs of {bm}x{bk} and {bk}x{bn} floats take "
                         f"{shared_bytes(bm, bn, bk, stages)} bytes of shared memory, more "
                         f"than the {STATIC_SHARED_LIMIT} a static __shared__ array may")
    ctx, m, w = tiled_matmul.matched(ctx, _plan, name)
    p = m.grid.parsed
    gx, gy = m.grid.x, m.grid.y
    y_t, x_t = dtypes.normalize_c_type(gy.ctype), dtypes.normalize_c_type(gx.ctype)
    init_node = m.loop.child_by_field_name("initializer")
    k_t = "int"
    if init_node is not None and init_node.type == "declaration":
        k_t = " ".join(p.text_of(init_node.child_by_field_name("type")).split())
    kbound = _paren(m.bound)
    ys, xs = w.fresh(f"{m.y_name}_tile"), w.fresh(f"{m.x_name}_tile")
    accs, ar, br = w.fresh(f"{m.acc}_r"), w.fresh(f"{m.y_name}_r"), w.fresh(f"{m.x_name}_r")
    names = {"tid": w.fresh("tid"), "p0": w.fresh(f"{m.var}0"), "c": w.fresh("c"),
             "dd": w.fresh("dd"), "kk": w.fresh(f"{m.var}{m.var}"), "e": w.fresh("e"),
             "v4": w.fresh("v4")}
    tx, ty, i, j = w.fresh("tx"), w.fresh("ty"), w.fresh("i"), w.fresh("j")
    kk, p0 = names["kk"], names["p0"]
    decl_type = p.text_of(m.acc_decl.child_by_field_name("type"))
    init = p.text_of(m.acc_decl.children_by_field_name("declarator")[0]
                     .child_by_field_name("value"))
    threads = (bm // tm) * (bn // tn)
    double = stages == 2
    if double:
        names.update(l=w.fresh("l"), v=w.fresh("v"))
        fetch, stash, buf = w.fresh("fetch"), w.fresh("stash"), w.fresh("buf")
        y_next, x_next = w.fresh(f"{m.y_name}_next"), w.fresh(f"{m.x_name}_next")
    w(1, f"// {bm}x{bn} tiles of C per block, {tm}x{tn} per thread in registers, A and B "
         f"staged {bk} deep in shared memory" + (
             ", two buffers each: the next slab's loads are issued before this slab's "
             "multiply-adds." if double else "."))
    w(1, f"constexpr int kBM = {bm}, kBN = {bn}, kBK = {bk}, kTM = {tm}, kTN = {tn}, "
         f"kThreads = {threads};")
    w(1, structural.block_guard(bn // tn, bm // tm))
    nb = "[2]" if double else ""
    w(1, f"alignas(16) __shared__ float {ys}{nb}[kBK][kBM], {xs}{nb}[kBK][kBN];")
    w(1, f"const int {tx} = threadIdx.x, {ty} = threadIdx.y, "
         f"{names['tid']} = {ty} * (kBN / kTN) + {tx};")
    if m.init_indexed:  # the output's own initial value: read once, where in range
        w(1, f"{decl_type} {accs}[kTM][kTN];")
        w(1, "#pragma unroll")
        w(1, f"for (int {i} = 0; {i} < kTM; ++{i}) {{")
        w(2, f"const {y_t} {gy.var} = blockIdx.y * kBM + {i} / 4 * (kBM / kTM * 4) + {ty} * 4 + "
             f"{i} % 4;")
        w(2, "#pragma unroll")
        w(2, f"for (int {j} = 0; {j} < kTN; ++{j}) {{")
        w(3, f"const {x_t} {gx.var} = blockIdx.x * kBN + {j} / 4 * (kBN / kTN * 4) + {tx} * 4 + "
             f"{j} % 4;")
        w(3, f"{accs}[{i}][{j}] = ({m.grid.guard}) ? {init} : {tiled_matmul._zero(decl_type)};")
        w(2, "}")
        w(1, "}")
    elif tiled_matmul._ZERO.match(init.strip()):
        w(1, f"{decl_type} {accs}[kTM][kTN] = {{}};")
    else:
        w(1, f"{decl_type} {accs}[kTM][kTN];")
        w(1, f"for (int {i} = 0; {i} < kTM * kTN; ++{i}) {accs}[{i} / kTN][{i} % kTN] = {init};")
    w(1, f"float {ar}[kTM], {br}[kTN];")
    read_y, read_x = p.text_of(m.read_y), p.text_of(m.read_x)
    k = (k_t, m.var, kbound)
    operands = ((ys, read_y, _along(m.polys[0], m.var, gy.var),
                 (y_t, gy.var, "blockIdx.y * kBM", _paren(gy.bound)), "kBM", bm),
                (xs, read_x, _along(m.polys[1], m.var, gx.var),
                 (x_t, gx.var, "blockIdx.x * kBN", _paren(gx.bound)), "kBN", bn))
    if double:
        # Each thread's chunks of the next slab wait in registers (float4 each) while this
        # slab's multiply-adds run, then go to the other buffer: one barrier per slab.
        regs = (y_next, x_next)
        w(1, f"float4 {y_next}[{_count('kBM')}], {x_next}[{_count('kBN')}];")
        w(1, f"auto {fetch} = [&]({k_t} {p0}) {{")
        for (tile, read, along, d, width, b), r in zip(operands, regs):
            _fetch(w, r, read, along, d, k, {**names, "width": width}, b * bk // 4, threads)
        w(1, "};")
        w(1, f"auto {stash} = [&](int {buf}) {{")
        for (tile, read, along, d, width, b), r in zip(operands, regs):
            _stash(w, f"{tile}[{buf}]", r, along, d, k, {**names, "width": width},
                   b * bk // 4, threads)
        w(1, "};")
        w(1, f"{fetch}(0);")
        w(1, f"{stash}(0);")
        w(1, "__syncthreads();")
        w(1, f"int {buf} = 0;")
    w(1, f"for ({k_t} {p0} = 0; {p0} < {kbound}; {p0} += kBK) {{")
    if double:
        w(2, f"if ({p0} + kBK < {kbound}) {fetch}({p0} + kBK);")
    else:
        for tile, read, along, d, width, _ in operands:
            _loader(w, tile, read, along, d, k, {**names, "width": width})
        w(2, "__syncthreads();")
    acc_nodes = [n for n in walk(m.statement) if n.type == "identifier" and p.text_of(n) == m.acc]
    stmt = structural.text_with(p, m.statement, [(m.read_y, f"{ar}[{i}]"),
                                                 (m.read_x, f"{br}[{j}]")]
                                + [(n, f"{accs}[{i}][{j}]") for n in acc_nodes])
    # One step of p: TM values of A and TN of B from shared memory (16 bytes at a time), then
    # the original statement for each of the TM x TN outputs. A whole slab runs it a constant
    # number of times, which the compiler unrolls; the last, partial slab stops at K.
    step = w.fresh("step")
    w(2, f"auto {step} = [&](int {kk}) {{")
    cur = f"[{buf}]" if double else ""
    for reg, tile, t, d, half in ((ar, ys + cur, ty, "kTM", "kBM"),
                                  (br, xs + cur, tx, "kTN", "kBN")):
        v4 = names["v4"]
        w(3, "#pragma unroll")
        w(3, f"for (int {i} = 0; {i} < {d}; {i} += 4) {{")
        w(4, f"const float4 {v4} = *reinterpret_cast<const float4*>("
             f"&{tile}[{kk}][{i} / 4 * ({half} / {d} * 4) + {t} * 4]);")
        w(4, f"{reg}[{i}] = {v4}.x; {reg}[{i} + 1] = {v4}.y; {reg}[{i} + 2] = {v4}.z; "
             f"{reg}[{i} + 3] = {v4}.w;")
        w(3, "}")
    w(3, "#pragma unroll")
    w(3, f"for (int {i} = 0; {i} < kTM; ++{i}) {{")
    w(4, "#pragma unroll")
    w(4, f"for (int {j} = 0; {j} < kTN; ++{j}) {{")
    w.text_block(5, stmt)
    w(4, "}")
    w(3, "}")
    w(2, "};")
    w(2, f"if ({p0} + kBK <= {kbound}) {{")
    w(3, "#pragma unroll")
    w(3, f"for (int {kk} = 0; {kk} < kBK; ++{kk}) {step}({kk});")
    w(2, "} else {")
    w(3, f"for (int {kk} = 0; {p0} + {kk} < {kbound}; ++{kk}) {step}({kk});")
    w(2, "}")
    if double:
        w(2, f"if ({p0} + kBK < {kbound}) {stash}({buf} ^ 1);")
    w(2, "__syncthreads();")
    if double:
        w(2, f"{buf} ^= 1;")
    w(1, "}")
    w(1, "#pragma unroll")
    w(1, f"for (int {i} = 0; {i} < kTM; ++{i}) {{")
    w(2, f"const {y_t} {gy.var} = blockIdx.y * kBM + {i} / 4 * (kBM / kTM * 4) + {ty} * 4 + "
         f"{i} % 4;")
    w(2, "#pragma unroll")
    w(2, f"for (int {j} = 0; {j} < kTN; ++{j}) {{")
    w(3, f"const {x_t} {gx.var} = blockIdx.x * kBN + {j} / 4 * (kBN / kTN * 4) + {tx} * 4 + "
         f"{j} % 4;")
    w(3, f"if ({m.grid.guard}) {{")
    for node in m.post:
        accs_in = [n for n in walk(node) if n.type == "identifier" and p.text_of(n) == m.acc]
        w.text_block(4, structural.text_with(p, node, [(n, f"{accs}[{i}][{j}]")
                                                       for n in accs_in]))
    w(3, "}")
    w(2, "}")
    w(1, "}")
    launch = dataclasses.replace(
        ctx.launch, block=(str(bn // tn), str(bm // tm)),
        grid=(f"ceil_div({gx.bound_spec}, {bn})", f"ceil_div({gy.bound_spec}, {bm})"))
    explanation = (f"register blocking: each block computes a {bm}x{bn} tile of the output and "
                   f"each thread {tm}x{tn} outputs in registers, so one {m.y_name} value and one "
                   f"{m.x_name} value read from shared memory serve {tn} and {tm} multiply-adds "
                   f"({2 * tm * tn // (tm + tn)}x fewer shared loads per multiply-add than one "
                   f"output per thread); {bk}-deep slabs of "
                   f"{m.y_name} and {m.x_name} loaded with 16-byte loads where aligned and in "
                   f"range; " + (
                       "two shared buffers per operand: the next slab's global loads go to "
                       "registers before this slab's multiply-adds and to the other buffer "
                       "after them, one barrier per slab; " if double else "") +
                   f"block {bn // tn}x{bm // tm}; same terms added in the same order, so "
                   f"the results are unchanged")
    tags = ("regblock-matmul+dbuf" if double else "regblock-matmul", f"tile={bm}x{bn}x{bk}",
            f"thread={tm}x{tn}", f"block={bn // tn}x{bm // tm}")
    return PassResult(source=w.source(), launch=launch, tags=tags, explanation=explanation)

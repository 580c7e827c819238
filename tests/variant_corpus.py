"""The variant corpus (``tests/data/variants/<pass>/<name>.cu`` with ``.cu.spec``): kernels
written here in other spellings of the patterns the structural passes target, one folder per
pass. ``variants()`` lists them; ``context`` loads one; ``SIM_SIZES`` gives small sizes for
CPU simulation (in the order the spec declares its sizes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cudalens.optimizer.context import PassContext, make_context
from cudalens.target import load_target

ROOT = Path(__file__).resolve().parent / "data" / "variants"

# Small sizes for block_sim, not multiples of the tiles or blocks, by the order of the spec's
# ``size`` lines; pass folders not listed use the spec's own sizes.
SIM_SIZES = {"tiled_transpose": (37, 45), "tiled_matmul": (19, 23, 17),
             "warp_reduce": (1000,), "warp_per_row": (37, 45),
             "vectorize_gridstride": (1003,), "regblock_matmul": (19, 23, 17),
             "vectorize_2d": (31, 33), "hist_privatize": (1000,), "coarsen_reduce": (1000,),
             "column_reduce": (37, 45), "stencil_tile": (1003,), "stencil_regs": (1003,),
             "stencil2d_regs": (37, 44),
             "block_per_row": (5, 1100)}
SIM_SIZES_BY_FILE = {"tiled_matmul/gemm_beta_macros.cu": (),  # sizes are its macros
                     "warp_per_row/gemv_clear_first.cu": (45,),
"stencil2d_regs/conv5x5_pitch.cu": (37, 45, 48),
                     "vectorize_gridstride/bias_grid1d.cu": (31, 33),
                     "vectorize_gridstride/relu_bias_mod.cu": (31, 33),
                     "vectorize_gridstride/row_scale_div.cu": (31, 33),
                     "vectorize_gridstride/embedding_rows.cu": (13, 29, 33),
                     "vectorize_gridstride/lut_bf16_dequant.cu": (1003, 37),
                     "hist_privatize/early_return_ptr.cu": (1000, 37),
                     "hist_privatize/weighted_float.cu": (1000, 13),
                     "vectorize_gridstride/scale_local_total.cu": (31, 33),
                     "warp_per_row/causal_local_rows.cu": (2, 3, 13),
                     "warp_per_row/csr_spmv_bounds.cu": (37, 29, 300),
                     "warp_per_row/csr_memory_sum.cu": (37, 29, 300),
                     "warp_reduce/column_barrier_first.cu": (45, 7),
                     "warp_per_row/softmax_if_max_btc.cu": (3, 5, 45),
                     "warp_per_row/softmax_block_tree.cu": (2, 3, 45),
                     "block_per_row/lse_bf16_select.cu": (2, 3, 1100),
                     "block_per_row/softmax_if_online.cu": (1, 5, 1100),
                     "block_per_row/softmax_shfl_templates.cu": (2, 3, 1100),
                     "coarsen_reduce/min_select_tree.cu": (3, 7, 50),
                     "warp_reduce/extern_block_bytes_atomic.cu": (3, 333)}


@dataclass(frozen=True)
class Variant:
    """One corpus kernel: ``pass_name`` the folder (the pass it should get), ``path``."""

    pass_name: str
    path: Path

    @property
    def id(self) -> str:
        return f"{self.pass_name}/{self.path.name}"


def variants() -> list[Variant]:
    """Every corpus kernel, sorted by folder and file name."""
    return [Variant(d.name, f) for d in sorted(ROOT.iterdir()) if d.is_dir()
            for f in sorted(d.glob("*.cu"))]


def context(v: Variant) -> PassContext:
    """The pass context of ``v``'s only kernel with its written spec."""
    target = load_target(v.path)
    return make_context(target.text, str(target.path), target.kernel.qualified_name, target.spec)


def sim_sizes(v: Variant, ctx: PassContext) -> dict[str, int]:
    """Small sizes for simulating ``v`` (``SIM_SIZES``)."""
    values = SIM_SIZES_BY_FILE.get(v.id, SIM_SIZES[v.pass_name])
    names = [s.name for s in ctx.spec.sizes]
    assert len(names) == len(values), f"{v.id}: sizes {names}, small values {values}"
    return dict(zip(names, values))

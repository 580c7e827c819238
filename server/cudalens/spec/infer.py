"""Drafting a harness spec from a kernel's signature and body, for kernels without one.

The draft is a starting point the user reviews; everything guessed carries a note (written as
``# ...`` comments by the writer). Rules:

- Roles: a pointer to const is ``in``. A non-const pointer written in the body (``p[i] = ``,
  ``*p = ``, ``p[i] += ``, ``atomicAdd(&p[i], v)``, ``atomicAdd(p + k, v)``) is ``out`` when it
  is never read and ``inout`` otherwise; reads are ``p[i]`` as a value, compound assignments,
  ``++``/``--`` and atomic read-modify-writes (``atomicAdd`` accumulates into what the buffer
  held). A buffer whose every read comes after the same thread's plain write of the same
  element (same index, in no branch the read is not in: softmax's ``out[i] = expf(..)`` then
  ``out[i] *= inv``) never sees its initial contents and is ``out`` (with a note). A non-const
  pointer that is never written is ``in`` (with a note); one passed where the
  analysis cannot follow is ``inout`` (with a note). An element passed to a device function
  of the file by non-const reference (``acc(out[i], v)`` with ``void acc(float& d, float v)
  { d += v; }``) is written as that function writes it.
- Lengths: from bounds checks on the variables that index each pointer (see ``body``):
  ``p[i]`` with ``i < n`` gives ``n``; ``p[row * cols + col]`` with ``row < rows`` and
  ``col < cols`` gives ``rows * cols``; ``p[blockIdx.x]`` gives the grid's x extent. Each integer
  parameter used in a length or a bound becomes a size of the same name (the scalar gets
  ``= name``): ``1 << 24`` when the kernel has one such size, else 4096 for the first two and 1024
  for the rest (grid dimensions first). A size used only as a stride (``row * ld + col``) gets
  the inner size (``size ld = cols``) or 1. A guard ``i < n - R`` trims the edges of an array
  of ``n`` (a stencil's ``out[i]`` is ``n``, not ``n - R``; a named constant keeps its sign, so
  ``in[i + R]`` under it is ``n``); a length past its index's bound by a constant
  (``in[i + 2 * R]`` under ``i < n``) is a padded buffer, with an ``assumed`` note. A
  variable checked in several ``if``s takes, for an access, the check around it first (a
  transpose's ``c < W`` here, ``c < H`` there); a ``for`` from an integer by a constant step
  ends at its last step (``j < TILE`` by ``BLOCK_ROWS`` ends at ``TILE - BLOCK_ROWS``); two
  loops reusing a variable name take, each, their own bound and step (by header). An index
  changed after its check (``if (i < n) { i *= 2; out[i] ... }``) follows the change.
- No bounds check along an axis: the first launch site's grid (a ``dim3`` variable, ``dim3(...)``
  or an expression, translated to the kernel's parameters: ``W / TILE``, ``(W + 31) / 32``,
  ``ceil_div(W, 32)``, ``rows``) and literal block bound ``blockIdx`` and ``threadIdx``, so
  ``blockIdx.x * TILE + threadIdx.x`` under ``grid(W / TILE)`` is below ``W``; the draft's
  grid is that launch's, and a ``ceil_div`` launch adds ``multiple W = TILE`` (only whole
  tiles fit an unchecked body). A grid named by integer parameters of the launching function
  that the kernel is not passed (``<<<nrows, 32>>>``, ``dim3 blocks_num(nrows, nchannels,
  nsamples)``) makes them sizes (``host_grid_names``), valued from a call of that function
  passing a constant (``caller_value``); ``gridDim`` along such an axis is its extent. Where
  a buffer's length stays assumed beside such a grid (a pointer bump the accesses do not
  follow), the draft is made again without it: its own grid covers its own assumed size.
- Loop-carried advances: a bump of a pointer parameter or an integer index local inside a
  ``for`` loop with a countable header moves by the bump times the iterations before the use
  (``loop_counts``); a tile loop by a constant step up to one size keeps that size a
  ``multiple`` of the step. A padded volume's length is written as its factors
  (``(dimx + 8) * (dimy + 8) * (dimz + 8)``). Boolean flags cleared by checks stand for them
  inside ``if (flag)``. An index variable with several bounds takes the launch's grid when it
  covers one of them, else the smallest.
- Rows per block: a launch's constant grid bounds ``blockIdx`` (``partial[blockIdx.x * BINS +
  threadIdx.x]`` under ``<<<240, 64>>>`` is 15360) and is the grid of a grid-stride loop; with
  no launch grid, such a row per block follows the draft's own grid (a GUESS note).
- CSR row pointers: ``for (j = ptr[r]; j < ptr[r + 1]; ...)``, also through locals (``int
  start = ptr[r], end = ptr[r + 1]; for (j = start; j < end; ...)``, a start of ``start +
  lane``): ``ptr`` gets ``csr(nnz)`` and what ``j`` indexes the length ``nnz``.
- Index arrays: an integer buffer whose values are exactly the index of another buffer
  (``src[idx[i]]``) gets ``range(0, LENGTH_OF_SRC)``.
- Launch: a block the launch passes as the kernel's own argument (``encoder<<<B * T, C>>>(...,
  C)``) is that size (``block = C``, ``threadIdx.x < C``, the size drafted at most 1024);
  else the block is the first literal block among the kernel's launch sites, else
  ``__launch_bounds__``, else 256, or (32, 8) when the body uses ``threadIdx.y``; the grid covers
  each axis's bound: ``ceil_div(n, block.x)`` for a per-thread index, ``n`` for a per-block one.
  A grid over vectors (``(N / 8 + 255) / 256``, ``N / 8 / 256``) covers N in steps of 2048.
  A template instance is read from the launches that launch it: template arguments named by
  host locals that differ between launches (``const uint BM = 128;`` in one branch of an
  if/else, 64 in the other) draft the first, with a note saying whether the drafted sizes
  take its branch.
- Vectors: ``reinterpret_cast<const int4*>(x + i)`` (or a struct of the file such as
  ``struct alignas(16) P { __nv_bfloat16 v[8]; }``) of a bf16 ``x`` moves 8 elements; under a
  check of the product (``if (idx * 8 < N)``) N is kept a multiple of 8; with no check and no
  launch, a buffer of such a thread index is 8 times the draft's thread count.
- Element types: template parameters take the instance's arguments (``T* x`` of
  ``reduce<__nv_bfloat16, 256>`` is bfloat16) and aliases are followed (``typedef
  __nv_bfloat16 floatX;``); see ``templates``. A template kernel's draft is for the instance
  asked for, else the first the file names (with a note listing the others).
- Constants: the file's integer ``#define``s and the instance's integer template arguments
  count as known values in bounds (``if (col < TILE)``) and indices.
- Decomposed indices: ``i / T`` and ``i % T`` are bounded (``i % T < T``; ``i / T < B`` when
  ``i < B * T``), so ``out + b * T * C + t * C`` with ``b = i / T``, ``t = i % T`` gets
  ``B * T * C``.
- Index arrays read through locals (``int ix = idx[i]; ... table[ix * C + c]``): the table
  gets a size ``n_TABLE`` of rows (a guessed 1024, with a note) and the index array
  ``range(0, n_TABLE)``; a loaded local checked against a size (``if (id < V)``) gives the
  index array ``range(0, V)`` instead.
- Dynamic shared memory: the third launch argument of the first launch site, translated
  (``sizeof``, helper functions with one ``return``, function-like macros, ``A & ~(2^k - 1)``
  rounding as ``A / 2^k * 2^k``, locals with one initializer, a name the ``switch`` case
  around the launch fixes (``case 32:`` of ``switch (ncols)``: ``host_locals.case_bindings``),
  the kernel's arguments as its sizes, the block variable as ``block.x``, ``sizeof(*p)`` and
  ``sizeof(p[0])`` of a pointer argument as its element's bytes); defaulted sizes it names are
  halved until it is within 48 KiB. A launch's size that does not translate is a marked guess
  of 48 KiB less the static shared arrays (the most a launch gets without opting in, so the
  body cannot index past it where the host's launch could not); with no launch, when the
  body declares ``extern __shared__``, a marked guess of one element per thread, the element
  being the type a byte array is cast to (``reinterpret_cast<float*>(smem)``,
  ``(float*)smem``).
- Embedding tables: the rows of a table indexed by loaded values come from the host's
  allocation of the buffer passed for it (``cudaMalloc(&wte, V * C * sizeof(float))`` with
  ``int V = 50257;``), when its row stride's sizes come from the host code too.
- Scalars: a by-value argument of a launch site that is a literal, or a variable the file
  initializes once with a literal, gives the value; otherwise a value is guessed and marked
  ``GUESS`` in the notes, to be confirmed: floats named like an optimizer's parameters get
  their usual values (``lr`` 1e-3, ``beta1`` 0.9, ``beta2`` 0.999, ``eps`` 1e-8,
  ``weight_decay`` 0.01), other floats 0.5 (below 1, so powers and ``1 - x`` stay positive),
  integers 1.
"""

from __future__ import annotations

import ast
import functools
import keyword
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from cudalens.kernel_model.model import kernel_model
from cudalens.source.launches import launches_of
from cudalens.source.model import Kernel, LaunchSite, Parameter
from cudalens.spec import dtypes
from cudalens.spec import templates
from cudalens.spec.block_shape import block_from_file, const_value, named_ints
from cudalens.spec.body import Access, BodyFacts, analyze_body
from cudalens.spec.defines import file_constants, function_macros
from cudalens.spec.errors import SpecError
from cudalens.spec.expr import ExprError, c_div, evaluate, names_in
from cudalens.spec.host_locals import (caller_arguments, case_bindings, function_int_params,
                                       line_starts, locals_in, offset_of)
from cudalens.spec.model import (BufferDecl, KernelSpec, LaunchDecl, MultipleDecl, ScalarDecl,
                                 SizeDecl)
from cudalens.spec.poly import Poly
from cudalens.spec.shared_block import shared_block
from cudalens.spec.tile_step import tile_step
from cudalens.textfile import from_bytes, to_bytes

if TYPE_CHECKING:
    from cudalens.kernel_model.macros import HeaderMacros

INFERRED = "inferred"
SIZE_1D = "1 << 24"
SIZE_2D = "4096"
SIZE_OTHER = "1024"
DEFAULT_BLOCK_1D = (256,)
DEFAULT_BLOCK_2D = (32, 8)
FLOAT_SCALAR = "0.5"
TABLE_ROWS = "1024"
# Usual values of optimizer and normalization parameters, by lower-case parameter name
# (AdamW as in Loshchilov & Hutter, "Decoupled Weight Decay Regularization", 2019, and
# PyTorch's defaults for torch.optim.AdamW and torch.nn.LayerNorm).
NAMED_FLOATS = {
    "lr": "0.001", "learning_rate": "0.001", "beta1": "0.9", "beta2": "0.999",
    "b1": "0.9", "b2": "0.999", "eps": "1e-08", "epsilon": "1e-08", "weight_decay": "0.01",
    "wd": "0.01", "momentum": "0.9", "scale": "0.125", "alpha": "1.0", "beta": "0.0",
    "grad_scale": "1.0", "beta1_correction": "0.1", "beta2_correction": "0.001",
}
_RESERVED = ("block", "sm_count")
# A draft's default sizes keep every buffer at most this long (2^26 elements): three sizes of
# 4096, 4096 and 1024 would make 2^34, past what a kernel's int index or an int product of
# its sizes can hold (2^31 - 1), and tens of GiB per buffer.
MAX_DRAFT_ELEMENTS = 1 << 26
_DEFAULTS = (SIZE_1D, SIZE_2D, SIZE_OTHER)
_MAX_DEPTH = 8


@dataclass
class _Length:
    """A buffer's length: the largest of ``polys`` (elements; several when none dominates the
    others), or the grid's extent on ``grid_axis`` (``p[blockIdx.x]``), or unknown (``why``)."""

    polys: tuple[Poly, ...] = ()
    grid_axis: str = ""
    # axes whose blockIdx only the draft's own grid bounds (``DRAFTGRID.x`` in ``polys``)
    draft_axes: tuple[str, ...] = ()
    why: str = ""
    reach: tuple[str, ...] = ()  # for each of ``polys``, the access text that gives it
    # unknown lengths of ``c * (blockIdx.x * blockDim.x + threadIdx.x) + k`` reaching L
    # elements: the draft's main size counts threads, so the buffer is c * main + extra long
    # (extra = k + L - c when positive), with the access that needs it
    scale: int = 1
    extra: int = 0
    scaled_by: str = ""


_TEMPLATE_HEAD = r"template\s*<(?P<params>[^<>]*(?:<[^<>]*>[^<>]*)*)>\s*"


def _guessed_instance(kernel: Kernel, source: str) -> Optional[tuple[str, list[str]]]:
    """An instance of template ``kernel`` to draft for when the file names none: a
    parameter's default where the template gives one (``template <const int NT = 256 / 4>``
    gives 64, ``typename T = half`` gives half), else ``float`` for each type parameter, the
    first of 256, 128, ... 8 that keeps the body's block and static shared memory within
    limits (:func:`_guess_fits`, defaults counted) for each integer one, ``false`` for a bool;
    None when the template's parameter list cannot be read."""
    m = None
    pattern = re.compile(_TEMPLATE_HEAD + r"(?:__\w+__\s*)*(?:static\s+)?(?:__global__)[^;{]*?"
                         rf"(?<![\w:]){re.escape(kernel.name)}\s*\(")
    m = next(pattern.finditer(source[:kernel.end_byte]), None)
    if m is None:
        return None
    params = templates.split_args(m.group("params"))
    if len(params) != len(kernel.template_parameters):
        return None
    args = []
    ints = []
    defaults: dict[str, int] = {}
    for text in params:
        head = text.split("=")[0].split()
        if not head:
            return None
        default = text.split("=", 1)[1].strip() if "=" in text else None
        if default and head[0] in ("typename", "class"):
            args.append(default)
        elif default and head[0] == "bool" and default in ("true", "false"):
            args.append(default)
        elif default and const_value(default, source) is not None:
            defaults[head[-1]] = const_value(default, source)
            args.append(str(defaults[head[-1]]))
        elif head[0] in ("typename", "class"):
            args.append("float")
        elif head[0] == "bool":
            args.append("false")
        else:
            ints.append((len(args), head[-1]))
            args.append(str(DEFAULT_BLOCK_1D[0]))
    if ints:
        body = _kernel_text(kernel, source)
        value = next((v for v in _INT_GUESSES
                      if _guess_fits(body, {**defaults, **{n: v for _, n in ints}},
                                     source)), None)
        for i, _ in ints:
            args[i] = str(value if value is not None else DEFAULT_BLOCK_1D[0])
    return templates.instance_text(kernel.name, args), args


# Values tried, in order, for a template's integer parameters when the file names no instance
_INT_GUESSES = (DEFAULT_BLOCK_1D[0], 128, 64, 32, 16, 8)
_MAX_THREADS = 1024
_MAX_STATIC_SHARED = 48 * 1024


def _kernel_text(kernel: Kernel, source: str) -> str:
    if source.isascii():
        return source[kernel.start_byte:kernel.end_byte]
    return from_bytes(to_bytes(source)[kernel.start_byte:kernel.end_byte])


def _square_block(body: str, name: str) -> bool:
    """The body splits ``threadIdx.x`` into rows and columns of ``name``
    (``threadIdx.x / BLOCKSIZE`` and ``threadIdx.x % BLOCKSIZE``): its block is ``name``
    squared."""
    return all(re.search(rf"threadIdx\.x\s*{op}\s*\(?\s*{re.escape(name)}\b", body)
               for op in ("/", "%"))


def _block_stride(body: str, name: str) -> bool:
    """The body writes a thread's index as ``blockIdx.x * NAME + threadIdx.x`` (either
    order of each product and sum): each block covers ``name`` threads of it."""
    n = re.escape(name)
    prod = rf"(?:blockIdx\.x\s*\*\s*\(?\s*{n}\b\s*\)?|\(?\s*\b{n}\s*\)?\s*\*\s*blockIdx\.x)"
    return re.search(rf"{prod}\s*\+\s*threadIdx\.x\b|threadIdx\.x\s*\+\s*{prod}(?!\s*\*)",
                     body) is not None


def _guess_fits(body: str, values: dict[str, int], source: str) -> bool:
    """Template values ``values`` keep the block the body implies (``name`` squared, see
    :func:`_square_block`) within 1024 threads and the static shared memory within 48 KiB."""
    for name, v in values.items():
        if _square_block(body, name) and v * v > _MAX_THREADS:
            return False
    return _static_shared_bytes(body, {**file_constants(source), **values}) \
        <= _MAX_STATIC_SHARED


def _static_shared_bytes(body: str, env: dict) -> int:
    """Bytes of the fixed-size ``__shared__`` arrays ``body`` declares, their extents
    evaluated in ``env`` (an array whose extent does not evaluate counts 0)."""
    total = 0
    arrays = [(m.group(1), dims) for m in re.finditer(
        r"__shared__\s+(?:volatile\s+)?([A-Za-z_][\w:]*)\s+([^;{}()=]+);", body)
        for dims in re.findall(r"(?:^|,)\s*[A-Za-z_]\w*\s*((?:\[[^\[\]]+\]\s*)+)",
                               m.group(2))]  # every declarator: s_a[BM][BK], s_b[BK][BN]
    for ctype, dims in arrays:
        size = _sizeof(ctype)
        count = 1
        for dim in re.findall(r"\[([^\[\]]+)\]", dims):
            try:
                n = evaluate(dim, env)
            except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError):
                n = None
            if not isinstance(n, int):
                count = 0
                break
            count *= n
        total += (size or 4) * count
    return total


def _fit_defaults(sizes: list[SizeDecl], params: Sequence[BufferDecl | ScalarDecl],
                  constants: dict[str, int],
                  given: frozenset = frozenset()) -> tuple[list[SizeDecl], str]:
    """``sizes`` with the defaulted ones halved, largest first, until no buffer is longer
    than ``MAX_DRAFT_ELEMENTS``; and the longest length before (``"B * T * C =
    17,179,869,184"``), or "" when nothing changed. Sizes the kernel or a launch gave stay,
    and so do the names in ``given`` (values from the host code)."""
    from cudalens.spec.expr import evaluate

    def longest(current: list[SizeDecl]) -> tuple[int, str]:
        env: dict[str, object] = dict(constants)
        for s in current:
            env[s.name] = int(evaluate(s.expr, env))
        best = (0, "")
        for p in params:
            if isinstance(p, BufferDecl):
                n = int(evaluate(p.length, env))
                best = max(best, (n, p.length))
        return best

    try:
        first, expr = longest(sizes)
    except (ExprError, ValueError, TypeError, ZeroDivisionError):
        return sizes, ""
    if first <= MAX_DRAFT_ELEMENTS:
        return sizes, ""
    current = list(sizes)
    values = {s.name: int(evaluate(s.expr, dict(constants))) for s in sizes
              if s.expr in _DEFAULTS and s.name not in given}
    while values and longest(current)[0] > MAX_DRAFT_ELEMENTS:
        name = max(values, key=lambda n: (values[n], -list(values).index(n)))
        if values[name] <= 1:
            break
        values[name] //= 2
        current = [SizeDecl(s.name, str(values[s.name])) if s.name in values else s
                   for s in current]
    return current, f"{expr} = {first:,}"


def _fit_shared(sizes: list[SizeDecl], shared: str, block: tuple[int, ...],
                constants: dict[str, int],
                defaulted: frozenset = frozenset()) -> tuple[list[SizeDecl], str]:
    """``sizes`` with the ``defaulted`` ones (drafted defaults, perhaps already made smaller
    by ``_fit_defaults``) that ``shared`` (bytes, a spec expression) names
    halved, largest first, until it is at most 48 KiB with ``block``, the most dynamic shared
    memory a launch gets without ``cudaFuncAttributeMaxDynamicSharedMemorySize`` (a default of
    2048 for ``d`` in ``3 * block.x * d * 4`` asks for 786 KiB, which no launch gets); and
    ``"EXPR = BYTES bytes"`` before, or "" when nothing changed."""
    from cudalens.spec.expr import Dim3

    dims = Dim3(*(tuple(block) + (1, 1, 1))[:3])

    def bytes_of(current: list[SizeDecl]) -> int:
        env: dict[str, object] = dict(constants)
        for s in current:
            env[s.name] = int(evaluate(s.expr, env))
        env["block"] = dims
        return int(evaluate(shared, env))

    try:
        first = bytes_of(sizes)
        named = names_in(shared)
    except (ExprError, ValueError, TypeError, ZeroDivisionError):
        return sizes, ""
    if first <= _MAX_STATIC_SHARED:
        return sizes, ""
    current = list(sizes)
    values = {s.name: int(evaluate(s.expr, dict(constants))) for s in sizes
              if s.name in defaulted and s.name in named}
    while values and bytes_of(current) > _MAX_STATIC_SHARED:
        name = max(values, key=lambda n: (values[n], -list(values).index(n)))
        if values[name] <= 1:
            break
        values[name] //= 2
        current = [SizeDecl(s.name, str(values[s.name])) if s.name in values else s
                   for s in current]
    return current, f"{shared} = {first:,} bytes"


def infer_spec(kernel: Kernel, source_text: str,
               launch_sites: Optional[Sequence[LaunchSite]] = None, *,
               instance: Optional[str] = None,
               defines: Optional[dict[str, int]] = None,
               headers: Sequence[str] = (),
               macros: Optional["HeaderMacros"] = None) -> KernelSpec:
    """A draft spec for ``kernel`` of ``source_text`` (the whole file, as parsed into the model).

    ``launch_sites`` are the file's launch sites (any kernel's; those of ``kernel`` are picked
    out), default ``kernel.launch_sites``. ``instance`` (``reduce<float, 256>``) picks a
    template instance; ``defines`` are the build's -D values; ``headers`` the texts of the
    project headers the file includes (``headers.local_headers``), whose aliases and defines
    count as the file's; ``macros`` their macros as ``target.FileContext.macros`` reads them
    (with the headers' names), used to say why a type's macro has no value (an ``#ifdef``
    branch not taken, a name defined nowhere). The result has
    ``source == "inferred"``, all lines 0, and its notes say what was guessed.

    Raises:
        SpecError: the kernel's body cannot be found in ``source_text``, or a parameter has a
            type the runner cannot pass (``validate.unsupported_parameter``).
    """
    from cudalens.spec.validate import record_types, unsupported_parameter

    records = record_types(source_text)
    for param in kernel.parameters:
        problem = unsupported_parameter(param, kernel, records)
        if problem:
            raise SpecError(INFERRED, param.range.start.line + 1,
                            f"cannot draft a spec for parameter {param.name} of {kernel.name}: "
                            f"{problem}")
    try:
        parsed, body = kernel_model(source_text, kernel).salvaged_body()
    except LookupError as exc:
        raise SpecError(INFERRED, kernel.range.start.line + 1, str(exc)) from None
    context = "\n".join(tuple(headers) + (source_text,))
    facts = analyze_body(parsed, body, kernel, context, _vector_sizes(context))
    sites = launches_of(kernel, launch_sites) if launch_sites is not None else kernel.launch_sites
    drafter = _Drafter(kernel, facts, source_text, tuple(sites), instance, defines,
                       tuple(headers), macros)
    spec = drafter.draft()
    if drafter.host_grid and any(n.startswith("length of ") and " assumed " in n
                                 for n in spec.notes):
        # a grid of the host's sizes (<<<nrows, 32>>>) next to a length the accesses did not
        # give (assumed nrows) is not covered by it: x[row * 32 + c] would read past nrows
        # elements; the draft's own grid over its assumed size is
        spec = _Drafter(kernel, facts, source_text, tuple(sites), instance, defines,
                        tuple(headers), macros, host_grid=False).draft()
    return spec


def outside_inputs(kernel: Kernel, source_text: str,
                   launch_sites: Optional[Sequence[LaunchSite]] = None) -> tuple:
    """What ``infer_spec(kernel, source_text, launch_sites)`` reads from the file outside the
    kernel's own text and its launch sites' argument texts, as a hashable value: which of the
    kernel's by-value parameter types the file declares as records, and the block shape the
    launch sites and ``__launch_bounds__`` give through named constants and ``dim3``
    variables, and ``_outside_extra``'s defines, instances, aliases, initializers and helpers.
    A cache of drafts keyed by the kernel's text and launch sites must add this
    (an edited ``#define BLOCK`` changes the draft; an edit elsewhere does not). Line numbers
    in the draft's notes are not covered. Cheap: the file's scans are cached per text.
    """
    from cudalens.spec.validate import record_types

    records = record_types(source_text)
    scalars = tuple(_normalized_type(p.type) in records
                    for p in kernel.parameters if not p.is_pointer)
    sites = launches_of(kernel, launch_sites) if launch_sites is not None else kernel.launch_sites
    # the block as the draft reads it (a dim3 variable's declaration in its launcher)
    found = block_from_file(kernel, tuple(sites), source_text)
    extra = _outside_extra(kernel, source_text, tuple(sites))
    return scalars, (found[0] if found is not None else None), extra


def _outside_extra(kernel: Kernel, source_text: str, sites: tuple[LaunchSite, ...]) -> tuple:
    """The rest of what a draft reads outside the kernel and its launch sites' texts: the
    file's integer #defines, the template instances it names, the parameters' types with
    aliases followed, the initializers of variables passed at the launch sites, and the
    one-line helper functions (dynamic shared memory), and the grids of the launch sites with
    their ``dim3`` variables and integer locals written out (``_site_grid_text``: a grid
    bounds an unchecked body)."""
    consts = tuple(sorted(file_constants(source_text).items()))
    insts = templates.instances(kernel.name, source_text) if kernel.template_parameters else ()
    types = tuple(templates.resolve_type(p.type, source_text) for p in kernel.parameters)
    inits = tuple(_initializer(a.strip(), source_text) for s in sites
                  for a in s.arguments + s.config[1:])
    helpers = tuple(sorted(_helpers(source_text).items())) if any(
        len(s.config) >= 3 for s in sites) else ()
    grids = tuple(_site_grid_text(s, source_text) for s in sites[:8] if s.config)
    return consts, insts, types, inits, helpers, grids


@functools.lru_cache(maxsize=4096)
def _normalized_type(ctype: str) -> str:
    return dtypes.normalize_c_type(ctype)


def clear_text_caches() -> None:
    """Empties what inference keeps per text (parse trees, record names, named constants,
    ``dim3`` declarations): for measuring the plain path, and in tests."""
    from cudalens.kernel_model.syntax import clear_parses
    from cudalens.spec import block_shape, validate

    from cudalens.spec import defines

    clear_parses()
    validate._record_types.cache_clear()
    defines._file_constants.cache_clear()
    defines._active.cache_clear()
    templates.instances.cache_clear()
    templates.aliases.cache_clear()
    templates.type_macros.cache_clear()
    block_shape._plain_ints.cache_clear()
    block_shape.named_ints.cache_clear()
    block_shape.dim3_declarations.cache_clear()
    block_shape.block_from_texts.cache_clear()
    block_shape.dim3_declaration_sites.cache_clear()
    line_starts.cache_clear()


class _Drafter:
    def __init__(self, kernel: Kernel, facts: BodyFacts, source: str,
                 sites: tuple[LaunchSite, ...], instance: Optional[str] = None,
                 defines: Optional[dict[str, int]] = None, headers: tuple[str, ...] = (),
                 macros: Optional["HeaderMacros"] = None, host_grid: bool = True) -> None:
        self.kernel = kernel
        self.headers = headers
        self.header_env = macros
        self.facts = facts
        self.source = source
        # where aliases, defines and constants are looked up: the headers, then the file
        self.context = "\n".join(headers + (source,)) if headers else source
        self.sites = sites
        self.notes: list[str] = []  # about parameters, in parameter order
        # (condition, launch, note) of the host's if around the launch an instance's template
        # arguments were taken from, when the launches disagree (``valued_instance``)
        self.branch: Optional[tuple[str, LaunchSite, str]] = None
        self.fills: dict[str, tuple[str, tuple[str, ...]]] = {}  # buffer -> (fill, args)
        self.instance = self.pick_instance(instance)
        self.sites = self.sites_of_instance()
        self.bound = templates.bindings(kernel, self.instance) if self.instance else {}
        self.defines = defines
        self.constants = dict(file_constants(self.context, defines))
        # const/constexpr integers of the file (``static const uint PARTIAL_COUNT = 240;``, a
        # launch's grid), after the #defines; never a kernel parameter's name
        params = {p.name for p in kernel.parameters}
        for name, value in named_ints(self.context)[1].items():
            if name not in params:
                self.constants.setdefault(name, value)
        for name, arg in self.bound.items():
            v = const_value(arg, self.context)
            if v is not None:
                self.constants[name] = v
        self.csr_sizes: dict[str, str] = {}  # row-pointer array -> size of its non-zeros
        self.table_sizes: dict[str, str] = {}  # loaded local -> size of its table's rows
        self.load_bounds: dict[str, str] = {}  # loaded local -> row stride bounding it
        self.ranges_from_loads: dict[str, str] = {}  # index array -> that stride
        self.range_why: dict[str, str] = {}  # index array -> why its range, when not a stride
        self.subtracted: set[str] = set()  # sizes only subtracted in lengths (offsets)
        self.table_of: dict[str, str] = {}  # that size -> the index array it bounds
        self.table_strides: dict[str, Poly] = {}  # that size -> its rows' stride (C of id * C)
        self.launch_notes: list[str] = []  # about the launch configuration
        self.later: dict[str, list[str]] = {}  # notes written with a parameter's declaration
        self.order = [p.name for p in kernel.parameters]
        self.int_params = {p.name for p in kernel.parameters
                           if not p.is_pointer and (dtypes.is_int_c_type(p.type) or
                                                    dtypes.is_int_c_type(templates.resolve_type(
                                                        p.type, self.context, self.bound)))}
        # the launch's grid per axis as (covered extent P, step S, "floor"|"ceil"), from the
        # first launch site whose grid translates (``dim3 grid(W / TILE, H / TILE)``)
        self.site_block = block_from_file(kernel, self.sites, self.context, source)
        # integer parameters of the launching function that the first site's grid names and
        # the kernel is not passed (``<<<nrows, 32>>>``, ``dim3 blocks(nrows, nch, nsamp)``):
        # sizes of the draft, as the kernel's own integer parameters are (see host_grid_names)
        self.host_grid: list[str] = self.host_grid_names() if host_grid else []
        self.order += self.host_grid
        self.int_params |= set(self.host_grid)
        self.site_grid = self.launch_grid()
        # a block the launch passes as the kernel's own argument (``<<<B * T, C>>>``): x -> C
        self.site_block_params: dict[str, Poly] = {}
        self.site_block_line = 0
        self.site_block_params, self.site_block_line = self.launch_block_params()
        self.multiples: dict[str, int] = {}  # size -> multiple its ragged value keeps
        self.launch_bounded: set[str] = set()  # axes whose blockIdx the launch's grid bounds
        self.host_given: set[str] = set()  # sizes whose values come from the host code
        self.unchecked_builtins = False  # an index of thread built-ins alone, unchecked
        self.multiple_why: dict[str, str] = {}  # size -> why it is kept a multiple (else a launch)
        self.draft_grid_ok = False  # blockIdx may be bounded by the draft's grid (lengths)
        # axes whose grid a bounded index variable sets (the draft's grid is known there)
        self.draft_grid_axes: set[str] = set()
        self.const_grid_notes: dict[str, str] = {}  # buffer -> why its rows follow the grid
        # loop variable -> (start, step) of the loop around the access being bounded
        self.loop_steps: dict[str, tuple[int, int]] = {}

    # -- bounds ------------------------------------------------------------------------------

    def upper(self, poly: Poly, depth: int = 0) -> Optional[Poly]:
        """The largest value of ``poly`` in terms of integer parameters, or None."""
        total = Poly()
        for m, c in poly.terms:
            if c < 0 and any(s not in self.int_params and s not in self.constants for s in m):
                continue  # a variable term with a negative sign is largest at 0 (a named
                # constant keeps its sign: i < n - R bounds i by n - R, not n)
            term = Poly.const(c)
            for s in m:
                v = self.var_upper(s, depth)
                if v is None:
                    return None
                term = term * v
            total = total + term
        return total

    def pick_instance(self, asked: Optional[str]) -> Optional[str]:
        k = self.kernel
        if not k.template_parameters:
            return None
        if asked is not None:
            return asked
        found = tuple(dict.fromkeys(self.valued_instance(f)
                                    for f in templates.instances(k.name, self.source)))
        if not found:
            guessed = _guessed_instance(k, self.source)
            if guessed is None:
                self.notes.append(f"template {k.name}: no instance found in the file; types "
                                  f"of template parameters assumed float")
                return None
            inst, args = guessed
            self.notes.append(
                f"template {k.name}: no instance found in the file; drafted for {inst} "
                f"({', '.join(f'{p} = {a}' for p, a in zip(k.template_parameters, args))}): "
                f"GUESS, confirm the arguments, or name the instance with --kernel "
                f"'{k.name}<ARGS>'; the file must instantiate it (template __global__ void "
                f"{k.qualified_name or k.name}{inst[inst.index('<'):]}(...);) for the runner "
                f"to find it")
            return inst
        if len(found) > 1:
            self.notes.append(f"drafted for {found[0]}, the first of {len(found)} instances "
                              f"({', '.join(found)}): pick another with --kernel 'NAME<ARGS>'")
        return found[0]

    def sites_of_instance(self) -> tuple[LaunchSite, ...]:
        """The launch sites that launch the drafted instance, when the instance's template
        arguments are names with a value per launch (an if/else that launches ``<BM, BN>``
        with 128 in one branch and 64 in the other): the grid and block are read from those;
        all sites when none or every one matches."""
        if not self.instance or len(self.sites) < 2:
            return self.sites
        def instance_key(text: str) -> str:
            return "".join(text.split())

        head, _, rest = self.instance.partition("<")
        want = instance_key(self.instance)
        texts = tuple(dict.fromkeys(templates.instances(self.kernel.name, self.source)))
        kept = []
        for site in self.sites:
            at = offset_of(self.source, site.range.start.line, site.range.start.column)
            own = templates.site_instance(self.kernel.name, self.source, at)
            for text in ((own,) if own else texts):  # the site's own arguments where written
                args = templates.split_args(text.partition("<")[2][:-1])
                values = [const_value(locals_in(a, self.source, at, set()), self.context)
                          for a in args]
                valued = templates.instance_text(head, [str(v) if isinstance(v, int) and
                                                        not re.fullmatch(r"true|false", a.strip())
                                                        else a for a, v in zip(args, values)])
                if instance_key(valued) == want:
                    kept.append(site)
                    break
        return tuple(kept) if kept else self.sites

    def valued_instance(self, inst: str) -> str:
        """``inst`` with each template argument that is an integer expression of the file's
        constants or of integer locals before a launch of the kernel written as its value
        (``rsum<BS, PER>`` launched after ``const int PER = NTOTAL / blocks / BS;`` is
        ``rsum<256, 16>``, as the compiled module names it); other arguments as written."""
        head, _, rest = inst.partition("<")
        args = templates.split_args(rest[:-1]) if rest.endswith(">") else []
        if not args:
            return inst
        out = []
        differ: list[tuple[str, int, list[tuple[int, int]]]] = []
        for arg in args:
            value = const_value(arg, self.context) if re.fullmatch(r"[\w\s()+\-*/%<>]+", arg) \
                else None
            per_site: list[tuple[int, int]] = []  # (line, value) at each site that gives one
            # each launch's own locals first: a name declared in both branches of an if/else
            # (const uint BM = 128; ... else ... const uint BM = 64;) has a value per launch
            for site in self.sites if re.search(r"[A-Za-z_]", arg) else ():
                at = offset_of(self.source, site.range.start.line, site.range.start.column)
                v = const_value(locals_in(arg, self.source, at, set()), self.context)
                if isinstance(v, int):
                    per_site.append((site.range.start.line + 1, v))
            if per_site:
                value = per_site[0][1]
                if len({v for _, v in per_site}) > 1:
                    differ.append((arg.strip(), value, per_site))
            out.append(str(value) if isinstance(value, int) and
                       not re.fullmatch(r"(?:true|false)", arg.strip()) else arg)
        if differ:
            line = differ[0][2][0][0]
            cond = _enclosing_if(self.source, line)
            listed = "; ".join(f"{a} = " + ", ".join(f"{v} (line {ln})" for ln, v in sites)
                               for a, _, sites in differ)
            note = (f"template arguments of {inst} differ between the launches ({listed}): "
                    f"drafted for the first, at line {line}"
                    + (f", under 'if ({cond})'" if cond else "")
                    + "; GUESS: the host picks one by the sizes, so set sizes that take that "
                      "branch or name the instance with --kernel 'NAME<ARGS>'")
            if note not in self.notes:
                self.notes.append(note)
                site = next(x for x in self.sites if x.range.start.line + 1 == line)
                self.branch = (cond, site, note)
        return templates.instance_text(head, out)

    def var_upper(self, name: str, depth: int) -> Optional[Poly]:
        if name in self.int_params or name in self.table_of or name in self.csr_sizes.values():
            return Poly.sym(name)
        if name in self.constants:
            return Poly.const(self.constants[name])
        if depth >= _MAX_DEPTH:
            return None
        if name in self.facts.divisions:
            return self.division_upper(name, depth)
        if name in self.table_sizes:
            return Poly.sym(self.table_sizes[name]) - Poly.const(1)
        if name in self.load_bounds:
            return Poly.sym(self.load_bounds[name]) - Poly.const(1)
        if name in self.facts.csr and not self.facts.bounds.get(name):
            return Poly.sym(self.csr_size(self.facts.csr[name])) - Poly.const(1)
        for b in self.facts.bounds.get(name, []):
            u = self.upper(b, depth + 1)
            if u is not None:
                return self.stepped(name, u - Poly.const(1))
        return self.launch_upper(name)

    def stepped(self, name: str, top: Poly) -> Poly:
        """The last value loop variable ``name`` takes up to ``top`` (inclusive) when it
        starts at an integer and steps by a constant (``facts.steps``): ``for (j = 0; j < 32; j +=
        8)`` ends at 24, not 31."""
        start, step = self.facts.steps.get(name, ("", ""))
        a, s = self._int_text(start), self._int_text(step)
        if name in self.loop_steps:
            a, s = self.loop_steps[name]
        if a is None or s is None or s < 2:
            return top
        if not top.is_const() and name in self.facts.iterations and a == 0:
            return self.stepped_to_multiple(name, top, s)
        if not top.is_const() or top.constant < a:
            return top
        return Poly.const(a + (top.constant - a) // s * s)

    def stepped_to_multiple(self, name: str, top: Poly, step: int) -> Poly:
        """The last distance a counted loop (``loop_counts``) reaches up to ``top``
        (inclusive, ``B - 1``) by ``step``: ``B - step`` when ``B`` is one size, kept a multiple
        of ``step`` (``for (k = 0; k < K; k += TILE)`` with ``multiple K = TILE``: only whole
        tiles, as a body with no bounds check on the tile needs); else ``top`` (also when the
        body checks the loop's variable, ``k0 + tx < K``: it handles a partial last step)."""
        size = _single_symbol(top + Poly.const(1))
        var = self.facts.iterations[name]
        if size is None or size not in self.int_params or var in self.facts.checked_names:
            return top  # a kernel that checks its partial last step runs any size
        self.multiples.setdefault(size, step)
        self.multiple_why.setdefault(size, (
            f"multiple {size} = {step}: the loop over {var} steps by {step} up to {size} with "
            f"no bounds check on the elements of its last step, so {size} stays a multiple of "
            f"{step} (whole steps)"))
        return top - Poly.const(step - 1)

    def _int_text(self, text: str) -> Optional[int]:
        from cudalens.kernel_model.syntax import int_literal

        if not text:
            return None
        if text in self.constants:
            return self.constants[text]
        return int_literal(text)

    def launch_upper(self, name: str) -> Optional[Poly]:
        """The largest ``blockIdx.a`` / ``threadIdx.a`` under the launch site's grid and
        literal block, for a body with no bounds check on that axis: ``blockIdx.x <
        grid.x`` (a symbol ``GRID.x`` standing for ``P / S``, resolved by ``grid_resolved``),
        ``threadIdx.x < block.x``, ``blockDim.x == block.x``, ``gridDim.x == grid.x`` (where
        the grid is the launch's extent itself, step 1)."""
        if "." not in name:
            return None
        kind, axis = name.split(".", 1)
        if axis not in ("x", "y", "z"):
            return None
        i = "xyz".index(axis)
        if kind in ("threadIdx", "blockDim") and self.site_block_params:
            extent = self.site_block_params.get(axis, Poly.const(1))
            return extent - Poly.const(1) if kind == "threadIdx" else extent
        if kind in ("threadIdx", "blockDim") and self.site_block is not None and self.site_grid:
            shape = self.site_block[0]
            extent = shape[i] if i < len(shape) else 1
            return Poly.const(extent - 1 if kind == "threadIdx" else extent)
        if kind == "gridDim" and axis in self.site_grid and self.site_grid[axis][1] == 1:
            self.launch_bounded.add(axis)  # gridDim.y of dim3 blocks(nrows, nch): nch itself
            return self.site_grid[axis][0]
        if kind == "blockIdx" and axis in self.site_grid:
            self.launch_bounded.add(axis)
            extent, step, _ = self.site_grid[axis]
            if step == 1:
                return extent - Poly.const(1)
            return Poly.sym(f"GRID.{axis}") - Poly.const(1)
        if kind == "blockIdx" and self.draft_grid_ok and axis in self.draft_grid_axes:
            return Poly.sym(f"DRAFTGRID.{axis}") - Poly.const(1)
        return None

    def grid_resolved(self, poly: Poly) -> Optional[Poly]:
        """``poly`` with each ``S * GRID.a`` (the launch covers ``P = S * grid.a`` along a)
        written as ``P``; None when a ``GRID`` symbol stays (a coefficient S does not divide).
        A ``ceil_div`` launch makes P's ragged value a multiple of S (``self.multiples``): the
        body has no bounds check, so only whole blocks fit the buffers."""
        out = Poly()
        for m, c in poly.terms:
            grids = [sym for sym in m if sym.startswith("GRID.")]
            if not grids:
                out = out + Poly(terms=((m, c),))
                continue
            term = Poly.const(c)
            for sym in m:
                if not sym.startswith("GRID."):
                    term = term * Poly.sym(sym)
            for g in grids:
                extent, step, how = self.site_grid[g[-1]]
                term = _divide(term, Poly.const(step))
                if term is None:
                    return None
                term = term * extent
                if how == "ceil":
                    size = _single_symbol(extent)
                    if size is None:
                        return None
                    before = self.multiples.get(size, step)
                    self.multiples[size] = math.lcm(before, step)
                    why = self.multiple_why.get(size)
                    if why is not None and self.multiples[size] != before:
                        # the vectors' multiple (8) and the launch's whole blocks (2048)
                        self.multiple_why[size] = (
                            f"multiple {size} = {self.multiples[size]}: "
                            f"{why.split(': ', 1)[1]}; and the launch covers {size} with whole "
                            f"blocks of {step} elements with no bounds check on some access, "
                            f"so the ragged size stays a multiple of that")
            out = out + term
        return out

    def launch_axes(self, grid_vars: dict[str, tuple[str, str]]) -> list[str]:
        """Axes the draft's grid takes from the launch site: those with no bounded index
        variable whose ``blockIdx`` the launch's grid bounded in a length."""
        return [a for a in "xyz" if a not in grid_vars and a in self.launch_bounded
                and a in self.site_grid]

    def launch_grid(self) -> dict[str, tuple[Poly, int, str]]:
        """The first launch site's grid per axis, in the kernel's integer parameters: ``W /
        TILE`` -> (W, 32, "floor"), ``(W + 31) / 32`` and ``ceil_div(W, 32)`` -> (W, 32,
        "ceil"), ``rows`` -> (rows, 1, "floor"); an axis whose text does not translate is left
        out. From a ``dim3`` variable (``dim3 grid(...), block(...);``), ``dim3(...)`` or a
        plain expression."""
        for site in self.sites:
            if not site.config:
                continue
            args = {a.strip(): q.name for a, q in zip(site.arguments, self.kernel.parameters)
                    if q.name in self.int_params}
            if site is self.sites[0]:
                args.update({n: n for n in self.host_grid})
            out: dict[str, tuple[Poly, int, str]] = {}
            named = site.config[1].strip() if len(site.config) > 1 else ""
            for axis, part in zip("xyz", _site_grid_text(site, self.source)):
                if self.site_block is not None and re.fullmatch(r"[A-Za-z_]\w*", named):
                    # ceil((float)W / block.x) with dim3 block(32, 8): the block's extents
                    shape = tuple(self.site_block[0]) + (1, 1)
                    part = re.sub(rf"(?<![\w.]){re.escape(named)}\s*\.\s*([xyz])\b",
                                  lambda m: str(shape["xyz".index(m.group(1))]), part)
                found = _grid_axis(part, args, self.constants)
                if found is not None:
                    out[axis] = found
            if out:
                return out
        return {}

    def host_grid_names(self) -> list[str]:
        """The names in the first launch site's grid that are integer parameters of the
        function launching it and neither passed to the kernel nor the kernel's parameters'
        names nor constants: ``void launch(..., int nrows) { k<<<nrows, 32>>>(x, ncols); }``
        gives ``["nrows"]``; the draft makes each a size, the grid's extent (new-user report
        R6, ggml's ``dim3 blocks_num(nrows, nchannels, nsamples)``)."""
        site = next((s for s in self.sites if s.config), None)
        if site is None:
            return []
        at = offset_of(self.source, site.range.start.line, site.range.start.column)
        host = function_int_params(self.source, at)
        body = self.source[self.source.rfind("\n}", 0, at) + 1:at]
        host = [h for h in host if not re.search(  # assigned before the launch: not the call's
            rf"(?<![\w.]){re.escape(h)}\s*(?:[-+*/%]?=(?!=)|\+\+|--)", body)]
        passed = {a.strip() for a in site.arguments}
        kernel_names = {p.name for p in self.kernel.parameters}
        out = []
        for part in _site_grid_text(site, self.source):
            for word in re.findall(r"(?<![\w.])[A-Za-z_]\w*", part):
                if word in host and word not in passed and word not in kernel_names and \
                        word not in self.constants and word not in _RESERVED and \
                        not keyword.iskeyword(word) and word not in out:
                    out.append(word)
        return out

    def launch_block_params(self) -> tuple[dict[str, Poly], int]:
        """The first launch site's block, per axis, when it is a polynomial of the kernel's
        integer parameters (``<<<B * T, C>>>`` with ``C`` passed as the kernel's ``C``: x ->
        ``C``), with that site's 1-based line; ({}, 0) when no site's block translates, or one
        axis is a constant only (a literal block is ``block_from_file``'s)."""
        from cudalens.spec.block_shape import split_top

        for site in self.sites:
            if len(site.config) < 2:
                continue
            args = {a.strip(): q.name for a, q in zip(site.arguments, self.kernel.parameters)
                    if q.name in self.int_params}
            text = site.config[1].strip()
            m = re.fullmatch(r"(?:dim3\s*)?[({](.*)[)}]", text, flags=re.S)
            parts = split_top(m.group(1)) if m is not None and text.startswith(("dim3", "{")) \
                else [text]
            at = offset_of(self.source, site.range.start.line, site.range.start.column)
            keep = {a.strip() for a in site.arguments}
            out: dict[str, Poly] = {}
            for axis, part in zip("xyz", parts[:3]):
                found = _grid_axis(locals_in(part, self.source, at, keep), args, self.constants)
                if found is None or found[1] != 1:
                    out = {}
                    break
                if not (found[0].is_const() and found[0].constant == 1):
                    out[axis] = found[0]
            if out and any(not p.is_const() for p in out.values()):
                return out, site.range.start.line + 1
        return {}, 0

    def csr_size(self, row_ptr: str) -> str:
        """The size of non-zeros of CSR row pointers ``row_ptr`` (``nnz``, or ``nnz_ROWPTR``
        when a parameter or another row-pointer array has that name)."""
        if row_ptr not in self.csr_sizes:
            taken = set(self.order) | set(self.csr_sizes.values())
            self.csr_sizes[row_ptr] = "nnz" if "nnz" not in taken else f"nnz_{row_ptr}"
        return self.csr_sizes[row_ptr]

    def division_upper(self, name: str, depth: int) -> Optional[Poly]:
        """The largest value of ``a / b`` or ``a % b`` (``body.BodyFacts.divisions``), taking
        ``b >= 1``: ``a % b <= max(b) - 1`` (else ``max(a)``); ``a / b <= (max(a) + 1) / b - 1``
        when that divides exactly as polynomials, else ``max(a)``."""
        op, a, b = self.facts.divisions[name]
        exact = self.const_of(Poly.sym(name))
        if exact is not None:  # (BN)/(TN) of the instance's constants: its value
            return Poly.const(exact)
        ua = self.upper(a, depth + 1)
        if op == "%":
            ub = self.upper(b, depth + 1)
            return ub - Poly.const(1) if ub is not None else ua
        if ua is None:
            return None
        bb = self.upper(b, depth + 1)
        q = _divide(ua + Poly.const(1), bb) if bb is not None else None
        return q - Poly.const(1) if q is not None else ua

    def bound_of(self, var: str) -> Optional[Poly]:
        """The exclusive upper bound of ``var`` in integer parameters."""
        u = self.var_upper(var, 0)
        return None if u is None else u + Poly.const(1)

    # -- per pointer -------------------------------------------------------------------------

    def length_of(self, accesses: list[Access]) -> _Length:
        known: list[Poly] = []
        reach: dict[Poly, str] = {}  # length -> the access that reaches its last element
        why = ""
        scale, extra_at, scaled_by = 1, 0, ""
        for a in accesses:
            only = _single_symbol(a.index)
            if only is not None and only.startswith("blockIdx."):
                return _Length(grid_axis=only[-1])
            if a.kind == "escape":
                why = why or f"the pointer is passed on in '{a.text}'"
                continue
            if a.index is None:
                why = why or (f"index is data-dependent ('{a.text}')" if a.data_indices
                              else f"index of '{a.text}' is not an affine expression")
                continue
            self.name_tables(a)
            u = self.scoped_upper(a)
            if u is None and any(sym.startswith("blockIdx.") for sym in a.index.symbols):
                self.draft_grid_ok = True  # one row per block: the grid's blocks (module doc)
                try:
                    u = self.scoped_upper(a)
                finally:
                    self.draft_grid_ok = False
            if u is not None and a.index is not None:
                for sym in sorted(a.index.symbols):
                    if sym.startswith("blockIdx.") and sym[-1] in self.site_grid and \
                            self.site_grid[sym[-1]][0].is_const() and \
                            self.site_grid[sym[-1]][1] == 1:
                        blocks = self.site_grid[sym[-1]][0].constant
                        self.const_grid_notes.setdefault(a.param, (
                            f"{sym} in '{a.text}' runs over the launch's grid ({blocks} "
                            f"blocks along {sym[-1]}, line "
                            f"{self.sites[0].range.start.line + 1 if self.sites else 0})"))
            if u is None:
                free = sorted(s for s in a.index.symbols
                              if s not in self.int_params and self.var_upper(s, 0) is None)
                if free and all(f.split(".")[0] in ("blockIdx", "threadIdx", "blockDim")
                                for f in free):
                    self.unchecked_builtins = True
                why = why or (f"no bounds check found on {', '.join(free)} in '{a.text}'"
                              if free else f"no bounds check found for '{a.text}'")
                strided = _thread_stride(a.index)
                if strided is not None:
                    c, k = strided
                    extra = max(0, k + self.access_lanes(a) - c)
                    if (c, extra) > (scale, extra_at):
                        scale, extra_at, scaled_by = c, extra, a.text
                continue
            length = u + Poly.const(self.lanes_past(a))
            if any(sym.startswith("GRID.") for sym in length.symbols):
                resolved = self.grid_resolved(length)
                if resolved is None:
                    why = why or f"the launch's grid does not divide into '{a.text}'"
                    continue
                length = resolved
            if length.is_const() and length.constant < 1:
                continue
            if length.constant < 0 and \
                    _single_symbol(length - Poly.const(length.constant)) in self.int_params:
                # i < n - R trims the edges of an array of n (a stencil's out[i])
                length = length - Poly.const(length.constant)
            if not any(k.dominates(length) for k in known):
                known = [k for k in known if not length.dominates(k)] + [length]
                reach[length] = a.text
        if not known:
            return _Length(why=why or "not accessed in the body", scale=scale, extra=extra_at,
                           scaled_by=scaled_by)
        axes = tuple(sorted({sym[-1] for k in known for sym in k.symbols
                             if sym.startswith("DRAFTGRID.")}))
        return _Length(polys=tuple(known), reach=tuple(reach.get(k, "") for k in known),
                       draft_axes=axes)

    def access_lanes(self, a: Access) -> int:
        """The elements of its parameter one access moves: ``a.width`` bytes over the
        element size (8 for a 16-byte load of bf16), else 1."""
        if a.width <= 1:
            return 1
        param = next((q for q in self.kernel.parameters if q.name == a.param), None)
        st = self.spec_type(param)[0] if param is not None else None
        return max(1, a.width // dtypes.itemsize(dtypes.numpy_dtype(st))) if st else 1

    def lanes_past(self, a: Access) -> int:
        """How many elements past its index's largest value plus one ``a`` reaches, plus
        one: 1 for one element; for a vector of L elements (``Access.width``) L, unless the
        index steps in whole vectors: every thread index (``facts.values``) a multiple of L
        (``(blockIdx.x * blockDim.x + threadIdx.x) * x128::size``). Then the last size in
        that index's bound is kept a multiple of L (``multiple C = 8``), so the last vector
        ends at the bound, and 1 is returned."""
        if a.width <= 1:
            return 1
        param = next((q for q in self.kernel.parameters if q.name == a.param), None)
        st = self.spec_type(param)[0] if param is not None else None
        if st is None:
            return 1
        lanes = max(1, a.width // dtypes.itemsize(dtypes.numpy_dtype(st)))
        if lanes == 1:
            return 1
        for e, b, scope in self.facts.expr_guards:
            # if (idx * 8 < N) ... reinterpret_cast<const Packed*>(in)[idx]: the vector starts
            # at the guarded product, a multiple of its lanes, so N kept a multiple of them
            # ends the last vector at N
            if a.index is None or a.index != e or (scope is not None and
                                                   scope not in a.branches) or \
                    any(c % lanes for _, c in e.terms):
                continue
            last = [n for n in self.order if n in b.symbols]
            if len(b.symbols) == 1 and last and _single_symbol(b) == last[-1] and \
                    b == Poly.sym(last[-1]):
                self.multiples.setdefault(last[-1], lanes)
                self.multiple_why.setdefault(last[-1], (
                    f"multiple {last[-1]} = {lanes}: '{a.text}' moves {lanes} elements "
                    f"({a.width} bytes) from an index checked against {last[-1]} in steps of "
                    f"{lanes}, so {last[-1]} stays a multiple of {lanes} (whole vectors: a "
                    f"ragged {last[-1]} would read or write past its end)"))
                return 1
        for var, value in self.facts.values.items():
            if not value.terms or any(c % lanes for _, c in value.terms) or \
                    value.constant % lanes:
                continue
            bound = self.bound_of(var)
            last = [n for n in self.order if bound is not None and n in bound.symbols]
            if last and (var in a.text or self.axis_var_in(var, a)):
                self.multiples.setdefault(last[-1], lanes)
                self.multiple_why[last[-1]] = (
                    f"multiple {last[-1]} = {lanes}: '{a.text}' moves {lanes} elements "
                    f"({a.width} bytes) from an index that steps by {lanes}, so the sizes stay "
                    f"multiples of {lanes} (whole, aligned vectors)")
                return 1
        return lanes

    def axis_var_in(self, var: str, a: Access) -> bool:
        """``a``'s index is built from ``var`` (directly, or through its quotients and
        remainders ``(idx)/(C)``)."""
        if a.index is None:
            return False
        for sym in a.index.symbols:
            if sym == var:
                return True
            div = self.facts.divisions.get(sym)
            if div is not None and (var in div[1].symbols or any(
                    var in self.facts.divisions.get(t, ("", Poly(), Poly()))[1].symbols
                    for t in div[1].symbols)):
                return True
        return False

    def scoped_upper(self, a: Access) -> Optional[Poly]:
        """``upper(a.index)`` with the bounds of the ``if`` checks around ``a`` tried first
        (``BodyFacts.scoped``): flow-insensitive bounds would give a variable checked against
        W here and H there its first check everywhere."""
        assert a.index is not None
        written = a.index.substitute(lambda sym: self.facts.values.get(sym, Poly.sym(sym)))
        for e, b, scope in self.facts.expr_guards:
            offset = a.index - e
            if not offset.is_const() and written is not None:
                offset = written - e  # the guard's sum has its locals' definitions written in
            if (scope is None or scope in a.branches) and offset.is_const():
                top = self.upper(b)  # (idx + i) < N ? a[idx + i] : 0 reads below N
                if top is not None:
                    return top - Poly.const(1) + offset
        saved = {}
        for var, scoped in self.facts.scoped.items():
            here = [b for sid, b in scoped if sid in a.branches]
            if here and var in self.facts.bounds:
                saved[var] = self.facts.bounds[var]
                self.facts.bounds[var] = here + [b for b in saved[var] if b not in here]
        # the loops around the access, by their headers: a name two loops reuse takes the
        # bound and step of the one it sits in (BodyFacts.loop_ranges)
        steps_saved = dict(self.loop_steps)
        for var, header in a.loops:
            start, bound, step = self.facts.loop_ranges.get((var, header), (None, None, None))
            if bound is not None and var in self.facts.bounds:
                saved.setdefault(var, self.facts.bounds[var])
                self.facts.bounds[var] = [bound] + [b for b in saved[var] if b != bound]
            first = self.const_of(start) if start is not None else None
            by = self.const_of(step) if step is not None else None
            if first is not None and by is not None and by >= 1:
                self.loop_steps[var] = (first, by)
        try:
            return self.upper(a.index)
        finally:
            self.facts.bounds.update(saved)
            self.loop_steps = steps_saved

    def const_of(self, poly: Poly, depth: int = 0) -> Optional[int]:
        """The value of ``poly`` when every symbol is a constant of the file or the instance
        (``BM``) or a quotient or remainder of such (``((BM * BN)/(TM * TN))/(BK)``, from
        ``BodyFacts.divisions``, C's integer division of non-negative values), else None."""
        if depth > _MAX_DEPTH:
            return None
        total = 0
        for m, c in poly.terms:
            term = c
            for sym in m:
                if sym in self.constants:
                    term *= self.constants[sym]
                    continue
                div = self.facts.divisions.get(sym)
                if div is None:
                    return None
                a, b = self.const_of(div[1], depth + 1), self.const_of(div[2], depth + 1)
                if a is None or b is None or b < 1 or a < 0:
                    return None
                term *= a // b if div[0] == "/" else a % b
            total += term
        return total

    def name_tables(self, a: Access) -> None:
        """Gives each loaded local in ``a``'s index that has no bounds check a size of rows of
        ``a``'s pointer (``n_TABLE``), bounding it."""
        assert a.index is not None
        for s in sorted(a.index.symbols):
            checked = self.facts.bounds.get(s, [])
            if s in self.facts.loads and checked and _single_symbol(checked[0]) in \
                    self.int_params and checked[0] == Poly.sym(_single_symbol(checked[0])):
                # int id = ids[t]; if (id < V) ... wte[id * C + c]: the check keeps the indexed
                # rows below V, and values below 0 would pass it, so ids is drafted in [0, V)
                bound = _single_symbol(checked[0])
                if self.facts.loads[s] not in self.ranges_from_loads:
                    self.ranges_from_loads[self.facts.loads[s]] = bound
                    self.range_why[self.facts.loads[s]] = (
                        f"its values are checked against {bound} before they index {a.param} "
                        f"('{a.text}'), and a negative one would pass the check")
                continue
            if s in self.facts.loads and s not in self.table_sizes and \
                    s not in self.load_bounds and not self.facts.bounds.get(s):
                stride = self.row_stride(a.index, s)
                if stride is not None:
                    self.load_bounds[s] = stride
                    self.ranges_from_loads.setdefault(self.facts.loads[s], stride)
                    continue
                name = f"n_{a.param}"
                self.table_sizes[s] = name
                self.table_of.setdefault(name, self.facts.loads[s])
                stride = Poly(terms=tuple((tuple(x for x in m if x != s), c)
                                          for m, c in a.index.terms if s in m))
                self.table_strides.setdefault(name, stride)

    def row_stride(self, index: Poly, loaded: str) -> Optional[str]:
        """For ``rows * S + loaded`` (``probs + b * T * V + t * V`` read at ``[ix]``): the integer
        parameter ``S`` that every other term of the index is a multiple of, when ``loaded``
        appears alone with coefficient 1, so that ``loaded < S`` picks one element of the row;
        else None."""
        others = [m for m, _ in index.terms if m != (loaded,)]
        if ((loaded,), 1) not in index.terms or not others or \
                any(loaded in m for m in others):
            return None
        common = set(others[0])
        for m in others[1:]:
            common &= set(m)
        params = sorted(c for c in common if c in self.int_params)
        return params[0] if len(params) == 1 else None

    # -- the draft ---------------------------------------------------------------------------

    def draft(self) -> KernelSpec:
        k = self.kernel
        pointers = [p for p in k.parameters if p.is_pointer]
        by_param: dict[str, list[Access]] = {p.name: [] for p in pointers}
        for a in self.facts.accesses:
            by_param.setdefault(a.param, []).append(a)
        roles = {p.name: self.role(p, by_param[p.name]) for p in pointers}
        self.draft_grid_axes = set(self.grid_vars())
        # one row per block (``out[blockIdx.x]``): the draft's grid bounds that axis's blocks in
        # the other indices too (``x[blockIdx.x * ncols + c]`` with c < ncols: grid * ncols)
        self.draft_grid_axes |= {only[-1] for only in (_single_symbol(a.index)
                                                       for a in self.facts.accesses)
                                 if only is not None and only.startswith("blockIdx.")}
        lengths = {p.name: self.length_of(by_param[p.name]) for p in pointers}

        grid_vars = self.grid_vars()
        # sizes: integer parameters in lengths and grid bounds, in parameter order
        used: set[str] = set()
        for ln in lengths.values():
            for poly in ln.polys:
                used |= poly.symbols
        for var, _ in grid_vars.values():
            b = self.bound_of(var)
            used |= b.symbols if b is not None else set()
        for axis in self.launch_axes(grid_vars):
            used |= self.site_grid[axis][0].symbols
        size_names = [n for n in self.order if n in used and n in self.int_params]
        tables = [n for n in dict.fromkeys(self.table_sizes.values()) if n in used]
        nnzs = [n for n in self.csr_sizes.values() if n in used]
        rename = {n: (n if n not in _RESERVED and not keyword.iskeyword(n) else f"{n}_size")
                  for n in size_names}
        # sizes only ever subtracted in lengths (out[i - offset] under i < n: n - offset)
        signs: dict[str, set[bool]] = {}
        for ln in lengths.values():
            for poly in ln.polys:
                for m, c in poly.terms:
                    for sym in m:
                        signs.setdefault(sym, set()).add(c > 0)
        self.subtracted = {sym for sym, seen in signs.items() if seen == {False}}
        sizes = self.host_sizes(self.size_values(size_names, grid_vars, rename), rename)
        for name in nnzs:
            rename[name] = name
            sizes.append(SizeDecl(name=name, expr=SIZE_1D))
            array = next(a for a, n in self.csr_sizes.items() if n == name)
            self.fills[array] = ("csr", (name,))
            self.notes.append(f"size {name} = {SIZE_1D}: non-zeros of the CSR rows in {array} "
                              f"(a loop runs from {array}[r] to {array}[r + 1]); GUESS, set it")
        for name in tables:
            rename[name] = name
            rows = self.table_rows(name, sizes)
            if rows is not None:
                sizes.append(SizeDecl(name=name, expr=str(rows[0])))
                self.host_given.add(name)
                self.notes.append(f"size {name} = {rows[0]}: rows of {name[2:]}, indexed by "
                                  f"values read from {self.table_of[name]}; from the host code "
                                  f"({rows[1]})")
                continue
            sizes.append(SizeDecl(name=name, expr=TABLE_ROWS))
            self.notes.append(f"size {name} = {TABLE_ROWS}: rows of {name[2:]}, indexed by "
                              f"values read from {self.table_of[name]}; GUESS, set it")
        main = self.main_length(lengths, rename, sizes, grid_vars)
        if main[1] and not any(s.name == main[1] for s in sizes):
            sizes.insert(0, SizeDecl(name=main[1], expr=SIZE_1D))
            self.notes.append(f"size {main[1]} = {SIZE_1D}: no integer parameter bounds the "
                              f"kernel's indices")
            if main[1] in self.int_params:
                rename[main[1]] = main[1]  # the parameter of that name is passed the size
        main_text = main[0]

        block, block_from = self.block()
        block_texts: Optional[tuple[str, ...]] = None
        if self.site_block_params:
            block_texts = tuple(_render(self.site_block_params.get(a, Poly.const(1)), rename)
                                for a in "xyz"[:max("xyz".index(a) for a in
                                                   self.site_block_params) + 1])
            block_from = (f"from the launch at line {self.site_block_line}, which passes the "
                          f"kernel's own argument{'s' if len(block_texts) > 1 else ''} as "
                          f"the block, so threadIdx is below it")
        fixed = any(ln.grid_axis or ln.draft_axes for ln in lengths.values())
        grid = self.grid(grid_vars, block, fixed, rename, main_text)
        grid = self.checked_grid(grid, sizes, block, fixed, main_text)
        if fixed and block_texts is None:
            self.launch_notes.append(f"block fixed at {', '.join(map(str, block))} in grid and "
                                     f"lengths: a buffer is indexed by blockIdx, so its length "
                                     f"follows the grid")
        self.launch_notes.append(f"block {', '.join(block_texts or map(str, block))}: "
                                 f"{block_from}")

        elements: dict[str, str] = {}  # length in the pointer's own elements (float4s)
        assumed: dict[str, str] = {}  # why the length is assumed ("" when known)
        for p in pointers:
            elements[p.name], assumed[p.name] = self.length_text(lengths[p.name], grid, rename,
                                                                 main_text)
        for p in pointers:
            ln = lengths[p.name]
            if ln.draft_axes:
                axes = ", ".join(f"grid.{a} = {grid['xyz'.index(a)]}" for a in ln.draft_axes)
                self.later.setdefault(p.name, []).append(
                    f"length of {p.name} = {elements[p.name]}: '{ln.reach[0]}' takes a row per "
                    f"block and no launch gives the grid, so it follows the draft's ({axes}); "
                    f"GUESS: set the grid the host launches, and the length with it")
            elif p.name in self.const_grid_notes and len(ln.polys) == 1:
                self.later.setdefault(p.name, []).append(
                    f"length of {p.name} = {elements[p.name]}: "
                    f"{self.const_grid_notes[p.name]}")
        ranges = self.index_ranges(pointers, roles, by_param, elements, assumed)
        for array, stride in self.ranges_from_loads.items():
            if array not in ranges:
                ranges[array] = ("0", rename.get(stride, stride))
                self.later.setdefault(array, []).append(
                    f"range of {array} set to [0, {rename.get(stride, stride)}): "
                    + self.range_why.get(array, f"its values pick one element of rows "
                                                f"{stride} long"))
        for size, array in self.table_of.items():
            if size in rename and array not in ranges:
                ranges[array] = ("0", size)
                self.later.setdefault(array, []).append(
                    f"range of {array} set to [0, {size}): its values index rows of {size[2:]}")
        params: list[BufferDecl | ScalarDecl] = []
        for p in pointers:
            if not self.layout_note(p, pointers, lengths, by_param, roles, rename):
                self.padding_note(p, lengths[p.name], rename)
            self.before_start_note(p, by_param[p.name])
        for p in k.parameters:
            if p.is_pointer:
                params.append(self.buffer(p, roles[p.name], elements[p.name], assumed[p.name],
                                          ranges.get(p.name), by_param))
            else:
                params.append(self.scalar(p, rename, block))
        self.rename = rename
        self.block_shape = block
        self.notes += self.launch_notes
        atomics = sorted({a.atomic for a in self.facts.accesses if a.atomic})
        if atomics:
            self.notes.append(f"atomics: the kernel calls {', '.join(atomics)}, so outputs may "
                              f"depend on the order threads run in")
        before = {d.name: d.expr for d in sizes}
        sizes, shrunk = _fit_defaults(sizes, params, self.constants, frozenset(self.host_given))
        if self.branch is not None and self.branch[0]:
            self.branch_note(sizes, rename)
        shared = self.shared(rename, block, {q.name: q.expr for q in params
                                             if isinstance(q, ScalarDecl)})
        sizes, shrunk_shared = _fit_shared(sizes, shared, block, self.constants, frozenset(
            n for n, e in before.items() if e in _DEFAULTS and n not in self.host_given))
        defaulted = [s for s in sizes if s.name not in self.host_given]
        if defaulted:
            listed = ", ".join(f"{s.name} = {s.expr}" for s in defaulted)
            self.notes.append(f"sizes are defaults ({listed}): set them to your problem"
                              + (f"; made smaller so that no buffer has more than "
                                 f"{MAX_DRAFT_ELEMENTS:,} elements ({shrunk}, which would "
                                 f"overflow the kernel's 32-bit int indices)" if shrunk else "")
                              + (f"; made smaller so that the dynamic shared memory fits the "
                                 f"{_MAX_STATIC_SHARED:,} bytes a launch gets without opting "
                                 f"in (shared = {shrunk_shared})" if shrunk_shared else ""))
        name = k.qualified_name or k.name
        if self.instance:
            name = name + self.instance[self.instance.index("<"):]
        multiples = []
        for size, step in self.multiples.items():
            rename.setdefault(size, size) if any(d.name == size for d in sizes) else None
            if size in rename and any(d.name == rename[size] for d in sizes):
                sizes = [_multiple_of(d, step, self.constants) if d.name == rename[size] else d
                         for d in sizes]
                multiples.append(MultipleDecl(name=rename[size], expr=str(step)))
                if size in self.multiple_why:
                    self.notes.append(self.multiple_why[size].replace(
                        f"multiple {size} = ", f"multiple {rename[size]} = ", 1))
                    continue
                self.notes.append(f"multiple {rename[size]} = {step}: the launch covers "
                                  f"{rename[size]} with whole blocks of {step} and the body has "
                                  f"no bounds check, so the ragged size stays a multiple")
        for d in sizes:  # a note giving a size's value gives the value drafted
            old = f"size {d.name} = {before.get(d.name)}:"
            if before.get(d.name) != d.expr:
                self.notes = [f"size {d.name} = {d.expr}:" + n[len(old):]
                              if n.startswith(old) else n for n in self.notes]
        self.notes += self.unsure_define_notes()
        return KernelSpec(
            kernel=name, sizes=tuple(sizes), params=tuple(params), multiples=tuple(multiples),
            launch=LaunchDecl(block=block_texts or tuple(str(b) for b in block), grid=grid,
                              shared=shared),
            atomics=bool(atomics), source=INFERRED, notes=tuple(self.notes))

    def unsure_define_notes(self) -> list[str]:
        """A note for each integer ``#define`` the kernel's text or its launch sites name
        whose value came from a branch of an ``#if`` cudalens cannot evaluate (its first
        definition, ``spec.defines.unsure_defines``): ``define N = 4096: N is defined under
        '#if PICK(BLOCK)' (line 2), which cudalens cannot evaluate: ...; GUESS, check it``.
        Lines are the file's own; a header's define says ``in a header``."""
        from cudalens.spec.defines import unsure_defines

        unsure = unsure_defines(self.context, self.defines)
        if not unsure:
            return []
        text = self.source.encode()[self.kernel.start_byte:self.kernel.end_byte].decode(
            errors="replace") + " ".join(" ".join(s.config + s.arguments) for s in self.sites)
        words = set(re.findall(r"[A-Za-z_]\w*", text))
        offset = self.context.count("\n") - self.source.count("\n")

        def own_line(m: "re.Match") -> str:
            n = int(m.group(1)) - offset
            return f"(line {n})" if n > 0 else "(in a header)"
        return [f"define {name} = {self.constants[name]}: "
                + re.sub(r"\(line (\d+)\)", own_line, why)
                + "; GUESS, check that branch is the one compiled"
                for name, why in unsure.items() if name in words and name in self.constants]

    def branch_note(self, sizes: list[SizeDecl], rename: dict[str, str]) -> None:
        """Says in the instance's note whether the drafted ``sizes`` take the host's branch
        (``if (M >= 128 && N >= 128)``) the instance was read from: the condition's names are
        the launch's arguments, each the size its kernel parameter is drafted as."""
        from cudalens.spec.expr import evaluate

        assert self.branch is not None
        cond, site, note = self.branch
        values: dict[str, object] = dict(self.constants)
        for d in sizes:
            try:
                values[d.name] = evaluate(d.expr, dict(self.constants))
            except ExprError:
                pass
        env = {}
        for arg, q in zip(site.arguments, self.kernel.parameters):
            size = rename.get(q.name)
            if re.fullmatch(r"[A-Za-z_]\w*", arg.strip()) and size in values:
                env[arg.strip()] = values[size]
        holds = _condition_holds(cond, {**values, **env})
        if holds is None:
            return
        shown = ", ".join(f"{n} = {env[n]}" for n in sorted(env) if re.search(
            rf"(?<![\w.]){re.escape(n)}\b", cond))
        tail = "; GUESS: the host picks one by the sizes"
        head = note.split(tail)[0]
        if holds:
            new = (f"{head}: the drafted sizes ({shown}) take that branch; other sizes take "
                   f"another instance (name it with --kernel 'NAME<ARGS>')")
        else:
            new = (f"{head}; GUESS: the drafted sizes ({shown}) do not take that branch, so set "
                   f"sizes that do or name the instance with --kernel 'NAME<ARGS>'")
        self.notes = [new if n == note else n for n in self.notes]

    def role(self, p: Parameter, accesses: list[Access]) -> str:
        if p.is_const:
            return "in"
        notes = self.later.setdefault(p.name, [])
        escapes = [a for a in accesses if a.kind == "escape"]
        written = any(a.kind in ("write", "update") for a in accesses)
        read = any(a.kind in ("read", "update") for a in accesses)
        if escapes:
            notes.append(f"{p.name}: inout assumed: the pointer goes where the analysis cannot "
                         f"follow ('{escapes[0].text}', line {escapes[0].line})")
            return "inout"
        if not written:
            notes.append(f"{p.name}: in: not const, but never written")
            return "in"
        atomic = next((a for a in accesses if a.atomic and a.kind == "update"), None)
        if atomic is not None and not any(a.kind == "read" for a in accesses):
            notes.append(f"{p.name}: inout: {atomic.atomic} accumulates into its initial contents")
        if p.name in self.facts.by_reference and not any(a.kind == "read" for a in accesses):
            fn, line = self.facts.by_reference[p.name]
            notes.append(f"{p.name}: {'inout' if read else 'out'}: an element is passed by "
                         f"reference to {fn} (line {line}), which "
                         f"{'reads and writes' if read else 'writes'} it")
            return "inout" if read else "out"
        if read and not atomic:
            covered = _own_writes_first(accesses)
            if covered is not None:
                first_read, write = covered
                notes.append(f"{p.name}: out: each read ('{first_read.text}', line "
                             f"{first_read.line}) follows the same thread's write of that "
                             f"element ('{write.text}', line {write.line}), so its initial "
                             f"contents are never read")
                return "out"
        return "inout" if read else "out"

    def grid_vars(self) -> dict[str, tuple[str, str]]:
        """axis -> (variable, thread|block): on each grid axis, the first bounded variable
        derived from blockIdx that indexes a pointer, else the first such variable at all."""
        in_indices = [s for a in self.facts.accesses if a.index is not None
                      for s in sorted(a.index.symbols)]
        found: dict[str, tuple[str, str]] = {}
        for s in in_indices + list(self.facts.axes):
            axis = self.facts.axes.get(s)
            b = self.bound_of(s) if axis is not None and axis[0] not in found else None
            if b is not None and not (b.is_const() and b.constant < 1):
                # (a check such as ``(blkX < 0) ? -blkX : 0`` is no extent: no grid of 0)
                found[axis[0]] = (s, axis[1])
        return found

    def block_step(self, var: str, axis: str) -> Optional[str]:
        """How far ``var`` moves from one block to the next along ``axis``, as a spec
        expression of ``block`` and numbers: the coefficient of ``blockIdx.AXIS`` in its
        definition with the file's constants in (``blockIdx.x * TILE + threadIdx.x`` -> "32",
        ``blockIdx.x * (blockDim.x / 32) + ...`` -> "(block.x)/(32)"); None when unknown or
        when it involves other names."""
        value = self.facts.values.get(var)
        if value is None:
            return None
        key = f"blockIdx.{axis}"
        coef = Poly()
        for m, c in value.terms:
            if key in m:
                rest = list(m)
                rest.remove(key)
                term = Poly.const(c)
                for sym in rest:
                    term = term * Poly.sym(sym)
                coef = coef + term
        if not coef.terms:
            return None
        coef = coef.substitute(lambda sym: Poly.const(self.constants[sym])
                               if sym in self.constants else Poly.sym(sym))
        if coef is None:
            return None
        text = self.spec_text(coef)
        if text is None:
            return None
        try:
            names = names_in(text)
        except ExprError:
            return None
        return text if names <= {"block"} else None

    def spec_text(self, poly: Poly, depth: int = 0) -> Optional[str]:
        """``poly`` as a spec expression of ``block.x/.y/.z`` and numbers (constants put in,
        quotients and remainders written out), or None when it uses anything else."""
        if depth > _MAX_DEPTH:
            return None
        names: dict[str, str] = {}
        for sym in poly.symbols:
            if sym in self.constants:
                names[sym] = str(self.constants[sym])
            elif sym.startswith("blockDim."):
                names[sym] = "block." + sym.split(".")[1]
            elif sym in self.facts.divisions:
                op, a, b = self.facts.divisions[sym]
                ta, tb = self.spec_text(a, depth + 1), self.spec_text(b, depth + 1)
                if ta is None or tb is None:
                    return None
                names[sym] = f"({ta}) {op} ({tb})"
            else:
                return None
        out = poly.substitute(lambda sym: Poly.sym(names[sym]))
        return out.render() if out is not None else None

    def size_values(self, names: list[str], grid_vars: dict[str, tuple[str, str]],
                    rename: dict[str, str]) -> list[SizeDecl]:
        bound_syms: set[str] = set()
        for bs in self.facts.bounds.values():
            for b in bs:
                bound_syms |= b.symbols
        for _, b, _ in self.facts.expr_guards:
            bound_syms |= b.symbols
        grid_syms: set[str] = set()
        for var, _ in grid_vars.values():
            b = self.bound_of(var)
            grid_syms |= b.symbols if b is not None else set()
        for axis in self.launch_axes(grid_vars):
            grid_syms |= self.site_grid[axis][0].symbols
        grid_syms |= set(self.host_grid)  # the launch's grid: a count of blocks, no stride
        dims = [n for n in names if n in grid_syms] + \
            [n for n in names if n not in grid_syms and n in bound_syms]
        threads = {_single_symbol(p): a for a, p in self.site_block_params.items()
                   if _single_symbol(p) is not None and p == Poly.sym(_single_symbol(p))}
        dims = [n for n in dims if n not in threads]
        strides = [n for n in names if n not in dims]
        out: dict[str, str] = {}
        for i, n in enumerate(dims):
            out[n] = SIZE_1D if len(dims) == 1 else (SIZE_2D if i < 2 else SIZE_OTHER)
        for n in [n for n in strides if n in threads]:
            out[n] = str(DEFAULT_BLOCK_1D[0])
            self.notes.append(f"size {rename[n]} = {out[n]}: the launch's block.{threads[n]} "
                              f"(line {self.site_block_line}), so at most 1024; GUESS, set it")
        strides = [n for n in strides if n not in threads]
        dims = dims + [n for n in names if n in threads]
        for n in strides:
            inner = self.inner_size(n, dims)
            if n in self.subtracted:
                out[n] = "1"
                self.notes.append(f"size {rename[n]} = 1: only subtracted in lengths (an "
                                  f"offset); GUESS, set it")
            elif inner is not None:
                out[n] = rename[inner]
                self.notes.append(f"size {rename[n]} = {rename[inner]}: assumed a row stride "
                                  f"equal to {inner}")
            else:
                out[n] = "1"
                self.notes.append(f"size {rename[n]} = 1: a stride with no bounds check; "
                                  f"GUESS, set it")
        return [SizeDecl(name=rename[n], expr=out[n]) for n in dims + strides]

    def inner_size(self, stride: str, dims: list[str]) -> Optional[str]:
        """For ``row * ld + col`` with ``col < cols``: ``cols``."""
        for a in self.facts.accesses:
            if a.index is None or stride not in a.index.symbols:
                continue
            for m, c in a.index.terms:
                if len(m) == 1 and m[0] not in self.int_params and c == 1:
                    b = self.bound_of(m[0])
                    inner = _single_symbol(b)
                    if inner in dims:
                        return inner
        return None

    def main_length(self, lengths: dict[str, _Length], rename: dict[str, str],
                    sizes: list[SizeDecl],
                    grid_vars: Optional[dict[str, tuple[str, str]]] = None) -> tuple[str, str]:
        """(length text assumed where none is known, name of a size to create or ""): the
        extent of the launch's x axis when an index gives it (``row < rows``: a vector
        gathered by data, such as SpMV's ``x[col[j]]``, is taken to be as long as the rows), else
        the most common known length."""
        if grid_vars and "x" in grid_vars:
            b = self.bound_of(grid_vars["x"][0])
            if b is not None and b.symbols and b.symbols <= set(rename):
                return _render(b, rename), ""
        texts = [_render(ln.polys[0], rename) for ln in lengths.values()
                 if len(ln.polys) == 1 and not ln.draft_axes]
        if texts:
            return Counter(texts).most_common(1)[0][0], ""
        taken = {p.name for p in self.kernel.parameters}
        if sizes and not (grid_vars and "x" in grid_vars) and \
                any(ln.grid_axis == "x" for ln in lengths.values()):
            # a row per block and no bounded index along x: the draft's grid is a size of its
            # own (``x[blockIdx.x * ncols + c]`` is grid * ncols, not ceil_div(ncols, 32) * ncols)
            name = next(n for n in ("n", "n_elements", "n_size")
                        if n not in taken and n not in {d.name for d in sizes})
            return name, name
        if sizes:
            return sizes[0].name, ""
        # an integer parameter named n is passed this size, unless the host passes it a value
        # of its own (``host(int n, ...)`` called with ``int n = N;``): that value wins
        passed = "n" in self.int_params and self.passed_value("n") is not None
        name = "n" if "n" not in taken or ("n" in self.int_params and not passed) \
            else "n_elements"
        return name, name

    def int_value(self, text: str) -> Optional[int]:
        """``text`` (an array extent, a constant) as an integer: of literals, the file's
        macros and constants and the build's defines; None when it is not one."""
        try:
            value = evaluate(re.sub(r"\b(\d+)[uUlL]+\b", r"\1", text.strip()),
                             dict(self.constants))
        except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError):
            value = None
        if not isinstance(value, int) or isinstance(value, bool):
            value = const_value(text, self.context)
        return value if isinstance(value, int) else None

    def passed_value(self, name: str) -> Optional[str]:
        """The value the host code passes integer parameter ``name`` (``site_value``, else
        ``host_value``), as text; None when no launch site gives one."""
        param = next((q for q in self.kernel.parameters if q.name == name), None)
        if param is None:
            return None
        found = self.site_value(param)
        if found is not None:
            return found[0] if "." not in found[0] else None
        host = self.host_value(name)
        return str(host[0]) if host is not None else None

    def block(self) -> tuple[tuple[int, ...], str]:
        found = block_from_file(self.kernel, self.sites, self.context, self.source)
        if found is not None:
            return found
        for name in self.kernel.template_parameters:  # template <int BLOCK> with no launch
            value = self.constants.get(name)
            body = _kernel_text(self.kernel, self.source)
            if value is not None and _square_block(body, name) and \
                    1 <= value * value <= _MAX_THREADS:
                return (value * value,), (f"template argument {name} = {value} of "
                                          f"{self.instance} squared: the body splits "
                                          f"threadIdx.x into rows and columns of {name}")
            n = re.escape(name)
            if value is not None and 1 <= value <= 1024 and re.search(
                    rf"\b{n}\s*==\s*0\s*\?\s*blockDim\.x\s*:\s*{n}\b", body):
                return (value,), (f"template argument {name} = {value} of {self.instance}: "
                                  f"the body uses {name} as its block size where it is not 0 "
                                  f"('{name} == 0 ? blockDim.x : {name}')")
            if _BLOCK_NAME.match(name) and value is not None and 1 <= value <= 1024:
                return (value,), f"template argument {name} = {value} of {self.instance}"
            if value is not None and 1 <= value <= 1024 and _block_stride(body, name) and \
                    "threadIdx.y" not in self.facts.builtins:
                return (value,), (f"template argument {name} = {value} of {self.instance}: "
                                  f"the body steps blockIdx.x by {name} before adding "
                                  f"threadIdx.x, so a block has {name} threads")
        body = self.source[self.kernel.start_byte:self.kernel.end_byte] \
            if self.source.isascii() else \
            from_bytes(to_bytes(self.source)[self.kernel.start_byte:self.kernel.end_byte])
        step = tile_step(body, self.constants, self.kernel.range.start.line + 1)
        if step is not None and "threadIdx.y" not in self.facts.builtins:
            return (step.value,), (f"the loop at line {step.line} steps {step.var} by "
                                   f"{step.step} (= {step.value}) from threadIdx.x, so the "
                                   f"kernel covers its elements with exactly {step.value} threads")
        shared = shared_block(body, self.int_value, "threadIdx.y" in self.facts.builtins)
        if shared is not None and "threadIdx.z" not in self.facts.builtins:
            return shared.block, shared.reason()
        if "threadIdx.y" not in self.facts.builtins and "threadIdx.z" not in self.facts.builtins:
            for name in dict.fromkeys(re.findall(r"\bblockIdx\.x\s*\*\s*\(?\s*([A-Za-z_]\w*)|"
                                                 r"\b([A-Za-z_]\w*)\s*\)?\s*\*\s*blockIdx\.x",
                                                 body)):
                name = "".join(name)
                value = self.constants.get(name)
                if value is not None and 1 <= value <= 1024 and _block_stride(body, name):
                    return (value,), (f"{name} = {value}: the body steps blockIdx.x by {name} "
                                      f"before adding threadIdx.x, so a block has {name} "
                                      f"threads (no launch site gives the block)")
        if "threadIdx.y" in self.facts.builtins or "threadIdx.z" in self.facts.builtins:
            return DEFAULT_BLOCK_2D, "GUESS, the default for a body that uses threadIdx.y " \
                                     "(no launch site with a literal block)"
        return DEFAULT_BLOCK_1D, "GUESS, the default (no launch site with a literal block)"

    def grid(self, grid_vars: dict[str, tuple[str, str]], block: tuple[int, ...], fixed: bool,
             rename: dict[str, str], main: str) -> tuple[str, ...]:
        dims = len(block)
        launched = self.launch_axes(grid_vars)
        for axis in ("y", "z"):
            if axis in grid_vars or axis in launched:
                dims = max(dims, "xyz".index(axis) + 1)
        out: list[str] = []
        for i, axis in enumerate("xyz"[:dims]):
            bx = str(block[i]) if fixed and i < len(block) else (
                f"block.{axis}" if i < len(block) else "1")
            site_text = self.site_grid_text(axis, grid_vars, rename)
            if site_text is not None:
                out.append(site_text)
                line = self.sites[0].range.start.line + 1 if self.sites else 0
                var = grid_vars[axis][0]
                why = (f"{var} is a grid-stride loop, so any grid covers it"
                       if var in self.facts.grid_stride else
                       f"{var} has several bounds, one of them the launch's")
                self.launch_notes.append(
                    f"grid.{axis} = {site_text}: from the launch at line {line} ({why})")
            elif axis in grid_vars:
                var, kind = grid_vars[axis]
                b = self.bound_of(var)
                assert b is not None
                b = self.smallest_bound(var, b)
                if b.constant < 0:
                    b = b - Poly.const(b.constant)
                text = _render(b, rename)
                step = self.block_step(var, axis)
                if step is not None and step != "1" and step != f"block.{axis}":
                    out.append(f"ceil_div({text}, {step})")
                    self.launch_notes.append(f"grid.{axis}: each block covers {step} of {var} "
                                             f"(blockIdx.{axis} * {step} in its definition)")
                elif step == "1" and kind == "thread":
                    out.append(text)
                else:
                    out.append(f"ceil_div({text}, {bx})" if kind == "thread" else text)
                    if kind == "thread" and self.unchecked_builtins and axis == "x" and \
                            len(block) == 1 and block[0] > 1 and \
                            re.fullmatch(r"[A-Za-z_]\w*", text) and text not in self.constants:
                        # an index of blockIdx.x and threadIdx.x alone, unchecked, reaches the
                        # grid's last thread: whole blocks keep it inside the size
                        back = {v: k for k, v in rename.items()}
                        self.multiples.setdefault(back.get(text, text), block[0])
            elif axis in self.launch_axes(grid_vars):
                extent, step, how = self.site_grid[axis]
                text = _render(extent, rename)
                shown = f"({text})" if " " in text else text
                out.append(text if step == 1 else (f"ceil_div({text}, {step})" if how == "ceil"
                                                   else f"{shown} / {step}"))
                line = self.sites[0].range.start.line + 1 if self.sites else 0
                self.launch_notes.append(
                    f"grid.{axis} = {out[-1]}: from the launch at line {line}; the body has no "
                    f"bounds check along {axis}, so that grid and the block bound its indices")
            elif axis == "x":
                out.append(f"ceil_div({main}, {bx})")
                if re.fullmatch(r"[A-Za-z_]\w*", main) and main not in self.constants and \
                        len(block) == 1 and block[0] > 1:
                    # no bounds check: a ragged size would send the last block past the end
                    self.multiples.setdefault(main, block[0])
                self.launch_notes.append(f"grid.x assumed to cover {main}: no index of the form "
                                  f"blockIdx.x * blockDim.x + threadIdx.x with a bounds check")
            else:
                out.append("1")
                self.launch_notes.append(f"grid.{axis} = 1: no index along {axis} with a bounds "
                                         f"check")
        while len(out) > 1 and out[-1] == "1":
            out.pop()
        return tuple(out)

    def grid_value(self, text: str, sizes: list[SizeDecl],
                   block: tuple[int, ...]) -> Optional[object]:
        """The value of grid axis ``text`` at the drafted sizes (their nominal values, the
        file's constants and ``block``), or None when it does not evaluate."""
        from cudalens.spec.expr import Dim3

        env: dict[str, object] = dict(self.constants)
        try:
            for size in sizes:
                env[size.name] = evaluate(size.expr, env)
            env["block"] = Dim3(*block)
            return evaluate(text, env)
        except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError, OverflowError):
            return None

    def checked_grid(self, grid: tuple[str, ...], sizes: list[SizeDecl],
                     block: tuple[int, ...], fixed: bool, main: str) -> tuple[str, ...]:
        """``grid`` with each axis that is not a whole number >= 1 at the drafted sizes (a
        launch's ``dim3 grid(blockCols)`` with ``blockCols = cols / (BLOCK - 2)`` and a small
        ``cols`` is 0; a text naming what no size gives does not evaluate) replaced by the
        grid the kernel's guards would give: ``ceil_div(MAIN, block.x)`` along x (the ragged
        size kept a multiple of the block), 1 along y and z; each replacement a GUESS note.
        A grid that uses ``sm_count`` is kept (it is known only on the GPU)."""
        out = list(grid)
        for i, text in enumerate(grid):
            if "sm_count" in text:
                continue
            value = self.grid_value(text, sizes, block)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                continue
            axis = "xyz"[i]
            if axis == "x":
                bx = str(block[0]) if fixed else "block.x"
                new = f"ceil_div({main}, {bx})"
                if self.grid_value(new, sizes, block) is None:
                    continue  # nothing better to offer: the checks report the axis
                if re.fullmatch(r"[A-Za-z_]\w*", main) and main not in self.constants and \
                        len(block) == 1 and block[0] > 1:
                    self.multiples.setdefault(main, block[0])
                    self.multiple_why.setdefault(main, (
                        f"multiple {main} = {block[0]}: the drafted grid covers {main} with "
                        f"whole blocks of {block[0]}, so the ragged size stays a multiple"))
                cover = f"a grid covering {main} with blocks of {bx}"
            else:
                new, cover = "1", "one block"
            shown = "does not evaluate" if value is None else f"is {value}"
            self.launch_notes = [n for n in self.launch_notes
                                 if not n.startswith((f"grid.{axis} = {text}:",
                                                      f"grid.{axis} assumed"))]
            self.launch_notes.append(
                f"grid.{axis} = {new}: GUESS, the grid drafted from the kernel and its launch, "
                f"'{text}', {shown} at the drafted sizes (not a number of blocks >= 1), so "
                f"{cover} is drafted instead; set the grid the host launches")
            out[i] = new
        return tuple(out)

    def smallest_bound(self, var: str, first: Poly) -> Poly:
        """The smallest of ``var``'s exclusive bounds when every other one is at least it
        (FDTD3d's ``x < dimx + R`` for reads and ``x < dimx`` for writes give ``dimx``: the
        threads past it only read the halo the others need not), else ``first``."""
        tops = []
        for b in self.facts.bounds.get(var, []):
            u = self.upper(b)
            if u is not None:
                tops.append(u)
        if len(set(tops)) < 2:
            return first
        low = next((t for t in tops if all(o.dominates(t) for o in tops)), None)
        if low is None or low == first or not low.symbols:
            return first
        self.launch_notes.append(f"grid: {var} has several bounds; the grid covers the "
                                 f"smallest, {low.render()}")
        return low

    def site_grid_text(self, axis: str, grid_vars: dict[str, tuple[str, str]],
                       rename: dict[str, str]) -> Optional[str]:
        """The launch site's grid along ``axis`` as the draft's, when the axis's index
        variable has several bounds (FDTD3d's ``x < dimx + R`` for reads and ``x < dimx`` for
        writes) and the launch covers one of them (``ceil_div(dimx, 32)``): the host code
        says which one the grid follows. None otherwise."""
        if axis not in grid_vars or axis not in self.site_grid:
            return None
        var, kind = grid_vars[axis]
        bounds = self.facts.bounds.get(var, [])
        extent, step, how = self.site_grid[axis]
        if var in self.facts.grid_stride:
            # a grid-stride loop covers its bound with any grid: the launch's is the one the
            # host runs, and buffers indexed by blockIdx (one partial result per block) follow it
            self.launch_bounded.add(axis)
            text = _render(extent, rename)
            shown = f"({text})" if " " in text else text
            return text if step == 1 else (f"ceil_div({text}, {step})" if how == "ceil"
                                           else f"{shown} / {step}")
        if kind != "thread" or len(set(bounds)) < 2:
            return None
        tops = set()
        for b in bounds:
            u = self.upper(b)
            if u is not None:
                tops.add(u)
        if extent not in tops:
            return None
        text = _render(extent, rename)
        shown = f"({text})" if " " in text else text
        return text if step == 1 else (f"ceil_div({text}, {step})" if how == "ceil"
                                       else f"{shown} / {step}")

    def length_text(self, ln: _Length, grid: tuple[str, ...], rename: dict[str, str],
                    main: str) -> tuple[str, str]:
        """(length text, why it is assumed or "")."""
        if ln.grid_axis:
            i = "xyz".index(ln.grid_axis)
            return (grid[i] if i < len(grid) else "1"), ""
        if ln.draft_axes:
            named = dict(rename)
            for axis in ln.draft_axes:
                i = "xyz".index(axis)
                g = grid[i] if i < len(grid) else "1"
                named[f"DRAFTGRID.{axis}"] = f"({g})" if " " in g and not g.startswith(
                    "ceil_div(") else g
            texts = [_render(k, named) for k in ln.polys]
            return (texts[0] if len(texts) == 1 else f"max({', '.join(texts)})"), ""
        if len(ln.polys) == 1:
            return _render_length(ln.polys[0], rename), ""
        if ln.polys:
            return f"max({', '.join(_render(a, rename) for a in ln.polys)})", ""
        if ln.scale > 1 or ln.extra:
            shown = f"({main})" if " " in main else main
            text = (f"{ln.scale} * {shown}" if ln.scale > 1 else main) + \
                (f" + {ln.extra}" if ln.extra else "")
            return text, (f"{ln.why}; each of the {main} threads the draft's grid covers "
                          f"reaches {ln.scale} elements on ('{ln.scaled_by}')")
        return main, ln.why

    def lowest(self, poly: Poly) -> Optional[int]:
        """The smallest value of ``poly`` when each variable is at its lowest (``BodyFacts.
        lower``: the largest of its checks and loop starts, else 0): None when a variable term
        has a negative coefficient or a degree above one, or a lower bound does not evaluate."""
        from cudalens.spec.expr import evaluate

        total = 0
        for m, c in poly.terms:
            if not m:
                total += c
                continue
            if c < 0 or len(m) > 1:
                return None
            (var,) = m
            if var in self.constants:
                total += c * self.constants[var]
                continue
            lows = []
            for text in self.facts.lower.get(var, []):
                try:
                    v = evaluate(text, dict(self.constants))
                except ExprError:
                    return None
                if not isinstance(v, int):
                    return None
                lows.append(v)
            total += c * max(lows, default=0)
        return total

    def before_start_note(self, p: Parameter, accesses: list[Access]) -> None:
        """A GUESS note when an access of ``p`` reads before element 0 (``in[i - 3]`` with no
        check ``i >= 3``): the kernel expects a pointer into a padded buffer (``in + R``),
        which a spec cannot pass, so the draft's buffer starts where the kernel's reads do
        not."""
        for a in accesses:
            if a.index is None or a.kind == "escape":
                continue
            low = self.lowest(a.index)
            if low is not None and low < 0:
                self.later.setdefault(p.name, []).append(
                    f"{p.name}: '{a.text}' (line {a.line}) reads {-low} before its element 0 "
                    f"where no check keeps the index at 0 or more: the kernel expects a pointer "
                    f"{-low} into a padded buffer, which a spec cannot pass; GUESS, check it "
                    f"(add the check, or index from 0)")
                return

    def layout_note(self, p: Parameter, pointers: list[Parameter], lengths: dict[str, _Length],
                    by_param: dict[str, list[Access]], roles: dict[str, str],
                    rename: dict[str, str]) -> bool:
        """A note (True when made) when written buffer ``p`` is indexed by a local that also indexes an input
        whose length is longer (FDTD3d's ``output[outputIndex]`` and ``input[outputIndex -
        RADIUS]``): ``p``'s length is its last write, and the note names the input's, which a
        buffer laid out like the input (a ping-pong pair) needs."""
        ln = lengths[p.name]
        if roles[p.name] == "in" or len(ln.polys) != 1 or \
                max((len(m) for m, _ in ln.polys[0].terms), default=0) < 2:
            return False

        def names(accesses: list[Access]) -> set[str]:
            out: set[str] = set()
            for a in accesses:
                if "[" in a.text:
                    out |= set(re.findall(r"[A-Za-z_]\w*", a.text[a.text.index("["):]))
            # an index local built up in steps (a bumped index, not a checked one: in[i + R]
            # beside out[i] is a padded input, not a shared layout)
            return out - self.int_params - set(self.constants) - set(self.order) - \
                set(self.facts.bounds) - {"threadIdx", "blockIdx", "blockDim", "gridDim", "x",
                                          "y", "z"}

        mine = names([a for a in by_param[p.name] if a.kind in ("write", "update")])
        for q in pointers:
            lq = lengths[q.name]
            if q.name == p.name or roles[q.name] != "in" or len(lq.polys) != 1 or \
                    lq.polys[0] == ln.polys[0] or not lq.polys[0].dominates(ln.polys[0]):
                continue
            shared = sorted(mine & names(by_param[q.name]))
            if shared:
                self.later.setdefault(p.name, []).append(
                    f"length of {p.name} = {_render_length(ln.polys[0], rename)}: its last "
                    f"write; {q.name}, also indexed by {shared[0]}, is "
                    f"{_render_length(lq.polys[0], rename)}: if {p.name} is laid out like "
                    f"{q.name}, give it that length; assumed, confirm it")
                return True
        return False

    def padding_note(self, p: Parameter, ln: _Length, rename: dict[str, str]) -> None:
        """A note (an assumption) when ``p``'s length passes the bound of its index by a
        constant: ``in[i + 6]`` under ``i < n`` makes it ``n + 6``, which is right only when
        the caller pads the buffer (a stencil's halo) rather than passing ``in + R``."""
        if len(ln.polys) != 1 or self.fills.get(p.name, ("",))[0] == "csr":
            return
        poly = ln.polys[0]
        pad = poly.constant
        if pad <= 0 or poly.is_const():
            return
        factors = _padded_factors(poly)
        if factors is not None:
            pads = ", ".join(f"{c} along {rename.get(n, n)}" for n, c in factors if c)
            self.later.setdefault(p.name, []).append(
                f"length of {p.name} = {_render_length(poly, rename)}: '{ln.reach[0]}' reaches "
                f"past the bounds of its index by {pads}, so the caller is taken to pass a "
                f"volume padded by that much (a halo); assumed, confirm it")
            return
        if max(len(m) for m, _ in poly.terms) >= 3:
            self.later.setdefault(p.name, []).append(
                f"length of {p.name} = {_render(poly, rename)}: one past the largest index "
                f"'{ln.reach[0]}' reaches (each variable of it at its bound); assumed, "
                f"confirm it")
            return
        base = _render(poly - Poly.const(pad), rename)
        self.later.setdefault(p.name, []).append(
            f"length of {p.name} = {_render(poly, rename)}: '{ln.reach[0]}' reaches {pad} past "
            f"the bound {base} of its index, so the caller is taken to pass a buffer padded by "
            f"{pad}; assumed, confirm it")

    def index_ranges(self, pointers: list[Parameter], roles: dict[str, str],
                     by_param: dict[str, list[Access]], elements: dict[str, str],
                     assumed: dict[str, str]) -> dict[str, tuple[str, str]]:
        """Ranges of integer buffers whose values are exactly another buffer's index
        (``src[idx[i]]``): [0, length of src). A narrow index type (8 or 16 bits) whose target
        has no known length gives the target its type's value count (``bins[data[i]]`` with
        ``unsigned char data`` makes ``bins`` 256 long)."""
        out: dict[str, tuple[str, str]] = {}
        for p in pointers:
            st, _ = self.spec_type(p)
            if st is None or dtypes.is_float(st) or roles[p.name] == "out":
                continue
            targets = sorted({a.param for accs in by_param.values() for a in accs
                              if a.direct_index == p.name})
            if not targets:
                if p.name not in self.ranges_from_loads and \
                        any(p.name in a.data_indices for accs in by_param.values() for a in accs):
                    self.later.setdefault(p.name, []).append(
                        f"{p.name}: its values feed an index; no range inferred, set "
                        f"range(LOW, HIGH) to keep them in bounds")
                continue
            target = targets[0]
            count = dtypes.int_limits(dtypes.numpy_dtype(st))[1] + 1
            narrow = count <= 1 << 16
            if narrow and assumed[target]:
                elements[target] = str(count)
                assumed[target] = ""
                self.later.setdefault(target, []).append(
                    f"length of {target} = {count}: indexed by the values of {p.name} ({p.type})")
            high = elements[target]
            if narrow and high != str(count):
                high = f"min({high}, {count})"
            out[p.name] = ("0", high)
            scatter = any(a.direct_index == p.name and a.kind == "write" and not a.atomic
                          for a in by_param.get(target, []))
            if scatter:  # plain writes through it: distinct targets, or the writes race
                same = elements[target] == elements[p.name]
                self.fills[p.name] = ("permutation", ()) if same else ("unique", ())
                self.later.setdefault(p.name, []).append(
                    f"{p.name}: {'permutation' if same else 'unique'}: {target} is written "
                    f"through its values without atomics, so they are taken to be distinct")
                continue
            self.later.setdefault(p.name, []).append(
                f"range of {p.name} set to [0, {high}): its values index {target}")
        return out

    def buffer(self, p: Parameter, role: str, elements: str, assumed: str,
               value_range: Optional[tuple[str, str]],
               by_param: dict[str, list[Access]]) -> BufferDecl:
        st, lanes = self.spec_type(p)
        self.notes += self.later.get(p.name, [])
        if assumed:
            self.notes.append(f"length of {p.name} assumed {elements}: {assumed}")
        if st is None:
            field = _field_read(p.name, _kernel_text(self.kernel, self.source))
            if field is not None:  # a struct the file does not declare (another file's)
                raise SpecError(INFERRED, p.range.start.line + 1, (
                    f"cannot draft a spec for parameter {p.name} of {self.kernel.name}: "
                    f"'{p.text}' points to '{p.type.replace('*', '').strip()}', which this "
                    f"file does not declare, and the body reads a field of its elements "
                    f"('{field}'), so it is a struct, class or union; a spec's buffer holds "
                    f"numbers of one type, so a drafted buffer would fill its fields with "
                    f"meaningless values; write the spec yourself, giving {p.name} as a "
                    f"buffer of its fields' number type (its length counted in fields) with a "
                    f"range that keeps what the kernel reads from it inside its buffers"))
            st = "float"
            self.notes.append(f"{p.name}: element type '{p.type}' unknown, assumed float"
                              f"{self.why_type_unknown(p.type)}")
        elif lanes > 1:
            self.notes.append(f"{p.name}: {p.type} counted as {lanes} {st} lanes")
            elements = f"{lanes} * ({elements})" if " " in elements else f"{lanes} * {elements}"
        low, high = value_range if value_range else (None, None)
        fill, args = self.fills.get(p.name, ("uniform", ()))
        if fill in ("csr", "permutation"):
            low = high = None
        return BufferDecl(role=role, name=p.name, type=st,  # type: ignore[arg-type]
                          length=elements, low=low, high=high, fill=fill,  # type: ignore
                          fill_args=args)

    def why_type_unknown(self, ctype: str) -> str:
        """``": REASON"`` for the first word of ``ctype`` (aliases and macros followed) that
        is a macro-like name without a value (``HeaderMacros.why_unknown`` over the headers
        and then the file's own text: an ``#ifdef`` branch not taken, a name defined
        nowhere), else ""."""
        from cudalens.kernel_model.macros import header_macros

        env = self.header_env
        if env is None:
            env = header_macros(tuple((f"header {i + 1}", h) for i, h in
                                      enumerate(self.headers)))
        env = header_macros((("", self.source),), start=env)
        resolved = templates.resolve_type(ctype, self.context, self.bound)
        for word in re.findall(r"[A-Za-z_]\w*", dtypes.normalize_c_type(resolved)):
            if dtypes.spec_type_for_c(word) is None:
                why = env.why_unknown(word)
                if why:
                    return f": {why}"
        return ""

    def spec_type(self, p: Parameter) -> tuple[Optional[str], int]:
        """(spec type, lanes) of ``p``'s element (or value) type, with template parameters
        bound to the instance's arguments and aliases followed; (None, 1) if unknown."""
        resolved = templates.resolve_type(p.type, self.context, self.bound)
        found = _spec_type_of(resolved)
        if found[0] is not None and resolved.split() != p.type.split():
            shown = " ".join(dtypes.normalize_c_type(resolved).split())
            note = f"{p.name}: element type {p.type.replace('*', '').strip()} is {shown}"
            if note not in self.later.setdefault(p.name, []):
                self.later[p.name].append(note)
        return found

    def site_value(self, p: Parameter) -> Optional[tuple[str, str]]:
        """(value, where) for a by-value parameter from the first launch site passing a
        literal, or a variable the file initializes once with a literal; else None."""
        index = [q.name for q in self.kernel.parameters].index(p.name)
        for site in self.sites:
            if index >= len(site.arguments):
                continue
            arg = site.arguments[index].strip()
            value = _literal(arg) or _literal(_initializer(arg, self.source) or "")
            if value is not None:
                return value, f"from the launch at line {site.range.start.line + 1} ('{arg}')"
        return None

    def host_value(self, name: str) -> Optional[tuple[int, str]]:
        """(value, where) of integer parameter ``name`` from the host code: the first launch
        site whose argument for it is an integer constant, directly (``n = 4096`` at the
        launch), through integer locals of the launching function (``int OC = 768 * 4;``
        before the launch), or through a variable the file declares exactly once with a
        constant initializer (``int V = 50257;`` in ``main``, which passes it down to the
        launching function's parameter ``V``); None when no site gives one."""
        names = [q.name for q in self.kernel.parameters]
        if name in self.host_grid:
            site = next((s for s in self.sites if s.config), None)
            found = self.caller_value(name, site) if site is not None else None
            return (found[0], f"the launch at line {site.range.start.line + 1} takes its grid "
                              f"from '{name}', which {found[1]}") if found else None
        if name not in names:
            return None
        index = names.index(name)
        for site in self.sites:
            if index >= len(site.arguments):
                continue
            arg = site.arguments[index].strip()
            at = offset_of(self.source, site.range.start.line, site.range.start.column)
            text = locals_in(arg, self.source, at, set())
            cases = case_bindings(self.source, at)
            text = re.sub(r"(?<![\w.])[A-Za-z_]\w*(?!\s*\()",
                          lambda m: _wrapped(cases[m.group(0)]) if m.group(0) in cases
                          else m.group(0), text)
            if re.fullmatch(r"[A-Za-z_]\w*", text):
                text = _initializer(text, self.source) or text
            try:
                value = evaluate(text, dict(self.constants))
            except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError):
                value = None
            if value is None and re.fullmatch(r"[A-Za-z_]\w*", arg) and \
                    arg in function_int_params(self.source, at):
                found = self.caller_value(arg, site)
                if found is not None:
                    return found[0], (f"the launch at line {site.range.start.line + 1} passes "
                                      f"'{arg}', which {found[1]}")
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                where = f"the launch at line {site.range.start.line + 1} passes '{arg}'"
                if text.strip("() ") != arg:
                    where += f" = {text.strip()}"
                used = [f"case {cases[n]} of switch ({n})" for n in cases
                        if re.search(rf"(?<![\w.]){re.escape(n)}\b", arg)]
                if used:
                    where += f", inside {', '.join(used)}"
                return value, where
        return None

    def table_rows(self, name: str, sizes: list[SizeDecl]) -> Optional[tuple[int, str]]:
        """(rows, where) of table size ``name`` (``n_wte``) from the host's allocation of the
        buffer a launch passes for the table: ``cudaMalloc(&wte, V * C * sizeof(float))`` (or
        ``cudaMallocManaged``, ``(T*)malloc(...)``) with ``int V = 50257;`` and ``C`` 768 from
        the host gives 50257 rows of the stride C (``wte[id * C + c]``). The buffer is the
        launch's argument, or what a call of the launching function passes for it; the bytes
        are evaluated with the allocating function's integer locals, variables the file
        declares once and the file's constants; the stride with the drafted sizes, which must
        all come from the host code. None when any of that fails or the rows do not divide."""
        table = name[2:]
        stride = self.table_strides.get(name)
        names = [q.name for q in self.kernel.parameters]
        if stride is None or table not in names:
            return None
        env = {s.name: s.expr for s in sizes}
        if any(sym not in self.host_given or sym not in env for sym in stride.symbols):
            return None
        try:
            step = evaluate(_render(stride, {}), {k: int(evaluate(v, dict(self.constants)))
                                                   for k, v in env.items()})
        except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError):
            return None
        param = next(q for q in self.kernel.parameters if q.name == table)
        element = _sizeof(templates.resolve_type(param.type.replace("*", " ").replace(
            "const", " ").strip(), self.context, self.bound))
        if not isinstance(step, int) or step <= 0 or not element:
            return None
        index = names.index(table)
        for site in self.sites:
            if index >= len(site.arguments):
                continue
            arg = site.arguments[index].strip()
            if not re.fullmatch(r"[A-Za-z_]\w*", arg):
                continue
            at = offset_of(self.source, site.range.start.line, site.range.start.column)
            buffers = [arg] + [a for a, _ in caller_arguments(self.source, at, arg)
                               if re.fullmatch(r"[A-Za-z_]\w*", a)]
            for buf in dict.fromkeys(buffers):
                found = _host_allocation(buf, self.source, self.constants)
                if found is None:
                    continue
                total, line = found
                if total % element or (total // element) % step:
                    continue
                return (total // element // step,
                        f"'{buf}' is allocated with {total:,} bytes at line {line}, rows of "
                        f"{step} {param.type.replace('*', '').replace('const', '').strip()}s")
        return None

    def caller_value(self, name: str, site: LaunchSite) -> Optional[tuple[int, str]]:
        """(value, where) of ``name``, a parameter of the function containing launch
        ``site`` (a grid of ``host_grid``, or an argument the launch passes on), from the first
        call of that function passing an integer constant (directly, through integer locals
        of the caller, or a variable the file declares once with a constant initializer);
        ``where`` reads "the call at line L passes as 'ARG'"; None when no call does."""
        at = offset_of(self.source, site.range.start.line, site.range.start.column)
        for arg, call in caller_arguments(self.source, at, name):
            text = locals_in(arg, self.source, call, set())
            if re.fullmatch(r"[A-Za-z_]\w*", text):
                text = _initializer(text, self.source) or text
            try:
                value = evaluate(text, dict(self.constants))
            except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError):
                continue
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                line = self.source.count("\n", 0, call) + 1
                return value, f"the call at line {line} passes as '{arg}'"
        return None

    def host_sizes(self, sizes: list[SizeDecl], rename: dict[str, str]) -> list[SizeDecl]:
        """``sizes`` with each size a launch site gives a constant for (:meth:`host_value`)
        set to it; the guessed note of that size goes."""
        back = {v: k for k, v in rename.items()}
        out = []
        for size in sizes:
            found = self.host_value(back.get(size.name, size.name))
            if found is None:
                out.append(size)
                continue
            self.notes = [n for n in self.notes if not n.startswith(f"size {size.name} = ")]
            self.notes.append(f"size {size.name} = {found[0]}: from the host code ({found[1]})")
            self.host_given.add(size.name)
            out.append(SizeDecl(name=size.name, expr=str(found[0])))
        return out

    def scalar(self, p: Parameter, rename: dict[str, str],
               block: tuple[int, ...] = ()) -> ScalarDecl:
        """The draft's declaration of by-value parameter ``p``; ``block`` (the draft's block)
        is the guess for a per-block extent (``blockIdx.x * p``)."""
        st, lanes = self.spec_type(p)
        if st is None or lanes > 1:
            self.notes.append(f"scalar {p.name}: type '{p.type}' cannot be expressed; assumed "
                              f"float {FLOAT_SCALAR}; GUESS, confirm"
                              f"{self.why_type_unknown(p.type)}")
            return ScalarDecl(name=p.name, type="float", expr=FLOAT_SCALAR)
        if p.name in rename:
            return ScalarDecl(name=p.name, type=st, expr=rename[p.name])
        found = self.site_value(p)
        if found is None and not dtypes.is_float(st):
            host = self.host_value(p.name)
            found = (str(host[0]), f"from the host code ({host[1]})") if host else None
        if found is not None and (dtypes.is_float(st) or "." not in found[0]):
            self.notes.append(f"scalar {p.name} = {found[0]}: {found[1]}")
            return ScalarDecl(name=p.name, type=st, expr=found[0])
        if dtypes.is_float(st):
            value = NAMED_FLOATS.get(p.name.lower(), FLOAT_SCALAR)
            why = "the usual value for that name" if p.name.lower() in NAMED_FLOATS \
                else self.unknown_argument(p)
            self.notes.append(f"scalar {p.name} = {value}: GUESS ({why}), confirm it")
            return ScalarDecl(name=p.name, type=st, expr=value)
        n = re.escape(p.name)
        body = _kernel_text(self.kernel, self.source)
        if block and re.search(rf"\bblockIdx\.x\s*\*\s*{n}\b|\b{n}\s*\*\s*blockIdx\.x\b",
                               body):
            # start = blockIdx.x * group: each block takes group elements; 1 would leave all
            # but one element per block unverified, the block's size covers the grid's share
            self.notes.append(f"scalar {p.name} = {block[0]}: GUESS (blockIdx.x * {p.name}: "
                              f"each block covers {p.name} elements, set to the block's "
                              f"{block[0]} threads so the grid covers the size; "
                              f"{self.unknown_argument(p)}), confirm it")
            return ScalarDecl(name=p.name, type=st, expr=str(block[0]))
        self.notes.append(f"scalar {p.name} = 1: GUESS (not a bound of any index, "
                          f"{self.unknown_argument(p)}), confirm it")
        return ScalarDecl(name=p.name, type=st, expr="1")

    def unknown_argument(self, p: Parameter) -> str:
        """Why no launch gives by-value parameter ``p`` a value: "the launch at line L passes
        'ARG', a variable whose value is not known here" for the first site passing an
        expression that is not a literal, else "no launch site passes a value"."""
        index = [q.name for q in self.kernel.parameters].index(p.name)
        for site in self.sites:
            if index < len(site.arguments) and site.arguments[index].strip():
                arg = " ".join(site.arguments[index].split())
                kind = "a variable" if re.fullmatch(r"[A-Za-z_]\w*", arg) else "an expression"
                return (f"the launch at line {site.range.start.line + 1} passes '{arg}', "
                        f"{kind} whose value is not known here")
        return "no launch site passes a value"

    def shared(self, rename: dict[str, str], block: tuple[int, ...],
               scalars: Optional[dict[str, str]] = None) -> str:
        """Dynamic shared memory bytes as a spec expression (module doc), "0" when none.
        ``scalars``: the drafted value of each scalar parameter, written in for a scalar
        that is no size (``2 * T * d * sizeof(float)`` with ``scalar d = 64``)."""
        for site in self.sites:
            if len(site.config) < 3:
                continue
            text = site.config[2].strip()
            fixed = {n: e for n, e in (scalars or {}).items() if n not in rename}
            at = offset_of(self.source, site.range.start.line, site.range.start.column)
            cases = case_bindings(self.source, at)
            expr = _shared_expr(text, site, self.kernel, self.context, rename, self.bound,
                                fixed, cases)
            used = sorted(n for n in fixed if expr is not None and
                          re.search(rf"(?<![\w.]){re.escape(n)}(?![\w(])", text + " " +
                                    " ".join(_local_chain(text, self.context))))
            where = f"the launch at line {site.range.start.line + 1}"
            if expr is not None:
                try:
                    names = names_in(expr)
                except ExprError:
                    names = {"?"}
                if names <= set(rename.values()) | {"block"}:
                    if expr != "0":
                        written = "".join(f"; with scalar {n} = {fixed[n]} written in: change "
                                          f"it here with {n}" for n in used)
                        self.notes.append(f"shared = {expr}: from {where} ('{text}'){written}")
                    return expr
            body = self.source[self.kernel.start_byte:self.kernel.end_byte]
            static = _static_shared_bytes(body, {**self.constants})
            most = _MAX_STATIC_SHARED - static
            opted = re.search(r"cudaFuncAttributeMaxDynamicSharedMemorySize", self.context)
            self.notes.append(
                f"shared = {most}: '{text}' at {where} could not be translated; GUESS the most "
                f"a launch gets without opting in (48 KiB"
                + (f" less the {static} bytes of static shared arrays" if static else "")
                + "), so the kernel cannot index past it where the host's own launch could "
                  "not either"
                + ("; the file raises cudaFuncAttributeMaxDynamicSharedMemorySize, so the "
                   "host may pass more: set it" if opted else "; set it to the host's value"))
            return str(most)
        found = self.shared_element()
        if not found[1]:
            return "0"
        size, declared = found
        self.notes.append(f"shared = block.x * {size}: GUESS, the body declares extern "
                          f"__shared__ {declared} but no launch passes its size")
        return f"block.x * {size}"

    def shared_element(self) -> tuple[int, str]:
        """(bytes of one element, how the body declares it) of the kernel's ``extern
        __shared__`` array: the type it is cast to when it is a byte array used through a
        pointer cast (``reinterpret_cast<float*>(smem)``), else its declared type; (4, "")
        when the body declares none."""
        body = self.source[self.kernel.start_byte:self.kernel.end_byte]
        m = _EXTERN_SHARED.search(body)
        if m is None:
            return 4, ""
        declared = f"{m.group('type')} {m.group('name')}[]"
        cast = _shared_cast(body, m.group("name"))
        if cast is not None:
            size = _sizeof(templates.resolve_type(cast, self.context, self.bound))
            if size:
                return size, f"{declared} (used as {cast} through a cast)"
        size = _sizeof(templates.resolve_type(m.group("type"), self.context, self.bound))
        return size or 4, declared


def _field_read(name: str, body: str) -> Optional[str]:
    """The first ``name[...].field`` or ``name->field`` of ``body`` (an element of pointer
    ``name`` read as a record), as written; None when there is none."""
    m = re.search(rf"(?<![\w.]){re.escape(name)}\s*(?:\[(?:[^\[\]]|\[[^\[\]]*\])*\]\s*\.|->)"
                  rf"\s*[A-Za-z_]\w*", body)
    return " ".join(m.group(0).split()) if m else None


def _site_grid_text(site: LaunchSite, source: str) -> tuple[str, ...]:
    """The texts of ``site``'s grid, one per axis: a ``dim3`` variable's arguments (its last
    declaration before the launch), ``dim3(...)``'s, or the expression; each with the names
    the launching function declares as integer locals written out (``int grid_size = N;``),
    the launch's own arguments kept."""
    from cudalens.spec.block_shape import dim3_declared_before, split_top

    text = site.config[0].strip()
    at = offset_of(source, site.range.start.line, site.range.start.column)
    m = re.fullmatch(r"(?:dim3\s*)?[({](.*)[)}]", text, flags=re.S)
    declared = dim3_declared_before(text, source, at) \
        if re.fullmatch(r"[A-Za-z_]\w*", text) else None
    if declared is not None:
        parts = split_top(declared)
    elif m is not None and text.startswith(("dim3", "{")):
        parts = split_top(m.group(1))
    else:
        parts = [text]
    keep = {a.strip() for a in site.arguments}
    return tuple(locals_in(p, source, at, keep) for p in parts[:3])


def _multiple_of(size: SizeDecl, step: int, constants: dict[str, int]) -> SizeDecl:
    """``size`` with its nominal value rounded down to a multiple of ``step`` (at least
    ``step``) when it is not one (``multiple`` requires it)."""
    from cudalens.spec.expr import evaluate

    try:
        value = evaluate(size.expr, dict(constants))
    except ExprError:
        return size
    if not isinstance(value, int) or value % step == 0:
        return size
    return SizeDecl(name=size.name, expr=str(max(step, value - value % step)))


# C casts in a launch's grid, dropped for reading it (``(size_t)ceil((float)W / block.x)``)
_GRID_CASTS = re.compile(r"\(\s*(?:const\s+)?(?:(?:unsigned|signed)\s+)?(?:size_t|int|long"
                         r"(?:\s+long)?|unsigned|float|double|u?int(?:32|64)_t)\s*\)")


def _grid_axis(text: str, args: dict[str, str],
               constants: dict[str, int]) -> Optional[tuple[Poly, int, str]]:
    """One axis of a launch's grid as (extent, step, "floor"|"ceil") in the kernel's
    parameters (``args``: launch argument text -> parameter), or None. C casts to integer
    and floating types are dropped and ``ceil(A / B)`` is ``ceil_div(A, B)``
    (``(size_t)ceil((float)W / 32)``); a grid of constants alone (``W / 32`` with ``#define W
    4096``) is its number of blocks, step 1."""
    text = _GRID_CASTS.sub("", text)
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

    def poly(node: ast.AST) -> Optional[Poly]:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return Poly.const(node.value)
        if isinstance(node, ast.Name):
            if node.id in args:
                return Poly.sym(args[node.id])
            if node.id in constants:
                return Poly.const(constants[node.id])
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = poly(node.left), poly(node.right)
            if a is None or b is None:
                return None
            return a + b if isinstance(node.op, ast.Add) else (
                a - b if isinstance(node.op, ast.Sub) else a * b)
        return None

    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and len(tree.args) == 1 \
            and tree.func.id in ("ceil", "ceilf") and isinstance(tree.args[0], ast.BinOp) and \
            isinstance(tree.args[0].op, ast.Div):
        tree = ast.Call(func=ast.Name(id="ceil_div"), args=[tree.args[0].left,
                                                            tree.args[0].right], keywords=[])
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and len(tree.args) == 2 \
            and tree.func.id.lower() in ("ceil_div", "cdiv", "div_up", "divup", "ceildiv",
                                         "div_round_up"):
        a, b = poly(tree.args[0]), poly(tree.args[1])
        if a is not None and b is not None and b.is_const() and b.constant >= 1 \
                and a.is_const() and a.constant >= 1:
            return Poly.const(-(-a.constant // b.constant)), 1, "floor"
        if a is not None and b is not None and b.is_const() and b.constant >= 1 \
                and not a.is_const():
            return a, b.constant, "ceil"
        return None
    def quotient(node: ast.AST) -> Optional[tuple[Poly, int]]:
        """``P / a`` with a constant ``a`` >= 1 and a polynomial ``P`` with no constant term
        (``N / 8``, the vectors of N elements): (P, a)."""
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
            return None
        p, d = poly(node.left), poly(node.right)
        if p is None or d is None or not d.is_const() or d.constant < 1 or p.is_const() \
                or p.constant != 0:
            return None
        return p, d.constant

    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.Div):
        a, b = poly(tree.left), poly(tree.right)
        if a is not None and b is not None and b.is_const() and b.constant >= 1 and \
                a.is_const() and a.constant // b.constant >= 1:
            return Poly.const(a.constant // b.constant), 1, "floor"
        # a grid over vectors of elements: N / 8 / 256 and (N / 8 + 255) / 256 cover N with
        # whole steps of 8 * 256 (ceil: the ragged N kept a multiple of that, see
        # grid_resolved, which also makes the inner floor exact)
        terms: list[tuple[int, ast.AST]] = []

        def flatten(node: ast.AST, sign: int) -> None:
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                flatten(node.left, sign)
                flatten(node.right, sign if isinstance(node.op, ast.Add) else -sign)
            else:
                terms.append((sign, node))

        flatten(tree.left, 1)
        quotients = [(sg, q) for sg, q in ((sg, quotient(t)) for sg, t in terms)
                     if q is not None]
        rest = [(sg, poly(t)) for sg, t in terms if quotient(t) is None]
        inner, bump = None, 0
        if len(quotients) == 1 and quotients[0][0] == 1 and all(
                p is not None and p.is_const() for _, p in rest):
            inner = quotients[0][1]
            bump = sum(sg * p.constant for sg, p in rest if p is not None)
        if inner is not None and b is not None and b.is_const() and b.constant >= 1:
            step = inner[1] * b.constant
            if bump == 0:
                return inner[0], step, "floor"
            if bump == b.constant - 1:
                return inner[0], step, "ceil"
            return None
        if a is None or b is None or not b.is_const() or b.constant < 1 or a.is_const():
            return None
        step = b.constant
        if a.constant == step - 1 and step > 1:
            return a - Poly.const(step - 1), step, "ceil"
        return (a, step, "floor") if a.constant == 0 else None
    a = poly(tree)
    if a is not None and a.is_const() and a.constant < 1:
        return None
    return (a, 1, "floor") if a is not None else None


def _condition_holds(cond: str, env: dict) -> Optional[bool]:
    """The truth of a C condition of comparisons joined by ``&&``/``||`` (``M >= 128 && N >=
    128``) under ``env``, each side a spec expression; None when it is not of that form or a
    side does not evaluate."""
    from cudalens.spec.expr import evaluate

    text = cond.replace("&&", " and ").replace("||", " or ")
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    ops = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
           ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b,
           ast.NotEq: lambda a, b: a != b}

    def truth(node: ast.AST) -> Optional[bool]:
        if isinstance(node, ast.BoolOp):
            parts = [truth(v) for v in node.values]
            if any(p is None for p in parts):
                return None
            return all(parts) if isinstance(node.op, ast.And) else any(parts)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in ops:
            try:
                a = evaluate(ast.unparse(node.left), env)
                b = evaluate(ast.unparse(node.comparators[0]), env)
            except ExprError:
                return None
            return bool(ops[type(node.ops[0])](a, b))
        return None

    return truth(tree)


def _enclosing_if(source: str, line: int) -> str:
    """The condition of the innermost ``if (...) {`` whose braces hold 1-based ``line`` of
    ``source`` (read from the text: the host function's branch around a launch), else ""."""
    at = offset_of(source, line - 1, 0)
    depth = 0
    i = at
    while i > 0:
        i -= 1
        ch = source[i]
        if ch == "}":
            depth += 1
        elif ch == "{":
            if depth == 0:
                head = source[max(0, i - 400):i].rstrip()
                m = re.search(r"\bif\s*\((.*)\)\s*$", head, flags=re.S)
                if m is None:
                    return ""
                cond = " ".join(m.group(1).split())
                return cond if cond.count("(") == cond.count(")") and "{" not in cond else ""
            depth -= 1
    return ""


def _thread_stride(index: Optional[Poly]) -> Optional[tuple[int, int]]:
    """(c, k) when ``index`` is ``c * (blockIdx.x * blockDim.x + threadIdx.x) + k`` with
    integers c >= 1 and k >= 0, else None."""
    if index is None:
        return None
    terms = dict(index.terms)
    k = terms.pop((), 0)
    c = terms.get(("threadIdx.x",))
    if c is None or c < 1 or k < 0 or terms != {("threadIdx.x",): c,
                                               ("blockDim.x", "blockIdx.x"): c}:
        return None
    return c, k


def _same_loops(write: Access, read: Access) -> bool:
    """Each loop variable of ``read``'s index runs in ``write`` under a loop with the same
    header as around ``read`` (the write reaches the elements the read does)."""
    assert read.index is not None
    written = dict(write.loops[::-1])
    for var, header in read.loops:
        if var and var in read.index.symbols and written.get(var) != header:
            return False
    return True


def _own_writes_first(accesses: list[Access]) -> Optional[tuple[Access, Access]]:
    """(first read, the write before it) when every read or update of a buffer comes after
    a plain write (``=``) of the same element index in the same thread: a write earlier in the
    text, at an equal index, in no branch that the read is not also in (``out[i] = expf(..);
    ... out[i] *= inv;``, also ``y[c]`` of one loop read in a later loop over the same ``c``).
    None when some read may see the buffer's initial contents (``y[i] += a * x[i]``)."""
    ordered = sorted(accesses, key=lambda a: a.order)
    first: Optional[tuple[Access, Access]] = None
    for n, a in enumerate(ordered):
        if a.kind not in ("read", "update"):
            continue
        if a.index is None or a.atomic:
            return None
        write = next((w for w in ordered[:n] if w.kind == "write" and not w.atomic
                      and w.index == a.index and w.order <= a.order
                      and w.branches <= a.branches and _same_loops(w, a)), None)
        if write is None:
            return None
        first = first or (a, write)
    return first


# Names template parameters give the block size by (``template <int BLOCK_SIZE>``)
_BLOCK_NAME = re.compile(r"^(?:BLOCK|BLOCK_?SIZE|BLOCK_?DIM|(?:NUM_?|N_?)?THREADS|TPB|BS)$",
                         re.IGNORECASE)
_EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?"
                            r"(?P<type>[A-Za-z_][\w:]*(?:\s+[A-Za-z_]\w*(?=\s+\w))?)\s+(?P<name>\w+)\s*"
                            r"\[\s*\]")
_SIZEOF = re.compile(r"sizeof\s*\(\s*(?P<type>[^()]+?)\s*\)")
_CALL = re.compile(r"(?<![\w.])(?P<name>[A-Za-z_]\w*)\s*\((?P<args>[^()]*)\)")
_FLOAT_LIT = re.compile(r"^[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[fF]?$")


def _shared_cast(body: str, name: str) -> Optional[str]:
    """The element type the kernel's byte array ``name`` of dynamic shared memory is used as:
    the pointee of its first cast to a pointer (``reinterpret_cast<float*>(smem)``,
    ``(float*)smem``, ``(float2*)&smem[0]``, ``static_cast<T*>``); None when it is not cast."""
    ptype = r"(?:const\s+|volatile\s+)*(?P<type>[A-Za-z_][\w:]*(?:\s+[A-Za-z_]\w*)?)\s*\*"
    target = rf"\(?\s*&?\s*{re.escape(name)}\b"
    found = [m for rx in (rf"(?:reinterpret|static)_cast\s*<\s*{ptype}\s*>\s*\(\s*{target}",
                          rf"\(\s*{ptype}\s*\)\s*{target}")
             for m in [re.search(rx, body)] if m is not None]
    if not found:
        return None
    first = min(found, key=lambda m: m.start())
    return " ".join(first.group("type").split())


def _literal(text: str) -> Optional[str]:
    """``0.9f`` -> ``0.9``, ``1e-8`` -> ``1e-8``, ``3`` -> ``3``; anything else None."""
    t = text.strip()
    if not _FLOAT_LIT.match(t):
        return None
    return t[:-1] if t[-1] in "fF" else t


def _initializer(name: str, source: str) -> Optional[str]:
    """The initializer text of ``name`` when the file declares it exactly once with one
    (``float lr = 1e-3f;``, ``const int n = 4;``, ``float b1 = 0.9f, b2 = 0.999f;``, parentheses
    two deep: ``int bytes = (2 * T * sizeof(float)) + 4;``) and never assigns it again; else
    None."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return None
    decls = re.findall(rf"(?:\b(?:const\s+)?(?:float|double|int|unsigned|long|size_t|auto)\s+"
                       rf"|,\s*){name}\s*=\s*((?:[^;,()]|\((?:[^()]|\([^()]*\))*\))+)[;,]", source)
    assigns = re.findall(rf"(?<![\w.]){name}\s*(?:[-+*/]?=)(?!=)", source)
    return decls[0].strip() if len(decls) == 1 and len(assigns) == 1 else None


_VECTOR_BYTES = {"int4": 16, "uint4": 16, "float4": 16, "double2": 16, "longlong2": 16,
                 "int2": 8, "uint2": 8, "float2": 8}


@functools.lru_cache(maxsize=8)
def _vector_sizes(context: str) -> dict[str, int]:
    """``NAME::size`` of each alias of a packed-vector template instance in ``context``:
    ``typedef Packed128<floatX> x128;`` (or ``using x128 = Packed128<floatX>;``) of a
    ``template<class E> struct Packed128`` declaring ``size = sizeof(int4) / sizeof(E)`` has
    16 over the bytes of floatX."""
    out: dict[str, int] = {}
    if "::size" not in context and "sizeof" not in context:
        return out
    aliases = [(m.group(3), m.group(1), m.group(2)) for m in re.finditer(
        r"typedef\s+([A-Za-z_]\w*)\s*<\s*([\w:]+)\s*>\s*([A-Za-z_]\w*)\s*;", context)]
    aliases += [(m.group(1), m.group(2), m.group(3)) for m in re.finditer(
        r"using\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*<\s*([\w:]+)\s*>\s*;", context)]
    for alias, template, arg in aliases:
        m = re.search(rf"template\s*<\s*(?:class|typename)\s+([A-Za-z_]\w*)\s*>\s*"
                      rf"(?:struct|class)\s+(?:alignas\s*\(\s*\d+\s*\)\s*)?{re.escape(template)}"
                      rf"\b[^{{;]*\{{", context)
        if m is None:
            continue
        body = context[m.end():m.end() + 4000]
        size = re.search(rf"\bsize\s*=\s*sizeof\s*\(\s*(\w+)\s*\)\s*/\s*sizeof\s*\(\s*"
                         rf"{re.escape(m.group(1))}\s*\)", body)
        if size is None or size.group(1) not in _VECTOR_BYTES:
            continue
        element = _sizeof(templates.resolve_type(arg, context, {}))
        if element:
            out[f"{alias}::size"] = _VECTOR_BYTES[size.group(1)] // element
    return out


def _sizeof(ctype: str) -> Optional[int]:
    st, lanes = _spec_type_of(ctype)
    if st is None:
        return None
    return dtypes.itemsize(dtypes.numpy_dtype(st)) * lanes


def _helpers(source: str) -> dict[str, tuple[list[str], str]]:
    """Functions whose body is one ``return EXPR;``: name -> (parameter names, EXPR)."""
    out: dict[str, tuple[list[str], str]] = {}
    rx = re.compile(r"\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)\s*(?:const\s*)?"
                    r"\{\s*return\s+(?P<expr>[^;{}]+);\s*\}")
    for m in rx.finditer(source):
        names = [p.split()[-1].strip("*&") for p in m.group("params").split(",") if p.split()]
        out.setdefault(m.group("name"), (names, m.group("expr").strip()))
    return out


def _local_chain(text: str, source: str) -> list[str]:
    """The initializers of the names in ``text`` declared once in ``source``
    (``_initializer``), a few rounds: the texts a shared-memory size is built from."""
    out, todo = [], re.findall(r"(?<![\w.])[A-Za-z_]\w*", text)
    for word in todo[:64]:
        init = _initializer(word, source)
        if init is not None and init not in out:
            out.append(init)
            todo += re.findall(r"(?<![\w.])[A-Za-z_]\w*", init)
    return out


def _shared_expr(text: str, site: LaunchSite, kernel: Kernel, source: str,
                 rename: dict[str, str], bound: dict[str, str],
                 scalars: Optional[dict[str, str]] = None,
                 cases: Optional[dict[str, str]] = None) -> Optional[str]:
    """The launch's shared-memory text as a spec expression of the kernel's sizes, or None.

    Helper calls, function-like macros (``#define PAD(x, n) (((x) + (n) - 1) / (n) * (n))``)
    and locals are expanded (a few rounds), ``sizeof(T)`` becomes its bytes, a name the
    ``switch`` around the launch fixes (``cases``, from ``host_locals.case_bindings``) its
    case label, the kernel's by-value arguments the sizes they are passed to (or, for a
    parameter in ``scalars``, that scalar's drafted value), the block argument ``block.x``,
    and the file's integer constants their values. Bitwise ``& | ^ ~`` are folded where
    their operands are constants, and ``A & ~(2^k - 1)`` (``GGML_PAD``-like rounding of a
    non-negative A) becomes ``A / 2^k * 2^k``; other bitwise operations give None."""
    scalars = scalars or {}
    cases = cases or {}
    args = {a.strip(): p.name for a, p in zip(site.arguments, kernel.parameters)
            if not p.is_pointer}
    block_text = site.config[1].strip() if len(site.config) > 1 else ""
    # sizeof(*out), sizeof(out[0]) of an argument passed to a pointer parameter: its element
    pointees: dict[str, str] = {}
    for a, p in zip(site.arguments, kernel.parameters):
        if p.is_pointer and re.fullmatch(r"[A-Za-z_]\w*", a.strip()):
            pointees[f"*{a.strip()}"] = pointees[f"{a.strip()}[0]"] = p.type
    helpers = dict(_helpers(source))
    for macro, (params, body) in function_macros(source).items():
        helpers.setdefault(macro, (list(params), body))
    expr = text
    for _ in range(4):
        before = expr

        def call(m: re.Match) -> str:
            h = helpers.get(m.group("name"))
            if h is None or m.group("name") == "sizeof":
                return m.group(0)
            actual = [a.strip() for a in m.group("args").split(",")] if m.group("args").strip() \
                else []
            body = h[1]
            for formal, value in zip(h[0], actual):
                body = re.sub(rf"\b{re.escape(formal)}\b", f"({value})", body)
            return f"({body})"
        expr = _CALL.sub(call, expr)
        expr = _SIZEOF.sub(lambda m: str(_sizeof(templates.resolve_type(
            pointees.get(m.group("type").replace(" ", ""), m.group("type")), source, bound))
            or "?"), expr)

        def name(m: re.Match) -> str:
            word = m.group(0)
            if word in cases and not (word in args and args[word] in rename):
                return _wrapped(cases[word])
            if word in args:
                if args[word] not in rename and args[word] in scalars:
                    return f"({scalars[args[word]]})"
                return rename.get(args[word], args[word])
            if word == block_text:  # block.x / block.y of a dim3 block stay what they say
                return "block" if m.string[m.end():m.end() + 1] == "." else "block.x"
            init = _initializer(word, source)
            return f"({init})" if init is not None else word
        expr = re.sub(r"(?<![\w.])[A-Za-z_]\w*(?!\s*\()", name, expr)
        if expr == before:
            break
    consts = file_constants(source)
    expr = re.sub(r"(?<![\w.])[A-Za-z_]\w*\b",
                  lambda m: str(consts[m.group(0)]) if m.group(0) in consts else m.group(0), expr)
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)
    expr = re.sub(r"\((?:size_t|int|unsigned|long)\)", "", expr)
    expr = re.sub(r"block\.x\.x", "block.x", expr)
    if re.search(r"[&|^~]", expr):
        folded = _fold_bits(expr)
        if folded is None:
            return None
        expr = folded
    try:
        names_in(expr)
    except ExprError:
        return None
    return ast.unparse(ast.parse(expr.strip(), mode="eval"))  # minimal parentheses


_ALLOC = (r"\bcudaMalloc(?:Managed)?\s*\(\s*(?:\(\s*void\s*\*\s*\*\s*\)\s*)?&\s*{name}\s*,"
          r"\s*(?P<bytes>(?:[^();]|\((?:[^()]|\([^()]*\))*\))+?)\s*[,)]",
          r"(?<![\w.]){name}\s*=\s*(?:\([^()]*\*\s*\)\s*)?(?:std::)?malloc\s*\("
          r"\s*(?P<bytes>(?:[^();]|\((?:[^()]|\([^()]*\))*\))+?)\s*\)")


def _host_allocation(name: str, source: str, constants: dict[str, int]
                     ) -> Optional[tuple[int, int]]:
    """(bytes, 1-based line) of the first allocation of host variable ``name`` whose size
    evaluates to a positive integer: ``cudaMalloc(&name, BYTES)`` (also ``(void**)&name`` and
    ``cudaMallocManaged``) or ``name = (T*)malloc(BYTES)``, with ``sizeof(T)`` as its bytes,
    the allocating function's integer locals, variables the file declares once (``int V =
    50257;``) and ``constants``; None when there is none."""
    for rx in _ALLOC:
        for m in re.finditer(rx.format(name=re.escape(name)), source):
            text = _SIZEOF.sub(lambda t: str(_sizeof(t.group("type")) or "?"), m.group("bytes"))
            text = locals_in(text, source, m.start(), set())
            for _ in range(3):
                text = re.sub(r"(?<![\w.])[A-Za-z_]\w*(?!\s*\()", lambda w: f"({init})" if (
                    init := _initializer(w.group(0), source)) is not None else w.group(0), text)
            text = _SIZEOF.sub(lambda t: str(_sizeof(t.group("type")) or "?"), text)
            text = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", text)
            text = re.sub(r"\((?:size_t|int|unsigned|long)\)", "", text)
            try:
                value = evaluate(text, dict(constants))
            except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError):
                continue
            if isinstance(value, int) and value > 0:
                return value, source.count("\n", 0, m.start()) + 1
    return None


def _wrapped(text: str) -> str:
    """``text`` as an operand: a name or a number as it is, anything else in parentheses."""
    t = text.strip()
    return t if re.fullmatch(r"\w+", t) else f"({t})"


def _fold_bits(expr: str) -> Optional[str]:
    """``expr`` with each bitwise sub-expression (``& | ^ ~``) of constant operands folded to
    its value with C's integer arithmetic (``(((40) + 31) & ~(31))`` -> ``64``) and each
    ``A & ~(2^k - 1)`` as ``A / 2^k * 2^k`` (A non-negative: a size rounded up to whole
    warps); None when a bitwise operation is left (one with a name in it otherwise: the spec
    language has no bitwise operators) or the text does not parse."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return None
    bits = (ast.BitAnd, ast.BitOr, ast.BitXor)

    def const(node: ast.AST) -> Optional[int]:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.USub)):
            v = const(node.operand)
            return None if v is None else (~v if isinstance(node.op, ast.Invert) else -v)
        if isinstance(node, ast.BinOp):
            a, b = const(node.left), const(node.right)
            if a is None or b is None:
                return None
            op = type(node.op)
            if op in (ast.Add, ast.Sub, ast.Mult):
                return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}[op]
            if op is ast.Div and b != 0:
                return c_div(a, b)
            if op is ast.BitAnd:
                return a & b
            if op is ast.BitOr:
                return a | b
            if op is ast.BitXor:
                return a ^ b
        return None

    class Fold(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            node = super().generic_visit(node)
            if isinstance(node, ast.BinOp) and isinstance(node.op, bits) or \
                    isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
                v = const(node)
                if v is not None:
                    return ast.Constant(v)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
                # A & ~(2^k - 1) rounds a non-negative A down to a multiple of 2^k
                for a, b in ((node.left, node.right), (node.right, node.left)):
                    m = const(b)
                    if m is not None and m < 0 and (-m) & (-m - 1) == 0:
                        step = ast.Constant(-m)
                        return ast.BinOp(ast.BinOp(a, ast.Div(), step), ast.Mult(), step)
            return node
    folded = Fold().visit(tree)
    if any(isinstance(n, ast.BinOp) and isinstance(n.op, bits) or
           isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert) for n in ast.walk(folded)):
        return None
    return ast.unparse(folded)


def _divide(p: Poly, d: Poly) -> Optional[Poly]:
    """``p / d`` when ``d`` is one monomial (with a positive coefficient) dividing every term
    of ``p`` exactly, else None: ``(B * T * 4) / (T * 2) = B * 2``."""
    if len(d.terms) != 1:
        return None
    (dm, dc), = d.terms
    if dc <= 0:
        return None
    out = Poly()
    for m, c in p.terms:
        rest = list(m)
        for s in dm:
            if s not in rest:
                return None
            rest.remove(s)
        if c % dc:
            return None
        term = Poly.const(c // dc)
        for s in rest:
            term = term * Poly.sym(s)
        out = out + term
    return out


def _single_symbol(poly: Optional[Poly]) -> Optional[str]:
    """``n`` for the polynomial ``n`` (one symbol, coefficient 1, no constant), else None."""
    if poly is None or len(poly.terms) != 1:
        return None
    monomial, coef = poly.terms[0]
    return monomial[0] if coef == 1 and len(monomial) == 1 else None


def _spec_type(p: Parameter) -> tuple[Optional[str], int]:
    return _spec_type_of(p.type)


def _spec_type_of(ctype: str) -> tuple[Optional[str], int]:
    st = dtypes.spec_type_for_c(ctype)
    if st is not None:
        return st, 1
    vec = dtypes.vector_type_for_c(ctype)
    if vec is not None:
        return vec
    return None, 1


def _render(poly: Poly, rename: dict[str, str]) -> str:
    renamed = poly.substitute(lambda s: Poly.sym(rename.get(s, s)))
    assert renamed is not None
    return renamed.render(list(rename.values()))


def _padded_factors(poly: Poly) -> Optional[list[tuple[str, int]]]:
    """``[(n, c), ...]`` when ``poly`` is the product of ``(n + c)`` over two or more symbols
    ``n`` (each of degree one, some ``c`` not 0): ``dimx * dimy * dimz + 8 * dimx * dimy + ...
    + 512`` is ``(dimx + 8) * (dimy + 8) * (dimz + 8)``; else None."""
    names = sorted(poly.symbols)
    if len(names) < 2 or poly.as_dict().get(tuple(names)) != 1 or (
            len(names) == 2 and not poly.constant):
        return None  # (N * C + C stays as it is: a row past N, not a padded plane)
    terms = poly.as_dict()
    found = [(n, terms.get(tuple(m for m in names if m != n), 0)) for n in names]
    if not any(c for _, c in found):
        return None
    product = Poly.const(1)
    for n, c in found:
        product = product * (Poly.sym(n) + Poly.const(c))
    return found if product == poly else None


def _render_length(poly: Poly, rename: dict[str, str]) -> str:
    """A length as text: a padded volume as its factors (``(dimx + 8) * (dimy + 8) * (dimz +
    8)``, see :func:`_padded_factors`), anything else as :func:`_render` writes it."""
    factors = _padded_factors(poly)
    if factors is None:
        return _render(poly, rename)
    order = {n: i for i, n in enumerate(rename.values())}
    parts = sorted(((rename.get(n, n), c) for n, c in factors),
                   key=lambda nc: (order.get(nc[0], len(order)), nc[0]))
    return " * ".join(f"({n} + {c})" if c > 0 else (f"({n} - {-c})" if c < 0 else n)
                      for n, c in parts)

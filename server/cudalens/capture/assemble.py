"""Turn one recorded launch (``raw.RawLaunch``) and the kernel's source into a ``Capture``.

Parameters get their names and C types from the kernel's signature (the source model); their
sizes and offsets are the driver's (``cuFuncGetParamInfo``, in the record), which are exact for
every type, templates included. A parameter the signature declares a pointer and that points
into a device allocation becomes a ``PointerParam`` covering the bytes from the pointer to the
end of its allocation, or to the next higher pointer of this launch into the same allocation
(PyTorch's caching allocator puts many tensors in one allocation); other parameters are
``ScalarParam`` values decoded by their C type. Roles: ``roles.decide_role`` with the body's
roles from the spec inference.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from cudalens.capture.container import Capture, Manifest, PointerParam, ScalarParam
from cudalens.capture.raw import RawLaunch
from cudalens.capture.roles import decide_role
from cudalens.capture.sources import KernelSource
from cudalens.errors import CudalensError
from cudalens.spec.dtypes import numpy_dtype, spec_type_for_c, vector_type_for_c


class CaptureMismatch(CudalensError):
    """The recorded launch does not fit the kernel's signature (another kernel of that name?)."""


def element_dtype(ctype: str) -> Optional[str]:
    """The numpy element type of C type ``ctype`` (``float4`` -> ``float32``), or None."""
    st = spec_type_for_c(ctype)
    if st is None:
        vec = vector_type_for_c(ctype)
        st = vec[0] if vec else None
    return numpy_dtype(st) if st is not None else None


def _body_roles(found: KernelSource) -> dict[str, str]:
    from cudalens.spec.infer import infer_spec
    from cudalens.spec.model import BufferDecl
    from cudalens.spec.errors import SpecError

    try:
        spec = infer_spec(found.kernel, found.text)
    except (SpecError, LookupError, ValueError):
        return {}
    return {p.name: p.role for p in spec.params if isinstance(p, BufferDecl)}


def _decode(data: bytes, dtype: Optional[str]):
    if dtype is None or np.dtype(dtype).itemsize != len(data):
        return None
    value = np.frombuffer(data, dtype=dtype)[0]
    return float(value) if np.dtype(dtype).kind == "f" else int(value)


def _extents(raw: RawLaunch, pointer_params: set[int]) -> dict[int, tuple[int, int]]:
    """Parameter index -> (start offset in its allocation, bytes) for pointer parameters."""
    sizes = {a.index: a.size for a in raw.allocs}
    out = {}
    for p in raw.pointers:
        if p.param not in pointer_params:
            continue
        higher = [q.offset for q in raw.pointers if q.alloc == p.alloc and q.offset > p.offset
                  and q.param in pointer_params]
        end = min(higher, default=sizes[p.alloc])
        out[p.param] = (p.offset, end - p.offset)
    return out


def assemble(raw: RawLaunch, found: Optional[KernelSource], command: Sequence[str]) -> Capture:
    """The capture of ``raw`` (module doc). Without ``found`` (no source in the workspace)
    every 8-byte parameter inside an allocation is taken as an untyped pointer (``uint8``).
    Raises ``CaptureMismatch`` when the signature's parameter count differs from the launch's."""
    notes: list[str] = []
    sig = list(found.kernel.parameters) if found else []
    if found and len(sig) != len(raw.params):
        raise CaptureMismatch(
            f"{found.path}: kernel {found.kernel.name} has {len(sig)} parameters, the captured "
            f"launch of {raw.demangled} has {len(raw.params)}: not the same kernel"
            + (f" (the driver could not list its parameters: cuFuncGetParamInfo returned "
               f"{raw.param_info_errors.split()[0]}, cuKernelGetParamInfo "
               f"{raw.param_info_errors.split()[-1]})" if raw.param_info_errors else ""))
    roles = _body_roles(found) if found else {}
    pointed = {p.param: p for p in raw.pointers}
    is_ptr = {i for i in range(len(raw.params))
              if (sig[i].is_pointer if sig else i in pointed)}
    extents = _extents(raw, is_ptr)
    bases = {a.index: a.base for a in raw.allocs}
    params, before, after = [], {}, {}
    for rp in raw.params:
        name = sig[rp.index].name if sig else f"p{rp.index}"
        ctype = sig[rp.index].type if sig else ""
        if rp.index in is_ptr and rp.index in extents:
            ptr = pointed[rp.index]
            start, nbytes = extents[rp.index]
            dtype = element_dtype(ctype) if ctype else None
            if dtype is None:
                dtype = "uint8"
                notes.append(f"{name}: element type {ctype or 'unknown'} kept as raw bytes")
            item = np.dtype(dtype).itemsize
            length = nbytes // item
            b = np.frombuffer(raw.before(ptr.alloc)[start:start + length * item], dtype=dtype)
            a = np.frombuffer(raw.after(ptr.alloc)[start:start + length * item], dtype=dtype)
            changed = b.tobytes() != a.tobytes()
            decision = decide_role(name, changed, roles.get(name))
            if decision.note:
                notes.append(decision.note)
            before[name], after[name] = b, a
            params.append(PointerParam(
                index=rp.index, name=name, ctype=ctype, offset=rp.offset, size=len(rp.data),
                hex=rp.data.hex(), address=bases[ptr.alloc] + ptr.offset, dtype=dtype,
                length=length, allocation=ptr.alloc, allocation_offset=ptr.offset,
                role=decision.role, replay_role=decision.replay_role, changed=changed,
                note=decision.note))
            continue
        if rp.index in is_ptr:
            notes.append(f"{name}: the pointer does not point into device memory "
                         f"(null, host or unknown memory); it cannot be replayed")
        dtype = element_dtype(ctype) if ctype and rp.index not in is_ptr else None
        if rp.index in is_ptr:
            dtype = "uint64"
        params.append(ScalarParam(index=rp.index, name=name, ctype=ctype, offset=rp.offset,
                                  size=len(rp.data), hex=rp.data.hex(), dtype=dtype,
                                  value=_decode(rp.data, dtype)))
    kernel = (found.kernel.qualified_name or found.kernel.name) if found else raw.base_name
    manifest = Manifest(
        kernel=kernel, mangled=raw.mangled, demangled=raw.demangled,
        source_file=str(found.path) if found else "", source_key=found.key if found else "",
        command=tuple(command), launch_index=raw.launch_index, api=raw.api, grid=raw.grid,
        block=raw.block, shared_bytes=raw.shared_bytes, params=tuple(params), archive="",
        notes=tuple(notes))
    return Capture(manifest, before, after)

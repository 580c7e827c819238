"""The standalone launch script ``gpu_runner.sanitize`` runs under compute-sanitizer.

``python -m gpu_runner.sanitize_launch REQUEST.json``: REQUEST (written by ``sanitize``) holds a
``Problem``, one ``Variant`` (``problem.to_dict`` form), the index of the case to run and a
device index. The script compiles the variant with ``-lineinfo`` (so findings carry source
lines), the source preceded by ``#line 1 "cudalens-variant.cu"`` (so its lines are the
variant's own under one known file name, ``SOURCE_NAME``), gives every pointer argument an
allocation of exactly its size (no guard regions: memcheck reports an access one element past
the end only when it leaves the allocation), fills the inputs from the first seed, fills the
outputs with the poison pattern (so initcheck sees initialized memory: a read of an output
before writing it is the runner's business, not a finding), launches the kernel once and
waits for it.

Exit status: 0 launched and finished; 3 the variant did not compile or load; 4 the launch was
refused or the kernel failed (a kernel that faults under memcheck ends so); the reason on
stderr, after ``sanitize_launch:``; 2 a malformed request.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpu_runner.problem import Buffer, Scalar, problem_from_dict, variant_from_dict

EXIT_BAD_REQUEST = 2
EXIT_VARIANT_FAILED = 3
EXIT_KERNEL_FAILED = 4
SOURCE_NAME = "cudalens-variant.cu"


def line_mapped_source(source: str) -> str:
    """``source`` preceded by a ``#line`` directive: its first line is line 1 of
    ``SOURCE_NAME`` in the compiled code's line table."""
    return f'#line 1 "{SOURCE_NAME}"\n{source}'


def _exact_buffers(drv, case, inputs):
    """(allocations by name, launch arguments in parameter order)."""
    import numpy as np  # noqa: PLC0415

    from gpu_runner.patterns import FLOAT_POISON_HALFWORD, INT_POISON_BYTE, is_float  # noqa

    allocs, args = {}, []
    for arg in case.args:
        if isinstance(arg, Scalar):
            value = np.dtype(arg.dtype).type(arg.value)
            args.append(value.view(np.uint16) if arg.dtype == "float16" else value)
            continue
        assert isinstance(arg, Buffer)
        alloc = drv.mem_alloc(max(arg.nbytes, 1))
        allocs[arg.name] = alloc
        if arg.role == "out":
            if is_float(arg.dtype):
                drv.memset_d16(int(alloc), FLOAT_POISON_HALFWORD, arg.nbytes // 2)
            else:
                drv.memset_d8(int(alloc), INT_POISON_BYTE, arg.nbytes)
        else:
            drv.memcpy_htod(alloc, np.ascontiguousarray(inputs[arg.name]))
        args.append(np.uintp(int(alloc)))
    return allocs, args


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m gpu_runner.sanitize_launch REQUEST.json", file=sys.stderr)
        return EXIT_BAD_REQUEST
    try:
        req = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        problem = problem_from_dict(req["problem"])
        variant = variant_from_dict(req["variant"])
        case_index = int(req.get("case", 0))
        device_index = int(req.get("device_index", 0))
        case, launch = problem.cases[case_index], variant.launches[case_index]
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        print(f"sanitize_launch: malformed request {argv[1]}: {exc}", file=sys.stderr)
        return EXIT_BAD_REQUEST

    from dataclasses import replace  # noqa: PLC0415

    from gpu_runner.compiler import compile_variant  # noqa: PLC0415
    from gpu_runner.inputs import make_inputs  # noqa: PLC0415
    from gpu_runner.launch import DEFAULT_DYNAMIC_SHARED  # noqa: PLC0415
    from gpu_runner.session import GpuSession  # noqa: PLC0415

    options = tuple(variant.options) + (() if "-lineinfo" in variant.options else ("-lineinfo",))
    built = replace(variant, source=line_mapped_source(variant.source), options=options)
    session = GpuSession(device_index)
    try:
        with session.active():
            compiled = compile_variant(session, built, cache_dir=False)
            if not compiled.report.ok:
                print(f"sanitize_launch: {compiled.report.log}", file=sys.stderr)
                return EXIT_VARIANT_FAILED
            drv, fn = session.drv, compiled.function
            allocs = {}
            try:
                allocs, args = _exact_buffers(drv, case, make_inputs(case, problem.seeds[0]))
                if launch.shared_bytes > DEFAULT_DYNAMIC_SHARED:
                    fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     launch.shared_bytes)
                fn(*args, grid=tuple(launch.grid), block=tuple(launch.block),
                   shared=launch.shared_bytes, stream=session.stream)
                session.stream.synchronize()
            except (drv.Error, ValueError, MemoryError) as exc:
                print(f"sanitize_launch: {variant.label} on case '{case.label}': {exc}",
                      file=sys.stderr)
                return EXIT_KERNEL_FAILED
            finally:
                for alloc in allocs.values():
                    try:
                        alloc.free()
                    except drv.Error:
                        pass
    finally:
        try:
            session.close()
        except Exception:  # noqa: BLE001 - a faulted context may not close; the process ends
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The standalone launch script ``gpu_runner.profile`` runs under Nsight Compute.

``python -m gpu_runner.profile_launch REQUEST.json``: REQUEST (written by ``profile``) holds a
``Problem`` and one ``Variant`` (``problem.to_dict`` form) and a device index. The script
compiles the variant for the device, fills the timed case's buffers from the first seed's
inputs, launches the kernel once unprofiled (module loading and first-launch costs stay out of
the profile), restores the inputs, then launches it once more between ``cuProfilerStart`` and
``cuProfilerStop``: with ``ncu --profile-from-start off`` that launch is the only one profiled.

Exit status: 0 profiled; 3 the variant did not compile or launch (the reason on stderr); 2 a
malformed request. Nothing is printed to stdout, which is ncu's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpu_runner.problem import problem_from_dict, variant_from_dict

EXIT_BAD_REQUEST = 2
EXIT_VARIANT_FAILED = 3


def _profiler(lib, name: str) -> None:
    code = getattr(lib, name)()
    if code != 0:
        raise RuntimeError(f"{name} returned CUresult {code}")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m gpu_runner.profile_launch REQUEST.json", file=sys.stderr)
        return EXIT_BAD_REQUEST
    try:
        req = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        problem = problem_from_dict(req["problem"])
        variant = variant_from_dict(req["variant"])
        device_index = int(req.get("device_index", 0))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"profile_launch: malformed request {argv[1]}: {exc}", file=sys.stderr)
        return EXIT_BAD_REQUEST

    from gpu_runner.buffers import DeviceBuffers
    from gpu_runner.compiler import compile_variant
    from gpu_runner.inputs import make_inputs
    from gpu_runner.l2flush import _load_libcuda
    from gpu_runner.launch import launch_kernel
    from gpu_runner.session import GpuSession, LaunchFailure

    session = GpuSession(device_index)
    try:
        with session.active():
            compiled = compile_variant(session, variant)
            if not compiled.report.ok:
                print(f"profile_launch: {compiled.report.log}", file=sys.stderr)
                return EXIT_VARIANT_FAILED
            drv, stream = session.drv, session.stream
            case = problem.timed_case
            bufs = DeviceBuffers(drv, case, make_inputs(case, problem.seeds[0]))
            lib = _load_libcuda()
            try:
                launch_kernel(drv, compiled.function, bufs, variant.launches[0], stream)
                stream.synchronize()
                bufs.restore(stream)
                bufs.poison(stream)
                stream.synchronize()
                _profiler(lib, "cuProfilerStart")
                launch_kernel(drv, compiled.function, bufs, variant.launches[0], stream)
                stream.synchronize()
                _profiler(lib, "cuProfilerStop")
            except (LaunchFailure, drv.Error) as exc:
                print(f"profile_launch: {variant.label}: {exc}", file=sys.stderr)
                return EXIT_VARIANT_FAILED
            finally:
                bufs.free()
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""A stand-in for compute-sanitizer, for tests without a GPU.

Called as ``gpu_runner.sanitize`` calls compute-sanitizer (``--tool TOOL ... --error-exitcode
N <python> -m gpu_runner.sanitize_launch REQUEST``), it reads the request file and prints, in
compute-sanitizer's text format, one record for each line of the variant's source that holds
the marker of the tool: ``@race`` (racecheck), ``@oob`` (memcheck, an out-of-bounds read),
``@uninit`` (initcheck), ``@barrier`` (synccheck), each at that line of
``cudalens-variant.cu``; it then exits with N when it printed any, else 0. ``@nocompile`` in
the source makes it fail as the launch script does for a compile error (exit 3), ``@sleep``
makes it sleep 30 s first. It imports nothing outside the standard library.
"""

import json
import re
import sys
import time

MARKERS = {"racecheck": "@race", "memcheck": "@oob", "initcheck": "@uninit",
           "synccheck": "@barrier"}
P = "========="


def record(tool: str, func: str, where: str) -> list[str]:
    if tool == "racecheck":
        return [f"{P} Error: Race reported between Write access at {func}+0x2b0 in {where}",
                f"{P}     and Read access at {func}+0x2f0 in {where} [96 hazards]", P]
    head = {"memcheck": "Invalid __global__ read of size 4 bytes",
            "initcheck": "Uninitialized __global__ memory read of size 4 bytes",
            "synccheck": "Barrier error detected. Divergent thread(s) in warp"}[tool]
    out = [f"{P} {head}", f"{P}     at {func}+0x90 in {where}",
           f"{P}     by thread (7,0,0) in block (2,0,0)"]
    if tool == "memcheck":
        out += [f"{P}     Address 0x7f0000000fa0 is out of bounds",
                f"{P}     and is 1 bytes after the nearest allocation at 0x7f0000000000 of "
                f"size 4000 bytes"]
    out += [f"{P}     Saved host backtrace up to driver entry point at kernel launch time",
            f"{P}     Host Frame: [0x2f3c5a] in libcuda.so.1", P]
    return out


def main(argv: list[str]) -> int:
    tool = argv[argv.index("--tool") + 1]
    error_code = int(argv[argv.index("--error-exitcode") + 1])
    request = json.loads(open(argv[-1], encoding="utf-8").read())
    variant = request["variant"]
    source = variant["source"]
    if "@sleep" in source:
        time.sleep(30)
    if "@nocompile" in source:
        print(f"{P} COMPUTE-SANITIZER")
        print("sanitize_launch: nvcc failed for variant 'baseline':\n"
              "kernel.cu(3): error: identifier \"q\" is undefined", file=sys.stderr)
        print(f"{P} Target application returned an error")
        print(f"{P} ERROR SUMMARY: 0 errors")
        return 3
    func = re.sub(r"\W", "_", variant["name"]) + "(float *)"
    lines = []
    for number, text in enumerate(source.splitlines(), 1):
        if MARKERS[tool] in text:
            lines += record(tool, func, f"/tmp/cudalens-fake/cudalens-variant.cu:{number}")
    print(f"{P} COMPUTE-SANITIZER")
    print("\n".join(lines))
    errors = sum(1 for ln in lines if not ln.startswith(f"{P}  ") and ln != P)
    if tool == "racecheck":
        print(f"{P} RACECHECK SUMMARY: {errors} hazards displayed ({errors} errors, 0 warnings)")
    else:
        print(f"{P} ERROR SUMMARY: {errors} error{'s' if errors != 1 else ''}")
    return error_code if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""A user's program for the capture tests (TEST-ONLY): instead of launching a kernel under the
injected recorder, it writes what the recorder would (``tests/capture_fakes.write_saxpy_record``:
one launch of ``saxpy`` with ``n`` elements) into ``$CUDALENS_CAPTURE_DIR``.

It also writes an LSP-looking header to stdout and reads stdin to its end, as a program may:
under the language server neither may reach the LSP stream. Options: ``--n N`` (elements,
default 1000); ``--fail STATUS`` (write two stderr lines and exit
with STATUS, recording nothing); ``--hang PIDFILE`` (start a child process, write both process
ids to PIDFILE, print a line to stderr every 0.1 s and never end, for cancel tests).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).absolute().parents[2]))  # tests/, for capture_fakes

from capture_fakes import write_saxpy_record  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--fail", type=int, default=0)
    ap.add_argument("--hang", type=Path)
    args = ap.parse_args()
    sys.stderr.write("loading the model\n")
    sys.stderr.flush()
    if args.fail:
        sys.stderr.write("RuntimeError: CUDA error: out of memory\n")
        return args.fail
    if args.hang:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        args.hang.write_text(f"{os.getpid()} {child.pid}\n")
        step = 0
        while True:
            step += 1
            sys.stderr.write(f"training step {step}\n")
            sys.stderr.flush()
            time.sleep(0.1)
    # a real program prints to stdout and may read stdin: under the language server neither
    # may touch the LSP stream (stdin at once at its end, stdout discarded)
    sys.stdout.write("Content-Length: 5\r\n\r\nhello epoch 1: loss 0.25\n")
    sys.stdout.flush()
    read = sys.stdin.read()
    sys.stderr.write(f"stdin gave {len(read)} bytes\n")
    write_saxpy_record(Path(os.environ["CUDALENS_CAPTURE_DIR"]), args.n)
    sys.stderr.write("done\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

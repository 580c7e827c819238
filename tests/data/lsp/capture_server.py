"""``cudalens lsp`` for the capture tests (TEST-ONLY): the real server, except that the recorder
library is not built or checked for a CUDA driver (``capture.session.prepare_recorder`` returns
a placeholder path), since the program it captures is ``fake_capture_program.py``, which
writes the recorder's output itself and never loads the library. Everything else (the lens,
the command, the program run in its own process group, the collection of the recorder's
output, the capture files, the draft, Optimize's replay) is the real code.

Run as ``python capture_server.py [cudalens lsp options]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import cudalens.capture.session as capture_session
from cudalens.cli_lsp import lsp

PLACEHOLDER = Path("/nonexistent/cudalens-test-recorder.so")


def _placeholder(nvcc: str = "nvcc") -> Path:
    return PLACEHOLDER


if __name__ == "__main__":
    capture_session.prepare_recorder = _placeholder
    sys.exit(lsp.main(sys.argv[1:], standalone_mode=True))

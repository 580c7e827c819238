"""``child_signals.sigint_as_on_a_terminal`` gives a child SIGINT's default disposition (and so
Python's KeyboardInterrupt) even when the test process ignores SIGINT, as a background job
of a non-interactive shell does."""

from __future__ import annotations

import signal
import subprocess
import sys

from child_signals import sigint_as_on_a_terminal

SHOW = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, " \
       "signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"


def _child_sees(**popen) -> str:
    return subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True,
                          check=True, timeout=60, **popen).stdout.strip()


def test_a_child_gets_the_default_sigint_when_the_parent_ignores_it():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert _child_sees() == "False True"  # what the tests met: SIGINT ignored in the child
        assert _child_sees(preexec_fn=sigint_as_on_a_terminal) == "True False"
    finally:
        signal.signal(signal.SIGINT, previous)

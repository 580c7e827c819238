"""Children that a test interrupts get SIGINT as a terminal gives it, however the test run
was started.

A process started with SIGINT ignored (a background job of a non-interactive shell:
``bash -c 'pytest ... &'``, or ``nohup``) passes the ignored disposition on to every child,
and Python keeps it: SIGINT then does nothing to a ``cudalens`` the test started, and a test
that sends it waits for an exit that never comes. ``sigint_as_on_a_terminal`` is a
``preexec_fn`` that puts back the default disposition in the child before it starts (Python
installs its KeyboardInterrupt handler only over the default one). ``sigint_ignored`` does the
opposite, for a test of what such a background job must do: stay immune to SIGINT.
"""

from __future__ import annotations

import signal


def sigint_as_on_a_terminal() -> None:
    """``subprocess.Popen(..., preexec_fn=sigint_as_on_a_terminal)``: SIGINT at its default
    disposition (SIG_DFL) in the child. Only async-signal-safe work: one sigaction call."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def sigint_ignored() -> None:
    """``subprocess.Popen(..., preexec_fn=sigint_ignored)``: the child starts with SIGINT
    ignored (SIG_IGN), as a background job of a non-interactive shell does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

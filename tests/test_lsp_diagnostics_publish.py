"""``Diagnostics.publish`` sends a document's merged diagnostics only when they (or the version
they are for) changed: analysis, results and compile checks each ask for a publish, and an
editor need not redraw the same squiggles three or four times. After ``forget`` (the document
closed) the next publish is sent again."""

from __future__ import annotations

import types as pytypes
from pathlib import Path

from lsprotocol import types

from cudalens.lsp.diagnostics import Diagnostics
from cudalens.lsp.documents import analyze

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class _Session:
    """What ``Diagnostics`` is given: the current snapshot, settings, statuses and the
    publish call (recorded); nothing is shown (no notifier call is expected)."""

    def __init__(self, snapshot):
        self.current = snapshot
        self.sent: list[types.PublishDiagnosticsParams] = []
        self.settings = pytypes.SimpleNamespace(check_enabled=False, debounce_ms=0)

    def diagnostics(self) -> Diagnostics:
        return Diagnostics(None, self.sent.append, settings=lambda: self.settings,
                           snapshot=lambda uri: self.current, statuses=lambda snapshot: [],
                           executor=None)


def _snapshot(text: str, version: int):
    path = EXAMPLES / "saxpy.cu"
    return analyze(path.as_uri(), path, version, text, "utf-16")


def test_an_unchanged_set_is_sent_once_per_version_and_again_after_forget():
    text = (EXAMPLES / "saxpy.cu").read_text()
    session = _Session(_snapshot(text, 1))
    diags = session.diagnostics()
    uri = session.current.uri
    diags.publish(uri)
    diags.publish(uri)
    diags.schedule(uri)  # check off: publishes what it has, which has not changed
    assert [(p.uri, p.version, p.diagnostics) for p in session.sent] == [(uri, 1, [])]
    session.current = _snapshot(text + "\n", 2)  # a new version: sent, though still empty
    diags.publish(uri)
    assert [p.version for p in session.sent] == [1, 2]
    diags.forget(uri)  # closing clears the editor's list ...
    diags.publish(uri)  # ... so the next publish is sent even though nothing else changed
    assert [(p.version, p.diagnostics) for p in session.sent] == \
        [(1, []), (2, []), (None, []), (2, [])]

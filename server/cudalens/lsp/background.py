"""A language-server part's background runs: one at a time, in a thread of the part's own
(``cudalens-KIND``), each shown as a work-done progress whose token is ``cudalens/KIND/N``.

A run that fails ends with a message and the progress' end, never the server; one that is
cancelled ends its progress saying so; once the part is shut down (``shutdown``) nothing more
is told. ``lsp/capture_action.py`` (``Captures``) and ``lsp/sanitize_action.py``
(``SanitizerChecks``) each hold one; ``Words`` says how their messages name the work;
``open_kernel`` finds the document and kernel their ``start`` runs on.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from lsprotocol import types

from cudalens.errors import CudalensError

if TYPE_CHECKING:
    from cudalens.lsp.commands import KernelArgs
    from cudalens.lsp.documents import DocumentSnapshot, KernelView
    from cudalens.lsp.notifier import Notifier


@dataclass(frozen=True)
class Words:
    """How a part's messages name its work: ``verb`` in ``cudalens: cannot VERB: REASON``,
    ``done`` in ``cudalens: NAME was not DONE: WHY`` and the progress' ``NAME: not DONE``,
    ``doing`` in the log's ``DOING NAME failed``; ``failure``: that message's severity."""

    verb: str
    done: str
    doing: str
    failure: types.MessageType


def open_kernel(snapshot: Optional["DocumentSnapshot"],
                args: "KernelArgs") -> tuple["DocumentSnapshot", "KernelView"]:
    """``snapshot`` (the session's snapshot of ``args.uri``, None when the client has no CUDA
    document open there) and its kernel ``args.kernel``: what a part's ``start`` runs on.

    Raises:
        KeyError: ``args[0]`` says why: ``URI is not an open CUDA document``, or the document
            has no such kernel (``DocumentSnapshot.kernel``'s message).
    """
    if snapshot is None:
        raise KeyError(f"{args.uri} is not an open CUDA document")
    return snapshot, snapshot.kernel(args.kernel)


class Background:
    """The background runs of one part (module doc); ``log`` is the part's logger (a failure
    that is not a ``CudalensError`` is logged there with its traceback)."""

    def __init__(self, notifier: "Notifier", kind: str, words: Words, log: logging.Logger):
        self.notifier = notifier
        self.words = words
        self._kind = kind
        self._log = log
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"cudalens-{kind}")
        self._ids = itertools.count(1)
        self.closed = False

    def token(self) -> str:
        """A new run's progress token, ``cudalens/KIND/N``."""
        return f"cudalens/{self._kind}/{next(self._ids)}"

    async def run(self, token: str, name: str, work: Callable[[], Any], *,
                  after: Callable[[], None],
                  cancelled: tuple[type[BaseException], ...] = (),
                  cancelled_end: str = "") -> tuple[bool, Any]:
        """Runs ``work()`` in the part's thread for the kernel ``name``, its progress
        ``token`` begun.

        Returns ``(True, its result)``; ``(False, None)`` when it raised (one of
        ``cancelled``: the progress ends with ``cancelled_end``; anything else: a message and
        the progress' end, as ``Words`` says) or the part was shut down meanwhile. ``after()``
        runs once the work is over, however it ended, after those are told.
        """
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._executor, work)
        except cancelled:
            if not self.closed:
                self.notifier.progress_end(token, cancelled_end)
            return False, None
        except Exception as exc:  # noqa: BLE001 - any failure ends this run, not the server
            self._failed(token, name, exc)
            return False, None
        finally:
            after()
        if self.closed:
            return False, None
        return True, result

    def _failed(self, token: str, name: str, exc: Exception) -> None:
        words = self.words
        text = str(exc).strip() or type(exc).__name__
        if not isinstance(exc, CudalensError):
            self._log.warning("%s %s failed", words.doing, name, exc_info=True)
            text = f"{type(exc).__name__}: {text}"
        if not self.closed:
            self.notifier.show_message(f"cudalens: {name} was not {words.done}: {text}",
                                       words.failure)
            self.notifier.progress_end(token, f"{name}: not {words.done}")

    def refuse(self, reason: str) -> dict[str, Any]:
        """The answer of a command that did not start a run, the reason shown as a warning."""
        self.notifier.show_message(f"cudalens: cannot {self.words.verb}: {reason}",
                                   types.MessageType.Warning)
        return {"ok": False, "reason": reason}

    def shutdown(self) -> None:
        """Nothing more is told; runs not begun are dropped (the one running is the part's to
        cancel)."""
        self.closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)

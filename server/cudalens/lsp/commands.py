"""The server's ``workspace/executeCommand`` commands and their one argument.

Every command takes a single JSON object: ``{"uri": ..., "kernel": ..., "candidate": ...,
"version": ...}`` (``candidate``: a candidate id; ``version``: the document version the lens
or code action was made for). Code lenses and code actions build them with ``arguments``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

OPTIMIZE = "cudalens.optimize"
APPLY = "cudalens.apply"
REJECT = "cudalens.reject"
SHOW_DIFF = "cudalens.showDiff"
CANCEL = "cudalens.cancel"
OPEN_SPEC = "cudalens.openSpec"  # argument: {"uri": the spec file's URI}

ALL = (OPTIMIZE, APPLY, REJECT, SHOW_DIFF, CANCEL)


class CommandError(JsonRpcInvalidParams, ValueError):
    """A command's argument is malformed; the message says what was expected and found.

    A ``JsonRpcInvalidParams``: raised from a command handler, pygls answers the request with
    error -32602 and this message (no traceback)."""


@dataclass(frozen=True)
class KernelArgs:
    uri: str
    kernel: str
    candidate: str = ""
    version: Optional[int] = None

    def to_json(self) -> dict:
        d: dict[str, Any] = {"uri": self.uri, "kernel": self.kernel}
        if self.candidate:
            d["candidate"] = self.candidate
        if self.version is not None:
            d["version"] = self.version
        return d


def parse_args(command: str, args: tuple, need_candidate: bool = False) -> KernelArgs:
    """The ``KernelArgs`` of one command invocation.

    Raises:
        CommandError: not exactly one object with string ``uri`` and ``kernel`` (and
            ``candidate`` when ``need_candidate``), or a non-integer ``version``.
    """
    if len(args) != 1 or not isinstance(args[0], dict):
        raise CommandError(f"{command}: expected one argument, an object with uri and kernel, "
                           f"found {_brief(list(args))}")
    a = args[0]
    for name in ("uri", "kernel") + (("candidate",) if need_candidate else ()):
        if not isinstance(a.get(name), str) or not a.get(name):
            raise CommandError(f"{command}: expected a string '{name}' in the argument, found "
                               f"{a.get(name)!r}")
    version = a.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise CommandError(f"{command}: expected an integer 'version', found {_brief(version)}")
    return KernelArgs(uri=a["uri"], kernel=a["kernel"], candidate=a.get("candidate") or "",
                      version=version)


def parse_open_spec(args: tuple) -> str:
    """The spec file URI of a ``cudalens.openSpec`` invocation.

    Raises:
        CommandError: not exactly one object with a ``file:`` URI string ``uri``.
    """
    if len(args) != 1 or not isinstance(args[0], dict):
        raise CommandError(f"{OPEN_SPEC}: expected one argument, an object with uri, "
                           f"found {_brief(list(args))}")
    uri = args[0].get("uri")
    if not isinstance(uri, str) or not uri.startswith("file:"):
        raise CommandError(f"{OPEN_SPEC}: expected a file: URI string 'uri' in the argument, "
                           f"found {_brief(uri)}")
    return uri


def _brief(value: Any, limit: int = 80) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def command(title: str, name: str, args: KernelArgs) -> types.Command:
    return types.Command(title=title, command=name, arguments=[args.to_json()])

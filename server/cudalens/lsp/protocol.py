"""The JSON-RPC protocol of the server: pygls's, except that a message whose params do not
fit the method's type is answered instead of dropped.

pygls 2.x turns a message's JSON into typed params in ``structure_message`` (the
``object_hook`` of ``json.loads`` in ``pygls.io_.run_async``); when that fails (a position
with ``line: -1``, ``params: null`` for a hover, a string where a number goes) it raises,
the read loop logs it and pops up "Error in server: Invalid Params", and a request never
gets its response: the client waits forever. Here such a message becomes a ``Rejected``
value instead; ``handle_message`` answers a rejected request with error -32602
(InvalidParams, JSON-RPC 2.0 section 5.1) and a one-line message naming the method, what was
expected and where (``$.params.position``), and logs a rejected notification (it has no one
to answer) as a warning in the client's log. A body that is not JSON at all is answered with
-32700 and ``"id": null`` (``answer_parse_error``, from the server's error reporter) instead
of a pop-up.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional, Union

from cattrs import transform_error
from cattrs.errors import BaseValidationError
from cattrs.v import format_exception
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)

PARSE_ERROR = -32700  # JSON-RPC 2.0, section 5.1

# at most this many problems are named in one error message
MAX_PROBLEMS = 3


@dataclass(frozen=True)
class Rejected:
    """A message whose params could not be read as its method's type.

    id: the request id; None for a notification.
    code: the JSON-RPC error code to answer with (-32602, or -32603 for other failures).
    """

    id: Optional[Union[int, str]]
    method: str
    code: int
    message: str


def describe(method: str, exc: BaseException) -> str:
    """``textDocument/hover: invalid params: Position.line should be in range
    [0:2147483647], but was -1. @ $.params.position`` (one line; at most ``MAX_PROBLEMS``
    problems, then how many more)."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    if isinstance(cause, BaseValidationError):
        problems = transform_error(cause, path="$", format_exception=_format)
    else:
        problems = [str(cause) or type(cause).__name__]
    text = "; ".join(_json_names(p.replace("\n", " ")) for p in problems[:MAX_PROBLEMS])
    if len(problems) > MAX_PROBLEMS:
        text += f"; and {len(problems) - MAX_PROBLEMS} more"
    return f"{method}: invalid params: {text}"


def _json_names(problem: str) -> str:
    """``... @ $.params.text_document`` -> ``... @ $.params.textDocument``: the path with the
    JSON field names lsprotocol maps its attributes to (camelCase, no trailing ``_``)."""
    what, sep, path = problem.rpartition(" @ ")
    if not sep:
        return problem
    parts = []
    for part in path.split("."):
        head, *rest = part.rstrip("_").split("_")
        parts.append(head + "".join(w[:1].upper() + w[1:] for w in rest))
    return f"{what}{sep}{'.'.join(parts)}"


def _format(exc: BaseException, type_: Any) -> str:
    # lsprotocol's validators raise ValueError with a readable sentence ("Position.line
    # should be in range [0:2147483647], but was -1."), with no type: keep it; a failed
    # conversion to a type (int("a")) reads better as cattrs says it
    if type_ is None and isinstance(exc, ValueError) and not isinstance(exc, BaseValidationError):
        return str(exc)
    return format_exception(exc, type_)


class CudalensProtocol(LanguageServerProtocol):
    """``LanguageServerProtocol`` that answers requests whose params cannot be read."""

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not isinstance(data.get("method"), str):
                raise  # a response from the client: pygls's handling stands
            code = exc.code if isinstance(exc, JsonRpcInvalidParams) else JsonRpcInvalidParams.CODE
            msg_id = data.get("id")
            if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
                msg_id = None
            return Rejected(id=msg_id, method=data["method"], code=code,
                            message=describe(data["method"], exc))

    def handle_message(self, message):
        if not isinstance(message, Rejected):
            super().handle_message(message)
            return
        log.warning("%s", message.message)
        if message.id is not None:
            self._send_response(message.id, error=types.ResponseError(
                code=message.code, message=message.message))
        else:
            self.notify(types.WINDOW_LOG_MESSAGE, types.LogMessageParams(
                type=types.MessageType.Warning, message=f"cudalens: ignored {message.message}"))

    def answer_parse_error(self, error: Exception) -> None:
        """Answers a message body that is not JSON with error -32700 (Parse error) and
        ``"id": null``, as JSON-RPC 2.0 section 5 says (the id cannot be read)."""
        message = f"parse error: the message body is not JSON: {error}"
        log.warning("%s", message)
        self._send_data({"jsonrpc": "2.0", "id": None,
                         "error": {"code": PARSE_ERROR, "message": message}})

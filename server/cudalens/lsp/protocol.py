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
of a pop-up. None of these logs a traceback at the default level: one warning line each,
the traceback at debug.

Documents: a ``didChange`` for a document that was never opened is logged and dropped (pygls
raised KeyError and popped up "Error in server"); lone surrogates in a document's text become
U+FFFD (``incoming``) before pygls stores it.

Responses from the client: an answer whose result cannot be read as the request's result type
resolves the waiting request instead of leaving it waiting forever: ``null`` as ``None``,
anything else as an error (-32603). ``shutdown`` cancels what is still pending over a copy
of the pending requests (pygls iterated the live dict, which the cancellations change).
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Optional, Union
from urllib.parse import unquote

import attrs
from cattrs import transform_error
from cattrs.errors import BaseValidationError
from cattrs.v import format_exception
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import (JsonRPCNotification, JsonRPCRequestMessage,
                                     JsonRPCResponseMessage)
from pygls.protocol.language_server import lsp_method

from cudalens.lsp.incoming import without_lone_surrogates

log = logging.getLogger(__name__)

PARSE_ERROR = -32700  # JSON-RPC 2.0, section 5.1
INTERNAL_ERROR = -32603  # JSON-RPC 2.0, section 5.1

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
    cause = exc.__cause__ if isinstance(exc, JsonRpcException) and exc.__cause__ is not None \
        else exc
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
        if "jsonrpc" not in data:
            return data  # an inner object of the message: pygls's hook passes it on
        if isinstance(data.get("method"), str):
            return self._structure_incoming(data)
        if "id" in data and "error" not in data:
            return self._structure_response(data)
        return super().structure_message(data)

    def _structure_incoming(self, data: dict[str, Any]):
        """A request or notification from the client, or ``Rejected``."""
        method = data["method"]
        try:
            return self._converter.structure(data, self.get_message_type(method)
                                             or _generic_type(data))
        except Exception as exc:  # noqa: BLE001 - any failure to read it is answered
            log.debug("cannot read %s", method, exc_info=True)
            msg_id = data.get("id")
            if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
                msg_id = None
            return Rejected(id=msg_id, method=method, code=JsonRpcInvalidParams.CODE,
                            message=describe(method, exc))

    def _structure_response(self, data: dict[str, Any]):
        """The client's result for one of the server's requests. A result the request's type
        cannot hold resolves the request all the same: ``null`` as None, else as an error."""
        msg_id = data["id"]
        result_type = self._result_types.pop(msg_id, None) or JsonRPCResponseMessage
        try:
            return self._converter.structure(data, result_type)
        except Exception as exc:  # noqa: BLE001 - the waiting request must be resolved
            log.debug("cannot read the answer to request %s", msg_id, exc_info=True)
            result = data.get("result")
            if result is None:
                log.warning("the client answered request %s with null where a %s was "
                            "expected; taken as no result", msg_id, result_type.__name__)
                return JsonRPCResponseMessage(id=msg_id, jsonrpc=data.get("jsonrpc", "2.0"),
                                              result=None)
            message = (f"the client's answer to request {msg_id} is not a "
                       f"{result_type.__name__}: {describe('response', exc)}")
            log.warning("%s", message)
            return types.ResponseErrorMessage(
                id=msg_id, error=types.ResponseError(code=INTERNAL_ERROR, message=message))

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

    def _send_handler_result(self, future, *, msg_id):
        """pygls's, except that a request refused with a JSON-RPC error (bad arguments) is
        answered with it and logged in one line, its traceback at debug only."""
        if not future.cancelled() and isinstance(future.exception(), JsonRpcException):
            exc = future.exception()
            self._request_futures.pop(msg_id, None)
            log.warning("request %s refused: %s", msg_id, exc.message or type(exc).__name__)
            log.debug("request %s refused", msg_id, exc_info=exc)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args) -> Generator[Any, Any, None]:
        """pygls's ``shutdown``: the user's handler, then every other pending request is
        cancelled (iterating over a copy: a cancellation may end a request, which removes it
        from the dict)."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        """pygls's, with lone surrogates in the text replaced (``incoming``)."""
        item = params.text_document
        text, replaced = without_lone_surrogates(item.text)
        if replaced:
            self._say_replaced(types.TEXT_DOCUMENT_DID_OPEN, item.uri, replaced)
            params = attrs.evolve(params, text_document=attrs.evolve(item, text=text))
        yield from super().lsp_text_document__did_open(params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        """pygls's, except that a change for a document that is not open is logged and
        dropped, and lone surrogates in the changes' text are replaced (``incoming``)."""
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:
            self._log_to_client(types.MessageType.Warning,
                                f"cudalens: ignored {types.TEXT_DOCUMENT_DID_CHANGE} for {uri}: "
                                "the document is not open (the client sent no didOpen for it)")
            return
        changes, total = [], 0
        for change in params.content_changes:
            text, replaced = without_lone_surrogates(change.text)
            total += replaced
            changes.append(attrs.evolve(change, text=text) if replaced else change)
        if total:
            self._say_replaced(types.TEXT_DOCUMENT_DID_CHANGE, uri, total)
            params = attrs.evolve(params, content_changes=changes)
        yield from super().lsp_text_document__did_change(params)

    def _say_replaced(self, method: str, uri: str, count: int) -> None:
        self._log_to_client(types.MessageType.Warning,
                            f"cudalens: {method} for {uri} carried {count} lone UTF-16 "
                            f"surrogate(s), which are not text; each is kept as U+FFFD")

    def _log_to_client(self, kind: types.MessageType, message: str) -> None:
        log.warning("%s", message)
        self.notify(types.WINDOW_LOG_MESSAGE, types.LogMessageParams(type=kind, message=message))

    def answer_parse_error(self, error: Exception) -> None:
        """Answers a message body that is not JSON with error -32700 (Parse error) and
        ``"id": null``, as JSON-RPC 2.0 section 5 says (the id cannot be read)."""
        message = f"parse error: the message body is not JSON: {error}"
        log.warning("%s", message)
        self._send_data({"jsonrpc": "2.0", "id": None,
                         "error": {"code": PARSE_ERROR, "message": message}})


def _generic_type(data: dict[str, Any]) -> type:
    """pygls's fallback type for a method lsprotocol does not know."""
    return JsonRPCRequestMessage if "id" in data else JsonRPCNotification

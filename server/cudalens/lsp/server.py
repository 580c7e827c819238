"""The LSP wiring: which request or notification goes to which feature. Nothing else.

``build_server(runner_factory)`` returns a pygls ``LanguageServer``; ``cudalens lsp`` starts
it on stdio. ``runner_factory(settings)`` returns the ``cudalens.engine.runner.Runner`` the
optimize jobs run on; the default is ``default_runner_factory``, tests inject the model
runner.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Optional

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from cudalens.lsp import candidates, code_actions, code_lens, commands, config, hover, inlay_hints
from cudalens.lsp import capture_action, editor_support, plan_hover, report_view, sanitize_action
from cudalens.lsp.commands import CommandError, parse_args
from cudalens.lsp.config import Settings
from cudalens.lsp.jobs import RunnerFactory
from cudalens.lsp.protocol import CudalensProtocol
from cudalens.lsp.session import Session, workspace_roots

log = logging.getLogger(__name__)

try:
    from importlib.metadata import version as _version

    VERSION = _version("cudalens")
except Exception:  # noqa: BLE001 - running from a source tree
    VERSION = "0.0.0"


def default_runner_factory(settings: Settings) -> Any:
    """The runner client for ``settings``: the runner service at ``runner.url`` with its
    token, or the local GPU when no URL is set.

    Raises:
        RunnerUnavailable: no runner can be used (no GPU, pycuda missing, ...).
    """
    from cudalens.runner_client import RunnerClient

    if settings.runner_url:
        return RunnerClient(url=settings.runner_url, token=settings.runner_token or None)
    return RunnerClient()


class CudalensServer(LanguageServer):
    """pygls server with the cudalens session attached after ``initialize``."""

    def __init__(self, runner_factory: RunnerFactory):
        super().__init__("cudalens", VERSION,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=CudalensProtocol)
        self.runner_factory = runner_factory
        self.session: Optional[Session] = None
        self.sanitizer: Optional[sanitize_action.SanitizerChecks] = None
        self.captures: Optional[capture_action.Captures] = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls's reporter, except that a message body that is not JSON is answered with a
        JSON-RPC parse error (-32700) instead of an "Error in server" pop-up."""
        if isinstance(error, json.JSONDecodeError) and isinstance(self.protocol, CudalensProtocol):
            self.protocol.answer_parse_error(error)
            return
        super().report_server_error(error, source)


def build_server(runner_factory: Optional[RunnerFactory] = None) -> CudalensServer:
    server = CudalensServer(runner_factory or default_runner_factory)

    def session() -> Session:
        if server.session is None:
            raise RuntimeError("expected initialize before any other request")
        return server.session

    # -- lifecycle ---------------------------------------------------------------------------

    @server.feature(types.INITIALIZE)
    def initialize(ls: CudalensServer, params: types.InitializeParams) -> None:
        ls.session = Session(ls, ls.runner_factory, workspace_roots(params))
        s = ls.session
        ls.sanitizer = sanitize_action.SanitizerChecks(
            s.notifier, s.diagnostics, snapshot=s.snapshot, settings=lambda: s.settings,
            client=s.jobs._client)
        s.jobs.on_findings = ls.sanitizer.record  # findings of the check before an optimize job
        ls.captures = capture_action.Captures(s.notifier, snapshot=s.snapshot,
                                              settings=lambda: s.settings, roots=s.roots)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: CudalensServer, params: types.InitializedParams) -> None:
        session().watcher.start()
        await session().load_settings()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: CudalensServer, params: None) -> None:
        if ls.sanitizer is not None:
            ls.sanitizer.shutdown()
        if ls.captures is not None:
            ls.captures.shutdown()
        if ls.session is not None:
            ls.session.shutdown()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: CudalensServer,
                                       params: types.DidChangeConfigurationParams) -> None:
        await session().load_settings(config.pushed(params.settings))

    # -- documents ---------------------------------------------------------------------------

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CudalensServer, params: types.DidOpenTextDocumentParams) -> None:
        session().opened(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CudalensServer, params: types.DidChangeTextDocumentParams) -> None:
        session().changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CudalensServer, params: types.DidCloseTextDocumentParams) -> None:
        session().closed(params.text_document.uri)

    # -- features ----------------------------------------------------------------------------

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def lenses(ls: CudalensServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        s = session()
        snap = s.snapshot(params.text_document.uri)
        if snap is None:
            return []
        held = s.held(snap)
        held_statuses = s.statuses(held.last_good) if held is not None else []
        held_statuses = [st for st in held_statuses if held.find(st.name) is not None]
        held_jobs = {st.name: job for st in held_statuses
                     if (job := s.jobs.active(snap.uri, st.name)) is not None}
        return code_lens.code_lenses(snap, s.statuses(snap), s.jobs_of(snap.uri), held,
                                     held_statuses, held_jobs,
                                     open_spec=s.supports("window", "show_document", "support"),
                                     check=s.diagnostics.last_check(snap.uri),
                                     failures=s.jobs.failures_of(snap.uri)) \
            + capture_action.lenses(snap, s.roots,
                                    s.supports("window", "show_document", "support"))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=code_actions.KINDS))
    def actions(ls: CudalensServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        s = session()
        snap = s.snapshot(params.text_document.uri)
        if snap is None:
            return []
        statuses = s.statuses(snap)
        return code_actions.code_actions(snap, statuses, params.range, s.jobs_of(snap.uri),
                                         s.settings, s.spec_file,
                                         check=s.diagnostics.last_check(snap.uri)) + \
            sanitize_action.check_actions(snap, statuses, params.range)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    def hints(ls: CudalensServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        s = session()
        snap = s.snapshot(params.text_document.uri)
        if snap is None:
            return []
        return inlay_hints.inlay_hints(snap, s.statuses(snap), params.range)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: CudalensServer, params: types.HoverParams) -> Optional[types.Hover]:
        s = session()
        snap = s.snapshot(params.text_document.uri)
        if snap is None:
            return None
        statuses = s.statuses(snap)
        check = s.diagnostics.last_check(snap.uri)
        failures = s.jobs.failures_of(snap.uri)
        return plan_hover.with_plan(hover.hover(snap, statuses, params.position, check,
                                                failures),
                                    snap, statuses, params.position, check)

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(ls: CudalensServer, params: types.WorkDoneProgressCancelParams) -> None:
        job = session().jobs.find(str(params.token))
        if job is not None:
            session().jobs.cancel(job)
        elif ls.captures is not None:
            ls.captures.cancel(str(params.token))

    # -- commands ----------------------------------------------------------------------------

    def kernel_args(name: str, args: tuple, need_candidate: bool = False):
        try:
            return parse_args(name, args, need_candidate)
        except CommandError as exc:
            session().notifier.show_message(f"cudalens: {exc}", types.MessageType.Error)
            raise

    @server.command(commands.OPTIMIZE)
    async def cmd_optimize(ls: CudalensServer, *args: Any) -> dict:
        return await candidates.optimize(session(), kernel_args(commands.OPTIMIZE, args))

    @server.command(commands.CANCEL)
    def cmd_cancel(ls: CudalensServer, *args: Any) -> dict:
        return candidates.cancel(session(), kernel_args(commands.CANCEL, args))

    @server.command(commands.APPLY)
    async def cmd_apply(ls: CudalensServer, *args: Any) -> dict:
        return await candidates.apply(session(), kernel_args(commands.APPLY, args, True))

    @server.command(commands.REJECT)
    def cmd_reject(ls: CudalensServer, *args: Any) -> dict:
        return candidates.reject(session(), kernel_args(commands.REJECT, args, True))

    @server.command(commands.SHOW_DIFF)
    async def cmd_show_diff(ls: CudalensServer, *args: Any) -> dict:
        return await candidates.show_diff(session(), kernel_args(commands.SHOW_DIFF, args, True))

    @server.command(commands.OPEN_SPEC)
    async def cmd_open_spec(ls: CudalensServer, *args: Any) -> dict:
        spec_uri = commands.parse_open_spec(args)
        if not session().supports("window", "show_document", "support"):
            return {"shown": False, "reason": "the client cannot show documents"}
        try:
            result = await ls.window_show_document_async(
                types.ShowDocumentParams(uri=spec_uri, take_focus=True))
        except JsonRpcException as exc:
            return {"shown": False, "reason": f"the client refused window/showDocument: "
                                              f"{exc.message}"}
        if result is None:
            return {"shown": False, "reason": "the client answered window/showDocument with null"}
        return {"shown": bool(result.success)}

    @server.command(sanitize_action.CHECK)
    async def cmd_sanitize(ls: CudalensServer, *args: Any) -> dict:
        return await ls.sanitizer.start(kernel_args(sanitize_action.CHECK, args))

    @server.command(capture_action.CAPTURE)
    async def cmd_capture(ls: CudalensServer, *args: Any) -> dict:
        return await ls.captures.start(kernel_args(capture_action.CAPTURE, args))

    @server.command(editor_support.CANDIDATE_SOURCE)
    def cmd_candidate_source(ls: CudalensServer, *args: Any) -> dict:
        return editor_support.candidate_source(
            session(), kernel_args(editor_support.CANDIDATE_SOURCE, args, True))

    @server.command(report_view.KERNEL_REPORT)
    async def cmd_kernel_report(ls: CudalensServer, *args: Any) -> dict:
        return await report_view.kernel_report(session(),
                                               kernel_args(report_view.KERNEL_REPORT, args))

    @server.command(editor_support.RUNNER_STATUS)
    def cmd_runner_status(ls: CudalensServer, *args: Any) -> dict:
        return editor_support.runner_status(session())

    return server

"""Driving ``cudalens lsp`` end to end from tests: a pytest-lsp client that behaves like an
editor (it keeps the open documents, applies ``workspace/applyEdit`` only when the versions
match, sends the resulting ``didChange``), started against a server in a subprocess whose
runner is the deterministic model runner (``model_runner.py``: modelled times, NOT
measurements).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Optional, Union

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities

HERE = Path(__file__).absolute().parent
ROOT = HERE.parents[2]
EXAMPLES = ROOT / "examples"

# Fast, quiet defaults for tests; a test overrides what it is about.
TEST_SETTINGS = {"check": {"enabled": False, "debounceMs": 50},
                 "budget": {"candidates": 24, "repetitions": 50}}


def uri(path: Path) -> str:
    return from_fs_path(str(path))


def copy_example(dest: Path, name: str, with_spec: bool = True) -> Path:
    """Copies ``examples/NAME`` (and its spec) into ``dest``; returns the copy's path."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES / name, dest / name)
    if with_spec:
        shutil.copy(EXAMPLES / (name + ".spec"), dest / (name + ".spec"))
    return dest / name


def offset(text: str, pos: types.Position) -> int:
    """Character offset of an LSP (UTF-16) position in ``text``."""
    lines = text.split("\n")
    line = lines[pos.line] if pos.line < len(lines) else ""
    units = 0
    col = 0
    for ch in line:
        if units >= pos.character:
            break
        units += 2 if ord(ch) > 0xFFFF else 1
        col += 1
    return sum(len(text_line) + 1 for text_line in lines[:pos.line]) + col


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """``edits`` applied to ``text`` (all ranges refer to the original text)."""
    spans = sorted(((offset(text, e.range.start), offset(text, e.range.end), e.new_text)
                    for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


class EditorClient(LanguageClient):
    """A test client that keeps documents like an editor does."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.docs: dict[str, tuple[int, str]] = {}
        self.applied_edits: list[types.ApplyWorkspaceEditParams] = []
        self.refreshes = {"codeLens": 0, "inlayHint": 0}

    def open(self, path: Path, text: Optional[str] = None, version: int = 1) -> str:
        u = uri(path)
        text = path.read_text(encoding="utf-8") if text is None else text
        self.docs[u] = (version, text)
        self.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=u, language_id="cuda", version=version,
                                                 text=text)))
        return u

    def change(self, u: str, text: str) -> int:
        version = self.docs[u][0] + 1
        self.docs[u] = (version, text)
        self.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=u, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        return version

    def doc_version(self, u: str) -> int:
        return self.docs[u][0]

    def text(self, u: str) -> str:
        return self.docs[u][1]

    def apply_workspace_edit(self, params: types.ApplyWorkspaceEditParams
                             ) -> types.ApplyWorkspaceEditResult:
        self.applied_edits.append(params)
        changes = params.edit.document_changes or []
        for change in changes:  # check every version before changing anything
            if isinstance(change, types.TextDocumentEdit):
                want = change.text_document.version
                u = change.text_document.uri
                if want is not None and u in self.docs and self.docs[u][0] != want:
                    return types.ApplyWorkspaceEditResult(
                        applied=False, failure_reason=f"{u} is at version {self.docs[u][0]}, the "
                                                      f"edit is for version {want}")
        for change in changes:
            if isinstance(change, types.CreateFile):
                path = Path(change.uri.removeprefix("file://"))
                if not path.exists():
                    path.write_text("", encoding="utf-8")
            elif isinstance(change, types.TextDocumentEdit):
                u = change.text_document.uri
                if u in self.docs:
                    self.change(u, apply_text_edits(self.docs[u][1], list(change.edits)))
                else:  # not open: the editor writes it (as if opened, edited and saved)
                    path = Path(u.removeprefix("file://"))
                    path.write_text(apply_text_edits(path.read_text(encoding="utf-8"),
                                                     list(change.edits)), encoding="utf-8")
        return types.ApplyWorkspaceEditResult(applied=True)

    async def code_lenses(self, u: str) -> list[types.CodeLens]:
        return await self.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=u))) or []

    async def code_actions(self, u: str, line: int, character: int = 0) -> list[types.CodeAction]:
        pos = types.Position(line, character)
        return await self.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=u), range=types.Range(pos, pos),
            context=types.CodeActionContext(diagnostics=[]))) or []

    async def run(self, command: types.Command) -> Any:
        return await self.workspace_execute_command_async(types.ExecuteCommandParams(
            command=command.command, arguments=command.arguments))

    async def wait_for(self, predicate, timeout: float = 20.0, what: str = "a condition"):
        """Polls ``predicate()`` (sync or async) until truthy; returns its value."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            value = predicate()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            await asyncio.sleep(0.05)

    def diagnostics_for(self, u: str) -> list[types.Diagnostic]:
        return list(self.diagnostics.get(u, []))


def _make_client() -> EditorClient:
    from pygls.protocol import default_converter
    from pytest_lsp.client import register_lsp_features

    client = EditorClient(converter_factory=default_converter)
    register_lsp_features(client)
    converter = client.protocol._converter

    # lsprotocol reads any object with a "command" key as a Command, so a CodeAction that
    # carries a command would come back as a Command; an editor reads the JSON: tell them
    # apart as the spec does (a Command's "command" is a string).
    def command_or_action(obj: Any, _: type):
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], command_or_action)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply(ls: EditorClient, params: types.ApplyWorkspaceEditParams):
        return ls.apply_workspace_edit(params)

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(ls: EditorClient, params: None):
        ls.refreshes["codeLens"] += 1

    return client


def server_env(extra: Optional[dict[str, str]] = None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(ROOT / "server"), str(ROOT), str(HERE)]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


RUNNER_FACTORY = "model_runner:make_client"
SERVER_COMMAND = [sys.executable, "-m", "cudalens.cli_lsp", "--runner-factory", RUNNER_FACTORY,
                  "--log-level", "info"]


@asynccontextmanager
async def editor(workspace: Path, settings: Optional[dict] = None,
                 env: Optional[dict[str, str]] = None, capabilities: str = "visual-studio-code",
                 command: Optional[list[str]] = None):
    """A started, initialized server for ``workspace``; shut down on exit."""
    client = _make_client()
    client.set_configuration(settings if settings is not None else TEST_SETTINGS,
                             section="cudalens")
    await client.start_io(*(command or SERVER_COMMAND), env=server_env(env), cwd=str(workspace))
    caps = client_capabilities(capabilities)
    await client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=uri(workspace),
        workspace_folders=[types.WorkspaceFolder(uri=uri(workspace), name=workspace.name)]))
    try:
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()

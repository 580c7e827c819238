"""The CLI and the language server reach the optimizer and the runner only through the engine
(issue 12, docs/architecture.md "The engine"): no module of theirs imports
``cudalens.optimizer`` (passes, plans, contexts), and of ``gpu_runner`` only its wire contract
(the report's data classes, the typed events, the JSON schema, and the runner's own command).
Every import counts, module-level or inside a function (read with ``ast`` as in
``test_import_cycles``)."""

from __future__ import annotations

from test_import_cycles import PACKAGES, graph

# gpu_runner modules that are the runner's contract with its clients
RUNNER_CONTRACT = ("gpu_runner.report", "gpu_runner.events", "gpu_runner.service.schema",
                   "gpu_runner.service.command")


def _front_end(module: str) -> bool:
    parts = module.split(".")
    return module.startswith("cudalens.lsp.") or (
        len(parts) == 2 and parts[0] == "cudalens"
        and (parts[1] == "cli" or parts[1].startswith("cli_")))


def _internal(target: str) -> bool:
    if target == "cudalens.optimizer" or target.startswith("cudalens.optimizer."):
        return True
    return target.split(".")[0] == "gpu_runner" and not any(
        target == c or target.startswith(c + ".") for c in RUNNER_CONTRACT)


def test_the_cli_and_the_language_server_import_no_optimizer_or_runner_internals():
    nodes, edges = graph(PACKAGES)
    front = [n for n in nodes if _front_end(n)]
    assert "cudalens.cli" in front and "cudalens.lsp.jobs" in front and "cudalens.cli_plan" in front
    found = sorted(f"{e.path}:{e.line}: {e.source} imports {e.target}" for e in edges
                   if _front_end(e.source) and _internal(e.target))
    assert not found, "expected the front ends to use cudalens.engine; found:\n" + "\n".join(found)


def test_the_rule_names_an_optimizer_import_and_allows_the_contract():
    assert _internal("cudalens.optimizer.plan") and _internal("gpu_runner.workers.pool")
    assert not _internal("gpu_runner.report") and not _internal("cudalens.engine.plan")
    assert _front_end("cudalens.cli_plan") and _front_end("cudalens.lsp.plan_hover")
    assert not _front_end("cudalens.client") and not _front_end("cudalens.engine.run")

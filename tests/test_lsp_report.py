"""``cudalens.kernelReport`` (``lsp/report_view.py``): the kernel report page from the results
store, and the ``cudalens/runStored`` notification an open report refreshes on. Driven with
pytest-lsp against the deterministic model runner (``model_runner.py``: modelled times, NOT
measurements); the expected winner comes from the search run against the same model."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from lsprotocol import types

pytest.importorskip("matplotlib", reason="the report needs matplotlib (pip install "
                                         "'cudalens[report]')")
sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from expected import expected  # noqa: E402
from harness import TEST_SETTINGS, copy_example, editor  # noqa: E402
from model_runner import MODEL_DEVICE  # noqa: E402

pytestmark = pytest.mark.asyncio

SAXPY = expected("saxpy", TEST_SETTINGS["budget"]["candidates"],
                 TEST_SETTINGS["budget"]["repetitions"])
SVG = "{http://www.w3.org/2000/svg}"


def _cmd(name: str, *arguments) -> types.Command:
    return types.Command(title=name, command=name, arguments=list(arguments))


async def test_kernel_report_from_the_store_and_the_run_stored_notification(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        stored = []

        @client.feature("cudalens/runStored")
        def _stored(ls, params):
            stored.append(params)

        uri = client.open(path)
        before = await client.run(_cmd("cudalens.kernelReport", {"uri": uri, "kernel": "saxpy"}))
        assert before == {"ok": False, "reason": "no stored run of saxpy yet: run Optimize first"}
        started = await client.run(_cmd("cudalens.optimize", {"uri": uri, "kernel": "saxpy"}))
        assert started["ok"], started
        await client.wait_for(lambda: [p for p in client.progress_reports.get(
            started["token"], []) if p.kind == "end"], timeout=180, what="the optimization")
        await client.wait_for(lambda: stored, what="the cudalens/runStored notification")
        (note,) = stored
        assert (note.uri, note.kernel) == (uri, "saxpy") and len(note.key) > 16

        got = await client.run(_cmd("cudalens.kernelReport", {"uri": uri, "kernel": "saxpy"}))
        assert got["ok"] is True and got["stale"] is False
        assert got["key"] == note.key and got["title"] == "cudalens report: saxpy"
        page = got["html"]
        assert "Content-Security-Policy" in page and MODEL_DEVICE.name in page
        svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + 6])
        points = {g.get("id"): g for g in svg.iter(f"{SVG}g")
                  if (g.get("id") or "").startswith("point-")}
        verified = [c for c in SAXPY.run["candidates"]
                    if c["verdict"]["status"] == "passed" and c["timing"]]
        assert len(points) == 1 + len(verified)
        (winner,) = [g for g in points.values() if g.get("data-role") == "winner"]
        assert winner.get("data-label") == SAXPY.best["label"]
        assert float(winner.get("data-intensity")) == pytest.approx(2 / 12)
        # the compute-sanitizer check before the run, as the stored run keeps it
        sec = page[page.index('<section id="sanitizer">'):]
        # (the model runner has no compute-sanitizer: the record says so, and why)
        assert sec[:sec.index("</section>")].endswith(
            '<p class="bad" data-state="not_run">Not run: this runner connection cannot run '
            'compute-sanitizer (a replayed or recorded runner). The original was not checked '
            'for races and memory errors.</p>')

        bad = await client.run(_cmd("cudalens.kernelReport", {"uri": uri, "kernel": "nope"}))
        assert bad["ok"] is False and "nope" in bad["reason"]

        # applying a candidate stores a run of the changed kernel: the report is told again
        lenses = await client.code_lenses(uri)
        (show,) = [lens.command for lens in lenses if lens.command.command == "cudalens.showDiff"]
        applied = await client.run(_cmd("cudalens.apply", show.arguments[0]))
        assert applied["applied"] is True
        await client.wait_for(lambda: len(stored) == 2, what="a second cudalens/runStored")
        assert (stored[1].uri, stored[1].kernel) == (uri, "saxpy") and stored[1].key != note.key
        again = await client.run(_cmd("cudalens.kernelReport", {"uri": uri, "kernel": "saxpy"}))
        assert again["ok"] is True and again["key"] == stored[1].key

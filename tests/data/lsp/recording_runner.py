"""The model runner (``model_runner.py``; modelled times, NOT measurements) that also writes
each evaluation request to the JSON-lines file ``$CUDALENS_TEST_REQUESTS`` (TEST-ONLY): per
request, every case with its label, whether it carries captured data, and each argument
(buffers: name, dtype, length, role; scalars: name, value), and the baseline's launches.

``--runner-factory recording_runner:make_client``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from gpu_runner.problem import Buffer
from model_runner import make_client as make_model_client

ENV = "CUDALENS_TEST_REQUESTS"


def _arg(a) -> dict:
    if isinstance(a, Buffer):
        return {"name": a.name, "dtype": a.dtype, "length": a.length, "role": a.role}
    return {"name": a.name, "value": a.value}


class RecordingClient:
    def __init__(self, inner):
        self.inner = inner
        self.provenance = inner.provenance

    def device_info(self):
        return self.inner.device_info()

    def evaluate(self, problem, baseline, candidates, **kw):
        with open(os.environ[ENV], "a", encoding="utf-8") as f:
            f.write(json.dumps({
                "cases": [{"label": c.label, "captured": c.captured is not None,
                           "args": [_arg(a) for a in c.args]} for c in problem.cases],
                "launches": [asdict(launch) for launch in baseline.launches],
                "candidates": len(candidates)}) + "\n")
        return self.inner.evaluate(problem, baseline, candidates, **kw)


def make_client(settings=None) -> RecordingClient:
    return RecordingClient(make_model_client(settings))

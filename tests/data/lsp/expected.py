"""What the language server should show after optimizing a kernel against the model runner
(``model_runner.py``), computed here by running the optimizer's real search in-process against
the same model with the server's settings: nothing is typed in, so a change to the search
(new passes, other candidates) changes the expectations with it, and a server that shows
another number, label or diff than the search found against the model fails the tests.

The run record (``cudalens.present.result_record``, the form ``benchmarks/run_examples.py``
writes) holds: ``evaluations`` (every runner evaluation in order: the search's batches, then
the confirmation when there was one), ``candidates`` (the rows of the evaluation the winner
was picked from, then every batch's failed rows), ``baseline`` (that evaluation's baseline),
``winner`` and ``diff`` (the winner's).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from model_runner import MODEL_DEVICE, ModelRunnerClient

ROOT = Path(__file__).absolute().parents[3]
EXAMPLES = ROOT / "examples"

# RunRecord.offers: verified, and the 95% CI of the speedup above this (cudalens.optimize).
SIGNIFICANT = 1.0


def _identity(variant: dict) -> str:
    """A recorded variant's source, nvcc options and launches, as one comparable string."""
    return json.dumps([variant["source"], variant["options"], variant["launches"]])


def verified(row: dict) -> bool:
    return row["verdict"]["status"] == "passed" and row["speedup"] is not None


def us_words(us: float) -> str:
    """A time as the editor words it: ``412 us``, ``98.2 us``, ``1,234 us``, ``4.56 us``
    (three significant digits below 1000)."""
    if us >= 100:
        return f"{us:,.0f} us"
    return f"{us:.1f} us" if us >= 10 else f"{us:.2f} us"


def speedup_x(row: dict) -> str:
    """``1.28x``: how the server words a row's speedup in titles."""
    return f"{row['speedup']['value']:.2f}x"


def speedup_ci(row: dict) -> str:
    """``1.28x [1.27, 1.28]``: the speedup with its 95% confidence interval."""
    s = row["speedup"]
    return f"{s['value']:.2f}x [{s['ci_low']:.2f}, {s['ci_high']:.2f}]"


def offer_lens(row: dict) -> str:
    """The code lens offering a row: ``1.28x faster candidate: show diff``, followed for a row
    timed with another launch than the spec's by how it runs under the spec's launch
    (`` (1.09x as a drop-in; 1.28x with block = 256, grid = ...)``, `` (needs a new launch:
    1.28x with ...)``, `` (1.28x with ... (not checked under your launch))``)."""
    title = f"{speedup_x(row)} faster candidate: show diff"
    change = row.get("launch_change")
    if change is None:
        return title
    launch = change["launch"]
    words = f"block = {', '.join(launch['block'])}, grid = {', '.join(launch['grid'])}"
    words += f", shared = {launch['shared']}" if launch["shared"].strip() not in ("", "0") else ""
    new = f"{speedup_x(row)} with {words}"
    drop = row.get("drop_in")
    if drop is None:
        return f"{title} ({new} (not checked under your launch))"
    if drop["ok"]:
        return f"{title} ({drop['speedup']['value']:.2f}x as a drop-in; {new})"
    return f"{title} (needs a new launch: {new})"


def launch_words(row: dict) -> str:
    """``block = 128; grid = ceil_div(n, block.x * 4)``: a row's launch as the apply message
    says it (a ``shared`` part only when not 0)."""
    launch = row["launch"]
    text = f"block = {', '.join(launch['block'])}; grid = {', '.join(launch['grid'])}"
    return text + (f"; shared = {launch['shared']}" if launch["shared"].strip() != "0" else "")


def spec_launch_lines(row: dict) -> str:
    """The spec's ``block``/``grid`` lines after the row's candidate is applied."""
    launch = row["launch"]
    return f"block = {', '.join(launch['block'])}\ngrid = {', '.join(launch['grid'])}\n"


@dataclass(frozen=True)
class Expected:
    """One kernel's run against the model, and what the editor should show for it.
    ``budget``, ``repetitions``, ``seed``: the settings it was run with."""

    run: dict
    budget: int
    repetitions: int
    seed: int

    @property
    def device(self) -> str:
        return MODEL_DEVICE.name

    @property
    def short_device(self) -> str:
        """``H200``: the device as lenses name it (the name without the vendor)."""
        return self.device.removeprefix("NVIDIA ")

    @property
    def baseline(self) -> dict:
        return self.run["baseline"]

    @property
    def diff(self) -> str:
        return self.run["diff"]

    @property
    def provenance(self) -> str:
        """What the server stores and shows as the results' origin (says: a model)."""
        return ModelRunnerClient.provenance

    @cached_property
    def offers(self) -> list[dict]:
        """The significant rows, fastest first: the order the server offers them in."""
        good = [r for r in self.run["candidates"]
                if verified(r) and r["speedup"]["ci_low"] > SIGNIFICANT]
        return sorted(good, key=lambda r: -r["speedup"]["value"])

    @property
    def best(self) -> dict:
        return self.offers[0]

    @property
    def second(self) -> dict:
        return self.offers[1]

    @property
    def confirmed(self) -> bool:
        """The last evaluation re-timed candidates of earlier batches (the confirmation): a
        search batch never proposes a candidate measured before."""
        evaluations = self.run["evaluations"]
        if len(evaluations) < 2:
            return False
        earlier = {_identity(v) for ev in evaluations[:-1] for v in ev["variants"]}
        # (a confirmation also runs candidates under the spec's launch: LABEL@user, new)
        return all(_identity(v) in earlier for v in evaluations[-1]["variants"]
                   if not v["label"].endswith("@user"))

    @property
    def search_batches(self) -> list[int]:
        """How many candidates each search batch sent (the confirmation left out)."""
        evaluations = self.run["evaluations"][:-1] if self.confirmed else self.run["evaluations"]
        return [len(ev["variants"]) for ev in evaluations]

    @property
    def confirmation_size(self) -> int:
        if not self.confirmed:
            return 0
        return len([v for v in self.run["evaluations"][-1]["variants"]
                    if not v["label"].endswith("@user")])

    def proposed_messages(self) -> list[str]:
        """The progress messages that open each search batch: the count is cumulative."""
        total, out = 0, []
        for n in self.search_batches:
            total += n
            out.append(f"{total} candidates proposed; running on {self.device}")
        return out

    def best_so_far(self) -> list[str]:
        """Per search batch, the fastest verified speedup of the batches before it
        (``"1.28x"``; empty before any verified): what the progress adds as ``best so far``."""
        out, best = [], None
        evaluations = self.run["evaluations"][:len(self.search_batches)]
        for ev in evaluations:
            out.append(f"{best:.2f}x" if best is not None else "")
            for v in ev["variants"]:
                if verified(v):
                    best = max(best or 0.0, v["speedup"]["value"])
        return out

    def verifying_messages(self) -> list[str]:
        """``candidate i/N: verifying against the baseline`` for every candidate of every
        search batch, N being the count proposed so far, followed from the second batch on
        by ``, best so far 1.28x`` (the fastest verified speedup of the batches before)."""
        total, out = 0, []
        for n, best in zip(self.search_batches, self.best_so_far()):
            tail = f", best so far {best}" if best else ""
            out += [f"candidate {i}/{total + n}: verifying against the baseline{tail}"
                    for i in range(total + 1, total + n + 1)]
            total += n
        return out

    def confirming_message(self) -> str:
        """What the editor shows when the confirmation run starts."""
        return (f"timing the {self.confirmation_size} fastest candidates again, together with "
                f"the baseline")

    def confirming_verify_messages(self) -> list[str]:
        """``candidate i/N: verifying against the baseline, best so far 1.28x`` for the
        confirmation's N, the best being that of all search batches."""
        n = self.confirmation_size
        best = max(v["speedup"]["value"] for ev in self.run["evaluations"][:-1]
                   for v in ev["variants"] if verified(v))
        return [f"candidate {i}/{n}: verifying against the baseline, best so far {best:.2f}x"
                for i in range(1, n + 1)]

    def source_of(self, row: dict) -> str:
        """The exact source the runner measured for ``row`` (what applying it leaves in the
        file): the recorded variant with the runner label the row's compile report names.

        Raises:
            LookupError: no recorded evaluation sent a variant with that label.
        """
        label = row["compile"]["variant"]
        for ev in self.run["evaluations"]:
            for variant in ev["variants"]:
                if variant["label"] == label:
                    return variant["source"]
        raise LookupError(f"no variant {label!r} was sent for {row['label']!r} of "
                          f"{self.run['kernel']}")

    def measured_lens(self) -> str:
        """The lens over an optimized kernel: its baseline's median and share of the copy
        bandwidth measured on the device."""
        base = self.baseline
        return (f"{us_words(base['median_us'])}, {base['percent_of_copy']:.0f}% of copy "
                f"bandwidth, {self.short_device}")

    def for_driver(self) -> dict:
        """What ``client-vscode/e2e/driver.mjs`` checks (``E2E_EXPECT``, JSON)."""
        def offer(row: dict) -> dict:
            return {"label": row["label"], "x": speedup_x(row), "lens": offer_lens(row),
                    "source": self.source_of(row)}
        return {"device": self.device, "measuredLens": self.measured_lens(),
                "best": offer(self.best), "second": offer(self.second),
                "provenance": self.provenance}

    def final_message(self, proposer: str = "built-in passes") -> str:
        """The progress's end: the best offer and how many reported rows verified."""
        rows = self.run["candidates"]
        n_ok = sum(1 for r in rows if verified(r))
        return (f"{self.run['kernel']}: best {speedup_x(self.best)} (verified), "
                f"{n_ok}/{len(rows)} candidates verified ({proposer})")


def example_of(kernel: str) -> Path:
    """The example file whose spec names ``kernel`` (``kernel NAME`` line of ``*.cu.spec``).

    Raises:
        LookupError: no example's spec names it.
    """
    for spec in sorted(EXAMPLES.glob("*.cu.spec")):
        if re.search(rf"^kernel\s+{re.escape(kernel)}\s*$", spec.read_text(encoding="utf-8"),
                     re.MULTILINE):
            return spec.with_suffix("")
    raise LookupError(f"no spec in {EXAMPLES} names kernel {kernel!r}")


@functools.lru_cache(maxsize=None)
def expected(kernel: str, budget: int = 24, repetitions: int = 50, seed: int = 0) -> Expected:
    """The expectations of ``kernel`` (an example's), from the optimizer's search run now
    against the model runner with the server's settings (defaults: ``harness.TEST_SETTINGS``
    and the server's seed). Cached: it runs the search (a few seconds).

    Raises:
        LookupError: no example names ``kernel``.
    """
    from cudalens.optimize import optimize
    from cudalens.present import result_record
    from cudalens.target import load_target

    target = load_target(example_of(kernel), kernel)
    result = optimize(target, ModelRunnerClient(), budget=budget, seed=seed,
                      repetitions=repetitions)
    return Expected(result_record(result), budget, repetitions, seed)


if __name__ == "__main__":  # python expected.py KERNEL: the e2e driver's expectations as JSON
    import sys

    print(json.dumps(expected(sys.argv[1]).for_driver()))

"""How much code each built-in rewrite puts into a user's file, against a hand-written version.

For every example (``examples/*.cu``) and every pass that applies to it (its default
parameters), and for every built-in winner recorded in ``benchmarks/results/h200-examples-*.json``
(the newest record per kernel, found again by its label among the candidates the search
proposes now), prints:

* ``added``: lines added over the original file (unified diff, ``+`` lines);
* ``orig``, ``rewrite``, ``hand``: non-blank lines of the kernel's definition in the original,
  the rewrite and the hand-written version (``benchmarks/handwritten/EXAMPLE.PASS.cu``);
  passes without a hand-written file (qualifiers, pragmas, launch changes) are compared with
  the original kernel, which is what an engineer makes those changes to;
* ``ratio``: rewrite / hand (the bound checked in CI is ``RATIO_BOUND``).

``--side-by-side EXAMPLE PASS`` prints the original, the rewrite and the hand-written kernel.

Run from the repo root: ``python benchmarks/rewrite_lines.py`` (seconds, no GPU).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from cudalens.optimizer import passes  # noqa: E402
from cudalens.optimizer.context import PassContext, make_context  # noqa: E402
from cudalens.optimizer.staged_search import ordered  # noqa: E402
from cudalens.source.parser import parse_source  # noqa: E402
from cudalens.target import load_target  # noqa: E402

EXAMPLES = ROOT / "examples"
HANDWRITTEN = Path(__file__).resolve().parent / "handwritten"
RESULTS = Path(__file__).resolve().parent / "results"
RATIO_BOUND = 1.5
# The pass whose hand-written version a winner is compared with: its body rewrite.
BODY_PASSES = tuple(p.name for p in passes.BODY_REWRITES)


@dataclass(frozen=True)
class Row:
    """One rewrite measured: ``what`` is the pass name or ``winner: LABEL``; ``hand_file`` the
    hand-written version compared with (None: the original kernel)."""

    example: str
    what: str
    added: int
    original: int
    rewrite: int
    hand: int
    hand_file: Optional[Path]
    source: str
    passes: tuple[str, ...] = ()

    @property
    def ratio(self) -> float:
        return self.rewrite / self.hand


def kernel_text(source: str, kernel: str) -> str:
    """The definition of ``kernel`` in ``source`` (template header and attributes included)."""
    k = parse_source(source, "x.cu").kernel(kernel)
    return source.encode("utf-8")[k.start_byte:k.end_byte].decode("utf-8")


def code_lines(text: str) -> int:
    """Non-blank lines of ``text``."""
    return sum(1 for line in text.splitlines() if line.strip())


def added_lines(old: str, new: str) -> int:
    """Lines a unified diff from ``old`` to ``new`` adds."""
    return sum(1 for line in difflib.unified_diff(old.splitlines(), new.splitlines(),
                                                  lineterm="", n=0)
               if line.startswith("+") and not line.startswith("+++"))


def context_of(path: Path) -> PassContext:
    target = load_target(path)
    return make_context(target.text, str(path), target.kernel.name, target.spec)


def hand_file(example: str, pass_name: Optional[str]) -> Optional[Path]:
    """``handwritten/EXAMPLE.PASS.cu`` when it exists, else None."""
    if pass_name is None:
        return None
    path = HANDWRITTEN / f"{example}.{pass_name}.cu"
    return path if path.is_file() else None


def _row(ctx: PassContext, example: str, what: str, source: str, body_pass: Optional[str],
         applied: tuple[str, ...]) -> Row:
    name = ctx.kernel.name
    original = code_lines(kernel_text(ctx.text, name))
    hand_path = hand_file(example, body_pass)
    hand = code_lines(kernel_text(hand_path.read_text(encoding="utf-8"), name)) \
        if hand_path else original
    return Row(example, what, added_lines(ctx.text, source), original,
               code_lines(kernel_text(source, name)), hand, hand_path, source, applied)


def pass_rows() -> list[Row]:
    """Every pass that applies to every example, at its default parameters."""
    rows = []
    for path in sorted(EXAMPLES.glob("*.cu")):
        ctx = context_of(path)
        for p in passes.PASSES:
            if p.check(ctx) is not None:
                continue
            result = p.apply(ctx, **p.parameter_space(ctx)[0])
            rows.append(_row(ctx, path.stem, p.name, result.source, p.name, (p.name,)))
    return rows


def recorded_winners() -> dict[str, str]:
    """kernel name -> the newest recorded winner's label (``h200-examples-*.json``, sorted by
    file name, which starts with the date)."""
    found: dict[str, str] = {}
    for path in sorted(RESULTS.glob("h200-examples-*.json")):
        for run in json.loads(path.read_text(encoding="utf-8"))["runs"]:
            if run.get("winner"):
                found[run["kernel"]] = run["winner"]["label"]
    return found


def winner_rows() -> tuple[list[Row], list[str]]:
    """The recorded winners found again among today's candidates, and the labels not found."""
    labels = recorded_winners()
    rows, missing = [], []
    for path in sorted(EXAMPLES.glob("*.cu")):
        ctx = context_of(path)
        label = labels.get(ctx.kernel.name)
        if label is None:
            continue
        match = [c for c in ordered(ctx, 0) if c.label == label]
        if not match:
            missing.append(f"{path.stem}: {label}")
            continue
        cand = match[0]
        body = next((p for p in cand.passes if p in BODY_PASSES), None)
        rows.append(_row(ctx, path.stem, f"winner: {label}", cand.source, body, cand.passes))
    return rows, missing


def table(rows: list[Row]) -> str:
    head = f"{'example':<11} {'rewrite':<58} {'added':>5} {'orig':>4} {'rewr':>4} " \
           f"{'hand':>4} {'ratio':>5}  hand-written"
    lines = [head, "-" * len(head)]
    for r in rows:
        shown = r.hand_file.relative_to(ROOT) if r.hand_file else "(the original kernel)"
        flag = "" if r.ratio <= RATIO_BOUND else "  OVER"
        lines.append(f"{r.example:<11} {r.what:<58} {r.added:>5} {r.original:>4} "
                     f"{r.rewrite:>4} {r.hand:>4} {r.ratio:>5.2f}  {shown}{flag}")
    return "\n".join(lines)


def side_by_side(example: str, pass_name: str) -> str:
    ctx = context_of(EXAMPLES / f"{example}.cu")
    p = passes.get(pass_name)
    source = p.apply(ctx, **p.parameter_space(ctx)[0]).source
    hand = hand_file(example, pass_name)
    parts = [("original", kernel_text(ctx.text, ctx.kernel.name)),
             (f"rewrite ({pass_name})", kernel_text(source, ctx.kernel.name)),
             (f"hand-written ({hand.relative_to(ROOT) if hand else 'none'})",
              kernel_text(hand.read_text(encoding="utf-8"), ctx.kernel.name) if hand else "")]
    return "\n\n".join(f"=== {title}\n{text}" for title, text in parts)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side-by-side", nargs=2, metavar=("EXAMPLE", "PASS"))
    args = ap.parse_args(argv)
    if args.side_by_side:
        print(side_by_side(*args.side_by_side))
        return 0
    rows = pass_rows()
    print("Every pass on every example (default parameters):")
    print(table(rows))
    winners, missing = winner_rows()
    print("\nRecorded winners (benchmarks/results/h200-examples-*.json), proposed again:")
    print(table(winners))
    for m in missing:
        print(f"  not proposed by this commit: {m}")
    over = [r for r in rows + winners if r.ratio > RATIO_BOUND]
    print(f"\n{len(over)} rewrite(s) over {RATIO_BOUND}x the hand-written line count")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What accepting a winner writes, on the CLI (``cudalens optimize --apply``).

The kernel's file gets the winner's source. When the winner was timed with another launch
than the user's (``Row.launch_change``), every launch of the kernel in the workspace is
rewritten to that launch (``cudalens.host_launch``) and the spec file's ``block``/``grid``/
``shared`` lines too, so the program and the spec keep describing what was measured (as the
editor's apply does).

Accepting is refused unless ``accept_launch_change`` when the winner needs the new launch
(it is not a verified drop-in) and some launch of the kernel cannot be rewritten, or none is
found in the workspace (its launches are elsewhere: a PyTorch extension's launcher, another
repository): the refusal names the sites and the exact launch to write. A winner that is also
correct under the user's launch never needs that: sites that cannot be rewritten keep their
launch and run it as a drop-in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from cudalens.dropin import launch_words
from cudalens.host_launch import LaunchPlan, plan_launches, workspace_root
from cudalens.optimize import OptimizeResult
from cudalens.spec.model import KernelSpec, LaunchDecl
from cudalens.textfile import from_bytes


@dataclass(frozen=True)
class Acceptance:
    """Files to write (path -> new text, the kernel's file first) and what to tell the user;
    ``refused`` set (and nothing to write) when accepting needs ``--accept-launch-change``."""

    writes: dict[Path, str] = field(default_factory=dict)
    lines: tuple[str, ...] = ()
    refused: str = ""
    plan: Optional[LaunchPlan] = None


_SETTING = re.compile(r"^(?P<lead>\s*)(?P<key>block|grid|shared)(?P<eq>\s*=\s*)(?P<expr>.*?)"
                      r"(?P<comment>\s*#.*)?$")
_KERNEL = re.compile(r"^\s*kernel\s")


def spec_with_launch(text: str, spec: KernelSpec, launch: LaunchDecl) -> str:
    """The spec file ``text`` with ``spec``'s section's ``block``/``grid``/``shared`` lines set to
    ``launch`` (a ``shared`` line added after ``grid`` when needed; comments and line endings
    kept)."""
    lines = text.split("\n")
    start = max(spec.line - 1, 0)
    end = next((i for i in range(start + 1, len(lines)) if _KERNEL.match(lines[i])), len(lines))
    want = {"block": ", ".join(launch.block), "grid": ", ".join(launch.grid),
            "shared": launch.shared or "0"}
    seen: dict[str, int] = {}
    for i in range(start, end):
        cr = "\r" if lines[i].endswith("\r") else ""
        m = _SETTING.match(lines[i].rstrip("\r"))
        if m is None:
            continue
        seen[m.group("key")] = i
        lines[i] = (m.group("lead") + m.group("key") + m.group("eq") + want[m.group("key")]
                    + (m.group("comment") or "") + cr)
    if "shared" not in seen and want["shared"].strip() != "0" and "grid" in seen:
        lines.insert(seen["grid"] + 1, f"shared = {want['shared']}")
    return "\n".join(lines)


def plan_accept(result: OptimizeResult, accept_launch_change: bool) -> Acceptance:
    """What ``--apply`` writes for ``result``'s winner (module doc). The kernel's file is read
    by the caller (its unchanged text is ``result.target.text``); host files are read here.

    Raises:
        ValueError: ``result`` has no winner.
    """
    w = result.winner
    if w is None:
        raise ValueError("expected a result with a winner to accept, found none")
    target = result.target
    path = Path(target.path).resolve()
    writes: dict[Path, str] = {path: w.candidate.source}
    change = w.launch_change
    if change is None:
        return Acceptance(writes=writes)
    kernel = target.kernel.name
    root = workspace_root(path)
    plan = plan_launches(root, target.kernel, target.spec, change.launch,
                         texts={path: w.candidate.source}, kernel_path=path)
    drop_in = w.drop_in is not None and w.drop_in.ok
    new = launch_words(change.launch)
    lines: list[str] = []
    blocked = plan.unmapped or not plan.found
    if blocked and not drop_in and not accept_launch_change:
        if plan.found:
            sites = "; ".join(f"{u.where(root)}: {u.call} ({u.reason})" for u in plan.unmapped)
            where = (f"{len(plan.unmapped)} launch site(s) of {kernel} cannot be rewritten: "
                     f"{sites}")
        else:
            where = (f"no launch of {kernel} was found in {root} (.cu, .cuh, .cpp files): its "
                     f"launches are elsewhere (a PyTorch extension's launcher, another "
                     f"repository)")
        checked = ("it is wrong under your launch "
                   f"({w.drop_in.result.verdict.status}: {w.drop_in.result.verdict.reason})"
                   if w.drop_in is not None else "it was not checked under your launch")
        drop = result.best_drop_in
        other = (f" (the fastest drop-in, {drop.candidate.label}, is "
                 f"{drop.drop_in.speedup.value:.2f}x under your launch)"
                 if drop is not None else "")
        return Acceptance(plan=plan, refused=(
            f"not applied: {w.candidate.label} must be launched with {new} and {checked}; "
            f"{where}. Launch {kernel} with {new} there and run again with "
            f"--accept-launch-change, or keep the original kernel{other}"))
    writes.update(plan.new_texts())
    for e in plan.edits:
        lines.append(f"Rewrote the launch at {e.where(root)}: {e.config} -> {e.new}")
    for u in plan.unmapped:
        keep = ("it keeps its launch, under which the candidate is verified too"
                if drop_in else f"launch {kernel} there with {new} yourself")
        lines.append(f"Not rewritten: {u.where(root)}: {u.call} ({u.reason}); {keep}.")
    if not plan.found:
        lines.append(f"No launch of {kernel} was found in {root}: launch it with {new} "
                     f"where your program does" + (" (under your current launch it is verified "
                                                  "too)" if drop_in else "") + ".")
    # The spec keeps describing what was measured (as the editor's apply does).
    spec_file = Path(target.spec_origin) if not target.spec_inferred else None
    if spec_file is not None and spec_file.is_file():
        text = from_bytes(spec_file.read_bytes())  # line endings kept
        new_spec = spec_with_launch(text, target.spec, change.launch)
        if new_spec != text:
            writes[spec_file.resolve()] = new_spec
            lines.append(f"The spec {spec_file} now launches {kernel} with {new}.")
    return Acceptance(writes=writes, lines=tuple(lines), plan=plan)

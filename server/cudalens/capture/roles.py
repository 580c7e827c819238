"""A captured buffer's role, from what the launch changed and what the kernel's body does.

Two roles are kept per pointer:

* ``role`` (reported, and used for the spec drafted from the capture): the body's role
  (``cudalens.spec.infer``: written only -> ``out``, read and written -> ``inout``, read only
  -> ``in``) when the launch agrees with it; a buffer the launch changed although the body
  only reads it is ``inout`` (another parameter aliases it, or the body analysis missed a
  write); a buffer the body never looked at follows the launch (changed: ``inout``,
  unchanged: ``in``).
* ``replay_role`` (the captured case in the runner): ``in`` when unchanged, ``inout`` when
  changed. An ``out`` buffer would be poisoned before each replayed launch, and the bytes the
  kernel does not write (the rest of the allocation it points into) would then differ from
  the captured "after" values; as ``inout`` they start from the captured "before" values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class RoleDecision:
    role: str
    replay_role: str
    note: str = ""


def decide_role(name: str, changed: bool, body_role: Optional[str]) -> RoleDecision:
    """The roles of buffer ``name`` (module doc). ``body_role`` is ``in``, ``out``, ``inout``
    or None (the body's use is unknown)."""
    replay = "inout" if changed else "in"
    if body_role is None:
        return RoleDecision("inout" if changed else "in", replay,
                            f"{name}: role from the launch alone ("
                            f"{'changed' if changed else 'unchanged'}); the body's use is unknown")
    if changed and body_role == "in":
        return RoleDecision("inout", replay,
                            f"{name}: the launch changed it although the body only reads it "
                            f"(aliased by another parameter?); taken as inout")
    if not changed and body_role in ("out", "inout"):
        return RoleDecision(body_role, replay,
                            f"{name}: the body writes it but this launch left it unchanged")
    return RoleDecision(body_role, replay)

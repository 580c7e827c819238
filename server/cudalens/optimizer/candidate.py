"""What the optimizer hands to the runner: candidates, and what one pass produces."""

from __future__ import annotations

from dataclasses import dataclass

from cudalens.spec.model import LaunchDecl


@dataclass(frozen=True)
class PassResult:
    """The outcome of applying one pass.

    ``source`` is the whole rewritten file; ``launch`` the launch configuration to run it with
    (expressions of the spec's sizes, ``block.x`` and ``sm_count``). ``tags`` are the short
    label parts (``"vec4+gridstride"``, ``"grid=8*SMs"``, ``"block=512"``) and ``explanation``
    one sentence in the field's terms saying what changed and why it should be faster.
    Tags without ``=`` name a structural change; ``name=value`` tags name a parameter setting
    (see ``family``). ``options`` are nvcc options the result needs (``-use_fast_math``).
    """

    source: str
    launch: LaunchDecl
    tags: tuple[str, ...]
    explanation: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """A proposed rewrite of one kernel, ready to be resolved into a runner variant.

    ``label`` is short (``vec4+gridstride block=512 grid=8*SMs``); ``explanation`` one line
    per applied pass, joined by ``"; "``. ``source`` is the whole rewritten file text,
    ``kernel`` the kernel's qualified C++ name, ``launch`` its launch configuration,
    ``passes`` the names of the passes applied in order, ``options`` extra nvcc options.
    ``family`` names the structure (the label's tags without parameter settings, ``"restrict
    vec4+gridstride"``; ``""`` for launch-only changes): candidates of one family differ only
    in parameters (block, grid, bounds, unroll factor, tunable values), which the batched
    search sweeps for the families that measure best.
    """

    label: str
    explanation: str
    source: str
    kernel: str
    launch: LaunchDecl
    passes: tuple[str, ...]
    options: tuple[str, ...] = ()
    family: str = ""

    @property
    def key(self) -> tuple:
        """What makes two candidates the same: the source, the launch expressions and the
        nvcc options."""
        return (self.source, launch_key(self.launch), tuple(self.options))


def launch_key(launch: LaunchDecl) -> tuple:
    """A launch configuration without its spec line, for comparisons."""
    return (tuple(launch.block), tuple(launch.grid), launch.shared)


_TAG_ORDER = ("block=", "grid=")


def make_label(tags: tuple[str, ...]) -> str:
    """Joins pass tags into a label: transformations in order applied, then block, then grid.

    A later ``block=``/``grid=`` tag replaces an earlier one (the last pass to set it wins).
    """
    plain: list[str] = []
    keyed: dict[str, str] = {}
    for tag in tags:
        prefix = next((p for p in _TAG_ORDER if tag.startswith(p)), None)
        if prefix is None:
            if tag not in plain:
                plain.append(tag)
        else:
            keyed[prefix] = tag
    return " ".join(plain + [keyed[p] for p in _TAG_ORDER if p in keyed])


def family_of(tags: tuple[str, ...]) -> str:
    """The structural part of a label: tags without ``=``, in order, without repeats."""
    out: list[str] = []
    for tag in tags:
        if "=" not in tag and tag not in out:
            out.append(tag)
    return " ".join(out)

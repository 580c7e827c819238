"""What the draft tests read of a drafted spec, and the draft itself checked the way a written
spec is loaded: ``infer`` (the draft inferred, written out, parsed back, validated against the
kernel and its body's output lengths, resolved into a problem), and the fields ``buffers``,
``scalars``, ``sizes`` and a spec line (``line_of``). Used by the ``test_spec_drafts_*.py`` files and
``test_spec_public_shapes.py``."""

from __future__ import annotations

from cudalens.source.parser import parse_source
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl
from cudalens.spec.output_lengths import check_lengths
from cudalens.spec.parser import parse_spec, validate
from cudalens.spec.resolve import build_problem
from cudalens.spec.writer import format_spec


def loads(spec: KernelSpec, kernel, source: str) -> None:
    """What ``cudalens.target.load_spec`` checks of a written spec loaded with its source:
    the signature and roles against the body, then the output lengths. Raises ``SpecError``."""
    validate(spec, kernel, source)
    check_lengths(spec, kernel, source)


def infer(source: str, name: str | None = None, instance: str | None = None) -> KernelSpec:
    """The drafted spec of kernel ``name`` of ``source`` (None: the first kernel; ``instance``:
    a template instance, as ``infer_spec`` takes it), after its text form has been parsed back,
    loaded (``loads``) and resolved; raises ``SpecError`` where any of those fails."""
    sf = parse_source(source, "k.cu")
    kernel = sf.kernels[0] if name is None else sf.kernel(name)
    spec = infer_spec(kernel, source, sf.launch_sites, instance=instance)
    reparsed = parse_spec(format_spec(spec), "draft.spec")[spec.kernel]
    loads(reparsed, kernel, source)
    build_problem(reparsed, kernel)
    return spec


def buffers(spec: KernelSpec, *fields: str) -> dict[str, tuple]:
    """Each buffer parameter's name -> its ``fields`` (``BufferDecl`` attributes), in order."""
    return {p.name: tuple(getattr(p, f) for f in fields)
            for p in spec.params if isinstance(p, BufferDecl)}


def scalars(spec: KernelSpec) -> dict[str, str]:
    """Each scalar parameter's name -> its value expression."""
    return {p.name: p.expr for p in spec.params if isinstance(p, ScalarDecl)}


def sizes(spec: KernelSpec) -> dict[str, str]:
    """Each size's name -> its expression."""
    return {s.name: s.expr for s in spec.sizes}


def line_of(spec: KernelSpec, start: str) -> str:
    """The first line of the spec's text form that starts with ``start``; StopIteration where
    none does."""
    return next(ln for ln in format_spec(spec).splitlines() if ln.startswith(start))

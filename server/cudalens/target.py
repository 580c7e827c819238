"""Finding what to optimize: a kernel in a file, and the harness spec that says how to call it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from cudalens.errors import CudalensError
from cudalens.source.model import Kernel, SourceFile
from cudalens.source.parser import parse_source
from cudalens.spec import parser as spec_parser
from cudalens.spec.errors import SpecError
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import KernelSpec


@dataclass(frozen=True)
class Target:
    """One kernel of one file with its spec.

    ``spec_origin`` is the spec file's path, or ``"inferred"`` when the spec was drafted from
    the kernel's signature and body because no spec file names the kernel.
    """

    path: Path
    text: str
    source: SourceFile
    kernel: Kernel
    spec: KernelSpec
    spec_origin: str

    @property
    def spec_inferred(self) -> bool:
        return self.spec_origin == "inferred"


def read_source(path: Path) -> tuple[str, SourceFile]:
    """Reads and parses a ``.cu``/``.cuh`` file.

    Raises:
        CudalensError: the file is missing or unreadable, or holds no ``__global__`` kernel.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CudalensError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CudalensError(f"{path}: cannot read the file ({exc})") from None
    source = parse_source(text, str(path))
    if not source.kernels:
        raise CudalensError(f"{path}: expected at least one __global__ kernel, found none")
    return text, source


def select_kernel(source: SourceFile, name: Optional[str]) -> Kernel:
    """The kernel named ``name``, or the file's only kernel when ``name`` is None.

    Raises:
        CudalensError: no kernel has that name, or several kernels exist and none was named.
    """
    names = ", ".join(k.qualified_name for k in source.kernels)
    if name is None:
        if len(source.kernels) > 1:
            raise CudalensError(
                f"{source.path}: holds {len(source.kernels)} kernels ({names}); "
                f"choose one with --kernel NAME")
        return source.kernels[0]
    try:
        return source.kernel(name)
    except KeyError:
        raise CudalensError(f"{source.path}: no __global__ kernel named {name!r} (found: {names})") \
            from None


def load_spec(path: Path, source: SourceFile, kernel: Kernel) -> tuple[KernelSpec, str]:
    """The written spec for ``kernel`` if its sidecar file names it, else an inferred draft.

    Raises:
        CudalensError: the spec file exists but is malformed or does not fit the kernel; the
            message names the spec file's line.
    """
    try:
        spec = spec_parser.load_spec_for(path, kernel)
    except SpecError as exc:
        raise CudalensError(str(exc)) from None
    if spec is not None:
        return spec, str(spec_parser.spec_path_for(path))
    try:
        spec = infer_spec(kernel, source.text, source.launch_sites)
    except SpecError as exc:
        raise CudalensError(f"{path}: cannot draft a spec for {kernel.name}: {exc}") from None
    return spec, "inferred"


def load_target(path: Path, kernel_name: Optional[str] = None) -> Target:
    text, source = read_source(path)
    kernel = select_kernel(source, kernel_name)
    spec, origin = load_spec(path, source, kernel)
    return Target(path=path, text=text, source=source, kernel=kernel, spec=spec,
                  spec_origin=origin)

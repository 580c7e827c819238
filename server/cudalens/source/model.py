"""Data classes describing the kernels found in a CUDA source file.

Positions are zero-based (line, column) pairs with columns counted in bytes of the UTF-8
source, as tree-sitter reports them; LSP-facing code converts where needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position

    @property
    def start_byte_line(self) -> int:
        return self.start.line


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter.

    ``type`` is the element type for pointers (``float`` for ``const float* __restrict__ x``)
    and the scalar type otherwise, written as in the source with qualifiers removed.
    """

    name: str
    type: str
    is_pointer: bool
    is_const: bool  # const applies to the pointee for pointers, to the value for scalars
    is_restrict: bool
    range: Range
    text: str  # the parameter's full source text


@dataclass(frozen=True)
class LaunchSite:
    """A ``kernel<<<grid, block[, shared[, stream]]>>>(args)`` expression in the file."""

    kernel: str
    config: tuple[str, ...]  # source texts of the <<<...>>> arguments, in order
    arguments: tuple[str, ...]  # source texts of the call arguments, in order
    range: Range


@dataclass(frozen=True)
class Kernel:
    """A ``__global__`` function definition."""

    name: str
    qualified_name: str  # with enclosing namespaces, e.g. ``ops::saxpy``
    parameters: tuple[Parameter, ...]
    range: Range  # the whole definition, template header and attributes included
    name_range: Range
    body_range: Range  # the compound statement, braces included
    start_byte: int
    end_byte: int
    body_start_byte: int
    body_end_byte: int
    template_parameters: tuple[str, ...] = ()
    launch_bounds: tuple[str, ...] = ()  # source texts of __launch_bounds__ arguments
    extern_c: bool = False
    has_errors: bool = False  # the definition contains parse errors (e.g. from macros)
    launch_sites: tuple[LaunchSite, ...] = field(default=())

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(f"kernel {self.name} has no parameter named {name!r}")


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str
    kernels: tuple[Kernel, ...]
    launch_sites: tuple[LaunchSite, ...]
    error_ranges: tuple[Range, ...]  # regions tree-sitter could not parse

    def kernel(self, name: str) -> Kernel:
        matches = [k for k in self.kernels if k.name == name or k.qualified_name == name]
        if not matches:
            found = ", ".join(k.name for k in self.kernels) or "none"
            raise KeyError(f"{self.path}: no __global__ kernel named {name!r} (found: {found})")
        return matches[0]

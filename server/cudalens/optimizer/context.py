"""The pass context: one kernel of one file, its harness spec, and the file's launch sites."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from cudalens.kernel_model.macros import HeaderMacros, bind_header_macros
from cudalens.kernel_model.model import KernelModel, kernel_model
from cudalens.source.model import Kernel, LaunchSite, SourceFile
from cudalens.spec.model import KernelSpec, LaunchDecl


class PassNotApplicable(ValueError):
    """``apply`` was called on a context where the pass's precondition fails.

    The message is the pass's reason, prefixed with the pass name and kernel.
    """


@dataclass(frozen=True)
class PassContext:
    """Everything a pass looks at.

    ``text`` is the whole file, ``source`` its parsed model, ``kernel`` the kernel being
    optimized (found in ``source``), ``spec`` its harness spec whose ``launch`` is the launch
    configuration of the current text, ``launch_sites`` every ``<<<...>>>`` launch in the file
    (of any kernel), ``applied`` the names of the passes that produced ``text``.
    ``header_macros``: the macros of the file's headers and of the build's ``-D``
    (``kernel_model.macros.HeaderMacros``, from ``target.FileContext.macros``), bound to
    ``text`` and to every rewritten text so that ``file_macros`` sees them; None: the
    file's own macros only.
    """

    path: str
    text: str
    source: SourceFile
    kernel: Kernel
    spec: KernelSpec
    launch_sites: tuple[LaunchSite, ...]
    applied: tuple[str, ...] = ()
    header_macros: Optional[HeaderMacros] = None

    @property
    def launch(self) -> LaunchDecl:
        return self.spec.launch

    @property
    def model(self) -> KernelModel:
        """The kernel's syntax nodes in ``text`` (``kernel_model``: looked up once per text,
        the model spec inference of the same text reads)."""
        return kernel_model(self.text, self.kernel)

    def c_type(self, ctype: str) -> str:
        """``ctype`` (a parameter's type as written) with the macros that spell a type
        expanded, the headers' and the build's ``-D`` among them (``kernel_model.macros.
        expand_type`` over ``file_macros`` of ``text``): ``ELEM_T *`` with ``#define ELEM_T
        float`` in a header -> ``float *``. For the passes' type checks; rewrites keep the
        type as written."""
        from cudalens.kernel_model.macros import expand_type, file_macros
        from cudalens.kernel_model.syntax import parse

        return expand_type(ctype, file_macros(parse(self.text)))

    def kernel_launch_sites(self) -> tuple[LaunchSite, ...]:
        """The launch sites of this kernel among ``launch_sites`` (matched as
        ``cudalens.source.launches.launches_kernel`` does)."""
        from cudalens.source.launches import launches_of

        return launches_of(self.kernel, self.launch_sites)

    def rewritten(self, text: str, launch: LaunchDecl, pass_name: str) -> "PassContext":
        """The context after a pass: ``text`` re-parsed, the kernel found again by name.
        The parse is derived from this context's (``source.incremental.derived_source``): a
        rewrite of one kernel costs that kernel, not the whole file.

        Raises:
            LookupError: the rewritten text no longer holds the kernel (a pass bug).
        """
        from cudalens.source.incremental import derived_source

        source = derived_source(text, self.path, self.source) if text != self.text \
            else self.source
        if self.header_macros is not None:
            bind_header_macros(text, self.header_macros)
        try:
            kernel = source.kernel(self.kernel.qualified_name)
        except KeyError:
            raise LookupError(f"{self.path}: after pass {pass_name}, kernel "
                              f"{self.kernel.qualified_name} is no longer found") from None
        return PassContext(path=self.path, text=text, source=source, kernel=kernel,
                           spec=dataclasses.replace(self.spec, launch=launch),
                           launch_sites=source.launch_sites,
                           applied=self.applied + (pass_name,),
                           header_macros=self.header_macros)


def make_context(text: str, path: str, kernel_name: str, spec: KernelSpec,
                 source: Optional[SourceFile] = None,
                 header_macros: Optional[HeaderMacros] = None) -> PassContext:
    """Builds the context for the kernel named ``kernel_name`` in ``text``: ``source`` when it
    is ``text`` already parsed (a ``Target``'s, a document snapshot's: the kernel is parsed
    once per text), else ``text`` parsed here. ``header_macros`` (a ``Target``'s
    ``header_macros``, from its ``FileContext``) is bound to ``text``
    (``kernel_model.macros.bind_header_macros``): the passes then expand the headers'
    macros and the build's ``-D`` values as the file's own.

    Raises:
        KeyError: the file has no ``__global__`` kernel of that name (message lists the ones
            found).
    """
    from cudalens.source.parser import parse_source

    if source is None or source.text != text:
        source = parse_source(text, path)
    kernel = source.kernel(kernel_name)
    if header_macros is not None:
        bind_header_macros(text, header_macros)
    return PassContext(path=path, text=text, source=source, kernel=kernel, spec=spec,
                       launch_sites=source.launch_sites, header_macros=header_macros)

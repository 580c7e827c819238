"""Compile like the project's real build: flags from ``compile_commands.json`` or the
``[build]`` table of ``cudalens.toml``, and the project headers a runner request carries.

``build_for(path)`` -> ``ProjectBuild`` (flags, project root); ``build_defines(path)`` -> the
integer ``-D`` values for spec expressions; ``request_files(path, text, build)`` ->
``RequestFiles`` (headers and relative ``-I`` options for ``Variant.files``/``options``).
"""

from cudalens.build.compdb import CompdbError, Entry, entry_for, find_compdb, load_compdb
from cudalens.build.flags import BuildFlags, integer_defines, parse_arguments
from cudalens.build.headers import (HeaderError, RequestFiles, project_header_files,
                                    project_header_texts, request_files)
from cudalens.build.project import (ProjectBuild, build_defines, build_for, build_macro_values,
                                    local_nvcc_options)

__all__ = ["BuildFlags", "CompdbError", "Entry", "HeaderError", "ProjectBuild", "RequestFiles",
           "build_defines", "build_for", "build_macro_values", "entry_for", "find_compdb",
           "integer_defines",
           "load_compdb", "local_nvcc_options", "parse_arguments", "project_header_files",
           "project_header_texts",
           "request_files"]

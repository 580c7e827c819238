"""The one syntax layer over tree-sitter-cuda and the per-kernel model built on it.

``syntax``: the language, parsers, the one ``Parsed`` type and its cache (a text is parsed
once, whoever asks), node helpers. ``model``: ``KernelModel``, a kernel's nodes looked up
once per (text, kernel). ``loops``: ``for`` headers. ``edits``: byte edits of a text, fresh
names, indentation.
"""

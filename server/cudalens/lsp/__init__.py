"""The cudalens language server (pygls 2.x): code lenses, code actions, diagnostics, inlay hints
and hover for CUDA kernels, with background optimization on a GPU runner.

One module per feature (``code_lens``, ``code_actions``, ``diagnostics``, ``inlay_hints``,
``hover``, ``jobs`` for progress and the queue, ``watcher``, ``config``); ``server`` wires
them to LSP methods; ``session`` holds the state of one connection.
"""

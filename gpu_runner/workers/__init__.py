"""GPU worker processes and their supervision.

One worker process per GPU owns a ``gpu_runner.runner.Runner`` (``backend``, ``worker``); the
parent side starts it with the ``spawn`` method and talks to it over a pipe (``handle``). The
``supervisor`` sends it evaluations, notices a worker that died or stopped answering, blames the
candidate that did it, replaces the worker and evaluates the remaining candidates in the fresh
one. ``pool`` holds one supervisor per GPU and a CPU compile pool (``precompile``) that runs
nvcc for queued work while the GPU measures.

Nothing here imports pycuda in the parent process except ``precompile`` (lazily, on a GPU host).
"""

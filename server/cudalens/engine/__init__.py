"""The one path from a kernel to a verdict: typed events, the Runner and Proposer protocols,
and ``run``. See docs/architecture.md, "The engine".

``cudalens.engine.events``: what a run reports; ``cudalens.engine.runner``: the ``Runner``
protocol and its two implementations; ``cudalens.engine.proposer``: the ``Proposer``
protocol, ``choose`` and the built-in and LLM proposers; ``cudalens.engine.run``: ``run``;
``cudalens.engine.confirm``: the confirmation step every proposer ends with;
``cudalens.engine.bench``: what a new proposer measures with.
"""

"""The built-in optimizer: passes that rewrite a kernel or its launch configuration, and the
search that composes them into candidates for the GPU runner.

Entry points: ``make_context`` (a file, a kernel name and its spec -> ``PassContext``),
``search.propose`` (-> ``list[Candidate]``) and ``search.preconditions`` (which passes apply,
and why the others do not).
"""

from cudalens.optimizer.candidate import Candidate, PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable, make_context

__all__ = ["Candidate", "PassResult", "PassContext", "PassNotApplicable", "make_context"]

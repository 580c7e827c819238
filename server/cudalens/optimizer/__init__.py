"""The built-in optimizer: passes that rewrite a kernel or its launch configuration, and the
search that composes them into candidates for the GPU runner.

Entry points: ``make_context`` (a file, a kernel name and its spec -> ``PassContext``),
``staged_search.propose`` / ``staged_search.ordered`` (-> ``list[Candidate]`` in search
order), ``staged_search.preconditions`` (which passes apply, and why the others do not),
``batched.search`` (prune with the compile report, measure in batches on the runner, steer
towards the best structures, stop on a budget of candidates or seconds) and
``tunables.sweep`` (a candidate's ``@tune`` parameters as a family of candidates).
"""

from cudalens.optimizer.candidate import Candidate, PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable, make_context

__all__ = ["Candidate", "PassResult", "PassContext", "PassNotApplicable", "make_context"]

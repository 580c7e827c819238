"""The agent loop: the model proposes, the runner measures, the findings go back, round by round.

1. The original kernel is measured alone (the prompt gives its time and share of the copy
   bandwidth).
2. Each round: the model is asked for up to ``candidates_per_round`` candidates (tool calls
   ``evaluate``, or fenced code blocks). Each proposal is checked (``guard``: signature, side
   effects), its launch block parsed, its ``@tune`` parameters expanded (``tuning``), spliced
   into the file and built into runner variants, then compiled with the local nvcc
   (``precheck``); settings of a sweep that the built-in search would not time (spills,
   occupancy collapse: ``setting_prune``) are dropped with the reason. Problems found so far go back at once and the model may answer again, up to
   ``steps_per_round`` replies per round, so that a compile error costs no GPU time. ``compile``
   tool calls are answered at once the same way.
3. The round's accepted candidates (all their tuned settings) are verified and timed together in
   one runner batch; each result goes back (as the ``evaluate`` call's result, or in the round's
   feedback): compile errors at the lines of the model's code, the first mismatching element
   with expected and actual values, or the time, speedup and shares of the copy bandwidth and
   of the FP32 peak.
4. The loop stops after ``rounds`` rounds, or when the time or token budget is spent, the cancel
   event is set, or the model server or the runner fails.
   Where the runner can profile (``Runner.can_profile``: ``try_profile`` answers a
   ``gpu_runner.ncu_csv.Profile``), the round's fastest verified candidate, when it is the
   best so far, is profiled with Nsight Compute and the round's feedback says where its time
   goes (achieved occupancy, DRAM throughput, the main stall reasons); a profile that fails
   is noted, never fatal.
5. When verified candidates come from different batches, or when one of the best changes the
   launch, the best ``confirm_top`` are timed again side by side, and the winner is picked from
   that batch (speedups from different batches are never compared directly). A candidate
   launched otherwise than the user's program does (the spec's launch) also runs with its
   source under the user's launch in that batch, so it says whether it is a drop-in
   (``Row.drop_in``, ``cudalens.dropin``), as the built-in search's candidates do.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from gpu_runner.problem import Variant
from gpu_runner.report import CandidateResult, Evaluation
from cudalens.agent import prompts
from cudalens.agent.chat import Cancelled, ChatClient, ChatError, Reply
from cudalens.agent.config import AgentConfig
from cudalens.agent.facts import baseline_facts, device_facts
from cudalens.agent.feedback import (best_text, compile_text, profile_text, refused_text,
                                     result_text, tuned_text)
from cudalens.agent.guard import (ALLOWED_HEADERS, check_candidate, host_include_refusals,
                                  includes_of)
from cudalens.agent.ledger import Ledger, Usage, cost_of
from cudalens.agent.precheck import Precheck, arch_of, map_compiler_log, precheck
from cudalens.agent.replies import (CompileRequest, LaunchError, Proposal, Unusable, from_reply,
                                    parse_launch)
from cudalens.agent.result import (NOT_RUN, PRECHECK_FAILED, REFUSED, AgentResult, Outcome,
                                   RoundRecord)
from cudalens.agent.setting_prune import SettingPruner
from cudalens.agent.splice import Spliced, splice
from cudalens.agent.tuning import (Setting, TuneError, apply_setting, find_params, integer_defines,
                                   settings, substitute_launch)
from cudalens.engine.runner import Runner
from cudalens.engine.confirm import confirm, moved as moved_rows, with_drop_in
from cudalens.engine.events import (LlmProposal, LlmRound, MeasuringOriginal, Note, OnEvent,
                                    Stopped, ignore)
from cudalens.errors import CudalensError
from cudalens.optimize import OptimizeResult, Row, pick_winner, prepare
from cudalens.optimizer.candidate import Candidate
from cudalens.spec.errors import SpecError
from cudalens.spec.resolve import build_variant
from cudalens.spec.writer import format_spec
from cudalens.target import Target
from cudalens.textfile import from_bytes, to_bytes, wire_text

PrecheckFn = Callable[[Spliced, str, str, str, str], Optional[Precheck]]
PRECHECK_WORKERS = 4


class _Stop(Exception):
    """Ends the loop; the message is the stop reason, ``cause`` its ``StopCause``."""

    def __init__(self, reason: str, cause: str):
        super().__init__(reason)
        self.cause = cause


@dataclass
class _Setting:
    setting: Setting
    code: str
    spliced: Spliced
    variant: Variant
    candidate: Candidate


@dataclass
class _Accepted:
    label: str
    proposal: Proposal
    settings: list[_Setting]
    dropped: list[str] = field(default_factory=list)  # settings the pre-check rejected


@dataclass
class _Batch:
    evaluation: Evaluation
    rows: list[Row]
    proposal: dict[int, str] = field(default_factory=dict)  # id(row) -> its proposal's label


def _default_precheck(spliced: Spliced, code: str, path: str, arch: str,
                      kernel: str) -> Optional[Precheck]:
    return precheck(spliced, code, path, arch, kernel)


class AgentLoop:
    """One session for one target; see the module doc. Use ``run_agent``."""

    def __init__(self, target: Target, runner: Runner, config: AgentConfig, chat: ChatClient, *,
                 cancel: Optional[threading.Event], on_event: Optional[OnEvent],
                 repetitions: int, precheck_fn: Optional[PrecheckFn]) -> None:
        self.target = target
        self.kernel = target.kernel
        self.runner = runner
        self.config = config
        self.chat = chat
        self.cancel = cancel or threading.Event()
        self.say = on_event or ignore
        self.repetitions = repetitions
        self.precheck_fn = precheck_fn
        self._setting_pruner: Optional[SettingPruner] = None
        self.ledger = Ledger()
        self.messages: list[dict[str, Any]] = []
        self.pending: list[str] = []  # user text to send with the next request
        self.notes: list[str] = []
        self.batches: list[_Batch] = []
        self.rounds: list[RoundRecord] = []
        self.outcomes: list[Outcome] = []  # the current round's
        self.best: Optional[tuple[str, CandidateResult]] = None
        self.best_variant: Optional[Variant] = None
        self.profiled: Optional[str] = None  # the round's profile line, for its feedback
        self.started = time.monotonic()
        self.file_includes = includes_of(target.text)
        self.path = str(target.path)

    # -- setup -------------------------------------------------------------------------------

    def _measure_baseline(self) -> None:
        t = self.target
        # self.build: the project's headers and build macros, sent with every variant
        # (cudalens.build)
        self.device, self.build, self.problem, self.baseline = prepare(t, self.runner)
        self.say(MeasuringOriginal(t.kernel.name, self.device.name))
        ev = self.runner.evaluate(self.problem, self.baseline, [], repetitions=self.repetitions,
                                  on_event=self.say)
        if ev.error or ev.baseline is None:
            raise CudalensError(f"{t.path}: the baseline kernel {t.kernel.name} could not be "
                                f"measured: {ev.error or 'no timing'}")
        self.base_eval = ev
        self.arch = arch_of(self.device.compute_capability)

    def _system(self) -> str:
        n = self.config.candidates_per_round
        fmt = prompts.render("format_tools" if self.chat.tools else "format_fenced",
                             candidates_per_round=n)
        return prompts.render(
            "system", kernel_name=self.kernel.name, file_name=self.target.path.name,
            arch=self.arch, allowed_headers=", ".join(ALLOWED_HEADERS),
            size_names=", ".join(s.name for s in self.target.spec.sizes) or "none",
            max_variants=self.config.max_variants_per_candidate, output_format=fmt)

    def _task(self) -> str:
        t, k = self.target, self.kernel
        data = to_bytes(t.text)
        # A byte that is not UTF-8 (``textfile``) as a C octal escape: JSON cannot send it.
        return prompts.render(
            "task", kernel_name=k.name, file_name=t.path.name,
            file_text=wire_text(t.text.rstrip("\n")),
            kernel_text=wire_text(from_bytes(data[k.start_byte:k.end_byte])),
            kernel_first_line=k.range.start.line + 1, kernel_last_line=k.range.end.line + 1,
            spec_text=format_spec(t.spec).rstrip("\n"), device_facts=device_facts(self.device),
            baseline_facts=baseline_facts(self.problem, self.base_eval.baseline,
                                          self.base_eval.baseline_compile, self.device),
            rounds=self.config.rounds, candidates_per_round=self.config.candidates_per_round)

    # -- budgets -----------------------------------------------------------------------------

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _check_budgets(self, tokens: bool = True) -> None:
        """Raises ``_Stop`` when cancelled or a budget is spent (``tokens``: the token budget
        too; measuring candidates already received costs no tokens)."""
        cfg = self.config
        if self.cancel.is_set():
            raise _Stop("cancelled", "cancelled")
        if cfg.time_budget_s is not None and self._elapsed() >= cfg.time_budget_s:
            raise _Stop(f"the time budget of {cfg.time_budget_s:g} s is spent", "budget")
        if tokens and self.ledger.over(cfg.token_budget):
            raise _Stop(f"the token budget of {cfg.token_budget:,} tokens is spent "
                        f"({self.ledger.total.total_tokens:,} used)", "budget")

    # -- talking to the model ----------------------------------------------------------------

    def _ask(self) -> Reply:
        self._check_budgets()
        if self.pending:
            self.messages.append({"role": "user", "content": "\n\n".join(self.pending)})
            self.pending = []
        self.messages[0] = {"role": "system", "content": self._system()}
        timeout = self.config.request_timeout_s
        if self.config.time_budget_s is not None:
            timeout = max(0.01, min(timeout, self.config.time_budget_s - self._elapsed()))
        try:
            tools = prompts.tool_definitions() if self.chat.tools else None
            reply = self.chat.complete(self.messages, tools=tools, cancel=self.cancel,
                                       timeout_s=timeout)
        except Cancelled:
            raise _Stop("cancelled", "cancelled") from None
        except ChatError as exc:
            raise _Stop(f"the model server failed: {exc}", "model_failed") from None
        self.ledger.add(reply.usage)
        self.messages.append(reply.assistant_message())
        return reply

    def _runner_event(self, event) -> None:
        """Passes the runner's events on; raising ``Cancelled`` here makes the runner
        client abandon (and cancel on the runner) the batch in flight."""
        if self.cancel.is_set():
            raise Cancelled("cancelled while the runner was measuring")
        self.say(event)

    def _tool_result(self, call_id: Optional[str], text: str) -> bool:
        """Answers a tool call; False when ``call_id`` is None (a fenced proposal)."""
        if call_id is None:
            return False
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        return True

    # -- checking proposals ------------------------------------------------------------------

    def _accept(self, label: str, p: Proposal) -> _Accepted | list[str]:
        """The proposal built into runner variants, or the reasons it is refused."""
        t = self.target
        refusals = check_candidate(p.code, self.kernel, self.file_includes)
        if refusals:
            return [str(r) for r in refusals]
        try:
            launch = parse_launch(p.launch, t.spec.launch)
            found = settings(find_params(p.code), self.config.max_variants_per_candidate)
        except (LaunchError, TuneError) as exc:
            return [str(exc)]
        defines = integer_defines(p.code)
        sizes = frozenset(s.name for s in t.spec.sizes)
        out: list[_Setting] = []
        for i, setting in enumerate(found, 1):
            code = apply_setting(p.code, setting) if setting.values else p.code
            setting_launch = substitute_launch(launch, {**defines, **dict(setting.values)}, sizes)
            spliced = splice(t.text, self.kernel, code)
            name = label if len(found) == 1 else f"{label}-{i}"
            try:
                variant = build_variant(name, spliced.text, self.kernel.qualified_name, t.spec,
                                        setting_launch, self.device.sm_count,
                                        options=self.build.options, files=self.build.files,
                                        source_path=self.build.source_path)
            except SpecError as exc:
                where = f" with {setting.label}" if setting.values else ""
                return [f"the launch configuration{where} cannot be used: {exc.message}"]
            tag = f" {setting.label}" if setting.values else ""
            out.append(_Setting(setting, code, spliced, variant, Candidate(
                label=f"llm {label}{tag}",
                explanation=p.explanation or "a rewrite proposed by the model",
                source=spliced.text, kernel=self.kernel.qualified_name, launch=setting_launch,
                passes=("llm",))))
        return _Accepted(label, p, out)

    def _precheck_all(self, accepted: list[_Accepted]) -> dict[int, Optional[Precheck]]:
        """Pre-checks every setting of every accepted proposal (in parallel); by ``id`` of the
        setting. Empty when the pre-check is off."""
        if self.precheck_fn is None or not accepted:
            return {}
        jobs = [s for a in accepted for s in a.settings]
        with ThreadPoolExecutor(max_workers=min(PRECHECK_WORKERS, len(jobs))) as pool:
            results = list(pool.map(lambda s: self.precheck_fn(s.spliced, s.code, self.path,
                                                               self.arch, self.kernel.name), jobs))
        if any(r is None for r in results) and not any("pre-check" in n for n in self.notes):
            self.notes.append("nvcc was not found here: no compile pre-check; compile errors "
                              "come from the runner")
        return {id(s): r for s, r in zip(jobs, results)}

    def _prune(self, a: _Accepted, checks: dict[int, Optional[Precheck]]) -> None:
        """Drops the settings of ``a``'s sweep that the built-in search would not time
        (``cudalens.agent.setting_prune``); the reasons join ``a.dropped``."""
        if len(a.settings) < 2:
            return
        reports = [getattr(checks.get(id(s)), "resources", None) for s in a.settings]
        try:
            if self._setting_pruner is None:
                self._setting_pruner = SettingPruner(self.target, self.arch)
            found = self._setting_pruner([s.candidate for s in a.settings], reports)
        except Exception as exc:  # noqa: BLE001 - pruning saves GPU time; without it all run
            self.notes.append(f"the settings of {a.label} were not pruned: {exc}")
            return
        a.dropped += [f"{a.settings[i].setting.label}: not timed: {reason}"
                      for i, reason in found.dropped]
        a.settings = [a.settings[i] for i in found.kept]
        if found.note:
            self.notes.append(f"{a.label}: {found.note}")

    def _compile_tool(self, req: CompileRequest) -> str:
        refusals = check_candidate(req.code, self.kernel, self.file_includes)
        warn = ("\nIt would be refused by evaluate:\n" + "\n".join(f"  - {r}" for r in refusals)
                if refusals else "")
        if self.precheck_fn is None:
            return "compile is not available in this session; submit with evaluate" + warn
        if host_include_refusals(req.code):  # nvcc would echo the file into this reply
            return "not compiled: an include could reach a file outside the project" + warn
        spliced = splice(self.target.text, self.kernel, req.code)
        result = self.precheck_fn(spliced, req.code, self.path, self.arch, self.kernel.name)
        if result is None:
            return "compile is not available here (no nvcc); submit with evaluate" + warn
        if not result.ok:
            return compile_text(result.problems) + warn
        return f"compiles for {self.arch}: {result.resources_text()}" + warn

    # -- one round ---------------------------------------------------------------------------

    def _round(self, r: int) -> None:
        """One round; its outcomes collect in ``self.outcomes`` (kept when ``_Stop`` ends it)."""
        cfg = self.config
        outcomes = self.outcomes
        told: set[str] = set()  # labels whose feedback already went back
        ready: list[_Accepted] = []
        count = 0
        for step in range(cfg.steps_per_round):
            self.say(LlmRound(r, "asking", endpoint=cfg.endpoint))
            reply = self._ask()
            items = from_reply(reply, self.kernel.name, prompts.tool_names(),
                               cfg.candidates_per_round - len(ready))
            retry: list[str] = []
            accepted: list[_Accepted] = []
            for item in items:
                if isinstance(item, CompileRequest):
                    self._tool_result(item.call_id, self._compile_tool(item))
                    continue
                count += 1
                label = f"r{r}c{count}"
                if isinstance(item, Unusable):
                    text = refused_text([item.reason])
                    outcomes.append(Outcome(r, label, item.origin, REFUSED, text,
                                            call_id=item.call_id))
                else:
                    built = self._accept(label, item)
                    if isinstance(built, _Accepted):
                        accepted.append(built)
                        continue
                    text = refused_text(built)
                    outcomes.append(Outcome(r, label, item.origin, REFUSED, text,
                                            call_id=item.call_id))
                self.say(LlmProposal(r, label, "refused"))
                if self._tool_result(item.call_id, text):
                    told.add(label)
                else:
                    retry.append(f"{label} ({item.origin}): {text}")
            checks = self._precheck_all(accepted)
            for a in accepted:
                results = [checks.get(id(s)) for s in a.settings]
                good = [s for s, c in zip(a.settings, results) if c is None or c.ok]
                if good:
                    a.dropped = [f"{s.setting.label}: {compile_text(c.problems)}"
                                 for s, c in zip(a.settings, results) if c is not None and not c.ok]
                    a.settings = good
                    self._prune(a, checks)
                    ready.append(a)
                    continue
                first = next(c for c in results if c is not None)
                text = compile_text(first.problems)
                if a.settings[0].setting.values:
                    text = f"with {a.settings[0].setting.label}, {text} (every setting failed)"
                outcomes.append(Outcome(r, a.label, a.proposal.origin, PRECHECK_FAILED, text,
                                        a.settings[0].candidate, call_id=a.proposal.call_id))
                self.say(LlmProposal(r, a.label, "does not compile"))
                if self._tool_result(a.proposal.call_id, text):
                    told.add(a.label)
                else:
                    retry.append(f"{a.label} ({a.proposal.origin}): {text}")
            if ready or step == cfg.steps_per_round - 1:
                break
            if retry:
                told.update(line.split(" ", 1)[0] for line in retry)
                self.pending.append(prompts.render(
                    "retry", problems="\n\n".join(retry),
                    steps_left=cfg.steps_per_round - step - 1, round=r))
        self._measure(r, ready)
        self._round_feedback(r, outcomes, told)

    def _not_run(self, r: int, ready: list[_Accepted], why: str) -> None:
        for a in ready:
            self._tool_result(a.proposal.call_id, f"not measured: {why}")
            self.outcomes.append(Outcome(r, a.label, a.proposal.origin, NOT_RUN,
                                         f"not measured: {why}", call_id=a.proposal.call_id))

    def _measure(self, r: int, ready: list[_Accepted]) -> None:
        if not ready:
            return
        try:
            self._check_budgets(tokens=False)
        except _Stop as stop:
            self._not_run(r, ready, str(stop))
            raise
        variants = [s.variant for a in ready for s in a.settings]
        self.say(LlmRound(r, "measuring", variants=len(variants), device=self.device.name))
        try:
            ev = self.runner.evaluate(self.problem, self.baseline, variants,
                                      repetitions=self.repetitions, on_event=self._runner_event)
        except Cancelled:
            self._not_run(r, ready, "cancelled")
            raise _Stop("cancelled", "cancelled") from None
        except (CudalensError, RuntimeError, ValueError) as exc:
            self._not_run(r, ready, f"the runner failed: {exc}")
            raise _Stop(f"the runner failed: {exc}", "runner_failed") from None
        by_label = dict(zip((v.label for v in variants), ev.candidates))
        batch = _Batch(ev, [])
        new_best = False
        outcomes = self.outcomes
        for a in ready:
            tried = [(s, by_label[s.variant.label]) for s in a.settings
                     if s.variant.label in by_label]
            if not tried:
                text = f"not measured: {ev.error or 'the runner returned no result'}"
                outcomes.append(Outcome(r, a.label, a.proposal.origin, NOT_RUN, text,
                                        call_id=a.proposal.call_id))
                self._tool_result(a.proposal.call_id, text)
                continue
            for s, res in tried:
                batch.rows.append(Row(s.candidate, res))
                batch.proposal[id(batch.rows[-1])] = a.label
            timed = [(s, res) for s, res in tried if res.verdict.ok and res.speedup is not None]
            best_s, best_r = max(timed, key=lambda x: x[1].speedup.value) if timed else tried[0]
            problems = (map_compiler_log(best_r.compile.log, best_s.spliced, best_s.code)
                        if best_r.verdict.status == "compile_error" else None)
            text = result_text(best_r, self.problem, self.device, problems)
            if len(a.settings) > 1 or a.dropped:
                text += "\n" + tuned_text([(s.setting.label, res) for s, res in tried],
                                          best_s.setting.label if timed else None)
            if a.dropped:
                text += "\nsettings not measured:\n" + "\n".join(
                    f"  - {d}" for d in a.dropped)
            if timed and (self.best is None or best_r.speedup.value > self.best[1].speedup.value):
                self.best = (f"{a.label} {best_s.setting.label}".strip(), best_r)
                self.best_variant = best_s.variant
                new_best = True
            outcomes.append(Outcome(r, a.label, a.proposal.origin, best_r.verdict.status, text,
                                    best_s.candidate, best_r,
                                    tuple((s.setting.label, res) for s, res in tried),
                                    a.proposal.call_id))
            self.say(LlmProposal(r, a.label, best_r.verdict.status,
                                 best_r.speedup.value if best_r.speedup else None))
            self._tool_result(a.proposal.call_id, text)
        self.batches.append(batch)
        if new_best:
            self._profile_best(r)

    def _profile_best(self, r: int) -> None:
        """Profiles the best candidate so far when the runner can (see the module doc)."""
        if not self.runner.can_profile or self.best is None or self.best_variant is None:
            return
        self._check_budgets(tokens=False)
        label = self.best[0]
        self.say(Note(f"round {r}: profiling {label} with Nsight Compute"))
        try:
            answer = self.runner.try_profile(self.problem, self.best_variant)
            if answer.profile is None:
                raise CudalensError(f"no profile of {self.best_variant.label}: {answer.reason}")
        except Exception as exc:  # noqa: BLE001 - a profile is extra information, never fatal
            note = f"the profile of {label} failed: {exc}"
            self.notes.append(note)
            self.profiled = None
            return
        self.profiled = profile_text(label, answer.profile)

    def _round_feedback(self, r: int, outcomes: list[Outcome], told: set[str]) -> None:
        cfg = self.config

        def order(o: Outcome) -> int:
            return int(o.label.split("c", 1)[1])

        lines = [f"{o.label} ({o.origin}): {o.feedback}" for o in sorted(outcomes, key=order)
                 if o.label not in told and o.call_id is None]
        if not outcomes:
            lines = ["no candidate was submitted"]
        results = "\n\n".join(lines) or "each candidate's result is in its tool result above"
        self.pending.append(prompts.render(
            "feedback", round=r, rounds=cfg.rounds,
            baseline_time=f"{self.base_eval.baseline.median_us:,.2f} us",
            results=results,
            best=(best_text(*self.best) + (f"\n{self.profiled}" if self.profiled else "")
                  if self.best else "none yet"),
            next_step=(f"Propose up to {cfg.candidates_per_round} candidates for round {r + 1}: "
                       f"keep what made the fastest candidate fast, and fix what failed."
                       if r < cfg.rounds else "That was the last round.")))

    # -- the session -------------------------------------------------------------------------

    def run(self) -> AgentResult:
        self._measure_baseline()
        self.messages = [{"role": "system", "content": ""},
                         {"role": "user", "content": self._task()}]
        stop_reason, stop_cause = f"all {self.config.rounds} rounds done", "done"
        for r in range(1, self.config.rounds + 1):
            before_usage, before_requests = self.ledger.total, self.ledger.requests
            started = time.monotonic()
            self.outcomes = []
            try:
                self._round(r)
            except _Stop as stop:
                stop_reason, stop_cause = str(stop), stop.cause
                self._record(r, self.outcomes, before_usage, before_requests, started)
                break
            self._record(r, self.outcomes, before_usage, before_requests, started)
        self.say(Stopped(stop_reason, stop_cause))
        return self._finish(stop_reason, stop_cause)

    def _record(self, r: int, outcomes: list[Outcome], usage0: Usage, requests0: int,
                started: float) -> None:
        total = self.ledger.total
        usage = Usage(total.prompt_tokens - usage0.prompt_tokens,
                      total.completion_tokens - usage0.completion_tokens, total.estimated)
        if outcomes or self.ledger.requests > requests0:
            self.rounds.append(RoundRecord(r, tuple(outcomes), self.ledger.requests - requests0,
                                           usage, time.monotonic() - started))

    def _finish(self, stop_reason: str, stop_cause: str) -> AgentResult:
        rows, evaluation, confirmed = self._final_rows()
        t = self.target
        optimize = OptimizeResult(target=t, device=self.device, problem=self.problem,
                                  evaluation=evaluation, rows=tuple(rows),
                                  winner=pick_winner(tuple(rows)))
        cfg = self.config
        return AgentResult(
            optimize=optimize, rounds=tuple(self.rounds), stop_reason=stop_reason,
            usage=self.ledger.total, requests=self.ledger.requests,
            cost=cost_of(self.ledger.total, cfg.model, cfg.price(), cfg.origin("prices")),
            endpoint=cfg.endpoint, notes=tuple(self.chat.notes + self.notes),
            confirmed=confirmed, messages=tuple(self.messages), stop_cause=stop_cause)

    def _final_rows(self) -> tuple[list[Row], Evaluation, bool]:
        """The rows, evaluation and "confirmed" flag of the session's ``OptimizeResult``.

        Verified rows of one batch only: that batch's evaluation, with every failed row of the
        other batches (they carry no timing). Verified rows of several batches: the best of at
        least two different candidates are timed again together (``_confirm``); so are the best
        when one of them changes the user's launch, to run it under that launch too. If there
        are fewer, if that is off (``confirm_top`` below 2, or 0 for a launch change) or fails,
        the batch holding the fastest verified row is used as above, and a launch-changing row
        says it was not checked under the user's launch (``drop_in`` None).
        """
        def timed(row: Row) -> bool:
            return row.result.verdict.ok and row.result.speedup is not None

        all_rows = [row for b in self.batches for row in b.rows]
        fastest = {i: max(r.result.speedup.value for r in b.rows if timed(r))
                   for i, b in enumerate(self.batches) if any(timed(r) for r in b.rows)}
        if not fastest:
            last = self.batches[-1].evaluation if self.batches else self.base_eval
            return all_rows, last, False
        top = self._top()
        user = self.target.spec.launch
        if ((len(fastest) > 1 and len(top) > 1) or moved_rows(top, user)) and \
                not self.cancel.is_set():
            confirmed = self._confirm(top)
            if confirmed is not None:
                rows, ev, done = confirmed
                others = [with_drop_in(r, user, None) for r in all_rows if not timed(r)]
                return rows + others, ev, done
        keep = max(fastest, key=fastest.get)
        rows = [with_drop_in(r, user, None) for i, b in enumerate(self.batches) for r in b.rows
                if i == keep or not timed(r)]
        return rows, self.batches[keep].evaluation, False

    def _top(self) -> list[Row]:
        """The fastest verified row of each proposal (its best tuned setting), best first,
        distinct by source and launch, at most ``confirm_top``."""
        best: dict[str, Row] = {}
        for b in self.batches:
            for row in b.rows:
                label = b.proposal[id(row)]
                if row.result.verdict.ok and row.result.speedup is not None and (
                        label not in best or
                        row.result.speedup.value > best[label].result.speedup.value):
                    best[label] = row
        out: list[Row] = []
        for row in sorted(best.values(), key=lambda r: -r.result.speedup.value):
            if all(row.candidate.key != o.candidate.key for o in out):
                out.append(row)
        return out[:self.config.confirm_top]

    def _confirm(self, top: list[Row]) -> Optional[tuple[list[Row], Evaluation, bool]]:
        """The best candidates of different rounds timed again side by side (labels
        ``final1``, ``final2``...), those launched otherwise than the user's program does also
        under the user's launch (the spec's): the engine's confirmation step, the built-in
        search's too (``cudalens.engine.confirm``), so each row carries its drop-in verdict.
        None, with a note, when that timing was cancelled or failed."""
        spec = self.target.spec

        def variant(label: str, row: Row, launch) -> Variant:
            c = row.candidate
            return build_variant(label, c.source, c.kernel, spec, launch, self.device.sm_count,
                                 options=self.build.options, files=self.build.files,
                                 source_path=self.build.source_path)

        def send(variants: list[Variant], _launches) -> Evaluation:
            ev = self.runner.evaluate(self.problem, self.baseline, variants,
                                      repetitions=self.repetitions, on_event=self._runner_event)
            if ev.error and not ev.candidates:
                raise CudalensError(ev.error)
            return ev

        labels = [f"final{i}" for i in range(1, len(top) + 1)]
        try:
            done = confirm(top, spec.launch, labels, variant, send, self.say)
        except Cancelled:
            self.notes.append("the final side-by-side timing was cancelled")
            return None
        except (CudalensError, RuntimeError, ValueError) as exc:
            self.notes.append(f"the final side-by-side timing failed: {exc}")
            return None
        return list(done.rows), done.evaluation, True


def run_agent(target: Target, runner: Runner, config: AgentConfig, *,
              chat: Optional[ChatClient] = None, cancel: Optional[threading.Event] = None,
              on_event: Optional[OnEvent] = None, repetitions: int = 50,
              precheck_fn: Optional[PrecheckFn] = _default_precheck) -> AgentResult:
    """Runs the agent loop on ``target`` (see the module doc).

    runner: a ``cudalens.engine.runner.Runner`` (``RunnerClient``, ``InProcessRunner``).
        chat: the model client (default: made from ``config``).
    cancel: set it to stop at the next step (a request in flight is abandoned at once; a
        runner batch in flight finishes first). on_event: called with the session's events
        (``cudalens.engine.events``: the runner's, and ``MeasuringOriginal``, ``LlmRound``,
        ``LlmProposal``, ``Confirming``, ``Stopped``).
    precheck_fn: compiles candidates before the runner (default: the local nvcc, skipped where
        it is missing); None turns the pre-check off (so does ``config.precheck = False``).

    Raises:
        CudalensError: no model is configured, the spec cannot be resolved, or the original
            kernel cannot be measured.
    """
    if not config.configured:
        raise CudalensError("the LLM proposer needs a model: set model in the [agent] table of "
                            "cudalens.toml, or pass --model")
    own = chat is None
    chat = chat or ChatClient(config)
    try:
        loop = AgentLoop(target, runner, config, chat, cancel=cancel, on_event=on_event,
                         repetitions=repetitions,
                         precheck_fn=precheck_fn if config.precheck else None)
        return loop.run()
    finally:
        if own:
            chat.close()

"""How long callers take (S9): response times per question and ladder stage.

A caller's response time is measured from the observed end of what the agent said
(the prompt's playback_completed, not its request) to the caller's first speech
(turn_started). Callers the call moved on from before they spoke (a reminder's next
stage, a close, a hang-up) did not answer within the window: their times are
right-censored, and the quantiles are Kaplan-Meier estimates, so slow callers cut
off by the ladder do not pull the median down. With no censoring the estimate is the
plain sample quantile.

Per journal the reader keeps only numbers (sessions.timing.TimingPart); parts merge,
so a corpus is read on every core and the result does not depend on the split.
"""

from __future__ import annotations

import math
from collections import Counter
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from .flowfiles import check_data
from .journal import JournalError, JournalScan, Unread, iter_records, reason_of
from .corpus import map_sessions, named, verdict

TOO_EARLY_MS = 1500.0  # a reminder begun this close before the caller spoke came too early
QUESTION = "question"  # the stage label of the question itself (the ladder's first, quiet wait)
_LABELS = {"question": QUESTION, "restate": QUESTION, "reprompt": "reprompt", "acknowledgement": "hold",
           "still_waiting": "hold", "close": "safe_close"}


@dataclass
class Samples:
    """Response times: observed (the caller spoke) and censored (cut off before).

    Kept as counts per whole millisecond (a journal's resolution), not as lists: the
    memory a question takes is bounded by the longest wait, not by the corpus size.
    """

    spoke: Counter = field(default_factory=Counter)
    censored: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        # Samples(spoke=[...], censored=[...]): lists of times are counted
        if not isinstance(self.spoke, Counter):
            self.spoke = Counter(round(t) for t in self.spoke)
        if not isinstance(self.censored, Counter):
            self.censored = Counter(round(t) for t in self.censored)

    def said(self, t: float) -> None:
        self.spoke[round(t)] += 1

    def cut(self, t: float) -> None:
        self.censored[round(t)] += 1

    @property
    def n(self) -> int:
        return sum(self.spoke.values())

    @property
    def n_censored(self) -> int:
        return sum(self.censored.values())

    def add(self, other: Samples) -> None:
        self.spoke.update(other.spoke)
        self.censored.update(other.censored)

    def steps(self) -> list[tuple[float, float]]:
        """The Kaplan-Meier curve, (time, share still silent) at each time someone spoke."""
        return _km_steps(self.spoke, self.censored)

    def survival(self) -> Callable[[float], float]:
        """S(t), the Kaplan-Meier share still silent t ms after the prompt ended."""
        steps = self.steps()
        times = [t for t, _ in steps]

        def at(t: float) -> float:
            i = bisect_right(times, t)
            return steps[i - 1][1] if i else 1.0
        return at

    def quantiles(self, *shares: float) -> list[float | None]:
        """The times by which each share has spoken (None: the corpus never gets there)."""
        steps = self.steps()
        return [next((time for time, value in steps if value <= 1 - q + 1e-12), None) for q in shares]

    def quantile(self, q: float) -> float | None:
        return self.quantiles(q)[0]


def _km_steps(spoke: Counter, censored: Counter) -> list[tuple[float, float]]:
    at_risk = sum(spoke.values()) + sum(censored.values())
    s, steps = 1.0, []
    for t in sorted(spoke.keys() | censored.keys()):
        deaths = spoke.get(t, 0)
        if deaths:
            s *= 1 - deaths / at_risk
            steps.append((float(t), s))
        at_risk -= deaths + censored.get(t, 0)  # censored at t were still at risk at t
    return steps


@dataclass
class TimingPart:
    """What one journal (or many, merged) says about response times."""

    sessions: int = 0
    unreadable: list[Unread] = field(default_factory=list)  # not counted
    read_in_part: list[Unread] = field(default_factory=list)  # counted up to their damage
    flows: set[str] = field(default_factory=set)
    other_flow: list[str] = field(default_factory=list)  # journals of a flow not asked for
    # question -> samples from the question's end to the first speech of its episode
    questions: dict[str, Samples] = field(default_factory=dict)
    # (question, ladder stage) -> samples from that stage's prompt end to the next speech
    stages: dict[tuple[str, str], Samples] = field(default_factory=dict)
    # (question, ladder stage) -> ms from the question's end to the stage's prompt request
    stage_offsets: dict[tuple[str, str], Counter] = field(default_factory=dict)  # ms -> episodes
    spoke_over_question: dict[str, int] = field(default_factory=dict)
    reminders: dict[str, int] = field(default_factory=dict)
    too_early: dict[str, int] = field(default_factory=dict)
    closes: dict[str, int] = field(default_factory=dict)
    closed_after_speaking: dict[str, list[str]] = field(default_factory=dict)  # question -> sessions
    # counts per whole ms, as Samples: bounded memory however many sessions
    holds: Counter = field(default_factory=Counter)  # each hold's length
    hold_totals: Counter = field(default_factory=Counter)  # all holds of an episode
    hold_ms: Counter = field(default_factory=Counter)  # the policy's hold and budget, per episode
    hold_budget_ms: Counter = field(default_factory=Counter)
    waits: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # question -> ladder stages

    def note_unreadable(self, unread: Unread) -> None:
        self.unreadable.append(unread)

    def add(self, other: TimingPart) -> None:
        self.sessions += other.sessions
        self.unreadable += other.unreadable
        self.read_in_part += other.read_in_part
        self.flows |= other.flows
        self.other_flow += other.other_flow
        for key, samples in other.questions.items():
            self.questions.setdefault(key, Samples()).add(samples)
        for key, samples in other.stages.items():
            self.stages.setdefault(key, Samples()).add(samples)
        for key, offsets in other.stage_offsets.items():
            self.stage_offsets.setdefault(key, Counter()).update(offsets)
        for name in ("spoke_over_question", "reminders", "too_early", "closes"):
            mine = getattr(self, name)
            for key, n in getattr(other, name).items():
                mine[key] = mine.get(key, 0) + n
        for key, names in other.closed_after_speaking.items():
            self.closed_after_speaking.setdefault(key, []).extend(names)
        for name in ("holds", "hold_totals", "hold_ms", "hold_budget_ms"):
            getattr(self, name).update(getattr(other, name))
        for key, waits in other.waits.items():
            self.waits.setdefault(key, waits)


class _Episode:
    def __init__(self, question: str) -> None:
        self.question = question
        self.question_end: float | None = None
        self.spoke = False
        self.last_end: tuple[float, str] | None = None  # (t, stage label) awaiting speech
        self.last_reminder: float | None = None
        self.held_since: float | None = None
        self.held_total = 0.0


_compiled: dict[str, Any] = {}  # flow hash -> the compiled flow (or None), per process


def _waits(header: dict) -> Callable[[str], list[tuple[str, float]]]:
    """question -> its ladder stages and their waits, as the flow in the header runs them
    (compiled once per flow and process: per-question ladders and timing included)."""
    policy = header.get("ladder_policy") or {}
    default = [(s.get("name"), float(s.get("wait_ms", 0))) for s in policy.get("stages", []) if isinstance(s, dict)]
    document = header.get("flow_document")
    if not isinstance(document, dict):
        return lambda question: default  # a ladder-only session (an incident, a framework's ladder mode)
    key = str(header.get("flow_hash")) + ":" + str(header.get("ladder_defaults", 1))
    if key not in _compiled:
        report = check_data(document, "header flow_document", ladder_defaults=header.get("ladder_defaults", 1))
        _compiled[key] = report.flow
    flow = _compiled[key]
    if flow is None:
        return lambda question: default

    def waits(question: str) -> list[tuple[str, float]]:
        try:
            stage = flow.stage(question)
        except KeyError:
            return default
        return [(s.name, s.wait_ms) for s in flow.policy_for(question, stage.timing).stages]
    return waits


def journal_timing(folder: Path, only_flow: str | None = None) -> TimingPart:
    """The response times one journal holds (a damaged journal: what it holds, and named).
    With `only_flow`, a journal of another flow is named in `other_flow`, not counted."""
    part = TimingPart()
    scan = JournalScan()
    name = folder.name
    episodes: dict[Any, _Episode] = {}
    current: _Episode | None = None
    prompts: dict[int, tuple[str, str | None, str | None]] = {}  # token -> kind, ladder stage, question
    try:
        records = iter_records(folder, scan)
        first = next(records, None)
    except JournalError as exc:
        part.unreadable.append(Unread(str(folder), reason_of(exc, folder)))
        return part
    header = scan.header or {}
    if only_flow is not None and header.get("flow") != only_flow:
        part.other_flow.append(f"{folder} ({header.get('flow', 'no flow named')})")
        return part
    part.sessions = 1
    part.flows.add(str(header.get("flow", "?")))
    waits_for = _waits(header)
    policy = header.get("ladder_policy") or {}
    last_t = 0.0

    def censor(ep: _Episode, t: float) -> None:
        if not ep.spoke and ep.question_end is not None:
            part.questions.setdefault(ep.question, Samples()).cut(max(0.0, t - ep.question_end))
        if ep.last_end is not None:
            end_t, label = ep.last_end
            part.stages.setdefault((ep.question, label), Samples()).cut(max(0.0, t - end_t))
            ep.last_end = None
        if ep.held_since is not None:
            part.holds[round(t - ep.held_since)] += 1
            ep.held_total += t - ep.held_since
            ep.held_since = None

    def close(ep: _Episode, t: float) -> None:
        censor(ep, t)
        if ep.held_total:
            part.hold_totals[round(ep.held_total)] += 1

    for record in _chain(first, records):
        t = float(record.get("t_ms", last_t))
        last_t = t
        if record["type"] == "input":
            kind = record.get("kind")
            event = record.get("event") or {}
            ep = current
            if kind == "turn_started" and ep is not None:
                if not ep.spoke:
                    ep.spoke = True
                    if ep.question_end is None:
                        part.spoke_over_question[ep.question] = part.spoke_over_question.get(ep.question, 0) + 1
                        part.questions.setdefault(ep.question, Samples()).said(0.0)
                    else:
                        part.questions.setdefault(ep.question, Samples()).said(t - ep.question_end)
                if ep.last_end is not None:
                    end_t, label = ep.last_end
                    part.stages.setdefault((ep.question, label), Samples()).said(t - end_t)
                    ep.last_end = None
                if ep.last_reminder is not None and t - ep.last_reminder <= TOO_EARLY_MS:
                    part.too_early[ep.question] = part.too_early.get(ep.question, 0) + 1
                ep.last_reminder = None
                if ep.held_since is not None:
                    part.holds[round(t - ep.held_since)] += 1
                    ep.held_total += t - ep.held_since
                    ep.held_since = None
            elif kind == "playback_completed" and ep is not None:
                prompt = prompts.get(event.get("token"))
                if prompt is not None and prompt[2] == ep.question:
                    label = _LABELS.get(prompt[0], prompt[1] or prompt[0])
                    if prompt[0] == "question" and ep.question_end is None:
                        ep.question_end = t
                    if ep.last_end is not None:  # the caller stayed silent through it
                        censor_end, censor_label = ep.last_end
                        part.stages.setdefault((ep.question, censor_label), Samples()).cut(t - censor_end)
                    ep.last_end = (t, label)
            continue
        effect = record.get("effect")
        if effect == "RequestPrompt":
            prompts[record.get("token")] = (record.get("kind"), record.get("stage"), record.get("question"))
            ep = current
            if ep is not None and record.get("question") == ep.question:
                if record.get("kind") == "reminder":
                    part.reminders[ep.question] = part.reminders.get(ep.question, 0) + 1
                    ep.last_reminder = t
                    if not ep.spoke and ep.question_end is not None:
                        part.stage_offsets.setdefault((ep.question, record.get("stage")), Counter())[round(t - ep.question_end)] += 1
                elif record.get("kind") == "close":
                    part.closes[ep.question] = part.closes.get(ep.question, 0) + 1
                    if ep.spoke:
                        part.closed_after_speaking.setdefault(ep.question, []).append(name)
            continue
        if effect is not None:
            continue
        trace = record.get("kind")
        if trace == "episode_started":
            if current is not None:
                close(current, t)
            current = _Episode(str(record.get("question")))
            episodes[record.get("episode")] = current
            part.waits.setdefault(current.question, waits_for(current.question))
            part.hold_ms[float(policy.get("hold_ms", 0) or 0)] += 1
            part.hold_budget_ms[float(policy.get("hold_budget_ms", 0) or 0)] += 1
        elif trace == "episode_ended" and current is not None:
            close(current, t)
            current = None
        elif trace == "state" and current is not None:
            if record.get("state") == "held" and current.held_since is None:
                current.held_since = t
            elif record.get("state") != "held" and current.held_since is not None:
                part.holds[round(t - current.held_since)] += 1
                current.held_total += t - current.held_since
                current.held_since = None
    if current is not None:
        close(current, last_t)  # a journal cut mid-episode: censored where it stops
    damage = scan.damage()
    if damage:  # counted up to the damage (censored where it stops), and named
        part.read_in_part.append(Unread(str(folder), damage))
    return part


def _chain(first: dict | None, rest: Iterable[dict]) -> Iterable[dict]:
    if first is not None:
        yield first
    yield from rest


def corpus_timing(roots: list[Path], workers: int | None = None,
                  progress: Callable[[int], None] | None = None, only_flow: str | None = None,
                  scheduler: Any = None) -> TimingPart:
    """Every session under `roots`, read on every core (or a Dask cluster: sessions.corpus)."""
    return map_sessions(roots, partial(journal_timing, only_flow=only_flow), TimingPart(), workers, progress, scheduler)


# -- the report ------------------------------------------------------------------------


def _counted_quantile(counts: Counter, q: float, upper: bool = False) -> float | None:
    """A quantile of counted values: the median as statistics.median takes it (the mean
    of the middle two), or with `upper` the value at index int(n * q) of the sorted values."""
    n = sum(counts.values())
    if n == 0:
        return None
    ordered = sorted(counts.items())

    def at(index: int) -> float:  # 0-based, in sorted order
        seen = 0
        for value, count in ordered:
            seen += count
            if seen > index:
                return float(value)
        return float(ordered[-1][0])
    if upper:
        return at(min(n - 1, int(n * q)))
    return (at((n - 1) // 2) + at(n // 2)) / 2  # the median (q is 0.5 here)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _suggest(samples: Samples, share: float = 0.9) -> float | None:
    q = samples.quantile(share)
    if q is None:
        return None
    return float(max(2000, min(60_000, math.ceil(q / 500) * 500)))


def summary(part: TimingPart) -> dict:
    """The report as data (what --json prints; the text and CSV are made from it)."""
    questions = []
    for question in sorted(part.questions):
        samples = part.questions[question]
        waits = part.waits.get(question, [])
        survival = samples.survival()
        stages = []
        for name, wait_ms in waits:
            local = part.stages.get((question, QUESTION if name == (waits[0][0] if waits else None) else name))
            offsets = part.stage_offsets.get((question, name), Counter())
            row: dict[str, Any] = {"stage": name, "wait_ms": wait_ms}
            if offsets:
                offset = _counted_quantile(offsets, 0.5)
                row["starts_after_question_ms"] = _ms(offset)
                row["callers_still_silent_when_it_starts"] = round(survival(offset), 4)
            if local is not None and (local.spoke or local.censored):
                p50, p90, p99 = local.quantiles(0.5, 0.9, 0.99)
                row.update({
                    "n": local.n, "censored": local.n_censored,
                    "p50_ms": _ms(p50), "p90_ms": _ms(p90), "p99_ms": _ms(p99),
                    "share_past_wait": round(local.survival()(wait_ms), 4),
                })
            stages.append(row)
        first_wait = waits[0][1] if waits else None
        suggestion = None
        if first_wait is not None:
            suggested = _suggest(samples)
            now_reminded = survival(first_wait)
            if suggested is None:
                suggestion = {"stage": waits[0][0], "wait_ms": None,
                              "why": "fewer than 90 % of callers spoke before the call moved on: the corpus cannot say how long the rest need"}
            else:
                suggestion = {
                    "stage": waits[0][0], "current_wait_ms": first_wait, "wait_ms": suggested,
                    "reminded_before_speaking_now": round(now_reminded, 4),
                    "reminded_before_speaking_then": round(survival(suggested), 4),
                    "silent_callers_wait_longer_ms": suggested - first_wait,
                }
        p50, p90, p99 = samples.quantiles(0.5, 0.9, 0.99)
        questions.append({
            "question": question,
            "n": samples.n, "censored": samples.n_censored,
            "p50_ms": _ms(p50), "p90_ms": _ms(p90), "p99_ms": _ms(p99),
            "spoke_over_question": part.spoke_over_question.get(question, 0),
            "stages": stages,
            "reminders": part.reminders.get(question, 0),
            "reminders_too_early": part.too_early.get(question, 0),
            "closes": part.closes.get(question, 0),
            "closed_after_speaking": len(part.closed_after_speaking.get(question, [])),
            "closed_after_speaking_sessions": sorted(part.closed_after_speaking.get(question, []))[:20],
            "suggestion": suggestion,
        })
    budget = max(part.hold_budget_ms) if part.hold_budget_ms else None
    hold_ms = max(part.hold_ms) if part.hold_ms else None
    holds = part.holds
    return {
        "sessions": part.sessions,
        "flows": sorted(part.flows),
        "verdict": verdict(part.sessions, part.unreadable, part.read_in_part),
        "unreadable": named(part.unreadable),
        "read_in_part": named(part.read_in_part),
        "other_flow": sorted(part.other_flow),
        "questions": questions,
        "holds": {
            "n": sum(holds.values()),
            "p50_ms": _ms(_counted_quantile(holds, 0.5, upper=True)) if holds else None,
            "p90_ms": _ms(_counted_quantile(holds, 0.9, upper=True)) if holds else None,
            "hold_ms": hold_ms,
            "past_hold_ms": sum(n for h, n in holds.items() if hold_ms and h > hold_ms),
            "episodes_with_holds": sum(part.hold_totals.values()),
            "budget_ms": budget,
            "episodes_past_budget": sum(n for h, n in part.hold_totals.items() if budget and h > budget),
        },
        "too_early_ms": TOO_EARLY_MS,
    }


def csv_rows(data: dict) -> list[list[Any]]:
    rows: list[list[Any]] = [["question", "stage", "wait_ms", "n", "censored", "p50_ms", "p90_ms", "p99_ms", "share_past_wait"]]
    for q in data["questions"]:
        rows.append([q["question"], "(from the question's end)", "", q["n"], q["censored"], q["p50_ms"], q["p90_ms"], q["p99_ms"], ""])
        for s in q["stages"]:
            rows.append([q["question"], s["stage"], s["wait_ms"], s.get("n", 0), s.get("censored", 0), s.get("p50_ms"),
                         s.get("p90_ms"), s.get("p99_ms"), s.get("share_past_wait", "")])
    return rows


__all__ = ["Samples", "TimingPart", "corpus_timing", "csv_rows", "journal_timing", "summary"]

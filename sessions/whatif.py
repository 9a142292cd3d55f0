"""What an edit would change, over a corpus (S4 at corpus size).

Each session's recorded inputs are replayed under the edited flow or ladder policy
(sessions.paired), and both runs are measured the same way: reminders, closes,
interruptions, time to answer, and the routes episodes ended on. Every figure is per
session, so before and after are paired: the change's interval comes from the
per-session differences, which is narrower and more honest than comparing two
independent samples. A session the edit cannot replay is counted and named, never
dropped; so is a journal of another flow.

Like paired replay, this tests the controller's rules, not the callers: their words
and timing are held fixed although a real caller would react to different prompts.

Per session the reader keeps only numbers (WhatIfPart, fixed size however many
sessions there are); parts merge, so the result does not depend on the split.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ladder import LadderPolicy

from .corpus import map_sessions, named, verdict
from .flowfiles import check_data
from .journal import JournalScan, Unread, document_hash, iter_records, reason_of
from .paired import CAVEAT, paired_run

Z95 = 1.959963984540054  # the normal quantile of a two-sided 95 % interval
REMINDER_KINDS = frozenset({"reminder", "restate", "reprompt"})  # the ladder speaking again to a silent caller
ANSWER_BIN_MS = 10  # times to answer are kept as a histogram of 10 ms bins: fixed memory


@dataclass
class Moments:
    """n, sum and sum of squares: a mean and its standard error, mergeable."""

    n: int = 0
    s: float = 0.0
    ss: float = 0.0

    def push(self, x: float) -> None:
        self.n += 1
        self.s += x
        self.ss += x * x

    def add(self, other: Moments) -> None:
        self.n += other.n
        self.s += other.s
        self.ss += other.ss

    def mean(self) -> float | None:
        return self.s / self.n if self.n else None

    def interval(self) -> tuple[float, float] | None:
        """The mean's 95 % interval (normal approximation)."""
        if self.n < 2:
            return None
        mean = self.s / self.n
        var = max(0.0, (self.ss - self.n * mean * mean) / (self.n - 1))
        half = Z95 * math.sqrt(var / self.n)
        return (mean - half, mean + half)


@dataclass
class Paired:
    """One per-session figure before and after the edit, and their difference."""

    before: Moments = field(default_factory=Moments)
    after: Moments = field(default_factory=Moments)
    change: Moments = field(default_factory=Moments)

    def push(self, before: float, after: float) -> None:
        self.before.push(before)
        self.after.push(after)
        self.change.push(after - before)

    def add(self, other: Paired) -> None:
        self.before.add(other.before)
        self.after.add(other.after)
        self.change.add(other.change)


def wilson(k: int, n: int) -> tuple[float, float] | None:
    """The Wilson score 95 % interval of a proportion k/n (sound near 0 and 1)."""
    if n == 0:
        return None
    p = k / n
    denominator = 1 + Z95 * Z95 / n
    centre = (p + Z95 * Z95 / (2 * n)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def median_interval(histogram: Counter) -> tuple[float | None, tuple[float, float] | None, int]:
    """The median of a histogram of times and its distribution-free 95 % interval (the
    order statistics whose ranks bound the median, from the binomial), and n."""
    n = sum(histogram.values())
    if n == 0:
        return None, None, 0
    values = sorted(histogram.items())

    def at(rank: int) -> float:  # the rank-th smallest (1-based), at its bin's centre
        seen = 0
        for value, count in values:
            seen += count
            if seen >= rank:
                return (value + 0.5) * ANSWER_BIN_MS
        return (values[-1][0] + 0.5) * ANSWER_BIN_MS

    middle = at((n + 1) // 2) if n % 2 else (at(n // 2) + at(n // 2 + 1)) / 2
    if n < 6:
        return middle, None, n  # too few for a 95 % interval from order statistics
    half = Z95 * math.sqrt(n) / 2
    low, high = max(1, math.floor(n / 2 - half)), min(n, math.ceil(n / 2 + 1 + half))
    return middle, (at(low), at(high)), n


@dataclass
class Side:
    """What one run of a session did."""

    reminders: int = 0
    closed: bool = False
    interrupted: int = 0
    answers: list[float] = field(default_factory=list)  # ms from episode start to its answer
    outcomes: set[str] = field(default_factory=set)  # how its episodes ended
    session: str | None = None  # how the session ended


def measure(decisions: list[tuple[float, dict]]) -> Side:
    side = Side()
    started: dict[Any, float] = {}
    for t, record in decisions:
        effect = record.get("effect")
        if effect == "RequestPrompt":
            kind = record.get("kind")
            if kind in REMINDER_KINDS:
                side.reminders += 1
            elif kind == "close":
                side.closed = True
        elif effect == "SessionClosed":
            side.session = str(record.get("outcome"))
        elif effect is None or effect == "Trace":
            kind = record.get("kind")
            if kind == "prompt_interrupted":
                side.interrupted += 1
            elif kind == "episode_started":
                started[record.get("episode")] = t
            elif kind == "episode_ended":
                outcome = str((record.get("detail") or {}).get("outcome") or record.get("outcome"))
                side.outcomes.add(outcome)
                if outcome == "answered" and record.get("episode") in started:
                    side.answers.append(t - started.pop(record.get("episode")))
    if side.session is None:
        side.session = "open"
    return side


@dataclass
class WhatIfPart:
    sessions: int = 0
    reminders: Paired = field(default_factory=Paired)  # per session
    closed: Paired = field(default_factory=Paired)  # 0/1 per session
    interrupted: Paired = field(default_factory=Paired)  # per session
    episode_outcomes: dict[str, Paired] = field(default_factory=dict)  # 0/1: the session had one
    session_outcomes: dict[str, Paired] = field(default_factory=dict)  # 0/1
    answer_before: Counter = field(default_factory=Counter)  # 10 ms bin -> episodes
    answer_after: Counter = field(default_factory=Counter)
    not_replayed: list[Unread] = field(default_factory=list)  # unreadable, or the edit cannot replay it
    partly: list[Unread] = field(default_factory=list)  # damaged: replayed up to the damage, not counted
    other_flow: list[str] = field(default_factory=list)

    def note_unreadable(self, unread: Unread) -> None:
        self.not_replayed.append(unread)

    def add(self, other: WhatIfPart) -> None:
        self.sessions += other.sessions
        for name in ("reminders", "closed", "interrupted"):
            getattr(self, name).add(getattr(other, name))
        for name in ("episode_outcomes", "session_outcomes"):
            mine = getattr(self, name)
            for label, paired in getattr(other, name).items():
                mine.setdefault(label, Paired()).add(paired)
        self.answer_before.update(other.answer_before)
        self.answer_after.update(other.answer_after)
        self.not_replayed += other.not_replayed
        self.partly += other.partly
        self.other_flow += other.other_flow

    def push(self, before: Side, after: Side) -> None:
        """One session: labels absent from one side are 0 there (and from every session
        seen before: a label first seen now is padded with zeros when reported)."""
        self.sessions += 1
        self.reminders.push(before.reminders, after.reminders)
        self.closed.push(before.closed, after.closed)
        self.interrupted.push(before.interrupted, after.interrupted)
        for label in before.outcomes | after.outcomes:
            self.episode_outcomes.setdefault(label, Paired()).push(label in before.outcomes, label in after.outcomes)
        for label in {before.session, after.session}:
            self.session_outcomes.setdefault(label, Paired()).push(before.session == label, after.session == label)
        self.answer_before.update(int(a // ANSWER_BIN_MS) for a in before.answers)
        self.answer_after.update(int(a // ANSWER_BIN_MS) for a in after.answers)


# -- the edit ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """The edited flow (its document) and/or ladder policy (a dict), as sent to workers."""

    flow_document: dict | None = None
    policy: dict | None = None

    @property
    def flow_name(self) -> str | None:
        return self.flow_document.get("name") if self.flow_document else None


_cores: dict[str, Any] = {}  # compiled once per process: key -> flow or policy


def _edited_flow(edit: Edit, header: dict):
    """The flow this session is replayed under, or a LadderPolicy for a ladder-only one."""
    document = edit.flow_document or header.get("flow_document")
    if not isinstance(document, dict):  # a ladder-only session: the policy replaces its own
        if edit.policy is None:
            raise ValueError("the session has no flow and the edit no ladder policy")
        key = f"policy:{document_hash(edit.policy)}"
        if key not in _cores:
            _cores[key] = LadderPolicy.model_validate(edit.policy)
        return _cores[key]
    # one compile per flow, edit and process (a console runs many edits in one process)
    edited = document_hash(edit.flow_document) if edit.flow_document is not None else header.get("flow_hash")
    policy = document_hash(edit.policy) if edit.policy is not None else None
    key = f"{edited}:{policy}"
    if key not in _cores:
        if edit.policy is not None:
            document = {**document, "ladder": edit.policy}
        defaults = header.get("ladder_defaults", 1) if edit.flow_document is None else 2
        report = check_data(document, "the edited flow", ladder_defaults=defaults)
        if report.flow is None:
            raise ValueError(report.errors[0].line())
        _cores[key] = report.flow
    return _cores[key]


def session_whatif(folder: Path, edit: Edit) -> WhatIfPart:
    part = WhatIfPart()
    try:
        header = read_journal_header(folder)
        if edit.flow_name is not None and header.get("flow") != edit.flow_name:
            part.other_flow.append(f"{folder} ({header.get('flow') or 'no flow named'})")
            return part
        core = _edited_flow(edit, header)
        if isinstance(core, LadderPolicy):
            run = paired_run(folder, policy=core)
        else:
            run = paired_run(folder, flow=core)
    except Exception as exc:  # noqa: BLE001 -- any refusal is this session's, named; the run goes on
        part.not_replayed.append(Unread(str(folder), reason_of(exc, folder)))
        return part
    if run.stopped:
        # the recording lost the rest of the call (some of its last input's decisions
        # too): a before beside an after would report the damage as the edit's doing
        part.partly.append(Unread(str(folder), f"damaged: its inputs stop at {run.stopped}"))
        return part
    part.push(measure(run.recorded), measure(run.produced))
    return part


def read_journal_header(folder: Path) -> dict:
    scan = JournalScan()
    next(iter_records(folder, scan), None)  # the header is read before the first record
    return scan.header or {}


def corpus_whatif(roots: list[Path], edit: Edit, workers: int | None = None,
                  progress: Callable[[int], None] | None = None, scheduler: Any = None) -> WhatIfPart:
    return map_sessions(roots, partial(session_whatif, edit=edit), WhatIfPart(), workers, progress, scheduler)


# -- the report -------------------------------------------------------------------------------


def _pad(paired: Paired, sessions: int) -> Paired:
    """A label seen in some sessions only: the others had it 0 times on both sides."""
    missing = sessions - paired.before.n
    if missing <= 0:
        return paired
    out = Paired()
    out.add(paired)
    out.before.n += missing
    out.after.n += missing
    out.change.n += missing
    return out


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _pair(interval: tuple[float, float] | None, digits: int = 4) -> list[float] | None:
    return None if interval is None else [round(interval[0], digits), round(interval[1], digits)]


def _share(paired: Paired) -> dict:
    """A 0/1 figure: shares before and after (Wilson), change in points (paired)."""
    n = paired.before.n
    k_before, k_after = round(paired.before.s), round(paired.after.s)
    return {
        "n": n,
        "before": k_before, "before_share": _round(k_before / n if n else None), "before_ci": _pair(wilson(k_before, n)),
        "after": k_after, "after_share": _round(k_after / n if n else None), "after_ci": _pair(wilson(k_after, n)),
        "change": _round(paired.change.mean()), "change_ci": _pair(paired.change.interval()),
    }


def _rate(paired: Paired) -> dict:
    """A count per session: means before and after, and the mean change (paired)."""
    return {
        "n": paired.before.n,
        "before": _round(paired.before.mean()), "before_ci": _pair(paired.before.interval()),
        "after": _round(paired.after.mean()), "after_ci": _pair(paired.after.interval()),
        "change": _round(paired.change.mean()), "change_ci": _pair(paired.change.interval()),
    }


def _median(histogram: Counter) -> dict:
    middle, interval, n = median_interval(histogram)
    return {"n": n, "median_ms": _round(middle, 1), "ci_ms": _pair(interval, 1)}


def summary(part: WhatIfPart) -> dict:
    n = part.sessions
    return {
        "sessions": n,
        "caveat": CAVEAT,
        "reminders_per_session": _rate(part.reminders),
        "sessions_closed": _share(part.closed),
        "interruptions_per_session": _rate(part.interrupted),
        "time_to_answer": {"before": _median(part.answer_before), "after": _median(part.answer_after)},
        "episode_outcomes": {label: _share(_pad(p, n)) for label, p in sorted(part.episode_outcomes.items())},
        "session_outcomes": {label: _share(_pad(p, n)) for label, p in sorted(part.session_outcomes.items())},
        "verdict": verdict(n, [*part.not_replayed, *part.partly], also_left_out=len(part.other_flow)),
        "not_replayed": named(part.not_replayed),
        "partly_replayed": named(part.partly),
        "other_flow": sorted(part.other_flow),
    }


__all__ = ["Edit", "WhatIfPart", "corpus_whatif", "measure", "median_interval", "session_whatif", "summary", "wilson"]

"""Metrics over recorded sessions (S5): counts with their denominators, never guesses.

Every figure is a count of observations in journals, reported beside the count it is
a share of: prompts requested, cancelled before playback, started, completed,
interrupted; eligible episodes and their outcome labels; resumption after each ladder
stage (of the episodes that reached that stage: its prompt started playing); explicit
waits; and the prompt
sequence of each episode. Labels come from a fixed vocabulary (kinds, outcome labels,
the ladder's stage names): no slot value or question text ever becomes a label.
Beside an LLM, the agent's own model reads each caller turn too: its readings are
counted against Lull's (sessions.model_readings).

Reading streams each journal record by record, and a folder is read by a pool of
processes, each returning only small count tables: memory stays bounded however
many sessions there are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .corpus import map_sessions, named, verdict
from .journal import JournalScan, Unread, iter_records, reason_of
from .model_readings import ModelReadings, is_model_reading
from .replay import session_record_problem

PROMPT_STATES = ("requested", "cancelled_before_playback", "started", "completed", "completed_late", "interrupted")
# caller input that is not a resumption: a listener cue or a sound is not the caller coming back
NOT_RESUMPTION = frozenset({"backchannel", "noise"})


class PromptTally:
    """Each prompt's lifecycle from decision records, counted once per token.

    The one definition `lull sessions report` and `lull incidents` share: requested
    (a RequestPrompt), started, completed (observed, or reported after the estimate had
    already armed what follows: `late_completion`, also counted as completed_late),
    cancelled before playback, interrupted. A duplicate report of the same state (an
    adapter confirming an interruption) is not a second prompt. Records are journal
    decisions (traces have no effect) or a run's records (traces are effect "Trace").
    """

    _TRACES = {
        "prompt_started": ("started",),
        "prompt_completed": ("completed",),
        "late_completion": ("completed", "completed_late"),
        "prompt_interrupted": ("interrupted",),
        "prompt_cancelled_before_playback": ("cancelled_before_playback",),
    }

    def __init__(self) -> None:
        self.kinds: dict[int, str] = {}  # token -> prompt kind
        self.stages: dict[int, str | None] = {}  # token -> ladder stage
        self.seen: set[tuple[int, str]] = set()
        self.counts: dict[str, Counter] = {}

    def feed(self, record: dict) -> str | None:
        """Count one record; the state it moved a prompt to ("started", ...), if any."""
        effect = record.get("effect")
        token = record.get("token")
        if effect == "RequestPrompt":
            self.kinds[token] = record.get("kind", "unknown")
            self.stages[token] = record.get("stage")
            self.counts.setdefault(self.kinds[token], Counter())["requested"] += 1
            return "requested"
        if effect not in (None, "Trace"):
            return None
        states = self._TRACES.get(record.get("kind"))
        if states is None or (token, states[0]) in self.seen:
            return None
        if states[0] == "completed" and (token, "completed") in self.seen:
            return None
        self.seen.add((token, states[0]))
        kind = self.kinds.get(token, "unknown")
        for state in states:
            self.counts.setdefault(kind, Counter())[state] += 1
        return states[0]

    def total(self, state: str) -> int:
        return sum(c[state] for c in self.counts.values())


@dataclass
class Metrics:
    sessions: int = 0
    unreadable: list[Unread] = field(default_factory=list)  # not counted: which, and why
    read_in_part: list[Unread] = field(default_factory=list)  # counted up to their damage
    skipped_lines: int = 0
    prompts: dict[str, Counter] = field(default_factory=dict)  # prompt kind -> state -> count
    episodes: int = 0
    outcomes: Counter = field(default_factory=Counter)
    session_outcomes: Counter = field(default_factory=Counter)
    reached: Counter = field(default_factory=Counter)  # ladder stage -> episodes that reached it
    resumed_after: Counter = field(default_factory=Counter)  # ladder stage -> caller spoke after it
    explicit_waits: int = 0  # wait requests
    episodes_with_hold: int = 0
    sequences: Counter = field(default_factory=Counter)  # "question > gentle_check > close" -> episodes

    model_readings: ModelReadings = field(default_factory=ModelReadings)  # the agent's model as a reader

    def note_unreadable(self, unread: Unread) -> None:
        self.unreadable.append(unread)

    def add(self, other: Metrics) -> None:
        self.sessions += other.sessions
        self.unreadable += other.unreadable
        self.read_in_part += other.read_in_part
        self.skipped_lines += other.skipped_lines
        for kind, states in other.prompts.items():
            self.prompts.setdefault(kind, Counter()).update(states)
        self.episodes += other.episodes
        for name in ("outcomes", "session_outcomes", "reached", "resumed_after", "sequences"):
            getattr(self, name).update(getattr(other, name))
        self.explicit_waits += other.explicit_waits
        self.episodes_with_hold += other.episodes_with_hold
        self.model_readings.add(other.model_readings)

    def rows(self) -> list[tuple[str, int, int | None, str]]:
        """(metric, count, denominator, what the denominator is)."""
        out: list[tuple[str, int, int | None, str]] = [("sessions", self.sessions, None, "")]
        if self.unreadable:
            found = verdict(self.sessions, self.unreadable)
            out.append(("sessions unreadable", len(self.unreadable), found["of"],
                        "journals (or more)" if found["of_at_least"] else "journals"))
        if self.read_in_part:
            out.append(("sessions read in part", len(self.read_in_part), self.sessions, "sessions"))
        for kind in sorted(self.prompts):
            states = self.prompts[kind]
            requested = states["requested"]
            for state in PROMPT_STATES:
                if state == "requested":
                    out.append((f"prompts {kind}: requested", requested, None, ""))
                elif states[state]:
                    out.append((f"prompts {kind}: {state.replace('_', ' ')}", states[state], requested, "requested"))
        out.append(("episodes (eligible: a question was pending)", self.episodes, None, ""))
        for outcome, count in sorted(self.outcomes.items()):
            out.append((f"episode outcome: {outcome}", count, self.episodes, "episodes"))
        for stage in sorted(self.reached, key=lambda s: (-self.reached[s], s)):  # ties by name: any split, one order
            out.append((f"caller resumed after {stage}", self.resumed_after[stage], self.reached[stage], f"episodes that reached {stage}"))
        out.append(("explicit wait requests", self.explicit_waits, None, ""))
        out.append(("episodes with a hold", self.episodes_with_hold, self.episodes, "episodes"))
        for outcome, count in sorted(self.session_outcomes.items()):
            out.append((f"session outcome: {outcome}", count, self.sessions, "sessions"))
        out += self.model_readings.rows(self.sessions)
        return out

    def to_dict(self) -> dict:
        return {
            "sessions": self.sessions,
            "verdict": verdict(self.sessions, self.unreadable, self.read_in_part),
            "unreadable": named(self.unreadable),
            "read_in_part": named(self.read_in_part),
            "skipped_lines": self.skipped_lines,
            "prompts": {k: dict(v) for k, v in sorted(self.prompts.items())},
            "episodes": self.episodes,
            "episode_outcomes": dict(sorted(self.outcomes.items())),
            "session_outcomes": dict(sorted(self.session_outcomes.items())),
            "stage_reached": dict(sorted(self.reached.items())),
            "resumed_after_stage": dict(sorted(self.resumed_after.items())),
            "explicit_wait_requests": self.explicit_waits,
            "episodes_with_hold": self.episodes_with_hold,
            "prompt_sequences": dict(sorted(self.sequences.items(), key=lambda kv: (-kv[1], kv[0]))),
            "model_readings": self.model_readings.to_dict(),
            "rows": [
                {"metric": m, "count": c, "denominator": d, "of": of} for m, c, d, of in self.rows()
            ],
        }


def session_metrics(path: Path) -> Metrics:
    """One session, streamed record by record."""
    metrics = Metrics()
    scan = JournalScan(path=path, header=None, loaded=0, skipped=[], gaps=[])
    tally = PromptTally()
    metrics.prompts = tally.counts
    advanced: dict[int, str] = {}  # episode -> the stage it advanced to, not reached yet
    reached_in: dict[int, list[str]] = {}  # episode -> stages reached, in order
    resumed: set[tuple[int, str]] = set()
    held: set[int] = set()
    seen_episodes: set[int] = set()
    ended: set[int] = set()
    try:
        # records that do not fit a session are skipped (and counted), never half-read
        for record in iter_records(path, scan, check=session_record_problem):
            if record["type"] != "decision":
                continue
            effect = record.get("effect")
            moved = tally.feed(record)
            if effect == "SessionClosed":
                metrics.session_outcomes[record["outcome"]] += 1
                continue
            if is_model_reading(record):
                metrics.model_readings.feed(record)
                continue
            if effect is not None:
                continue
            kind = record.get("kind")
            episode = record.get("episode")
            if moved == "started":
                # a ladder stage is reached when its prompt starts playing, not when asked for
                stage = tally.stages.get(record.get("token"))
                token_kind = tally.kinds.get(record.get("token"))
                if episode is not None and token_kind in ("reminder", "close") and advanced.get(episode) == stage:
                    reached_in.setdefault(episode, []).append(advanced.pop(episode))
            elif kind == "episode_started" and episode is not None:
                seen_episodes.add(episode)
            elif kind == "stage_advanced" and episode is not None:
                advanced[episode] = record.get("stage")
            elif kind == "window_armed" and record.get("reason") == "quiet_stage" and episode in advanced:
                reached_in.setdefault(episode, []).append(advanced.pop(episode))  # nothing to play
            elif kind == "turn_interpreted" and episode is not None and episode not in ended:
                intent = (record.get("detail") or {}).get("intent")
                if intent == "wait_request":
                    metrics.explicit_waits += 1
                if intent not in NOT_RESUMPTION:  # a backchannel or noise is not the caller resuming
                    for stage in reached_in.get(episode, []):
                        resumed.add((episode, stage))
            elif kind == "turn_interpreted" and (record.get("detail") or {}).get("intent") == "wait_request":
                metrics.explicit_waits += 1
            elif kind in ("hold_armed",) and episode is not None:
                held.add(episode)
            elif kind == "episode_ended" and episode is not None:
                ended.add(episode)
                detail = record.get("detail") or {}
                metrics.outcomes[detail.get("outcome", "unknown")] += 1
                sequence = " > ".join(detail.get("prompt_sequence") or ["(none)"])
                metrics.sequences[sequence] += 1
    except (ValueError, OSError) as exc:
        return Metrics(unreadable=[Unread(str(path), reason_of(exc, path))])
    open_episodes = seen_episodes - ended
    metrics.outcomes.update({"still_open": len(open_episodes)} if open_episodes else {})
    metrics.episodes = len(seen_episodes)
    for stages in reached_in.values():
        metrics.reached.update(set(stages))
    for _, stage in resumed:
        metrics.resumed_after[stage] += 1
    metrics.episodes_with_hold = len(held)
    metrics.sessions = 1
    metrics.skipped_lines = len(scan.skipped)
    metrics.model_readings.end_session()
    damage = scan.damage()
    if damage:  # counted up to the damage, and named
        metrics.read_in_part.append(Unread(str(path), damage))
    return metrics


def folder_metrics(root: Path, workers: int | None = None, progress=None, scheduler=None) -> Metrics:
    """All sessions under `root`, read on every core (or a Dask cluster: sessions.corpus)."""
    return map_sessions([root], session_metrics, Metrics(), workers, progress, scheduler)

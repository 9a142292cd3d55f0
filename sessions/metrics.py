"""Metrics over recorded sessions (S5): counts with their denominators, never guesses.

Every figure is a count of observations in journals, reported beside the count it is
a share of: prompts requested, cancelled before playback, started, completed,
interrupted; eligible episodes and their outcome labels; resumption after each ladder
stage (of the episodes that reached that stage); explicit waits; and the prompt
sequence of each episode. Labels come from a fixed vocabulary (kinds, outcome labels,
the ladder's stage names): no slot value or question text ever becomes a label.

Reading streams each journal record by record, and a folder is read by a pool of
processes, each returning only small count tables: memory stays bounded however
many sessions there are.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .journal import JournalScan, iter_records
from .replay import session_record_problem

PROMPT_STATES = ("requested", "cancelled_before_playback", "started", "completed", "interrupted")


@dataclass
class Metrics:
    sessions: int = 0
    unreadable: int = 0
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

    def add(self, other: Metrics) -> None:
        self.sessions += other.sessions
        self.unreadable += other.unreadable
        self.skipped_lines += other.skipped_lines
        for kind, states in other.prompts.items():
            self.prompts.setdefault(kind, Counter()).update(states)
        self.episodes += other.episodes
        for name in ("outcomes", "session_outcomes", "reached", "resumed_after", "sequences"):
            getattr(self, name).update(getattr(other, name))
        self.explicit_waits += other.explicit_waits
        self.episodes_with_hold += other.episodes_with_hold

    def rows(self) -> list[tuple[str, int, int | None, str]]:
        """(metric, count, denominator, what the denominator is)."""
        out: list[tuple[str, int, int | None, str]] = [("sessions", self.sessions, None, "")]
        if self.unreadable:
            out.append(("sessions unreadable", self.unreadable, self.sessions + self.unreadable, "journals"))
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
        for stage in sorted(self.reached, key=lambda s: -self.reached[s]):
            out.append((f"caller resumed after {stage}", self.resumed_after[stage], self.reached[stage], f"episodes that reached {stage}"))
        out.append(("explicit wait requests", self.explicit_waits, None, ""))
        out.append(("episodes with a hold", self.episodes_with_hold, self.episodes, "episodes"))
        for outcome, count in sorted(self.session_outcomes.items()):
            out.append((f"session outcome: {outcome}", count, self.sessions, "sessions"))
        return out

    def to_dict(self) -> dict:
        return {
            "sessions": self.sessions,
            "unreadable": self.unreadable,
            "skipped_lines": self.skipped_lines,
            "prompts": {k: dict(v) for k, v in sorted(self.prompts.items())},
            "episodes": self.episodes,
            "episode_outcomes": dict(self.outcomes),
            "session_outcomes": dict(self.session_outcomes),
            "stage_reached": dict(self.reached),
            "resumed_after_stage": dict(self.resumed_after),
            "explicit_wait_requests": self.explicit_waits,
            "episodes_with_hold": self.episodes_with_hold,
            "prompt_sequences": dict(self.sequences.most_common()),
            "rows": [
                {"metric": m, "count": c, "denominator": d, "of": of} for m, c, d, of in self.rows()
            ],
        }


def session_metrics(path: Path) -> Metrics:
    """One session, streamed record by record."""
    metrics = Metrics()
    scan = JournalScan(path=path, header=None, loaded=0, skipped=[], gaps=[])
    kinds: dict[int, str] = {}  # token -> prompt kind
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
            if effect == "RequestPrompt":
                kinds[record["token"]] = record["kind"]
                metrics.prompts.setdefault(record["kind"], Counter())["requested"] += 1
                continue
            if effect == "SessionClosed":
                metrics.session_outcomes[record["outcome"]] += 1
                continue
            if effect is not None:
                continue
            kind = record.get("kind")
            episode = record.get("episode")
            if kind in ("prompt_started", "prompt_completed", "prompt_interrupted", "prompt_cancelled_before_playback"):
                prompt = kinds.get(record.get("token"), "unknown")
                metrics.prompts.setdefault(prompt, Counter())[kind.removeprefix("prompt_")] += 1
            elif kind == "episode_started" and episode is not None:
                seen_episodes.add(episode)
            elif kind == "stage_advanced" and episode is not None:
                stage = record.get("stage")
                reached_in.setdefault(episode, []).append(stage)
            elif kind == "turn_started" and episode is not None and episode not in ended:
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
    except (ValueError, OSError):
        return Metrics(unreadable=1)
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
    return metrics


def session_folders(root: Path) -> Iterable[Path]:
    # exists(), not isfile(): a journal that cannot be read counts as unreadable, not as absent
    if (root / "journal.jsonl").exists():
        yield root
        return
    for entry in os.scandir(root):  # a generator: ten thousand folders are never listed at once
        if entry.is_dir() and os.path.exists(os.path.join(entry.path, "journal.jsonl")):
            yield Path(entry.path)


def folder_metrics(root: Path, workers: int | None = None) -> Metrics:
    """All sessions under `root`, read by a pool of processes (both cores)."""
    total = Metrics()
    workers = workers or os.cpu_count() or 1
    folders = session_folders(root)
    if workers <= 1:
        for folder in folders:
            total.add(session_metrics(folder))
        return total
    with ProcessPoolExecutor(workers) as pool:
        for metrics in pool.map(session_metrics, folders, chunksize=64):
            total.add(metrics)
    return total

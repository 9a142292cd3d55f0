"""Timing and coverage of a corpus in one pass: what the console's corpus screen shows.

One task a batch and one progress count for both, instead of reading the corpus once for
response times and again, silently, for coverage. Each journal is still parsed by each
reader (they keep different state); the second read of its file comes from the page cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .corpus import map_sessions
from .coverage import Coverage, session_coverage
from .journal import Unread
from .timing import TimingPart, journal_timing


@dataclass
class Overview:
    timing: TimingPart = field(default_factory=TimingPart)
    coverage: Coverage = field(default_factory=Coverage)

    def note_unreadable(self, unread: Unread) -> None:
        self.timing.note_unreadable(unread)
        self.coverage.note_unreadable(unread)

    def add(self, other: Overview) -> None:
        self.timing.add(other.timing)
        self.coverage.add(other.coverage)


def journal_overview(unit: Any) -> Overview:
    """One journal (a session folder or an archive member): its timing and its coverage."""
    part = Overview(timing=journal_timing(unit))
    session_coverage(unit, part.coverage)
    return part


def corpus_overview(roots: list[Path], workers: int | None = None,
                    progress: Callable[[int], None] | None = None, scheduler: Any = None) -> Overview:
    """Every session under `roots`, read once for both (sessions.corpus runs it)."""
    return map_sessions(roots, journal_overview, Overview(), workers, progress, scheduler)


__all__ = ["Overview", "corpus_overview", "journal_overview"]

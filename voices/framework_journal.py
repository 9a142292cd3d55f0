"""The journal of a call whose core runs inside a voice framework (Pipecat, LiveKit) in
ladder mode: every event the core was fed and every effect it gave, as `lull sessions
replay` reads them, with the words that came in masked.

The words that came in (the bot's own question, an announcement, the caller's answer)
have their digits masked, spelled or not, with one set of stand-ins for the whole call;
a decision that repeats those words is masked the same way. Lull's own wording ("One
moment...") is kept, so the journal replays as decided. The header is written with the
first record, so a call that never fed the core leaves no folder behind.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ladder.flow.understanding.text import mask_digits
from sessions.journal import JournalWriter


class FrameworkJournal:
    """One call's journal (`folder`/journal.jsonl); `header()` is asked for once, at the
    first record (its `source` names the framework)."""

    def __init__(self, folder: Path | None, header: Callable[[], dict]) -> None:
        self.folder = folder
        self._header = header
        self._writer: JournalWriter | None = None
        self._cipher: dict[str, str] = {}  # the call's digit stand-ins (ladder.flow.understanding.text.mask_digits)
        self._masked: dict[str, str] = {}  # words that came in -> as the journal holds them

    def input(self, at: float, event) -> None:
        self._write("input", at, {"kind": event.kind, "event": event.to_dict()})

    def decision(self, at: float, effect) -> None:
        self._write("decision", at, effect.to_dict())

    def note(self, at: float, kind: str, data: dict) -> None:
        """An observation (not an input, not a decision of the core: replay leaves it
        out), as `sessions.live.LiveSession.note` writes one; its `words` are masked as
        the words that came in are."""
        words = data.get("words")
        if isinstance(words, str) and words:
            data = {**data, "words": self._masked.get(words) or mask_digits(words, self._cipher)}
        self._write("decision", at, {"effect": "Observation", "kind": kind, **data})

    def _write(self, kind: str, at: float, payload: dict) -> None:
        if self.folder is None:
            return
        if self._writer is None:
            self._writer = JournalWriter.create(self.folder, self._header())
        if kind == "input":
            self._writer.write_input(at, self._redact_input(payload))
        else:
            self._writer.write_decision(at, self._redact_decision(payload))

    def _redact_input(self, record: dict) -> dict:
        event = dict(record["event"])
        for key in ("text", "value"):
            words = event.get(key)
            if isinstance(words, str) and words:
                masked = mask_digits(words, self._cipher)
                if masked != words:
                    self._masked[words] = masked
                event[key] = masked
        return {**record, "event": event}

    def _redact_decision(self, value):
        if isinstance(value, dict):
            return {k: self._redact_decision(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redact_decision(v) for v in value]
        if isinstance(value, str) and self._masked:
            for words, masked in self._masked.items():
                if words in value:
                    value = value.replace(words, masked)
        return value

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


__all__ = ["FrameworkJournal"]

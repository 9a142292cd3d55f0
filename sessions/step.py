"""Step through a recorded session (S3): the full core state at any input, both ways.

The cursor replays inputs into a fresh core. Going forward feeds the next input;
going back restores the nearest snapshot before the target (taken every `every`
inputs) and feeds forward from there, so a step back on a long session costs at
most `every` inputs, not a replay from the start.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from .replay import build_core, feed, read_session, session_steps


@dataclass
class Position:
    index: int  # inputs fed so far (0: before the first)
    t_ms: float
    event: dict | None  # the last input fed
    decisions: list[dict]  # what the core decided on it
    state: dict  # the full core state (the flow's, or the ladder's)


class Cursor:
    def __init__(self, path: Path, every: int = 50, flow_override=None) -> None:
        self.path = Path(path)
        self.journal = read_session(path)
        grouped = session_steps(self.journal)
        # up to the first lost input: past it, the state shown would not be the call's
        self.inputs = [step.input for step in grouped.steps if step.input is not None]
        self.stopped = grouped.stopped
        self.every = every
        self._flow_override = flow_override
        self.core = build_core(self.journal, flow_override)
        self.index = 0
        self._last: tuple[dict | None, list[dict]] = (None, [])
        self._snapshots: dict[int, object] = {0: copy.deepcopy(self.core)}
        self.replayed = 0  # inputs fed in total (to show what stepping costs)

    def __len__(self) -> int:
        return len(self.inputs)

    def _feed(self) -> None:
        record = self.inputs[self.index]
        effects = feed(self.core, record, self.journal.path)
        redact = getattr(self.core, "redact", lambda r: r)
        self._last = (record["event"], [redact(e.to_dict()) for e in effects])
        self.index += 1
        self.replayed += 1
        if self.index % self.every == 0 and self.index not in self._snapshots:
            self._snapshots[self.index] = copy.deepcopy(self.core)

    def seek(self, index: int) -> Position:
        index = max(0, min(index, len(self.inputs)))
        # a snapshot before the target, so the input at the target is fed (and shown)
        base = max(i for i in self._snapshots if i <= max(0, index - 1))
        if index < self.index or base > self.index:
            # going back, or a snapshot lies between here and there: start from it
            self.core = copy.deepcopy(self._snapshots[base])
            self.index = base
            self._last = (None, [])
        while self.index < index:
            self._feed()
        return self.position()

    def forward(self, steps: int = 1) -> Position:
        return self.seek(self.index + steps)

    def back(self, steps: int = 1) -> Position:
        return self.seek(self.index - steps)

    def position(self) -> Position:
        t_ms = self.inputs[self.index - 1]["t_ms"] if self.index else 0.0
        event, decisions = self._last
        return Position(self.index, t_ms, event, decisions, self.core.snapshot())

    def masked_around(self, t_ms: float, span_ms: float = 2000.0) -> list[dict]:
        """The recording's masked spans (audio that carried a redacted value, silenced
        in mic.wav or out.wav) that overlap span_ms either side of t_ms."""
        return [
            r for r in self.journal.records
            if r.get("effect") == "Observation" and r.get("kind") == "audio_masked"
            and r.get("from_ms", 0.0) <= t_ms + span_ms and r.get("to_ms", 0.0) >= t_ms - span_ms
        ]

    def audio_around(self, t_ms: float, span_ms: float = 2000.0) -> dict[str, tuple]:
        """mic.wav and out.wav samples within span_ms either side of t_ms."""
        import soundfile

        out = {}
        for name in ("mic.wav", "out.wav"):
            path = self.path / name if self.path.is_dir() else self.path.parent / name
            if not path.exists():
                continue
            info = soundfile.info(path)
            start = max(0, int((t_ms - span_ms) / 1000 * info.samplerate))
            stop = min(info.frames, int((t_ms + span_ms) / 1000 * info.samplerate))
            audio, rate = soundfile.read(path, start=start, stop=stop, dtype="float32")
            out[name] = (audio, rate, start / info.samplerate * 1000.0)
        return out


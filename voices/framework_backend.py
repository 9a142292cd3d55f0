"""What a rehearsal backend whose voice loop is a framework's (Pipecat, LiveKit) does the
same whatever the framework: the live session's prompts handed to the framework's Lull
adapter (and to the recordings), typed caller turns beside the spoken ones, the lines
the console and headless runs show, and a call on a telephone line (`--line pstn`):
the line both ways (`voices.line.pstn.PhoneLine`; each framework's transports put its
audio through it), its place in the journal, and each answered turn's wait with the
line's round trip (`voices.framework_waits`). Each framework's backend builds its own
pipeline or session and sets `adapter`, `recordings`, `caller_audio` and `speaker`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from ladder import RequestPrompt
from voices.backends.recorded_wait import gaps_from_audio
from voices.backends.text import TypedTurns

LINE_CALLER_RATE = 16_000  # the caller's audio as the frameworks' inputs give it


class FrameworkBackend:
    def _init_edge(self, on_line, line=None) -> None:  # noqa: ANN001
        """`line` (`voices.line.pstn.LineSettings`): the call on a telephone line, the
        caller's audio to the agent through its one direction, the agent's voice to the
        caller through the other."""
        self.on_line = on_line or (lambda who, text: None)
        self.matcher = None
        self.session = None  # the live session
        self.adapter = None  # the framework's Lull adapter: LullProcessor, LullLadder
        self.recordings = None  # voices.framework_recording.FrameworkRecordings
        self.record_dir: Path | None = None  # the session folder (open_recordings)
        self.typed = TypedTurns(self._feed, prefix="typed", first_seq=10_000)  # typed turns beside the spoken ones
        self.line = None  # voices.line.pstn.PhoneLine
        self.waits = None  # voices.framework_waits.FrameworkTurnWaits, on a line
        if line is not None:
            from voices.line.pstn import PhoneLine

            self.line = PhoneLine(line, caller_rate=LINE_CALLER_RATE, agent_rate=self.models.voice.sample_rate)  # type: ignore[attr-defined]

    def _line_header(self) -> dict:
        """The journal header's word on the line (nothing without one)."""
        return {} if self.line is None else {"line": self.line.describe()}

    def _start_waits(self, played, played_rate: int):  # noqa: ANN001, ANN202
        """On a line: each answered turn's wait, from the audio the agent heard (the
        input's `on_frame` goes to the returned object's `heard`) and what its speaker
        `played()`; the caller's wait on the line adds the round trip."""
        from voices.framework_waits import FrameworkTurnWaits

        if self.line is None:
            return None
        self.waits = FrameworkTurnWaits(self.session, played=played, played_rate=played_rate, line_ms=self.line.round_trip_ms)
        return self.waits

    def _out_rate(self, speaker_rate: int) -> int:
        """out.wav's rate: the speaker's, or on a line what the caller heard from it."""
        return speaker_rate if self.line is None else self.line.downlink.rate_out

    def _close_line(self) -> None:
        """At the end of the call: the answers still playing measured, the line's packets journaled."""
        if self.waits is not None:
            self.waits.close()
        if self.line is not None and self.session is not None and not self.session.closed.is_set():
            self.session.note("phone_line", self.line.figures())

    @property
    def latencies(self) -> list:
        """Each answered turn's `voices.backends.turn_latency.TurnLatency` (on a line)."""
        return self.waits.latencies if self.waits is not None else []

    def open_recordings(self, folder: Path) -> None:
        """The live session's journal folder: mic.wav and out.wav go beside the journal."""
        self.record_dir = Path(folder)

    def speak(self, prompt: RequestPrompt) -> None:
        assert self.adapter is not None, "attach() first"
        if self.recordings is not None:
            self.recordings.prompt(prompt.token, prompt.text)
        if self.waits is not None:
            self.waits.answering(prompt.token)
        self.adapter.speak(prompt)

    def cancel(self, token: int) -> None:
        assert self.adapter is not None, "attach() first"
        self.adapter.cancel(token)

    def media_line(self) -> str:
        """What the call runs on, for the console and headless runs."""
        model = self.models.recognizer.model_name.removesuffix(" (bundled)")  # type: ignore[attr-defined]
        source = self.caller.name if self.caller is not None else "microphone"  # type: ignore[attr-defined]
        line = f"{self.name}: {source} · {self.media} · whisper {model} · piper"  # type: ignore[attr-defined]
        if self.echo is not None:  # type: ignore[attr-defined]
            line += f" · {self.echo.canceller.describe()}"  # type: ignore[attr-defined]
        if self.line is not None:
            line += f" · {self.line.media_text()}"
        return line

    @property
    def speaking(self) -> bool:
        return self.adapter is not None and self.adapter.speaking

    def say(self, text: str) -> None:
        """A typed caller turn, beside the recorded one (headless "say" lines)."""
        self.typed.say(self.matcher, text, heard=lambda: self.on_line("caller", text))

    def after_typed_turns(self, callback) -> bool:  # noqa: ANN001
        return self.typed.after(self.matcher, callback)

    def _feed(self, event) -> None:  # noqa: ANN001
        if self.session is not None and not self.session.closed.is_set():
            self.session.feed(event)

    def _line(self, who: str, text: str) -> None:
        self.on_line(who, text)


def run_framework_turns(backend: FrameworkBackend, flow, speech_ends_s: list[float], *, timeout_s: float) -> dict:
    """`lull bench turn`'s caller through a framework backend (made with the caller's
    recording): the wait of each turn measured from the recording, as for the file
    backend (`voices.backends.recorded_wait.gaps_from_audio`); on a line (the backend made
    with one), to the first audible sample at the caller's end of it."""
    from sessions.live import LiveSession

    session = LiveSession(flow, backend)
    heard: list[str] = []  # the caller's words, turn by turn, as the flow got them
    shown = backend.on_line
    backend.on_line = lambda who, text: (heard.append(text) if who == "caller" else None, shown(who, text))[1]

    timed_out: list[bool] = []

    async def run() -> None:
        await session.start()
        try:
            await asyncio.wait_for(session.closed.wait(), timeout=timeout_s)
        except TimeoutError:  # the call did not end: what was measured up to then, and that it did not
            timed_out.append(True)
            await session.stop()

    asyncio.run(run())
    source, speaker = backend.caller_audio, backend.speaker  # type: ignore[attr-defined]
    assert source is not None and source.started_at is not None and speaker is not None
    to_ms = lambda loop_s: (loop_s - session._t0) * 1000.0  # noqa: E731  the loop and the session share the monotonic clock
    rate = speaker.played_rate
    played = [(to_ms(t), np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0, rate) for t, pcm in speaker.played]
    ends_ms = [to_ms(source.started_at) + end * 1000.0 for end in speech_ends_s]
    stt = getattr(backend, "stt", None)
    decodes = [d["decode_s"] * 1000.0 for d in stt.decodes] if stt is not None else []
    gaps = gaps_from_audio(ends_ms, played)
    line = getattr(backend, "line", None)
    if line is not None:  # what the agent played reaches the caller the line's delay later
        gaps = [None if g is None else round(g + line.downlink.delay_ms, 1) for g in gaps]
    return {
        "gaps_ms": gaps,
        "heard": heard,
        "turns_started": sum(1 for _, e in session.runtime.ladder_inputs if e.kind == "turn_started"),
        "outcome": f"timed out after {timeout_s:.0f} s" if timed_out else session.ended_reason,
        "whisper_decode_ms": {"median": float(np.median(decodes)) if decodes else None, "n": len(decodes)},
        "pipeline": backend.journal_header["pipeline"],  # type: ignore[attr-defined]
    }


__all__ = ["FrameworkBackend", "run_framework_turns"]

"""`lull bench turn --line pstn`: the same caller turns through the file backend on a
telephone line (`voices.line.pstn`), measured as the wideband run is, in the same run.

The caller's wait on the line is measured at the caller's end: from the end of their
speech in the recording (their mouth) to the agent's first audible sample at their ear.
The agent's speaker is measured as on the wideband run (`gaps_from_audio`, the first
sample louder than -40 dBFS), and the line's fixed delay back to the caller is added:
measured on the line's own output, the noise floor would be "audible" first. The delay
on the way in is in the measure already (the agent hears the caller that much later).
"""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path

import numpy as np

from .recorded_wait import gaps_from_audio


def run_file_turns(models, wav: Path, flow, speech_ends_s: list[float], *, timeout_s: float, line=None) -> dict:
    """The caller WAV through the file backend (on `line`, `voices.line.pstn.LineSettings`,
    if given): the wait of each turn from the recording, the words heard per turn, each
    turn's stages and why it ended."""
    from sessions.live import LiveSession

    from .file import FileBackend

    backend = FileBackend(models, wav, line=line)
    session = LiveSession(flow, backend)
    heard: list[str] = []
    backend.on_line = lambda who, text: heard.append(text) if who == "caller" else None
    played: list[tuple[float, np.ndarray, int]] = []
    started: list[float] = []
    keep_played, feed = backend._played, backend._feed_caller

    def played_block(t_ms: float, block: np.ndarray) -> None:
        played.append((t_ms, block.copy(), backend.output.samplerate))
        keep_played(t_ms, block)

    def feed_from(t0: float):
        started.append(t0)
        return feed(t0)

    backend._played, backend._feed_caller = played_block, feed_from  # type: ignore[method-assign]

    async def run() -> None:
        await session.start()
        try:
            await asyncio.wait_for(session.closed.wait(), timeout=timeout_s)
        finally:
            await session.stop()

    try:
        asyncio.run(run())
    except TimeoutError:
        pass
    back_ms = backend.line.downlink.delay_ms if backend.line is not None else 0.0
    at_agent = gaps_from_audio([started[0] + end * 1000.0 for end in speech_ends_s], played) if started else []
    latencies = [lat.as_dict() for lat in backend.latencies]
    result = {
        "gaps_ms": [None if g is None else round(g + back_ms, 1) for g in at_agent],
        "gaps_at_the_agent_ms": at_agent,
        "heard": heard,
        "end_of_turn": [lat["end_of_turn"] for lat in latencies],
        "latencies": latencies,
        "turns_started": sum(1 for _, e in session.runtime.ladder_inputs if e.kind == "turn_started"),
        "turns_unanswered": backend.unanswered_turns,
        "outcome": session.ended_reason,
    }
    if backend.line is not None:
        result["line"] = backend.line.describe()
        result["line_packets"] = backend.line.figures()
    return result


def stage_medians(latencies: list[dict], keys: tuple[str, ...]) -> dict:
    out = {}
    for key in keys:
        values = [lat[key] for lat in latencies if lat.get(key) is not None]
        out[key] = statistics.median(values) if values else None
    return out


def digits_read(heard: list[str], said: list[str], answers: list[bool]) -> dict:
    """How many codes were read as said, one heard utterance a turn (None when the turns
    were heard in more or fewer parts than were said)."""
    from ladder.flow.understanding.text import parse_digits

    if len(heard) != len(said):
        return {"right": None, "of": sum(answers), "misread": []}
    pairs = [(h, s) for h, s, answer in zip(heard, said, answers, strict=True) if answer]
    misread = [f"{s!r} heard as {h!r}" for h, s in pairs if (parse_digits(h) or "") != (parse_digits(s) or "")]
    return {"right": len(pairs) - len(misread), "of": len(pairs), "misread": misread}


def cut_mid_number(heard: list[str], answers: list[bool]) -> list[str]:
    """The caller's words that hold part of a code (1-3 digits): an answer cut short."""
    from ladder.flow.understanding.text import parse_digits

    if len(heard) == len(answers):
        return [w for w, answer in zip(heard, answers, strict=True) if answer and len(parse_digits(w) or "") < 4]
    return [w for w in heard if 0 < len(parse_digits(w) or "") < 4]


__all__ = ["cut_mid_number", "digits_read", "run_file_turns", "stage_medians"]

"""`lull bench turn --backend livekit`: the bench's caller through a LiveKit AgentSession
(`voices.livekit.backend`), its wait measured from the recording as for the file
backend (`voices.backends.recorded_wait.gaps_from_audio`), in the same run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from sessions.live import LiveSession
from voices.backends.recorded_wait import gaps_from_audio

from . import quiet_livekit_logs
from .backend import LiveKitBackend


def run_livekit_turns(models, wav: Path, flow, speech_ends_s: list[float], *, timeout_s: float) -> dict:
    quiet_livekit_logs()
    backend = LiveKitBackend(models, wav)
    session = LiveSession(flow, backend)

    async def run() -> None:
        await session.start()
        await asyncio.wait_for(session.closed.wait(), timeout=timeout_s)

    asyncio.run(run())
    source = backend.input
    assert source is not None and source.started_at is not None and backend.output is not None
    to_ms = lambda loop_s: (loop_s - session._t0) * 1000.0  # noqa: E731  the loop and the session share the monotonic clock
    rate = backend.output.rate
    played = [(to_ms(t), np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0, rate) for t, pcm in backend.output.played]
    ends_ms = [to_ms(source.started_at) + end * 1000.0 for end in speech_ends_s]
    decodes = [d["decode_s"] * 1000.0 for d in backend.stt.decodes] if backend.stt else []
    return {
        "gaps_ms": gaps_from_audio(ends_ms, played),
        "turns_started": sum(1 for _, e in session.runtime.ladder_inputs if e.kind == "turn_started"),
        "outcome": session.ended_reason,
        "whisper_decode_ms": {"median": float(np.median(decodes)) if decodes else None, "n": len(decodes)},
        "pipeline": backend.journal_header["pipeline"],
    }


__all__ = ["run_livekit_turns"]

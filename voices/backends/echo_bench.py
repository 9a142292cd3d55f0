"""`lull bench turn`'s echo path: the same caller turns through a simulated room echo
(the agent's voice back in the microphone, 40 ms late, 8 dB down), with echo
cancellation off and on in the same run, and the canceller's cost per 10 ms frame."""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import numpy as np


def canceller_cost(frames: int = 2000) -> dict:
    """The real WebRTC module on speech-like audio: far end + near end, per 10 ms frame."""
    from voices.echo import FRAME, RATE, EchoCanceller

    rng = np.random.default_rng(5)
    far = (np.convolve(rng.standard_normal(frames * FRAME), np.ones(8) / 8, mode="same") * 0.2).astype(np.float32)
    near = np.concatenate([np.zeros(640, np.float32), 0.4 * far])[: len(far)]
    aec = EchoCanceller(stream_delay_ms=40)
    costs = []
    for i in range(0, len(far), FRAME):
        started = time.perf_counter()
        aec.far(far[i : i + FRAME], RATE)
        aec.near(near[i : i + FRAME], i / RATE * 1000)
        costs.append((time.perf_counter() - started) * 1000.0)
    costs.sort()
    return {
        "frames": len(costs),
        "median_ms": round(statistics.median(costs), 4),
        "p99_ms": round(costs[int(len(costs) * 0.99)], 4),
        "max_ms": round(costs[-1], 4),
    }


def run_echo_path(models, wav: Path, flow_factory, timeout_s: float) -> dict:
    """The caller WAV through the file backend with the simulated echo, AEC off then on."""
    from sessions.live import LiveSession
    from voices.echo import SimulatedEchoPath

    from .file import FileBackend

    runs = {}
    for label, aec in (("aec_off", False), ("aec_on", True)):
        backend = FileBackend(models, wav, echo_path=SimulatedEchoPath(delay_ms=40, gain_db=-8), aec=aec)
        session = LiveSession(flow_factory(), backend)

        async def run(session=session) -> None:
            await session.start()
            try:
                await asyncio.wait_for(session.closed.wait(), timeout=timeout_s)
            finally:
                await session.stop()

        try:
            asyncio.run(run())
        except TimeoutError:
            pass
        values = [lat.as_dict()["eos_to_first_audio_ms"] for lat in backend.latencies]
        values = [v for v in values if v is not None]
        prompts = session.runtime.ladder.prompts.values()
        runs[label] = {
            "turns_measured": len(values),
            "eos_to_first_audio_ms": {"median": statistics.median(values) if values else None, "max": max(values, default=None)},
            "prompts_cut": sum(1 for p in prompts if p.status.value == "interrupted"),
            "echo_segments_rejected": backend.echo_rejected,
            **backend.echo_figures(),
        }
    runs["canceller_cost_per_10ms_frame"] = canceller_cost()
    return runs

"""`lull bench turn --backend livekit`: the bench's caller through a LiveKit AgentSession
(`voices.livekit.backend`), its wait measured from the recording as for the file
backend, in the same run (voices.framework_backend.run_framework_turns)."""

from __future__ import annotations

from pathlib import Path

from voices.framework_backend import run_framework_turns

from . import quiet_livekit_logs
from .backend import LiveKitBackend


def run_livekit_turns(models, wav: Path, flow, speech_ends_s: list[float], *, timeout_s: float, line=None) -> dict:  # noqa: ANN001
    quiet_livekit_logs()
    return run_framework_turns(LiveKitBackend(models, wav, line=line), flow, speech_ends_s, timeout_s=timeout_s)


__all__ = ["run_livekit_turns"]

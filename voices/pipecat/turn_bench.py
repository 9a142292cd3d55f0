"""`lull bench turn --backend pipecat`: the bench's caller through a Pipecat pipeline
(`voices.pipecat.backend`), its wait measured from the recording as for the file
backend, in the same run (voices.framework_backend.run_framework_turns)."""

from __future__ import annotations

from pathlib import Path

from voices.framework_backend import run_framework_turns

from .backend import PipecatBackend


def run_pipecat_turns(models, wav: Path, flow, speech_ends_s: list[float], *, timeout_s: float, line=None) -> dict:  # noqa: ANN001
    return run_framework_turns(PipecatBackend(models, wav, line=line), flow, speech_ends_s, timeout_s=timeout_s)


__all__ = ["run_pipecat_turns"]

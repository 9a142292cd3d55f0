"""The caller's wait measured from the recording (voices.backends.recorded_wait.gaps_from_audio),
the measure `lull bench turn --backend pipecat` puts the file backend and Pipecat side by side with."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from console.cli import app
from voices.backends.recorded_wait import gaps_from_audio


def block(loud_from: int | None, n: int = 100) -> np.ndarray:
    audio = np.zeros(n, np.float32)
    if loud_from is not None:
        audio[loud_from:] = 0.2
    return audio


def test_the_wait_runs_from_the_end_of_speech_to_the_first_audible_sample_after_it():
    rate = 1000  # one sample a millisecond
    played = [(0.0, block(0), rate), (900.0, block(None), rate), (1000.0, block(None), rate), (1100.0, block(40), rate)]
    # speech ended at 500 ms (the agent was already speaking then: not the reply) and at 1000 ms
    assert gaps_from_audio([50.0, 1000.0], played) == [None, 140.0]


def test_a_turn_the_agent_never_answered_has_no_wait():
    rate = 1000
    played = [(0.0, block(None), rate), (3000.0, block(10), rate)]
    # the reply after 3 s comes after the second turn ended: it answers that one
    assert gaps_from_audio([500.0, 2500.0], played) == [None, 510.0]


def test_bench_turn_refuses_an_unknown_backend():
    result = CliRunner().invoke(app, ["bench", "turn", "--backend", "kivelit"])
    assert result.exit_code == 2 and "expected file, pipecat, livekit or all" in result.output

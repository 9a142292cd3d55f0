"""Who decides what the caller may talk over, in a Pipecat pipeline running a Lull flow."""

from __future__ import annotations

from pipecat.turns.user_start.transcription_user_turn_start_strategy import TranscriptionUserTurnStartStrategy
from pipecat.turns.user_start.vad_user_turn_start_strategy import VADUserTurnStartStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies


def lull_owns_barge_in() -> UserTurnStrategies:
    """Pipecat's default turn strategies (VAD or words start a turn, smart-turn v3 ends
    it) without their interruption: the flow decides what the caller may talk over (a
    disclosure said verbatim is not cut), and Lull's cancel flushes the rest."""
    return UserTurnStrategies(start=[
        VADUserTurnStartStrategy(enable_interruptions=False),
        TranscriptionUserTurnStartStrategy(enable_interruptions=False),
    ])


__all__ = ["lull_owns_barge_in"]

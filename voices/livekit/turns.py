"""Lull's end of turn for a LiveKit AgentSession.

LiveKit's turn detector idiom is a model the session asks, at each end of the caller's
speech, how likely the turn is over (`predict_end_of_turn(chat_ctx)`); below the
detector's `unlikely_threshold` the session waits `max_endpointing_delay`, otherwise
`min_endpointing_delay`, both from the caller's last word. `LullTurnDetector` answers
from the words against the flow's pending question (`voices.end_of_turn`): part of a
code is unlikely to be the end (the session holds the turn open: a caller pausing
between digits gives one answer); anything else is likely. Its own turn detector
plugin fetches a model from a hub at run time; this one needs none.

    session = AgentSession(vad=..., stt=..., tts=..., user_away_timeout=None, turn_handling={
        "turn_detection": lull.turn_detector(), "endpointing": {"min_delay": 0.25, "max_delay": 2.5}})

In flow mode `LullLadder` also ends the caller's turn for the flow itself, with the same
rule and the stage's own timings (`LullLadder(end_of_turn=True)`), since a session
without an LLM commits no user turn of its own to a flow.
"""

from __future__ import annotations

from voices.end_of_turn import SlotAwareJudge

# LiveKit's detectors return a probability; Lull's rule is a decision
LIKELY, UNLIKELY, THRESHOLD = 1.0, 0.0, 0.5


class LullTurnDetector:
    """A LiveKit turn detector (livekit.agents.voice.turn._TurnDetector) that reads the
    caller's words as Lull does."""

    def __init__(self, judge: SlotAwareJudge) -> None:
        self.judge = judge
        self.last_reason: str | None = None  # the latest decision, for tests and the console

    @property
    def model(self) -> str:
        return "lull-slot-aware"

    @property
    def provider(self) -> str:
        return "lull"

    async def unlikely_threshold(self, language) -> float:  # noqa: ANN001
        return THRESHOLD

    async def supports_language(self, language) -> bool:  # noqa: ANN001
        return True  # digits and yes/no as the flow reads them; anything else is "likely"

    async def predict_end_of_turn(self, chat_ctx, *, timeout: float | None = None) -> float:  # noqa: ANN001
        words = ""
        for item in reversed(chat_ctx.items):  # the caller's words so far are the last user message
            if getattr(item, "role", None) == "user":
                words = item.text_content or ""
                break
        reason = self.judge.verdict(words).reason
        self.last_reason = reason
        return UNLIKELY if reason == "partial_value" else LIKELY


__all__ = ["LullTurnDetector"]

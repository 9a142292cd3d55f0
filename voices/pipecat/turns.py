"""Who decides when the caller has finished, and what they may talk over, in a Pipecat
pipeline running a Lull flow.

`LullTurnStop` is a Pipecat user-turn stop strategy that ends turns as Lull's own agent
does (`voices.end_of_turn`): from the VAD's stop and the words of each segment, read
against the question pending. A complete code ends the turn as soon as its words are
in; part of one holds the turn open (a caller pausing between digits gives one answer);
other words wait the stage's hold. `LullTurnStart` is Pipecat's VAD and transcription
starts until the room's voices are known (a television: voices.background_voices), then
the caller's frames louder than the room. `lull_turns(processor)` gives a
`UserTurnProcessor` both, without Pipecat's interruption.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_start.base_user_turn_start_strategy import BaseUserTurnStartStrategy
from pipecat.turns.user_start.transcription_user_turn_start_strategy import TranscriptionUserTurnStartStrategy
from pipecat.turns.user_start.vad_user_turn_start_strategy import VADUserTurnStartStrategy
from pipecat.turns.user_stop.base_user_turn_stop_strategy import BaseUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from voices.background_voices import ROOM_EVIDENCE_FRAMES, BackgroundVoices, frame_dbfs
from voices.end_of_turn import SlotAwareJudge, TurnEnd, Verdict

from .frames import TurnTranscriptionFrame, WordsDecodingFrame


def _no_interruption_starts() -> list:
    return [VADUserTurnStartStrategy(enable_interruptions=False),
            TranscriptionUserTurnStartStrategy(enable_interruptions=False)]


def lull_owns_barge_in() -> UserTurnStrategies:
    """Pipecat's default turn strategies (VAD or words start a turn, smart-turn v3 ends
    it) without their interruption: the flow decides what the caller may talk over (a
    disclosure said verbatim is not cut), and Lull's cancel flushes the rest."""
    return UserTurnStrategies(start=_no_interruption_starts())


def lull_turns(processor) -> UserTurnStrategies:  # noqa: ANN001
    """Lull's end of turn (`LullTurnStop`, reading `processor`'s pending question) and its
    start (`LullTurnStart`: Pipecat's, without their interruption, until the room's voices
    are known)."""
    stop = LullTurnStop(processor.end_of_turn, on_decision=processor.note_end_of_turn)
    processor.turn_stop = stop  # it ends a turn the room's voices held open
    return UserTurnStrategies(start=[LullTurnStart(processor.room)], stop=[stop])


class LullTurnStart(BaseUserTurnStartStrategy):
    """A user turn starts when the VAD hears speech or the STT gives words (Pipecat's
    VAD and transcription starts, without interruption: Lull owns barge-in), until a turn
    was judged the room's (a television: `room`, voices.background_voices). From then on
    the room talks on under the caller, so a turn starts only once the VAD hears speech
    and `ROOM_EVIDENCE_FRAMES` audio frames are clearly louder than the room."""

    def __init__(self, room: BackgroundVoices, **kwargs) -> None:
        super().__init__(enable_interruptions=False, **kwargs)
        self.room = room
        self._vad = False
        self._louder = 0

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        known = self.room.room_dbfs is not None
        if isinstance(frame, VADUserStartedSpeakingFrame):
            self._vad, self._louder = True, 0
            if not known:
                await self.trigger_user_turn_started()
                return ProcessFrameResult.STOP
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._vad = False
        elif isinstance(frame, (TranscriptionFrame, InterimTranscriptionFrame)) and not known:
            await self.trigger_user_turn_started()
            return ProcessFrameResult.STOP
        elif isinstance(frame, InputAudioRawFrame) and self._vad and known:
            self._louder = self._louder + 1 if self.room.louder_than_room(frame_dbfs(frame.audio)) else 0
            if self._louder >= ROOM_EVIDENCE_FRAMES:
                self._louder = 0
                await self.trigger_user_turn_started()
                return ProcessFrameResult.STOP
        return ProcessFrameResult.CONTINUE


class LullTurnStop(BaseUserTurnStopStrategy):
    """End the user's turn as Lull does (voices.end_of_turn.TurnEnd), on the pipeline's
    event loop clock. The VAD's stop frame carries how long it waited (`stop_secs`), so
    the caller's last word is placed that much earlier; the STT's p99 latency (from its
    metadata frame) is how long a segment's words are waited for, unless Lull's whisper
    service says it is decoding them (`WordsDecodingFrame`): then until they come."""

    def __init__(self, judge: SlotAwareJudge, *, on_decision: Callable[[Verdict], None] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.judge = judge
        self.on_decision = on_decision or (lambda verdict: None)
        self._words_wait_ms: float | None = None
        self._end = self._new_turn()
        self._timer: asyncio.Task | None = None
        self._noted: Verdict | None = None

    def _new_turn(self, speaking: bool = False) -> TurnEnd:
        end = TurnEnd(self.judge.verdict) if self._words_wait_ms is None else \
            TurnEnd(self.judge.verdict, words_wait_ms=self._words_wait_ms)
        end.speaking = speaking
        return end

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time() * 1000.0

    async def handle_user_turn_started(self) -> None:
        # the VAD's state is the caller's, not the turn's: a turn may begin mid-speech
        self._end, self._noted = self._new_turn(self._end.speaking), None
        await self._cancel()

    async def handle_user_turn_stopped(self) -> None:
        self._end, self._noted = self._new_turn(), None
        await self._cancel()

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._cancel()

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        if isinstance(frame, STTMetadataFrame):
            self._words_wait_ms = self._end.words_wait_ms = frame.ttfs_p99_latency * 1000.0
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._end.speech_started(self._now())
            await self._cancel()
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            await self._arm(self._end.speech_stopped(self._now(), frame.stop_secs * 1000.0))
        elif isinstance(frame, TranscriptionFrame):
            await self._arm(self._end.words(self._now(), frame.text, whole_turn=isinstance(frame, TurnTranscriptionFrame)))
        elif isinstance(frame, WordsDecodingFrame):
            now = self._now()
            await self._arm(self._end.decoded(now) if frame.done else self._end.decoding(now))
        return ProcessFrameResult.CONTINUE

    async def _arm(self, deadline: float | None) -> None:
        await self._cancel()
        decision = self._end.decision
        if decision is not None and decision != self._noted and decision.reason != "hold":
            self._noted = decision
            self.on_decision(decision)
        if deadline is None:
            return
        self._timer = self.task_manager.create_task(self._end_at(deadline), f"{self}::end_at")

    async def _end_at(self, deadline: float) -> None:
        try:
            await asyncio.sleep(max(0.0, deadline - self._now()) / 1000.0)
        except asyncio.CancelledError:
            return
        self._timer = None
        await self.trigger_user_turn_stopped()

    async def _cancel(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and timer is not asyncio.current_task():
            await self.task_manager.cancel_task(timer)


__all__ = ["LullTurnStart", "LullTurnStop", "lull_owns_barge_in", "lull_turns"]

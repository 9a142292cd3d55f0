"""`LullProcessor`: a Lull silence policy inside any Pipecat pipeline.

Two modes. *Ladder* (`LullProcessor(policy)`): beside an LLM, Lull owns the no-input
behaviour only (below). *Flow* (`LullProcessor(flow=compiled_flow)`, or bound to a
`sessions.live.LiveSession` with `session=`): a Lull flow drives the conversation as in
Lull's own agent. Its prompts, questions included, are said through the pipeline's TTS.
The caller's words are read by the flow's classifier into `CallerUtterance`. Its tools
run as the live session runs them. The live session keeps the journal and the timers,
exactly as for Lull's own backends. The frame mapping below is the same in both modes.

Beside an LLM agent, Lull owns only the no-input behaviour: after each bot turn that
waits for the caller, the listening windows, reminders, holds, recovery and close, said
through the pipeline's own TTS; the LLM does the rest. One owner of no-input: give the
pipeline's user idle controller no timeout (0).

Place it between the LLM and the TTS, so the prompts it asks for reach the TTS and the
bot's own words pass through it:

    Pipeline([transport.input(), stt, user_aggregator, llm, LullProcessor(), tts,
              transport.output(), assistant_aggregator])

The mapping, frame by frame (Pipecat frame -> Lull core event; the core is
`ladder.Controller`, fed with the processor's clock, monotonic milliseconds from the
pipeline's start):

- `LLMTextFrame` / `TTSTextFrame` (downstream, not Lull's): the words of the bot's turn.
- `BotStartedSpeakingFrame`: `PlaybackStarted` of the oldest prompt Lull pushed and has
  not heard start; with none pushed, the bot's own turn begins (speech Lull did not ask
  for is known as such, never taken for a Lull prompt).
- `BotStoppedSpeakingFrame`: `PlaybackCompleted` of the Lull prompt playing; after the
  bot's own turn, `AskQuestion` with its words, already said (its playback started and
  completed at this frame), so the first window arms from the end the transport saw.
- `UserStartedSpeakingFrame` / `UserStoppedSpeakingFrame`: `TurnStarted` / `TurnEnded`
  of one caller turn (`user-N`, seq N), whatever turn strategy the pipeline uses.
- `TranscriptionFrame`: the caller's words, read by Lull's classifier on its shared
  phrases (asking for time, being back, asking again, backchannels) into `TurnInterpreted` once
  the turn has ended (a transcription after the stop is read when it comes); words that
  are none of these answer the question (the answer's value is the words heard, masked
  in the journal): the LLM takes it from there.
- Beside an LLM that marks its turns (`FilterIncompleteUserTurnStrategies`; on with
  `model_reads_turns=True`, or from the first marker seen): the model decides each
  caller turn, and Lull's reading of the words is journaled beside it, not fed.
  `LLMFullResponseStartFrame` notes the caller turn the response reads (the latest, or
  while the caller speaks again the one before); its `LLMMarkerResponseFrame` is the
  decision, by its `kind`: complete = `TurnInterpreted(answer)`, short (cut off) =
  `partial_answer`, long (needs time) = `wait_request`, each with the turn's end if
  Pipecat keeps the turn open. One for an older turn than the latest is stale (the core
  rejects it). `VADUserStartedSpeakingFrame` inside a Pipecat turn the model already
  decided (◐ and ○ keep it open) is a new caller turn to Lull. An `LLMRunFrame` coming
  from the LLM is the mixin re-prompting on its own timer: journaled as a second owner.
  `transcripts()` gives a processor to put before the user aggregator, which keeps the
  final transcriptions to itself.
- `InterruptionFrame`: `PlaybackInterrupted` of the Lull prompt playing.
- `FunctionCallInProgressFrame` / `FunctionCallResultFrame`: `ToolStarted` /
  `ToolFinished` (ok, or failed when the result carries an error).
- `ErrorFrame` marked fatal: `TransportFailed` of the output path.
- `EndFrame` / `CancelFrame`: `EndSession`; the timers stop.
- `LullEventFrame` (voices.pipecat.frames): its core event, as it comes; for what
  Pipecat has no frame for (a route's availability, an announcement, a question the
  application asks Lull to ask, a media path failing or recovering).

Effects go back as frames:
- a `RequestPrompt` is a `TTSSpeakFrame` downstream, its token and kind in the frame's
  metadata (`lull_token`, `lull_kind`) and remembered for the bot speaking frames; the
  question of the bot's own turn is not said again;
- a `CancelPrompt` of a prompt queued or playing is an interruption broadcast (the
  pipeline's TTS and transport flush it); one that had started playing is reported
  `PlaybackInterrupted` at once;
- while the core holds the caller, an `LLMMessagesAppendFrame` downstream puts a note
  in the LLM's context (the assistant aggregator keeps it), withdrawn by an
  `LLMMessagesTransformFrame` once the turn after the hold has been read;
- `SessionClosed` ends the call (an `EndWorkerFrame`) once the last Lull prompt
  has been said, unless `end_call_on_close` is off;
- the core's timers run on the event loop at `next_deadline()`.
Every frame passes on unchanged.

Times are the pipeline's event loop clock, in ms, read to the microsecond. A transport
that reports the bot stopped speaking late makes the window arm late by as much: the
window is measured from the frame, not from the audio.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
from collections import deque
from importlib.metadata import version
from collections.abc import Callable
from pathlib import Path

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    ErrorFrame,
    Frame,
    EndWorkerFrame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMFullResponseStartFrame,
    LLMMarkerResponseFrame,
    LLMMessagesAppendFrame,
    LLMMessagesTransformFrame,
    LLMRunFrame,
    LLMTextFrame,
    StartFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from ladder import (
    AskQuestion,
    CallerUtterance,
    CancelPrompt,
    Controller,
    EndSession,
    LadderPolicy,
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    PromptFailed,
    RequestPrompt,
    SessionClosed,
    ToolFinished,
    ToolStarted,
    TransportFailed,
    TurnEnded,
    TurnInterpreted,
    TurnStarted,
)
from ladder.effects import Effect
from ladder.events import Event
from ladder.flow.understanding.shared_intents import LADDER_INTENTS, LearnedIntents, flow_intents
from voices.background_voices import BackgroundVoices, speech_level_dbfs
from voices.end_of_turn import SlotAwareJudge, holds_value
from voices.framework_journal import FrameworkJournal
from voices.understanding.interpret import BackgroundMatcher, TurnReading, make_matcher_soon, read_words
from voices.understanding.model_reading import HOLD_NOTE, MARKER_KINDS, ModelDecision, core_events, lull_meaning, observation

from .frames import LullEventFrame, TurnTranscriptionFrame

_TURN_AUDIO_BLOCKS = 1500  # a turn's voiced audio kept for its level: 30 s of 20 ms blocks


def _loop_clock() -> float:
    """The pipeline's clock: its event loop's (monotonic on a real loop, virtual in tests)."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return time.monotonic()


class LullProcessor(FrameProcessor):
    """A Lull silence policy (a `LadderPolicy`) as a Pipecat FrameProcessor, ladder mode."""

    def __init__(
        self,
        policy: LadderPolicy | None = None,
        *,
        matcher=None,
        journal_dir: Path | None = None,
        services: dict | None = None,
        end_call_on_close: bool = True,
        turn_id: Callable[[int], str] | None = None,
        flow=None,
        session=None,
        on_line: Callable[[str, str], None] | None = None,
        model_reads_turns: bool | None = None,
        **kwargs,
    ) -> None:
        """`journal_dir`: this call's session folder (one per call); the journal it gets
        replays CLEAN (`lull sessions replay`) and reads in `lull sessions step` and F12.
        `services`: what the pipeline runs (STT, LLM, TTS, transport), for its header.
        `end_call_on_close`: when the policy closes the call, end the pipeline after the
        closing words. `turn_id`: the name of the caller's turn number N (`user-N`).
        `flow` (a CompiledFlow) or `session` (a LiveSession): flow mode.
        `model_reads_turns` (ladder mode): the pipeline's LLM decides what each caller
        turn is, by its turn-completion markers (`FilterIncompleteUserTurnStrategies`);
        Lull's own reader is journaled beside it. None: from the first marker seen."""
        super().__init__(**kwargs)
        if flow is not None and session is None:
            from sessions.live import LiveSession

            session = LiveSession(flow, self, journal_dir=journal_dir, clock=_loop_clock,
                                  header={"source": "pipecat", "pipeline": {"mode": "flow", **dict(services or {})}})
        self._session = session
        self.on_line = on_line or (lambda who, text: None)  # ("agent"|"caller", words) as heard
        self._texts: dict[int, str] = {}  # Lull prompt token -> its words
        self.end_call_on_close = end_call_on_close
        self.turn_id = turn_id or (lambda seq: f"user-{seq}")
        self.core = Controller(policy) if session is None else session.runtime.ladder
        self._services = dict(services or {})
        self._journal = FrameworkJournal(journal_dir, self._journal_header)
        # what the caller's words mean to the ladder: by default the voice backends'
        # classifier on Lull's shared phrases, built in a thread from here on (its models
        # load now, so a missing one says so at once); any object with match(text) will do
        if matcher is None:
            # flow mode: the flow's own intents, with the shared phrases it learns
            intents = LearnedIntents(LADDER_INTENTS) if session is None else flow_intents(session.flow.spec)
            matcher = make_matcher_soon(intents, None, "classifier")
        self.matcher = matcher
        # Lull's end of turn, for the pipeline's turn strategies (voices.pipecat.turns.lull_turns)
        self.end_of_turn = SlotAwareJudge(lambda: session.runtime if session is not None else None, matcher)
        self.inputs: list[tuple[float, Event]] = []  # what the core was fed, in order
        self.effects: list[tuple[float, Effect]] = []
        self._start: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._pushed: deque[int] = deque()  # Lull prompts pushed, not yet heard starting
        self._playing: int | None = None  # the Lull prompt the bot is saying
        self._own_question: int | None = None  # the token of a question the bot already said
        self._bot_turn = False  # the bot is saying words Lull did not ask for
        self._bot_words: list[str] = []
        self._questions = 0
        self._seq = 0
        self._user_words: list[str] = []
        self._user_stopped = False
        self._interpreted = True
        self._closing = False  # the policy closed the call: end it after the last prompt
        # the model's reading of caller turns (ladder mode beside an LLM with markers)
        self.model_reads_turns = model_reads_turns
        self._turn_words: dict[int, list[str]] = {}  # caller turn seq -> its words
        self._ended: set[int] = set()  # caller turns the core has seen end
        self._decided: set[int] = set()  # caller turns the model has decided
        self._stopped_seq = 0  # the latest caller turn whose speech had stopped
        self._response_for: int | None = None  # the caller turn the LLM's response reads
        self._pipecat_turn_open = False  # Pipecat's user turn: started, not yet stopped
        self._caller_speaking = False  # the VAD hears the caller now
        # transcription frames heard through `transcripts()` (the latest few: the user
        # aggregator keeps most of them, so they never come by to be forgotten)
        self._tapped: deque[int] = deque(maxlen=32)
        self.notes: list[tuple[str, dict]] = []  # observations journaled (model readings)
        self._hold_note: dict | None = None  # the context message while the caller is held
        # a television or people in the room (voices.background_voices): the caller's and
        # the room's levels, this turn's voiced audio and when it started (loop ms)
        self.room = BackgroundVoices()
        self._turn_audio: list[np.ndarray] = []
        self._turn_started_ms = 0.0
        self._room_verdict = None  # this turn was judged the room's at the bound
        self.turn_stop = None  # LullTurnStop, set by lull_turns: ends a turn the room held open
        self._last_reading: tuple[str, TurnReading] | None = None  # (words, their reading)

    # -- the clock -------------------------------------------------------------------

    def _now(self) -> float:
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time()
        return round((loop.time() - self._start) * 1000.0, 3)

    # -- frames in -------------------------------------------------------------------

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, StartFrame):
            self._now()  # the clock starts with the pipeline
            if self._session is not None and self._session.loop is None:
                await self._session.start()  # flow mode: the call starts with the pipeline
        elif isinstance(frame, BotStartedSpeakingFrame):
            await self._bot_started()
        elif isinstance(frame, BotStoppedSpeakingFrame):
            await self._bot_stopped()
        elif isinstance(frame, (LLMTextFrame, TTSTextFrame)) and direction is FrameDirection.DOWNSTREAM:
            self._bot_words.append(frame.text)
        elif isinstance(frame, LullEventFrame):
            self._forget(frame.event)
            await self._feed(frame.event)
        elif isinstance(frame, InputAudioRawFrame):
            if self._caller_speaking and self._pipecat_turn_open and len(self._turn_audio) < _TURN_AUDIO_BLOCKS:
                self._turn_audio.append(np.frombuffer(frame.audio, np.int16).astype(np.float32) / 32768.0)
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._caller_speaking = True
            if self._pipecat_turn_open and self._seq in self._decided and self._session is None:
                # the caller goes on inside Pipecat's still-open turn (after ◐ or ○ it
                # stays open): to Lull, a new caller turn, for the model's next decision
                await self._turn_started()
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._caller_speaking = False
            self._stopped_seq = self._seq
        elif isinstance(frame, UserStartedSpeakingFrame):
            self._pipecat_turn_open = self._caller_speaking = True
            await self._turn_started()
        elif isinstance(frame, TranscriptionFrame):
            if frame.id not in self._tapped:
                await self._heard(frame.text, whole_turn=isinstance(frame, TurnTranscriptionFrame))
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._pipecat_turn_open = self._caller_speaking = False
            self._stopped_seq = self._seq
            if self._seq:
                self._user_stopped = True
                if self._seq not in self._ended:
                    self._ended.add(self._seq)
                    await self._feed(TurnEnded(self.turn_id(self._seq), self._seq))
                if self._user_words and not self._model_decides():
                    await self._interpret()
        elif isinstance(frame, LLMFullResponseStartFrame) and direction is FrameDirection.DOWNSTREAM:
            # the response reads the caller's latest turn, or, while the caller speaks
            # again, the one that stopped before (its decision then comes stale); a turn
            # the model already decided is not read again (a greeting, a re-prompt)
            seq = self._stopped_seq if self._caller_speaking else self._seq
            self._response_for = seq if seq and seq not in self._decided else None
        elif isinstance(frame, LLMMarkerResponseFrame) and direction is FrameDirection.DOWNSTREAM:
            await self._model_marker(frame)
        elif isinstance(frame, LLMRunFrame) and direction is FrameDirection.DOWNSTREAM and self._model_decides():
            # only the LLM's own turn-completion timeouts push a run from here: a second
            # owner of no-input (give the mixin `lull_turn_completion()`'s config)
            self._note("second_no_input_owner", {"frame": "LLMRunFrame", "after_turn": self._seq})
        elif isinstance(frame, InterruptionFrame):
            if self._playing is not None:
                token, self._playing = self._playing, None
                await self._feed(PlaybackInterrupted(token))
        elif isinstance(frame, FunctionCallInProgressFrame):
            await self._feed(ToolStarted(frame.tool_call_id, frame.function_name))
        elif isinstance(frame, FunctionCallResultFrame):
            await self._feed(ToolFinished(frame.tool_call_id, "failed" if frame.error else "ok"))
        elif isinstance(frame, ErrorFrame) and getattr(frame, "fatal", False):
            await self._feed(TransportFailed("output", str(frame.error)[:200]))
        elif isinstance(frame, (EndFrame, CancelFrame)) and self._session is not None:
            await self._session.stop()
        elif isinstance(frame, (EndFrame, CancelFrame)):
            self._stop_timer()
            if self.core.state.value != "closed":
                await self._feed(EndSession(reason="pipeline_ended"), push=False)
            self.close_journal()
        await self.push_frame(frame, direction)

    def _forget(self, event: Event) -> None:
        """A Lull prompt that failed or ended by an application's report is no longer
        waiting for the bot speaking frames (the next start is another prompt's)."""
        token = getattr(event, "token", None)
        if type(event) in (PromptFailed, PlaybackCompleted, PlaybackInterrupted) and token is not None:
            if token in self._pushed:
                self._pushed.remove(token)
            if token == self._playing:
                self._playing = None

    @property
    def speaking(self) -> bool:
        """Is a Lull prompt still queued or playing?"""
        return bool(self._pushed) or self._playing is not None

    async def _bot_started(self) -> None:
        if self._pushed:
            self._playing = self._pushed.popleft()
            self.on_line("agent", self._texts.get(self._playing, ""))
            await self._feed(PlaybackStarted(self._playing))
        else:
            self._bot_turn = True  # its words came before it (the LLM's text reaches the TTS first)

    async def _bot_stopped(self) -> None:
        if self._playing is not None:
            token, self._playing = self._playing, None
            await self._feed(PlaybackCompleted(token))
            await self._end_if_closed()
        elif self._bot_turn and self._session is None:
            self._bot_turn = False
            text = "".join(self._bot_words).strip() or "(the bot's turn)"
            self._bot_words = []
            self._questions += 1
            await self._feed(AskQuestion(f"bot-{self._questions}", text), own_question=True)
            token = self._own_question
            if token is not None:  # already said by the bot: heard from start to end here
                self._own_question = None
                await self._feed(PlaybackStarted(token))
                await self._feed(PlaybackCompleted(token))

    async def _turn_started(self) -> None:
        self._seq += 1
        self._user_words, self._user_stopped, self._interpreted = [], False, False
        self._turn_audio, self._turn_started_ms, self._room_verdict = [], self._now(), None
        self._turn_words[self._seq] = self._user_words
        for old in [s for s in self._turn_words if s < self._seq - 8]:
            del self._turn_words[old]  # bounded: a decision that old is stale anyway
        await self._feed(TurnStarted(self.turn_id(self._seq), self._seq))

    async def _heard(self, text: str, *, whole_turn: bool = False) -> None:
        """The caller's words for the turn they are speaking (a final transcription);
        `whole_turn`: the turn's words so far, which replace the segments' before them."""
        if whole_turn:
            self._user_words[:] = [text]  # in place: the turn's words are kept by its number too
        else:
            self._user_words.append(text)
        if self._user_stopped and not self._interpreted and not self._model_decides():
            await self._interpret()  # the words came after the stop
        elif (self._session is not None and not self._user_stopped and self._room_verdict is None
              and self._now() - self._turn_started_ms >= self.room.turn_bound_ms):
            await self._check_long_turn()

    # -- background voices (voices.background_voices) ------------------------------------

    def _turn_level(self) -> float | None:
        return speech_level_dbfs(np.concatenate(self._turn_audio)) if self._turn_audio else None

    async def _is_reply(self, text: str, *, at_bound: bool = False) -> tuple[bool, str | None, float]:
        """(the words hold a reply, the intent read, its score): a value for the pending
        question, or what the reader recognised."""
        intent, score = await self._read(text)
        if intent is not None:
            return True, intent, score
        return self._session is not None and holds_value(self._session.runtime, text, at_bound=at_bound), None, score

    async def _check_long_turn(self) -> None:
        """A caller turn still open past the bound: its words so far hold no reply, and
        the room is talking, not the caller; Lull's stop strategy ends the turn."""
        text = " ".join(w.strip() for w in self._user_words if w.strip())
        reply = (await self._is_reply(text, at_bound=True))[0] if text else False
        verdict = self.room.judge(text, text, self._turn_level(), reply=reply, at_bound=True)
        if verdict is None or self.turn_stop is None:
            self._turn_started_ms = self._now()  # words for the call: checked again a bound later
            return
        self._room_verdict = verdict
        await self.turn_stop.trigger_user_turn_stopped()

    async def _room_turn(self, verdict) -> None:
        """The turn was the room's: no usable words for the core (noise, L8)."""
        turn, seq = self.turn_id(self._seq), self._seq
        self.room.learn_room(verdict.level_dbfs)
        data = {"turn": turn, **verdict.as_dict(), "room_dbfs": None if self.room.room_dbfs is None else round(self.room.room_dbfs, 1)}
        if self._session is not None:
            self._session.note("background_voices", data)  # flow mode: the live session's journal
        else:
            self._note("background_voices", data)
        self.on_line("caller", f"(background voices: {verdict.reason.replace('_', ' ')})")
        if self._session is not None:
            await self._feed(CallerUtterance(turn, seq, "", None, 0.0, f"background_voices:{verdict.reason}"))
        else:
            await self._feed(TurnInterpreted(turn, seq, "noise"))

    async def _judged_room(self, text: str) -> bool:
        """Is the turn that ended the room's? If so it was fed as such. Flow mode only: in
        ladder mode any words answer, and the pipeline's LLM reads the turn."""
        if self._session is None:
            return False
        verdict = self._room_verdict
        level = self._turn_level()
        if verdict is None:
            reply, _, _ = await self._is_reply(text) if text else (False, None, 0.0)
            verdict = self.room.judge(text, text, level, reply=reply)
            if verdict is None:
                if reply:
                    self.room.learn_caller(level)
                return False
        await self._room_turn(verdict)
        return True

    def room_gate(self) -> FrameProcessor:
        """A processor to place before the VAD: once a turn was judged the room's (a
        television), it passes the caller's frames, louder than the room, and silence for
        the rest (voices.pipecat.room_gate.RoomGateProcessor)."""
        from .room_gate import RoomGateProcessor

        return RoomGateProcessor(self.room)

    def transcripts(self) -> FrameProcessor:
        """A processor to place before the pipeline's user aggregator, which keeps the
        final transcriptions to itself: it hands each to this processor and passes it on,
        so Lull reads the words the LLM reads."""
        return _TranscriptTap(self)

    def _model_decides(self) -> bool:
        return bool(self.model_reads_turns) and self._session is None

    async def _read(self, text: str) -> tuple[str | None, float]:
        """Lull's own reader on the words: (intent, score), off the loop."""
        reading = await self._reading(text)
        return reading.intent, reading.score

    async def _reading(self, text: str) -> TurnReading:
        """The words' intent, score, what read it and their yes/no
        (voices.understanding.interpret.read_words), off the loop in one trip; the latest
        words' reading is kept, so the room's check and the flow read them once."""
        if self._last_reading is not None and self._last_reading[0] == text:
            return self._last_reading[1]
        matcher = self.matcher
        if isinstance(matcher, BackgroundMatcher):  # still training: wait for it, off the loop
            matcher = await asyncio.to_thread(matcher.get)
        reading = await asyncio.to_thread(read_words, matcher, text)  # an encoder's few ms, off the loop
        self._last_reading = (text, reading)
        return reading

    async def _interpret(self) -> None:
        self._interpreted = True
        text = " ".join(w.strip() for w in self._user_words if w.strip())
        if await self._judged_room(text):
            return
        if self._session is not None:
            await self._utterance(text)
            return
        value = None
        if not text:
            intent = "noise"
        else:
            matched = (await self._read(text))[0]
            intent = lull_meaning(matched, text)
            value = text if intent == "answer" else None  # the answer is the caller's words
        await self._feed(TurnInterpreted(self.turn_id(self._seq), self._seq, intent, value))  # type: ignore[arg-type]

    async def _model_marker(self, frame: LLMMarkerResponseFrame) -> None:
        """The LLM's turn-completion marker for the caller turn its response read (the
        meaning from the frame's `kind`, so configured markers are read as configured)."""
        if self._session is not None:
            return
        meaning = MARKER_KINDS.get(frame.kind or "")
        seq, self._response_for = self._response_for, None
        if meaning is None:
            if frame.marker is None and seq and self._model_decides() and not self._interpreted:
                await self._interpret()  # a response with no marker: Lull's own reading stands
            return
        if self.model_reads_turns is None:
            self.model_reads_turns = True  # the pipeline's LLM reads turns: from now on its decisions stand
        if not seq:
            return  # a response to no caller turn (a greeting, a check-in it was asked for)
        decision = ModelDecision(self.turn_id(seq), seq, meaning, "pipecat_marker", frame.marker)
        await self._model_decision(decision)

    async def _model_decision(self, decision: ModelDecision) -> None:
        """Feed the model's decision for its turn; an older turn than the caller's latest
        is stale (the core rejects it and says so); then journal both readings."""
        seq = decision.seq
        stale = seq < self._seq
        words = " ".join(w.strip() for w in self._turn_words.get(seq, ()) if w.strip())
        self._decided.add(seq)
        if seq == self._seq:
            self._interpreted = True  # the model read it: Lull's reading is not fed
        events = core_events(decision, words, turn_ended=stale or seq in self._ended)
        for event in events:
            if isinstance(event, TurnEnded):
                self._ended.add(seq)
            await self._feed(event)
        if decision.meaning == "answer" and words:
            self.on_line("caller", words)
        reading = await self._read(words) if words else None
        self._note("model_reading", observation(decision, reading, words, stale))

    def _note(self, kind: str, data: dict) -> None:
        self._journal.note(max(self._now(), self.core.now), kind, data)
        self.notes.append((kind, data))

    async def _utterance(self, text: str) -> None:
        """Flow mode: the caller's words and the flow intent they match."""
        turn, seq = self.turn_id(self._seq), self._seq
        if not text:
            await self._feed(CallerUtterance(turn, seq, "", None, 0.0, "recognizer_empty"))
            return
        reading = await self._reading(text)
        self.on_line("caller", text)
        await self._feed(CallerUtterance(turn, seq, text, reading.intent, reading.score, reader=reading.reader,
                                         yes_no=reading.yes_no, yes_no_score=reading.yes_no_score))

    # -- flow mode: the live session's edge (sessions.live.Backend) ----------------------

    def attach(self, session) -> None:
        self._session = session

    async def start(self) -> None:
        """The live session started (it starts with the pipeline's StartFrame)."""

    def speak(self, prompt: RequestPrompt) -> None:
        self._pushed.append(prompt.token)
        self.create_task(self._push_prompt(prompt))  # the session feeds on the loop: push from a task

    def cancel(self, token: int) -> None:
        async def cut() -> None:
            if await self._cancel(token):
                await self._feed(PlaybackInterrupted(token))

        self.create_task(cut())

    def set_end_of_speech(self, ms: float | None) -> None:
        """The active stages' end-of-speech hold, for `LullTurnStop` (with `lull_turns`;
        another turn strategy decides on its own)."""
        self.end_of_turn.set_end_of_speech(ms)

    def note_end_of_turn(self, verdict) -> None:  # noqa: ANN001
        """`LullTurnStop` decided this turn from its words: journaled as Lull's own
        backends journal it (the words stay out: they may be a secret value)."""
        if self._session is not None and self._seq:
            decision = "end_now" if verdict.reason == "complete_value" else "hold_open"
            self._session.note("end_of_turn", {"turn": self.turn_id(self._seq), "decision": decision,
                                               "reason": verdict.reason, "hold_ms": verdict.hold_ms})

    async def close(self) -> None:
        if self.end_call_on_close and not self._closing:
            self._closing = True
            await self.push_frame(EndWorkerFrame(reason="lull_session_closed"), FrameDirection.DOWNSTREAM)

    async def _push_prompt(self, prompt: RequestPrompt) -> None:
        self._texts[prompt.token] = prompt.text
        speak = TTSSpeakFrame(prompt.text, append_to_context=False)
        speak.metadata.update(lull_token=prompt.token, lull_kind=prompt.kind)
        await self.push_frame(speak, FrameDirection.DOWNSTREAM)

    # -- the core, and its effects out ---------------------------------------------------

    async def _feed(self, event: Event, push: bool = True, own_question: bool = False) -> None:
        if self._session is not None:
            if not self._session.closed.is_set():
                self._session.feed(event)  # flow mode: the session journals and executes
            return
        now = max(self._now(), self.core.now)  # a timer may have run the core a hair ahead
        self.inputs.append((now, event))
        self._journal.input(now, event)
        await self._take(self.core.handle(event, now), push, own_question)

    async def _take(self, effects: list[Effect], push: bool = True, own_question: bool = False) -> None:
        now = self.core.now
        cut: list[int] = []  # Lull prompts cut while playing: reported after these effects
        for effect in effects:
            self.effects.append((now, effect))
            self._journal.decision(now, effect)
            kind = type(effect)
            if kind is RequestPrompt:
                if own_question and effect.kind == "question":
                    self._own_question = effect.token  # the bot's own words: not said again
                elif push:
                    self._pushed.append(effect.token)
                    await self._push_prompt(effect)
            elif kind is CancelPrompt:
                if await self._cancel(effect.token):
                    cut.append(effect.token)
            elif kind is SessionClosed:
                self._closing = True
        self._schedule()
        await self._tell_model_of_hold()
        for token in cut:
            await self._feed(PlaybackInterrupted(token))
        if push:
            await self._end_if_closed()

    async def _tell_model_of_hold(self) -> None:
        """While the caller is held, the LLM's context says so (seed 001: the model
        recognises the caller being ready again); withdrawn when the hold ends. The
        pipeline's assistant aggregator, downstream, keeps the shared context."""
        held = self.core.state.value == "held"
        # the caller speaking again ends the hold; the note stays until the turn that
        # ended it is read, since that reading is the one it is for
        reading_pending = not self._interpreted and self._seq not in self._decided
        if held and self._hold_note is None:
            self._hold_note = {"role": "developer", "content": HOLD_NOTE}
            await self.push_frame(LLMMessagesAppendFrame(messages=[self._hold_note], run_llm=False))
        elif not held and self._hold_note is not None and not reading_pending:
            note, self._hold_note = self._hold_note, None
            await self.push_frame(LLMMessagesTransformFrame(
                transform=lambda messages: [m for m in messages if m is not note and m != note], run_llm=False))

    async def _cancel(self, token: int) -> bool:
        """Flush a Lull prompt the pipeline still holds; True if it had started playing."""
        if token == self._playing:
            self._playing = None
            await self.broadcast_interruption()
            return True
        if token in self._pushed:
            self._pushed.remove(token)
            await self.broadcast_interruption()
        return False

    async def _end_if_closed(self) -> None:
        if self._closing and self.end_call_on_close and self._playing is None and not self._pushed:
            self._closing = False
            await self.push_frame(EndWorkerFrame(reason="lull_session_closed"), FrameDirection.DOWNSTREAM)

    def _schedule(self) -> None:
        self._stop_timer()
        due = self.core.next_deadline()
        if due is None or self.core.state.value == "closed":
            return
        loop = asyncio.get_running_loop()
        self._now()  # the clock has started
        # at the deadline on the loop's clock itself, so no delay adds up call after call
        self._timer = loop.call_at(self._start + due / 1000.0, self._fire)  # type: ignore[operator]

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        self.create_task(self._fire_due())

    async def _fire_due(self) -> None:
        due = self.core.next_deadline()
        if due is None:
            return
        now = max(self._now(), due)  # the loop may wake a hair early
        for timer in iter(lambda: self.core.next_due_timer(now), None):
            self.inputs.append((now, timer))
            self._journal.input(now, timer)
            await self._take(self.core.handle(timer, now))

    # -- the journal -------------------------------------------------------------------

    def _journal_header(self) -> dict:
        return {
            "source": "pipecat",
            "ladder_policy": self.core.policy.model_dump(mode="json"),
            "flow_hash": None,
            "pipeline": {"pipecat": version("pipecat-ai"), "mode": "ladder", **self._services},
            "models": {},
            "devices": {"clock": "the pipeline's event loop"},
        }

    def close_journal(self) -> None:
        self._journal.close()


class _TranscriptTap(FrameProcessor):
    """Before the user aggregator: each final transcription to Lull, then on its way."""

    def __init__(self, lull: LullProcessor) -> None:
        super().__init__(name="LullTranscripts")
        self._lull = lull

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame) and direction is FrameDirection.DOWNSTREAM:
            self._lull._tapped.append(frame.id)
            await self._lull._heard(frame.text, whole_turn=isinstance(frame, TurnTranscriptionFrame))
        await self.push_frame(frame, direction)


__all__ = ["LullProcessor"]

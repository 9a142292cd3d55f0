"""`LullLadder`: a Lull silence policy inside a LiveKit `AgentSession`.

Two modes. *Ladder* (`LullLadder(policy)`): beside an LLM, Lull owns the no-input
behaviour only (below). *Flow* (`LullLadder(flow=compiled_flow)`, or bound to a
`sessions.live.LiveSession` with `live=`): a Lull flow drives the conversation as in
Lull's own agent, from the moment the session is up; its prompts,
questions included, are said through the session's TTS; the caller's words are read by
the flow's classifier into `CallerUtterance`; the live session keeps the journal and the
timers, exactly as for Lull's own backends (`voices.livekit.backend`). The event
mapping below is the same in both modes.

Beside an LLM, Lull owns the no-input behaviour only: after each agent turn that waits
for the caller, the listening windows, reminders, holds, recovery and close, said
through the session's own TTS; the LLM does the rest. One owner of no-input: start the
session with `user_away_timeout=None` (`attach` refuses a session that has one, since
its "away" state would be a second policy).

    session = AgentSession(stt=..., llm=..., tts=..., vad=..., user_away_timeout=None)
    lull = LullLadder(journal_dir=Path("calls") / call_id)
    lull.attach(session)
    await session.start(agent, room=ctx.room)

The mapping, session event by session event (LiveKit -> Lull core event; the core is
`ladder.Controller`, fed with the session's event loop clock, monotonic milliseconds
from `attach`):

- `agent_state_changed` to `speaking` while the session's current speech is a Lull
  prompt: `PlaybackStarted` of that prompt (the output reported its first frame
  played). While the current speech is not Lull's, the agent's own turn begins.
- `agent_state_changed` from `speaking` after the agent's own turn: `AskQuestion` with
  its words (from `conversation_item_added`), already said (its playback started and
  completed here), so the first window arms from the end of the audio.
- A Lull prompt's `SpeechHandle` done: `PlaybackCompleted`, or `PlaybackInterrupted`
  when it was interrupted after it started playing.
- `user_state_changed` to `speaking` / back to `listening`: `TurnStarted` /
  `TurnEnded` of one caller turn (`user-N`, seq N), whatever VAD and turn detector the
  session runs. `away` never comes (no `user_away_timeout`). With `end_of_turn=True`
  the turn ends as Lull's own agent ends it (`voices.end_of_turn`): back to `listening`
  and each final transcript are the VAD's and STT's reports; a complete code ends the
  turn once its words are in, part of one holds it open for the stage's
  `partial_value_hold_ms` (speaking again within it continues the same turn), other
  words wait the stage's end-of-speech hold, all from the caller's last word (the VAD's
  `min_silence_duration` before its report). Each decision on a value is journaled
  (`end_of_turn`).
- `user_input_transcribed` (final): the caller's words, read by Lull's classifier on its
  shared phrases (asking for time, being back, asking again, backchannels) into
  `TurnInterpreted` once the turn has ended (a transcript after the end is read when it
  comes); words that are none of these answer the question (the answer's value is the
  words heard, masked in the journal): the LLM takes it from there.
- `tool_execution_updated`: `tool_call_started` is `ToolStarted`; `tool_call_ended` is
  `ToolFinished` (ok when done, failed on error or cancel).
- `error` that is not recoverable: `TransportFailed` of the path it came from (STT: the
  recognizer; TTS or anything else: the output).
- `close`: `EndSession`; the timers stop.
- `LullLadder.feed(event)`: any core event, for what LiveKit has no event for (a route's
  availability, an announcement, a question the application asks Lull to ask, a media
  path failing or recovering).

Effects go back through the session:
- a `RequestPrompt` is `session.say(text, allow_interruptions=False,
  add_to_chat_ctx=False)`: Lull decides when its prompts are cut (L7), not the
  session's VAD; the question of the agent's own turn is not said again;
- a `CancelPrompt` interrupts the prompt's handle (`interrupt(force=True)`); one that
  had started playing is reported `PlaybackInterrupted` when the handle is done;
- `SessionClosed` ends the session (`session.shutdown()`) once the last Lull prompt
  has been said, unless `end_call_on_close` is off;
- the core's timers run on the event loop at `next_deadline()`.

The session's reports of a prompt are fed once: after a prompt is completed, interrupted
or failed (by the session or by `feed`), the session's own later report of it is
dropped. A report an application feeds is always fed, so a duplicated delivery reaches
the core and is rejected there as stale, as through every other backend.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import numpy as np

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
from voices.background_voices import BackgroundVoices, voiced_level_dbfs
from voices.end_of_turn import SlotAwareJudge, TurnEnd, holds_value
from voices.framework_journal import FrameworkJournal
from voices.understanding.interpret import BackgroundMatcher, TurnReading, make_matcher_soon, read_words
from voices.understanding.model_reading import HOLD_NOTE, ModelDecision, ModelMeaning, core_events, lull_meaning, observation

from .turns import LullTurnDetector

from livekit.agents import RunContext  # noqa: E402  (the tools' context: which reply called them)

def _loop_clock() -> float:
    """The session's clock: its event loop's (monotonic on a real loop, virtual in tests)."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return time.monotonic()


class _LiveEdge:
    """Flow mode with `flow=`: the live session's backend (sessions.live.Backend) is the
    adapter itself; the AgentSession is started by the application."""

    def __init__(self, adapter: LullLadder) -> None:
        self.adapter = adapter

    def attach(self, session) -> None:
        """The live session made around the adapter."""

    async def start(self) -> None:
        """The AgentSession is already up (the live session starts when it is)."""

    def speak(self, prompt: RequestPrompt) -> None:
        self.adapter.speak(prompt)

    def cancel(self, token: int) -> None:
        self.adapter.cancel(token)

    def set_end_of_speech(self, ms: float | None) -> None:
        """The active stages' hold, for Lull's end of turn."""
        self.adapter.judge.set_end_of_speech(ms)

    async def close(self) -> None:
        self.adapter.close_call()


_FINAL = (PlaybackCompleted, PlaybackInterrupted, PromptFailed)

# the function tools Lull offers the LLM (`LullLadder.tools()`): what each call decides
_TOOLS: dict[str, ModelMeaning] = {"caller_needs_time": "wait_request", "caller_is_back": "ready"}
_TOOL_REPLIES = {
    "wait_request": "Noted: the call waits for the caller and tells them so once. Say nothing now.",
    "ready": "Noted: the caller is back, and the pending question is put to them again. Say nothing now.",
}


class LullLadder:
    """A Lull silence policy (a `LadderPolicy`) attached to a LiveKit AgentSession."""

    def __init__(
        self,
        policy: LadderPolicy | None = None,
        *,
        matcher=None,
        journal_dir: Path | None = None,
        services: dict | None = None,
        end_call_on_close: bool = True,
        turn_id: Callable[[int], str] | None = None,
        on_line: Callable[[str, str], None] | None = None,
        on_prompt: Callable[[RequestPrompt], None] | None = None,
        flow=None,
        live=None,
        end_of_turn: bool = False,
        model_reads_turns: bool | None = None,
    ) -> None:
        """`journal_dir`: this call's session folder (one per call); its journal
        (`source: livekit`) replays CLEAN with `lull sessions replay`. `services`: what
        the session runs (STT, LLM, TTS, I/O), for the journal's header.
        `end_call_on_close`: when the policy closes the call, shut the session down after
        the closing words. `turn_id`: the name of the caller's turn number N (`user-N`).
        `matcher`: any object with `match(text) -> (intent, score)`; by default Lull's
        classifier on its shared phrases, built in a thread from here on. `on_prompt`:
        told of each prompt as it is handed to the session (an observer, or a rehearsal's
        endpoint). `flow` (a CompiledFlow) or `live` (a LiveSession): flow mode.
        `end_of_turn`: Lull's slot-aware end of turn decides when the caller's turn has
        ended (`voices.end_of_turn`, below), not each end of the session's VAD.
        `model_reads_turns` (ladder mode): the session's LLM decides what each caller
        turn is, by the tools of `tools()` and by replying; Lull's own reader is
        journaled beside it. None: on once `tools()` is asked for."""
        if flow is not None and live is None:
            from sessions.live import LiveSession

            live = LiveSession(flow, _LiveEdge(self), journal_dir=journal_dir, clock=_loop_clock, header={
                "source": "livekit",
                "pipeline": {"livekit-agents": version("livekit-agents"), "mode": "flow", **dict(services or {})},
            })
        self._live = live
        self.core = Controller(policy) if live is None else live.runtime.ladder
        self.end_call_on_close = end_call_on_close
        self.turn_id = turn_id or (lambda seq: f"user-{seq}")
        self.on_line = on_line or (lambda who, text: None)  # ("agent"|"caller", words) as heard
        self.on_prompt = on_prompt or (lambda prompt: None)
        if matcher is None:
            # flow mode: the flow's own intents, with the shared phrases it learns
            intents = LearnedIntents(LADDER_INTENTS) if live is None else flow_intents(live.flow.spec)
            matcher = make_matcher_soon(intents, None, "classifier")
        self.matcher = matcher
        # Lull's end of turn: the session's turn detector (`turn_detector()`) and, with
        # `end_of_turn`, this adapter's own end of each caller turn
        self.judge = SlotAwareJudge(lambda: live.runtime if live is not None else None, matcher)
        self.end_of_turn = end_of_turn
        self._turn_end: TurnEnd | None = None  # the caller turn not yet ended (end_of_turn)
        self._turn_timer: asyncio.TimerHandle | None = None
        self._vad_silence_ms = 0.0
        self._services = dict(services or {})
        # flow mode: the live session journals the call
        self._journal = FrameworkJournal(journal_dir if live is None else None, self._journal_header)
        self.inputs: list[tuple[float, Event]] = []  # what the core was fed, in order
        self.effects: list[tuple[float, Effect]] = []
        self.session = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._start: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._prompts: dict[int, RequestPrompt] = {}  # token -> the prompt asked for
        self._handles: dict[int, object] = {}  # token -> its SpeechHandle
        self._started: set[int] = set()  # prompts heard starting
        self._final: set[int] = set()  # prompts with their one final report
        self._cancelled: set[int] = set()  # prompts the core cancelled
        self._dropped: dict[int, set[str]] = {}  # reports to lose (rehearsing a lost callback)
        self._own_question: int | None = None
        self._agent_turn = False  # the agent is saying words Lull did not ask for
        self._agent_words: list[str] = []
        self._questions = 0
        self._seq = 0
        self._user_words: list[str] = []
        self._user_stopped = False
        self._interpreted = True
        self._closing = False
        self._tasks: set[asyncio.Task] = set()
        self._done = asyncio.Event()  # the call is over (the session closed, the journal too)
        self._session_closed = False
        # the model's reading of caller turns (ladder mode beside an LLM with Lull's tools)
        self.model_reads_turns = model_reads_turns
        self._turn_words: dict[int, list[str]] = {}  # caller turn seq -> its words
        self._decided: set[int] = set()  # caller turns the model has decided
        self._caller_speaking = False
        self._stopped_seq = 0  # the latest caller turn whose speech had stopped
        self._tool_calls: set[str] = set()  # calls of Lull's own tools (not a tool wait)
        self._reply_for: dict[int, int] = {}  # a reply's speech handle (id) -> the caller turn it reads
        self._hold_note: str | None = None  # the id of the context message while held
        self.notes: list[tuple[str, dict]] = []  # observations journaled (model readings)
        # a television or people in the room (voices.background_voices), flow mode: the
        # caller's and the room's levels; each frame's level (from `room_gate`) and when
        # this turn started (loop time)
        self.room = BackgroundVoices()
        self._levels: deque[tuple[float, float]] = deque(maxlen=1500)  # (loop time, dBFS): 30 s of 20 ms frames
        self._turn_started_at = 0.0
        self._room_verdict = None  # this turn was judged the room's at the bound

    # -- attaching -------------------------------------------------------------------

    def attach(self, session) -> None:
        """Listen to `session`'s events and speak through it. Call from the event loop
        the session runs on, before or after `session.start`."""
        away = getattr(session.options, "user_away_timeout", None)
        if away is not None:
            raise ValueError(
                f"the AgentSession has user_away_timeout={away}: Lull owns no-input, so start "
                "the session with user_away_timeout=None"
            )
        self.session = session
        self._loop = asyncio.get_running_loop()
        self._now()  # the clock starts here
        # the VAD reports the end of speech after this much silence: the caller's last
        # word was that long before the user state changes
        opts = getattr(getattr(session, "vad", None), "_opts", None)
        self._vad_silence_ms = float(getattr(opts, "min_silence_duration", 0.0) or 0.0) * 1000.0
        session.on("agent_state_changed", self._on_agent_state)
        session.on("user_state_changed", self._on_user_state)
        session.on("user_input_transcribed", self._on_transcribed)
        session.on("conversation_item_added", self._on_item_added)
        session.on("tool_execution_updated", self._on_tool)
        session.on("error", self._on_error)
        session.on("close", self._on_close)
        session.on("speech_created", self._on_speech_created)

    def _now(self) -> float:
        assert self._loop is not None, "attach() first"
        if self._start is None:
            self._start = self._loop.time()
        return round((self._loop.time() - self._start) * 1000.0, 3)

    # -- session events in -----------------------------------------------------------

    def _current_token(self) -> int | None:
        current = self.session.current_speech if self.session is not None else None
        for token, handle in self._handles.items():
            if handle is current:
                return token
        return None

    def _on_agent_state(self, ev) -> None:
        if self._live is not None and self._live.loop is None and ev.new_state == "listening":
            self._soon(self._live.start())  # flow mode: the call starts when the session is up
            return
        if ev.new_state == "speaking":
            token = self._current_token()
            if token is None and self._live is None:
                self._agent_turn = True  # the LLM's turn (its words come when it is added)
                seq = self._turn_read_by(self.session.current_speech if self.session is not None else None)
                if self._model_decides() and seq and seq not in self._decided:
                    # the LLM replies to the caller's turn: its decision that it was an answer
                    self._soon(self._model_decision(ModelDecision(self.turn_id(seq), seq, "answer", "livekit_reply")))
            elif token not in self._started:
                self._started.add(token)
                self.on_line("agent", self._prompts[token].text)
                self._report(PlaybackStarted(token), "start")
        elif ev.old_state == "speaking" and self._agent_turn:
            self._agent_turn = False
            text = " ".join(self._agent_words).strip() or "(the agent's turn)"
            self._agent_words = []
            self._questions += 1
            self._feed(AskQuestion(f"agent-{self._questions}", text), own_question=True)
            token = self._own_question
            if token is not None:  # already said by the agent: heard from start to end here
                self._own_question = None
                self._started.add(token)
                self._feed(PlaybackStarted(token))
                self._final.add(token)
                self._feed(PlaybackCompleted(token))

    def _on_item_added(self, ev) -> None:
        item = ev.item
        if getattr(item, "role", None) == "assistant" and self._agent_turn:
            text = item.text_content if hasattr(item, "text_content") else None
            if text:
                self._agent_words.append(text)

    def _on_user_state(self, ev) -> None:
        if ev.new_state == "speaking":
            if self._turn_end is not None:  # the caller goes on after a pause: the same turn
                self._stop_turn_timer()
                self._turn_end.speech_started(self._now())
                return
            self._seq += 1
            self._caller_speaking = True
            self._user_words, self._user_stopped, self._interpreted = [], False, False
            self._turn_started_at, self._room_verdict = self._loop_time(), None
            self._turn_words[self._seq] = self._user_words
            for old in [s for s in self._turn_words if s < self._seq - 8]:
                del self._turn_words[old]  # bounded: a decision that old is stale anyway
            self._feed(TurnStarted(self.turn_id(self._seq), self._seq))
            if self.end_of_turn:
                self._turn_end = TurnEnd(self.judge.verdict)
                self._turn_end.speech_started(self._now())
        elif ev.old_state == "speaking" and self._seq:
            if self._room_verdict is not None and self._user_stopped:
                return  # Lull ended this turn already: the room held it open past the bound
            self._caller_speaking = False
            self._stopped_seq = self._seq
            if self._turn_end is not None:
                self._arm_turn_end(self._turn_end.speech_stopped(self._now(), self._vad_silence_ms))
                return
            self._end_turn()

    def _whole_turn_stt(self):  # noqa: ANN202
        """The session's STT when its transcripts are each the turn's words so far
        (`voices.livekit.plugins.LullWhisperSTT(whole_turn=True)`), else None."""
        stt = getattr(self.session, "stt", None)
        return stt if getattr(stt, "whole_turn", False) else None

    def _end_turn(self) -> None:
        self._user_stopped = True
        whole = self._whole_turn_stt()
        if whole is not None:
            whole.turn_ended()
        self._feed(TurnEnded(self.turn_id(self._seq), self._seq))
        if self._user_words and not self._model_decides():
            self._soon(self._interpret())

    def _on_transcribed(self, ev) -> None:
        if not ev.is_final or not ev.transcript.strip():
            return
        whole = self._whole_turn_stt()
        whole_turn = whole is not None and whole.continues_turn(ev.transcript)
        if whole_turn:
            self._user_words[:] = [ev.transcript]  # in place: the turn's words are kept by its number too
        else:
            self._user_words.append(ev.transcript)
        if (self._live is not None and not self._user_stopped and self._room_verdict is None
                and (self._loop_time() - self._turn_started_at) * 1000.0 >= self.room.turn_bound_ms):
            self._soon(self._check_long_turn(self._seq))
        if self._turn_end is not None:
            self._arm_turn_end(self._turn_end.words(self._now(), ev.transcript, whole_turn=whole_turn))
        elif self._user_stopped and not self._interpreted and not self._model_decides():
            self._soon(self._interpret())  # the words came after the turn ended

    # -- background voices (voices.background_voices), flow mode ---------------------------

    def room_gate(self, source):  # noqa: ANN001
        """The session's audio input through the room gate: `session.input.audio =
        lull.room_gate(session.input.audio)`. Once a turn was judged the room's (a
        television), the caller's frames pass and silence for the rest; every frame's
        level tells the adapter each turn's (voices.livekit.room_gate.RoomGatedAudio)."""
        from .room_gate import RoomGatedAudio

        return RoomGatedAudio(source, self.room, on_level=lambda at, dbfs: self._levels.append((at, dbfs)))

    def _loop_time(self) -> float:
        return self._loop.time() if self._loop is not None else 0.0

    def _turn_level(self) -> float | None:
        since = self._turn_started_at - 0.3  # the VAD speaks of speech a little after it began
        return voiced_level_dbfs(np.array([10 ** (db / 10.0) for at, db in self._levels if at >= since]))

    async def _is_reply(self, text: str, *, at_bound: bool = False) -> tuple[bool, TurnReading]:
        """(the words hold a reply, how Lull's reader read them: interpret.read_words, off
        the loop in one trip): a reply is a value for the pending question, or what the
        reader recognised."""
        matcher = self.matcher
        if isinstance(matcher, BackgroundMatcher):
            matcher = await asyncio.to_thread(matcher.get)
        reading = await asyncio.to_thread(read_words, matcher, text)
        reply = reading.intent is not None or holds_value(self._live.runtime if self._live is not None else None, text,
                                                          at_bound=at_bound)
        return reply, reading

    async def _check_long_turn(self, seq: int) -> None:
        """A caller turn still open past the bound: no reply in its words so far, and it
        is the room talking; the turn ends here, judged the room's."""
        if seq != self._seq or self._user_stopped or self._room_verdict is not None:
            return
        text = " ".join(w.strip() for w in self._user_words if w.strip())
        reply = (await self._is_reply(text, at_bound=True))[0] if text else False
        if seq != self._seq or self._user_stopped:
            return
        verdict = self.room.judge(text, text, self._turn_level(), reply=reply, at_bound=True)
        if verdict is None:
            self._turn_started_at = self._loop_time()  # words for the call: checked again a bound later
            return
        self._room_verdict = verdict
        self._stop_turn_timer()
        self._turn_end = None
        self._end_turn()

    def _room_turn(self, seq: int, verdict) -> None:  # noqa: ANN001
        """The turn was the room's: no usable words for the flow (noise, L8)."""
        turn = self.turn_id(seq)
        self.room.learn_room(verdict.level_dbfs)
        if self._live is not None:
            self._live.note("background_voices", {"turn": turn, **verdict.as_dict(),
                                                  "room_dbfs": None if self.room.room_dbfs is None else round(self.room.room_dbfs, 1)})
        self.on_line("caller", f"(background voices: {verdict.reason.replace('_', ' ')})")
        self._feed(CallerUtterance(turn, seq, "", None, 0.0, f"background_voices:{verdict.reason}"))

    # -- Lull's end of turn (end_of_turn=True) ----------------------------------------

    def turn_detector(self) -> LullTurnDetector:
        """A LiveKit turn detector reading the caller's words as this adapter does
        (`AgentSession(turn_detection=...)`; voices.livekit.turns)."""
        return LullTurnDetector(self.judge)

    def _arm_turn_end(self, deadline: float | None) -> None:
        self._stop_turn_timer()
        end = self._turn_end
        if end is None or deadline is None:
            return
        decision = end.decision
        if decision is not None and decision.reason != "hold" and decision != getattr(end, "noted", None):
            end.noted = decision  # type: ignore[attr-defined]
            self._note_end_of_turn(decision)
        assert self._loop is not None and self._start is not None
        self._turn_timer = self._loop.call_at(self._start + deadline / 1000.0, self._turn_over)

    def _turn_over(self) -> None:
        self._turn_timer, self._turn_end = None, None
        self._end_turn()

    def _stop_turn_timer(self) -> None:
        if self._turn_timer is not None:
            self._turn_timer.cancel()
            self._turn_timer = None

    def _note_end_of_turn(self, verdict) -> None:  # noqa: ANN001
        """Journaled as Lull's own backends journal it (the words stay out: they may be a
        secret value)."""
        if self._live is not None:
            decision = "end_now" if verdict.reason == "complete_value" else "hold_open"
            self._live.note("end_of_turn", {"turn": self.turn_id(self._seq), "decision": decision,
                                            "reason": verdict.reason, "hold_ms": verdict.hold_ms})

    def _on_tool(self, ev) -> None:
        update = ev.update
        if update.type == "tool_call_started":
            call = update.function_call
            if call.name in _TOOLS:  # the model deciding a caller turn: not a tool wait
                self._tool_calls.add(call.call_id)
                return
            self._feed(ToolStarted(call.call_id, call.name))
        elif update.type == "tool_call_ended" and update.call_id in self._tool_calls:
            self._tool_calls.discard(update.call_id)
        elif update.type == "tool_call_ended":
            self._feed(ToolFinished(update.call_id, "ok" if update.status == "done" else "failed"))

    def _on_error(self, ev) -> None:
        error = ev.error
        if getattr(error, "recoverable", True):
            return  # the session retries it; Lull hears of the failure only
        path = "recognizer" if getattr(error, "type", "") == "stt_error" else "output"
        self._feed(TransportFailed(path, str(getattr(error, "error", error))[:200]))  # type: ignore[arg-type]

    def _on_close(self, ev) -> None:
        self._session_closed = True
        self._stop_turn_timer()
        if self._live is not None:  # flow mode: the live session ends the call
            self._soon(self._stop_live())
            return
        self._stop_timer()
        if self.core.state.value != "closed":
            self._feed(EndSession(reason=f"session_closed:{getattr(ev.reason, 'value', ev.reason)}"), push=False)
        self._journal.close()
        self._done.set()

    async def _stop_live(self) -> None:
        await self._live.stop()
        await self._live.closed.wait()  # a stop already under way finishes the journal
        self._done.set()

    async def done(self) -> None:
        """Wait until the call is over: the session closed and the journal with it."""
        await self._done.wait()

    async def _interpret(self) -> None:
        if self._interpreted:
            return
        self._interpreted = True
        seq = self._seq
        text = " ".join(w.strip() for w in self._user_words if w.strip())
        if self._live is not None:
            await self._utterance(seq, text)
            return
        matcher = self.matcher
        if isinstance(matcher, BackgroundMatcher):  # still training: wait for it, off the loop
            matcher = await asyncio.to_thread(matcher.get)
        matched = (await asyncio.to_thread(matcher.match, text))[0]  # an encoder's few ms, off the loop
        intent = lull_meaning(matched, text)
        self.on_line("caller", text)
        self._feed(TurnInterpreted(self.turn_id(seq), seq, intent, text if intent == "answer" else None))  # type: ignore[arg-type]

    async def _utterance(self, seq: int, text: str) -> None:
        """Flow mode: the caller's words and the flow intent they match, unless the turn
        was the room's (voices.background_voices)."""
        turn = self.turn_id(seq)
        if self._room_verdict is not None and seq == self._seq:
            self._room_turn(seq, self._room_verdict)
            return
        if not text:
            self._feed(CallerUtterance(turn, seq, "", None, 0.0, "recognizer_empty"))
            return
        reply, reading = await self._is_reply(text)
        level = self._turn_level() if seq == self._seq else None
        verdict = self.room.judge(text, text, level, reply=reply)
        if verdict is not None:
            self._room_turn(seq, verdict)
            return
        if reply:
            self.room.learn_caller(level)
        self.on_line("caller", text)
        self._feed(CallerUtterance(turn, seq, text, reading.intent, reading.score, reader=reading.reader,
                                   yes_no=reading.yes_no, yes_no_score=reading.yes_no_score))

    # -- the model's reading of the caller (W8) -----------------------------------------

    def tools(self) -> list:
        """The function tools Lull offers the session's LLM, in LiveKit's idiom
        (`Agent(tools=lull.tools())`): the caller needs time, the caller is back. A call
        is the model's decision for the caller's latest turn (one that comes after the
        caller's next turn began is stale); Lull then speaks (the acknowledgement, the
        question again) and the tool asks the LLM for no reply, so one voice answers."""
        from livekit.agents import function_tool

        if self.model_reads_turns is None:
            self.model_reads_turns = True

        async def caller_needs_time(context: RunContext) -> object:
            """Call this, instead of replying, when the caller asks you to wait or needs time
            (to fetch something, to think, to deal with something) and has not answered yet."""
            return await self._tool_decision("wait_request", context.speech_handle)

        async def caller_is_back(context: RunContext) -> object:
            """Call this, instead of replying, when the caller you were waiting for says they
            are back or ready to go on but has not answered the pending question yet."""
            return await self._tool_decision("ready", context.speech_handle)

        return [function_tool(caller_needs_time), function_tool(caller_is_back)]

    def _model_decides(self) -> bool:
        return bool(self.model_reads_turns) and self._live is None

    def _on_speech_created(self, ev) -> None:
        if ev.source == "generate_reply":
            # the session answers the caller turn that has just ended: the reply, and any
            # tool it calls, read that turn, however late they come
            self._reply_for[id(ev.speech_handle)] = self._stopped_seq
            if len(self._reply_for) > 16:
                self._reply_for.pop(next(iter(self._reply_for)))

    def _turn_read_by(self, handle) -> int:
        """The caller turn a reply (its speech handle) reads; without one, the caller's
        latest turn, or, while they speak again, the one before."""
        seq = self._reply_for.get(id(handle)) if handle is not None else None
        if seq is None:
            seq = self._stopped_seq if self._caller_speaking else self._seq
        return seq

    async def _tool_decision(self, meaning: ModelMeaning, handle=None) -> object:  # noqa: ANN001
        from livekit.agents.llm import ToolResult

        seq = self._turn_read_by(handle)
        if not seq or seq in self._decided:
            return ToolResult("There is no caller turn waiting for that decision. Say nothing now.", reply_required=False)
        stale = await self._model_decision(ModelDecision(self.turn_id(seq), seq, meaning, "livekit_tool"))
        if stale:
            return ToolResult("The caller has spoken since; that turn is over. Say nothing now.", reply_required=False)
        return ToolResult(_TOOL_REPLIES[meaning], reply_required=False)

    async def _model_decision(self, decision: ModelDecision) -> bool:
        """Feed the model's decision for its turn (an older turn than the caller's latest
        is stale: the core rejects it and says so); journal both readings. True if stale."""
        seq = decision.seq
        if seq in self._decided:
            return False
        self._decided.add(seq)
        stale = seq < self._seq
        words = " ".join(w.strip() for w in self._turn_words.get(seq, ()) if w.strip())
        if seq == self._seq:
            self._interpreted = True  # the model read it: Lull's reading is not fed
        for event in core_events(decision, words, turn_ended=True):  # the turn ended before the LLM ran
            self._feed(event)
        if decision.meaning == "answer" and words:
            self.on_line("caller", words)
        reading = None
        if words:
            matcher = self.matcher
            if isinstance(matcher, BackgroundMatcher):
                matcher = await asyncio.to_thread(matcher.get)
            reading = await asyncio.to_thread(matcher.match, words)
        record = observation(decision, reading, words, stale)
        self._journal.note(max(self._now(), self.core.now), "model_reading", record)
        self.notes.append(("model_reading", record))
        return stale

    def _tell_model_of_hold(self) -> None:
        """While the caller is held, the agent's chat context says so (seed 001: the model
        recognises the caller being ready again); withdrawn once the turn that ends the
        hold is read."""
        session = self.session
        agent = getattr(session, "current_agent", None) if session is not None else None
        if agent is None or self._live is not None:
            return
        held = self.core.state.value == "held"
        reading_pending = not self._interpreted and self._seq not in self._decided
        if held and self._hold_note is None:
            self._hold_note = f"lull_hold_{self._seq}"
            ctx = agent.chat_ctx.copy()
            ctx.add_message(role="system", content=HOLD_NOTE, id=self._hold_note)
            self._soon(agent.update_chat_ctx(ctx))
        elif not held and self._hold_note is not None and not reading_pending:
            note, self._hold_note = self._hold_note, None
            ctx = agent.chat_ctx.copy()
            ctx.items[:] = [item for item in ctx.items if getattr(item, "id", None) != note]
            self._soon(agent.update_chat_ctx(ctx))

    def _soon(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- what LiveKit has no event for ------------------------------------------------

    def feed(self, event: Event) -> None:
        """Feed any core event now (a route switched, an announcement, a media path
        failing). An application's report of a prompt is fed as it comes: a second final
        report of one prompt reaches the core, which rejects it as stale, as on every
        backend; the session's own report of a prompt already reported final is not fed
        after it (the adapter would be delivering one callback twice)."""
        token = getattr(event, "token", None)
        if type(event) in _FINAL and token is not None:
            self._final.add(token)
        self._feed(event)

    def drop_report(self, token: int, which: str) -> None:
        """Lose the session's `start` or `completion` report of prompt `token`: for
        rehearsing a callback that never comes (the incident library's lost reports)."""
        self._dropped.setdefault(token, set()).add(which)

    def _report(self, event: Event, which: str) -> None:
        token = event.token  # type: ignore[attr-defined]
        if which in self._dropped.get(token, ()):
            return
        if which != "start":
            if token in self._final:
                return
            self._final.add(token)
        self._feed(event)

    def _on_handle_done(self, token: int, handle) -> None:
        self._handles.pop(token, None)
        if handle.interrupted:
            if token in self._started or token not in self._cancelled:
                self._report(PlaybackInterrupted(token), "completion")
        else:
            if token not in self._started:  # said, but no state change came (no audio output)
                self._started.add(token)
                self._report(PlaybackStarted(token), "start")
            self._report(PlaybackCompleted(token), "completion")
        self._end_if_closed()

    @property
    def speaking(self) -> bool:
        """Is a Lull prompt still queued or playing?"""
        return bool(self._handles)

    # -- flow mode: the live session's edge (sessions.live.Backend, through the backend) --

    def speak(self, prompt: RequestPrompt) -> None:
        self._prompts[prompt.token] = prompt
        self._say(prompt)

    def cancel(self, token: int) -> None:
        """Cut a prompt the session still holds; one that had started playing is reported
        interrupted when its handle is done."""
        self._cancelled.add(token)
        handle = self._handles.get(token)
        if handle is not None:
            handle.interrupt(force=True)

    def close_call(self) -> None:
        """The live session closed the call: end the AgentSession after the last prompt."""
        self._closing = True
        self._end_if_closed()

    # -- the core, and its effects out ---------------------------------------------------

    def _feed(self, event: Event, push: bool = True, own_question: bool = False) -> None:
        if self._live is not None:
            if not self._live.closed.is_set():
                self._live.feed(event)  # flow mode: the session journals and executes
            return
        now = max(self._now(), self.core.now)  # a timer may have run the core a hair ahead
        self.inputs.append((now, event))
        self._journal.input(now, event)
        self._take(self.core.handle(event, now), push, own_question)

    def _take(self, effects: list[Effect], push: bool = True, own_question: bool = False) -> None:
        now = self.core.now
        for effect in effects:
            self.effects.append((now, effect))
            self._journal.decision(now, effect)
            kind = type(effect)
            if kind is RequestPrompt:
                self._prompts[effect.token] = effect
                if own_question and effect.kind == "question":
                    self._own_question = effect.token  # the agent's own words: not said again
                elif push:
                    self._say(effect)
            elif kind is CancelPrompt:
                self._cancelled.add(effect.token)
                handle = self._handles.get(effect.token)
                if handle is not None:
                    handle.interrupt(force=True)
            elif kind is SessionClosed:
                self._closing = True
        self._schedule()
        self._tell_model_of_hold()
        if push:
            self._end_if_closed()

    def _say(self, prompt: RequestPrompt) -> None:
        if self.session is None:
            return
        try:
            handle = self.session.say(prompt.text, allow_interruptions=False, add_to_chat_ctx=False)
        except RuntimeError as exc:  # the session is closing: the prompt cannot be said
            assert self._loop is not None
            self._loop.call_soon(self.feed, PromptFailed(prompt.token, f"session_refused: {exc}"[:200]))
            return
        self._handles[prompt.token] = handle
        handle.add_done_callback(lambda h, token=prompt.token: self._on_handle_done(token, h))
        self.on_prompt(prompt)

    def _end_if_closed(self) -> None:
        if (self._closing and self.end_call_on_close and not self._handles and self.session is not None
                and not self._session_closed):
            self._closing = False
            self.session.shutdown()

    def _schedule(self) -> None:
        self._stop_timer()
        due = self.core.next_deadline()
        if due is None or self.core.state.value == "closed" or self._loop is None:
            return
        # at the deadline on the loop's clock itself, so no delay adds up call after call
        self._timer = self._loop.call_at(self._start + due / 1000.0, self._fire)  # type: ignore[operator]

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        due = self.core.next_deadline()
        if due is None:
            return
        now = max(self._now(), due)  # the loop may wake a hair early
        for timer in iter(lambda: self.core.next_due_timer(now), None):
            self.inputs.append((now, timer))
            self._journal.input(now, timer)
            self._take(self.core.handle(timer, now))

    # -- the journal -------------------------------------------------------------------

    def _journal_header(self) -> dict:
        return {
            "source": "livekit",
            "ladder_policy": self.core.policy.model_dump(mode="json"),
            "flow_hash": None,
            "pipeline": {"livekit-agents": version("livekit-agents"), "mode": "ladder", **self._services},
            "models": {},
            "devices": {"clock": "the session's event loop"},
        }

    def close_journal(self) -> None:
        self._journal.close()


__all__ = ["LullLadder"]

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

Each prompt has one final report: once a prompt is completed, interrupted or failed (by
the session or by `feed`), a later report of it is dropped, not fed as a stale one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

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
from ladder.flow.shared_intents import LADDER_INTENTS, LearnedIntents, flow_intents
from voices.end_of_turn import SlotAwareJudge, TurnEnd
from voices.framework_journal import FrameworkJournal
from voices.interpret import BackgroundMatcher, make_matcher_soon

from .turns import LullTurnDetector

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


# what a caller's words mean to the no-input policy beside an LLM; anything else answers
_LADDER_MEANINGS = ("wait_request", "ready", "repeat_request", "backchannel")
_FINAL = (PlaybackCompleted, PlaybackInterrupted, PromptFailed)


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
        ended (`voices.end_of_turn`, below), not each end of the session's VAD."""
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
            self._user_words, self._user_stopped, self._interpreted = [], False, False
            self._feed(TurnStarted(self.turn_id(self._seq), self._seq))
            if self.end_of_turn:
                self._turn_end = TurnEnd(self.judge.verdict)
                self._turn_end.speech_started(self._now())
        elif ev.old_state == "speaking" and self._seq:
            if self._turn_end is not None:
                self._arm_turn_end(self._turn_end.speech_stopped(self._now(), self._vad_silence_ms))
                return
            self._end_turn()

    def _end_turn(self) -> None:
        self._user_stopped = True
        self._feed(TurnEnded(self.turn_id(self._seq), self._seq))
        if self._user_words:
            self._soon(self._interpret())

    def _on_transcribed(self, ev) -> None:
        if not ev.is_final or not ev.transcript.strip():
            return
        self._user_words.append(ev.transcript)
        if self._turn_end is not None:
            self._arm_turn_end(self._turn_end.words(self._now(), ev.transcript))
        elif self._user_stopped and not self._interpreted:
            self._soon(self._interpret())  # the words came after the turn ended

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
            self._feed(ToolStarted(call.call_id, call.name))
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
        intent = matched if matched in _LADDER_MEANINGS else "answer"
        self.on_line("caller", text)
        self._feed(TurnInterpreted(self.turn_id(seq), seq, intent, text if intent == "answer" else None))  # type: ignore[arg-type]

    async def _utterance(self, seq: int, text: str) -> None:
        """Flow mode: the caller's words and the flow intent they match."""
        turn = self.turn_id(seq)
        if not text:
            self._feed(CallerUtterance(turn, seq, "", None, 0.0, "recognizer_empty"))
            return
        matcher = self.matcher
        if isinstance(matcher, BackgroundMatcher):
            matcher = await asyncio.to_thread(matcher.get)
        intent, score = await asyncio.to_thread(matcher.match, text)
        self.on_line("caller", text)
        self._feed(CallerUtterance(turn, seq, text, intent, score))

    def _soon(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- what LiveKit has no event for ------------------------------------------------

    def feed(self, event: Event) -> None:
        """Feed any core event now (a route switched, an announcement, a media path
        failing); a final report of a prompt is its one final report."""
        token = getattr(event, "token", None)
        if type(event) in _FINAL and token is not None:
            if token in self._final:
                return
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

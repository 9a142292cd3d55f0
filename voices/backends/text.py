"""The text backend: type the caller's words, read the agent's (V7, fast design loops).

Playback is simulated in real time from the prompt's word count, one prompt after
another as a loudspeaker would play them; a cancelled prompt stops at once. Typed
caller turns are interpreted with the flow's example phrases: by the character-level
LexicalMatcher unless a `matcher_kind` of voices.understanding.interpret is asked for (`lull rehearse`
asks for the voice backends' classifier, so a typed turn is understood as a spoken one
would be; without the MiniLM wheel it falls back to lexical and journals why).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from ladder import (
    CallerUtterance,
    PlaybackCompleted,
    PlaybackInterrupted,
    PlaybackStarted,
    RequestPrompt,
    TurnEnded,
    TurnStarted,
)
from ladder.flow.understanding.shared_intents import flow_intents
from ladder.flow.understanding.text import LexicalMatcher

if TYPE_CHECKING:
    from sessions.live import LiveSession


class TextBackend:
    name = "text"

    def __init__(
        self,
        *,
        ms_per_word: float = 300,
        start_delay_ms: float = 80,
        matcher=None,
        matcher_kind: str = "lexical",
        on_line: Callable[[str, str], None] | None = None,
    ) -> None:
        self.ms_per_word = ms_per_word
        self.start_delay_ms = start_delay_ms
        self.matcher = matcher
        self.matcher_kind = matcher_kind
        self.matcher_fallback: dict | None = None
        self.on_line = on_line or (lambda who, text: None)
        self.session: LiveSession | None = None
        self._handles: dict[int, list[asyncio.TimerHandle]] = {}
        self._started: set[int] = set()
        self._busy_until = 0.0  # loop time when the queued audio ends
        self.typed = TypedTurns(self._feed)
        # incidents the designer injects at the endpoint (console keys l and y)
        self.lose_next_completion = False
        self.delay_next_completion_ms = 0.0

    def attach(self, session: LiveSession) -> None:
        self.session = session
        if self.matcher is None:
            spec = session.flow.spec
            if self.matcher_kind != "lexical":
                from voices.understanding.interpret import InterpreterError, make_matcher_soon

                try:
                    self.matcher = make_matcher_soon(flow_intents(spec), None, self.matcher_kind)  # type: ignore[arg-type]
                except InterpreterError as exc:
                    self.matcher_fallback = {"asked": self.matcher_kind, "using": "lexical", "why": str(exc)[:200]}
            if self.matcher is None:
                self.matcher = LexicalMatcher(flow_intents(spec).own_only(), spec.intent_threshold)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.matcher_fallback and self.session is not None:
            self.session.note("intent_matcher", self.matcher_fallback)

    # -- the agent's side --------------------------------------------------------------

    def speak(self, prompt: RequestPrompt) -> None:
        loop = self._loop
        duration = max(1, len(prompt.text.split())) * self.ms_per_word / 1000.0
        start = max(loop.time() + self.start_delay_ms / 1000.0, self._busy_until)
        self._busy_until = start + duration
        token = prompt.token

        def started() -> None:
            self._started.add(token)
            self.on_line("agent", prompt.text)
            self._feed(PlaybackStarted(token))

        def completed() -> None:
            self._handles.pop(token, None)
            self._feed(PlaybackCompleted(token))

        handles = [loop.call_at(start, started)]
        if self.lose_next_completion:
            self.lose_next_completion = False  # the report never comes: the core must cope
            handles.append(loop.call_at(start + duration, lambda: self._handles.pop(token, None)))
        else:
            delay = self.delay_next_completion_ms / 1000.0
            self.delay_next_completion_ms = 0.0
            handles.append(loop.call_at(start + duration + delay, completed))
        self._handles[token] = handles

    def cancel(self, token: int) -> None:
        handles = self._handles.pop(token, [])
        for handle in handles:
            handle.cancel()
        if handles:
            self._busy_until = min(self._busy_until, self._loop.time())  # flushed
        if token in self._started and handles:
            self.on_line("agent", "(cut off)")
            self._feed(PlaybackInterrupted(token))

    @property
    def speaking(self) -> bool:
        """Is any prompt still queued or playing?"""
        return bool(self._handles)

    def set_end_of_speech(self, ms: float | None) -> None:
        """Typed turns arrive whole: there is no end-of-speech hold to apply."""

    # -- the caller's side ---------------------------------------------------------------

    def say(self, text: str) -> None:
        """One typed caller turn: speech starts, ends, and is interpreted."""
        self.typed.say(self.matcher, text, heard=lambda: self.on_line("caller", text))

    def after_typed_turns(self, callback: Callable[[], None]) -> bool:
        """`callback` after the turns typed so far (see TypedTurns.after)."""
        return self.typed.after(self.matcher, callback)

    def _feed(self, event) -> None:
        assert self.session is not None
        if self.session.closed.is_set():
            return  # a turn interpreted after the call ended (its matcher was still building)
        self.session.feed(event)

    async def close(self) -> None:
        for handles in self._handles.values():
            for handle in handles:
                handle.cancel()
        self._handles.clear()


class TypedTurns:
    """Typed caller turns (every backend accepts them), in order with what the designer
    does after them. A turn typed while the matcher still builds
    (voices.understanding.interpret.BackgroundMatcher) waits whole for it, off the loop: fed at once,
    its words would wait past the recogniser watchdog on a busy machine, and the agent
    would say it missed them. An incident injected after such a turn waits behind it
    (`after`), so the call hears them in the order they were typed."""

    def __init__(self, feed: Callable[[object], None], prefix: str = "typed", first_seq: int = 0) -> None:
        self._feed = feed
        self._prefix = prefix
        self._seq = first_seq
        self.waiting = 0  # typed turns waiting for the matcher

    def say(self, matcher, text: str, heard: Callable[[], None] | None = None) -> None:
        """One turn: speech starts, ends and is interpreted. `heard` is called as it is
        fed (the transcript's caller line, so a turn that waited shows where it entered)."""
        self._seq += 1
        seq = self._seq
        if getattr(matcher, "ready", True):
            self._turn(matcher, text, seq, heard)
            return
        self.waiting += 1

        def now_ready() -> None:
            self.waiting -= 1
            self._turn(matcher, text, seq, heard)

        matcher.when_ready(asyncio.get_running_loop(), now_ready)

    def after(self, matcher, callback: Callable[[], None]) -> bool:
        """`callback` once every turn typed so far has been fed: at once if none waits
        (False), else queued behind them (True)."""
        if not self.waiting:
            callback()
            return False
        matcher.when_ready(asyncio.get_running_loop(), callback)  # done callbacks run in order
        return True

    def _turn(self, matcher, text: str, seq: int, heard: Callable[[], None] | None) -> None:
        turn = f"{self._prefix}-{seq}"
        from voices.understanding.interpret import TurnReading, read_words

        reading = read_words(matcher, text) if text.strip() else TurnReading(None, 0.0, None)
        if heard is not None:
            heard()
        self._feed(TurnStarted(turn, seq))
        self._feed(TurnEnded(turn, seq))
        self._feed(CallerUtterance(turn, seq, text, reading.intent, reading.score, reader=reading.reader,
                                   yes_no=reading.yes_no, yes_no_score=reading.yes_no_score))

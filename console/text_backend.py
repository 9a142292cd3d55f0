"""The text backend: type the caller's words, read the agent's (V7, fast design loops).

Playback is simulated in real time from the prompt's word count, one prompt after
another as a loudspeaker would play them; a cancelled prompt stops at once. Typed
caller turns are interpreted with the flow's example phrases: by the character-level
LexicalMatcher unless a `matcher_kind` of voices.interpret is asked for (`lull rehearse`
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
from ladder.flow.text import LexicalMatcher

if TYPE_CHECKING:
    from .live import LiveSession


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
        self._turns = 0
        # incidents the designer injects at the endpoint (console keys l and y)
        self.lose_next_completion = False
        self.delay_next_completion_ms = 0.0

    def attach(self, session: LiveSession) -> None:
        self.session = session
        if self.matcher is None:
            spec = session.flow.spec
            if self.matcher_kind != "lexical":
                from voices.interpret import InterpreterError, make_matcher_soon

                try:
                    self.matcher = make_matcher_soon(dict(spec.intents), None, self.matcher_kind)  # type: ignore[arg-type]
                except InterpreterError as exc:
                    self.matcher_fallback = {"asked": self.matcher_kind, "using": "lexical", "why": str(exc)[:200]}
            if self.matcher is None:
                self.matcher = LexicalMatcher(dict(spec.intents), spec.intent_threshold)

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
        self._turns += 1
        typed_turn(self._feed, self.matcher, text, self._turns, heard=lambda: self.on_line("caller", text))

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


def typed_turn(feed, matcher, text: str, seq: int, prefix: str = "typed", heard: Callable[[], None] | None = None) -> None:
    """A whole caller turn from typed words (every backend accepts typed turns). `heard`
    is called as the turn is fed (the transcript's caller line, so that a turn that
    waited for its matcher shows where it entered the call)."""
    if not getattr(matcher, "ready", True):
        # a matcher still building (voices.interpret.BackgroundMatcher): the whole turn
        # waits for it, off the loop. Fed now, its words would wait past the recogniser
        # watchdog on a busy machine, and the agent would say it missed them.
        matcher.when_ready(asyncio.get_running_loop(), lambda: typed_turn(feed, matcher, text, seq, prefix, heard))
        return
    turn = f"{prefix}-{seq}"
    intent, score = matcher.match(text) if text.strip() else (None, 0.0)
    if heard is not None:
        heard()
    feed(TurnStarted(turn, seq))
    feed(TurnEnded(turn, seq))
    feed(CallerUtterance(turn, seq, text, intent, score))

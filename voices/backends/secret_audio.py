"""Recordings keep the journal's promises (design S1): audio that carries a redacted value
is masked in mic.wav and out.wav, and each masked span is marked in the journal.

Two kinds of span carry a secret:

- an agent prompt whose words carry a redacted value (a read-back of the code): known
  when it is requested, so out.wav gets silence from its first sample; mic.wav, which
  may hold its echo, is masked over the same span (and a short echo tail) when it ends;
- a caller turn that filled a redacted slot, or whose transcript carries a redacted
  value in any spelling: known a moment after the turn ended (after recognition), so
  the span already on disk is overwritten in place.

Each span is journaled as an `audio_masked` observation (track, from_ms, to_ms, why).
With `keep=True` (`--keep-secret-audio`) nothing is masked; the journal says the audio
was kept, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessions.live import LiveSession
    from voices.recording import CallRecorder

MARGIN_MS = 60.0  # either side of a span: device timestamps are a few ms apart
WHY = "redacted_value"
ECHO_TAIL_MS = 400.0  # after a secret prompt's last sample, its echo may still be in the mic


class SecretAudio:
    def __init__(self, *, keep: bool = False) -> None:
        self.keep = keep
        self.session: LiveSession | None = None
        self.recorder: CallRecorder | None = None
        self.masked: list[dict] = []  # every span masked (or that would have been), in order
        self._secret_prompts: set[int] = set()
        self._open_prompts: dict[int, float] = {}
        self._turns: dict[str, tuple[float, float]] = {}
        self._masked_turns: set[str] = set()
        self._kept_noted = False
        # out.wav heard through a telephone line: a prompt reaches it this much later
        self.out_delay_ms = 0.0

    def attach(self, session: LiveSession) -> None:
        self.session = session
        session.listeners.append(self._listen)

    def _redact_keys(self) -> set[str]:
        runtime = self.session.runtime if self.session is not None else None
        return set(getattr(getattr(runtime, "flow", None), "redact_keys", ()) or ())

    def carries_secret(self, text: str) -> bool:
        if self.session is None or not text or not self._redact_keys():
            return False
        return self.session.runtime.redact({"text": text})["text"] != text

    # -- the agent's prompts --

    def prompt(self, token: int, text: str) -> None:
        if self.carries_secret(text):
            self._secret_prompts.add(token)

    def prompt_started(self, token: int, t_ms: float) -> None:
        if token not in self._secret_prompts:
            return
        # rounded as the span that closes it will be: the recorder knows an open mask by
        # its first sample, and a start a sample apart would leave this one open for good
        start = round(max(0.0, t_ms - MARGIN_MS), 1)
        self._open_prompts[token] = start
        if not self.keep and self.recorder is not None:
            self.recorder.mask("out", start, None)

    def prompt_ended(self, token: int, t_ms: float) -> None:
        start = self._open_prompts.pop(token, None)
        if start is None:
            return
        self._span("out", start, t_ms + MARGIN_MS + self.out_delay_ms, token=token)
        # the microphone heard it too (a laptop hears its speakers): its echo, a little later
        self._span("mic", start, t_ms + ECHO_TAIL_MS, token=token)

    # -- the caller's turns --

    def turn(self, turn: str, from_ms: float, to_ms: float) -> None:
        self._turns[turn] = (from_ms - MARGIN_MS, to_ms + MARGIN_MS)
        if len(self._turns) > 256:  # only recent turns can still be filled
            self._turns.pop(next(iter(self._turns)))

    def heard(self, turn: str, text: str) -> None:
        if self.carries_secret(text):
            self._mask_turn(turn)

    def _listen(self, now: float, kind: str, record: dict) -> None:
        if record.get("effect") == "SlotFilled" and record.get("slot") in self._redact_keys():
            self._mask_turn(str(record.get("turn")))

    def _mask_turn(self, turn: str) -> None:
        span = self._turns.get(turn)
        if span is None or turn in self._masked_turns:
            return
        self._masked_turns.add(turn)
        self._span("mic", *span, turn=turn)

    # -- both --

    def _span(self, track: str, from_ms: float, to_ms: float, **who: Any) -> None:
        span = {"track": track, "from_ms": round(max(0.0, from_ms), 1), "to_ms": round(to_ms, 1), "why": WHY, **who}
        self.masked.append(span)
        if self.session is None:
            return
        if self.keep:
            if not self._kept_noted:
                self._kept_noted = True
                self.session.note("secret_audio_kept", {"why": "--keep-secret-audio"})
            return
        if self.recorder is not None:
            self.recorder.mask(track, span["from_ms"], span["to_ms"])
        self.session.note("audio_masked", span)

    def close(self) -> None:
        """At the end: a secret prompt still playing is masked to where the audio ended."""
        if self.session is None:
            return
        for token in list(self._open_prompts):
            self.prompt_ended(token, self.session.now_ms())

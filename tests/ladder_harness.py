"""A thin test driver for one Controller on a virtual clock.

It keeps the effects and traces of every step so tests can ask what happened in
words ("which prompts were requested", "was this callback rejected and why").
"""

from __future__ import annotations

from ladder import (
    AskQuestion,
    Controller,
    Effect,
    LadderPolicy,
    PlaybackCompleted,
    PlaybackStarted,
    RequestPrompt,
    Stage,
    TimerFired,
    Trace,
    TurnEnded,
    TurnInterpreted,
    TurnStarted,
)


def seed_policy(**overrides) -> LadderPolicy:
    """The seed 000 example's synthetic units: waits of 10, a deadline of 100."""
    base = dict(
        stages=(
            Stage(name="quiet_wait", wait_ms=10),
            Stage(name="gentle_check", wait_ms=10, prompt="Do you need more time?"),
            Stage(name="alternative_route", wait_ms=10, prompt="We can continue without it."),
            Stage(name="safe_close", wait_ms=10, prompt="Nothing was changed.", closes=True),
        ),
        episode_ms=100,
        hold_ms=50,
        hold_budget_ms=50,
        completion_grace_ms=1000,
        ms_per_word=1000,
    )
    base.update(overrides)
    return LadderPolicy(**base)


class Call:
    def __init__(self, policy: LadderPolicy | None = None) -> None:
        self.c = Controller(policy or LadderPolicy())
        self.effects: list[Effect] = []
        self.last: list[Effect] = []
        self._seq = 0

    # -- driving -------------------------------------------------------------------

    def send(self, event, now: float) -> list[Effect]:
        self.last = self.c.handle(event, now)
        self.effects += self.last
        return self.last

    def fire_due(self, now: float) -> list[Effect]:
        self.last = self.c.handle_timer(now)
        self.effects += self.last
        return self.last

    def deliver(self, kind: str, generation: int, now: float) -> list[Effect]:
        return self.send(TimerFired(kind, generation), now)

    def ask(self, now: float = 0, question: str = "reference_code", **kw) -> int:
        self.send(AskQuestion(question, kw.pop("text", "What is your reference code?"), **kw), now)
        return self.token_of("question")

    def play(self, token: int, start: float, end: float) -> None:
        self.send(PlaybackStarted(token), start)
        self.send(PlaybackCompleted(token), end)

    def speech(self, now: float) -> str:
        self._seq += 1
        turn = f"t{self._seq}"
        self.send(TurnStarted(turn, self._seq), now)
        return turn

    def say(self, intent: str, now: float, end_first: bool = True, **kw) -> str:
        """A whole caller turn: start, then end and decision in either order."""
        turn = self.speech(now)
        seq = self._seq
        if end_first:
            self.send(TurnEnded(turn, seq), now + 1)
            self.send(TurnInterpreted(turn, seq, intent, **kw), now + 2)
        else:
            self.send(TurnInterpreted(turn, seq, intent, **kw), now + 1)
            self.send(TurnEnded(turn, seq), now + 2)
        return turn

    # -- reading -------------------------------------------------------------------

    def window(self):
        return self.c.timer("window")

    def prompts(self, effects=None) -> list[RequestPrompt]:
        return [e for e in (self.effects if effects is None else effects) if isinstance(e, RequestPrompt)]

    def token_of(self, kind: str) -> int:
        return [p for p in self.prompts() if p.kind == kind][-1].token

    def traces(self, kind: str | None = None, effects=None) -> list[Trace]:
        source = self.effects if effects is None else effects
        return [e for e in source if isinstance(e, Trace) and (kind is None or e.kind == kind)]

    def rejected(self, effects=None) -> list[str]:
        """Reasons of every stale/rejected callback in `effects` (default: the last step)."""
        source = self.last if effects is None else effects
        return [t.reason for t in self.traces(effects=source) if t.kind in ("stale_rejected", "rejected", "ignored")]

    def ladder_actions(self) -> list[str]:
        """The seed's `actions`: what each accepted stage advance asked for."""
        actions = []
        for e in self.effects:
            if isinstance(e, RequestPrompt) and e.kind in ("reminder", "close"):
                actions.append(e.stage if e.kind == "reminder" else "close_incomplete")
        return actions

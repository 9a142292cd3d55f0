"""The no-input policy as data: ladder stages, waits, wording, reset table, bounds.

A policy is validated once, at load (pydantic), so the controller never meets an
impossible configuration: a ladder that never closes, noise that extends the
episode forever, a stage that offers a route that does not exist.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, model_validator

from .events import INTENTS

_WORD = re.compile(r"[a-z0-9']+")


@lru_cache(maxsize=2048)
def _said(text: str) -> str:
    """The words of `text`, lowercased, space-separated and padded: " i can repeat it "."""
    return " " + " ".join(_WORD.findall(text.lower())) + " "


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# `{name}`: a slot's value in flow wording, or `{routes}` in a ladder prompt
PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_:\-]+)\}")
ROUTES_PLACEHOLDER = "{routes}"
# in ladder wording: the value the pending question asks for, by its spoken name
# ("your prescription number"); `LadderPolicy.slot` says it, a flow sets it per question
SLOT_PLACEHOLDER = "{slot}"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The sentences of `text` (split after . ! or ?), stripped, empty ones left out."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def either(labels) -> str:
    """"a", "a or b", "a, b or c"."""
    items = list(labels)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                 "nineteen", "twenty")


def digits_heard(value: str | None) -> str | None:
    """"three digits", "one digit": how much of a code was heard, never the digits."""
    if not value:
        return None
    n = sum(c.isdigit() for c in value)
    if n == 0:
        return None
    count = _NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) else str(n)
    return f"{count} digit" if n == 1 else f"{count} digits"


def join_offers(offers: list[str]) -> str:
    """"a", "a, or b", "a, b, or c": offers are clauses, so each keeps its comma."""
    if len(offers) <= 1:
        return "".join(offers)
    return ", ".join(offers[:-1]) + ", or " + offers[-1]


def drop_placeholders(text: str) -> str:
    """`text` without the sentences that still hold a `{placeholder}`: braces are never spoken."""
    if not PLACEHOLDER.search(text):
        return text
    return " ".join(s for s in sentences(text) if not PLACEHOLDER.search(s))


# A prompt is said in one turn of a call: 1,000 characters is about 170 words, a minute
# of speech at a voice's pace. Longer wording (a pasted document, a runaway template)
# would keep a call playing for hours, so it is refused where it is written: in a flow
# file, a ladder policy, a live edit, `lull say`. The longest shipped prompt is 180.
MAX_PROMPT_CHARS = 1000
PromptText = Annotated[str, Field(max_length=MAX_PROMPT_CHARS)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Stage(_Frozen):
    """One rung of the silence ladder (L4)."""

    name: str = Field(min_length=1)
    wait_ms: PositiveFloat  # how long to listen at this stage before advancing
    prompt: PromptText | None = None  # said on entering the stage; None for a quiet wait
    routes: tuple[str, ...] = ()  # fallback routes this stage may offer
    # route id -> how this stage offers it, when its wording differs from the route's
    # own `offer` ("I can read the code out again" for "repeat" at a confirmation)
    offers: dict[str, PromptText] = {}
    interruptible: bool = True
    closes: bool = False  # the safe close: entering it ends the episode


class Route(_Frozen):
    """A fallback route. A prompt may only offer it while it is available."""

    id: str = Field(min_length=1)
    label: str
    available: bool = True
    handoff: bool = False  # a transfer to a person or another channel
    promises: PromptText = ""  # what taking it may promise the caller
    # restate: the route is "say the question again" and keeps the episode open
    action: Literal["end_episode", "restate"] = "end_episode"
    goto: str | None = None  # in a flow: the stage taking this route leads to
    mentions: tuple[str, ...] = ()  # wording that names this route (lint), besides label and id
    # how a prompt offers it, as a clause: "I can repeat the question". A ladder
    # prompt's `{routes}` is composed, when it is spoken, from the offers of the
    # stage's routes that are available then ("we can carry on without it, or I can
    # repeat the question"); with none available the sentence is left out.
    offer: PromptText = ""
    # what the route is for (route_role infers it when unset): the default ladder offers
    # a flow's go_on_without routes, and Lull's shared phrases ask for them by role
    # ("other": none of these, whatever its shape says)
    role: Literal["repeat", "go_on_without", "person", "other"] | None = None

    def named_by(self, text: str) -> bool:
        """Does `text` name this route (its label, its id's words, or a mention)?"""
        said = _said(text)
        # an id of one word ("pharmacist", "transfer") is often an ordinary word of the
        # flow's own sentences: it names the route only as its label or a mention
        id_words = self.id.replace("_", " ").replace("-", " ")
        phrases = {self.label, *self.mentions, *((id_words,) if " " in id_words else ())}
        return any(_said(p) in said for p in phrases if _said(p).strip())


RouteRole = Literal["repeat", "go_on_without", "person", "other"]


def route_role(route: Route) -> Literal["repeat", "go_on_without", "person"] | None:
    """What a route is for, as the default ladder and Lull's shared caller intents
    read it: its `role`, else what its shape says (a restate repeats the question, a
    handoff brings a person, a route that leads to a stage goes on without the value)."""
    if route.role is not None:
        return None if route.role == "other" else route.role
    if route.action == "restate":
        return "repeat"
    if route.handoff:
        return "person"
    if route.goto is not None:
        return "go_on_without"
    return None


WindowRule = Literal["end_episode", "rearm", "resume", "restate", "hold", "reprompt"]


class ResetRule(_Frozen):
    """What one kind of caller input does to the ladder's clocks (L8).

    window: end_episode (the question is answered), rearm (a fresh full window at the
    current stage), resume (continue the interrupted window to its original due time),
    restate (say the question again, then listen), hold (the bounded explicit hold),
    reprompt (words heard but not understood: a short "say it again", bounded by
    max_reprompts per question, then a fresh window; past the bound, resume).
    """

    window: WindowRule
    stage: Literal["keep", "restart"] = "keep"
    hold_budget: Literal["keep", "reset"] = "keep"
    deadline: Literal["keep", "reset"] = "keep"


def default_reset_table() -> dict[str, ResetRule]:
    return {
        "answer": ResetRule(window="end_episode"),
        "decline": ResetRule(window="end_episode"),
        "route": ResetRule(window="end_episode"),
        "partial_answer": ResetRule(window="rearm"),
        "repeat_request": ResetRule(window="restate"),
        "wait_request": ResetRule(window="hold"),
        "ready": ResetRule(window="restate"),
        "backchannel": ResetRule(window="resume"),
        "noise": ResetRule(window="resume"),
        "unclear": ResetRule(window="reprompt"),  # no-match is not no-input
    }


def default_stages(
    yes_no: bool = False, go_on: tuple[str, ...] = ("go_on_without",), repeat: tuple[str, ...] = ("repeat",),
    value: str = "find",
) -> tuple[Stage, ...]:
    """The default ladder. Its wording names no flow's things: `{slot}` is the pending
    value's spoken name, `{routes}` the offers of the routes available then. A flow gives
    its own routes for going on without the value (`go_on`) and for repeating the
    question; with neither, the alternative stage waits quietly. A yes/no question gets
    wording about a yes or a no; the rest wording for the kind of `value` asked for: one
    to find ("find": a number on a card, "to hand"), a choice to make ("choose": how many,
    which day, "decide") or something the caller knows ("know": a name, "not sure of")."""
    if value == "choose" and not yes_no:
        check = "Take your time. Would you like more time to decide, or shall I repeat the question?"
        alternative = (
            "If you're not sure yet, {routes}." if go_on else "If you'd like, {routes}." if repeat else None
        )
        close = "I didn't get {slot}, so I'll end the call here. You can call back whenever you've decided."
    elif value == "know" and not yes_no:
        check = "Take your time. Would you like more time, or shall I repeat the question?"
        alternative = (
            "If you're not sure of {slot}, {routes}." if go_on else "If you'd like, {routes}." if repeat else None
        )
        close = "I haven't received {slot}, so I'll end the call here. You can call back whenever you're ready."
    elif yes_no:
        check = "Take your time. Please say yes or no."
        alternative = "If you're not sure, {routes}." if repeat else None
        close = "I didn't get a yes or a no, so I'll end the call here. You can call back whenever you like."
    else:
        check = "Take your time. Would you like more time, or shall I repeat the question?"
        alternative = (
            "If you don't have {slot} to hand, {routes}." if go_on else "If you'd like, {routes}." if repeat else None
        )
        close = "I haven't received {slot}, so I'll end the call here. You can call back whenever you have it."
    return (
        Stage(name="quiet_wait", wait_ms=8000),
        Stage(name="gentle_check", wait_ms=10000, prompt=check, routes=repeat),
        Stage(name="alternative_route", wait_ms=10000, prompt=alternative, routes=(*go_on, *repeat) if alternative else ()),
        Stage(name="safe_close", wait_ms=4000, prompt=close, closes=True),
    )


def default_routes() -> tuple[Route, ...]:
    return (
        Route(
            id="repeat",
            label="repeat the question",
            promises="the question again",
            action="restate",
            offer="I can repeat the question",
        ),
        Route(
            id="go_on_without",
            label="go on without it",
            promises="carry on without it",
            mentions=("carry on without",),
            offer="we can go on without it",
            role="go_on_without",
        ),
        Route(
            id="transfer",
            label="transfer to a person",
            available=False,
            handoff=True,
            promises="a person joins the call",
            mentions=("transfer you", "a person"),
            offer="I can transfer you to a person",
        ),
    )


# the policy's own wording besides its stages' prompts
LADDER_TEXT_FIELDS = (
    "acknowledgement", "still_waiting", "partial_reminder", "hold_check_in", "filler", "reprompt", "route_unavailable", "routes_available",
    "channel_recovery", "close_failed_input", "close_pending", "close_tool_failed", "close_deadline",
    "partial_close", "partial_close_deadline",
)
# the texts that end a call
CLOSE_TEXT_FIELDS = ("close_failed_input", "close_pending", "close_tool_failed", "close_deadline",
                     "partial_close", "partial_close_deadline")


# fields added after journals were first written, whose default changes what a policy
# does: a recorded policy without them did what these values do (replay reads it so)
ABSENT_FROM_OLD_POLICIES = {"still_waiting_ms": None, "partial_slot": None, "partial_close": None,
                            "partial_close_deadline": None, "route_answers_turn": False}


class LadderPolicy(_Frozen):
    """Everything the controller needs to decide; nothing it needs to do I/O."""

    stages: tuple[Stage, ...] = Field(default_factory=default_stages)
    routes: tuple[Route, ...] = Field(default_factory=default_routes)
    reset: dict[str, ResetRule] = Field(default_factory=default_reset_table)
    # total bound of one silence episode (L12). 150 s covers a hold to its budget (90 s)
    # and the ladder after it (32 s of waits and its prompts): at 120 s a caller who held
    # to the end heard the alternative route offered, then the deadline's close 3 s later
    episode_ms: PositiveFloat = 150_000
    hold_ms: PositiveFloat = 30_000  # one explicit hold (L6), when no still-waiting cadence is set
    hold_budget_ms: PositiveFloat = 90_000  # all holds of one episode together
    # the still-waiting cadence: while a caller holds, a short line every this many ms,
    # and the hold goes on until the budget is used (Lex V2's wait-and-continue); only
    # then the check-in. None: one hold of hold_ms, then the check-in.
    still_waiting_ms: PositiveFloat | None = 30_000
    still_waiting: PromptText = "I'm still here. Take your time."
    max_restarts: int = Field(default=1, ge=0)  # stage restarts / deadline resets
    recovery_ms: PositiveFloat = 8_000  # channel recovery before a safe close (L9)
    filler_after_ms: PositiveFloat = 1_500  # tool wait before the filler cue (L10)
    watchdog_ms: PositiveFloat = 4_000  # missing-response watchdog (W2)
    # a route the caller took is the response to their turn: the watchdog stands down
    # (a hand-off has no words of Lull's to follow it; "Sorry, I missed that" to a caller
    # being transferred is untrue). False: policies recorded before this field reprompted.
    route_answers_turn: bool = True
    completion_grace_ms: PositiveFloat = 1_500  # estimate + grace before "missing"
    ms_per_word: PositiveFloat = 380  # prompt duration estimate before PromptSent
    max_wait_records: int = Field(default=32, ge=1)  # W6: bounded pending records
    acknowledgement: PromptText = "Sure, take your time."
    filler: PromptText = "One moment while I check that."
    # the next reminder after a partial answer and silence: `{heard}` is how much was
    # heard ("three digits"); without a count that sentence is left out
    partial_reminder: PromptText = "I've got the first {heard}. What's the rest?"
    # the check-in once the hold budget is used: the stage's own wording may offer more
    # time ("Would you like more time?"), which is no longer true
    hold_check_in: PromptText = "Are you still there? When you're ready, I can repeat the question."
    reprompt: PromptText = "Sorry, I missed that. Could you say it again?"
    max_reprompts: int = Field(default=2, ge=0)  # no-match reprompts per question
    # a request for a route that is not available: the honest reply, then what is
    route_unavailable: PromptText = "Sorry, I can't {route} on this call."
    routes_available: PromptText = "I can {routes}."
    channel_recovery: PromptText = "I'm having trouble with the line. I'll stay here for a moment."
    close_failed_input: PromptText = (
        "I can't hear anything on the line, so I'll end the call here. "
        "Nothing has been changed. Please call back."
    )
    close_pending: PromptText = (
        "I have to end the call now. Your request is still being processed, "
        "so I can't confirm its result yet."
    )
    close_tool_failed: PromptText = (
        "I couldn't complete that just now, so nothing has been changed. Please call back later."
    )
    close_deadline: PromptText = (
        "I'll end the call here, as we've run out of time. "
        "I haven't received {slot}, so you're welcome to call back with it."
    )
    # after a partial answer (part of a code heard), the closes say what is true: part
    # of the value came, not none of it. None: the ladder's own close is said then too
    # (the lint refuses one that claims nothing was received where part may have been)
    # `{slot}` in a reminder once part of the value was heard
    partial_slot: PromptText | None = "the rest of {slot}"
    partial_close: PromptText | None = (
        "I only got part of {slot}, so I'll end the call here. You can call back whenever you have all of it."
    )
    partial_close_deadline: PromptText | None = (
        "I'll end the call here, as we've run out of time. "
        "I only got part of {slot}, so you're welcome to call back with all of it."
    )
    # what `{slot}` says: the pending value's spoken name (a flow sets it per question)
    slot: PromptText = Field(default="the answer", min_length=1)

    @model_validator(mode="after")
    def _check(self) -> LadderPolicy:
        stages = self.stages
        if len(stages) < 2:
            raise ValueError("stages: a ladder needs at least a wait and a close")
        names = [s.name for s in stages]
        if len(set(names)) != len(names):
            raise ValueError(f"stages: stage names must be unique, got {names}")
        if not stages[-1].closes:
            raise ValueError(
                f"stages[{len(stages) - 1}] ({stages[-1].name}): the last stage must close"
            )
        for i, stage in enumerate(stages[:-1]):
            if stage.closes:
                raise ValueError(f"stages[{i}] ({stage.name}): only the last stage may close")
        routes = {r.id: r for r in self.routes}
        for i, stage in enumerate(stages):
            for route in stage.routes:
                if route not in routes:
                    raise ValueError(
                        f"stages[{i}] ({stage.name}): route {route!r} is not declared; "
                        f"declared routes: {sorted(routes)}"
                    )
            for route in stage.offers:
                if route not in stage.routes:
                    raise ValueError(
                        f"stages[{i}] ({stage.name}): offers wording for route {route!r}, "
                        f"which the stage does not list in its routes {list(stage.routes)}"
                    )
        missing = sorted(set(INTENTS) - set(self.reset))
        if missing:
            raise ValueError(f"reset: no rule for {missing}; every intent needs a row")
        unknown = sorted(set(self.reset) - set(INTENTS))
        if unknown:
            raise ValueError(f"reset: unknown intent {unknown}; expected {sorted(INTENTS)}")
        for intent in ("answer", "decline", "route"):
            if self.reset[intent].window != "end_episode":
                raise ValueError(f"reset.{intent}: an answer must end the episode")
        if self.reset["wait_request"].window != "hold":
            raise ValueError("reset.wait_request: an explicit wait is a hold (L6)")
        if self.reset["wait_request"].deadline != "keep":
            raise ValueError("reset.wait_request: a wait may not reset the episode bound (L6)")
        for intent in ("noise", "backchannel", "unclear"):
            rule = self.reset[intent]
            if rule.deadline != "keep" or rule.stage != "keep" or rule.hold_budget != "keep":
                raise ValueError(
                    f"reset.{intent}: {intent} may not restart the ladder, reset the "
                    "episode bound or refill the hold budget (L8)"
                )
            if rule.window in ("end_episode", "hold"):
                raise ValueError(f"reset.{intent}: {intent} cannot {rule.window}")
            if rule.window == "reprompt" and intent != "unclear":
                raise ValueError(f"reset.{intent}: only words that were not understood get a reprompt")
        if self.hold_ms > self.hold_budget_ms:
            raise ValueError("hold_ms: one hold cannot exceed hold_budget_ms")

        return self

    def route(self, route_id: str) -> Route | None:
        return next((r for r in self.routes if r.id == route_id), None)

    def with_route_availability(self, route_id: str, available: bool) -> LadderPolicy:
        routes = tuple(
            r.model_copy(update={"available": available}) if r.id == route_id else r
            for r in self.routes
        )
        return self.model_copy(update={"routes": routes})

    def compose(self, stage: Stage, slot: str | None = None) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """A ladder stage's prompt as it may be spoken now: (text, routes offered, routes left out).

        `{routes}` becomes the offers of the stage's routes that are available now,
        joined ("we can carry on without it, or I can repeat the question"); with none
        the sentence holding it is left out. A sentence that names a route that is not
        available now (Route.named_by) is left out, and so is one with a placeholder
        nobody filled: the agent never promises a switched-off route or reads braces
        aloud. The text may come out empty: the stage then waits quietly. `slot`, when
        given, is what `{slot}` says instead of the policy's own (the rest of a value).
        """
        listed = [self.route(r) for r in stage.routes]
        available = [r for r in listed if r is not None and r.available]
        offers = [(r.id, stage.offers.get(r.id) or r.offer) for r in available]
        offers = [(rid, text) for rid, text in offers if text]
        unavailable = [r for r in self.routes if not r.available]
        left_out = {r.id for r in listed if r is not None and not r.available}
        kept = []
        for sentence in sentences((stage.prompt or "").replace(SLOT_PLACEHOLDER, self.slot if slot is None else slot)):
            if ROUTES_PLACEHOLDER in sentence:
                if not offers:
                    continue
                joined = join_offers([text for _, text in offers])
                if sentence.startswith(ROUTES_PLACEHOLDER):
                    joined = joined[:1].upper() + joined[1:]
                sentence = sentence.replace(ROUTES_PLACEHOLDER, joined)
            named = [r.id for r in unavailable if r.named_by(sentence)]
            if named:
                left_out.update(named)
                continue
            if PLACEHOLDER.search(sentence):
                continue
            kept.append(sentence)
        composed = ROUTES_PLACEHOLDER in (stage.prompt or "")
        offered = tuple(rid for rid, _ in offers) if composed else tuple(r.id for r in available)
        return " ".join(kept), offered, tuple(sorted(left_out))

    @property
    def prompted_stages(self) -> int:
        """Stages that say something: the most ladder prompts one pass can play."""
        return sum(1 for s in self.stages if s.prompt)

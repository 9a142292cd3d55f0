"""Prompt lint: what the agent's wording may say, checked against the flow (pure).

One set of rules for every place wording is judged: `compile_flow` runs them (so
`lull flow check`, the console's apply and save, and a live EditWording refuse a
flow with an error), and the prompt editor asks `ladder.flow.wording.lint_wording`
about one text.

Errors (the flow is refused):
- empty wording: a stage's `say`, a ladder prompt, or a ladder text that is blank;
- a placeholder that names no slot (`{refernce_code}`), or names a slot that no
  stage before this one collects (it would be unfilled when spoken); `{routes}`
  only in ladder prompts, `{route}` only in `route_unavailable`;
- a promise of a route that is not available (Route.named_by: its label, its id's
  words or a mention), anywhere in the wording; in a ladder prompt, a route the
  stage does not offer (not in its `routes`, and not a "say it again" route, which
  any stage may take); `{routes}` in a stage that offers none, or offers a route
  with no `offer` phrase;
- a collecting stage using a ladder (the flow's) whose wording talks about another
  stage's slot: give the stage a `ladder` of its own (per-question wording);
- ladder wording that speaks of a thing (THING_NOUNS: a code, a reference, an
  account...) none of the flow's slots, stages, routes or tools names, or promises a
  route to a person or for going on without the value when the flow has none: wording
  written for another flow (`{slot}` speaks of the pending value by its label);
- a close that says a slot was not received ("I haven't received the reference
  code") in a stage that comes after the stage that collects it; a collecting
  stage's close that says a slot not yet collected was received or confirmed
  ("Your code is confirmed" at the confirmation), or that a tool's work was done
  ("I've looked up your reference") when no tool has run before the stage.

Warnings (shown, the flow is kept): wording that blames the caller; a ladder prompt
estimated to last longer than its stage's wait; `{routes}` in a stage whose routes
are all unavailable now (the sentence is left out until one is switched on).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..policy import (
    CLOSE_TEXT_FIELDS,
    LADDER_TEXT_FIELDS,
    PLACEHOLDER,
    ROUTES_PLACEHOLDER,
    LadderPolicy,
    Route,
    default_routes,
    route_role,
    sentences,
)
from .compiled import MAIN, CompiledFlow, Diagnostic, Layer

Path = tuple[str | int, ...]

# wording that makes the caller the problem (seed 000: "without accusing the caller")
BLAMING = (
    "you didn't", "you did not", "you failed", "you forgot", "you haven't said",
    "you have not said", "your fault", "speak up", "you're not listening",
    "you are not listening", "you must answer", "you need to answer", "i told you",
)
_NEGATIONS = {
    "not", "no", "never", "haven't", "hasn't", "hadn't", "didn't", "don't", "doesn't",
    "wasn't", "weren't", "isn't", "aren't", "can't", "cannot", "couldn't", "won't",
}
_RECEIPT = {
    "received", "receive", "got", "get", "gotten", "captured", "capture", "heard", "hear",
    "caught", "catch", "given", "give", "have", "taken", "recorded",
}


_WORD = re.compile(r"[a-z0-9']+")


@lru_cache(maxsize=4096)
def _word_tuple(text: str) -> tuple[str, ...]:
    # the same few ladder texts are read for every stage: split each once
    return tuple(w.strip("'") for w in _WORD.findall(text.lower().replace("\u2019", "'")) if w.strip("'"))


def _words(text: str) -> list[str]:
    return list(_word_tuple(text))


def _names(text: str, phrase: str) -> bool:
    words = _word_tuple(phrase)
    return bool(words) and f" {' '.join(words)} " in f" {' '.join(_word_tuple(text))} "


class _SlotNames:
    """Which slots a text names, by their phrases (the slot's id in words, its mentions).

    Indexed once per flow by the phrases' words, so reading a text costs its own length
    times the longest phrase, not the number of slots: the lint stays linear in stages.
    """

    def __init__(self, flow: CompiledFlow, slots) -> None:
        self._by_phrase: dict[tuple[str, ...], set[str]] = {}
        for slot in slots:
            for phrase in _slot_phrases(flow, slot):
                words = _word_tuple(phrase)
                if words:
                    self._by_phrase.setdefault(words, set()).add(slot)
        self._lengths = sorted({len(k) for k in self._by_phrase})
        self.slots = list(slots)
        self.rank = {slot: i for i, slot in enumerate(self.slots)}  # the order slots are first collected
        self._memo: dict[str, frozenset[str]] = {}

    def __call__(self, text: str) -> frozenset[str]:
        found = self._memo.get(text)
        if found is None:
            words = _word_tuple(text)
            hits: set[str] = set()
            for n in self._lengths:
                for i in range(len(words) - n + 1):
                    hits |= self._by_phrase.get(words[i : i + n], set())
            found = self._memo[text] = frozenset(hits)
        return found


class _Before:
    """The slots collected by the stages upstream of one stage, as a bitset over the
    flow's slots (membership and intersection without a set per stage)."""

    __slots__ = ("bits", "bit")

    def __init__(self, bits: int, bit: dict[str, int]) -> None:
        self.bits, self.bit = bits, bit

    def __contains__(self, slot: str) -> bool:
        return bool(self.bits & self.bit.get(slot, 0))

    def __bool__(self) -> bool:
        return bool(self.bits)

    def among(self, slots) -> set[str]:
        return {s for s in slots if s in self}


# what a close may claim was done: a value received or confirmed, a tool's work done
_CLAIMED_RECEIPT = {"received", "got", "have", "heard", "confirmed", "recorded", "captured", "taken", "noted", "verified"}
_CLAIMED_ACTION = ("looked up", "look up", "checked", "found", "changed", "updated", "processed", "booked", "cancelled", "verified")


# nouns for the things a voice flow asks callers for: ladder wording that speaks of
# one the flow never names (no slot, stage, route or tool of its own says it) was
# written for another flow ("the reference code" in a prescription refill)
THING_NOUNS = frozenset({
    "code", "reference", "number", "account", "pin", "password", "passcode", "postcode", "zip",
    "address", "birth", "birthday", "surname", "order", "booking", "reservation", "appointment",
    "prescription", "policy", "claim", "ticket", "serial", "membership", "card", "licence",
    "license", "passport", "registration", "invoice", "receipt", "tracking", "parcel", "package",
    "email", "payment", "id", "letter", "vehicle", "plate", "meter", "voucher", "coupon", "iban",
    "sort", "balance", "contract", "subscription", "delivery", "insurance", "patient", "bill",
})


def flow_vocabulary(flow: CompiledFlow) -> frozenset[str]:
    """Every word the flow's own things are named with: slots (ids, labels, mentions),
    stages' words, routes, tools, the title."""
    spec = flow.spec
    texts = [spec.title, spec.name.replace("_", " ")]
    for slot_id, slot in spec.slots.items():
        texts += [slot_id.replace("_", " "), slot.label or "", *slot.mentions]
    for layer in (flow.main, *flow.overlays):
        for sid, stage in layer.stages.items():
            texts += [sid.replace("_", " "), stage.say or "", stage.verbatim or ""]
    for route in spec.routes:
        texts += [route.id.replace("_", " "), route.label, route.offer, route.promises, *route.mentions]
    for tool in spec.tools:
        texts += [tool.name.replace("_", " "), tool.description]
    return frozenset(w for text in texts for w in _word_tuple(text))


_NONE = {"nothing", "nobody", "none", "neither", "nor", "without", "yet"}


def _affirms(sentence: str) -> bool:
    """A sentence with no negation at all: what it says happened, it says did."""
    return not any(w in _NEGATIONS or w in _NONE or w.endswith("n't") for w in _words(sentence))


def claims_receipt(sentence: str) -> bool:
    """Does the sentence say a value was received or confirmed ("I have your code")?"""
    return _affirms(sentence) and any(w in _CLAIMED_RECEIPT for w in _words(sentence))


def claims_action(sentence: str) -> bool:
    """Does the sentence say work was done ("I've looked up your reference")?"""
    return _affirms(sentence) and any(_names(sentence, phrase) for phrase in _CLAIMED_ACTION)


def denies_receipt(sentence: str) -> bool:
    """Does the sentence say something was not received ("haven't received", "didn't get")?"""
    words = _words(sentence)
    for i, word in enumerate(words):
        if word in _NEGATIONS and any(w in _RECEIPT for w in words[i + 1 : i + 4]):
            return True
    return False


@dataclass(frozen=True)
class Wording:
    """One text the agent may say, where it is written and what it is."""

    path: Path  # where the text is written (a default's virtual path under "ladder")
    text: str
    role: str  # "say", "verbatim", "ladder_prompt", a LADDER_TEXT_FIELDS name, "handoff"
    ladder_stage: Any = None  # the ladder Stage of a ladder prompt


def _ladder_wordings(policy: LadderPolicy, base: Path) -> Iterator[Wording]:
    for i, stage in enumerate(policy.stages):
        if stage.prompt is not None:
            yield Wording((*base, "stages", i, "prompt"), stage.prompt, "ladder_prompt", stage)
    for name in LADDER_TEXT_FIELDS:
        text = getattr(policy, name)
        if text is not None:  # a partial close may be None: the ladder's own close is said
            yield Wording((*base, name), text, name)


def _where_written(flow: CompiledFlow, stage_path: Path, own: dict, path: Path) -> Path:
    """A stage's ladder text: under the stage if it wrote it, else the flow's ladder."""
    rel = path[1:]  # path is ("ladder", ...)
    key = rel[0]
    if key in own or (key == "stages" and "prompts" in own):
        if key == "stages" and "stages" not in own:
            stage = flow.ladder.stages[rel[1]] if rel[1] < len(flow.ladder.stages) else None
            if stage is not None and stage.name in own.get("prompts", {}):
                return (*stage_path, "ladder", "prompts", stage.name)
            return path
        return (*stage_path, "ladder", *rel)
    return path


def lint_flow(flow: CompiledFlow) -> list[Diagnostic]:
    """Every wording problem of a compiled flow (errors and warnings)."""
    spec = flow.spec
    out: list[Diagnostic] = []
    seen: set[tuple] = set()

    def add(path: Path, message: str, severity: str = "error", about: Path | None = None) -> None:
        key = (path, message)
        if key not in seen:
            seen.add(key)
            out.append(Diagnostic(path, message, severity, about or path))  # type: ignore[arg-type]

    slots = set(spec.slots)
    facts = {k for layer in (flow.main, *flow.overlays) for st in layer.stages.values() for k in st.sets}
    routes = {r.id: r for r in flow.ladder.routes}
    gotos = {r.id: r.goto for r in spec.routes}
    vocabulary = flow_vocabulary(flow)
    # Lull's default routes a flow may lack: wording that promises one was written for another flow
    have = {route_role(r) for r in flow.ladder.routes}
    missing_roles = {route_role(r): r for r in default_routes() if route_role(r) in ("person", "go_on_without")
                     and route_role(r) not in have}

    def check_text(w: Wording, policy: LadderPolicy, upstream: set[str] | None, label: str) -> None:
        if not w.text.strip():
            hint = {
                "say": "leave 'say' out for a stage that says nothing",
                "ladder_prompt": "leave 'prompt' out for a quiet stage",
            }.get(w.role, "write what the agent should say")
            add(w.path, f"{label} is empty; {hint}")
            return
        for m in PLACEHOLDER.finditer(w.text):
            name = m.group(1)
            if name == "routes" and w.role in ("ladder_prompt", "routes_available"):
                continue
            if name == "route" and w.role == "route_unavailable":
                continue
            if name == "slot" and w.role not in ("say", "verbatim", "handoff") and "slot" not in slots:
                continue  # the ladder's pending value by its spoken name
            if name == "heard" and w.role == "partial_reminder":
                continue  # how much of a partial answer was heard ("three digits")
            if name in slots or name in facts:
                if upstream is not None and name in slots and name not in upstream:
                    add(w.path, f"{label}: placeholder {{{name}}} names a slot that no stage before this one collects, "
                        "so it has no value when this is spoken (the sentence would be left out)")
                continue
            close = difflib.get_close_matches(name, sorted(slots | facts), n=1)
            hint = f"did you mean {{{close[0]}}}?" if close else (
                "declared slots: " + ", ".join(sorted(slots)) if slots else "the flow declares no slots")
            add(w.path, f"{label}: placeholder {{{name}}} names no slot; {hint}")
        if w.role not in ("say", "verbatim", "handoff") and flow.ladder_defaults != 1:
            for role, route in missing_roles.items():
                if route.named_by(w.text.replace(ROUTES_PLACEHOLDER, "")):
                    add(w.path, f"{label} promises '{route.label}', but this flow has no route for it (no route "
                        f"with role {role!r}); declare one in 'routes' or reword it")
            strangers = [t for t in dict.fromkeys(_word_tuple(w.text)) if t in THING_NOUNS and t not in vocabulary]
            if strangers:
                add(w.path, f"{label} speaks of {', '.join(repr(t) for t in strangers)}, which this flow neither "
                    "collects nor names (no slot, stage, route or tool of it says it); say {slot} for the value "
                    "the question asks for, or give the slot a 'label' or 'mentions' with that name")
        lowered = " ".join(_words(w.text))
        for phrase in BLAMING:
            if " ".join(_words(phrase)) in lowered:
                add(w.path, f"{label} blames the caller (\u201c{phrase}\u201d); say what happened, not what the caller did wrong", "warning")
                break
        if w.role == "route_unavailable":
            return  # it names the unavailable route by design, through {route}
        for route in policy.routes:
            if route.available:
                continue
            if w.role in ("say", "verbatim") and gotos.get(route.id) is not None and label.endswith(f"{gotos[route.id]!r}"):
                continue  # the route's own destination says what taking it did
            if route.named_by(w.text.replace(ROUTES_PLACEHOLDER, "")):
                where = f"stage {w.ladder_stage.name!r}" if w.ladder_stage is not None else label
                add(w.path, f"{where} promises '{route.label}' (route {route.id!r}), which is not available")
        if w.role == "ladder_prompt":
            check_ladder_prompt(w, policy, label)

    def check_ladder_prompt(w: Wording, policy: LadderPolicy, label: str) -> None:
        stage = w.ladder_stage
        for route in policy.routes:
            if not route.available or route.id in stage.routes or route.action == "restate":
                continue
            if route.named_by(w.text.replace(ROUTES_PLACEHOLDER, "")):
                add(w.path, f"stage {stage.name!r} promises '{route.label}' (route {route.id!r}), which it does not "
                    f"offer; add {route.id!r} to its routes or reword it")
        if ROUTES_PLACEHOLDER in w.text:
            if not stage.routes:
                add(w.path, f"stage {stage.name!r} says {ROUTES_PLACEHOLDER} but offers no routes; list them in its routes")
            listed = [routes.get(r) for r in stage.routes]
            for r in listed:
                if r is not None and not (stage.offers.get(r.id) or r.offer):
                    add(w.path, f"stage {stage.name!r} says {ROUTES_PLACEHOLDER} but route {r.id!r} has no offer "
                        "phrase; give the route an 'offer' (\"I can repeat the question\")")
            if stage.routes and not any(r is not None and r.available for r in listed):
                add(w.path, f"stage {stage.name!r}: none of its routes is available, so the sentence with "
                    f"{ROUTES_PLACEHOLDER} is left out until one is switched on", "warning")
        estimate = max(1, len(w.text.split())) * policy.ms_per_word
        if not stage.closes and estimate > stage.wait_ms:
            add(w.path, f"stage {stage.name!r}: its prompt lasts about {estimate / 1000:.1f}s, longer than the "
                f"stage's {stage.wait_ms / 1000:g}s wait; shorten it or give the stage a longer 'wait_ms'", "warning")

    # the flow's own ladder
    for w in _ladder_wordings(flow.ladder, ("ladder",)):
        label = f"ladder {w.ladder_stage.name}" if w.ladder_stage is not None else f"ladder {w.role}"
        check_text(w, flow.ladder, None, label)

    layers = [(MAIN, flow.main), *((o.name, o) for o in flow.overlays)]
    collected_by: dict[str, str] = {}
    for _, layer in layers:
        for sid in layer.order:
            for slot in layer.stages[sid].collect:
                collected_by.setdefault(slot, sid)
    # collected slots first, in the order they are first collected: the owner check names the earliest
    named = _SlotNames(flow, {**dict.fromkeys(collected_by), **dict.fromkeys(spec.slots)})
    before_of, tools_before_of = _upstream(flow.main, list(named.slots))
    for layer_name, layer in layers:
        if not layer.path or layer.path == ("policies",):
            stage_paths = {sid: ("policies",) for sid in layer.order}
        else:
            stage_paths = {sid: (*layer.path, i) for i, sid in enumerate(layer.order)}
        for sid in layer.order:
            stage = layer.stages[sid]
            spath = stage_paths[sid]
            before = before_of[sid] if layer_name == MAIN else None
            label = f"stage {sid!r}"
            if spath == ("policies",):
                if stage.say is not None:
                    handoff = next(i for i, p in enumerate(spec.policies) if getattr(p, "kind", "") == "safety_handoff")
                    check_text(Wording(("policies", handoff, "say"), stage.say, "handoff"), flow.ladder, None, "safety handoff")
                continue
            if stage.say is not None:
                check_text(Wording((*spath, "say"), stage.say, "say"), flow.ladder, before, label)
            if stage.verbatim is not None:
                check_text(Wording((*spath, "verbatim"), stage.verbatim, "verbatim"), flow.ladder, before, label)
            if stage.timing is not None and stage.timing.reprompt is not None:
                check_text(Wording((*spath, "timing", "reprompt"), stage.timing.reprompt, "reprompt"), flow.ladder, before, f"{label} reprompt")
            policy = flow.policy_for(sid, None)
            own = stage.ladder
            if own:
                for w in _ladder_wordings(policy, ("ladder",)):
                    where = _where_written(flow, spath, own, w.path)
                    if where[: len(spath)] != spath:
                        continue  # the flow's wording, linted above
                    name = w.ladder_stage.name if w.ladder_stage is not None else w.role
                    check_text(Wording(where, w.text, w.role, w.ladder_stage), policy, before, f"{label} ladder {name}")
            if stage.collect:
                _check_owner(flow, sid, spath, stage, policy, own, collected_by, named, add)
            if layer_name == MAIN and before:
                _check_closes(flow, sid, spath, stage, policy, own, before, named, add)
            if layer_name == MAIN and stage.collect:
                _check_close_claims(flow, sid, spath, stage, policy, own, before, tools_before_of[sid], named, add)
                _check_partial_closes(flow, sid, spath, stage, policy, own, add)
    return out


def _texts_of(policy: LadderPolicy, closes_only: bool, collecting: bool) -> Iterator[Wording]:
    for w in _ladder_wordings(policy, ("ladder",)):
        if w.ladder_stage is not None:
            if not collecting or (closes_only and not w.ladder_stage.closes):
                continue
        elif closes_only and w.role not in CLOSE_TEXT_FIELDS:
            continue
        elif not closes_only and w.role not in (*CLOSE_TEXT_FIELDS, "reprompt"):
            continue
        elif not collecting and w.role == "close_deadline":
            continue  # no question is pending: the episode deadline cannot close it
        yield w


def _slot_phrases(flow: CompiledFlow, slot: str) -> list[str]:
    spec = flow.spec.slots.get(slot)
    return [slot.replace("_", " "), *(spec.mentions if spec is not None else ())]


def _check_owner(flow, sid, spath, stage, policy, own, collected_by, named, add) -> None:
    """Per-question ladders: a stage may not use another question's wording."""
    if own:
        return
    mine = set(stage.collect)
    for w in _texts_of(policy, closes_only=False, collecting=True):
        said = named(w.text)
        if not said or said & mine:
            continue
        others = [slot for slot in said if slot in collected_by and collected_by[slot] != sid]
        if others:
            slot = min(others, key=named.rank.__getitem__)
            owner = collected_by[slot]
            name = w.ladder_stage.name if w.ladder_stage is not None else w.role
            add(
                (*spath, "collect"),
                f"stage {sid!r} asks for {', '.join(sorted(mine))} but its silence ladder is the flow's, whose "
                f"{name} wording talks about {slot.replace('_', ' ')} (the question of stage {owner!r}); "
                f"give stage {sid!r} a \"ladder\" of its own with wording about its question",
                about=w.path,
            )
            return


def _check_closes(flow, sid, spath, stage, policy, own, before, named, add) -> None:
    """A close says only what is true: a slot collected upstream was received."""
    for w in _texts_of(policy, closes_only=True, collecting=bool(stage.collect)):
        for sentence in sentences(w.text):
            if not denies_receipt(sentence):
                continue
            for slot in sorted(before.among(named(sentence)) - set(stage.collect)):
                name = w.ladder_stage.name if w.ladder_stage is not None else w.role
                where = _where_written(flow, spath, own, w.path) if own else spath
                add(
                    where,
                    f"stage {sid!r}: the {name} close says \u201c{sentence}\u201d, but {slot.replace('_', ' ')} "
                    f"was collected before this stage; say what is true here"
                    + ("" if own else ' (give the stage a "ladder" of its own)'),
                    about=w.path,
                )


def _check_close_claims(flow, sid, spath, stage, policy, own, before, tools_before, named, add) -> None:
    """A collecting stage's close plays because its question went unanswered: it may not
    say that a value not yet collected was received or confirmed, nor that a tool's work
    was done when no tool has run before this stage ("Your code is confirmed" at the
    confirmation's own close; "I've looked up your reference" before any lookup)."""
    slots = flow.spec.slots

    def pending(candidates) -> list[str]:
        return sorted(s for s in candidates if s in slots and s not in before)

    for w in _texts_of(policy, closes_only=True, collecting=True):
        for sentence in sentences(w.text):
            claim = None
            if claims_receipt(sentence):
                claimed = pending(named(sentence))
                if not claimed and {"confirmed", "verified"} & set(_word_tuple(sentence)):
                    # "your code is confirmed": a confirmation, whatever it names
                    claimed = pending(s for s, spec in slots.items() if spec.type == "yes_no")
                claim = claimed[0] if claimed else None
                why = f"{claim.replace('_', ' ')} has not been collected when this close plays" if claim else ""
            if claim is None and not tools_before and claims_action(sentence):
                claim, why = "tool", "no tool has run before this stage"
            if claim is None:
                continue
            _add_close_problem(flow, spath, own, w, add, lambda name: (
                f"stage {sid!r}: the {name} close says \u201c{sentence}\u201d, but {why}; say what is true here"
                + ("" if own else ' (give the stage a "ladder" of its own)')))


def _add_close_problem(flow, spath, own, wording, add, message) -> None:
    """Report a close's wording where the designer wrote it; `message(name)` words it
    with the close's name (its ladder stage's, or its role)."""
    name = wording.ladder_stage.name if wording.ladder_stage is not None else wording.role
    where = _where_written(flow, spath, own, wording.path) if own else spath
    add(where, message(name), about=wording.path)


def partial_possible(slot) -> bool:
    """Can part of this slot's value be heard (the first digits of a code)?"""
    return slot.type == "digits" and (slot.min_length or 2) > 1


def _check_partial_closes(flow, sid, spath, stage, policy, own, add) -> None:
    """After part of the value was heard, a close that says nothing was received is
    untrue: the closes said then (`partial_close`, `partial_close_deadline`, or the
    ladder's own closes where those are null) must not deny receipt."""
    slots = flow.spec.slots
    if flow.ladder_defaults < 3 or not any(c in slots and partial_possible(slots[c]) for c in stage.collect):
        return  # the defaults before 3 had no partial closes: their journals replay as they were
    said_after_partial = []
    for w in _ladder_wordings(policy, ("ladder",)):
        if w.ladder_stage is not None and w.ladder_stage.closes and policy.partial_close is None:
            said_after_partial.append((w, "partial_close"))
        elif w.role == "close_deadline" and policy.partial_close_deadline is None:
            said_after_partial.append((w, "partial_close_deadline"))
        elif w.role in ("partial_close", "partial_close_deadline"):
            said_after_partial.append((w, w.role))
    for w, field in said_after_partial:
        for sentence in sentences(w.text):
            if not denies_receipt(sentence):
                continue
            _add_close_problem(flow, spath, own, w, add, lambda name: (
                f"stage {sid!r}: after part of the value is heard, the {name} close says \u201c{sentence}\u201d, "
                f"which claims nothing was received; give the ladder a {field!r} that says part of it came "
                f"(\u201cI only got part of {{slot}}\u201d)"))
            break


def _upstream(layer: Layer, slots: list[str]) -> tuple[dict[str, _Before], dict[str, bool]]:
    """Stage -> the slots collected by the stages before it (its ancestors over after/next
    edges), and whether a tool runs in one of them.

    One pass in topological order with the slot sets as integer bitsets, so a flow of
    thousands of stages costs about what its edges do. Stages on an after-cycle (a flow
    the compiler refuses, still linted for its other problems) are walked one by one.
    """
    bit = {slot: 1 << i for i, slot in enumerate(slots)}
    stages, after = layer.stages, layer.after
    own = {sid: _bits(stages[sid].collect, bit) for sid in layer.order}
    bits: dict[str, int] = {}
    tools: dict[str, bool] = {}
    waiting = {sid: len(after.get(sid, ())) for sid in layer.order}
    followers: dict[str, list[str]] = {sid: [] for sid in layer.order}
    for sid in layer.order:
        for pred in after.get(sid, ()):
            followers.setdefault(pred, []).append(sid)
    ready = [sid for sid, n in waiting.items() if n == 0]
    while ready:
        sid = ready.pop()
        preds = after.get(sid, ())
        acc = 0
        for pred in preds:
            acc |= own[pred] | bits[pred]
        bits[sid] = acc
        tools[sid] = any(stages[pred].call is not None or tools[pred] for pred in preds)
        for nxt in followers.get(sid, ()):
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    for sid in layer.order:
        if sid in bits:
            continue
        found: set[str] = set()
        stack = list(after.get(sid, ()))
        while stack:
            pred = stack.pop()
            if pred in found or pred == sid:
                continue
            found.add(pred)
            stack.extend(after.get(pred, ()))
        bits[sid] = _bits((slot for u in found for slot in stages[u].collect), bit)
        tools[sid] = any(stages[u].call is not None for u in found)
    return {sid: _Before(b, bit) for sid, b in bits.items()}, tools


def _bits(slots, bit: dict[str, int]) -> int:
    out = 0
    for slot in slots:
        out |= bit.get(slot, 0)
    return out


__all__ = ["BLAMING", "Route", "Wording", "denies_receipt", "lint_flow"]

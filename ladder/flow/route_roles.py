"""What each of a flow's routes is for, read from its words as well as its shape (V5).

A route's role (repeat, go on without the value, a person, other) decides which of
Lull's shared caller phrases ask for it and what the default ladder offers it as. Its
shape alone misleads: a `goto` to a terminal stage that says "I'm passing you to a member
of staff" is a person, not going on without the value. So the words a designer wrote
about the route (its label, promises, offer, mentions, its intent's examples and the
`say` of the stage it leads to) are read for the cues of each role, weighed by where
they stand, and compared with the shape:

- a `role` the flow writes is taken as it is, and never warned about;
- a strong shape (a restate repeats, a handoff brings a person) stands; words that say
  otherwise get a warning;
- a weak shape (a `goto` reads as going on without the value) gives way to clear words,
  with a warning that says how to confirm it.

Pure: a spec in, readings out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..policy import Route, route_role

# cues per role, as whole words or phrases of the lowercased text
_CUES = {
    "person": (
        "person", "people", "someone", "somebody", "anyone", "human", "agent", "adviser", "advisor", "staff",
        "colleague", "representative", "operator", "manager", "supervisor", "receptionist", "reception",
        "nurse", "doctor", "pharmacist", "teacher", "secretary", "team", "member of", "put you through",
        "put me through", "transfer", "transferring", "pass you to", "passing you to", "connect you",
        "speak to", "talk to", "speak with", "talk with", "joins the call", "call you back", "ring you back",
    ),
    "repeat": ("repeat", "again", "say the question", "restate", "once more"),
    "go_on_without": (
        "without", "skip", "carry on", "go on", "instead", "later", "another time", "another way",
        "don't have", "do not have", "haven't got", "not sure", "don't know", "no idea", "can't find",
        "estimate", "leave it",
    ),
}
_PATTERNS = {role: re.compile(r"\b(" + "|".join(re.escape(c) for c in cues) + r")\b") for role, cues in _CUES.items()}
# how much a text weighs by where it stands: what the route is called and promises
# says most; each caller example a little
_WEIGHTS = {"label": 3, "promises": 2, "offer": 2, "mention": 2, "stage": 2, "example": 1}
# the words decide only when one role leads clearly: at least this much, and twice the next
_CLEAR_SCORE = 3
_CLEAR_RATIO = 2.0


@dataclass(frozen=True)
class RoleReading:
    """One route's role, and why."""

    route: str
    role: str  # "repeat", "go_on_without", "person" or "other": what Lull takes it as
    reason: str
    shape: str | None  # what the shape alone says (None: nothing)
    words: str | None  # what the words say, when they say one thing clearly
    warning: str | None = None  # shape and words disagree: what to do about it


def _texts(route: Route, examples: tuple[str, ...], stage_say: str | None) -> list[tuple[str, str]]:
    texts = [("label", route.label), ("promises", route.promises), ("offer", route.offer)]
    texts += [("mention", m) for m in route.mentions]
    if stage_say:
        texts.append(("stage", stage_say))
    texts += [("example", e) for e in examples]
    return [(where, t.lower()) for where, t in texts if t and t.strip()]


def read_words(route: Route, examples: tuple[str, ...] = (), stage_say: str | None = None
               ) -> tuple[str | None, dict[str, int], dict[str, list[str]]]:
    """The role the words say clearly (or None), each role's score, and the cues found
    per role (for the reason)."""
    scores = dict.fromkeys(_CUES, 0)
    found: dict[str, list[str]] = {role: [] for role in _CUES}
    for where, text in _texts(route, examples, stage_say):
        for role, pattern in _PATTERNS.items():
            hits = pattern.findall(text)
            if hits:
                scores[role] += _WEIGHTS[where]
                found[role].append(f"{hits[0]!r} in its {where}")
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    (best, top), (_, second) = ranked[0], ranked[1]
    clear = top >= _CLEAR_SCORE and top >= _CLEAR_RATIO * second
    return (best if clear else None), scores, found


def _shape(route: Route) -> str | None:
    return route_role(route.model_copy(update={"role": None}))


def read_route_role(route: Route, examples: tuple[str, ...] = (), stage_say: str | None = None) -> RoleReading:
    shape = _shape(route)
    words, _scores, found = read_words(route, examples, stage_say)
    because = f"its words name it ({', '.join(found[words][:3])})" if words else None
    if route.role is not None:
        return RoleReading(route.id, route.role, "its 'role' says so", shape, words)
    strong = route.action == "restate" or route.handoff
    if strong:
        why = "its action is 'restate'" if route.action == "restate" else "it is a handoff"
        warning = None
        if words is not None and words != shape:
            warning = (f"route {route.id!r}: its shape reads as {shape!r} ({why}) but its words as {words!r} "
                       f"({', '.join(found[words][:3])}); Lull takes it as {shape!r}: if that is right, "
                       f"set \"role\": \"{shape}\" on it, else set the role it has")
        return RoleReading(route.id, shape or "other", why, shape, words, warning)
    if words is not None:
        warning = None
        if shape is not None and words != shape:
            warning = (f"route {route.id!r}: its shape reads as {shape!r} (a 'goto' to another stage) but its words "
                       f"as {words!r} ({', '.join(found[words][:3])}); Lull takes it as {words!r}: if that is right, "
                       f"set \"role\": \"{words}\" on it to say so, else set the role it has")
        return RoleReading(route.id, words, because or "", shape, words, warning)
    if shape is not None:
        return RoleReading(route.id, shape, "a 'goto' to another stage, and its words name no other role", shape, None)
    return RoleReading(route.id, "other", "neither its shape nor its words say another role", None, None)


def read_route_roles(spec) -> dict[str, RoleReading]:
    """Every route of a flow spec, read (route id -> RoleReading)."""
    says = {s.id: s.say for s in spec.stages}
    for overlay in spec.overlays:
        says.update({s.id: s.say for s in overlay.stages})
    out = {}
    for route in spec.routes:
        examples = tuple(spec.intents.get(f"route:{route.id}", ()))
        out[route.id] = read_route_role(route, examples, says.get(route.goto) if route.goto else None)
    return out


def with_roles(routes: tuple[Route, ...], readings: dict[str, RoleReading]) -> tuple[Route, ...]:
    """The routes with the role each was read as written on it."""
    return tuple(r.model_copy(update={"role": readings[r.id].role}) if r.id in readings else r for r in routes)


__all__ = ["RoleReading", "read_route_role", "read_route_roles", "read_words", "with_roles"]

"""The words that name what each route offers: a caller who names it asks for it.

A go-on-without route is usually another way to the same end: the reception desk
finds the appointment by name, a form comes by post, the booking is made on the
website. Callers ask for it by naming that way ("can reception look me up instead",
"can you post me something"), in words the shared phrases cannot know and the flow's
eight examples rarely all hold. The route's own words (label, promises, offer,
mentions, its examples and the `say` of the stage it leads to) do hold them.

A route's cue words are the content words of those texts that belong to it alone:
not another route's, not the flow's own subject (the words of its other stages and
its values' names: a caller echoing the question is answering or asking for it
again). A few kinds of channel are said many ways ("post" and "mail", "website" and
"online"): a cue brings its kin.

Only a route that is not a person or a repeat is chosen by its words (those are
asked for in everyone's words, which the shared phrases teach), and only where the
classifier is unsure or picked another route (voices.understanding.intent_classifier). A turn that
names two routes decides nothing.

Pure: a spec in, words out.
"""

from __future__ import annotations

import re

from ...policy import route_role

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# function words and verbs or nouns too general to name a way of doing something
GENERAL_WORDS = frozenset(
    """
    a an the and or but if so to of in on at by for with from into onto about as than then there here
    this that these those it its it's i i'm i'll i've i'd me my mine you you're you'll your yours we we'll
    we're our us they they'll their them he she his her him is am are was were be been being do does did
    done doing have has had having can could will would shall should may might must not no yes don't can't
    won't isn't haven't what which who whom whose when where why how all any some one each every just
    only also too very more most much many again now later today tonight please okay ok fine well right
    thanks thank goodbye hello sorry problem course of get got give gave take took make made go going
    went come came say said tell told know known let put use used want need like would keep see look
    find found help try way ways time instead rather else other another own whenever ready once anything
    something nothing everything sure able up out over off down back via
    change changed think check stay wait waiting first away long yet pick home
    call calling line number question answer thing things lot bit never ever still until sort myself yourself
    it'll that's there's
    """.split()
)

# kinds of channel said in several words: a cue brings its kin (whole words)
_KIN = (
    frozenset({"post", "mail", "posted", "mailed", "letter"}),
    frozenset({"website", "site", "online", "web", "internet"}),
    frozenset({"email", "emailed"}),
    frozenset({"app", "application"}),
    frozenset({"text", "texted", "sms"}),
    frozenset({"phone", "mobile", "smartphone"}),
    frozenset({"photo", "picture", "photograph", "pic"}),
)


def stem(word: str) -> str:
    """A crude stem, enough to meet a plural: "forms" -> "form"."""
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """The stemmed words of `text` that are not general."""
    stems = {stem(w) for w in _WORD.findall(text.lower().replace("-", " ")) if not w.isdigit()}
    return {w for w in stems if w not in GENERAL_WORDS}


def _with_kin(words: set[str]) -> set[str]:
    out = set(words)
    for kin in _KIN:
        if words & kin:
            out |= kin
    return out


def route_cues(spec) -> dict[str, frozenset[str]]:
    """intent name ("route:ID") -> the words that name that route alone, for each route
    that has any."""
    stages = {stage.id: stage for stage in spec.stages}
    targets = {route.goto for route in spec.routes if route.goto}
    taken: set[str] = set()
    for stage in spec.stages:
        if stage.id not in targets:  # the flow's own subject: every stage but a route's
            taken |= content_words(stage.say or "")
    for slot in spec.slots.values():
        for name in (slot.label, *slot.mentions):
            taken |= content_words(name or "")
    own: dict[str, set[str]] = {}
    for route in spec.routes:
        texts = [route.label, route.promises, route.offer, *route.mentions]
        texts += list(spec.intents.get(f"route:{route.id}", ()))
        target = stages.get(route.goto) if route.goto else None
        if target is not None and target.say:
            texts.append(target.say)
        words: set[str] = set()
        for text in texts:
            words |= content_words(text or "")
        own[route.id] = _with_kin(words - taken) - taken
    cues: dict[str, frozenset[str]] = {}
    for route_id, words in own.items():
        others = set().union(*(w for r, w in own.items() if r != route_id))
        alone = words - others
        if alone:
            cues[f"route:{route_id}"] = frozenset(alone)
    return cues


def chosen_by_words(spec) -> frozenset[str]:
    """The routes whose words may decide a turn: not a person or a repeat (asked for
    in everyone's words, which the shared phrases teach), roles as written on them."""
    return frozenset(f"route:{r.id}" for r in spec.routes if route_role(r) not in ("person", "repeat"))


# a caller asking for another way marks it so ("can I email instead", "I'll just go to
# reception", "can I decide on my phone later"); a question about the same thing does
# not ("what time does reception open", "is your website down")
_ANOTHER_WAY = frozenset({"instead", "rather", "prefer", "just", "later", "myself"})


def named_route(text: str, cues: dict[str, frozenset[str]]) -> str | None:
    """The one route whose cue words `text` says while asking for another way, or None
    (no such words, no ask, or more than one route named: "put me through to reception"
    names the person route as well as the desk)."""
    if not _ANOTHER_WAY.intersection(_WORD.findall(text.lower())):
        return None
    said = content_words(text)
    named = [intent for intent, words in cues.items() if said & words]
    return named[0] if len(named) == 1 else None


__all__ = ["GENERAL_WORDS", "chosen_by_words", "content_words", "named_route", "route_cues", "stem"]

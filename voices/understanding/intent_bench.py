"""`lull bench intents`: intent matching accuracy per intent on phrasings the flow does
not contain, with the real embedding model (issue 10, item 4).

Two held-out sets, neither of them examples in the flow (the bench checks):

- `HELD_OUT`: written with the first embedding matcher, before any measuring, and kept
  as written, misses included (tests/test_voices_interpret.py holds it to 90 %);
- `FRESH`: written later, before the flow's examples were extended; phrasings that
  turned out to equal a new example were replaced by others written before measuring;
- `UNSEEN`: written from each intent's meaning (a caller just asked for the reference
  code on a letter or email) before the matcher was reworked for `FRESH`'s misses,
  before any measuring, and kept as written, misses included; the rework (top-k
  scoring, clarification grunts, more examples) was then made looking at its misses
  and FRESH's, so both are optimistic now;
- `LATE`: written before that rework, put aside, measured once after it;
- `BLIND`: written from each intent's meaning before the flow's examples were doubled
  and the classifier became the matcher in use; 11 phrasings that equalled flow examples
  (after `normalise`) were replaced before any measuring; measured once, after. Then
  "sorry" became a leading marker (its misses showed "sorry, one second please" pulled
  to repeat_request), which made "sorry, can you repeat that" an example: dropped.

The target is on all of them pooled ("every phrasing the flow does not contain"), per
intent: 26-36 phrasings an intent, where a set alone holds 5-8 and one miss is 12-20 %.

`matcher_kind` picks the matcher (wordllama by default; all-MiniLM-L6-v2; a blend; a
softmax classifier trained on the flow's examples, voices.understanding.intent_classifier).

Plus how many clearly unrelated and call-like off-topic turns are accepted as an intent
(they should come back unclear: none of the first, at most 10 % of the second).
"""

from __future__ import annotations

import contextlib
import os
import time

from ladder.flow.understanding.shared_intents import flow_intents

HELD_OUT: dict[str, tuple[str, ...]] = {
    "wait_request": (
        "hold on a sec", "can you give me a minute", "one moment please, I'm looking",
        "wait while I grab it", "just a second", "bear with me", "hang on a moment",
        "give me a sec to find it",
    ),
    "ready": (
        "okay I've got it", "right, I'm back", "found it", "got it here now",
        "alright I'm ready now", "I've found the letter", "okay, I have the code in front of me",
    ),
    "repeat_request": (
        "pardon?", "sorry, what did you ask?", "could you say it again", "repeat the question please",
        "I didn't catch that", "come again?", "what did you say",
    ),
    "route:transfer": (
        "I want to talk to a real person", "put me through to someone", "can I speak to an operator",
        "let me talk to a human being", "connect me with a representative", "I'd like to speak to somebody",
    ),
    "route:continue_without_code": (
        "I don't have the code", "let's skip that", "carry on without it",
        "I can't find the code, let's go on", "just continue without the reference", "I haven't got it",
    ),
    "backchannel": ("mhm", "I see", "yeah yeah", "right right", "ok"),
}

FRESH: dict[str, tuple[str, ...]] = {
    "wait_request": (
        "just hold on a second", "give me two minutes", "one sec", "let me have a look",
        "I need a moment to look", "hang on, it's somewhere here", "wait a minute", "let me just get it",
    ),
    "ready": (
        "I'm sat here with it now", "okay I've found it now", "got it", "I'm back now, sorry", "right, I have it",
        "ready when you are", "okay, it's in front of me now", "I've got my letter now",
    ),
    "repeat_request": (
        "what?", "excuse me?", "can you say that one more time", "what did you just say",
        "could you repeat that please", "I didn't hear the question", "say again please", "what do you need",
    ),
    "route:transfer": (
        "get me a real person", "I want an agent", "can I talk to someone", "speak to a human please",
        "can I get a human on the line", "is there a person I can talk to", "put me through to a human",
    ),
    "route:continue_without_code": (
        "I've no idea where the code is", "no idea what it is", "skip this", "can we do it without the code",
        "nobody ever sent me a code", "move on without it",
    ),
    "backchannel": ("uh huh yeah", "mm, okay", "okay okay", "yes", "yeah, go on", "alright", "I see, yes"),
}

UNSEEN: dict[str, tuple[str, ...]] = {
    "wait_request": (
        "sorry, can you hold for a moment", "give me a second, it's in my bag",
        "hang on, I'm just getting my glasses", "wait, I need to find the letter first", "two secs",
        "could you wait a little", "I'm just looking for it now", "bear with me, I'm checking my emails",
    ),
    "ready": (
        "yes, I've got it here", "okay, I'm back with the letter", "I've got the email open now",
        "found the letter, go ahead", "right, I've got it in my hand", "it's here, I'm ready",
        "sorted, I've found it",
    ),
    "repeat_request": (
        "sorry, what was that again?", "huh?", "you cut out, can you say that again",
        "could you say that more slowly", "I missed the last bit", "sorry, the line is bad, what did you say",
        "can you ask me again", "what was that you said?",
    ),
    "route:transfer": (
        "I'd rather speak to a real person", "can you transfer me to someone", "I need to talk to an actual human",
        "is there anyone I can speak to", "let me speak to your supervisor", "I don't want to talk to a machine",
        "connect me to a live agent",
    ),
    "route:continue_without_code": (
        "I don't have a reference code", "I've lost the letter", "I never received any code",
        "can we carry on without it", "I can't find it anywhere, can we continue", "I've no clue what the code is",
        "let's just skip the code", "I threw the letter away",
    ),
    "backchannel": (
        "uh huh, okay", "right, okay", "yep", "fine", "mm hm, yes", "I understand", "yeah, I'm listening",
        "okay then",
    ),
}

# Written after UNSEEN's first measurement but before the matcher and the flow's
# examples were reworked, then put aside and measured once, after the rework: the only
# set the rework never saw.
LATE: dict[str, tuple[str, ...]] = {
    "wait_request": (
        "one minute, I'm looking for it", "please hold while I find it", "can you give me a few seconds",
        "hold the line a moment", "just wait, I'm nearly there", "sorry, I need a minute",
    ),
    "ready": (
        "okay, I've got the letter here", "I have it now, go on", "right, found the code",
        "I'm back, I have it", "yes, I've found the email", "all right, I'm ready for you",
    ),
    "repeat_request": (
        "sorry, I didn't get that", "what was the question again?", "can you repeat the last part",
        "say that once more", "sorry, could you speak up", "I couldn't hear you",
    ),
    "route:transfer": (
        "I want to speak with an advisor", "can I talk to a real human", "please put me through to a person",
        "get me someone who can help", "I want to speak to a member of staff", "transfer me to a human please",
    ),
    "route:continue_without_code": (
        "I don't know where the letter is", "I haven't got a reference", "can we do this without the code",
        "I've never had a reference code", "just skip it please", "I can't find the code anywhere",
    ),
    "backchannel": (
        "uh huh, right", "okay, yeah", "yes, okay", "mm, I see", "sure, sure", "right, got you", "alright then",
    ),
}

# Written before the flow's examples were doubled (issue 10's last round), then
# measured once, after it.
BLIND: dict[str, tuple[str, ...]] = {
    "wait_request": (
        "hold on, let me look", "give me a moment to dig it out", "sorry, one second please",
        "can you hang on while I check", "just a tick", "wait there a second",
        "I'm still looking, give me a minute", "hold on, I think it's in the drawer",
    ),
    "ready": (
        "okay, I've got it now", "okay, I've dug it out", "right, I've found it, sorry about that",
        "I've got the letter in front of me", "okay I'm back, I found it", "yep, got it, go ahead",
        "I'm ready now", "got the letter right here",
        # a caller telling the agent to go on is ready (issue 27's outside phrasings count it
        # so): outside a wait the core hears ready as a backchannel anyway (W7)
        "uh huh, go on", "okay, go on",
    ),
    "repeat_request": (
        "what did you ask me?", "I didn't quite hear you",
        "could you run that by me again", "could you say the question again", "sorry, you broke up there",
        "sorry, what did you need?", "can you go over that again",
    ),
    "route:transfer": (
        "I want to speak to a person please", "can I talk to a real agent", "put me through to customer service",
        "I'd like to talk to someone, not a computer", "operator please", "can I speak to someone in person",
        "transfer me please", "I need a human to help me",
    ),
    "route:continue_without_code": (
        "I don't have it with me", "I can't find the letter", "the code? I don't have one",
        "can we go ahead without the code", "I never got a letter", "I don't have any reference number",
        "forget the code, let's carry on", "I haven't got the email anymore",
    ),
    "backchannel": (
        "mm okay", "yeah okay", "right, sure", "yeah, fine", "mhm, alright",
        "yep okay",
    ),
}

HELD_OUT_SETS: dict[str, dict[str, tuple[str, ...]]] = {
    "held_out": HELD_OUT, "fresh": FRESH, "unseen": UNSEEN, "late": LATE, "blind": BLIND,
}
POOLED = "pooled"  # every set above together
TARGET = 0.9  # per intent, pooled

UNRELATED = (
    "what's the weather in Paris", "my dog is called Rex", "the printer is jammed",
    "I like pizza with pineapple", "the train was late this morning", "turn on the lights",
    "how much does the premium plan cost", "my daughter starts school next week",
    "is the shop open on Sundays", "the football was terrible last night", "I need to change my address",
    "can you recommend a good restaurant", "the kettle is broken again", "what time is it in Tokyo",
    "my password doesn't work",
)

# Off-topic turns a caller might plausibly say mid-call; harder, since they share words
# with the examples ("is this the right number", "that's not what I asked").
CALL_LIKE_OFF_TOPIC = (
    "I'm calling about my bill", "why was I charged twice", "my order hasn't arrived",
    "the app keeps crashing", "I want to cancel my subscription", "what are your opening hours",
    "is this the right number", "I moved house last month", "the delivery driver was rude",
    "can I pay by card", "my account is locked", "do you have parking",
    "I think there's a mistake on my invoice", "my neighbour is very noisy", "it's raining here",
    "I'm driving at the moment", "the kids are shouting", "we went to the beach yesterday",
    "my phone battery is low", "can you hear the music", "who am I speaking to", "where are you based",
    "is this a recorded line", "how long will this take", "I bought a new car",
    "the internet is slow today", "I'm not sure what you mean by that", "my name is Sarah",
    "I live in Manchester", "can you send me an email", "the price went up again",
    "I've been a customer for ten years", "this is the third time I've called",
    "that's not what I asked", "my husband usually handles this", "it was fine last week",
    "I need a receipt", "the weather is lovely", "I'm having a bad day", "my cat knocked over the plant",
)
CALL_LIKE_ACCEPTED_AT_MOST = 0.1  # of CALL_LIKE_OFF_TOPIC


def accuracy(matcher, phrasings: dict[str, tuple[str, ...]]) -> dict[str, dict]:
    """Per intent: right / of, and what the misses came back as ("unclear": None)."""
    out = {}
    for intent, phrases in phrasings.items():
        got = [matcher.match(p)[0] or "unclear" for p in phrases]
        right = sum(g == intent for g in got)
        out[intent] = {"right": right, "of": len(phrases), "accuracy": round(right / len(phrases), 3),
                       "misses": {p: g for p, g in zip(phrases, got, strict=True) if g != intent}}
    return out


def pooled(sets: dict[str, dict[str, dict]]) -> dict[str, dict]:
    """Per intent over every set: right / of (misses stay in their sets)."""
    out: dict[str, dict] = {}
    for table in sets.values():
        for intent, row in table.items():
            acc = out.setdefault(intent, {"right": 0, "of": 0, "misses": {}})
            acc["right"] += row["right"]
            acc["of"] += row["of"]
    for acc in out.values():
        acc["accuracy"] = round(acc["right"] / acc["of"], 3)
    return out


@contextlib.contextmanager
def cache_turned_off():
    """voices.understanding.disk_cache off for a while (LULL_CACHE_DIR=off), and the memory caches
    emptied, so a build is computed, not loaded."""
    from . import intent_classifier as ic

    before = os.environ.get("LULL_CACHE_DIR")
    os.environ["LULL_CACHE_DIR"] = "off"
    ic.forget_in_memory()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LULL_CACHE_DIR", None)
        else:
            os.environ["LULL_CACHE_DIR"] = before


def run_intent_bench(flow_name: str = "reference_code", matcher_kind: str = "embedding") -> dict:
    """One matcher kind (voices.understanding.interpret.make_matcher: embedding = wordllama, minilm,
    blend, lexical) at its default threshold on every set."""
    from ladder.flow.understanding.text import words
    from sessions.flowfiles import load_flow

    from .interpret import make_matcher, normalise

    flow = load_flow(flow_name)
    intents = flow_intents(flow.spec)  # what the voice backends learn: shared phrases and the flow's own
    started = time.perf_counter()
    with cache_turned_off():  # what a first launch costs, computed here and now
        matcher = make_matcher(intents, None, matcher_kind)  # type: ignore[arg-type]
    build_ms = (time.perf_counter() - started) * 1000.0
    stored_build_ms = None
    if matcher_kind == "classifier":  # the classifier is kept on disk: what later launches cost
        from . import intent_classifier as ic

        ic.forget_in_memory(vectors=False)
        make_matcher(intents, None, matcher_kind)  # trained again (vectors in memory) and saved, or loaded
        ic.forget_in_memory()
        started = time.perf_counter()
        make_matcher(intents, None, matcher_kind)
        stored_build_ms = round((time.perf_counter() - started) * 1000.0, 1)
    examples = {" ".join(words(p)) for phrases in intents.values() for p in phrases}
    reduced = {normalise(p, spellings=False) for phrases in intents.values() for p in phrases}
    held_out = HELD_OUT_SETS
    in_flow = [p for name, s in held_out.items() for ps in s.values() for p in ps
               if " ".join(words(p)) in examples or (name != "held_out" and normalise(p, spellings=False) in reduced)]
    started = time.perf_counter()
    sets = {name: accuracy(matcher, s) for name, s in held_out.items()}
    sets[POOLED] = pooled(sets)
    n = sum(len(v) for s in held_out.values() for v in s.values())
    match_ms = (time.perf_counter() - started) * 1000.0 / n
    unrelated = {t: got for t in UNRELATED if (got := matcher.match(t)[0]) is not None}
    call_like = {t: got for t in CALL_LIKE_OFF_TOPIC if (got := matcher.match(t)[0]) is not None}
    targets = {f"{POOLED}: every intent at least {TARGET:.0%} on phrasings the flow does not contain":
               all(v["accuracy"] >= TARGET for v in sets[POOLED].values())}
    targets["clearly unrelated: none accepted"] = not unrelated
    targets[f"call-like off-topic: at most {CALL_LIKE_ACCEPTED_AT_MOST:.0%} accepted "
            f"({len(call_like)}/{len(CALL_LIKE_OFF_TOPIC)})"] = (
        len(call_like) <= CALL_LIKE_ACCEPTED_AT_MOST * len(CALL_LIKE_OFF_TOPIC))
    return {
        "flow": flow_name,
        "matcher": matcher_kind,
        "threshold": matcher.threshold,
        "margin": getattr(matcher, "margin", None),
        "sets": sets,
        "phrasings_that_are_flow_examples": in_flow,
        "unrelated_accepted": unrelated,
        "unrelated_of": len(UNRELATED),
        "call_like_accepted": call_like,
        "call_like_of": len(CALL_LIKE_OFF_TOPIC),
        "matcher_build_ms": round(build_ms, 1),
        "matcher_build_from_disk_ms": stored_build_ms,
        "match_ms_per_turn": round(match_ms, 2),
        "targets": targets,
    }

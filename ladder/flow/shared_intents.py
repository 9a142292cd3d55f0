"""The caller intents every flow shares, understood by Lull itself: a phrase set written
for this purpose (not taken from any flow or test), so a designer's 5-10 examples only
add their flow's own wording.

`flow_intents(spec)` is what a matcher learns for a flow: these phrases under the
flow's names for them (the ladder's intents as they are; "a person" and "go on without
it" under the flow's own routes of those roles, when it has them), then the flow's own
examples. Pure data and a pure function: the model-free simulator, the voice backends
and the bench read the same set.
"""

from __future__ import annotations

from ..policy import Route, route_role

# the ladder's own intents: the same name in every flow
WAIT_REQUEST = (
    # asking for time
    "hang on a moment", "hold on a second", "give me a moment", "one moment please", "just a second",
    "wait a sec", "hold on please", "could you wait a moment", "can you give me a minute", "just a minute please",
    "bear with me a moment", "bear with me while I look", "one second I'm looking", "give me a few seconds",
    "give me a couple of minutes", "can you hold on", "could you hold the line", "please hold on", "hold the line please",
    "wait just a moment", "hang on a minute", "hang on hang on", "hold on hold on", "wait wait", "just wait a second",
    "a moment please", "two ticks", "just a tick", "one tick", "hang about a second", "hang fire a moment",
    "could you bear with me", "give me a sec", "gimme a second", "just a sec please", "one min", "half a minute",
    # looking for something
    "let me find it", "let me look for it", "let me check", "let me have a look", "let me get it",
    "let me go and get it", "I need to find it first", "I'm looking for it now", "I'm just looking",
    "I'm trying to find it", "I'm getting it now", "I'll just go and get it", "I have to go and fetch it",
    "it's in the other room give me a minute", "it's upstairs one moment", "it's in my bag somewhere",
    "let me dig it out", "I'm digging it out", "I'm searching for it", "still looking", "I'm still looking",
    "nearly there", "almost got it", "I've nearly found it", "not yet", "I'm not ready yet", "I'm not there yet",
    "I need to get my glasses", "I have to find my glasses first", "let me put my glasses on",
    "let me check my emails", "let me look on my phone", "let me check the paperwork", "let me grab it",
    "I'll grab it for you", "I just need to find where I put it", "where did I put it, one moment",
    "sorry I need a moment", "sorry can you wait", "sorry one moment", "could you give me some time",
    "I need a bit of time", "can I have a minute", "can I have a second to look", "don't hang up I'm looking",
    "please don't go I'm just getting it", "stay on the line I'm looking", "keep holding I'm nearly there",
    "um hold on", "er one second", "oh hang on", "right hold on", "okay wait a minute", "ah just a moment",
    "hold that thought", "wait a bit", "give me time", "just let me look", "one moment while I get it",
)

READY = (
    "okay I've got it", "I've got it now", "I have it now", "I found it", "found it", "here it is",
    "got it here", "I've got it here", "I have it here", "I have it in front of me", "it's in front of me now",
    "okay I'm back", "I'm back", "I'm back now", "sorry I'm back", "sorry about that I'm back",
    "sorry to keep you I've got it", "sorry for the wait I have it", "thanks for waiting I've got it",
    "okay I'm ready", "I'm ready", "ready now", "ready when you are", "I'm ready now", "all set",
    "okay go ahead", "go ahead", "go on then", "carry on I've got it", "fire away", "you can ask me now",
    "ask away", "okay you can carry on", "right I'm with you", "I'm with you now", "I'm here now",
    "okay I'm here", "still here I've got it now", "right I've found it", "ah there it is", "oh here it is",
    "there we go", "here we go", "got it", "okay got it now", "right got it", "yep got it now",
    "I've found it now", "I've managed to find it", "I've located it", "I've dug it out", "I've pulled it up",
    "it's on my screen now", "I've got it up on my phone", "I can see it now", "I can read it now",
    "okay I can read it to you", "shall I read it out", "do you want me to read it now", "I'm ready to give it to you",
    "I've got the paperwork now", "I've got the letter here", "I've got my glasses on now", "I have the email open",
    "okay I'm ready to answer", "right I'm ready for the question", "I'm sorted now", "sorted I've got it",
    "okay back with you", "back again", "back now go on", "I'm back with it", "okay that's me back",
    "right where were we", "okay where were we", "okay let's do this", "okay let's carry on", "right let's go",
)

REPEAT_REQUEST = (
    "can you repeat that", "could you repeat that please", "repeat that please", "say that again",
    "could you say that again", "can you say it again", "say it again please", "one more time please",
    "once more please", "again please", "what was that", "what was the question", "what did you say",
    "what did you ask", "sorry what", "sorry?", "pardon", "pardon me", "beg your pardon", "excuse me what",
    "I didn't hear you", "I didn't catch that", "I didn't quite catch that", "I missed that", "I missed the question",
    "I didn't get that", "I couldn't hear", "I can't hear you", "you're very quiet", "can you speak up",
    "could you speak louder", "you cut out", "you cut out there", "you're breaking up", "the line is bad",
    "it's a bad line", "I lost you for a second", "you went quiet there", "sorry the signal dropped",
    "can you go slower", "slow down please", "could you say it more slowly", "not so fast please",
    "what do you want me to say", "what do you need from me", "what are you asking", "what should I say",
    "what do I need to tell you", "what was the last bit", "sorry what was the last part", "come again",
    "come again please", "you what", "eh", "huh", "what", "sorry I wasn't listening", "sorry I was distracted",
    "can you ask me again", "ask me that again", "can you go over that again", "run that by me again",
    "what did you need", "what do you mean", "I don't understand the question", "I'm not sure what you're asking",
    "sorry can you repeat the question", "could you repeat the question", "repeat the question please",
    "sorry say again", "say again", "what was that again", "sorry I didn't hear the question",
    "hang on what did you just say", "sorry could you start again", "start again please",
)

BACKCHANNEL = (
    "mm hmm", "mhm", "mm", "hmm", "uh huh", "uh-huh", "yeah", "yeah yeah", "yep", "yup", "yes", "okay",
    "ok", "okay okay", "okay then", "right", "right right", "righto", "alright", "all right", "sure",
    "sure sure", "fine", "fine okay", "cool", "good", "great", "lovely", "I see", "I see okay",
    "got you", "gotcha", "understood", "makes sense", "that's fine", "no worries", "sounds good",
    "yes yes", "ah okay", "oh okay", "oh right", "ah right", "oh I see", "right okay", "okay sure",
    "yeah okay", "yeah sure", "yeah right", "yeah fine", "okey dokey", "uh huh okay", "mm okay",
    "mhm yeah", "yes okay", "yes right", "yep okay", "okay yep", "oh yes", "ah yes", "indeed",
    "true", "fair enough", "of course", "certainly", "absolutely", "no problem", "that's okay",
    "okay good", "yeah go on", "mm right", "oh good", "nice", "okay lovely", "uh okay", "um okay",
)

# the common route requests: under the flow's own route of that role
PERSON = (
    "can I speak to a person", "I want to speak to a person", "I'd like to talk to a person",
    "let me speak to someone", "can I talk to someone", "can I speak to somebody", "I want to talk to somebody",
    "put me through to someone", "put me through to a person", "transfer me", "transfer me to someone",
    "can you transfer me", "please transfer me", "connect me to someone", "connect me with a person",
    "I want a human", "get me a human", "a human please", "human being please", "I need a human being",
    "real person please", "a real person", "I want a real person", "can I talk to a real person",
    "is there a real person there", "is there anyone there I can talk to", "is there someone I can speak to",
    "I need to speak to someone", "I need to talk to a person", "let me talk to a human", "talk to a human",
    "speak to a human", "I want an agent", "get me an agent", "agent please", "can I have an agent",
    "operator", "get me the operator", "representative", "I want a representative", "speak to a representative",
    "customer service please", "put me through to customer services", "I want to talk to staff",
    "can I speak to a member of staff", "someone who works there please", "I want to speak to a manager",
    "can I talk to your manager", "supervisor please", "get me a supervisor", "an advisor please",
    "I'd like to speak to an adviser", "can I speak to an advisor", "a colleague of yours please",
    "I don't want to talk to a machine", "I'm not talking to a robot", "no robots please", "stop I want a person",
    "I hate automated systems get me a person", "this isn't working let me talk to someone",
    "I'd rather speak to a person", "I'd prefer a person", "can I be put through", "put me on to someone",
    "pass me to a person", "hand me over to a human", "a live person please", "can I talk to someone live",
)

GO_ON_WITHOUT = (
    "I don't have it", "I haven't got it", "I don't have it with me", "I haven't got it on me",
    "I can't find it", "I can't find it anywhere", "I've lost it", "I've looked everywhere it's not here",
    "I don't know it", "I don't know what it is", "no idea", "I have no idea", "I can't remember it",
    "I've forgotten it", "I never had one", "I wasn't given one", "I don't think I have one",
    "can we do it without", "can we do this without it", "can we carry on without it", "let's carry on without it",
    "let's go on without it", "can we go ahead without it", "can we continue without it", "continue without it",
    "carry on without it", "go on without it", "let's skip it", "skip it", "skip that", "can we skip that",
    "can we skip this bit", "pass", "pass on that", "next question", "move on", "let's move on",
    "can we move on", "forget it", "never mind that", "leave it", "leave that out", "let's leave it",
    "is there another way", "is there another way to do this", "can we do it some other way",
    "I'd rather not", "I'd rather not say", "I don't want to give it", "I'm not giving that out",
    "I'm not comfortable giving that", "it's not here", "it's at work", "it's at home and I'm not",
    "I threw it away", "I binned it", "I deleted it", "it got thrown out", "I don't have access to it",
    "I can't get to it", "I can't get at it right now", "I can't read it", "it's unreadable",
    "I can't make it out", "I give up looking", "I can't find it let's carry on", "there's no way I'll find it",
    "I don't have it so let's just carry on", "sorry I just don't have it", "no I haven't got one",
    "nope don't have it", "not got it", "haven't a clue", "I'm not sure I ever got one",
)

LADDER_INTENTS = {
    "wait_request": WAIT_REQUEST,
    "ready": READY,
    "repeat_request": REPEAT_REQUEST,
    "backchannel": BACKCHANNEL,
}
ROUTE_ROLES = {"person": PERSON, "go_on_without": GO_ON_WITHOUT}


def route_for(role: str, routes: tuple[Route, ...]) -> Route | None:
    """The flow's route a shared role's phrases ask for: one that says it has the role,
    else the first whose shape does (see ladder.policy.route_role)."""
    explicit = [r for r in routes if r.role == role]
    if explicit:
        return explicit[0]
    return next((r for r in routes if route_role(r) == role), None)


def shared_intents(routes: tuple[Route, ...]) -> dict[str, tuple[str, ...]]:
    """Lull's phrases under a flow's intent names (its routes given)."""
    out = dict(LADDER_INTENTS)
    for role, phrases in ROUTE_ROLES.items():
        route = route_for(role, routes)
        if route is not None:
            out[f"route:{route.id}"] = phrases
    return out


def flow_intents(spec) -> dict[str, tuple[str, ...]]:
    """What a matcher learns for a flow (a FlowSpec): Lull's shared phrases under the
    flow's names, then the flow's own examples (its own first, each phrase once)."""
    merged: dict[str, tuple[str, ...]] = {}
    shared = shared_intents(tuple(spec.routes))
    for name in dict.fromkeys([*spec.intents, *shared]):
        own = tuple(spec.intents.get(name, ()))
        merged[name] = tuple(dict.fromkeys([*own, *shared.get(name, ())]))
    return merged


__all__ = ["LADDER_INTENTS", "ROUTE_ROLES", "flow_intents", "route_for", "shared_intents"]

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

from ...policy import Route, route_role
from .caller_cues import CallerCues, caller_cues
from ..route_roles import read_route_roles, with_roles
from .route_words import chosen_by_words, route_cues

# the ladder's own intents: the same name in every flow
WAIT_REQUEST = (
    # asking for time
    "hold on a second", "give me a moment", "one moment please",
    "wait a sec", "hold on please", "could you wait a moment", "just a minute please",
    "bear with me a moment", "bear with me while I look", "one second I'm looking", "give me a few seconds",
    "give me a couple of minutes", "can you hold on", "could you hold the line", "please hold on", "hold the line please",
    "wait just a moment", "hang on a minute", "hang on hang on", "hold on hold on", "wait wait", "just wait a second",
    "a moment please", "two ticks", "one tick", "hang about a second", "hang fire a moment",
    "could you bear with me", "give me a sec", "gimme a second", "just a sec please", "one min", "half a minute",
    # looking for something
    "let me find it", "let me look for it", "let me check", "let me get it",
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
    "um hold on", "er one second", "oh hang on", "right hold on", "ah just a moment",
    "hold that thought", "wait a bit", "give me time", "just let me look", "one moment while I get it",
    # where it is, on the way to it: said as a reason to wait
    "it's in the drawer give me a second", "it's in the car hang on", "it's in my coat pocket one moment",
    "it's on the kitchen table let me get it", "the letter's in the hall hold on", "my phone's charging in the other room",
    "I'm going downstairs to get it", "I'm just walking to the other room", "I'm on my way to get it now",
    "the paperwork's in a folder somewhere", "it's in a box in the garage", "it's somewhere in this pile",
    "I'm going through my drawer now", "I'm opening the folder hang on", "I'm logging in to find it",
    "my laptop's loading give me a moment", "the app is loading one second", "I'm scrolling through my messages",
    "I'm looking through my bag", "I'm checking my purse", "let me look in my wallet", "it's under a pile of papers",
    "let me switch the light on", "I need to find a pen", "I need to put the shopping down first",
    "sorry I'm driving give me a minute", "I'm just getting up", "let me just sit down", "the dog's barking hold on",
    "someone's at the door one moment", "I'm just finishing something give me a sec", "I'll be right back",
    "back in a minute", "back in a sec", "won't be a moment", "won't be long", "just getting it now",
    # a choice to make, or someone else to ask: the pause of a caller deciding
    "let me think about it", "I need to think about it", "give me a moment to think",
    "I need to decide", "I haven't decided yet give me a second", "let me work it out",
    "I'm working it out", "let me do the maths", "let me count", "I'm just counting",
    "I'll ask my husband", "I need to check with my partner", "let me ask the others", "I need to ask my friends first",
    "I have to check who's coming", "let me check my diary", "let me look at my calendar", "I'm checking the dates",
    "someone's talking to me one second", "my husband's saying something hang on", "I'm just asking them now",
    "I need to find out first", "let me just check something", "I'm checking now", "I'm reading it now one second",
    "the page is loading", "I'm waiting for it to load",
)

READY = (
    "I found it", "here it is",
    "got it here", "I have it here",
    "I'm back now", "sorry about that I'm back",
    "sorry to keep you I've got it", "sorry for the wait I have it", "thanks for waiting I've got it",
    "ready now", "all set",
    "carry on I've got it", "fire away", "you can ask me now",
    "ask away", "right I'm with you", "I'm with you now", "I'm here now",
    "still here I've got it now", "right I've found it", "ah there it is", "oh here it is",
    "there we go", "here we go", "okay got it now", "yep got it now",
    "I've managed to find it", "I've located it", "I've pulled it up",
    "it's on my screen now", "I've got it up on my phone", "I can see it now",
    "okay I can read it to you", "shall I read it out", "do you want me to read it now", "I'm ready to give it to you",
    "I've got the paperwork now", "I've got my glasses on now", "I have the email open",
    "okay I'm ready to answer", "right I'm ready for the question", "I'm sorted now", "sorted I've got it",
    "okay back with you", "back again", "back now go on", "I'm back with it", "okay that's me back",
    "right where were we", "okay where were we", "okay let's do this", "okay let's carry on", "right let's go",
    # with the thing in hand, or able to see it
    "I've got the letter in my hand", "I've got the bill in front of me", "I've got the paperwork here now",
    "I've got my phone now", "the email's open now", "I've opened the folder", "I've got the form here",
    "I can see it on the screen now", "okay I can see what it says now", "I'm looking at it now", "I'm reading it now",
    "right I'm looking at the letter", "okay it's in my hand", "got the paperwork", "got the letter now",
    "found the email", "found the envelope", "found the folder", "I've found the right page",
    "the app's open now", "I'm logged in now", "I've got the screen up", "I'm at it now", "I'm standing next to it now",
    "okay I'm in front of it", "okay I'm there now", "I've got it open", "it's right here",
    "yes it's here now", "okay it's here", "I've got everything now", "that's it I've got it", "okay done I've got it",
    # telling the agent to go on: while waiting, that is readiness, not a backchannel
    "go on then", "okay go ahead", "carry on", "please carry on",
    "you can carry on", "you can go on now", "continue please", "off you go", "keep going I'm ready",
    "I'm listening now", "back",
    # having checked, decided or asked
    "I've checked", "I've had a look", "I've looked now", "okay I've checked now", "I've decided", "we've decided",
    "we've made our minds up", "I know now", "I know what I want now", "I've worked it out",
    "I've thought about it", "I've asked them", "I've spoken to my wife", "we've talked it over",
    "all sorted", "right that's sorted", "I've got an answer for you", "I have an answer now",
    "I'm good to go", "I've counted them", "I've done the sums",
)

REPEAT_REQUEST = (
    "can you repeat that", "repeat that please", "say that again",
    "could you say that again", "can you say it again", "say it again please", "one more time please",
    "once more please", "again please", "what was that", "what was the question",
    "sorry?", "pardon me", "beg your pardon", "excuse me what",
    "I didn't hear you", "I didn't quite catch that", "I missed that",
    "I couldn't hear", "I can't hear you", "you're very quiet", "can you speak up",
    "could you speak louder", "you cut out", "you cut out there", "you're breaking up",
    "it's a bad line", "I lost you for a second", "you went quiet there", "sorry the signal dropped",
    "can you go slower", "slow down please", "could you say it more slowly", "not so fast please",
    "what do you want me to say", "what do you need from me", "what are you asking", "what should I say",
    "what do I need to tell you", "what was the last bit", "sorry what was the last part",
    "come again please", "you what", "eh", "sorry I wasn't listening", "sorry I was distracted",
    "ask me that again", "run that by me again",
    "what do you mean", "I don't understand the question", "I'm not sure what you're asking",
    "sorry can you repeat the question", "could you repeat the question",
    "sorry say again", "say again",
    "hang on what did you just say", "sorry could you start again", "start again please",
    "sorry which one", "which one do you want", "which part", "sorry which bit do you need", "what exactly do you need",
    "sorry you lost me", "you lost me there", "the line dropped for a second", "it went crackly", "you're echoing",
    "I can barely hear you", "you're too quiet", "you're mumbling", "sorry there was noise what did you say",
    "what was that sorry the kids were shouting", "I didn't understand", "I didn't follow that", "could you explain again",
    # echoing the question back
    "the what sorry", "what for", "sorry which",
    "what about it", "what were the options", "what are my options",
    "what were the choices again", "what were the numbers again",
    "what do you want to know", "sorry what do you need to know", "what is it you want", "which do you mean",
)

BACKCHANNEL = (
    "mm hmm", "mm", "hmm", "uh huh", "uh-huh", "yeah", "yup", "okay",
    "right", "righto", "all right", "sure",
    "fine okay", "cool", "good", "great", "lovely", "I see okay",
    "gotcha", "understood", "makes sense", "no worries", "sounds good",
    "yes yes", "ah okay", "oh okay", "oh right", "ah right", "okay sure",
    "yeah sure", "yeah right", "okey dokey",
    "mhm yeah", "yes right", "okay yep", "oh yes", "ah yes", "indeed",
    "true", "fair enough", "of course", "certainly", "absolutely", "no problem", "that's okay",
    "okay good", "mm right", "oh good", "nice", "okay lovely", "uh okay", "um okay",
    "uh huh yes",
    "okay fine", "right then okay", "alright yes", "sure yes", "yeah sure okay", "mhm mhm", "okay okay yeah",
)

# the common route requests: under the flow's own route of that role
PERSON = (
    "can I speak to a person", "I want to speak to a person", "I'd like to talk to a person",
    "let me speak to someone", "can I speak to somebody", "I want to talk to somebody",
    "put me through to a person", "transfer me", "transfer me to someone",
    "can you transfer me", "please transfer me", "connect me to someone", "connect me with a person",
    "I want a human", "get me a human", "a human please", "human being please", "I need a human being",
    "real person please", "a real person", "I want a real person", "can I talk to a real person",
    "is there a real person there", "is there anyone there I can talk to", "is there someone I can speak to",
    "I need to speak to someone", "I need to talk to a person", "let me talk to a human", "talk to a human",
    "speak to a human", "get me an agent", "agent please", "can I have an agent",
    "operator", "get me the operator", "representative", "I want a representative", "speak to a representative",
    "customer service please", "put me through to customer services", "I want to talk to staff",
    "can I speak to a member of staff", "someone who works there please", "I want to speak to a manager",
    "can I talk to your manager", "supervisor please", "get me a supervisor", "an advisor please",
    "I'd like to speak to an adviser", "can I speak to an advisor", "a colleague of yours please",
    "I'm not talking to a robot", "no robots please", "stop I want a person",
    "I hate automated systems get me a person", "this isn't working let me talk to someone",
    "I'd rather speak to a person", "I'd prefer a person", "can I be put through", "put me on to someone",
    "pass me to a person", "hand me over to a human", "a live person please", "can I talk to someone live",
    # anyone to ask, without the usual words
    "is there anyone I can ask", "someone please", "can someone help me",
    "could somebody help me", "is anyone there who can help", "can I talk to someone who works there",
    "the office please", "put me through to reception", "reception please",
    "can I speak to the team", "a member of the team please", "can someone call me back", "I'd like someone to ring me",
    "someone who can help me", "transfer me to someone who can help", "I'd rather talk it through with someone",
    "can I speak to your colleague", "is there somebody there", "I'd like to speak to someone in charge",
)

GO_ON_WITHOUT = (
    "I don't have it", "I haven't got it on me",
    "I can't find it", "I can't find it anywhere", "I've lost it", "I've looked everywhere it's not here",
    "I don't know it", "I don't know what it is", "no idea", "I have no idea", "I can't remember it",
    "I've forgotten it", "I never had one", "I wasn't given one", "I don't think I have one",
    "can we do it without", "can we do this without it", "let's carry on without it",
    "let's go on without it", "can we go ahead without it", "can we continue without it", "continue without it",
    "go on without it", "let's skip it", "skip it", "skip that", "can we skip that",
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
    # why it cannot be had now
    "I can't get to it today", "I can't reach it", "it's locked away", "I'm not at home so I can't check",
    "I'm away from home", "I'm out so I can't look", "it's too dark to see it", "I can't see it properly",
    "the writing has faded", "it's smudged I can't read it", "my glasses are broken so I can't read it",
    "I don't know how to find it", "I don't know where to look", "I wouldn't know where to find it",
    "I don't have it to hand", "not to hand no", "it's not to hand", "I can't get it right now",
    "I'll have to do without it", "we'll have to manage without it", "do it without", "can you manage without it",
    "just go ahead without it", "can't you do it another way", "try another way", "is there an alternative",
    # a choice not made yet: for now, the answer is not to be had
    "I'm not sure", "I can't decide", "I haven't decided",
    "hard to say", "I can't say yet", "I'll let you know later",
    "I'll do it later", "I'll sort it out later", "I'll do it myself", "I'll do it another time", "let me come back to it",
    "I'll get back to you", "I'll have to find out and come back to you", "I'd rather do it another way",
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


class LearnedIntents(dict):
    """intent -> phrases, knowing which phrases are the flow's own (`own`, and per
    intent `own_by_intent`): a trained matcher may weigh the designer's wording apart
    from Lull's shared phrases."""

    own: frozenset[str] = frozenset()
    own_by_intent: dict[str, tuple[str, ...]] = {}
    # route intent -> the words that name what it offers, and the routes those words
    # may choose (ladder.flow.understanding.route_words)
    route_cues: dict[str, frozenset[str]] = {}
    chosen_by_words: frozenset[str] = frozenset()
    # the shapes of words that decide where the classifier is unsure (ladder.flow.understanding.caller_cues)
    cues: CallerCues | None = None
    # a caller act every flow shares -> the flow's intent name for it (a route's role
    # under its route): where a learned reader's data for that act goes
    act_names: dict[str, str] = {name: name for name in ("wait_request", "ready", "repeat_request", "backchannel")}
    # the flow asks a yes/no question: a learned reader may read a yes or a no beside the
    # intents (voices.understanding.yes_no_reader)
    asks_yes_no: bool = False

    def own_only(self) -> dict[str, tuple[str, ...]]:
        """The flow's own examples alone, each under its own intent: what a
        nearest-example matcher learns (with the shared phrases it accepts far more
        off-topic turns; README, "Your own flow")."""
        if self.own_by_intent:
            return {k: v for k, v in self.own_by_intent.items() if v}
        out = {k: tuple(p for p in v if p in self.own) for k, v in self.items()}
        return {k: v for k, v in out.items() if v}


# The pending question's own words in the shared intents: a caller fetching a
# reference says "I've found the reference", one choosing how many says "I know how
# many now". `{n}` is a name the flow gives its value (a slot's label, its mentions).
FIND_TEMPLATES = {
    "wait_request": ("let me find the {n}", "hold on I'm looking for the {n}", "one moment I'll get the {n}"),
    "ready": ("I've got the {n} now", "I've found the {n}", "okay I have the {n} here"),
    "repeat_request": ("which {n}", "what {n}", "sorry the {n}", "what {n} do you need"),
    "go_on_without": ("I don't have the {n}", "I can't find the {n}", "I don't know the {n}"),
}
CHOOSE_TEMPLATES = {
    "wait_request": ("let me think about the {n}", "hold on I'm working out the {n}", "one moment I'll check the {n}"),
    "ready": ("I know the {n} now", "I've decided the {n}", "okay I've worked out the {n}"),
    "repeat_request": ("which {n}", "what {n}", "sorry the {n}", "the {n} for what"),
    "go_on_without": ("I don't know the {n} yet", "I'm not sure about the {n}", "I can't decide the {n} yet"),
}
KNOW_TEMPLATES = {
    "wait_request": ("let me think what the {n} is", "hold on I'll remember the {n}", "one moment I'll check the {n}"),
    "ready": ("I remember the {n} now", "I've got the {n} now", "okay I know the {n}"),
    "repeat_request": ("which {n}", "what {n}", "sorry the {n}", "my {n}"),
    "go_on_without": ("I can't remember the {n}", "I'm not sure of the {n}", "I don't know the {n}"),
}
TEMPLATES = {"find": FIND_TEMPLATES, "choose": CHOOSE_TEMPLATES, "know": KNOW_TEMPLATES}
_ARTICLES = ("the ", "your ", "my ", "a ", "an ")


def value_names(slot) -> tuple[str, ...]:
    """How the flow names a value it asks for: the slot's label and mentions, without
    their article ("booking reference", "reference"); none for a yes/no."""
    if slot.type == "yes_no":
        return ()
    names: list[str] = []
    for name in (slot.label, *slot.mentions):
        name = (name or "").strip().lower()
        for article in _ARTICLES:
            if name.startswith(article):
                name = name[len(article):]
        if name and len(name.split()) <= 3:
            names.append(name)
    return tuple(dict.fromkeys(names))


def question_phrases(spec, routes_by_role: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """The templates filled with the flow's value names, under the flow's intent names;
    a slot of kind "choose" (how many, which day) takes the choosing ones, "know" (a
    name) the remembering ones."""
    out: dict[str, list[str]] = {}
    for slot in spec.slots.values():
        if slot.type == "yes_no":
            continue
        templates = TEMPLATES[slot_kind(slot)]
        names = value_names(slot)
        for intent, texts in templates.items():
            target = routes_by_role.get(intent) if intent == "go_on_without" else intent
            if target is None:
                continue
            out.setdefault(target, []).extend(t.format(n=n) for n in names for t in texts)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


def slot_kind(slot) -> str:
    """A value to find ("find": a number on a card), a choice to make ("choose": how many,
    which day) or something the caller knows ("know": a name): the slot's `kind`, else a
    number is chosen and the rest found."""
    kind = getattr(slot, "kind", None)
    if kind is not None:
        return kind
    return "choose" if slot.type == "number" else "find"


def flow_intents(spec) -> LearnedIntents:
    """What a matcher learns for a flow (a FlowSpec): Lull's shared phrases under the
    flow's names (its routes' roles read from their words and shape:
    ladder.flow.route_roles), the question's own words in them, then the flow's own
    examples (its own first, each phrase once)."""
    spec = spec.model_copy(update={"routes": with_roles(tuple(spec.routes), read_route_roles(spec))})
    merged = LearnedIntents()
    shared = shared_intents(tuple(spec.routes))
    go_on = route_for("go_on_without", tuple(spec.routes))
    context = question_phrases(spec, {"go_on_without": f"route:{go_on.id}"} if go_on is not None else {})
    for name in dict.fromkeys([*spec.intents, *shared]):
        own = tuple(spec.intents.get(name, ()))
        merged[name] = tuple(dict.fromkeys([*own, *shared.get(name, ()), *context.get(name, ())]))
    merged.own = frozenset(p for phrases in spec.intents.values() for p in phrases)
    merged.own_by_intent = {k: tuple(dict.fromkeys(v)) for k, v in spec.intents.items()}
    merged.act_names = {**LearnedIntents.act_names, **{
        role: f"route:{route.id}" for role in ROUTE_ROLES if (route := route_for(role, tuple(spec.routes))) is not None}}
    merged.route_cues = route_cues(spec)
    merged.asks_yes_no = any(slot.type == "yes_no" for slot in spec.slots.values())
    merged.chosen_by_words = chosen_by_words(spec)
    merged.cues = caller_cues(spec, f"route:{go_on.id}" if go_on is not None else None,
                              {k: value_names(slot) for k, slot in spec.slots.items()},
                              {k: slot_kind(slot) for k, slot in spec.slots.items()})
    return merged


__all__ = ["LADDER_INTENTS", "ROUTE_ROLES", "LearnedIntents", "flow_intents", "question_phrases", "route_for",
           "shared_intents", "slot_kind", "value_names"]

"""A few shapes of words that say what a caller wants more surely than any example:
read where the classifier is unsure, or where its pick contradicts them.

A classifier learns sentences like the ones it saw; a caller who gives a reason
("hang on, the kettle's boiling"), or who says what they lack in their own words
("there's no number on anything I've got"), is read as "none" by it because the
rest of the sentence is unlike any example. These shapes carry the intent whatever
follows them:

- a **wait cue** leading the turn: "hold on", "hang on", "one moment", "bear with me",
  "give me a tick";
- a **request to hear it again**: a saying verb with "again" or "once more" ("go over
  the options again"), "didn't catch", "you lost me", "what did you ask", a question
  word with a closing "sorry" ("repay over how long, sorry?"), or the question's own
  words echoed with its unknown last ("days off for what");
- **lacking something else**: "I don't have a job", "a number for the plumber", "I had
  no idea it was coming" is not a request to go on without the value the flow asks for
  (its label, its mentions, a string of digits' common names, or "it", "that", "one"),
  whatever the classifier thought. Where the value is found or known (not chosen), asking
  to be found another way ("can you use my NHS number"), the value being somewhere else
  ("my wife keeps all that", "my phone died", "I left the letter at home"), asking
  whether it is needed at all ("do I really need the reference"), and the route's own
  place named as the one who will know the caller ("reception can check me in when I get
  there") ask for that route;
- **setting the value aside**: "forget the reference", "leave the seats for now" (of
  the value only: "skip the small print" is something else);
- **fetching or looking, in the caller's own words**: "I'll go and get the card",
  "let me check my texts", "I'll have to ask my husband", "can you wait while I log
  in" are waits; "let me know" and "find out" are not; the value in front of the caller
  ("I'm looking at the card now") is being ready, and "it's here somewhere" still looking.

Each shape was added against a dev set and checked on a further one written before it
was measured (README, "Your own flow": candidates F to N). Each one's figure on
yardstick2, written by callers' voices outside the team, is in the README (`lull bench
intents --yardstick tests/flows/yardstick2 --shapes`). Three shapes did not pay there on
the dev sets or the sealed ones and were taken out: lacking the value read as the go-on
route, not being able to look where it is read as that route, and "hold on to it" read
as keeping something rather than waiting.

Pure: a spec in, a reader out; the reader takes the caller's words and the
classifier's pick and returns the intent to use.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from .route_words import GENERAL_WORDS, route_cues, stem

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# what a caller says before the words that matter
_LEAD_IN = frozenset({"um", "uh", "er", "erm", "oh", "ah", "right", "okay", "ok", "sorry", "so", "well", "oops",
                      "hmm", "mm", "yeah", "yes", "no", "wait"})

_WAIT_CUE = re.compile(
    r"^(?:(?:hold|hang) on(?! to\b)|hold the line|(?:one|a|just a|wait a|half a|give me a|gimme a|give us a)"
    r" (?:sec|second|moment|minute|min|tick|mo)\b|one moment|bear with me|wait(?: a)? (?:sec|second|moment|minute)"
    r"|just (?:a )?(?:sec|second|moment|minute)|two ticks|back in a)"
)

# going to fetch or look, in the caller's own words: "I'll go and get the card", "let me
# check my texts", "I'm looking for it now", "I'll have to ask my husband"; what follows
# says of what (the value, where it is, someone to ask)
_FETCHING = re.compile(
    r"^(?:i'll|i will|let me|i need to|i have to|i've got to|i got to|i'll have to|i'll just|i'm|i am|while i)\s+"
    r"(?:just |quickly |have to |need to )?(?:go (?:and |to )?|going to |gonna )?"
    r"(?P<verb>get|getting|grab|grabbing|fetch|fetching|find|finding|look for|looking for|"
    r"look through|looking through|look in|looking in|dig|digging|check|checking|search|searching|ask|asking|"
    r"work out|working out|count|counting|pull up|open|log in|logging in|go downstairs|go upstairs|"
    r"look(?! at)|looking(?! at))\b"
)
# the value in front of the caller now, said like fetching it: "I'm looking at the card
# now", "I've got the bill open" (ready, not a wait)
_IN_FRONT = re.compile(
    r"\b(?:i'm|i am) (?:looking at|reading|holding)\b|\b(?:i've got|i have|i've|got) (?:it|the \w+|my \w+)"
    r"(?: \w+)? (?:here|open|up|in my hand|in front of me|on screen)\b"
)
# still looking: "I've got it here somewhere"
_SOMEWHERE = re.compile(r"\bsomewhere\b(?! else)")
# asking whether the value is needed at all: "do I really need the reference", "is the
# number necessary" (of the value or "it")
_NEEDED = re.compile(
    r"^(?:do|must|will|would) (?:i|we|you) (?:really |actually |definitely |still |even )?"
    r"(?:need|have to (?:have|give|know|find))\b(?P<of>.*)$"
    r"|^(?:is|are) (?P<of2>(?:it|that|the \w+(?: \w+)?|my \w+(?: \w+)?)) (?:really |actually |definitely )?"
    r"(?:necessary|needed|required|essential|a must)\b"
)
_WAIT_WHILE = re.compile(
    r"^(?:(?:can|could|would|will) you |please )?(?:wait|hold on|hang on|bear with me)"
    r"(?: (?:a|one) (?:sec|second|moment|minute|tick))? while (?:i|we)\b"
)
_ASKING_SOMEONE = frozenset({"ask", "asking", "check", "checking"})
# a question or a plan, not a wait: "let me know the interest rate", "I need to find out"
_NOT_A_WAIT = re.compile(r"\blet (?:me|us) know\b|\bfind out\b")
_LATER = re.compile(r"\b(?:later|tomorrow|tonight|next week|after|when i|once i)\b")

_SAYING = r"(?:say|said|repeat|read|go over|go through|run through|run by|run that by|tell|ask|list|give)"
_REPEAT_CUE = re.compile(
    rf"\b{_SAYING}\b.*\b(?:again|once more|one more time)\b"
    r"|\bdidn't (?:catch|hear|get|follow)\b|\bdid not (?:catch|hear|get)\b|\bmissed (?:that|the|what|it|all)\b"
    r"|\bwhat did you (?:say|ask|just)\b|\bcome again\b|\bpardon\b|\byou lost me\b|\b(?:cutting|breaking) (?:out|up)\b"
    r"|\bwhat was the question\b"
)
# the choices asked for again, in a few words: "what choices have I got"
_CHOICES = re.compile(r"^what(?:'s| is| are| were| was)? (?:the |my )?(?:choices|options|range)\b")
# the question echoed back with its unknown last: "days off for what", "eight digits where"
_ECHO_END = frozenset({"what", "where"})
_NOT_ECHO_BEFORE = frozenset({"is", "was", "so", "know", "guess", "mean", "that's", "it's", "and", "or"})
_QUESTION_WORD = re.compile(r"\b(?:what|which|how many|how long|how much)\b")

# having none of something: the words after the cue say of what
_LACK = re.compile(
    r"\b(?:i|we)\s+(?:don't|do not|didn't|did not|never|can't|cannot|couldn't)\s+"
    r"(?:have|had|get|got|receive|received|keep|kept|find|see|remember|know|write|save|note)\b"
    r"|\b(?:i|we)\s+(?:haven't|have not|hadn't|had not)(?:\s+(?:got|had|received|seen|kept|ever had))?\b"
    r"|\b(?:i've|i have|we've|i've got|i have got|there's|there is|there was|there are|there were)\s+(?:no|never)\b"
    r"|\bthere (?:wasn't|isn't|aren't|weren't)\b"
    r"|\b(?:they|you|nobody|no one|no-one)\s+(?:didn't|did not|never|haven't|have not|hasn't)\s+"
    r"(?:give|gave|given|send|sent|issue|issued|post|posted|email|emailed|text|texted)\b"
    r"|\bno (?:idea|clue)\b|\bnot got\b"
)
# someone else has the value, or handles where it is (only where it is found or known)
_SOMEONE_HAS = re.compile(
    r"\b(?:my|the|our) (?:husband|wife|partner|son|daughter|mum|mom|dad|mother|father|sister|brother|carer|"
    r"landlord|landlady|flatmate|housemate|neighbour|neighbor|friend|boyfriend|girlfriend|letting agent|agent|"
    r"receptionist|family|kids|children|colleague|boss|grandson|granddaughter|nephew|niece)\b"
    r"(?:'s)?\s+(?:has|have|had|keeps|kept|took|takes|picked up|picked|booked|does|did|deals with|dealt with|handles|"
    r"handled|sorts|sorted|manages|looks after|organises|organizes|got)\b"
)
# (in the past: "can it go to my work" asks for a delivery; "the bills go to my old
# address" is said of the value's own paper, below)
# someone to ask: "my husband", "the others", "my friend"
_SOMEONE = re.compile(
    r"(?:my |the )?(?:husband|wife|partner|son|daughter|mum|mom|dad|mother|father|sister|brother|carer|others|"
    r"other half|friend|friends|family|kids|children|boss|colleague|flatmate|housemate|doctor|doctor's letter|"
    r"group|team)\b"
)
_SENT_ELSEWHERE = re.compile(
    r"\b(?:it|they|that|the \w+) (?:went|was sent|were sent|got sent|came) to (?:my \w+'s|"
    r"my old|my work|my other|my previous|the wrong|someone else|an old)\b"
)
_GOES_ELSEWHERE = re.compile(
    r"\bthe (\w+) (?:go|goes|come|comes) to (?:my \w+'s|my old|my work|my other|my previous|the wrong|an old)\b"
)
_DEVICE_FAILED = re.compile(
    r"\b(?:phone|mobile|laptop|computer|tablet|ipad|email|emails|app|internet|wifi|broadband)(?:'s| is| are| has)?\s+"
    r"(?:dead|died|broken|broke|not working|isn't working|stopped working|won't (?:open|load|work|turn on|start)|"
    r"flat|out of battery)\b"
)
_ASKS_SOMETHING_ELSE = re.compile(r"\W*(?:so|and|but)\s+(?:can you|could you|please|text|call|ring|email|post|send)\b")
# asking to be found another way: "can you look me up by my postcode", "is there
# another way to find it" (only where the value is one to find or to know)
_ANOTHER_WAY = re.compile(
    r"\b(?:find|search|look|track|identify|use|using|try|check|locate|trace)\b.*\bmy (?:full name|name|surname|"
    r"date of birth|birthday|dob|home address|address|postcode|post code|zip code|nhs number|phone number|"
    r"mobile number|mobile|email address|email|details)(?: instead| then| please)?$"
    r"|\b(?:another|some other|other) way\b.*\b(?:find|do|check|look|without|identify|trace|track)\b"
)
# setting the value aside: "forget the reference", "let's leave the number out", "skip
# the seats for now" (of the value only: "skip the small print" is something else)
_SETTING_ASIDE = re.compile(
    r"\b(?:forget about|never mind|do without|manage without|forget|skip|leave|ignore|without)\s+"
)
# where a thing is, away from the caller: "at home", "on my work phone", "at my mum's"
_AWAY = re.compile(
    r"\b(?:at|in|on)\s+(?:home|work|the office|the kitchen|the car|(?:my|our|the) (?:other|old|work|home|"
    r"previous|spare)\b|(?:my|our) \w+'s\b|my mum's|my mom's)"
    r"|\b(?:upstairs|downstairs|at home|at work)\b"
)
# naming a place or person of the route's own that will know the caller: "reception can
# check me in when I get there", "the desk can sort it out"
_HANDING_OVER = re.compile(
    r"\b(?:check|book|sign) me in\b|\blook me up\b|\b(?:know|find|recognise|recognize) me\b"
    r"|\bsort (?:it|that|this|me) out\b|\bsort (?:it|that|this|me)\b|\bdeal with (?:it|that|me)\b"
    r"|\b(?:give|tell) (?:them|her|him|the \w+ )?(?:my name|who i am)\b"
)
# "leave the seats for now": for a while, not for someone
_FOR_A_WHILE = re.compile(r"\bfor (?:now|the moment|the time being|today|a bit|a while|later)\b")
_ASKING_START = frozenset({"when", "where", "what", "which", "why", "how", "do", "does", "did", "is", "are", "was",
                           "were", "who"})
_LOSS = re.compile(
    r"\b(?:lost|deleted|threw|thrown|binned|recycled|recycling|shredded|gone|blew away|blown away)\b"
)
# verbs of having: what follows is the thing had, or not
# (not losing: "I've thrown the packaging out" may be where the value was, unnamed)
_HAVING = re.compile(r"\b(?:have|had|haven't|hadn't|got|get|receive|received|keep|kept|no|wasn't|isn't|aren't|"
                     r"weren't|give|gave|given|send|sent|issue|issued|post|posted)\b")
_KEEPING_IT = re.compile(r"\b(?:keep|kept|save|write|note)$")
_DETERMINERS = frozenset({"a", "an", "the", "my", "any", "your", "his", "her", "their", "our", "some"})
_POINTING = frozenset({"it", "that", "one", "them", "those", "what"})
_ASKING = frozenset({"what", "which", "how", "where", "whatsoever"})


@dataclass(frozen=True)
class CallerCues:
    """The flow's intent names for the cues (None where the flow has none) and the
    words that name the values it asks for."""

    wait: str | None
    repeat: str | None
    go_on_without: str | None
    value_words: frozenset[str]
    # the words the flow says and expects to hear: where a value is found ("on your
    # appointment text or letter", "the box"), never taken for something else lacked
    found_in: frozenset[str] = frozenset()
    # the content words of the questions that ask for a value: "on your appointment text
    # or letter" (losing those is losing the value)
    asked_where: frozenset[str] = frozenset()
    # the value is found or known (not chosen): asking to be found another way, not
    # being able to look, the value somewhere else all stand for lacking it
    value_is_found: bool = True
    # the intent of a caller back with the value (None where the flow has none)
    ready: str | None = None
    # a string of digits is named in a few words whatever its label ("the code")
    digits_names: frozenset[str] = frozenset()
    # the words that name the go-on-without route alone ("reception", "desk"):
    # ladder.flow.understanding.route_words.route_cues
    go_on_words: frozenset[str] = frozenset()

    def read(self, text: str, picked: str | None) -> str | None:
        """The intent to use for `text`, given the classifier's pick (None: unsure)."""
        return self.read_why(text, picked)[0]

    def read_why(self, text: str, picked: str | None, without: frozenset[str] = frozenset()
                 ) -> tuple[str | None, str | None]:
        """(the intent to use for `text`, the shape that changed the classifier's pick to
        it, None where none did): so a designer sees what decided a turn. `without`: shapes
        left out (an ablation: the next shape in order may apply instead)."""
        for intent, shape in self._shapes(text, picked):
            if shape is None:
                return picked, None
            if shape not in without:
                return intent, shape
        return picked, None

    def _shapes(self, text: str, picked: str | None) -> Iterator[tuple[str | None, str | None]]:
        """The shapes that apply to `text`, in the order they are tried: (intent, shape);
        (picked, None) where the reading stops at the classifier's pick."""
        words = _WORD.findall(text.lower().replace("-", " "))
        if not words:
            yield picked, None
            return
        lead = 0
        while lead < len(words) - 1 and words[lead] in _LEAD_IN:
            lead += 1
        said = " ".join(words)
        rest = " ".join(words[lead:])
        unsure_or_route = picked is None or picked.startswith("route:")
        if picked == self.wait and _NOT_A_WAIT.search(said) and not _WAIT_CUE.match(rest):
            yield None, "asking_not_waiting"  # "let me know when it's coming": asking, not waiting
        if self.wait and picked in (None, self.ready) and _SOMEWHERE.search(said) and self.value_is_found:
            yield self.wait, "still_looking"  # "I've got it here somewhere": still looking
        if self.ready and self.value_is_found and picked in (None, self.wait) and self._in_front(said) \
                and not _SOMEWHERE.search(said) and not _WAIT_CUE.match(rest):
            yield self.ready, "value_in_front"
        if self.wait and picked != self.wait and self._fetches(rest) \
                and (picked in (None, self.ready) or (picked == self.go_on_without and not self._names_go_on(words))):
            yield self.wait, "fetching_it"
        if self.repeat and self._asks_again(words, said):
            # "sorry, I didn't get that": hearing, not having
            if picked != self.repeat and (unsure_or_route or picked in (self.ready, "backchannel")):
                yield self.repeat, "asks_again"
            yield picked, None
            return
        lacks = self._lacks(said)
        if self.go_on_without and self.value_is_found and picked is None and self._asks_if_needed(rest):
            yield self.go_on_without, "asks_if_needed"
        aside = self._sets_aside(said)
        if self.go_on_without and aside is True and picked in (None, self.wait, self.repeat):
            yield self.go_on_without, "sets_it_aside"
        if picked == self.go_on_without and aside is False and lacks is None:
            yield None, "sets_something_else_aside"  # "skip the small print": setting something else aside
        if self.go_on_without and self.value_is_found and (unsure_or_route or picked == self.wait) \
                and _ANOTHER_WAY.search(said):
            yield self.go_on_without, "another_way"
        if self.go_on_without and self.value_is_found and unsure_or_route and picked != self.go_on_without \
                and self._hands_over(words):
            yield self.go_on_without, "hands_over"
        if self.go_on_without and self.value_is_found and picked is None and self._elsewhere(said):
            yield self.go_on_without, "value_elsewhere"

    def _asks_again(self, words: list[str], said: str) -> bool:
        if _REPEAT_CUE.search(said):
            return True
        if len(words) < 2:
            return False
        # a question word with a closing "sorry": the question echoed back
        if words[-1] == "sorry" and _QUESTION_WORD.search(" ".join(words[:-1])):
            return True
        if len(words) <= 5 and _CHOICES.search(said):
            return True
        # the flow's own words echoed with the question's unknown last ("days off for
        # what"), or asked straight after "sorry" ("sorry, over how long?"): no word of
        # the caller's own, which would make it a question of their own ("sorry, what's the APR")
        echoed = all(w in GENERAL_WORDS or stem(w) in self.found_in for w in words)
        if echoed and words[-1] in _ECHO_END and words[-2] not in _NOT_ECHO_BEFORE:
            return True
        return echoed and words[0] == "sorry" and len(words) <= 5 and bool(_QUESTION_WORD.search(" ".join(words[1:4])))

    def _lacks(self, said: str) -> bool | None:
        """True: the caller lacks the value; False: lacks something else, plainly (a
        thing had or lost, named and not the value nor where it is found); None: no such
        words, or not plain."""
        cue = _LACK.search(said) or _LOSS.search(said)
        if cue is None:
            return None
        if self._names_value(said):
            return True
        after = _WORD.findall(said[cue.end():])
        before = _WORD.findall(said[:cue.start()])
        if not after:  # "I don't have", "it's gone"
            return True
        if cue.group(0).startswith("no "):  # "no idea what it is", not "no idea it was coming"
            return True if after[0] in _ASKING else None
        if cue.re is _LOSS and any(stem(w) in self.asked_where for w in after[:3]) and not _OF_ANOTHER & set(after[:5]):
            return True  # "I lost all my texts": where the value was, as the flow says
        if cue.group(0).endswith(" no") and after[0] in ("one", "way"):
            return None  # "there's no one to ask", "there's no way I can": idioms, not a thing lacked
        if after[0] in _POINTING or (before and before[-1] in _POINTING | {"it's", "that's"}):
            return True
        if _KEEPING_IT.search(cue.group(0)) and stem(after[1] if after[0] in _DETERMINERS and len(after) > 1
                                                     else after[0]) in self.asked_where | _WHERE_VALUES_ARE:
            return True  # "I didn't save the text", "I never kept the letter": where the value was
        if not _HAVING.search(cue.group(0)):
            return None  # not knowing, not finding: of what is not plain
        at = 1 if after[0] in _DETERMINERS and len(after) > 1 else 0
        head = after[at]
        if head in ("idea", "clue", "one", "foggiest", "faintest", "slightest"):
            return True
        if stem(head) in self.digits_names and _of_another(after[at + 1:]):
            return False  # "I don't have a number for the plumber"
        if (after[0] in _DETERMINERS or cue.group(0).endswith(" no")) and stem(head) not in self.found_in:
            return False
        return None

    @cached_property
    def _value_places(self) -> frozenset[str]:
        """The value's names and where it is: what the caller fetches, has in front of
        them or left somewhere."""
        return self.value_words | self.digits_names | _WHERE_VALUES_ARE | self.asked_where

    def _fetches(self, rest: str) -> bool:
        """Going to fetch or look for the value now: "I'll go and get the card", "let me
        check my texts", "I'll have to ask my husband", "can you wait while I log in";
        not "I'll get the bus there", "I'm looking for the clinic", "I'll check it later"."""
        if _WAIT_WHILE.match(rest):
            return True  # "can you wait while I ...": a wait asked for in so many words
        cue = _FETCHING.match(rest)
        if cue is None or _NOT_A_WAIT.search(rest) or _LATER.search(rest[cue.end():]):
            return False
        after = [w for w in _WORD.findall(rest[cue.end():]) if w not in ("for", "through", "in", "at", "out", "up")]
        if not after:
            return True  # "let me look", "I'm looking"
        if after[0] in _POINTING or after[0] in ("now", "quickly", "somewhere"):
            return True  # "I'm looking for it now"
        if cue.group("verb") in _ASKING_SOMEONE and after[0] in ("my", "the", "with") \
                and _SOMEONE.match(" ".join(after[1:])):
            return True  # "I'll have to ask my husband", "let me check with the others"
        head = [w for w in after[:3] if w not in _DETERMINERS]
        return bool(head) and stem(head[0]) in self._value_places

    def _in_front(self, said: str) -> bool:
        """The value, or what it is on, in front of the caller: "I'm looking at the card
        now", "I've got the text open"; not "I'm looking at the meter now"."""
        cue = _IN_FRONT.search(said)
        if cue is None:
            return False
        said_of = [w for w in _WORD.findall(cue.group(0) + " " + said[cue.end():]) if w not in _DETERMINERS]
        return any(stem(w) in self._value_places for w in said_of[:6]) or "it" in _WORD.findall(cue.group(0))

    def _asks_if_needed(self, rest: str) -> bool:
        """Whether the value is needed at all: "do I really need the reference", "do I
        have to have it", "is the number necessary"; not "do I need to bring anything"."""
        cue = _NEEDED.match(rest)
        if cue is None:
            return False
        of = _WORD.findall(cue.group("of") if cue.group("of") is not None else cue.group("of2"))
        if not of:
            return True
        if of[0] == "to":
            return False  # "do I need to bring anything": another thing to do
        return of[0] in _POINTING or self._names_value(" ".join(of[:4]))

    def _names_go_on(self, words: list[str]) -> bool:
        return any(stem(w) in self.go_on_words for w in words)

    def _sets_aside(self, said: str) -> bool | None:
        """True: the value set aside ("forget the reference", "leave the seats for now");
        False: something else named and set aside ("skip the small print"); None: neither."""
        cue = _SETTING_ASIDE.search(said)
        if cue is None:
            return None
        after = _WORD.findall(_FOR_A_WHILE.sub("", said[cue.end():]))
        if not after or after[0] not in _DETERMINERS:
            return None  # "leave at nine", "forget it": not a thing named
        head = [w for w in after[1:4] if w not in _DETERMINERS]
        names = self.value_words | self.digits_names
        if any(stem(w) in names for w in head[:2]) and not _of_another(after[2:]):
            return True
        return False

    def _hands_over(self, words: list[str]) -> bool:
        """The route's own place or person named as the one who will know the caller:
        "reception can check me in when I get there"; not a question about it."""
        if not self.go_on_words or words[0] in _ASKING_START:
            return False
        said = " ".join(words)
        return bool(_HANDING_OVER.search(said)) and any(stem(w) in self.go_on_words for w in words)

    def _elsewhere(self, said: str) -> bool:
        """The value is with someone else ("my wife keeps all that", "my landlord has the
        bills"), went somewhere else ("the text went to my husband's phone"), or is on a
        device that failed ("my phone died"), not "my son has the car today"."""
        if _SENT_ELSEWHERE.search(said):
            return True
        away = _AWAY.search(said)
        if away is not None:
            # "the letter's at home", "I left the card at the office", "it's on my work phone"
            before = _WORD.findall(said[:away.start()])
            things = [stem(w) for w in before[-4:] if w not in _DETERMINERS]
            if any(t in self._value_places for t in things) or (before and before[-1] in ("it's", "it", "that's")):
                return True
        goes = _GOES_ELSEWHERE.search(said)
        if goes is not None and stem(goes.group(1)) in self.value_words | _WHERE_VALUES_ARE:
            return True
        failed = _DEVICE_FAILED.search(said)
        if failed is not None:
            rest = said[failed.end():]
            return not _ASKS_SOMETHING_ELSE.match(rest)  # "my phone is broken so text my wife"
        held = _SOMEONE_HAS.search(said)
        if held is None:
            return False
        after = [w for w in _WORD.findall(said[held.end():]) if w not in ("all", "in", "up", "of")]
        if not after or after[0] in _POINTING:
            # "my wife keeps all that"; but "my neighbour took it in" may be the parcel
            return not re.search(r"\b(?:took|takes|picked up|got)$", held.group(0))
        head = after[1] if after[0] in _DETERMINERS and len(after) > 1 else after[0]
        if stem(head) in self.value_words | self.digits_names | _WHERE_VALUES_ARE:
            return True
        # "my son sorts my appointments": the caller's own of what the question says the
        # value is on; "my daughter has an appointment too" is hers
        return after[0] in ("my", "the", "our") and stem(head) in self.asked_where

    def _names_value(self, said: str) -> bool:
        words = _WORD.findall(said)
        names = self.value_words | self.digits_names
        for i, w in enumerate(words):
            # "a number for the plumber" is another number
            if stem(w) in names and not _of_another(words[i + 1:]):
                return True
        return False


def _of_another(rest: list[str]) -> bool:
    """Whether the words after a name make it another thing's ("a number for the
    plumber"), not the caller's dealings with the agent ("a reference from you")."""
    return len(rest) > 1 and rest[0] in _OF_ANOTHER and rest[1] not in ("you", "us", "me", "your")


def caller_cues(spec, go_on_without: str | None, value_names: dict[str, tuple[str, ...]],
                kinds: dict[str, str]) -> CallerCues:
    """The cue reader of a flow (a FlowSpec), given the intent name of its route for
    going on without the value (None if it has none), and per slot its names ("booking
    reference", "reference") and kind ("find", "choose", "know"): ladder.flow.understanding.shared_intents."""
    names: set[str] = set()
    digits = False
    for slot_id, slot in spec.slots.items():
        for name in value_names.get(slot_id, ()):
            names |= {stem(w) for w in _WORD.findall(name) if w not in _NOT_A_NAME}
        digits = digits or slot.type == "digits"
    # everything the flow says or expects to hear: where its values are found
    texts = [stage.say or "" for stage in spec.stages]
    texts += [p for phrases in spec.intents.values() for p in phrases]
    texts += [t or "" for r in spec.routes for t in (r.label, r.promises, r.offer, *r.mentions)]
    asked = set(names)
    for text in texts:
        asked |= {stem(w) for w in _WORD.findall(text.lower())}
    where: set[str] = set()
    for stage in spec.stages:
        if any(spec.slots[k].type != "yes_no" for k in stage.collect if k in spec.slots):
            where |= {stem(w) for w in _WORD.findall((stage.say or "").lower()) if w not in GENERAL_WORDS}
    value_is_found = any(kinds.get(k) != "choose" for k, slot in spec.slots.items() if slot.type != "yes_no")
    go_on_words = route_cues(spec).get(go_on_without, frozenset()) if go_on_without else frozenset()
    return CallerCues(wait="wait_request", repeat="repeat_request", ready="ready", go_on_without=go_on_without,
                      value_words=frozenset(names), found_in=frozenset(asked), asked_where=frozenset(where),
                      value_is_found=value_is_found, digits_names=_DIGITS_NAMES if digits else frozenset(),
                      go_on_words=frozenset(go_on_words))


_DIGITS_NAMES = frozenset({"number", "code", "reference", "ref", "id"})
# where callers keep a value they were sent
_WHERE_VALUES_ARE = frozenset({"phone", "message", "text", "email", "inbox", "paperwork", "letter", "post"})
# "a number for the plumber", "my letter about the x-ray": of something else
_OF_ANOTHER = frozenset({"for", "of", "about", "from"})
# words of a value's name that do not name it alone ("how many", "the term")
_NOT_A_NAME = frozenset({"how", "many", "much", "of", "the", "a", "an", "your", "my"})


__all__ = ["CallerCues", "caller_cues"]

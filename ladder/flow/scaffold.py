"""A new flow to start from (`lull flow new`): one question for one slot, its read-back,
a route to go on without it, a repeat, and closes that say only what is true; plus a
scenario that rehearses it. Pure: documents in, documents out; the CLI writes them.

The scaffold uses the default ladder (it speaks of the slot by its label), so a
designer edits wording where they want their own, not everywhere.
"""

from __future__ import annotations

import re
from typing import Literal

from .slot_words import id_in_words

SlotType = Literal["digits", "number", "text", "yes_no"]
SLOT_ID = re.compile(r"^[a-z][a-z0-9_]*$")

# a few of the ways callers say these, for the designer to extend with their own words
_INTENTS = {
    "wait_request": ["hold on", "one moment please", "give me a second", "let me find it",
                     "just a minute", "hang on I'm looking", "can you wait a bit", "bear with me"],
    "ready": ["okay I have it", "found it", "I'm back", "ready now", "go ahead",
              "right I've got it", "I've got it here", "okay I'm ready"],
    "repeat_request": ["say that again", "what was that", "sorry I didn't catch that",
                       "could you repeat the question", "pardon", "what do you need",
                       "can you say it slower", "I missed that"],
    "backchannel": ["mm hmm", "okay", "uh huh", "right", "yeah", "sure", "alright", "I see"],
}


# what each type of slot usually asks for (ladder.flow.spec.Slot.kind)
DEFAULT_KINDS = {"digits": "find", "number": "choose", "text": "know"}


def words(slot_id: str) -> str:
    """The id as a listener would understand it: "card_no" is spoken "card number", not
    "card no" (slot_words.ABBREVIATIONS), as the compiler speaks a slot with no label."""
    return id_in_words(slot_id)


_DETERMINERS = ("your", "my", "the", "a", "an", "this", "that")


def bare_name(spoken: str) -> str:
    """The value's name without a leading "your", "the", "a" ("your pet's name" -> "pet's
    name"): the scaffold's wording puts its own in front ("What is your ...", "I don't have
    my ..."), as the ladder keeps a label that has one (`compile._spoken_value`)."""
    first, _, rest = spoken.partition(" ")
    return rest if rest and first.lower() in _DETERMINERS else spoken


def _question(slot_type: str, given: str, spoken: str) -> str:
    """The question as a caller would expect it: a number is a choice to make ("How many
    tickets would you like?"), the rest a value to give ("What is your pet's name?")."""
    if slot_type == "yes_no":
        return f"{given[:1].upper()}{given[1:]}: yes or no?"
    if slot_type == "number":
        if spoken.lower().startswith("number of "):
            return f"How many {spoken[len('number of '):]} would you like?"
        return f"What {spoken} would you like?"
    return f"What is your {spoken}?"


def scaffold_flow(
    name: str,
    slot: str,
    slot_type: SlotType = "digits",
    min_length: int | None = None,
    max_length: int | None = None,
    label: str | None = None,
    kind: str | None = None,
) -> dict:
    """A flow document that asks for `slot`, reads it back and ends; it passes
    `lull flow check` as written. `kind` (find, choose, know) is written into the slot
    for the designer to see; unset, a number is a choice, text something the caller
    knows (a name) and digits a value to find."""
    given = label or words(slot)
    slot_spec: dict = {"type": slot_type, "label": given}
    if slot_type != "yes_no":
        slot_spec["kind"] = kind or DEFAULT_KINDS[slot_type]
    spoken = bare_name(given)  # the wording below says "your", "my" or "the" itself
    if slot_type == "digits":
        slot_spec["min_length"] = min_length or 4
        slot_spec["max_length"] = max_length or max(min_length or 4, 8)
    ask = f"ask_{slot}"
    stages: list[dict] = [
        {"id": "greet", "say": "Hello, thanks for calling.", "next": ask},
        {
            "id": ask,
            "say": _question(slot_type, given, spoken),
            "collect": [slot],
            "repair": {"reprompt_after": 2, "escalate_after": 6, "escalate_to": "close_without"},
        },
    ]
    slots = {slot: slot_spec}
    if slot_type == "yes_no":
        stages[1]["next"] = "close_done"
        done = "Thank you, I've noted your answer. Goodbye."
    else:
        confirmed = f"{slot}_confirmed"
        slots[confirmed] = {"type": "yes_no"}
        stages[1]["next"] = f"confirm_{slot}"
        stages.append({
            "id": f"confirm_{slot}",
            "say": f"I heard {{{slot}}}. Is that right?",
            "collect": [confirmed],
            "next": "close_done",
            "reopen": {"when": {"is_false": confirmed}, "stages": [ask, f"confirm_{slot}"]},
        })
        done = f"Thank you, I have your {spoken}. Goodbye."
    stages += [
        {"id": "close_done", "say": done, "terminal": True},
        {"id": "close_without", "say": f"No problem, we'll leave it there for now. You can call back with your {spoken}. Goodbye.",
         "terminal": True},
    ]
    intents = {k: list(v) for k, v in _INTENTS.items()}
    intents["route:go_on"] = [
        f"I don't have my {spoken}", "I can't find it", "can we do this without it", "I don't know it",
        "skip that", "I haven't got it with me", "let's carry on without it", "I'd rather not say",
    ]
    return {
        "schema": 1,
        "name": name,
        "title": f"Ask for the caller's {spoken}",
        "stages": stages,
        "slots": slots,
        "intents": intents,
        "routes": [
            {"id": "repeat", "label": "repeat the question", "promises": "the question again", "action": "restate",
             "offer": "I can repeat the question"},
            {"id": "go_on", "label": f"go on without the {spoken}", "promises": f"carry on without the {spoken}",
             "goto": "close_without", "offer": "we can leave it for now"},
        ],
        "policies": [{"kind": "redact", "keys": [slot]}] if slot_type in ("digits", "number", "text") else [],
    }


def _example_value(slot_spec: dict) -> str:
    kind = slot_spec["type"]
    if kind == "digits":
        names = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "zero"]
        return " ".join(names[i % 10] for i in range(slot_spec.get("min_length") or 4))
    if kind == "number":
        return "forty two"
    if kind == "yes_no":
        return "yes"
    return "it's the blue one"


def scaffold_scenario(flow: dict, flow_ref: str) -> dict:
    """A scenario for the scaffold: the caller answers and confirms; the call completes
    with the slot filled and the close said."""
    ask = next(s for s in flow["stages"] if s.get("collect"))
    slot = ask["collect"][0]
    spec = flow["slots"][slot]
    steps: list[dict] = [{"silence_ms": 6000}, {"say": _example_value(spec)}]
    if spec["type"] != "yes_no":
        steps += [{"silence_ms": 3000}, {"say": "yes"}]
    steps += [
        {"silence_ms": 4000},
        {"expect": {
            "ended": True,
            "played": next(s["say"] for s in flow["stages"] if s["id"] == "close_done"),
            "stages_complete": [ask["id"]],
        }},
    ]
    return {
        "schema": 1,
        "name": f"{flow['name']}_answered",
        "title": f"The caller gives their {bare_name(spec.get('label') or words(slot))} and the call completes",
        "flow": flow_ref,
        "steps": steps,
    }


__all__ = ["DEFAULT_KINDS", "SLOT_ID", "SlotType", "scaffold_flow", "scaffold_scenario"]

"""What Lull's whisper is told before it hears the answer to a question (issue 48, item 4).

Whisper reads a prompt as the words said just before the audio, and leans towards them.
Before a caller's answer those words are the agent's question, then the short things
callers say between answers (asking for time, being back, asking again, a backchannel),
then the flow's routes by their labels ("speak to a claims handler"). Measured on
yardstick2's dev phrasings (README, "Helping whisper hear"), this prompt helped spoken
and down the phone line, where the question alone did less. A code or a yes/no is not
told (`voices.backends.voice.options_for`): there it cost real people's codes.

Pure: a flow's spec and a stage in, a sentence out.
"""

from __future__ import annotations

import os
import re

# The acts every flow shares, as a caller says them: whisper hears "mm hmm" as
# "remember" and "just a sec" as "just the" without them.
CALLER_ACTS_SAID = "Hold on a second. Okay, I'm back. Sorry, can you say that again? Mm-hmm. Yeah."
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
# whisper keeps at most 223 tokens of a prompt; a sentence is about a word and a half a
# token: the question and the acts always fit, the routes are cut at this many characters
MAX_CHARS = 600


# Off with LULL_RECOGNISER_CONTEXT=0 or `lull bench intents --no-context`, to compare.
ENABLED = os.environ.get("LULL_RECOGNISER_CONTEXT", "").strip().lower() not in ("0", "off", "no", "false")


def prompt_option(context: str | None) -> dict:
    """Whisper's option for `context`: {"initial_prompt": context}, or none."""
    return {"initial_prompt": context} if context and ENABLED else {}


def question_said(text: str) -> str:
    """A stage's words as a prompt: its placeholders left out ("I heard . Is that
    right?" reads as "I heard. Is that right?")."""
    said = _PLACEHOLDER.sub("", text)
    said = re.sub(r"\s+([.,?!])", r"\1", said)
    return " ".join(said.split())


def _sentence(label: str) -> str:
    label = label.strip().rstrip(".")
    return f"{label[:1].upper()}{label[1:]}." if label else ""


def context_for(spec, stage_id: str | None) -> str:  # noqa: ANN001 (a ladder.flow.spec.FlowSpec)
    """Whisper's prompt for the answer to `stage_id`'s question in the flow `spec`."""
    parts = []
    if stage_id is not None:
        stage = next((s for s in spec.stages if s.id == stage_id), None)
        if stage is not None and stage.say:
            parts.append(question_said(stage.say))
    parts.append(CALLER_ACTS_SAID)
    for route in spec.routes:
        if route.action == "restate":
            continue  # asking again is among the acts already
        said = _sentence(route.label)
        if said and len(" ".join([*parts, said])) <= MAX_CHARS:
            parts.append(said)
    return " ".join(p for p in parts if p)


__all__ = ["CALLER_ACTS_SAID", "ENABLED", "context_for", "prompt_option", "question_said"]

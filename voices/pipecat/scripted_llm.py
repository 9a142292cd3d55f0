"""`TableLLMService`: a Pipecat LLM service whose replies come from a table, for
rehearsing Lull beside an LLM with no model and no network.

It is a real `LLMService`, so Pipecat's turn-completion mixin runs in it as in any
other: with `FilterIncompleteUserTurnStrategies` its replies start with a marker (●
complete, ◐ cut off, ○ needs time), which the mixin reads, holds back or passes on, and
reports (`LLMMarkerFrame`, `LLMMarkerResponseFrame`) exactly as it would for a hosted
model. A row is `(words, reply)` or `(words, reply, seconds)`: the reply to the first row all
of whose words are in what the caller said last (lowercase, punctuation ignored), its
first word `seconds` after the response starts (a model's time to first token);
`default` otherwise; `greeting` for a run with no caller words yet. Replies stream a
word at a time.

    llm = TableLLMService([("hold on", "○"), ("back", "● Great. What is your account number?")],
                          greeting="● Hello! What is your account number?")
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from pipecat.frames.frames import Frame, LLMContextFrame, LLMFullResponseEndFrame, LLMFullResponseStartFrame
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


class TableLLMService(LLMService):
    """An LLM whose reply to the caller's last words is looked up in a table."""

    def __init__(self, table: Sequence[tuple], *, default: str = "● Sorry, could you say that again?",
                 greeting: str = "● Hello, how can I help?", **kwargs) -> None:
        super().__init__(**kwargs)
        self.table = [(tuple(_words(row[0])), row[1], float(row[2]) if len(row) > 2 else 0.0) for row in table]
        self.default = default
        self.greeting = greeting
        self.heard: list[str] = []  # the caller's last words of each run, in order
        self.contexts: list[list] = []  # the context each run was given, in order

    def reply_to(self, said: str | None) -> tuple[str, float]:
        """The reply to the caller's words, and its time to first token (s)."""
        if said is None:
            return self.greeting, 0.0
        heard = _words(said)
        for words, reply, seconds in self.table:
            if all(w in heard for w in words):
                return reply, seconds
        return self.default, 0.0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            messages = list(frame.context.get_messages())
            self.contexts.append([dict(m) if isinstance(m, dict) else m for m in messages])
            said = _last_user_words(messages)
            if said is not None:
                self.heard.append(said)
            reply, seconds = self.reply_to(said)
            await self.push_frame(LLMFullResponseStartFrame())
            if seconds:
                await asyncio.sleep(seconds)
            for token in re.findall(r"\S+\s*", reply):
                await self._push_llm_text(token)  # through the turn-completion mixin when it is on
            await self.push_frame(LLMFullResponseEndFrame())
        else:
            await self.push_frame(frame, direction)


def _last_user_words(messages) -> str | None:
    """The caller's words since the assistant last spoke (one turn may be several
    messages, the fragments of a turn the model held open), or None for none."""
    said: list[str] = []
    for message in reversed(list(messages)):
        role = message.get("role") if isinstance(message, dict) else getattr(message, "role", None)
        if role == "assistant":
            break
        if role != "user":
            continue
        content = message.get("content") if isinstance(message, dict) else getattr(message, "content", "")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        said.insert(0, str(content))
    return " ".join(said) if said else None


__all__ = ["TableLLMService"]

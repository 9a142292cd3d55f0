"""`TableLLM`: a LiveKit LLM whose replies come from a table, for rehearsing Lull beside
an LLM with no model and no network.

It is a real `livekit.agents.llm.LLM`: the session runs it as any other, so a reply it
gives is said through the session's TTS and a tool it calls runs through the session's
tool machinery (`tool_execution_updated`, the tool's result, the reply it does or does
not ask for). A row is `(words, reply)` or `(words, reply, seconds)`: for the first row
all of whose words are in what the caller said last (lowercase, punctuation ignored),
`reply` is either words to say or `tool:NAME` (a call of the function tool NAME with
no arguments), its first chunk `seconds` after the request; `default` otherwise;
`greeting` before the caller has said anything.

    llm = TableLLM([("hold on", "tool:caller_needs_time"), ("back", "tool:caller_is_back"),
                    ("four", "Thanks, I've got it.")])
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from itertools import count

from livekit.agents import llm
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, APIConnectOptions, NotGivenOr

_ids = count(1)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


class TableLLM(llm.LLM):
    """An LLM whose reply to the caller's last words is looked up in a table."""

    def __init__(self, table: Sequence[tuple], *, default: str = "Sorry, could you say that again?",
                 greeting: str = "Hello, how can I help?") -> None:
        super().__init__()
        self.greeting = greeting
        self.table = [(tuple(_words(row[0])), row[1], float(row[2]) if len(row) > 2 else 0.0) for row in table]
        self.default = default
        self.heard: list[str] = []  # the caller's last words of each request, in order
        self.contexts: list[list[tuple[str, str]]] = []  # (role, text) of each request's context

    @property
    def model(self) -> str:
        return "table"

    @property
    def provider(self) -> str:
        return "lull"

    def reply_to(self, said: str) -> tuple[str, float]:
        heard = _words(said)
        for words, reply, seconds in self.table:
            if all(w in heard for w in words):
                return reply, seconds
        return self.default, 0.0

    def chat(self, *, chat_ctx: llm.ChatContext, tools=None, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
             parallel_tool_calls: NotGivenOr[bool] = NOT_GIVEN, tool_choice=NOT_GIVEN, extra_kwargs=NOT_GIVEN) -> llm.LLMStream:
        return _TableStream(self, chat_ctx=chat_ctx, tools=list(tools or []), conn_options=conn_options)


class _TableStream(llm.LLMStream):
    async def _run(self) -> None:
        table: TableLLM = self._llm  # type: ignore[assignment]
        items = [item for item in self._chat_ctx.items if getattr(item, "type", None) == "message"]
        table.contexts.append([(item.role, item.text_content or "") for item in items])
        if not any(item.role == "user" for item in items):
            reply, seconds = table.greeting, 0.0  # the agent speaks first
        elif items[-1].role != "user":
            return  # a run after a tool call that asked for no reply: nothing to say
        else:
            said = items[-1].text_content or ""
            table.heard.append(said)
            reply, seconds = table.reply_to(said)
        if seconds:
            await asyncio.sleep(seconds)
        request = f"table-{next(_ids)}"
        if reply.startswith("tool:"):
            call = llm.FunctionToolCall(name=reply[len("tool:"):], arguments="{}", call_id=f"{request}-call")
            self._event_ch.send_nowait(llm.ChatChunk(id=request, delta=llm.ChoiceDelta(role="assistant", tool_calls=[call])))
            return
        for token in re.findall(r"\S+\s*", reply):
            self._event_ch.send_nowait(llm.ChatChunk(id=request, delta=llm.ChoiceDelta(role="assistant", content=token)))


__all__ = ["TableLLM"]

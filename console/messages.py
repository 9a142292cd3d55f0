"""Messages the console's widgets exchange (dataclasses, as Textual expects)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class SessionRecord(Message):
    """One input or decision of the live call, flattened (see sessions.virtual.flatten)."""

    now: float
    kind: str  # "input" or "decision"
    record: dict


@dataclass
class AgentLine(Message):
    who: str  # "agent" or "caller"
    text: str

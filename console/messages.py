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


@dataclass
class HistoryChanged(Message):
    """The live call said or decided something: read the app's history from where you stopped."""


@dataclass
class CallRestarted(Message):
    """A new call replaced the old one (same console, the flow with its applied edits)."""

"""The flow file: the JSON contract designers edit, as pydantic models (seed 002).

A flow has stages (what the agent says, what it collects, which tools it may call,
how it is paced), overlays (digressions), policies, intents with example phrases,
fallback routes, simulated tools, and the silence ladder's policy. `flow_schema()`
publishes the JSON Schema; `compile_flow` (compile.py) checks the cross references.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..policy import Route
from .guards import Guard

FLOW_SCHEMA = 1


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Timing(_Spec):
    """Per-stage voice pacing (G1). Unset fields leave the session's behaviour alone."""

    reprompt_after_ms: float | None = Field(default=None, gt=0)
    reprompt: str | None = None
    filler_after_ms: float | None = Field(default=None, gt=0)
    interruptible: bool | None = None
    end_of_speech_ms: float | None = Field(default=None, gt=0)
    context_delivery: Literal["immediate", "deferred"] | None = None


class Commit(_Spec):
    """The stage may call `tool` only while `guard` holds; silence never satisfies it."""

    tool: str
    guard: Guard


class Call(_Spec):
    """The scripted agent calls this tool when the stage becomes active."""

    tool: str
    args: dict[str, Any] = {}  # "{slot}" placeholders take state values


class Repair(_Spec):
    reprompt_after: int = Field(default=2, ge=1)  # turns active without completing
    escalate_after: int = Field(default=4, ge=1)
    escalate_after_interruptions: int | None = Field(default=None, ge=1)
    escalate_after_tool_failures: int | None = Field(default=None, ge=1)
    escalate_to: str | None = None


class Reopen(_Spec):
    """When `when` holds at a turn boundary, run `stages` again with their slots cleared."""

    when: Guard
    stages: tuple[str, ...] = Field(min_length=1)


class Slot(_Spec):
    """How a collected value is read from the caller's words (V5)."""

    type: Literal["digits", "yes_no", "number", "text"]
    min_length: int | None = Field(default=None, ge=1)  # digits: fewer is a partial answer
    max_length: int | None = Field(default=None, ge=1)


class StageSpec(_Spec):
    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    say: str | None = None  # what the agent says when the stage becomes active
    collect: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    next: str | None = None
    terminal: bool = False
    timing: Timing | None = None
    verbatim: str | None = None
    commit: Commit | None = None
    call: Call | None = None
    complete_when: Guard | None = None
    repair: Repair | None = None
    reopen: Reopen | None = None
    sets: dict[str, Any] = {}  # facts written when the stage completes
    ladder: dict[str, Any] = {}  # overrides of the flow's ladder policy for this question


class Overlay(_Spec):
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    trigger: Guard
    stages: tuple[StageSpec, ...] = Field(min_length=1)
    resume: Literal["previous", "restart", "terminate"] = "previous"


class RedactPolicy(_Spec):
    kind: Literal["redact"]
    keys: tuple[str, ...] = Field(min_length=1)


class CommitPolicy(_Spec):
    kind: Literal["commit"]
    tool: str
    idempotency_key: str | None = None  # "{name}" takes the call's argument, else state
    compensate_with: str | None = None


class SafetyHandoffPolicy(_Spec):
    kind: Literal["safety_handoff"]
    intents: tuple[str, ...] = Field(min_length=1)
    say: str = "I'm going to stop here. Please contact emergency services if you are in danger."


Policy = Annotated[RedactPolicy | CommitPolicy | SafetyHandoffPolicy, Field(discriminator="kind")]


class ToolSpec(_Spec):
    """A tool the flow may call. Lull simulates it: latency and outcome are data."""

    name: str
    latency_ms: float = Field(default=800, ge=0)
    outcome: Literal["ok", "failed", "unknown"] = "ok"
    result: dict[str, Any] = {}
    description: str = ""


class FlowSpec(_Spec):
    schema_: int = Field(default=FLOW_SCHEMA, alias="schema")
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    title: str = ""
    stages: tuple[StageSpec, ...] = Field(min_length=1)
    overlays: tuple[Overlay, ...] = ()
    policies: tuple[Policy, ...] = ()
    slots: dict[str, Slot] = {}
    intents: dict[str, tuple[str, ...]] = {}  # intent -> example phrases
    intent_threshold: float = Field(default=0.55, gt=0, le=1)
    routes: tuple[Route, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    ladder: dict[str, Any] = {}  # a LadderPolicy, partially: unset fields take defaults

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def flow_schema() -> dict:
    """The published JSON Schema of flow files."""
    schema = FlowSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Lull flow"
    return schema

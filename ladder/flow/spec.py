"""The flow file: the JSON contract designers edit, as pydantic models (seed 002).

A flow has stages (what the agent says, what it collects, which tools it may call,
how it is paced), overlays (digressions), policies, intents with example phrases,
fallback routes, simulated tools, and the silence ladder's policy. `flow_schema()`
publishes the JSON Schema; `compile_flow` (compile.py) checks the cross references.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationInfo,
    field_validator,
)

from ..policy import PromptText, Route
from .guards import Guard

FLOW_SCHEMA = 1

# Strict scalars: pydantic's lax mode would read "yes" as true, "800" as 800 and
# 3.0 as 3; a flow file says what it means or is refused.
Bool = Annotated[bool, Strict()]
Int = Annotated[int, Strict()]
Number = Annotated[float, Strict()]  # a JSON integer is a number too


class _Spec(BaseModel):
    # NaN and infinities are not durations or counts: refused wherever a float is read
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Timing(_Spec):
    """Per-stage voice pacing (G1). Unset fields leave the session's behaviour alone."""

    reprompt_after_ms: Number | None = Field(default=None, gt=0)
    reprompt: PromptText | None = None
    filler_after_ms: Number | None = Field(default=None, gt=0)
    interruptible: Bool | None = None
    end_of_speech_ms: Number | None = Field(default=None, gt=0)
    # Slot-aware end of turn (V9): a pause that already holds a complete value for the
    # pending slot ends the turn after this much of it, instead of the whole hold; one
    # that holds a partial value (two digits of four) keeps the turn open up to this.
    complete_value_end_ms: Number | None = Field(default=None, gt=0)
    partial_value_hold_ms: Number | None = Field(default=None, gt=0)
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
    reprompt_after: Int = Field(default=2, ge=1)  # turns active without completing
    escalate_after: Int = Field(default=4, ge=1)
    escalate_after_interruptions: Int | None = Field(default=None, ge=1)
    escalate_after_tool_failures: Int | None = Field(default=None, ge=1)
    escalate_to: str | None = None


class Reopen(_Spec):
    """When `when` holds at a turn boundary, run `stages` again with their slots cleared."""

    when: Guard
    stages: tuple[str, ...] = Field(min_length=1)


class Slot(_Spec):
    """How a collected value is read from the caller's words (V5)."""

    type: Literal["digits", "yes_no", "number", "text"]
    min_length: Int | None = Field(default=None, ge=1)  # digits: fewer is a partial answer
    max_length: Int | None = Field(default=None, ge=1)
    # how the agent speaks of the value ("prescription number"): the default ladder's
    # `{slot}`; the id in words when absent
    label: str | None = Field(default=None, min_length=1, max_length=80)
    # wording that names this slot's question besides its id's words ("the code"), for
    # the prompt lint: per-question ladders and honest closes
    mentions: tuple[str, ...] = ()
    # what the question asks for, for the default ladder's wording and the phrases callers
    # are expected to say: a value to find ("find": a number on a card, "to hand"), a
    # choice to make ("choose": how many, which day) or something the caller knows
    # ("know": a name); unset, a number is chosen and the rest found
    kind: Literal["find", "choose", "know"] | None = None

    @field_validator("max_length")
    @classmethod
    def _not_below_min(cls, value: int | None, info: ValidationInfo) -> int | None:
        low = info.data.get("min_length")
        if value is not None and low is not None and value < low:
            raise ValueError(f"max_length {value} is below min_length {low}, so no answer could fit both")
        return value


class StageSpec(_Spec):
    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    say: PromptText | None = None  # what the agent says when the stage becomes active
    collect: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    next: str | None = None
    terminal: Bool = False
    timing: Timing | None = None
    verbatim: PromptText | None = None
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
    say: PromptText = "I'm going to stop here. Please contact emergency services if you are in danger."


Policy = Annotated[RedactPolicy | CommitPolicy | SafetyHandoffPolicy, Field(discriminator="kind")]


class ToolSpec(_Spec):
    """A tool the flow may call. Lull simulates it: latency and outcome are data."""

    name: str
    latency_ms: Number = Field(
        default=800, ge=0, description="How long the simulated tool takes to answer, in milliseconds."
    )
    outcome: Literal["ok", "failed", "unknown"] = Field(
        default="ok", description="What the simulated tool answers: ok, failed, or unknown (no verdict)."
    )
    timeout_ms: Number = Field(
        default=10_000,
        gt=0,
        description=(
            "How long the agent waits for the tool, in milliseconds (positive, finite). "
            "A tool that has not answered by then counts as outcome 'unknown'."
        ),
    )
    result: dict[str, Any] = {}
    description: str = ""


class FlowSpec(_Spec):
    schema_: Int = Field(default=FLOW_SCHEMA, alias="schema", json_schema_extra={"const": FLOW_SCHEMA})
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    title: str = ""
    stages: tuple[StageSpec, ...] = Field(min_length=1)
    overlays: tuple[Overlay, ...] = ()
    policies: tuple[Policy, ...] = ()
    slots: dict[str, Slot] = {}
    intents: dict[str, tuple[str, ...]] = {}  # intent -> example phrases
    intent_threshold: Number = Field(default=0.55, gt=0, le=1)
    routes: tuple[Route, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    ladder: dict[str, Any] = {}  # a LadderPolicy, partially: unset fields take defaults

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)

    @field_validator("schema_")
    @classmethod
    def _supported_schema(cls, value: int) -> int:
        if value != FLOW_SCHEMA:
            raise ValueError(f"unsupported flow schema version {value}: this Lull reads schema {FLOW_SCHEMA}")
        return value


def flow_schema() -> dict:
    """The published JSON Schema of flow files."""
    schema = FlowSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Lull flow"
    return schema

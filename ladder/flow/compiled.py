"""A compiled flow: what `compile_flow` makes of a flow spec, and what it reports.

`Diagnostic` and `FlowCompileError` are the compiler's and the lint's findings (a JSON
path, a message, a severity); `Layer` is the main flow or an overlay with its edges;
`CompiledFlow` is the whole, as the runtime, the lint and the editors read it. Kept
apart from the compiler so that what reads a compiled flow need not import what makes one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..policy import LadderPolicy
from .guards import Guard
from .spec import CommitPolicy, FlowSpec, StageSpec, Timing, ToolSpec

Path = tuple[str | int, ...]
MAIN = "main"  # the layer name of the main flow


@dataclass(frozen=True)
class Diagnostic:
    path: Path
    message: str
    severity: Literal["error", "warning"] = "error"
    # the wording a lint problem is about, when it is reported elsewhere (at the stage
    # that inherits it); the prompt editor shows it beside that text
    about: Path | None = field(default=None, compare=False)

    def where(self) -> str:
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
        return out or "(top level)"


class FlowCompileError(ValueError):
    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if d.severity == "error"]
        super().__init__("; ".join(f"{d.where()}: {d.message}" for d in errors))


@dataclass
class Layer:
    """The main flow or one overlay: its stages and their edges."""

    name: str
    stages: dict[str, StageSpec]
    order: list[str]
    after: dict[str, set[str]]  # stage -> stages that must complete first (after + next)
    escalations: dict[str, str]  # stage -> the stage its escalate signal leads to
    trigger: Guard | None = None
    resume: str = "previous"
    path: Path = ()
    # stages only a fallback route leads to (its goto): they start when it is taken
    gotos: frozenset[str] = frozenset()
    # stage -> stages that may follow it (after, next and escalation edges), built once:
    # rescanning every edge per step made compiling cubic in the number of stages.
    # The edges are fixed once the layer is built.
    _successors: dict[str, set[str]] = field(init=False, repr=False, compare=False)
    # stage -> the stages whose escalation leads to it: read at every step of a call
    escalated_from: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    goto_keys: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        successors: dict[str, set[str]] = {s: set() for s in self.order}
        for stage, preds in self.after.items():
            for pred in preds:
                successors.setdefault(pred, set()).add(stage)
        escalated_from: dict[str, tuple[str, ...]] = {}
        for source, target in self.escalations.items():
            successors.setdefault(source, set()).add(target)
            escalated_from[target] = (*escalated_from.get(target, ()), source)
        self._successors = successors
        self.escalated_from = escalated_from
        self.goto_keys = {sid: f"route_goto:{sid}" for sid in self.order}  # the fact a route's goto sets

    def roots(self) -> list[str]:
        """The stages a call starts at: none comes before them, and neither an
        escalation nor a route leads to them."""
        special = set(self.escalations.values()) | self.gotos
        return [s for s in self.order if not self.after[s] and s not in special]

    def terminals(self) -> list[str]:
        return [s for s in self.order if self.stages[s].terminal]

    def successors(self, stage: str) -> set[str]:
        return set(self._successors.get(stage, ()))


@dataclass
class CompiledFlow:
    spec: FlowSpec
    main: Layer
    overlays: list[Layer]
    ladder: LadderPolicy  # the flow's policy, before per-stage overrides and timing
    tools: dict[str, ToolSpec]
    commit_policies: dict[str, CommitPolicy]
    redact_keys: frozenset[str]
    corrections: dict[str, list[str]]  # slot -> confirmation keys a change withdraws
    route_gotos: dict[str, str]
    warnings: list[Diagnostic] = field(default_factory=list)
    _stage_policies: dict[str, LadderPolicy] = field(default_factory=dict)
    # route id -> what it is for and why (ladder.flow.route_roles.RoleReading)
    route_roles: dict = field(default_factory=dict)
    ladder_defaults: int = 2  # the ladder defaults the flow was read with (compile.LADDER_DEFAULTS)

    def layer(self, name: str) -> Layer:
        return self.main if name == MAIN else next(o for o in self.overlays if o.name == name)

    def stage(self, stage_id: str) -> StageSpec:
        for layer in (self.main, *self.overlays):
            if stage_id in layer.stages:
                return layer.stages[stage_id]
        raise KeyError(stage_id)

    def policy_for(self, stage_id: str, timing: Timing | None) -> LadderPolicy:
        """The ladder policy for a stage's question: flow, stage overrides, then timing."""
        policy = self._stage_policies.get(stage_id, self.ladder)
        if timing is None:
            return policy
        update: dict[str, Any] = {}
        stages = list(policy.stages)
        if timing.reprompt_after_ms is not None:
            stages[0] = stages[0].model_copy(update={"wait_ms": timing.reprompt_after_ms})
        if timing.reprompt is not None and len(stages) > 2:
            stages[1] = stages[1].model_copy(update={"prompt": timing.reprompt})
        if timing.interruptible is False:
            stages = [s.model_copy(update={"interruptible": False}) for s in stages]
        update["stages"] = tuple(stages)
        if timing.filler_after_ms is not None:
            update["filler_after_ms"] = timing.filler_after_ms
        return policy.model_copy(update=update)


__all__ = ["MAIN", "CompiledFlow", "Diagnostic", "FlowCompileError", "Layer", "Path"]

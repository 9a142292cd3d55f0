"""Compile a flow spec: check its cross references and lower it for the runtime.

Errors and warnings are `Diagnostic`s with a JSON path (("stages", 2, "commit",
"tool")), so the loader can point at the line and column of the file. A flow with
errors does not compile; warnings are shown by `lull flow check` and kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from ..policy import LadderPolicy, Route
from .guards import Guard
from .spec import (
    CommitPolicy,
    FlowSpec,
    Overlay,
    RedactPolicy,
    SafetyHandoffPolicy,
    StageSpec,
    Timing,
    ToolSpec,
)

Path = tuple[str | int, ...]
MAIN = "main"  # the layer name of the main flow


@dataclass(frozen=True)
class Diagnostic:
    path: Path
    message: str
    severity: Literal["error", "warning"] = "error"

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

    def roots(self) -> list[str]:
        special = set(self.escalations.values())
        return [s for s in self.order if not self.after[s] and s not in special]

    def terminals(self) -> list[str]:
        return [s for s in self.order if self.stages[s].terminal]

    def successors(self, stage: str) -> set[str]:
        out = {s for s, preds in self.after.items() if stage in preds}
        if stage in self.escalations:
            out.add(self.escalations[stage])
        return out


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


def merge_timing(timings: list[Timing | None]) -> Timing | None:
    """G1: the more cautious setting of each field across the active stages."""
    present = [t for t in timings if t is not None]
    if not present:
        return None

    def smallest(name: str) -> float | None:
        values = [getattr(t, name) for t in present if getattr(t, name) is not None]
        return min(values) if values else None

    def first(name: str) -> Any:
        return next((getattr(t, name) for t in present if getattr(t, name) is not None), None)

    longest = [t.end_of_speech_ms for t in present if t.end_of_speech_ms is not None]
    flags = [t.interruptible for t in present if t.interruptible is not None]
    return Timing(
        reprompt_after_ms=smallest("reprompt_after_ms"),
        reprompt=first("reprompt"),
        filler_after_ms=smallest("filler_after_ms"),
        interruptible=(all(flags) if flags else None),
        end_of_speech_ms=max(longest) if longest else None,
        context_delivery=first("context_delivery"),
    )


def stage_timing(stage: StageSpec) -> Timing | None:
    """A verbatim stage with no timing of its own holds the floor (seed 002)."""
    if stage.timing is None and stage.verbatim is not None:
        return Timing(interruptible=False)
    return stage.timing


# -- compiling ------------------------------------------------------------------


def compile_flow(spec: FlowSpec) -> CompiledFlow:
    diags: list[Diagnostic] = []
    tools = {t.name: t for t in spec.tools}
    _check_unique(spec, diags)
    main = _layer(MAIN, spec.stages, ("stages",), diags)
    overlays = [
        _layer(o.name, o.stages, ("overlays", i, "stages"), diags, o)
        for i, o in enumerate(spec.overlays)
    ]
    safety = _safety_overlay(spec, diags)
    if safety is not None:
        overlays.append(_layer("safety", safety.stages, ("policies",), diags, safety))
    roots = main.roots()
    if len(roots) > 1:
        diags.append(
            Diagnostic(
                ("stages",),
                f"the flow starts at {len(roots)} stages at once ({', '.join(roots)}); "
                "give all but the first an 'after' or make them a 'next'",
                "warning",
            )
        )
    for layer in (main, *overlays):
        _check_stages(spec, layer, tools, diags)
        _check_reachable(layer, spec.routes, diags)
    commit_policies = _check_policies(spec, tools, diags)
    ladder = _ladder_policy(spec.ladder, spec.routes, ("ladder",), diags)
    stage_policies: dict[str, LadderPolicy] = {}
    if ladder is not None:
        _lint_ladder(ladder, ("ladder",), diags)
        for layer in (main, *overlays):
            for sid in layer.order:
                stage = layer.stages[sid]
                if stage.ladder:
                    merged = {**spec.ladder, **stage.ladder}
                    path = (*layer.path, layer.order.index(sid), "ladder")
                    policy = _ladder_policy(merged, spec.routes, path, diags)
                    if policy is not None:
                        stage_policies[sid] = policy
                        _lint_ladder(policy, path, diags)
    route_gotos = {}
    for i, route in enumerate(spec.routes):
        if route.goto is not None:
            if route.goto not in main.stages:
                diags.append(Diagnostic(("routes", i, "goto"), f"route {route.id!r} leads to unknown stage {route.goto!r}"))
            route_gotos[route.id] = route.goto
    for i, slot in enumerate(sorted({s for st in spec.stages for s in st.collect})):
        if slot not in spec.slots:
            where = next(
                ("stages", j, "collect") for j, st in enumerate(spec.stages) if slot in st.collect
            )
            diags.append(Diagnostic(where, f"slot {slot!r} is collected but not declared in 'slots'"))
    errors = [d for d in diags if d.severity == "error"]
    if errors or ladder is None:
        raise FlowCompileError(diags)
    redact = frozenset(k for p in spec.policies if isinstance(p, RedactPolicy) for k in p.keys)
    return CompiledFlow(
        spec=spec,
        main=main,
        overlays=overlays,
        ladder=ladder,
        tools=tools,
        commit_policies=commit_policies,
        redact_keys=redact,
        corrections=_corrections(main),
        route_gotos=route_gotos,
        warnings=[d for d in diags if d.severity == "warning"],
        _stage_policies=stage_policies,
    )


def _check_unique(spec: FlowSpec, diags: list[Diagnostic]) -> None:
    seen: dict[str, Path] = {}
    places = [(("stages", i, "id"), s.id) for i, s in enumerate(spec.stages)]
    places += [
        (("overlays", i, "stages", j, "id"), s.id)
        for i, o in enumerate(spec.overlays)
        for j, s in enumerate(o.stages)
    ]
    for path, sid in places:
        if sid in seen:
            diags.append(Diagnostic(path, f"stage id {sid!r} is already used at {_fmt(seen[sid])}"))
        seen.setdefault(sid, path)


def _layer(name: str, stages, path: Path, diags: list[Diagnostic], overlay: Overlay | None = None) -> Layer:
    by_id = {s.id: s for s in stages}
    order = [s.id for s in stages]
    after: dict[str, set[str]] = {s.id: set() for s in stages}
    escalations: dict[str, str] = {}
    for i, stage in enumerate(stages):
        for ref in stage.after:
            if ref not in by_id:
                diags.append(Diagnostic((*path, i, "after"), f"stage {stage.id!r} comes after unknown stage {ref!r}"))
            else:
                after[stage.id].add(ref)
        if stage.next is not None:
            if stage.next not in by_id:
                diags.append(Diagnostic((*path, i, "next"), f"stage {stage.id!r} leads to unknown stage {stage.next!r}"))
            else:
                after[stage.next].add(stage.id)
            if stage.terminal:
                diags.append(Diagnostic((*path, i, "next"), f"terminal stage {stage.id!r} cannot lead anywhere"))
        if stage.repair is not None and stage.repair.escalate_to is not None:
            target = stage.repair.escalate_to
            if target not in by_id:
                diags.append(
                    Diagnostic((*path, i, "repair", "escalate_to"), f"escalate_to names unknown stage {target!r}")
                )
            else:
                escalations[stage.id] = target
    layer = Layer(name, by_id, order, after, escalations, path=path)
    if overlay is not None:
        layer.trigger = overlay.trigger
        layer.resume = overlay.resume
    if not layer.terminals() and overlay is not None:
        diags.append(Diagnostic(path, f"overlay {name!r} has no terminal stage, so it can never complete"))
    return layer


def _check_stages(spec: FlowSpec, layer: Layer, tools: dict[str, ToolSpec], diags: list[Diagnostic]) -> None:
    for i, sid in enumerate(layer.order):
        stage = layer.stages[sid]
        path = (*layer.path, i)
        for j, tool in enumerate(stage.allow):
            if tool not in tools:
                diags.append(Diagnostic((*path, "allow", j), f"tool {tool!r} is not declared in 'tools'"))
        if stage.commit is not None and stage.commit.tool not in tools:
            diags.append(Diagnostic((*path, "commit", "tool"), f"commit tool {stage.commit.tool!r} is not declared in 'tools'"))
        if stage.call is not None:
            if stage.call.tool not in tools:
                diags.append(Diagnostic((*path, "call", "tool"), f"tool {stage.call.tool!r} is not declared in 'tools'"))
            elif stage.call.tool not in stage.allow:
                diags.append(Diagnostic((*path, "call", "tool"), f"stage {sid!r} calls {stage.call.tool!r} but does not allow it"))
        if stage.reopen is not None:
            for j, target in enumerate(stage.reopen.stages):
                if target not in layer.stages:
                    diags.append(Diagnostic((*path, "reopen", "stages", j), f"reopen names unknown stage {target!r}"))
        if stage.collect and not stage.say:
            diags.append(Diagnostic((*path, "say"), f"stage {sid!r} collects {list(stage.collect)} but never asks (no 'say')"))
        if stage.complete_when is not None:
            for tool in stage.complete_when.tools() - set(tools):
                diags.append(Diagnostic((*path, "complete_when"), f"called_ok names undeclared tool {tool!r}"))


def _check_reachable(layer: Layer, routes: tuple[Route, ...], diags: list[Diagnostic]) -> None:
    reached = set(layer.roots())
    gotos = {r.goto for r in routes if r.goto}
    reached |= gotos & set(layer.stages)
    frontier = list(reached)
    while frontier:
        for nxt in layer.successors(frontier.pop()):
            if nxt not in reached:
                reached.add(nxt)
                frontier.append(nxt)
    for i, sid in enumerate(layer.order):
        if sid not in reached:
            diags.append(Diagnostic((*layer.path, i), f"stage {sid!r} is unreachable: no path leads to it"))


def _check_policies(spec: FlowSpec, tools: dict[str, ToolSpec], diags: list[Diagnostic]) -> dict[str, CommitPolicy]:
    commits: dict[str, CommitPolicy] = {}
    for i, policy in enumerate(spec.policies):
        if isinstance(policy, CommitPolicy):
            if policy.tool not in tools:
                diags.append(Diagnostic(("policies", i, "tool"), f"commit policy names tool {policy.tool!r}, which the flow does not declare"))
            if policy.compensate_with is not None and policy.compensate_with not in tools:
                diags.append(
                    Diagnostic(("policies", i, "compensate_with"), f"compensating tool {policy.compensate_with!r} is not declared")
                )
            commits[policy.tool] = policy
        elif isinstance(policy, SafetyHandoffPolicy):
            for j, intent in enumerate(policy.intents):
                if intent not in spec.intents:
                    diags.append(
                        Diagnostic(("policies", i, "intents", j), f"intent {intent!r} has no example phrases, so it is never recognised", "warning")
                    )
    return commits


def _safety_overlay(spec: FlowSpec, diags: list[Diagnostic]) -> Overlay | None:
    policy = next((p for p in spec.policies if isinstance(p, SafetyHandoffPolicy)), None)
    if policy is None:
        return None
    trigger = Guard(any=tuple(Guard(is_true=f"intent:{i}") for i in policy.intents))
    stage = StageSpec(id="safety_handoff", say=policy.say, terminal=True, timing=Timing(interruptible=False))
    return Overlay(name="safety", trigger=trigger, stages=(stage,), resume="terminate")


def _ladder_policy(data: dict, routes: tuple[Route, ...], path: Path, diags: list[Diagnostic]) -> LadderPolicy | None:
    merged = dict(data)
    if routes:
        merged["routes"] = [r.model_dump() for r in routes]
    try:
        return LadderPolicy.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if p != "__root__")
        message = err["msg"].removeprefix("Value error, ")
        diags.append(Diagnostic((*path, *loc), message))
        return None


def _lint_ladder(policy: LadderPolicy, path: Path, diags: list[Diagnostic]) -> None:
    """A ladder prompt may not promise a route the deployment cannot provide."""
    for i, stage in enumerate(policy.stages):
        for route in policy.routes:
            if route.available:
                continue
            if stage.prompt and route.named_by(stage.prompt):
                diags.append(
                    Diagnostic(
                        (*path, "stages", i, "prompt"),
                        f"stage {stage.name!r} promises route {route.id!r} ({route.label}), which is not available",
                    )
                )
            elif route.id in stage.routes:
                diags.append(
                    Diagnostic(
                        (*path, "stages", i, "routes"),
                        f"stage {stage.name!r} lists unavailable route {route.id!r}; it will not be offered",
                        "warning",
                    )
                )


def _corrections(main: Layer) -> dict[str, list[str]]:
    """G3: a changed slot withdraws the confirmations its downstream stages rely on."""
    out: dict[str, list[str]] = {}
    for sid in main.order:
        stage = main.stages[sid]
        if not stage.collect:
            continue
        after_it = downstream(main, sid)
        keys: set[str] = set()
        for d in after_it:
            ds = main.stages[d]
            if ds.commit is not None:
                keys |= ds.commit.guard.keys()
            keys |= set(ds.collect)  # a downstream confirmation of the old value
        keys -= set(stage.collect)
        upstream = {s for s in main.order if sid in downstream(main, s)}
        keys -= {slot for u in upstream for slot in main.stages[u].collect}
        for slot in stage.collect:
            out[slot] = sorted(keys)
    return out


def downstream(layer: Layer, stage: str) -> set[str]:
    """Every stage reachable after `stage` (after, next and escalation edges)."""
    seen: set[str] = set()
    frontier = [stage]
    while frontier:
        for nxt in layer.successors(frontier.pop()):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    seen.discard(stage)
    return seen


def _fmt(path: Path) -> str:
    return Diagnostic(path, "").where()


__all__ = [
    "MAIN",
    "CompiledFlow",
    "Diagnostic",
    "FlowCompileError",
    "Layer",
    "compile_flow",
    "merge_timing",
    "stage_timing",
]

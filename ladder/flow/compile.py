"""Compile a flow spec: check its cross references and lower it for the runtime.

Errors and warnings are `Diagnostic`s with a JSON path (("stages", 2, "commit",
"tool")), so the loader can point at the line and column of the file. A flow with
errors does not compile; warnings are shown by `lull flow check` and kept.
"""

from __future__ import annotations

import difflib
from itertools import compress
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_core import to_json

from ..policy import (
    ABSENT_FROM_OLD_POLICIES,
    LadderPolicy,
    Route,
    default_routes,
    default_stages,
    route_role,
)
from .compiled import MAIN, CompiledFlow, Diagnostic, FlowCompileError, Layer, Path
from .guards import Guard
from .lint import lint_flow
from .route_roles import read_route_roles, with_roles
from .understanding.shared_intents import slot_kind
from .slot_words import abbreviated, id_in_words
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

    def longest(name: str) -> float | None:
        values = [getattr(t, name) for t in present if getattr(t, name) is not None]
        return max(values) if values else None

    flags = [t.interruptible for t in present if t.interruptible is not None]
    return Timing(
        reprompt_after_ms=smallest("reprompt_after_ms"),
        reprompt=first("reprompt"),
        filler_after_ms=smallest("filler_after_ms"),
        interruptible=(all(flags) if flags else None),
        # waiting for the caller: the longer setting is the more cautious one
        end_of_speech_ms=longest("end_of_speech_ms"),
        complete_value_end_ms=longest("complete_value_end_ms"),
        partial_value_hold_ms=longest("partial_value_hold_ms"),
        context_delivery=first("context_delivery"),
    )


def stage_timing(stage: StageSpec) -> Timing | None:
    """A verbatim stage with no timing of its own holds the floor (seed 002)."""
    if stage.timing is None and stage.verbatim is not None:
        return Timing(interruptible=False)
    return stage.timing


# -- compiling ------------------------------------------------------------------


# Which defaults a flow's ladder takes. 3: routes' roles read from their words as well
# as their shape (ladder.flow.route_roles), wording that fits the kind of question (a
# value to find, a choice to make), closes true after a partial answer. 2: wording that
# names no flow's things (`{slot}`, the flow's own routes), roles from shape alone.
# 1: the defaults before that, which spoke of a reference code. Journals replay under
# the defaults they were recorded with (a header without `ladder_defaults`: 1).
LADDER_DEFAULTS = 3
KNOWN_LADDER_DEFAULTS = (1, 2, 3)
# what version 2 did where version 3 adds wording or behaviour: no partial-answer closes;
# the watchdog reprompted after a route was taken
LADDER_DEFAULTS_V2 = {"partial_slot": None, "partial_close": None, "partial_close_deadline": None,
                      "route_answers_turn": False}
LADDER_DEFAULTS_V1 = {
    "stages": [
        {"name": "quiet_wait", "wait_ms": 8000},
        {"name": "gentle_check", "wait_ms": 10000, "routes": ["repeat"],
         "prompt": "Take your time. Would you like more time, or shall I repeat the question?"},
        {"name": "alternative_route", "wait_ms": 10000, "routes": ["continue_without_code", "repeat"],
         "prompt": "If the code isn't to hand, {routes}."},
        {"name": "safe_close", "wait_ms": 4000, "closes": True,
         "prompt": "I haven't received the reference code, so nothing has been changed. You can call back whenever you have it."},
    ],
    "routes": [
        {"id": "repeat", "label": "repeat the question", "promises": "the question again", "action": "restate",
         "offer": "I can repeat the question"},
        {"id": "continue_without_code", "label": "continue without the code",
         "promises": "carry on without the reference code", "offer": "we can carry on without it"},
        {"id": "transfer", "label": "transfer to a person", "available": False, "handoff": True,
         "promises": "a person joins the call", "offer": "I can transfer you to a person"},
    ],
    "close_deadline": "I'll end the call here, as we've run out of time. "
    "The reference code hasn't been received, so nothing has been changed.",
    "episode_ms": 120000,
    **ABSENT_FROM_OLD_POLICIES,
}


def slot_name(slot_id: str, label: str | None, ladder_defaults: int = LADDER_DEFAULTS) -> str:
    """How the agent speaks of a slot: its label, else its id in words ("prescription
    number"), abbreviations spelled out ("nhs_no": "N H S number")."""
    if label:
        return label
    if ladder_defaults < 3:
        return slot_id.replace("_", " ").replace("-", " ")
    return id_in_words(slot_id)


def _spoken_value(names: list[str]) -> str:
    """What `{slot}` says for a stage collecting `names`: "your prescription number"."""
    phrase = " and ".join(names)
    first = phrase.split(" ", 1)[0].lower()
    return phrase if first in ("the", "your", "a", "an", "this", "that", "my") else f"your {phrase}"


def _default_ladder(spec: FlowSpec, yes_no: bool = False, ladder_defaults: int = LADDER_DEFAULTS,
                    value: str = "find") -> dict:
    """The default ladder's stages and routes for this flow: its alternative route offers
    the flow's own go-on-without routes (and its repeat routes), else only a repeat.
    `value`: what the question asks for (`shared_intents.slot_kind`): a value to find, a
    choice to make (how many, which day) or something the caller knows (a name)."""
    if spec.routes and ladder_defaults >= 3:
        routes = with_roles(spec.routes, read_route_roles(spec))
    else:
        routes = spec.routes or tuple(r for r in default_routes() if r.action == "restate")
    go_on = tuple(r.id for r in routes if route_role(r) == "go_on_without")
    repeat = tuple(r.id for r in routes if route_role(r) == "repeat")
    stages = default_stages(yes_no=yes_no, go_on=() if yes_no else go_on, repeat=repeat,
                            value=value if ladder_defaults >= 3 else "find")
    data = {"stages": [s.model_dump(mode="json", exclude_defaults=True) | {"name": s.name, "wait_ms": s.wait_ms} for s in stages]}
    if not spec.routes:
        data["routes"] = [r.model_dump(mode="json") for r in routes]
    return data


def _questions_kind(spec: FlowSpec) -> str:
    """The kind of value every question that is not a yes/no asks for (`slot_kind`),
    when they agree; else "find"."""
    kinds = {slot_kind(slot) for stage in spec.stages for c in stage.collect
             if (slot := spec.slots.get(c)) is not None and slot.type != "yes_no"}
    return kinds.pop() if len(kinds) == 1 else "find"


def compile_flow(spec: FlowSpec, ladder_defaults: int = LADDER_DEFAULTS) -> CompiledFlow:
    """Check and lower `spec`. `ladder_defaults` 1 replays a journal recorded under the old
    defaults (their wording predates the lint's rule against naming another flow's things)."""
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
    main.gotos = frozenset(r.goto for r in spec.routes if r.goto in main.stages)
    roots = main.roots()
    if len(roots) > 1:
        diags.append(
            Diagnostic(
                ("stages",),
                f"the flow starts at {len(roots)} stages at once ({', '.join(roots)}): they all begin when the "
                f"call does; put {', '.join(repr(r) for r in roots[1:])} in the chain: make each the 'next' of "
                "the stage it follows, with that stage's old 'next' as its own",
                "warning",
            )
        )
    _check_route_destinations(spec, main, diags)
    for layer in (main, *overlays):
        _check_stages(spec, layer, tools, diags)
        in_cycles = _check_cycles(layer, diags)
        _check_reachable(layer, spec.routes, diags, in_cycles)
    _check_can_end(main, diags)
    commit_policies = _check_policies(spec, tools, diags)
    readings = read_route_roles(spec) if ladder_defaults >= 3 else {}
    for i, route in enumerate(spec.routes):
        for other in spec.routes:
            if other is not route and not other.available and route.offer and other.named_by(route.offer):
                diags.append(Diagnostic(
                    ("routes", i, "offer"),
                    f"route {route.id!r}'s offer \u201c{route.offer}\u201d names route {other.id!r}, which is not "
                    f"available, so a reminder that offers {route.id!r} is left out while {other.id!r} is off; "
                    f"reword the offer, or the words that name {other.id!r} (its label, id or 'mentions')", "warning"))
    if ladder_defaults >= 3:
        for slot_id, slot in spec.slots.items():
            if slot.label is None and slot.type != "yes_no" and abbreviated(slot_id):
                diags.append(Diagnostic(
                    ("slots", slot_id),
                    f"slot {slot_id!r} has no 'label', so the agent calls it \u201c{id_in_words(slot_id)}\u201d; "
                    f"give it a \"label\" a caller would say (\"prescription number\")", "warning"))
    for slot_id, slot in spec.slots.items():
        if slot.kind is not None and slot.type == "yes_no":
            diags.append(Diagnostic(
                ("slots", slot_id, "kind"),
                f"slot {slot_id!r} is a yes/no, so its 'kind' ({slot.kind!r}) changes nothing: its ladder speaks "
                "of a yes or a no; remove 'kind' (it is for a value to find, a choice or a name)", "warning"))
    for i, route in enumerate(spec.routes):
        reading = readings.get(route.id)
        if reading is not None and reading.warning:
            diags.append(Diagnostic(("routes", i), reading.warning, "warning"))
    if ladder_defaults == 1:
        flow_ladder = {**LADDER_DEFAULTS_V2, **LADDER_DEFAULTS_V1, **spec.ladder}
    elif ladder_defaults == 2:
        flow_ladder = {**LADDER_DEFAULTS_V2, **_default_ladder(spec, ladder_defaults=2), **spec.ladder}
    else:
        # the flow's own ladder speaks as its questions do when they all ask for one kind
        # of value: it is what the prompts screen shows, and an edit of one of its stages
        # copies the others from it (console.prompts), so they keep their wording
        flow_ladder = {**_default_ladder(spec, value=_questions_kind(spec)), **spec.ladder}
    ladder = _ladder_policy(flow_ladder, spec.routes, ("ladder",), diags)
    stage_policies: dict[str, LadderPolicy] = {}
    if ladder is not None:
        _lint_ladder(ladder, ("ladder",), diags)
        for layer in (main, *overlays):
            for index, sid in enumerate(layer.order):
                stage = layer.stages[sid]
                defaults_apply = bool(stage.collect) and "stages" not in spec.ladder and ladder_defaults != 1
                yes_no = defaults_apply and all(
                    spec.slots[c].type == "yes_no" for c in stage.collect if c in spec.slots)
                # a choice to make (how many, which day) gets wording about choosing, a
                # value the caller knows (a name) wording about being sure of it
                kinds = {slot_kind(spec.slots[c]) for c in stage.collect if c in spec.slots}
                value = kinds.pop() if defaults_apply and not yes_no and ladder_defaults >= 3 and len(kinds) == 1 else "find"
                own = stage.ladder
                if not own and not yes_no and value == "find":
                    continue
                kind = {"yes_no": yes_no, "value": value}
                plain = not yes_no and value == "find"
                base = flow_ladder if plain else {
                    **flow_ladder, **_default_ladder(spec, ladder_defaults=ladder_defaults, **kind)}
                path = (*layer.path, index, "ladder")
                base_policy = ladder if plain else _ladder_policy(base, spec.routes, ("ladder",), diags)
                if base_policy is None:
                    continue
                merged = _stage_ladder(base, own, base_policy, path, diags)
                policy = _ladder_policy(merged, spec.routes, path, diags)
                if policy is not None:
                    stage_policies[sid] = policy
                    if own:
                        _lint_ladder(policy, path, diags)
        # `{slot}`: each collecting stage's ladder speaks of its own value by name,
        # unless its ladder says otherwise
        for layer in (main, *overlays):
            for sid in layer.order:
                stage = layer.stages[sid]
                if not stage.collect or "slot" in stage.ladder or "slot" in spec.ladder:
                    continue
                names = [slot_name(c, spec.slots[c].label if c in spec.slots else None, ladder_defaults)
                         for c in stage.collect]
                policy = stage_policies.get(sid, ladder)
                stage_policies[sid] = policy.model_copy(update={"slot": _spoken_value(names)})
    route_gotos = {}
    for i, route in enumerate(spec.routes):
        if route.goto is not None:
            if route.goto not in main.stages:
                diags.append(Diagnostic(("routes", i, "goto"), f"route {route.id!r} leads to unknown stage {route.goto!r}"))
            route_gotos[route.id] = route.goto
    first_collector: dict[str, int] = {}
    for j, st in enumerate(spec.stages):
        for slot in st.collect:
            first_collector.setdefault(slot, j)
    for slot in sorted(first_collector):
        if slot not in spec.slots:
            where = ("stages", first_collector[slot], "collect")
            diags.append(Diagnostic(where, f"slot {slot!r} is collected but not declared in 'slots'"))
    errors = [d for d in diags if d.severity == "error"]
    if errors or ladder is None:
        raise FlowCompileError(diags)
    redact = frozenset(k for p in spec.policies if isinstance(p, RedactPolicy) for k in p.keys)
    flow = CompiledFlow(
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
        ladder_defaults=ladder_defaults,
        route_roles=readings,
    )
    wording = lint_flow(flow)  # the prompt lint: wording refused like any other error
    if any(d.severity == "error" for d in wording):
        raise FlowCompileError(diags + wording)
    flow.warnings.extend(wording)
    return flow


def _check_route_destinations(spec: FlowSpec, main: Layer, diags: list[Diagnostic]) -> None:
    """A route's destination that also comes after another stage starts when that stage
    completes, whether the caller took the route or not."""
    index = _first_index(main)
    for route in spec.routes:
        target = route.goto
        if target not in index or not main.after[target]:
            continue
        before = sorted(main.after[target], key=index.__getitem__)
        stage = main.stages[target]
        where = ("stages", index[target], "after") if stage.after else ("stages", index[before[0]], "next")
        diags.append(
            Diagnostic(
                where,
                f"stage {target!r} is where route {route.id!r} leads, and it also comes after "
                f"{', '.join(repr(b) for b in before)}, so it starts whenever that completes, route taken or not; "
                f"remove the {'after' if stage.after else 'next'} that leads to it (a route's destination needs none)",
                "warning",
            )
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


def _check_reachable(
    layer: Layer, routes: tuple[Route, ...], diags: list[Diagnostic], in_cycles: set[str] = frozenset()
) -> None:
    reached = set(layer.roots())
    gotos = {r.goto for r in routes if r.goto}
    reached |= gotos & set(layer.stages)
    frontier = list(reached)
    while frontier:
        for nxt in layer._successors.get(frontier.pop(), ()):
            if nxt not in reached:
                reached.add(nxt)
                frontier.append(nxt)
    for i, sid in enumerate(layer.order):
        # a stage in a cycle is already reported as such: the cycle is why nothing reaches it
        if sid not in reached and sid not in in_cycles:
            diags.append(Diagnostic((*layer.path, i), f"stage {sid!r} is unreachable: no path leads to it"))


def _check_cycles(layer: Layer, diags: list[Diagnostic]) -> set[str]:
    """A cycle of after/next edges: each stage waits for another, so none ever starts.

    Returns the stages in cycles. Escalation edges are not part of this graph: an
    escalation back to an earlier stage is a choice the runtime makes, not a wait.
    """
    index = _first_index(layer)
    follows: dict[str, list[str]] = {s: [] for s in index}
    for stage in sorted(layer.after, key=index.__getitem__):
        for pred in layer.after[stage]:
            follows[pred].append(stage)
    for targets in follows.values():
        targets.sort(key=index.__getitem__)
    members: set[str] = set()
    for component in _strongly_connected(list(index), follows):
        start = min(component, key=index.__getitem__)
        if len(component) == 1 and start not in layer.after[start]:
            continue
        members |= set(component)
        cycle = _cycle_through(start, set(component), follows)
        source, target = cycle[0], cycle[1]
        if layer.stages[source].next == target:
            path = (*layer.path, index[source], "next")
        else:
            path = (*layer.path, index[target], "after", layer.stages[target].after.index(source))
        if len(cycle) == 2:
            message = f"stage {start!r} comes after itself, so it can never start and the call cannot end"
        else:
            shown = [repr(s) for s in cycle]
            if len(shown) > 8:
                shown = [*shown[:4], "...", *shown[-2:]]
            message = (
                f"stages {' -> '.join(shown)} form a cycle ({len(cycle) - 1} stages): each waits for "
                "the one before it to complete, so none can start and the call cannot end"
            )
        diags.append(Diagnostic(path, message))
    return members


def _check_can_end(main: Layer, diags: list[Diagnostic]) -> None:
    """Every call must be able to end: a terminal stage, and one after every stage.

    In the main layer a completed stage with nothing after it leaves the call idle
    forever. Only after/next edges count: an escalation is taken when repair gives
    up, not when the stage completes. (Cycles are reported by _check_cycles; with
    them refused the graph is acyclic, so a stage from which no terminal stage can be
    reached always leads to a stage with nothing after it, and that is the one named.)
    """
    if not main.terminals():
        diags.append(
            Diagnostic(
                main.path,
                'the flow has no terminal stage, so a call can never end; mark the stage that ends the call "terminal": true',
            )
        )
        return
    has_follower = {pred for preds in main.after.values() for pred in preds}
    for sid, i in _first_index(main).items():
        if not main.stages[sid].terminal and sid not in has_follower:
            diags.append(
                Diagnostic(
                    (*main.path, i),
                    f"stage {sid!r} is not terminal and nothing comes after it, so a call that completes it "
                    'waits forever; give it a "next" or mark it "terminal": true',
                )
            )


def _first_index(layer: Layer) -> dict[str, int]:
    """Stage id -> index of its first definition in the layer (duplicates are reported elsewhere)."""
    index: dict[str, int] = {}
    for i, sid in enumerate(layer.order):
        index.setdefault(sid, i)
    return index


def _strongly_connected(nodes: list[str], successors: dict[str, Any]) -> list[list[str]]:
    """Tarjan's strongly connected components, without recursion; sinks come first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(successors.get(root, ())))]
        while work:
            node, pending = work[-1]
            for nxt in pending:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(successors.get(nxt, ()))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def _cycle_through(start: str, members: set[str], follows: dict[str, list[str]]) -> list[str]:
    """The shortest cycle from `start` back to it inside one component: [start, ..., start]."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        next_frontier = []
        for node in frontier:
            for nxt in follows[node]:
                if nxt not in members:
                    continue
                if nxt == start:
                    cycle = [start]
                    while node != start:
                        cycle.append(node)
                        node = came_from[node]
                    return [start, *reversed(cycle[1:]), start]
                if nxt not in came_from:
                    came_from[nxt] = node
                    next_frontier.append(nxt)
        frontier = next_frontier
    return [start, start]  # not reached: every member of a component lies on a cycle


def _check_policies(spec: FlowSpec, tools: dict[str, ToolSpec], diags: list[Diagnostic]) -> dict[str, CommitPolicy]:
    commits: dict[str, CommitPolicy] = {}
    for i, policy in enumerate(spec.policies):
        if isinstance(policy, RedactPolicy):
            for j, key in enumerate(policy.keys):
                if key not in spec.slots:
                    # a misspelt key would leave the real slot's value in every journal
                    diags.append(Diagnostic(("policies", i, "keys", j), f"redact key {key!r} names no slot; {_slot_hint(key, spec)}"))
        elif isinstance(policy, CommitPolicy):
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
                        Diagnostic(("policies", i, "intents", j), f"intent {intent!r} has no example phrases, so it is never recognised; "
                                   f"give it some under \"intents\" (\"{intent}\": [\"...\"])", "warning")
                    )
    return commits


def _slot_hint(key: str, spec: FlowSpec) -> str:
    close = difflib.get_close_matches(key, list(spec.slots), n=1)
    if close:
        return f"did you mean {close[0]!r}?"
    if spec.slots:
        return "declared slots: " + ", ".join(sorted(spec.slots))
    return "the flow declares no slots"


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
        # strictly, as JSON: a ladder says true, not "yes", and 8000, not "8000"
        return LadderPolicy.model_validate_json(to_json(merged), strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if p != "__root__")
        message = err["msg"].removeprefix("Value error, ")
        diags.append(Diagnostic((*path, *loc), message))
        return None


def _stage_ladder(flow_ladder: dict, own: dict, base: LadderPolicy, path: Path, diags: list[Diagnostic]) -> dict:
    """A stage's ladder document: the flow's, with the stage's overrides.

    Besides any LadderPolicy field, a stage's ladder may give `prompts`: wording for
    this question by ladder stage name, a string or {"prompt", "routes", "offers"},
    laid over the flow's stages (their waits stay the flow's). A name the flow's
    ladder does not have is a warning: that wording is never used.
    """
    merged = {**flow_ladder, **own}
    prompts = merged.pop("prompts", None)
    if prompts is None:
        return merged
    if not isinstance(prompts, dict):
        diags.append(Diagnostic((*path, "prompts"), "expected an object: ladder stage name -> wording"))
        return merged
    stages = merged.get("stages")
    if not isinstance(stages, list):
        stages = [s.model_dump(mode="json") for s in base.stages]
    stages = [dict(s) if isinstance(s, dict) else s for s in stages]
    by_name = {s.get("name"): s for s in stages if isinstance(s, dict)}
    for name, wording in prompts.items():
        target = by_name.get(name)
        if target is None:
            diags.append(
                Diagnostic(
                    (*path, "prompts", name),
                    f"the ladder has no stage {name!r}, so this wording is never spoken; name one of its stages: {', '.join(repr(n) for n in by_name)}",
                    "warning",
                )
            )
            continue
        if isinstance(wording, dict):
            target.update(wording)
            if "routes" in wording and "offers" not in wording:
                target["offers"] = {}
        else:
            target["prompt"] = wording
    merged["stages"] = stages
    return merged


def _lint_ladder(policy: LadderPolicy, path: Path, diags: list[Diagnostic]) -> None:
    """A stage listing an unavailable route (its wording is lint.py's)."""
    for i, stage in enumerate(policy.stages):
        for route in policy.routes:
            if route.available:
                continue
            if stage.prompt and route.named_by(stage.prompt):
                continue  # an error of the prompt lint
            elif route.id in stage.routes:
                diags.append(
                    Diagnostic(
                        (*path, "stages", i, "routes"),
                        f"stage {stage.name!r} lists unavailable route {route.id!r}, so it is not offered; switch it on "
                        "(\"available\": true) if the call can take it, or leave it out of the stage's routes",
                        "warning",
                    )
                )


def _corrections(main: Layer) -> dict[str, list[str]]:
    """G3: a changed slot withdraws the confirmations its downstream stages rely on.

    For a stage that collects: the keys its downstream stages collect or commit on,
    less its own slots and the slots collected upstream of it. Computed for all stages
    at once over the graph's strongly connected components, with key sets as integer
    bitsets, so a large flow compiles in about linear time.
    """
    stages = main.stages
    ids = list(_first_index(main))
    keys_of = {sid: _stage_keys(stages[sid]) for sid in ids}
    names = sorted(set().union(*keys_of.values())) if ids else []
    bit = {name: 1 << i for i, name in enumerate(names)}  # sorted bits decode sorted

    def bits(keys) -> int:
        out = 0
        for key in keys:
            out |= bit[key]
        return out

    key_bits = {sid: bits(keys_of[sid]) for sid in ids}
    collect_bits = {sid: bits(stages[sid].collect) for sid in ids}
    successors = main._successors
    predecessors: dict[str, set[str]] = {sid: set() for sid in ids}
    for sid in ids:
        for nxt in successors.get(sid, ()):
            predecessors[nxt].add(sid)
    components = _strongly_connected(ids, successors)  # sinks first
    component_of = {sid: c for c, members in enumerate(components) for sid in members}
    own_keys = [_union(key_bits[m] for m in members) for members in components]
    own_collect = [_union(collect_bits[m] for m in members) for members in components]
    below = [0] * len(components)  # keys of every stage strictly downstream of the component
    for c, members in enumerate(components):
        for m in members:
            for nxt in successors.get(m, ()):
                d = component_of[nxt]
                if d != c:
                    below[c] |= own_keys[d] | below[d]
    above = [0] * len(components)  # slots collected strictly upstream of the component
    for c in range(len(components) - 1, -1, -1):
        for m in components[c]:
            for prev in predecessors[m]:
                u = component_of[prev]
                if u != c:
                    above[c] |= own_collect[u] | above[u]
    out: dict[str, list[str]] = {}
    for sid in main.order:
        stage = stages[sid]
        if not stage.collect:
            continue
        c = component_of[sid]
        down, up = below[c], above[c]
        if len(components[c]) > 1:  # in a cycle the other members are both up- and downstream
            down |= _union(key_bits[m] for m in components[c] if m != sid)
            up |= _union(collect_bits[m] for m in components[c] if m != sid)
        keys = _decode(down & ~collect_bits[sid] & ~up, names)
        for slot in stage.collect:
            out[slot] = list(keys)  # a list of its own per slot, as before
    return out


def _stage_keys(stage: StageSpec) -> set[str]:
    """What a correction upstream withdraws from this stage: its commit guard's keys and
    its own slots (a downstream confirmation of the old value)."""
    keys = set(stage.collect)
    if stage.commit is not None:
        keys |= stage.commit.guard.keys()
    return keys


def _union(values) -> int:
    out = 0
    for value in values:
        out |= value
    return out


_BIT_FLAGS = bytes.maketrans(b"01", b"\x00\x01")


def _decode(bits: int, names: list[str]) -> list[str]:
    """The names whose bits are set, in bit order (itertools.compress at C speed)."""
    flags = bin(bits)[:1:-1].encode().translate(_BIT_FLAGS)  # flags[i] is bit i
    return list(compress(names, flags))


def downstream(layer: Layer, stage: str) -> set[str]:
    """Every stage reachable after `stage` (after, next and escalation edges)."""
    seen: set[str] = set()
    frontier = [stage]
    while frontier:
        for nxt in layer._successors.get(frontier.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    seen.discard(stage)
    return seen


def _fmt(path: Path) -> str:
    return Diagnostic(path, "").where()


# -- a large flow for benchmarks and tests ---------------------------------------------


def synthetic_flow(n_stages: int, shape: Literal["chain", "fanout"] = "chain") -> dict:
    """A valid flow document with `n_stages` stages, for measuring growth.

    chain: start, then questions one after the other (each collects its own digits
    slot), then finish. fanout: start, then every question at once, all joining
    into finish. Every question escalates to a give_up stage; finish and give_up are
    terminal. The document is a plain dict, as json.load would give it.
    """
    if shape not in ("chain", "fanout"):
        raise ValueError(f"shape must be 'chain' or 'fanout', not {shape!r}")
    if n_stages < 4:
        raise ValueError(f"a synthetic flow needs at least 4 stages, not {n_stages}")
    questions = [f"q{i:05d}" for i in range(n_stages - 3)]
    slots = [f"slot_{i:05d}" for i in range(n_stages - 3)]
    stages: list[dict] = [{"id": "start", "say": "Hello."}]
    if shape == "chain":
        stages[0]["next"] = questions[0]
    for i, (sid, slot) in enumerate(zip(questions, slots)):
        question = {
            "id": sid,
            "say": f"What is number {i}?",
            "collect": [slot],
            "next": questions[i + 1] if shape == "chain" and i + 1 < len(questions) else "finish",
            "repair": {"escalate_to": "give_up"},
        }
        if shape == "fanout":
            question["after"] = ["start"]
        stages.append(question)
    stages.append({"id": "finish", "say": "Thank you. Goodbye.", "terminal": True})
    stages.append({"id": "give_up", "say": "Let's stop here. Goodbye.", "terminal": True})
    return {
        "schema": 1,
        "name": f"synthetic_{shape}_{n_stages}",
        "title": f"Synthetic {shape} of {n_stages} stages",
        "stages": stages,
        "slots": {slot: {"type": "digits", "min_length": 1, "max_length": 8} for slot in slots},
    }


__all__ = [
    "MAIN",
    "CompiledFlow",
    "Diagnostic",
    "FlowCompileError",
    "Layer",
    "compile_flow",
    "downstream",
    "merge_timing",
    "stage_timing",
    "synthetic_flow",
]

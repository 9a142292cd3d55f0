"""Large flows compile, and the compiler's graph walks give what the plain definitions give.

No timings here (`lull bench growth` measures them): a 2000-stage flow compiling at
all within the test run is the regression check, since the compiler used to take
minutes at a few hundred stages.
"""

import random

import pytest

from ladder.flow.compile import Layer, compile_flow, downstream, synthetic_flow
from ladder.flow.spec import FlowSpec
from sessions.flowfiles import check_data


def compiled(document: dict):
    return compile_flow(FlowSpec.model_validate(document))


def test_a_2000_stage_chain_compiles_with_the_right_downstream_sets():
    flow = compiled(synthetic_flow(2000, "chain"))
    main = flow.main
    questions = [s for s in main.order if s.startswith("q")]
    assert len(main.order) == 2000 and len(questions) == 1997
    assert main.roots() == ["start"] and main.terminals() == ["finish", "give_up"]
    assert downstream(main, "start") == set(main.order) - {"start"}
    assert downstream(main, questions[1000]) == {*questions[1001:], "finish", "give_up"}
    assert downstream(main, "finish") == set()
    assert main.successors(questions[5]) == {questions[6], "give_up"}
    # G3: a changed answer withdraws every answer collected after it, and only those
    slots = [f"slot_{i:05d}" for i in range(1997)]
    assert flow.corrections[slots[0]] == slots[1:]
    assert flow.corrections[slots[1000]] == slots[1001:]
    assert flow.corrections[slots[-1]] == []


def test_a_2000_stage_fan_out_compiles_with_the_right_downstream_sets():
    flow = compiled(synthetic_flow(2000, "fanout"))
    main = flow.main
    questions = [s for s in main.order if s.startswith("q")]
    assert downstream(main, "start") == set(main.order) - {"start"}
    assert all(downstream(main, q) == {"finish", "give_up"} for q in questions[::97])
    assert main.after["finish"] == set(questions)
    assert all(keys == [] for keys in flow.corrections.values())  # siblings do not confirm each other


def test_the_synthetic_flow_is_a_valid_flow_document():
    for shape in ("chain", "fanout"):
        report = check_data(synthetic_flow(250, shape), "synthetic")
        assert report.flow is not None and report.problems == [], report.problems
    with pytest.raises(ValueError, match="shape"):
        synthetic_flow(10, "ring")


# -- the fast walks agree with the definitions -------------------------------------------


def naive_successors(layer: Layer, stage: str) -> set[str]:
    out = {s for s, preds in layer.after.items() if stage in preds}
    if stage in layer.escalations:
        out.add(layer.escalations[stage])
    return out


def naive_downstream(layer: Layer, stage: str) -> set[str]:
    seen: set[str] = set()
    frontier = [stage]
    while frontier:
        for nxt in naive_successors(layer, frontier.pop()):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    seen.discard(stage)
    return seen


def naive_corrections(main: Layer) -> dict[str, list[str]]:
    """G3 as first written: a stage's downstream keys, less its own and upstream slots."""
    out: dict[str, list[str]] = {}
    for sid in main.order:
        stage = main.stages[sid]
        if not stage.collect:
            continue
        keys: set[str] = set()
        for d in naive_downstream(main, sid):
            ds = main.stages[d]
            if ds.commit is not None:
                keys |= ds.commit.guard.keys()
            keys |= set(ds.collect)
        keys -= set(stage.collect)
        upstream = {s for s in main.order if sid in naive_downstream(main, s)}
        keys -= {slot for u in upstream for slot in main.stages[u].collect}
        for slot in stage.collect:
            out[slot] = sorted(keys)
    return out


def random_flow(seed: int) -> dict:
    """A random acyclic flow whose escalations may lead back upstream (cycles through repair)."""
    rng = random.Random(seed)
    ids = [f"s{i}" for i in range(rng.randint(3, 30))]
    stages = []
    for i, sid in enumerate(ids):
        stage: dict = {"id": sid, "say": "Go on."}
        if i:
            stage["after"] = sorted(set(rng.sample(ids[:i], rng.randint(1, min(3, i)))))
        if rng.random() < 0.6:
            stage["collect"] = sorted({f"k{rng.randint(0, 9)}" for _ in range(rng.randint(1, 2))})
        if i and rng.random() < 0.35:
            stage["repair"] = {"escalate_to": rng.choice(ids[1:])}
        if rng.random() < 0.3:
            stage["allow"] = ["charge"]
            stage["commit"] = {"tool": "charge", "guard": {"all": [{"is_true": f"k{rng.randint(0, 9)}"}, {"present": f"fact{rng.randint(0, 3)}"}]}}
        stages.append(stage)
    followed = {p for s in stages for p in s.get("after", [])}
    for stage in stages:
        if stage["id"] not in followed:
            stage["terminal"] = True
    return {"name": "random", "stages": stages, "tools": [{"name": "charge"}],
            "slots": {f"k{i}": {"type": "text"} for i in range(10)}}


@pytest.mark.parametrize("seed", range(60))
def test_precomputed_walks_agree_with_the_definitions(seed):
    flow = compiled(random_flow(seed))
    main = flow.main
    for sid in main.order:
        assert main.successors(sid) == naive_successors(main, sid)
        assert downstream(main, sid) == naive_downstream(main, sid)
    assert flow.corrections == naive_corrections(main)

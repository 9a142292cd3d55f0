"""The core's speed work changes nothing it decides.

`ladder.frozen.fast_init` builds events and effects without the dataclass's own
__init__, the controller writes its hottest records positionally and memoizes
compositions across controllers, and replay checks a record's fields with one
generated function. Each is checked here against what it replaces.
"""

import dataclasses
import hashlib
import json
import random

import pytest

from ladder import (
    Controller,
    LadderPolicy,
    RequestPrompt,
    TurnStarted,
)
from ladder.effects import EpisodeEnded, Trace
from ladder.events import EVENT_TYPES, AgentResponded, Hangup, TurnInterpreted
from ladder.frozen import fast_init
from sessions.bench import _drive_core, core_schedule
from sessions.replay import EFFECT_TYPES, _field_rules, _fields_fit, _fields_problem

# Every effect and snapshot of the bench's seeded schedule (5,000 events, seed 1),
# hashed. Computed with the core as it was before the speed work (and the same after
# it): a change here is a change in what the core decides or records. If you change
# the core's behaviour on purpose, recompute it and say why in the commit.
SCHEDULE_DIGEST = "6ba2100e0353f7572c626f6d21adb68cc7d901e3197c92cb32254dd3719180e3"


def _schedule_digest(events: int = 5000, seed: int = 1) -> str:
    digest = hashlib.sha256()

    def observe(core, effects):
        for effect in effects:
            digest.update(json.dumps(effect.to_dict(), sort_keys=True).encode())
        digest.update(json.dumps(core.snapshot(), sort_keys=True).encode())

    _drive_core(core_schedule(events, seed), observe)
    return digest.hexdigest()


def test_the_core_decides_and_records_exactly_what_it_did_before_the_speed_work():
    assert _schedule_digest() == SCHEDULE_DIGEST


# -- fast_init -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Sample:
    name: str
    count: int = 3
    tags: list = dataclasses.field(default_factory=list)


def test_fast_init_keeps_the_dataclass_signature_defaults_and_immutability():
    slow = _Sample("a", 5, ["x"])
    fast_init(_Sample)
    assert _Sample("a", 5, ["x"]) == slow
    assert hash(TurnStarted("t1", 1)) == hash(TurnStarted("t1", 1))
    assert _Sample(name="b").count == 3
    first, second = _Sample("c"), _Sample("c")
    assert first.tags == [] and first.tags is not second.tags  # a default factory runs each time
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.name = "d"  # type: ignore[misc]
    with pytest.raises(TypeError):
        _Sample()  # type: ignore[call-arg]
    assert [f.name for f in dataclasses.fields(first)] == list(vars(first))  # fields in their order


def test_every_event_and_effect_built_fast_equals_one_built_field_by_field():
    samples = {
        TurnStarted: ("t1", 1),
        TurnInterpreted: ("t1", 1, "answer", "4821"),
        Hangup: (),
        AgentResponded: ("t1",),
        RequestPrompt: (3, "reminder", "Still there?", "gentle_check", "q", False, ("again",), 1200.0),
        EpisodeEnded: ("q", 1, "answered", "caller_answer"),
    }
    for cls, args in samples.items():
        built = cls(*args)
        by_field = object.__new__(cls)
        for f, value in zip(dataclasses.fields(cls), args + tuple(
            f.default for f in dataclasses.fields(cls)[len(args):]
        )):
            object.__setattr__(by_field, f.name, value)
        assert built == by_field and repr(built) == repr(by_field)
    assert all(cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__" for cls in EVENT_TYPES.values())


# -- compositions memoized across controllers -------------------------------------------


def test_a_composition_is_never_served_for_a_policy_whose_routes_differ():
    policy = LadderPolicy()
    stage = next(s for s in policy.stages if s.routes and s.prompt)
    route = stage.routes[0]
    on = Controller(policy)
    off = Controller(policy.with_route_availability(route, False))
    assert on._compose(stage)[0] == policy.compose(stage)[0]
    assert off._compose(off.policy.stages[policy.stages.index(stage)])[2] == (route,)
    assert on._compose(stage)[1] != off._compose(off.policy.stages[policy.stages.index(stage)])[1]


# -- replay's generated field check ---------------------------------------------------------


def _values(rng: random.Random):
    return rng.choice([None, True, False, 0, 7, -2, 1.5, "", "x", "answer", "window", [], ["a"], [1], {}, {"a": 1}])


@pytest.mark.parametrize("cls", [Trace, *EFFECT_TYPES.values()], ids=lambda c: c.__name__)
def test_the_generated_field_check_agrees_with_the_field_by_field_walk(cls):
    rng = random.Random(cls.__name__)
    names = [rule[0] for rule in _field_rules(cls)]
    for _ in range(400):
        record = {name: _values(rng) for name in names if rng.random() < 0.85}
        if rng.random() < 0.3:
            record["extra"] = 1  # a field the class does not have: allowed here
        walked = _walk(record, cls)
        assert _fields_fit(cls)(record) is (walked is None), (record, walked)
        problem = _fields_problem(record, cls, "", strict=False)
        assert (problem is None) is (walked is None)
        assert walked is None or problem.startswith(f"field '{walked}' ")


def _walk(data: dict, cls) -> str | None:
    """The field-by-field walk alone, as replay ran it before the generated check."""
    for name, _hint, fits, required in _field_rules(cls):
        if name not in data:
            if required:
                return name
        elif not fits(data[name]):
            return name
    return None

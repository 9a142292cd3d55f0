"""Lull's shared caller intents under a flow's own names, and `lull bench intents FLOW
--phrasings FILE`: designers measure their own flows on how their callers talk."""

import json
import re
from pathlib import Path

import pytest
from test_cli import lull

from ladder.flow.understanding.shared_intents import LADDER_INTENTS, ROUTE_ROLES, flow_intents, route_for
from ladder.policy import Route
from sessions.flowfiles import load_flow
from voices.understanding.intent_bench import CALL_LIKE_OFF_TOPIC, HELD_OUT_SETS, UNRELATED
from voices.understanding.normalise import normalise
from voices.understanding.phrasing_bench import PhrasingFileError, load_phrasings

FLOWS = Path(__file__).parent / "flows"
OWN = ["pharmacy_refill", "meter_reading", "card_activation"]


def test_a_flow_learns_the_shared_phrases_under_its_own_route_ids_and_its_own_examples_first():
    flow = load_flow(str(FLOWS / "pharmacy_refill.json"))
    intents = flow_intents(flow.spec)
    assert set(intents) == {"wait_request", "ready", "repeat_request", "backchannel", "route:no_rx", "route:pharmacist"}
    assert intents["route:no_rx"][:8] == flow.spec.intents["route:no_rx"]  # its own first
    assert set(ROUTE_ROLES["go_on_without"]) <= set(intents["route:no_rx"])
    assert set(ROUTE_ROLES["person"]) <= set(intents["route:pharmacist"])
    assert intents.own == frozenset(p for ps in flow.spec.intents.values() for p in ps)
    assert all(len(set(v)) == len(v) for v in intents.values())  # each phrase once


def test_a_flow_without_a_route_of_a_role_gets_none_of_its_phrases():
    spec = load_flow(str(FLOWS / "pharmacy_refill.json")).spec
    spec = spec.model_copy(update={"routes": tuple(r for r in spec.routes if r.id == "repeat"), "intents": {}})
    assert set(flow_intents(spec)) == set(LADDER_INTENTS)


def test_a_route_that_says_its_role_is_chosen_over_one_whose_shape_suggests_it():
    routes = (Route(id="photo", label="send a photo", goto="close_photo"),
              Route(id="estimate", label="estimate it", goto="close_estimate", role="go_on_without"))
    assert route_for("go_on_without", routes).id == "estimate"
    assert route_for("go_on_without", routes[:1]).id == "photo"
    other = (Route(id="lost", label="report it lost", goto="close_lost", role="other"),)
    assert route_for("go_on_without", other) is None


def test_no_bench_phrasing_is_in_the_shared_set_so_every_bench_stays_held_out():
    said = lambda t: normalise(t, spellings=False)  # noqa: E731 - the benches' own reading
    bench = [p for s in HELD_OUT_SETS.values() for ps in s.values() for p in ps] + list(UNRELATED + CALL_LIKE_OFF_TOPIC)
    for name in OWN:
        bench += [p for ps in json.loads((FLOWS / "phrasings" / f"{name}.json").read_text()).values() for p in ps]
    held_out = {said(p) for p in bench} | {" ".join(re.findall(r"[a-z0-9']+", p.lower())) for p in bench}
    shared = [p for phrases in (*LADDER_INTENTS.values(), *ROUTE_ROLES.values()) for p in phrases]
    assert len(shared) > 400
    assert [p for p in shared if said(p) in held_out] == []


def test_a_phrasing_file_is_checked_against_the_flows_intents(tmp_path):
    intents = flow_intents(load_flow(str(FLOWS / "card_activation.json")).spec)
    path = tmp_path / "p.json"
    for text, says in [
        ('{"wait": ["hold on"]}', "intent 'wait' is not one the flow's matcher knows; expected one of backchannel"),
        ('{"ready": []}', "ready: expected a non-empty list of phrases"),
        ('{"ready": ["ok", 3]}', "ready: expected a non-empty list"),
        ("[1, 2]", "expected an object of intent -> phrases"),
        ('{"ready": ["ok"', "line 1 column 16: invalid JSON"),
    ]:
        path.write_text(text)
        with pytest.raises(PhrasingFileError, match=re.escape(says)):
            load_phrasings(path, intents)
    with pytest.raises(PhrasingFileError, match="cannot read"):
        load_phrasings(tmp_path / "missing.json", intents)
    path.write_text('{"route:lost_card": ["my card never came"], "none": ["what time is it"]}')
    assert load_phrasings(path, intents) == {"route:lost_card": ["my card never came"], "none": ["what time is it"]}


def test_bench_intents_measures_any_flow_against_any_phrasing_file_as_json(tmp_path):
    phrasings = tmp_path / "mine.json"
    phrasings.write_text(json.dumps({
        "wait_request": ["hold on a tick I'm getting the card"], "route:lost_card": ["my card never came in the post"],
        "none": ["what's the weather doing"],
    }))
    result = lull("bench", "intents", str(FLOWS / "card_activation.json"), "--phrasings", str(phrasings), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data["intents"]) == {"wait_request", "route:lost_card"}
    assert all(set(row) == {"right", "total"} and row["total"] == 1 for row in data["intents"].values())
    assert set(data["off_topic"]) == {"accepted", "total"} and data["off_topic"]["total"] == 1
    bad = lull("bench", "intents", str(FLOWS / "card_activation.json"), "--phrasings", str(tmp_path / "nope.json"))
    assert bad.returncode == 2 and "cannot read" in bad.stderr and "Traceback" not in bad.stderr


# Measured once the constants were chosen (voices.understanding.intent_classifier): pharmacy_refill
# 66/72 (weakest ready 10/12, off-topic 1/12), meter_reading 76/84 (ready 9/12, 0/12),
# card_activation 76/84 (route:lost_card 9/12, 2/12); each learning its own 8 examples an
# intent and Lull's shared phrases. With its own examples alone: 43/72, 57/84, 56/84.
@pytest.mark.parametrize("name", OWN)
def test_a_designers_flow_with_8_examples_an_intent_meets_the_targets_on_its_held_out_phrasings(name):
    from voices.understanding.phrasing_bench import run_phrasing_bench

    result = run_phrasing_bench(str(FLOWS / f"{name}.json"), FLOWS / "phrasings" / f"{name}.json")
    print(f"\n{name}: {result['pooled']} weakest {result['weakest']} off-topic {result['off_topic']} misses {result['misses']}")
    assert result["learned_word_for_word"] == []
    assert result["pooled"]["right"] >= 0.9 * result["pooled"]["total"]
    assert all(r["right"] >= 0.75 * r["total"] for r in result["intents"].values()), result["intents"]
    assert result["off_topic"]["accepted"] <= 2, result["off_topic_accepted"]
    assert all(len(json.loads((FLOWS / f"{name}.json").read_text())["intents"][k]) <= 8 for k in result["intents"])


def test_the_readme_figures_for_the_flow_written_here_are_the_benchs():
    # gym_freeze: a flow of the team's, its sealed set a helper's; what whisper heard of
    # each phrasing is kept (phrasings/heard/), so this reads and hears nothing
    from voices.line.pstn import LineSettings
    from voices.understanding.heard_phrasings import heard_bench

    result = heard_bench(str(FLOWS / "gym_freeze.json"), phrasings=FLOWS / "phrasings" / "gym_freeze.json",
                         spoken=True, line=LineSettings(), cache_path=FLOWS / "phrasings" / "heard" / "gym_freeze.json",
                         cached_only=True)
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = text.split("<!-- gym_freeze -->", 1)[1].split("<!-- /gym_freeze -->", 1)[0]
    rows = {cells[0]: cells[1:] for line in block.strip().splitlines()[2:]
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}
    for name, condition in (("as text", "text"), ("spoken", "spoken"), ("down the line", "line")):
        c = result["conditions"][condition]
        right, total = c["pooled"]["right"], c["pooled"]["total"]
        assert rows[name] == [f"{right}/{total} ({100 * right / total:.0f} %)",
                              f"{c['off_topic']['accepted']}/{c['off_topic']['total']}"], name

"""The ladder panel shows each stage's words as the agent would say them now."""

from ladder import Controller
from ladder.policy import LadderPolicy, Route, Stage
from console.widgets.ladder_panel import ladder_text


def policy(repeat_available=True):
    return LadderPolicy(
        stages=(
            Stage(name="wait", wait_ms=100),
            Stage(name="offer", wait_ms=100, prompt="Take your time. {routes}.", routes=("repeat", "continue_without_code")),
            Stage(name="only_repeat", wait_ms=100, prompt="{routes}.", routes=("repeat",)),
            Stage(name="close", wait_ms=100, prompt="Goodbye.", closes=True),
        ),
        routes=(
            Route(id="repeat", label="Repeat", offer="I can repeat the question", available=repeat_available),
            Route(id="continue_without_code", label="Continue", offer="we can carry on without it"),
        ),
    )


def test_routes_are_shown_composed_and_follow_a_switched_off_route():
    snapshot = Controller(policy()).snapshot()
    shown = ladder_text(snapshot, policy(), 0.0).plain
    assert "{routes}" not in shown
    assert "I can repeat the question" in shown or "I can repeat the…" in shown
    off = ladder_text(snapshot, policy(repeat_available=False), 0.0).plain
    assert "repeat the question" not in off and "we can carry on" in off.lower()
    assert "3. only_repeat (0.1s) (says nothing now)" in off

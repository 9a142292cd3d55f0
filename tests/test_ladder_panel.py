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


def test_stage_words_use_the_width_and_never_wrap():
    from rich.cells import cell_len

    from console.widgets.ladder_panel import QUOTE_INDENT, stage_lines

    words = "Take your time. Would you like more time, or shall I repeat the question?"
    head = "  2. gentle_check (10s)"
    assert stage_lines(head, words, 120) == [f"{head} “{words}”"]  # both fit: one line
    for width in (30, 37, 47, 84):
        lines = stage_lines(head, words, width)
        assert lines[0] == head and len(lines) == 2
        assert lines[1].startswith(" " * QUOTE_INDENT + "“") and lines[1].endswith("”")
        assert cell_len(lines[1]) <= width, (width, lines[1])
        said = lines[1].strip()[1:-1].rstrip("…")
        assert words.startswith(said) and (said == words or words[len(said)] in " ,.?")  # cut at a word
    assert stage_lines(head, words, 84)[1].strip() == f"“{words}”"  # room for all of it
    assert stage_lines(head, "", 40) == [head]
    assert stage_lines(head, words, 0) == [f"{head} “Take your time. Would you like…”"]  # no width yet

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


def test_after_part_of_a_code_the_panel_shows_the_words_the_call_will_say():
    # the words each stage would say now come from the controller, as it would word them:
    # after two digits of a code, the next reminder counts them and asks for the rest, a
    # later stage asks for "the rest of" the value, and the close says part of it came
    from ladder_harness import Call

    words_policy = LadderPolicy(
        stages=(
            Stage(name="wait", wait_ms=100),
            Stage(name="check", wait_ms=100, prompt="Take your time finding {slot}."),
            Stage(name="again", wait_ms=100, prompt="If {slot} isn't to hand, call back."),
            Stage(name="close", wait_ms=100, prompt="I haven't received {slot}. Goodbye.", closes=True),
        ),
        slot="your reference code",
    )
    call = Call(words_policy)
    before = call.c.stage_words()
    assert before[1:] == ["Take your time finding your reference code.", "If your reference code isn't to hand, call back.",
                          "I haven't received your reference code. Goodbye."]
    call.play(call.ask(0), 10, 20)
    call.say("partial_answer", 30, value="48")
    now = call.c.stage_words()
    assert now[1] == "I've got the first two digits. What's the rest?"
    assert now[2] == "If the rest of your reference code isn't to hand, call back."
    assert now[3].startswith("I only got part of your reference code, so I'll end the call here.")
    shown = ladder_text(call.c.snapshot(), words_policy, 40.0, width=160, words=now).plain
    assert "What's the rest?" in shown and "I haven't received" not in shown
    # the words the controller says when the ladder does move on are those shown
    call.fire_due(30 + 2 + 100)
    assert call.prompts()[-1].text == now[1]
    # reached, the stage shows what it did say, not its default wording
    assert call.c.stage_words()[1] == "I've got the first two digits. What's the rest?"


def test_between_questions_and_after_the_call_the_panel_keeps_the_last_questions_ladder():
    # a flow's question with a ladder of its own ("Please say yes or no"): once it is
    # answered, a tool stage and the end of the call put the flow's plain ladder in force,
    # which this question never said; the panel keeps the question's ladder as it ran
    from ladder import CallerUtterance
    from test_requests_are_not_values import asked

    runtime = asked("broadband_fault")
    ladder = runtime.ladder
    words = ladder.stage_words()
    assert words[1] == "Take your time. Please say yes or no."
    assert ladder.shown_policy is ladder.policy
    # silence to the first reminder: that stage is reached and says its words
    while not (reminders := [r for r in ladder.prompts.values() if r.kind == "reminder"]):
        due = runtime.next_deadline()
        runtime.handle_timer(due)
    reached = ladder.pending_episode.stage_index
    runtime.handle(CallerUtterance("t1", 1, "yes"), due + 500)
    assert ladder.pending_episode is None
    plain = [stage.prompt for stage in ladder.policy.stages]
    assert "Take your time. Please say yes or no." not in plain  # the plain ladder is in force now
    assert ladder.shown_policy is not ladder.policy
    after = ladder.stage_words()
    assert after == words and after[reached] == reminders[-1].text
    shown = ladder_text(ladder.snapshot(), ladder.shown_policy, due + 600, width=160, words=after).plain
    assert "Please say yes or no." in shown and "episode 1 ended:" in shown
    assert "I haven't received the answer" not in shown

"""G6: a redacted value never leaves the process, in any form, from any turn.

The leak test records calls in which the caller says the code in every way a caller
does (grouped, spoken, with separators, while confirming, correcting and chatting
during the lookup), then greps everything Lull writes or prints outside the TUI for
every spelling of every value the redacted slot held. The same recordings must
replay CLEAN: the journal keeps what the core needs in a shape that keeps no secret.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from console_fixtures import compile_data, quick_flow_data
from hypothesis import given
from hypothesis import strategies as st

from console.headless import rehearse_headless
from sessions.live import LiveSession
from voices.backends.text import TextBackend
from ladder.flow.understanding.text import digit_answer_evidence, hide_digit_values, mask_digits, parse_digits, restarts
from sessions.journal import read_journal
from sessions.replay import replay

from redaction_checks import SPOKEN, leaks, strings_in

LULL = shutil.which("lull", path=str(Path(sys.executable).parent)) or shutil.which("lull")

# what callers say: the code grouped, spoken, with separators, at every stage
CALLS = {
    "confirm_in_words": (["4 8 2 1", "yes four eight two one", "the code was four eight two one"], ["4821"]),
    "separators": (["48 21", "yes 4-8-2-1 that's it"], ["4821"]),
    "correction": (["4 8 2 1", "no, it's 4 8 2 2", "yes 48 22", "the code was 4.8.2.2"], ["4821", "4822"]),
}


# -- the cipher and the read-back filter -----------------------------------------------


def test_caller_digits_are_masked_in_every_spelling_and_other_words_kept():
    cipher: dict[str, str] = {}
    assert mask_digits("yes four eight two one", cipher) == "yes 0 1 2 3"
    assert mask_digits("48-21, that's it", cipher) == "01-23, that's it"
    assert mask_digits("no, it's 4 8 2 2", cipher) == "no, it's 0 1 2 2"
    assert mask_digits("Nine", cipher) == "4"  # a new digit takes the next stand-in
    assert cipher == {"4": "0", "8": "1", "2": "2", "1": "3", "9": "4"}


def test_a_value_read_back_is_hidden_however_it_is_spelled():
    secrets = {"4821"}
    for said in ("I heard 4 8 2 1. Is that right?", "code 4821 ok", "four eight two one", "48-21", "4.8.2.1"):
        assert leaks(hide_digit_values(said, secrets, "[redacted]"), ["4821"]) == [], said
    # other numbers stay
    assert hide_digit_values("press 1 for 9 options", secrets, "[redacted]") == "press 1 for 9 options"
    assert hide_digit_values("I heard 4 8 2 1.", secrets, "[redacted]") == "I heard [redacted]."


WORDS = st.lists(
    st.one_of(
        st.sampled_from(
            SPOKEN
            + ["oh", "o", "for", "to", "too", "won", "ate", "double", "triple", "yes", "no", "it's", "the", "code", "go", "days"]
        ),
        st.from_regex(r"[0-9]{1,4}", fullmatch=True),
    ),
    max_size=12,
)


@given(WORDS, st.sampled_from([" ", "-", ", ", ". "]))
def test_masking_commutes_with_the_digit_parser(words, sep):
    # parse(mask(text)) is parse(text) with each digit through the cipher: replay decides the same
    text = sep.join(words)
    cipher: dict[str, str] = {}
    masked = mask_digits(text, cipher)
    real = parse_digits(text)
    assert parse_digits(masked) == (None if real is None else "".join(cipher[d] for d in real))
    assert len(set(cipher.values())) == len(cipher)  # distinct digits stay distinct
    # whether the words are an answer at all is decided the same on the masked text
    assert digit_answer_evidence(masked) == digit_answer_evidence(text)
    assert restarts(masked) == restarts(text)


# -- whole calls: everything written or printed --------------------------------------



def test_the_shortcut_for_texts_with_no_digit_changes_no_result():
    # hide_digit_values skips the word-by-word reading where no digit or digit word is
    # in the text (most of a journal's strings); the skip must never change a result
    import random

    from ladder.flow.understanding.text import _hide_digit_runs

    rng = random.Random(5)
    vocabulary = ["phone", "someone", "done", "Four", "four", "4-8", "2 1", "eight", "weight", "İstanbul", "oh",
                  "for", "to", "nine", "NINE", "prompt_started", "caller_speech", "4821", "48-21", "I heard", "[redacted]",
                  "zero", "nought", "seven.", "ok", "", "ﬁve", "fïve"]
    secrets = frozenset({"4821", "77"})
    for _ in range(3000):
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 6)))
        assert hide_digit_values(text, secrets, "[redacted]") == _hide_digit_runs(text, secrets, "[redacted]"), text

def record_live(lines: list[str], folder: Path) -> LiveSession:
    backend = TextBackend(ms_per_word=20, start_delay_ms=10)
    session = LiveSession(compile_data(quick_flow_data()), backend, journal_dir=folder)
    asyncio.run(
        asyncio.wait_for(
            rehearse_headless(session, backend.say, lines=iter(lines), write=lambda line: None, speaking=lambda: backend.speaking),
            timeout=30,
        )
    )
    return session


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_live_call_journals_no_form_of_the_code_and_replays_clean(tmp_path, name):
    lines, values = CALLS[name]
    session = record_live(lines, tmp_path / name)
    held = [v for v in session.runtime.secret_digits]
    assert sorted(held) == sorted(values)  # the test exercises what it says
    journal = tmp_path / name / "journal.jsonl"
    found = [s for line in journal.read_text().splitlines() for s in strings_in(json.loads(line))]
    assert leaks("\n".join(found), values) == []
    result = replay(tmp_path / name)
    assert result.verdict == "CLEAN", result.describe()


def lull(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    assert LULL, "the `lull` command is not installed (pip install -e .)"
    return subprocess.run([LULL, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=cwd)


def test_nothing_lull_writes_or_prints_about_a_recorded_call_holds_the_code(tmp_path):
    scenarios = []
    for name, (lines, _) in CALLS.items():
        steps = [{"say": line} for line in lines] + [{"silence_ms": 12000}, {"expect": {"ended": True}}]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"schema": 1, "name": name, "title": name, "flow": "reference_code", "steps": steps}))
        scenarios.append(path)
    outputs: list[str] = []

    def run(*args: str) -> None:
        result = lull(*args, cwd=tmp_path)
        assert "Traceback" not in result.stderr and result.returncode in (0, 1), result.stdout + result.stderr
        outputs.extend([result.stdout, result.stderr])

    run("simulate", *map(str, scenarios), "--record", "rec", "--json")
    for name in CALLS:
        folder = f"rec/{name}"
        run("sessions", "show", folder)
        run("sessions", "replay", folder)
        n = len(list(read_journal(tmp_path / folder).inputs()))
        for at in sorted({*range(0, n, 3), n}):
            run("sessions", "step", folder, "--at", str(at))
        run("sessions", "export", folder, "--as", "scenario", "--out", f"{name}.scenario.json")
        run("sessions", "export", folder, "--as", "incident", "--out", f"{name}.incident.json")
    run("sessions", "report", "rec", "--json")
    run("sessions", "report", "rec", "--csv")
    run("sessions", "list", "rec")
    values = sorted({v for _, vs in CALLS.values() for v in vs})
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p not in scenarios]
    assert any(p.name == "journal.jsonl" for p in written) and any(p.name.endswith(".incident.json") for p in written)
    for path in written:
        if path.suffix in (".jsonl", ".json"):
            docs = [json.loads(line) for line in path.read_text().splitlines()] if path.suffix == ".jsonl" else [json.loads(path.read_text())]
            text = "\n".join(s for doc in docs for s in strings_in(doc))
        else:
            text = path.read_text(errors="replace")
        assert leaks(text, values) == [], path.name
    printed = "\n".join(outputs)
    # printed text has clocks ("12.345s"): only the spoken forms and separated digits count
    clocks = re.compile(r"\d+(\.\d+)?\s*(ms|s)\b|\d{4}-\d\d-\d\dT[\d:.]+")
    assert leaks(clocks.sub(" ", printed), values) == []
    assert "CLEAN" in printed and "DRIFT" not in printed


def test_headless_output_to_a_pipe_is_redacted_like_the_journal(tmp_path):
    # piped or redirected, the event stream is a log: no form of the code in it
    lines = "4 8 2 1\nyes four eight two one\n/sleep 1\n/hangup\n"
    result = subprocess.run(
        [LULL, "rehearse", "--backend", "text", "--headless"], input=lines, capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "I heard [redacted]. Is that right?" in result.stdout
    assert "slot reference_code = '[redacted]'" in result.stdout
    clocks = re.compile(r"\[\s*\d+(\.\d+)?s\]")
    assert leaks(clocks.sub(" ", result.stdout + result.stderr), ["4821"]) == []


def test_a_text_value_read_back_replays_clean_and_never_leaves_the_call(tmp_path):
    """A redacted text slot read back ("I heard {pet_name}"), through the real matcher: a
    pet's name that shares a word with a request ("his name is Biscuit the Second") is the
    answer; a real request at the question ("Biscuit, hold on a second") is a request, and
    its words leave the call as a stand-in too; nothing printed or journaled names the
    pet, and a replay's read-back is as long as the live one."""
    from ladder.flow.scaffold import scaffold_flow

    (tmp_path / "vet.json").write_text(json.dumps(scaffold_flow("vet", "pet_name", "text", label="pet's name")))
    # "hold on a second Biscuit" (the name after the wait) is now unclear, and so the answer
    # (README, candidate G's cost); the name first is still a wait
    lines = "Biscuit, hold on a second\nhis name is Biscuit the Second\nyes\n"
    result = subprocess.run([LULL, "rehearse", "vet.json", "--backend", "text", "--headless", "--journal", "take"],
                            input=lines, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    heard = [line for line in result.stdout.splitlines() if "heard:" in line]
    assert "wait_request" in heard[0] and "answer" in heard[1], heard
    assert "I heard [redacted]. Is that right?" in result.stdout
    assert "session CLOSED: completed" in result.stdout
    written = (tmp_path / "take" / "journal.jsonl").read_text()
    for text in (written, result.stdout + result.stderr):
        assert "biscuit" not in text.lower()
    assert "[redacted: xxxxxxx xxx xxxxxx]" in written and "[redacted: xxxxxxxx xxxx xx x xxxxxx]" in written
    assert replay(tmp_path / "take").verdict == "CLEAN", replay(tmp_path / "take").describe()


@pytest.mark.parametrize("said, value, words", [
    ("four for me and the kids", 4, ("four",)),
    ("um two hundred and fifty please", 250, ("two", "fifty", "250")),
    ("seventeen", 17, ("seventeen",)),
])
def test_a_short_redacted_number_is_hidden_where_it_was_said_and_replays_clean(tmp_path, said, value, words):
    """A redacted count ("four for me and the kids" -> 4) is too short to hide by search (a
    "4" is in many things), so the agent's words are hidden where the value was put ("I
    heard [redacted]") and the answer's value with them; the caller's words go through the
    digit cipher, and a replay, which parses another number from them, still agrees."""
    from ladder.flow.scaffold import scaffold_flow

    backend = TextBackend(ms_per_word=20, start_delay_ms=10)
    flow = compile_data(scaffold_flow("tickets", "ticket_count", "number", label="number of tickets"))
    folder = tmp_path / "tickets"
    session = LiveSession(flow, backend, journal_dir=folder)
    asyncio.run(asyncio.wait_for(rehearse_headless(
        session, backend.say, lines=iter([said, "yes"]), write=lambda line: None,
        speaking=lambda: backend.speaking), timeout=30))
    assert session.runtime.state["ticket_count"] == value and session.runtime.state["ticket_count_confirmed"] is True
    records = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
    spoken = [r["text"] for r in records if r.get("effect") == "RequestPrompt"]
    assert "I heard [redacted]. Is that right?" in spoken and not any(str(value) in text for text in spoken)
    answers = {r["question"]: r["value"] for r in records if r.get("effect") == "Answered"}
    assert answers == {"ask_ticket_count": "[redacted]", "confirm_ticket_count": "True"}
    heard = " ".join(r["event"].get("text", "") for r in records if r.get("kind") == "caller_utterance").lower()
    assert not any(word in heard for word in words), heard
    result = replay(folder)
    assert result.verdict == "CLEAN", result.describe()

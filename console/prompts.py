"""Every prompt of a flow, as an editable item: find, lint, apply to a call, save (C3).

No UI here: the editor screen and the tests use the same functions. Saving changes
only the edited strings in the file's text (everything else stays byte for byte)
and replaces the file atomically; an edit that does not validate never reaches it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ladder.flow.compile import CompiledFlow
from ladder.flow.edits import apply_edits
from ladder.flow.locate import value_positions
from ladder.policy import LadderPolicy
from sessions.flowfiles import check_data

# wording that makes the caller the problem (seed 000: "without accusing the caller")
BLAMING = (
    "you didn't", "you did not", "you failed", "you forgot", "you haven't said",
    "you have not said", "your fault", "speak up", "you're not listening",
    "you are not listening", "you must answer", "you need to answer", "i told you",
)

LADDER_TEXTS = ("acknowledgement", "filler", "reprompt", "channel_recovery", "close_failed_input", "close_pending", "close_deadline")


@dataclass(frozen=True)
class PromptItem:
    """One piece of wording and where it lives in the flow file."""

    key: str  # a stable id: "stage:ask_code", "ladder:gentle_check", "ladder:acknowledgement"
    label: str
    path: tuple  # JSON path in the flow file
    text: str
    wait_ms: float | None  # how long the stage waits after it (for the length lint)


def prompt_items(flow: CompiledFlow) -> list[PromptItem]:
    spec = flow.spec
    items = []
    for i, stage in enumerate(spec.stages):
        if stage.say:
            items.append(PromptItem(f"stage:{stage.id}", f"stage {stage.id}", ("stages", i, "say"), stage.say, None))
    policy = flow.ladder
    for i, stage in enumerate(policy.stages):
        if stage.prompt:
            items.append(
                PromptItem(f"ladder:{stage.name}", f"ladder {stage.name}", ("ladder", "stages", i, "prompt"), stage.prompt, stage.wait_ms)
            )
    for name in LADDER_TEXTS:
        items.append(PromptItem(f"ladder:{name}", f"ladder {name.replace('_', ' ')}", ("ladder", name), getattr(policy, name), None))
    return items


def estimate_ms(text: str, policy: LadderPolicy) -> float:
    return max(1, len(text.split())) * policy.ms_per_word


def lint(item: PromptItem, text: str, flow: CompiledFlow, measured_ms: float | None = None) -> list[str]:
    """Problems with this wording, in plain words (an empty list: none found)."""
    problems = []
    for route in flow.ladder.routes:
        if not route.available and route.named_by(text):
            problems.append(f"promises '{route.label}', which is not available")
    lowered = " ".join(re.findall(r"[a-z']+", text.lower()))
    for phrase in BLAMING:
        if phrase in lowered:
            problems.append(f"blames the caller (\u201c{phrase}\u201d)")
            break
    if item.wait_ms is not None:
        length = measured_ms if measured_ms is not None else estimate_ms(text, flow.ladder)
        if length > item.wait_ms:
            problems.append(f"lasts {length / 1000:.1f}s, longer than its stage's {item.wait_ms / 1000:g}s wait")
    if not text.strip():
        problems.append("is empty")
    return problems


def edited_data(data: dict, edits: dict[tuple, str], flow: CompiledFlow) -> dict:
    """The flow document with `edits` applied (ladder defaults filled in where needed)."""
    return apply_edits(data, edits, flow)


def apply_to_call(session, data: dict, edits: dict[tuple, str], source: str) -> CompiledFlow:
    """Use the new wording from the next prompt on; raises ValueError if it does not compile.

    Each edit goes to the call as an input event, so the journal holds it and a replay
    of the session makes the same decisions.
    """
    report = check_data(edited_data(data, edits, session.runtime.flow), source)
    if report.flow is None:
        raise ValueError(report.errors[0].line())
    from ladder.events import EditWording

    for path, text in edits.items():
        session.feed(EditWording(path, text))
    return session.runtime.flow


def save_flow_file(path: Path, edits: dict[tuple, str], flow: CompiledFlow) -> None:
    """Write the edits into the file atomically; its other content is kept as it was."""
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    new_data = edited_data(data, edits, flow)
    report = check_data(new_data, str(path))
    if report.flow is None:
        raise ValueError(report.errors[0].line())
    positions = value_positions(text)
    if all(p in positions for p in edits):
        new_text = _splice(text, edits)
    else:  # a ladder default is being written for the first time: re-serialise
        new_text = json.dumps(new_data, indent=2, ensure_ascii=False) + "\n"
    if json.loads(new_text) != new_data:  # belt and braces: never write what we did not mean
        raise ValueError(f"{path}: internal error: the edited file would not match the edit")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(new_text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _splice(text: str, edits: dict[tuple, str]) -> str:
    """Replace string values in place, last first, so earlier offsets stay valid."""
    decoder = json.JSONDecoder()
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    positions = value_positions(text)
    spans = []
    for path, new in edits.items():
        line, col = positions[path]
        start = starts[line - 1] + col - 1
        _, end = decoder.raw_decode(text, start)
        spans.append((start, end, json.dumps(new, ensure_ascii=False)))
    for start, end, replacement in sorted(spans, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text

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

LADDER_TEXTS = (
    "acknowledgement", "still_waiting", "partial_reminder", "hold_check_in", "filler", "reprompt", "channel_recovery", "close_failed_input", "close_pending",
    "close_deadline", "close_tool_failed", "route_unavailable", "routes_available",
    # said once part of the value was heard (ladder_defaults 3); None under older defaults,
    # which said nothing of their own then: no item to edit
    "partial_slot", "partial_close", "partial_close_deadline",
)


LADDER_BOUNDS = (
    ("hold_ms", "one hold"),
    ("hold_budget_ms", "all holds of an episode"),
    ("episode_ms", "the episode's total bound"),
)


@dataclass(frozen=True)
class PromptItem:
    """One piece of wording (or one timing) and where it lives in the flow file."""

    key: str  # a stable id: "stage:ask_code", "ladder:gentle_check", "wait:gentle_check", "bound:hold_ms"
    label: str
    path: tuple  # JSON path in the flow file
    text: str  # the wording, or a timing in milliseconds written as digits
    wait_ms: float | None  # how long the stage waits after it (for the length lint)
    kind: str = "text"  # "text" or "ms"

    def value(self, text: str):
        """The value to write for `text`: the wording, or milliseconds as a number."""
        return text if self.kind == "text" else parse_ms(text)


def parse_ms(text: str) -> int | float:
    """Milliseconds from what the designer typed ("8000", "8 000", "8000.5"); ValueError if not."""
    cleaned = text.strip().replace(" ", "").replace("_", "").removesuffix("ms")
    number = float(cleaned)
    if not number > 0:
        raise ValueError(f"{text.strip()!r}: a timing must be more than 0 ms")
    return int(number) if number == int(number) else number


def ms_text(value: float) -> str:
    return str(int(value)) if float(value) == int(value) else str(value)


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
        if isinstance(getattr(policy, name), str):
            items.append(PromptItem(f"ladder:{name}", f"ladder {name.replace('_', ' ')}", ("ladder", name), getattr(policy, name), None))
    items += _question_ladder_items(flow)
    for i, stage in enumerate(policy.stages):
        items.append(
            PromptItem(f"wait:{stage.name}", f"wait {stage.name} (ms)", ("ladder", "stages", i, "wait_ms"), ms_text(stage.wait_ms), None, "ms")
        )
    for name, about in LADDER_BOUNDS:
        items.append(PromptItem(f"bound:{name}", f"bound {name} ({about})", ("ladder", name), ms_text(getattr(policy, name)), None, "ms"))
    return items


def _question_ladder_items(flow: CompiledFlow) -> list[PromptItem]:
    """Wording a stage's own ladder gives its question (the confirmation's reminders)."""
    items = []
    waits = {stage.name: stage.wait_ms for stage in flow.ladder.stages}
    for i, stage in enumerate(flow.spec.stages):
        own = stage.ladder or {}
        for name, prompt in (own.get("prompts") or {}).items():
            if isinstance(prompt, str):
                path, text = ("stages", i, "ladder", "prompts", name), prompt
            elif isinstance(prompt, dict) and isinstance(prompt.get("prompt"), str):
                path, text = ("stages", i, "ladder", "prompts", name, "prompt"), prompt["prompt"]
            else:
                continue
            items.append(PromptItem(f"question:{stage.id}:{name}", f"{stage.id} ladder {name}", path, text, waits.get(name)))
        for name in LADDER_TEXTS:
            if isinstance(own.get(name), str):
                path = ("stages", i, "ladder", name)
                items.append(PromptItem(f"question:{stage.id}:{name}", f"{stage.id} ladder {name.replace('_', ' ')}", path, own[name], None))
    return items


def edit_values(items: list[PromptItem], edits: dict[tuple, str]) -> dict[tuple, object]:
    """The editor's texts as the values the flow file holds (ValueError for a bad timing)."""
    by_path = {item.path: item for item in items}
    out = {}
    for path, text in edits.items():
        item = by_path.get(path)
        try:
            out[path] = item.value(text) if item is not None else text
        except ValueError as exc:
            label = item.label if item is not None else "/".join(map(str, path))
            raise ValueError(f"{label}: expected milliseconds, a number more than 0 ({exc})") from None
    return out


def estimate_ms(text: str, policy: LadderPolicy) -> float:
    return max(1, len(text.split())) * policy.ms_per_word


def lint(item: PromptItem, text: str, flow: CompiledFlow, measured_ms: float | None = None) -> list[str]:
    """Problems with this wording, in plain words (an empty list: none found).

    Wording is judged by the flow's prompt lint (ladder.flow.lint, the rules `lull flow
    check` applies), with the text in place in the flow.
    """
    from ladder.flow.wording import lint_wording

    if item.kind != "ms":
        return lint_wording(item.path, text, flow, wait_ms=item.wait_ms, measured_ms=measured_ms)
    problems: list[str] = []
    if item.kind == "ms":
        try:
            value = parse_ms(text)
        except ValueError:
            return [f"is not a timing: expected milliseconds, a number more than 0 (got {text.strip()!r})"]
        for stage_item in prompt_items(flow):
            if stage_item.wait_ms is not None and item.key == f"wait:{stage_item.key.removeprefix('ladder:')}":
                length = estimate_ms(stage_item.text, flow.ladder)
                if length > value:
                    problems.append(f"is shorter than its stage's prompt ({length / 1000:.1f}s estimated)")
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


def compile_document(data: dict, source: str = "flow file") -> CompiledFlow | None:
    report = check_data(data, source)
    return report.flow


def original_texts(document: dict, name: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """What each item says in the flow file, and in the flow shipped with Lull (the
    library flow of the same name, else the ladder's defaults): what revert goes back to."""
    from sessions.flowfiles import library_flow_path

    file_flow = compile_document(document)
    in_file = {i.key: i.text for i in prompt_items(file_flow)} if file_flow is not None else {}
    shipped: dict[str, str] = {}
    library = library_flow_path(name) if name else None
    if library is not None:
        shipped_flow = compile_document(json.loads(library.read_text(encoding="utf-8")), str(library))
        if shipped_flow is not None:
            shipped = {i.key: i.text for i in prompt_items(shipped_flow)}
    if not shipped and file_flow is not None:
        defaults = LadderPolicy()
        shipped = {f"ladder:{n}": getattr(defaults, n) for n in LADDER_TEXTS if isinstance(getattr(defaults, n), str)}
        shipped |= {f"bound:{n}": ms_text(getattr(defaults, n)) for n, _ in LADDER_BOUNDS}
    return in_file, shipped


def wording_changes(recorded: CompiledFlow, edited: CompiledFlow, said: list[str]) -> list[tuple[str, str, str]]:
    """(label, recorded wording, edited wording) for each prompt whose words differ and
    that the recording actually said."""
    now = {i.key: i for i in prompt_items(edited)}
    out = []
    for item in prompt_items(recorded):
        new = now.get(item.key)
        if new is None or new.text == item.text or item.kind != "text":
            continue
        if item.text in said:
            out.append((item.label, item.text, new.text))
    return out


def save_flow_file(path: Path, edits: dict[tuple, object], flow: CompiledFlow) -> None:
    """Write the edits into the file atomically; its other content is kept as it was."""
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    new_data = edited_data(data, edits, flow)
    report = check_data(new_data, str(path))
    if report.flow is None:
        raise ValueError(report.errors[0].line())
    new_text = splice_edits(text, new_data, edits)
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


def splice_edits(text: str, new_data: dict, edits: dict[tuple, object]) -> str:
    """The file's text with only the edited values changed.

    A value the file does not spell out yet (a ladder default) is inserted as the smallest
    missing piece (one key in the ladder object, or the ladder's stage list, or a ladder
    object) at the end of the object that should hold it; every other byte stays.
    """
    for _ in range(len(edits) + 3):
        positions = value_positions(text)
        missing = [p for p in edits if p not in positions]
        if not missing:
            return _splice(text, {p: v for p, v in edits.items()})
        path = missing[0]
        # the longest prefix of the path the file has: insert the next key into that object
        depth = max(i for i in range(len(path)) if i == 0 or path[:i] in positions)
        parent, key = path[:depth], path[depth]
        value = new_data
        for part in path[: depth + 1]:
            value = value[part]
        text = _insert_key(text, parent, key, value)
    raise ValueError("internal error: could not place the edit in the file")


def _object_bounds(text: str, parent: tuple) -> tuple[int, int]:
    """Offsets of the `{` and `}` of the object at `parent` ("()" is the top level)."""
    decoder = json.JSONDecoder()
    if parent:
        positions = value_positions(text)
        line, col = positions[parent]
        lines = text.split("\n")
        start = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1
    else:
        start = len(text) - len(text.lstrip())
    _, end = decoder.raw_decode(text, start)
    return start, end - 1


def _insert_key(text: str, parent: tuple, key: str, value) -> str:
    start, close = _object_bounds(text, parent)
    body = text[start + 1 : close]
    line_start = text.rfind("\n", 0, start) + 1
    base = len(text[line_start:start]) - len(text[line_start:start].lstrip())
    members = [m for m in re.finditer(r'\n([ \t]+)"', body)]
    indent = members[0].group(1) if members else " " * (base + 2)
    step = max(1, len(indent) - base)
    rendered = json.dumps(value, indent=step, ensure_ascii=False).replace("\n", "\n" + indent)
    entry = f"{json.dumps(key)}: {rendered}"
    stripped = body.rstrip()
    if stripped.strip():
        insert_at = start + 1 + len(stripped)
        return text[:insert_at] + f",\n{indent}{entry}" + text[insert_at:]
    return text[: start + 1] + f"\n{indent}{entry}\n{' ' * base}" + text[close:]


def _splice(text: str, edits: dict[tuple, object]) -> str:
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

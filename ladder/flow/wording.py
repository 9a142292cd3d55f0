"""One text judged as the prompt editor shows it: the flow compiled with the edit in
place, its lint's findings about that text, and the text's measured length (pure)."""

from __future__ import annotations

from pydantic import ValidationError

from .compile import compile_flow
from .compiled import CompiledFlow, FlowCompileError, Path
from .edits import apply_edits
from .lint import lint_flow
from .spec import FlowSpec


def lint_wording(
    path: Path,
    text: str,
    flow: CompiledFlow,
    *,
    wait_ms: float | None = None,
    measured_ms: float | None = None,
) -> list[str]:
    """The problems of one text as the editor shows them: the flow's lint with `text` at
    `path` (errors and warnings about that text), plus its measured length."""
    problems: list[str] = []
    document = flow.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    try:
        edited = compile_flow(FlowSpec.model_validate(apply_edits(document, {path: text}, flow)))
        diags = lint_flow(edited)
    except FlowCompileError as exc:
        diags = exc.diagnostics
    except (ValidationError, KeyError, IndexError, TypeError) as exc:
        return [f"does not fit the flow: {exc}".splitlines()[0]]
    for d in diags:
        if d.path == tuple(path) or getattr(d, "about", None) == tuple(path):
            message = d.message
            if not text.strip():
                message = "is empty"
            if message not in problems:
                problems.append(message)
    if wait_ms is not None and measured_ms is not None and text.strip() and measured_ms > wait_ms:
        problems.append(f"lasts {measured_ms / 1000:.1f}s, longer than its stage's {wait_ms / 1000:g}s wait")
    elif wait_ms is not None and text.strip() and not any("longer than" in p for p in problems):
        estimate = max(1, len(text.split())) * flow.ladder.ms_per_word
        if estimate > wait_ms:
            problems.append(f"lasts {estimate / 1000:.1f}s, longer than its stage's {wait_ms / 1000:g}s wait")
    return problems


__all__ = ["lint_wording"]

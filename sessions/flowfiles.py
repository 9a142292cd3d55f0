"""Flow files on disk: find, read, validate and compile them, with positions.

Every problem becomes a `FlowProblem` naming the file, the JSON path and the line
and column where the offending value starts, so `lull flow check` can point at it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ladder.flow.compile import CompiledFlow, Diagnostic, FlowCompileError, compile_flow
from ladder.flow.locate import locate
from ladder.flow.spec import FlowSpec

DEFAULT_FLOW = "reference_code"


class FlowFileError(ValueError):
    """A flow that cannot be used: the message is its first error, on one line."""

    def __init__(self, problems: list[FlowProblem]) -> None:
        self.problems = problems
        super().__init__(problems[0].line() if problems else "invalid flow")


@dataclass(frozen=True)
class FlowProblem:
    source: str
    path: tuple
    message: str
    severity: str = "error"
    line_no: int = 1
    column: int = 1

    @property
    def where(self) -> str:
        return Diagnostic(self.path, "").where()

    def line(self) -> str:
        return f"{self.source}:{self.line_no}:{self.column}: {self.severity}: {self.where}: {self.message}"


@dataclass
class FlowReport:
    source: str
    flow: CompiledFlow | None
    problems: list[FlowProblem]

    @property
    def errors(self) -> list[FlowProblem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[FlowProblem]:
        return [p for p in self.problems if p.severity == "warning"]


def library_flow_path(name: str) -> Path | None:
    candidate = resources.files("ladder.flow.library") / f"{name}.json"
    return Path(str(candidate)) if candidate.is_file() else None


def library_flows() -> list[Path]:
    folder = resources.files("ladder.flow.library")
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".json"))


def resolve_flow(ref: str, relative_to: Path | None = None) -> Path:
    """A library name or a path (relative to another file, if given)."""
    path = library_flow_path(ref) if "/" not in ref and not ref.endswith(".json") else None
    if path is None:
        path = Path(ref)
        if relative_to is not None and not path.is_absolute():
            path = relative_to.parent / path
    if not path.exists():
        raise FlowFileError(
            [FlowProblem(ref, (), "no flow of that name in the library and no such file")]
        )
    return path


def check_text(text: str, source: str) -> FlowReport:
    """Validate and compile a flow given as JSON text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return FlowReport(
            source, None, [FlowProblem(source, (), f"invalid JSON: {exc.msg}", "error", exc.lineno, exc.colno)]
        )
    return check_data(data, source, text)


def check_data(data: Any, source: str, text: str | None = None) -> FlowReport:
    def problem(path: tuple, message: str, severity: str = "error") -> FlowProblem:
        line, col = locate(text, path) if text is not None else (1, 1)
        return FlowProblem(source, path, message, severity, line, col)

    try:
        spec = FlowSpec.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            path = _json_path(data, err["loc"])
            problems.append(problem(path, _expected(err)))
        return FlowReport(source, None, problems)
    try:
        flow = compile_flow(spec)
    except FlowCompileError as exc:
        return FlowReport(source, None, [problem(d.path, d.message, d.severity) for d in exc.diagnostics])
    return FlowReport(source, flow, [problem(d.path, d.message, d.severity) for d in flow.warnings])


def check_file(path: Path) -> FlowReport:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return FlowReport(str(path), None, [FlowProblem(str(path), (), f"cannot read: {exc.strerror}")])
    return check_text(text, str(path))


def load_flow(ref: str | dict, relative_to: Path | None = None) -> CompiledFlow:
    """A compiled flow by library name, by path, or inline; FlowFileError if it has errors."""
    if isinstance(ref, dict):
        report = check_data(ref, f"{relative_to or 'inline'}: flow")
    else:
        report = check_file(resolve_flow(ref, relative_to))
    if report.flow is None:
        raise FlowFileError(report.errors)
    return report.flow


def _json_path(data: Any, loc: tuple) -> tuple:
    """Pydantic's error location as a path into the JSON (tagged-union tags dropped)."""
    path: list = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            path.append(part)
        elif isinstance(part, str) and part not in ("function-after", "function-before") and not isinstance(node, (dict, list)):
            break
        elif isinstance(node, dict) and part not in node and isinstance(part, str):
            # a missing or unknown field: name it under its parent
            if part in {"commit", "redact", "safety_handoff"} and node.get("kind") == part:
                continue
            path.append(part)
            break
    return tuple(path)


def _expected(err: dict) -> str:
    message = err["msg"].removeprefix("Value error, ")
    kind = err.get("type", "")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (not part of a flow file; see `lull flow schema`)"
    return message

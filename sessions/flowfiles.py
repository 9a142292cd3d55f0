"""Flow files on disk: find, read, validate and compile them, with positions.

Every problem becomes a `FlowProblem` naming the file, the JSON path and the line
and column where the offending value starts, so `lull flow check` can point at it.

Every loader goes through `check_text`/`check_data`, and they never raise on bad
input: a file that is not UTF-8 text, JSON nested too deep for the parser, an integer
literal too long to convert, a non-finite number or a lone surrogate anywhere in the
document is one problem line, like a misspelt field.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from ladder.flow.compile import (
    LADDER_DEFAULTS,
    CompiledFlow,
    Diagnostic,
    FlowCompileError,
    compile_flow,
)
from ladder.flow.locate import duplicate_keys, value_positions
from ladder.flow.spec import FlowSpec

DEFAULT_FLOW = "reference_code"

# Far deeper than any flow needs, far below what the parser and the validators recurse to.
MAX_DEPTH = 64
# Integers fit in 64 bits: longer digit strings belong in JSON strings. (Python refuses
# to convert more than 4300 digits at all; this keeps every integer well inside that.)
MAX_INT = 2**63 - 1
MAX_INT_DIGITS = len(str(MAX_INT))

_BOMS = (
    (codecs.BOM_UTF32_LE, "the file is UTF-32 text (it starts with a byte order mark); save it as UTF-8"),
    (codecs.BOM_UTF32_BE, "the file is UTF-32 text (it starts with a byte order mark); save it as UTF-8"),
    (codecs.BOM_UTF16_LE, "the file is UTF-16 text (it starts with a byte order mark); save it as UTF-8"),
    (codecs.BOM_UTF16_BE, "the file is UTF-16 text (it starts with a byte order mark); save it as UTF-8"),
    (codecs.BOM_UTF8, "the file starts with a UTF-8 byte order mark; save it as UTF-8 without one"),
)  # UTF-32 LE first: it starts with the UTF-16 LE mark
# What JSON text holds outside strings, for the pre-scan: a string (on one line, as
# JSON requires), the start of an unterminated one, a bracket, or a number.
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|"|[\[\]{}]|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')
_SURROGATE = re.compile("[\ud800-\udfff]")


class FlowFileError(ValueError):
    """A flow that cannot be used: the message is its first error, on one line."""

    def __init__(self, problems: list[FlowProblem]) -> None:
        self.problems = problems
        # the CLI says "error:" before it: the message does not say it again
        super().__init__(problems[0].brief() if problems else "invalid flow")


@dataclass(frozen=True)
class FlowProblem:
    source: str
    path: tuple
    message: str
    severity: str = "error"
    # where in the file; None for a problem with the file itself (missing, a folder)
    line_no: int | None = 1
    column: int | None = 1

    @property
    def where(self) -> str:
        return Diagnostic(self.path, "").where()

    def brief(self) -> str:
        """The line without its severity, for a message that already says it is an error."""
        if self.line_no is None:
            return f"{self.source}: {self.message}"
        return f"{self.source}:{self.line_no}:{self.column}: {self.where}: {self.message}"

    def line(self) -> str:
        if self.line_no is None:
            return f"{self.source}: {self.severity}: {self.message}"
        return f"{self.source}:{self.line_no}:{self.column}: {self.severity}: {self.where}: {self.message}"

    def __str__(self) -> str:
        return self.line()


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

    def refuse(message: str) -> FlowFileError:
        return FlowFileError([FlowProblem(ref or '""', (), message, "error", None, None)])

    if not ref.strip():
        raise refuse("the flow's name is empty; expected a flow file or the name of a flow shipped with Lull "
                     f"({', '.join(p.stem for p in library_flows())})")
    path = library_flow_path(ref) if "/" not in ref and not ref.endswith(".json") else None
    if path is None:
        path = Path(ref)
        if relative_to is not None and not path.is_absolute():
            path = relative_to.parent / path
    if path.is_dir():
        raise refuse("is a folder; expected a flow file (JSON)")
    if not path.exists():
        raise refuse("no flow of that name in the library and no such file "
                     f"(shipped flows: {', '.join(p.stem for p in library_flows())})")
    return path


def check_text(text: str, source: str) -> FlowReport:
    """Validate and compile a flow given as JSON text."""
    refused = _scan_text(text)
    if refused is not None:
        message, offset = refused
        line, col = _line_col(text, offset)
        return FlowReport(source, None, [FlowProblem(source, (), message, "error", line, col)])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return FlowReport(
            source, None, [FlowProblem(source, (), f"invalid JSON: {exc.msg}", "error", exc.lineno, exc.colno)]
        )
    duplicates = duplicate_keys(text)
    if duplicates:
        return FlowReport(source, None, [
            FlowProblem(source, path, f"the key {path[-1]!r} is written twice in this object; JSON keeps only "
                        "the last one, so the first would be lost: keep one", "error", line, col)
            for path, (line, col) in duplicates
        ])
    return check_data(data, source, text)


def check_data(data: Any, source: str, text: str | None = None, ladder_defaults: int = LADDER_DEFAULTS) -> FlowReport:
    """Validate and compile a flow document (`text`, if given, is where it came from;
    `ladder_defaults` 1 for a journal recorded under the first defaults)."""
    position = _positions(text)

    def problem(path: tuple, message: str, severity: str = "error") -> FlowProblem:
        line, col = position(path)
        return FlowProblem(source, path, message, severity, line, col)

    refused = _data_problems(data)
    if refused:
        return FlowReport(source, None, [problem(path, message) for path, message in refused])
    try:
        # strictly, as JSON: "yes" is not true, "800" is not 800, 3.0 is not a count
        spec = FlowSpec.model_validate_json(to_json(data), strict=True)
    except ValidationError as exc:
        errors = exc.errors()
        problems = []
        for err in errors:
            if err["type"] == "too_short" and _has_inner_error(err["loc"], errors):
                continue  # "at least 1 item" only because its one item was refused: say why that was
            path = _json_path(data, err["loc"])
            problems.append(problem(path, _expected(err)))
        return FlowReport(source, None, problems)
    try:
        flow = compile_flow(spec, ladder_defaults)
    except FlowCompileError as exc:
        return FlowReport(source, None, [problem(d.path, d.message, d.severity) for d in exc.diagnostics])
    return FlowReport(source, flow, [problem(d.path, d.message, d.severity) for d in flow.warnings])


def check_file(path: Path) -> FlowReport:
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return FlowReport(source, None, [FlowProblem(source, (), f"cannot read: {exc.strerror or exc}", "error", None, None)])
    text = decode_flow_bytes(raw, source)
    if isinstance(text, FlowProblem):
        return FlowReport(source, None, [text])
    return check_text(text, source)


def decode_flow_bytes(raw: bytes, source: str) -> str | FlowProblem:
    """A flow file's text: UTF-8 without a byte order mark, as JSON files are exchanged."""
    for bom, message in _BOMS:
        if raw.startswith(bom):
            return FlowProblem(source, (), message)
    nul = raw.find(b"\0")
    if nul >= 0:
        utf16 = _looks_like_utf16(raw)
        if utf16:
            return FlowProblem(source, (), f"the file looks like {utf16} text without a byte order mark; save it as UTF-8")
        line, col = _byte_line_col(raw, nul)
        return FlowProblem(source, (), "a binary file, not JSON text (it contains NUL bytes)", "error", line, col)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _byte_line_col(raw, exc.start)
        return FlowProblem(
            source, (), f"not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be decoded; save the file as UTF-8", "error", line, col
        )


def load_flow(ref: str | dict, relative_to: Path | None = None) -> CompiledFlow:
    """A compiled flow by library name, by path, or inline; FlowFileError if it has errors."""
    if isinstance(ref, dict):
        report = check_data(ref, f"{relative_to or 'inline'}: flow")
    else:
        report = check_file(resolve_flow(ref, relative_to))
    if report.flow is None:
        raise FlowFileError(report.errors)
    return report.flow


# -- what the JSON parser and the validators must never see --------------------------


def _scan_text(text: str) -> tuple[str, int] | None:
    """Nesting too deep for the parser, or an integer too long to convert: (message, offset).

    json.loads would raise RecursionError or ValueError, with no position; this one
    pass over the tokens outside strings finds where. Anything else is left to the parser.
    """
    depth = 0
    for token in _TOKEN.finditer(text):
        first = token.group()[0]
        if first in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return f"nested more than {MAX_DEPTH} levels deep; a flow never needs that many", token.start()
        elif first in "]}":
            depth -= 1
        elif token.group() == '"':
            return None  # an unterminated string: the parser says where
        elif first != '"':
            digits = token.group().lstrip("-")
            if digits.isdigit() and len(digits) > MAX_INT_DIGITS:
                return _too_large(token.group()), token.start()
    return None


def _data_problems(data: Any) -> list[tuple[tuple, str]]:
    """Values no flow may hold, anywhere in the document, as (path, message) in document order."""
    problems: list[tuple[tuple, str]] = []
    stack: list[tuple[Any, tuple, int]] = [(data, (), 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, (dict, list, tuple)):
            if depth > MAX_DEPTH:
                problems.append((path, f"nested more than {MAX_DEPTH} levels deep; a flow never needs that many"))
                continue
            items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            for key, value in reversed(items):  # the stack pops them in document order
                if isinstance(key, str) and _SURROGATE.search(key):
                    problems.append(((*path, key), f"key {_shown(key)} {_SURROGATE_TEXT}"))
                    continue
                stack.append((value, (*path, key), depth + 1))
        elif isinstance(node, bool):
            continue
        elif isinstance(node, int):
            if abs(node) > MAX_INT:
                problems.append((path, _too_large(node)))
        elif isinstance(node, float):
            if not math.isfinite(node):
                shown = "NaN" if math.isnan(node) else ("-Infinity" if node < 0 else "Infinity")
                problems.append((path, f"expected a finite number, got {shown}"))
        elif isinstance(node, str) and _SURROGATE.search(node):
            problems.append((path, f"the string {_shown(node)} {_SURROGATE_TEXT}"))
    return problems


_SURROGATE_TEXT = "holds a lone surrogate (half of a UTF-16 pair), which is not text; write the character itself"


def _too_large(value: int | str) -> str:
    """`value`: the literal as written, or the int (from a document built in Python)."""
    if isinstance(value, str):
        digits = len(value.lstrip("-"))
        shown = value if digits <= 24 else f"of {digits} digits"
    elif value.bit_length() <= 80:
        shown = str(value)
    else:  # str() of a huge int is what fails: size it by its bits instead
        shown = f"of about {math.floor(abs(value).bit_length() * math.log10(2)) + 1} digits"
    return (
        f"integer {shown} is too large: a flow's integers fit in 64 bits "
        f"(at most {MAX_INT_DIGITS} digits); write a long digit string as a JSON string"
    )


def _shown(text: str, limit: int = 40) -> str:
    """A string for a message: quoted and escaped (the surrogate shown as \\udxxx)."""
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return json.dumps(shown)


def _positions(text: str | None) -> Callable[[tuple], tuple[int, int]]:
    """path -> (line, column) of its value, or of its nearest ancestor; scanned once, when first asked."""
    positions: dict[tuple, tuple[int, int]] | None = None

    def position(path: tuple) -> tuple[int, int]:
        nonlocal positions
        if text is None:
            return 1, 1
        if positions is None:
            positions = value_positions(text)
        for end in range(len(path), -1, -1):
            if path[:end] in positions:
                return positions[path[:end]]
        return 1, 1

    return position


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _byte_line_col(raw: bytes, offset: int) -> tuple[int, int]:
    """Line and column (in characters) of a byte offset."""
    start = raw.rfind(b"\n", 0, offset) + 1
    return raw.count(b"\n", 0, offset) + 1, len(raw[start:offset].decode("utf-8", "replace")) + 1


def _looks_like_utf16(raw: bytes) -> str | None:
    """JSON is mostly ASCII, so UTF-16 text has a NUL in every other byte."""
    sample = raw[:512]
    even, odd = sample[0::2], sample[1::2]
    if not odd:
        return None
    if odd.count(0) > len(odd) // 2 and even.count(0) < len(even) // 10 + 1:
        return "UTF-16 (little-endian)"
    if even.count(0) > len(even) // 2 and odd.count(0) < len(odd) // 10 + 1:
        return "UTF-16 (big-endian)"
    return None


def _has_inner_error(loc: tuple, errors: list[dict]) -> bool:
    return any(len(e["loc"]) > len(loc) and tuple(e["loc"][: len(loc)]) == tuple(loc) for e in errors)


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


_STRICT_TYPES = {
    "bool_type": "expected true or false",
    "int_type": "expected an integer",
    "float_type": "expected a number",
    "string_type": "expected a string",
}


def _expected(err: dict) -> str:
    message = err["msg"].removeprefix("Value error, ")
    kind = err.get("type", "")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (not part of a flow file; see `lull flow schema`)"
    if kind in _STRICT_TYPES and "input" in err:
        return f"{_STRICT_TYPES[kind]}, got {_describe(err['input'])}"
    return message


def _describe(value: Any) -> str:
    """A JSON value as a message names it: strings quoted, containers by kind."""
    if isinstance(value, str):
        return f"the string {_shown(value)}"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value!r}" if isinstance(value, float) else f"the integer {value}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__

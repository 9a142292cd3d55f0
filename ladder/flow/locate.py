"""Where a JSON path's value starts in a JSON text (line and column, 1-based).

`json` gives positions only for syntax errors; flow check needs them for every
diagnostic ("stages[3].commit.tool" at line 41, column 17). This scanner walks the
text once and records the start of every value by its path.
"""

from __future__ import annotations

import json

Path = tuple[str | int, ...]
_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


def value_positions(text: str) -> dict[Path, tuple[int, int]]:
    """Map each JSON path to (line, column). The text must be valid JSON."""
    positions: dict[Path, int] = {}
    _value(text, _skip(text, 0), (), positions, [])
    line_col = _line_col(text)
    return {path: line_col(offset) for path, offset in positions.items()}


def duplicate_keys(text: str) -> list[tuple[Path, tuple[int, int]]]:
    """Each key written a second time in the same object, with the position of that
    second key: JSON readers keep only the last value, so the first is silently lost
    (a designer's copy-paste slip). The text must be valid JSON."""
    duplicates: list[tuple[Path, int]] = []
    _value(text, _skip(text, 0), (), {}, duplicates)
    line_col = _line_col(text)
    return [(path, line_col(offset)) for path, offset in duplicates]


def _line_col(text: str):
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def line_col(offset: int) -> tuple[int, int]:
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - line_starts[lo] + 1

    return line_col


def locate(text: str, path: Path) -> tuple[int, int]:
    """The position of `path`, or of its nearest existing ancestor."""
    positions = value_positions(text)
    for end in range(len(path), -1, -1):
        if path[:end] in positions:
            return positions[path[:end]]
    return 1, 1


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _value(text: str, i: int, path: Path, out: dict[Path, int], duplicates: list[tuple[Path, int]]) -> int:
    out[path] = i
    ch = text[i]
    if ch == "{":
        i = _skip(text, i + 1)
        if text[i] == "}":
            return i + 1
        keys: set[str] = set()
        while True:
            start = i
            key, i = _DECODER.raw_decode(text, i)
            if key in keys:
                duplicates.append(((*path, key), start))
            keys.add(key)
            i = _skip(text, i)
            i = _skip(text, i + 1)  # the colon
            i = _skip(text, _value(text, i, (*path, key), out, duplicates))
            if text[i] == "}":
                return i + 1
            i = _skip(text, i + 1)  # the comma
    if ch == "[":
        i = _skip(text, i + 1)
        if text[i] == "]":
            return i + 1
        index = 0
        while True:
            i = _skip(text, _value(text, i, (*path, index), out, duplicates))
            index += 1
            if text[i] == "]":
                return i + 1
            i = _skip(text, i + 1)
    _, end = _DECODER.raw_decode(text, i)
    return end

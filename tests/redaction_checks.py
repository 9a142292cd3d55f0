"""Does a journal hold a redacted value, in any spelling? Shared by every test that asks.

A regex over the raw file is not enough: a wall clock's microseconds (".482177") and a float's
decimals are digits too, so one run in a few thousand would fail by chance. The check reads the
journal's strings instead, leaving out the fields that are clocks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SPOKEN = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
CLOCK_FIELDS = ("wall", "created")


def leak_patterns(value: str) -> list[re.Pattern]:
    """Every spelling of `value`: digits with any separators between them, or spoken."""
    digits = r"[\s\-.,/:'\"]*".join(value)
    spoken = r"\W+".join(SPOKEN[int(d)] for d in value)
    return [re.compile(rf"(?<!\d){digits}(?!\d)"), re.compile(rf"\b{spoken}\b", re.I)]


def leaks(text: str, values: list[str]) -> list[str]:
    return [m.group(0) for v in values for p in leak_patterns(v) for m in p.finditer(text)]


def strings_in(node) -> list[str]:
    """The strings of a JSON document (numbers are clocks and counts, not caller words)."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in strings_in(v) if k not in CLOCK_FIELDS]
    if isinstance(node, list):
        return [s for v in node for s in strings_in(v)]
    return [node] if isinstance(node, str) else []


def journal_leaks(path: Path, *values: str) -> list[str]:
    """Each spelling of `values` found in the journal's strings (an empty list when redacted)."""
    text = "\n".join(s for line in Path(path).read_text().splitlines() if line.strip() for s in strings_in(json.loads(line)))
    return leaks(text, list(values))

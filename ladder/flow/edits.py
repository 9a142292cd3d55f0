"""Wording edits to a flow document (pure): the prompt editor's changes, as data.

An edit names a JSON path in the flow file and the new text. A ladder prompt the file
does not spell out (it takes the default) is filled in with the running defaults first,
so the edit lands where the compiled flow reads it.
"""

from __future__ import annotations

import copy

from .compiled import CompiledFlow


def apply_edits(document: dict, edits: dict[tuple, str], flow: CompiledFlow) -> dict:
    """A copy of `document` with `edits` applied."""
    out = copy.deepcopy(document)
    for path, text in edits.items():
        if path[0] == "ladder":
            ladder = out.setdefault("ladder", {})
            if path[1] == "stages" and "stages" not in ladder:
                ladder["stages"] = [s.model_dump(mode="json") for s in flow.ladder.stages]
        node = out
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = text
    return out

"""Guards: small boolean expressions over the flow's state, written in JSON.

    {"is_true": "confirmed"}            state["confirmed"] is True
    {"is_false": "confirmed"}
    {"present": "reference_code"}       the key has a value
    {"equals": ["route", "transfer"]}
    {"called_ok": "lookup_reference"}   a call of the tool succeeded in this session
    {"all": [...]}, {"any": [...]}, {"not": {...}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

_LEAVES = ("is_true", "is_false", "present", "equals", "called_ok")
_NODES = ("all", "any", "not")


class Guard(BaseModel):

    is_true: str | None = None
    is_false: str | None = None
    present: str | None = None
    equals: tuple[str, Any] | None = None
    called_ok: str | None = None
    all: tuple[Guard, ...] | None = None
    any: tuple[Guard, ...] | None = None
    not_: Guard | None = Field(default=None, alias="not")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _exactly_one(self) -> Guard:
        set_fields = [name for name in (*_LEAVES, "all", "any", "not_") if getattr(self, name) is not None]
        if len(set_fields) != 1:
            raise ValueError(
                "a guard has exactly one of: " + ", ".join((*_LEAVES, *_NODES))
            )
        return self

    def holds(self, state: Mapping[str, Any], tools_ok: set[str] | frozenset[str] = frozenset()) -> bool:
        if self.is_true is not None:
            return state.get(self.is_true) is True
        if self.is_false is not None:
            return state.get(self.is_false) is False
        if self.present is not None:
            return state.get(self.present) is not None
        if self.equals is not None:
            key, value = self.equals
            return state.get(key) == value
        if self.called_ok is not None:
            return self.called_ok in tools_ok
        if self.all is not None:
            return all(g.holds(state, tools_ok) for g in self.all)
        if self.any is not None:
            return any(g.holds(state, tools_ok) for g in self.any)
        assert self.not_ is not None
        return not self.not_.holds(state, tools_ok)

    def keys(self) -> set[str]:
        """The state keys this guard reads (for corrections: what to withdraw)."""
        for name in ("is_true", "is_false", "present"):
            if getattr(self, name) is not None:
                return {getattr(self, name)}
        if self.equals is not None:
            return {self.equals[0]}
        if self.called_ok is not None:
            return set()
        children = self.all or self.any or (self.not_,)
        return set().union(*(g.keys() for g in children if g is not None))

    def tools(self) -> set[str]:
        if self.called_ok is not None:
            return {self.called_ok}
        children = self.all or self.any or ((self.not_,) if self.not_ else ())
        return set().union(set(), *(g.tools() for g in children if g is not None))

    def to_json(self) -> dict:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)

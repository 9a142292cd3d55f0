"""A faster constructor for the core's frozen dataclasses (events and effects).

A frozen dataclass's generated __init__ sets each field through object.__setattr__,
one call a field: building a RequestPrompt cost more than handling most events. The
constructor made here takes the same arguments, with the same defaults, and gives the
instance its fields straight into its dict. The result is the same frozen dataclass:
equal, hashable, immutable, fields in their order; only its construction is cheaper.
"""

from __future__ import annotations

from dataclasses import MISSING, fields

_NO_VALUE = object()


def fast_init(cls: type) -> type:
    """Give frozen dataclass `cls` a constructor that builds its dict at once.

    A class with a __post_init__ or a field left out of __init__ keeps its own: its
    construction does more than store its arguments."""
    own = fields(cls)
    if hasattr(cls, "__post_init__") or any(not f.init or f.kw_only for f in own):
        return cls
    names = [f.name for f in own]
    scope: dict = {"_NO_VALUE": _NO_VALUE}
    params, fills = [], []
    for f in own:
        if f.default is not MISSING:
            scope[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not MISSING:
            scope[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NO_VALUE")
            fills.append(f"    if {f.name} is _NO_VALUE: {f.name} = _f_{f.name}()")
        else:
            params.append(f.name)
    source = "\n".join([
        f"def __init__(self, {', '.join(params)}):" if params else "def __init__(self):",
        *fills,
        "    fields = self.__dict__",  # read, never set: frozen only forbids setting
        *(f"    fields[{name!r}] = {name}" for name in names),
    ])
    exec(source, scope)  # the dataclass module makes its __init__ the same way
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls


__all__ = ["fast_init"]

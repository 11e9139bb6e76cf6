"""What a target class must implement: the methods each layout and each capability calls.

The registry checks a target type against it when the type is registered (an opener that is
the target class itself) or first opened (an opener that imports its class lazily), and refuses
it with one line naming the missing methods, or what its capabilities lack (`refusal`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from synclog.capabilities import Capabilities
from synclog.errors import ConfigError

_Method = TypeVar("_Method", bound=Callable[..., Any])


class TargetClass(Protocol):
    """What the checks read of a target class (`Target` or a subclass: the contract is below it)."""

    def needed_methods(self, capabilities: Capabilities) -> list[str]: ...

    def refusal(self, capabilities: Capabilities) -> str | None: ...


_UNIMPLEMENTED = "__synclog_unimplemented__"

WRITE_METHODS: tuple[str, ...] = (
    "ensure",
    "replace_rows",
    "delete_expired",
    "query",
    "existing_tables",
    "close",
)
"""What every layout calls: create tables, load, retention, read, which tables exist, close."""

LAYOUT_METHODS: Mapping[str, tuple[str, ...]] = {
    "census": WRITE_METHODS,
    "hightouch": (*WRITE_METHODS, "read_rows"),
    "lake": (*WRITE_METHODS, "uri"),
}
"""Per layout, the target methods it calls (hightouch reads a sync's snapshot back to diff a run;
the lake's readers find its files by `uri`)."""


def unimplemented(method: _Method) -> _Method:
    """Mark a base class's method whose body only raises: a target class whose layouts or
    capabilities call it must override it (`missing_methods` names it otherwise)."""
    setattr(method, _UNIMPLEMENTED, True)
    return method


def required_methods(capabilities: Capabilities) -> list[str]:
    """The methods a target holding the layouts of `capabilities` must implement (a SQL target
    adds those of the opt-in parts its capabilities need: `synclog.targets.sql_loaders`)."""
    needed: list[str] = []
    for layout in capabilities.layouts:
        needed += LAYOUT_METHODS.get(layout, WRITE_METHODS)
    return list(dict.fromkeys(needed))


def missing_methods(cls: TargetClass, capabilities: Capabilities) -> list[str]:
    """The methods `cls` needs (`cls.needed_methods`) but leaves abstract or `unimplemented`."""
    abstract: frozenset[str] = getattr(cls, "__abstractmethods__", frozenset())
    missing = []
    for name in cls.needed_methods(capabilities):
        method = getattr(cls, name, None)
        if method is None or name in abstract or getattr(method, _UNIMPLEMENTED, False):
            missing.append(name)
    return missing


def check_target_class(name: str, cls: TargetClass, capabilities: Capabilities) -> None:
    """Refuse a target class that lacks a method its layouts or capabilities call, or that cannot
    work with its capabilities at all (`refusal`: a SQL target whose capabilities pick no swap)."""
    where = f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', cls)}"
    reason = cls.refusal(capabilities)
    if reason:
        raise ConfigError(f"target {name!r} ({where}) {reason}")
    missing = missing_methods(cls, capabilities)
    if missing:
        layouts = ", ".join(capabilities.layouts)
        raise ConfigError(
            f"target {name!r} ({where}) "
            f"holds the {layouts} layout(s) "
            f"but does not implement {', '.join(missing)}"
        )

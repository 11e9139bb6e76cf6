"""What a target class must implement: the methods each layout and each capability calls.

The registry checks a target type against it when the type is registered (an opener that is
the target class itself) or first opened (an opener that imports its class lazily), and refuses
it with one line naming the missing methods.
"""

from __future__ import annotations

from collections.abc import Mapping

from synclog.capabilities import Capabilities, Schemas, Staging
from synclog.errors import ConfigError
from synclog.targets.base import Target
from synclog.targets.sql import SqlTarget

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
    "lake": WRITE_METHODS,
}
"""Per layout, the target methods it calls (hightouch reads a sync's snapshot back to diff a run)."""

_DEFAULTS_THAT_RAISE: Mapping[type[Target], tuple[str, ...]] = {
    Target: ("read_rows",),
    SqlTarget: ("load_files", "load_frame", "drop_partitions", "expire_partitions", "ensure_schema"),
}
"""Methods whose base version only raises: a class that needs one must override it."""


def required_methods(capabilities: Capabilities, sql: bool) -> list[str]:
    """The methods a target with `capabilities` must implement (`sql`: a `SqlTarget` subclass)."""
    needed: list[str] = []
    for layout in capabilities.layouts:
        needed += LAYOUT_METHODS.get(layout, WRITE_METHODS)
    if sql:
        needed.append("load_frame" if capabilities.staging is Staging.EXECUTORS else "load_files")
        if capabilities.partition_drop:
            needed.append("drop_partitions")
        if capabilities.partition_expiry:
            needed.append("expire_partitions")
        if capabilities.schemas is Schemas.ATTACHED:
            needed.append("ensure_schema")
    return list(dict.fromkeys(needed))


_RETENTION_HOOKS = ("drop_partitions", "expire_partitions")
"""What only `SqlTarget.delete_expired` calls: a class with its own retention needs neither."""


def missing_methods(cls: type[Target], capabilities: Capabilities) -> list[str]:
    """The required methods `cls` leaves abstract or inherits from a base whose version raises."""
    abstract = getattr(cls, "__abstractmethods__", frozenset())
    sql = issubclass(cls, SqlTarget)
    own_retention = sql and cls.delete_expired is not SqlTarget.delete_expired
    own_writer = sql and cls.stage_writer is not SqlTarget.stage_writer  # type: ignore[attr-defined]
    missing = []
    for name in required_methods(capabilities, sql):
        if own_retention and name in _RETENTION_HOOKS:
            continue
        if own_writer and name == "load_frame":
            continue  # its tasks fill the stage themselves (`stage_writer` and `load_staged`)
        method = getattr(cls, name, None)
        inherited = any(
            name in names and method is getattr(base, name, None)
            for base, names in _DEFAULTS_THAT_RAISE.items()
        )
        if method is None or name in abstract or inherited:
            missing.append(name)
    return missing


def check_target_class(name: str, cls: type[Target], capabilities: Capabilities) -> None:
    """Refuse a target class that lacks a method its layouts or capabilities call."""
    missing = missing_methods(cls, capabilities)
    if missing:
        layouts = ", ".join(capabilities.layouts)
        raise ConfigError(
            f"target {name!r} ({cls.__module__}.{cls.__qualname__}) holds the {layouts} layout(s) "
            f"but does not implement {', '.join(missing)}"
        )

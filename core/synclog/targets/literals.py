"""Text that goes into SQL between single quotes where a warehouse takes no bound parameter."""

from __future__ import annotations

from typing import Any

from synclog.errors import ConfigError


def plain_text(value: Any, *, what: str) -> str:
    """`value` when it is text that needs no escaping in a SQL string literal (a staging path, a
    key in a COPY or stage statement); else a one-line ConfigError naming `what`, never `value`."""
    if not isinstance(value, str) or "'" in value or "\\" in value:
        raise ConfigError(f"{what} must be text without quotes or backslashes")
    return value

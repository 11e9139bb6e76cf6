"""Hook specifications. A plugin module implements them with `@hookimpl`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from synclog.targets.base import TargetType

PROJECT = "synclog"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def synclog_register_targets(register: Callable[[TargetType], None]) -> None:
    """Register the target types this plugin provides, by calling `register(TargetType(...))`."""

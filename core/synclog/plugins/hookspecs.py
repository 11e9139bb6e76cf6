"""Hook specifications. A plugin module implements them with `@hookimpl`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from synclog.targets.base import TargetType

PROJECT = "synclog"
PLUGIN_API_VERSION = 1
"""The version of the plugin API (`synclog.plugin_api`): raised when a change breaks plugins."""
API_ATTRIBUTE = "SYNCLOG_PLUGIN_API"
"""The attribute of a plugin's entry-point module that says which plugin API it is built for."""
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class TargetRegister(Protocol):
    """What `synclog_register_targets` is given: call it once per target type the plugin provides."""

    def __call__(self, target_type: TargetType, /) -> None: ...


@hookspec
def synclog_register_targets(register: TargetRegister) -> None:
    """Register the target types this plugin provides, by calling `register(TargetType(...))`."""


def registering(*target_types: TargetType) -> Callable[[TargetRegister], None]:
    """The `synclog_register_targets` hook of a plugin that registers `target_types`; its
    entry-point module says `synclog_register_targets = api.registering(TARGET_TYPE)`."""

    @hookimpl
    def synclog_register_targets(register: TargetRegister) -> None:
        for target_type in target_types:
            register(target_type)

    return synclog_register_targets


@hookspec
def synclog_transform_payload(payload: dict[str, Any], sync_id: int) -> None:
    """Change one record's payload in place before it is logged: drop, mask or add top-level fields.

    Called on the Spark executors for the JSON object of each record's `record_payload` and
    `fields` (payloads that are not objects are not passed), before anything is written and
    before synclog.toml's `log_fields` and `mask`, which have the last word. The plugin must be
    installed on every node; the driver's registered implementations are the ones called.
    """

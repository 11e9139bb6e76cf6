"""Registers the Snowflake target (the connector is imported only when a target is opened)."""

from __future__ import annotations

from synclog.plugin_api import (
    Capabilities,
    Target,
    TargetRegister,
    TargetSettings,
    TargetType,
    TargetURL,
    hookimpl,
)
from synclog_snowflake.capabilities import CAPABILITIES

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""


def _open(url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> Target:
    from synclog_snowflake.target import SnowflakeTarget

    return SnowflakeTarget(url, settings, capabilities)


TARGET_TYPE = TargetType(
    name="snowflake",
    schemes=("snowflake",),
    capabilities=CAPABILITIES,
    summary="Snowflake; VARIANT payloads, COPY INTO from an external stage over storage (PUT when local)",
    opener=_open,
    example_url="snowflake://USER@ACCOUNT/CENSUS?warehouse=WH&role=ROLE",
)


@hookimpl
def synclog_register_targets(register: TargetRegister) -> None:
    """Register the Snowflake target."""
    register(TARGET_TYPE)

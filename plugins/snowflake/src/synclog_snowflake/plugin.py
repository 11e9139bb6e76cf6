"""Registers the Snowflake target (the connector is imported only when a target is opened)."""

from __future__ import annotations

from synclog import plugin_api as api
from synclog_snowflake.capabilities import CAPABILITIES

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""

TARGET_TYPE = api.TargetType(
    name="snowflake",
    schemes=("snowflake",),
    capabilities=CAPABILITIES,
    summary="Snowflake; VARIANT payloads, COPY INTO from an external stage over storage (PUT when local)",
    opener="synclog_snowflake.target:SnowflakeTarget",
    example_url="snowflake://USER@ACCOUNT/CENSUS?warehouse=WH&role=ROLE",
)

synclog_register_targets = api.registering(TARGET_TYPE)

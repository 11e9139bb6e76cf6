"""Registers the PostgreSQL target; psycopg is imported only when a target is opened."""

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
from synclog_postgres.capabilities import CAPABILITIES

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""


def _open(url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> Target:
    from synclog_postgres.target import PostgresTarget

    return PostgresTarget(url, settings, capabilities)


TARGET_TYPE = TargetType(
    name="postgres",
    schemes=("postgresql", "postgres"),
    capabilities=CAPABILITIES,
    summary="PostgreSQL: COPY from the Spark executors, daily partitions, JSONB payloads",
    opener=_open,
    example_url="postgresql://synclog@localhost:5432/analytics",
)


@hookimpl
def synclog_register_targets(register: TargetRegister) -> None:
    """Register the PostgreSQL target."""
    register(TARGET_TYPE)

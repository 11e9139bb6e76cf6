"""Registers the PostgreSQL target; psycopg is imported only when a target is opened."""

from __future__ import annotations

from synclog import plugin_api as api
from synclog_postgres.capabilities import CAPABILITIES

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""

TARGET_TYPE = api.TargetType(
    name="postgres",
    schemes=("postgresql", "postgres"),
    capabilities=CAPABILITIES,
    summary="PostgreSQL: COPY from the Spark executors, daily partitions, JSONB payloads",
    opener="synclog_postgres.target:PostgresTarget",
    example_url="postgresql://synclog@localhost:5432/analytics",
)

synclog_register_targets = api.registering(TARGET_TYPE)

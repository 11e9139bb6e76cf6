"""Registers the BigQuery target (the client library is imported only when a target is opened)."""

from __future__ import annotations

from synclog import plugin_api as api
from synclog_bigquery.capabilities import CAPABILITIES

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""

TARGET_TYPE = api.TargetType(
    name="bigquery",
    schemes=("bigquery",),
    capabilities=CAPABILITIES,
    summary="Google BigQuery: day-partitioned, clustered tables loaded by load jobs; JSON payloads",
    opener="synclog_bigquery.target:BigQueryTarget",
    example_url="bigquery://my-project?location=US",
)

synclog_register_targets = api.registering(TARGET_TYPE)

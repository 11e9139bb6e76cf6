"""Registers the BigQuery target (the client library is imported only when a target is opened)."""

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
from synclog_bigquery.capabilities import CAPABILITIES

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""


def open_target(url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> Target:
    """Open a BigQuery target (imports google-cloud-bigquery)."""
    from synclog_bigquery.target import BigQueryTarget

    return BigQueryTarget(url, settings, capabilities)


TARGET_TYPE = TargetType(
    name="bigquery",
    schemes=("bigquery",),
    capabilities=CAPABILITIES,
    summary="Google BigQuery: day-partitioned, clustered tables loaded by load jobs; JSON payloads",
    opener=open_target,
    example_url="bigquery://my-project?location=US",
)


@hookimpl
def synclog_register_targets(register: TargetRegister) -> None:
    """Register the BigQuery target."""
    register(TARGET_TYPE)

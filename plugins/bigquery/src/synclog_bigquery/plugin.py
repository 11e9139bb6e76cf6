"""Registers the BigQuery target (the client library is imported only when a target is opened)."""

from __future__ import annotations

from typing import Any

from synclog.plugin_api import (
    Capabilities,
    Casefold,
    Staging,
    Target,
    TargetSettings,
    TargetType,
    TargetURL,
    hookimpl,
)

CAPABILITIES = Capabilities(
    json_type="JSON",
    casefold=Casefold.LOWER,
    max_identifier_length=300,
    transactions=True,
    transactional_ddl=False,
    merge=True,
    partition_expiry=True,
    staging=Staging.FILES,
)


SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""


def open_target(url: TargetURL, settings: TargetSettings) -> Target:
    """Open a BigQuery target (imports google-cloud-bigquery)."""
    from synclog_bigquery.target import BigQueryTarget

    return BigQueryTarget(url, settings)


TARGET_TYPE = TargetType(
    name="bigquery",
    schemes=("bigquery",),
    capabilities=CAPABILITIES,
    summary="Google BigQuery: day-partitioned, clustered tables loaded by load jobs; JSON payloads",
    opener=open_target,
    example_url="bigquery://my-project?location=US",
)


@hookimpl
def synclog_register_targets(register: Any) -> None:
    """Register the BigQuery target."""
    register(TARGET_TYPE)

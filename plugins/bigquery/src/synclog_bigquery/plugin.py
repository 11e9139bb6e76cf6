"""Registers the BigQuery target (the client library is imported only when a target is opened)."""

from __future__ import annotations

from typing import Any

from synclog.capabilities import Capabilities, Casefold, Staging
from synclog.plugins.hookspecs import hookimpl
from synclog.targets.base import Target, TargetSettings, TargetType
from synclog.urls import TargetURL

CAPABILITIES = Capabilities(
    json_type="JSON",
    casefold=Casefold.LOWER,
    max_identifier_length=300,
    transactions=True,
    merge=True,
    partition_expiry=True,
    staging=Staging.FILES,
)


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

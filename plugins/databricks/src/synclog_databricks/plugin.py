"""Registers the two Databricks targets; Spark's session and the connector are reached only when one opens."""

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
from synclog_databricks.capabilities import DELTA, WAREHOUSE
from synclog_databricks.options import with_json_type

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""


def _open_cluster(url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> Target:
    from synclog_databricks.cluster import open_cluster_target

    return open_cluster_target(url, settings, capabilities)


def _cluster_capabilities(declared: Capabilities, url: TargetURL, settings: TargetSettings) -> Capabilities:
    from synclog_databricks.cluster import cluster_capabilities

    return cluster_capabilities(declared, url, settings)


def _open_warehouse(url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> Target:
    from synclog_databricks.warehouse import WarehouseTarget

    return WarehouseTarget(url, settings, capabilities)


def _warehouse_capabilities(declared: Capabilities, url: TargetURL, settings: TargetSettings) -> Capabilities:
    from synclog_databricks.warehouse import OPTIONS

    return with_json_type(declared, url, settings.options_for(url, OPTIONS))


CLUSTER = TargetType(
    name="databricks-spark",
    schemes=("databricks+spark",),
    capabilities=DELTA,
    summary="Databricks in the cluster: Spark writes Delta (MERGE), or day-partitioned Parquet without Delta",
    opener=_open_cluster,
    refine=_cluster_capabilities,
    example_url="databricks+spark://census",
)

WAREHOUSE_TYPE = TargetType(
    name="databricks",
    schemes=("databricks",),
    capabilities=WAREHOUSE,
    summary="Databricks SQL warehouse: COPY INTO a stage from storage (PUT into a volume when local), MERGE",
    example_url="databricks://HOST?http_path=/sql/1.0/warehouses/ID",
    opener=_open_warehouse,
    refine=_warehouse_capabilities,
)


@hookimpl
def synclog_register_targets(register: TargetRegister) -> None:
    """Register the in-cluster and the SQL warehouse targets."""
    register(CLUSTER)
    register(WAREHOUSE_TYPE)

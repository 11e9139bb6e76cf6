"""Registers the two Databricks targets; Spark's session and the connector are reached only when one opens."""

from __future__ import annotations

from synclog import plugin_api as api
from synclog_databricks.capabilities import DELTA, WAREHOUSE

SYNCLOG_PLUGIN_API = 1
"""The plugin API this plugin is built for (`synclog.plugin_api.PLUGIN_API_VERSION`)."""

CLUSTER = api.TargetType(
    name="databricks-spark",
    schemes=("databricks+spark",),
    capabilities=DELTA,
    summary="Databricks in the cluster: Spark writes Delta (MERGE), or day-partitioned Parquet without Delta",
    opener="synclog_databricks.cluster:open_cluster_target",
    refine="synclog_databricks.cluster:cluster_capabilities",
    example_url="databricks+spark://census",
)

WAREHOUSE_TYPE = api.TargetType(
    name="databricks",
    schemes=("databricks",),
    capabilities=WAREHOUSE,
    summary="Databricks SQL warehouse: COPY INTO a stage from storage (PUT into a volume when local), MERGE",
    example_url="databricks://HOST?http_path=/sql/1.0/warehouses/ID",
    opener="synclog_databricks.warehouse:WarehouseTarget",
    refine="synclog_databricks.warehouse:warehouse_capabilities",
)

synclog_register_targets = api.registering(CLUSTER, WAREHOUSE_TYPE)

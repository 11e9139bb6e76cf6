"""The spark-bigquery-connector, when its jar is on the Spark classpath: executors write directly.

Not exercised by the local tests (the jar is not available here); `integration/test_bigquery_live.py`
covers it against real BigQuery when the jar is on the classpath.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

CONNECTOR_CLASS = "com.google.cloud.spark.bigquery.BigQueryRelationProvider"


def connector_available(spark: SparkSession) -> bool:
    """Whether the session's JVM can load the connector (False on Spark Connect sessions)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return False
    try:
        jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(CONNECTOR_CLASS)
    except Exception:  # py4j reports a missing class as Py4JJavaError, a missing JVM as Py4JError
        return False
    return True


def write_with_connector(frame: DataFrame, table_id: str, parent_project: str | None) -> None:
    """Append `frame` to the existing table `project.dataset.table` with the direct write method."""
    writer = frame.write.format("bigquery").option("writeMethod", "direct").option("table", table_id)
    if parent_project:
        writer = writer.option("parentProject", parent_project)
    writer.mode("append").save()

"""Spark SQL settings changed for one block of a test, and put back after it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession


@contextmanager
def several_tasks(spark: SparkSession, tasks: int) -> Iterator[None]:
    """A write's one job runs in `tasks` tasks: its shuffle's partitions, not coalesced by AQE."""
    settings = {"spark.sql.shuffle.partitions": str(tasks), "spark.sql.adaptive.enabled": "false"}
    before = {name: spark.conf.get(name) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            spark.conf.set(name, str(value))

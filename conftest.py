"""Shared fixtures: one Spark session for the whole test run."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from synclog.spark import spark_session


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    return spark_session()

"""Shared fixtures: one Spark session for the whole test run."""

from __future__ import annotations

import os
import tempfile

import pytest
from pyspark.sql import SparkSession

from synclog.spark import spark_session
from synclog.spark_server import DIR_ENV


def pytest_configure(config: pytest.Config) -> None:
    """A server from a user's `synclog spark start` stays out of the tests: they see only their own."""
    os.environ[DIR_ENV] = tempfile.mkdtemp(prefix="synclog-tests-spark-")


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    return spark_session()

"""The conformance suite's write, replay, finish and outage tests, for a driver whose executors
run elsewhere: `integration/test_spark_clusters.py` runs this module in a pytest process of its
own, on a standalone cluster (`SYNCLOG_SPARK_MASTER`) or through Spark Connect (`SPARK_REMOTE`).

Storage is a prefix of an S3 bucket on a moto server (`SYNCLOG_TEST_STORAGE` and the `AWS_*`
variables): the executors cannot see the driver's disk. Postgres is the server the outer test
started, at `SYNCLOG_TEST_POSTGRES` (a database per test, as in `test_postgres`).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import test_duckdb
import test_postgres
from harness.postgres_server import PostgresServer

from synclog_testing.lake import LakeConformance

SELECTED = "statuses_and_invalid or replayed_run or hightouch_diff or outage_keeps"
"""The tests run on a cluster: a write, a replay, a finished run's diff, an outage."""


synclog_target_url = test_duckdb.synclog_target_url  # the DuckDB suite's fresh-database fixture


class TestDuckDBOnACluster(test_duckdb.TestDuckDB):
    pass


class TestPostgresOnACluster(test_postgres.TestPostgres):
    @pytest.fixture
    def postgres(self) -> PostgresServer:
        """The server the outer test started, as `SYNCLOG_TEST_POSTGRES` names it."""
        url = urlsplit(os.environ["SYNCLOG_TEST_POSTGRES"])
        assert url.hostname and url.port and url.username
        return PostgresServer(url.hostname, url.port, url.username, url.path.lstrip("/"), Path("."))


class TestLakeOnACluster(LakeConformance):
    pass

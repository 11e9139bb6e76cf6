"""The conformance suite against a real Redshift cluster, when one is given.

Set REDSHIFT_HOST, REDSHIFT_USER, REDSHIFT_PASSWORD, SYNCLOG_REDSHIFT_S3 (s3://bucket/prefix in the
cluster's region, reachable with the AWS_* variables or the default credential chain) and
REDSHIFT_IAM_ROLE (a role the cluster may assume to read and write that prefix); REDSHIFT_PORT
(5439) and REDSHIFT_DATABASE (dev) optionally. The user needs CREATEDB: each test gets a database
of its own, dropped afterwards, and files under a prefix of its own.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.storage.location import Location
from synclog.targets.base import Target
from synclog.urls import TargetURL
from synclog_testing.conformance import TargetConformance
from synclog_testing.factories import make_records, make_run, person_rows, record_rows

REQUIRED = ("REDSHIFT_HOST", "REDSHIFT_USER", "REDSHIFT_PASSWORD", "SYNCLOG_REDSHIFT_S3", "REDSHIFT_IAM_ROLE")
MISSING = [name for name in REQUIRED if not os.environ.get(name)]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"set {', '.join(MISSING)} to test against a real Redshift cluster"
)
SUPER_OID = 4000


def server_url(database: str) -> str:
    host, user = os.environ.get("REDSHIFT_HOST"), os.environ.get("REDSHIFT_USER")
    return f"redshift://{user}@{host}:{os.environ.get('REDSHIFT_PORT', '5439')}/{database}"


def connect(url: str) -> Any:
    """An autocommit redshift_connector connection (password from $REDSHIFT_PASSWORD)."""
    from synclog_redshift.connection import ConnectionSettings

    return ConnectionSettings.from_url(TargetURL.parse(url)).connect(url)


class TestRedshiftLive(TargetConformance):
    model_examples = 8  # model sequences per run: a real warehouse answers slowly

    @pytest.fixture
    def synclog_target_url(self) -> Iterator[str]:
        name = f"synclog_{uuid.uuid4().hex[:12]}"
        admin = server_url(os.environ.get("REDSHIFT_DATABASE", "dev"))
        with connect(admin) as conn:
            conn.cursor().execute(f"CREATE DATABASE {name}")
        yield server_url(name)
        with connect(admin) as conn:
            conn.cursor().execute(f"DROP DATABASE {name}")

    @pytest.fixture
    def storage(self) -> Location:
        return Location.parse(os.environ["SYNCLOG_REDSHIFT_S3"]).child(f"test-{uuid.uuid4().hex}")

    def test_payloads_and_fields_are_navigable_super(
        self, target: Target, target_url: str, spark: SparkSession
    ) -> None:
        run = make_run()
        payload = {"email": "big@example.com", "items": [{"n": i, "note": "x" * 60} for i in range(1500)]}
        rows = record_rows(run, count=4, null_at=(), duplicate_of={})
        rows[0] = (*rows[0][:4], json.dumps(payload), *rows[0][5:])
        self.log(target, spark).write_run(run, make_records(spark, rows))
        people = [("a", "upsert", "succeeded", 1)]
        self.log(target, spark, self.hightouch_config).write_run(
            run, make_records(spark, person_rows(run, people))
        )
        with connect(target_url) as conn:
            cursor = conn.cursor()
            cursor.execute(
                "SELECT record_payload.email::varchar, record_payload.items[1499].n FROM census.sync_log "
                f"WHERE record_identifier = '{rows[0][0]}'"
            )
            assert [tuple(r) for r in cursor.fetchall()] == [("big@example.com", "1499")]
            cursor.execute("SELECT fields, fields.version FROM hightouch_audit.sync_changelog")
            assert [d[1] for d in cursor.description] == [SUPER_OID, SUPER_OID]
            assert [json.loads(r[0]) for r in cursor.fetchall()] == [{"id": "a", "version": 1}]

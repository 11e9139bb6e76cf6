"""The conformance suite against real BigQuery, when credentials and a project are given.

Set GOOGLE_APPLICATION_CREDENTIALS and SYNCLOG_BIGQUERY_PROJECT (SYNCLOG_BIGQUERY_LOCATION
optionally, US by default). Each test writes into datasets of its own (`census_<id>`,
`hightouch_audit_<id>`) and deletes them afterwards. Loads stage their files under the
test's `storage` (SYNCLOG_TEST_STORAGE, e.g. a gs:// prefix, or a temp folder).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from synclog.layouts.census import SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.urls import TargetURL
from synclog_testing.conformance import TargetConformance
from synclog_testing.factories import make_records, make_run, record_rows

PROJECT = os.environ.get("SYNCLOG_BIGQUERY_PROJECT")
LOCATION = os.environ.get("SYNCLOG_BIGQUERY_LOCATION", "US")
pytestmark = pytest.mark.skipif(
    not (PROJECT and os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")),
    reason="set GOOGLE_APPLICATION_CREDENTIALS and SYNCLOG_BIGQUERY_PROJECT to test against real BigQuery",
)
DAY_MS = 86_400_000


class TestBigQueryLive(TargetConformance):
    model_examples = 6  # model sequences per run: a real warehouse answers slowly

    @pytest.fixture
    def synclog_target_url(self) -> Iterator[str]:
        yield f"bigquery://{PROJECT}?location={LOCATION}"

    @pytest.fixture
    def target(self, target_url: str, storage: Location) -> Iterator[Target]:
        from google.cloud import bigquery

        suffix = uuid.uuid4().hex[:8]
        schemas = {"census": f"census_{suffix}", "hightouch": f"hightouch_audit_{suffix}"}
        census = schemas["census"]
        self.expected_sync_log = f"{census}.sync_log"
        self.seed_names = {
            "CENSUS.CENSUS.SYNC_LOG": f"{census}.sync_log",
            "CENSUS.CENSUS.SOURCE_OBJECTS": f"{census}.source_objects",
        }
        settings = TargetSettings(schemas=schemas, storage=storage)
        target = registry().open(TargetURL.parse(target_url), settings)
        yield target
        client = target.api  # type: ignore[attr-defined]
        for dataset in schemas.values():
            reference = bigquery.DatasetReference(client.project, dataset)
            client.delete_dataset(reference, delete_contents=True, not_found_ok=True)
        target.close()

    def test_log_table_is_partitioned_clustered_and_expires(
        self, target: Target, spark: SparkSession
    ) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        client = target.api  # type: ignore[attr-defined]
        table = client.get_table(target.table_ref(target.relation(SYNC_LOG)))  # type: ignore[attr-defined]
        assert table.time_partitioning.field == "batch_started_at"
        assert table.time_partitioning.expiration_ms == 7 * DAY_MS
        assert table.clustering_fields == ["sync_id", "sync_run_id"]

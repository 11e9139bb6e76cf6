"""The conformance suite against a real Databricks workspace: Delta tables, a real MERGE and DELETE.

- SQL warehouse (`databricks://`): runs when DATABRICKS_HOST, DATABRICKS_TOKEN and
  DATABRICKS_HTTP_PATH are set (the token is read by the plugin; it never appears in a URL here).
- In-cluster (`databricks+spark://`): runs where pytest itself runs on a Databricks cluster
  (DATABRICKS_RUNTIME_VERSION is set there), with SYNCLOG_TEST_STORAGE naming a folder every
  node reaches, e.g. a /Volumes/… path.

The tests write into a catalog of their own, synclog_test_<random>, created for the run and
dropped with everything in it afterwards; an existing catalog dedicated to tests can be named in
SYNCLOG_DATABRICKS_TEST_CATALOG instead (its census, hightouch_audit and probe_audit schemas are
dropped after each test). The seed queries run with that catalog's name in place of CENSUS.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from synclog.layouts.census import SYNC_LOG
from synclog.plugins.manager import registry
from synclog.targets.base import Target
from synclog.urls import TargetURL
from synclog_testing.conformance import TargetConformance

pytest.importorskip("synclog_databricks", reason="synclog-databricks is not installed")

REQUIRED = ("DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_HTTP_PATH")
MISSING = [name for name in REQUIRED if not os.environ.get(name)]
GIVEN = os.environ.get("SYNCLOG_DATABRICKS_TEST_CATALOG")
CATALOG = GIVEN or f"synclog_test_{uuid.uuid4().hex[:12]}"
SCHEMAS = ("census", "hightouch_audit", "probe_audit")


def warehouse_url() -> str:
    host = os.environ["DATABRICKS_HOST"].removeprefix("https://").rstrip("/")
    query = urlencode({"http_path": os.environ["DATABRICKS_HTTP_PATH"], "catalog": CATALOG})
    return f"databricks://{host}?{query}"


def drop_schemas(target: Target) -> None:
    for schema in SCHEMAS:
        target.client.execute(
            f"DROP SCHEMA IF EXISTS {target.dialect.quote(CATALOG)}.{target.dialect.quote(schema)} CASCADE"
        )


class LiveSuite(TargetConformance):
    """The suite on Delta tables, plus what only a real workspace shows."""

    model_examples = 8  # model sequences per run: a real warehouse answers slowly

    seed_names = {
        "CENSUS.CENSUS.SYNC_LOG": f"{CATALOG}.census.sync_log",
        "CENSUS.CENSUS.SOURCE_OBJECTS": f"{CATALOG}.census.source_objects",
    }
    expected_sync_log = f"{CATALOG}.census.sync_log"

    def url(self) -> str:
        """The URL of the workspace path this class tests."""
        raise NotImplementedError

    @pytest.fixture(scope="class")
    def catalog_url(self) -> Iterator[str]:
        """The test catalog, created for the class (unless one was given) and dropped afterwards."""
        url = self.url()
        if GIVEN is None:
            with registry().open(TargetURL.parse(url)) as target:
                target.client.execute(f"CREATE CATALOG IF NOT EXISTS {target.dialect.quote(CATALOG)}")
        yield url
        if GIVEN is None:
            with registry().open(TargetURL.parse(url)) as target:
                target.client.execute(f"DROP CATALOG IF EXISTS {target.dialect.quote(CATALOG)} CASCADE")

    @pytest.fixture
    def synclog_target_url(self, catalog_url: str) -> Iterator[str]:
        yield catalog_url
        with registry().open(TargetURL.parse(catalog_url)) as target:
            drop_schemas(target)

    def test_tables_are_delta(self, target: Target) -> None:
        target.ensure([SYNC_LOG])
        (detail,) = target.query(f"DESCRIBE DETAIL {target.relation(SYNC_LOG).render()}").to_pylist()
        assert detail["format"] == "delta"


@pytest.mark.skipif(
    bool(MISSING), reason=f"no Databricks workspace: set {', '.join(MISSING)} to run these tests"
)
class TestDatabricksWarehouseLive(LiveSuite):
    """`databricks://` through a real SQL warehouse."""

    def url(self) -> str:
        return warehouse_url()


@pytest.mark.skipif(
    not os.environ.get("DATABRICKS_RUNTIME_VERSION"),
    reason="the in-cluster path runs on a Databricks cluster",
)
class TestDatabricksInClusterLive(LiveSuite):
    """`databricks+spark://` in the cluster's own session (Delta, MERGE)."""

    def url(self) -> str:
        return f"databricks+spark://{CATALOG}"

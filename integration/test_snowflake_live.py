"""The Snowflake suite against a real account, when SNOWFLAKE_ACCOUNT, SNOWFLAKE_USER and
SNOWFLAKE_PASSWORD are set (SNOWFLAKE_WAREHOUSE and SNOWFLAKE_ROLE are used when set too);
a write through an external stage when SYNCLOG_SNOWFLAKE_S3 names an S3 prefix too (with
SYNCLOG_SNOWFLAKE_STORAGE_INTEGRATION, else the AWS_* keys).

The tests write into a database of their own, SYNCLOG_TEST_<random>, dropped after each test,
so an account's real CENSUS database is never touched: the seed queries run with that database's
name in place of CENSUS, everything else verbatim. The password is read by the plugin from
SNOWFLAKE_PASSWORD; it never appears in a URL here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote, urlencode

import pyarrow.fs as pafs
import pytest
from pyspark.sql import SparkSession
from snowflake_suite import SnowflakeSuite, record_statements

from synclog.config import Config
from synclog.layouts.census import SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import TargetSettings
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_snowflake.target import SnowflakeTarget
from synclog_testing.factories import make_records, make_run, record_rows

REQUIRED = ("SNOWFLAKE_ACCOUNT", "SNOWFLAKE_USER", "SNOWFLAKE_PASSWORD")
MISSING = [name for name in REQUIRED if not os.environ.get(name)]

pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"no Snowflake account: set {', '.join(MISSING)} to run these tests"
)
DATABASE = f"SYNCLOG_TEST_{uuid.uuid4().hex[:12].upper()}"


def live_url(database: str) -> str:
    """A target URL for the account in the environment, without the password."""
    options = {
        key: os.environ[variable]
        for key, variable in (("warehouse", "SNOWFLAKE_WAREHOUSE"), ("role", "SNOWFLAKE_ROLE"))
        if os.environ.get(variable)
    }
    user, account = quote(os.environ["SNOWFLAKE_USER"], safe=""), os.environ["SNOWFLAKE_ACCOUNT"]
    return f"snowflake://{user}@{account}/{database}" + (f"?{urlencode(options)}" if options else "")


class TestSnowflakeLive(SnowflakeSuite):
    seed_names = {
        "CENSUS.CENSUS.SYNC_LOG": f"{DATABASE}.CENSUS.SYNC_LOG",
        "CENSUS.CENSUS.SOURCE_OBJECTS": f"{DATABASE}.CENSUS.SOURCE_OBJECTS",
    }
    expected_sync_log = f"{DATABASE}.CENSUS.SYNC_LOG"

    @pytest.fixture
    def synclog_target_url(self) -> Iterator[str]:
        url = live_url(DATABASE)
        yield url
        with registry().open(TargetURL.parse(url)) as target:
            assert isinstance(target, SnowflakeTarget)
            target.client.execute(f"DROP DATABASE IF EXISTS {target.dialect.quote(DATABASE)}")


STAGE_S3 = os.environ.get("SYNCLOG_SNOWFLAKE_S3")
"""`s3://bucket/prefix` for the external-stage test (AWS_* keys write it; Snowflake reads it)."""
INTEGRATION = os.environ.get("SYNCLOG_SNOWFLAKE_STORAGE_INTEGRATION")


@pytest.mark.skipif(
    not STAGE_S3, reason="set SYNCLOG_SNOWFLAKE_S3=s3://bucket/prefix to test external stages"
)
def test_a_write_loads_from_an_external_stage(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """`storage` on S3: COPY from an external stage over it (a storage integration, else the
    AWS_* keys), no PUT; the rows arrive and the staged files are removed."""
    assert STAGE_S3 is not None
    storage = Location.parse(f"{STAGE_S3.rstrip('/')}/{uuid.uuid4().hex}")
    options = {"storage_integration": INTEGRATION} if INTEGRATION else {}
    database = f"{DATABASE}_EXT"
    url = live_url(database)
    with registry().open(TargetURL.parse(url), TargetSettings(storage=storage, options=options)) as target:
        sent = record_statements(monkeypatch, target)
        try:
            run = make_run()
            SyncLog(target, Config(storage=storage), spark).write_run(
                run, make_records(spark, record_rows(run))
            )
            log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
            assert target.client.fetch(f"SELECT COUNT(*) FROM {log}") == [(40,)]
        finally:
            target.client.execute(f"DROP DATABASE IF EXISTS {target.dialect.quote(database)}")
    assert not [s for s in sent if s.startswith("PUT")]
    assert [s for s in sent if s.startswith("COPY INTO") and "FILES = (" in s]
    left = storage.filesystem().get_file_info(
        pafs.FileSelector(storage.path("staging"), allow_not_found=True, recursive=True)
    )
    assert [f.path for f in left if f.type == pafs.FileType.File] == []

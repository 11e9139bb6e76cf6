"""The conformance suite on the embedded DuckDB target."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession
from upgrade import check_upgrade, load_duckdb_export, write_after_upgrade

from synclog.errors import ConfigError
from synclog.layouts.census import SYNC_LOG
from synclog.naming import LineageDataset
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import TARGET_TYPE
from synclog.urls import TargetURL
from synclog_testing.conformance import TargetConformance
from synclog_testing.outage import Outage, file_outage


@pytest.fixture
def synclog_target_url(tmp_path: Path) -> Iterator[str]:
    yield f"duckdb:///{tmp_path / 'conformance.duckdb'}"


class TestDuckDB(TargetConformance):
    @pytest.fixture
    def outage(self, tmp_path: Path) -> Iterator[Outage]:
        yield file_outage(tmp_path, "duckdb", "logs.duckdb")


def test_memory_limit_is_bounded_by_default_and_configurable(tmp_path: Path) -> None:
    """DuckDB runs inside the driver: its memory is capped (512MB unless the URL or options say)."""

    def limit(url: str, **options: str) -> str:
        target = TARGET_TYPE.open(TargetURL.parse(url), TargetSettings(options=options))
        try:
            return str(target.client.fetch("SELECT current_setting('memory_limit')")[0][0])
        finally:
            target.close()

    path = tmp_path / "limits.duckdb"
    assert limit(f"duckdb:///{path}") == "488.2 MiB"  # 512MB, as DuckDB shows it
    assert limit(f"duckdb:///{path}?memory_limit=2GB") == "1.8 GiB"
    assert limit(f"duckdb:///{path}", memory_limit="1GB") == "953.6 MiB"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("memory_limit=lots", r"DuckDB memory_limit 'lots': .*number"),
        ("threads=2", r"unknown option 'threads' \(known: memory_limit\)"),
    ],
)
def test_bad_duckdb_options_are_config_errors(tmp_path: Path, query: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TARGET_TYPE.open(TargetURL.parse(f"duckdb:///{tmp_path / 'x.duckdb'}?{query}"), TargetSettings())


def test_lineage_namespace_names_the_file_whatever_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative `duckdb:///` URL names a file in the working folder: OpenLineage names that file by
    its absolute path, so one file has one namespace and two files never share one."""
    for folder in ("a", "b", "a/deeper"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)

    def named(folder: str, url: str) -> LineageDataset:
        monkeypatch.chdir(tmp_path / folder)
        target = TARGET_TYPE.open(TargetURL.parse(url), TargetSettings())
        try:
            return target.lineage_dataset(target.relation(SYNC_LOG, SYNC_LOG.view))
        finally:
            target.close()

    here = named("a", "duckdb:///logs.duckdb")
    assert here == LineageDataset(f"duckdb://{tmp_path}/a/logs.duckdb", "census.sync_log")
    assert named("a/deeper", "duckdb:///../logs.duckdb") == here  # the same file, named from elsewhere
    assert named("b", "duckdb:///logs.duckdb").namespace == f"duckdb://{tmp_path}/b/logs.duckdb"
    assert named("b", f"duckdb:///{tmp_path}/a/logs.duckdb") == here  # an absolute URL


def test_a_database_of_the_previous_release_keeps_working(tmp_path: Path, spark: SparkSession) -> None:
    """Opened by this release: sync 303's run 1 leaves sync 101's run 1 alone (the previous
    release's key lacked sync_id), and sync 202's next run diffs against its old snapshot."""
    path = tmp_path / "previous.duckdb"
    with duckdb.connect(str(path)) as connection:
        load_duckdb_export(connection)
    write_after_upgrade(f"duckdb:///{path}", tmp_path / "storage", spark)
    target = TARGET_TYPE.open(TargetURL.parse(f"duckdb:///{path}"), TargetSettings())
    try:
        check_upgrade(target)
    finally:
        target.close()

"""Lake URLs, path templates, and which layouts a target holds (no Spark jobs, no servers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.errors import ConfigError
from synclog.layouts.lake import FILES, RECORDS
from synclog.plugins.manager import registry
from synclog.targets.base import TargetSettings
from synclog.targets.lake import CAPABILITIES, lake_location
from synclog.targets.lake_files import PathTemplate
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.factories import make_run

AWS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")


@pytest.fixture
def no_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*AWS, "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_folder_urls_follow_the_duckdb_path_rules() -> None:
    assert lake_location(TargetURL.parse("lake:///rel/lake"), {}).root == os.path.abspath("rel/lake")
    assert lake_location(TargetURL.parse("lake:////abs/lake"), {}).root == "/abs/lake"
    with pytest.raises(ConfigError, match="no host"):
        lake_location(TargetURL.parse("lake://host/lake"), {})
    with pytest.raises(ConfigError, match="name a folder"):
        lake_location(TargetURL.parse("lake:///"), {})


def test_s3_settings_from_options_url_and_environment(
    no_aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"endpoint_url": "http://127.0.0.1:9", "access_key_id": "AK", "secret_access_key": "SK"}
    location = lake_location(TargetURL.parse("lake+s3://bucket/some/prefix/"), options)
    assert (location.root, location.scheme, location.endpoint_url) == (
        "bucket/some/prefix",
        "s3",
        options["endpoint_url"],
    )
    assert (location.access_key, location.secret_key, location.region) == ("AK", "SK", "us-east-1")
    assert "SK" not in repr(location)
    assert location.uri("a/b.parquet") == "s3://bucket/some/prefix/a/b.parquet"
    for name in AWS:
        monkeypatch.setenv(name, f"env-{name}")
    from_env = lake_location(TargetURL.parse("lake+s3://bucket"), {})
    assert from_env.endpoint_url == "env-AWS_ENDPOINT_URL_S3"
    assert (from_env.access_key, from_env.secret_key, from_env.region) == (
        "env-AWS_ACCESS_KEY_ID",
        "env-AWS_SECRET_ACCESS_KEY",
        "env-AWS_REGION",
    )
    from_url = lake_location(TargetURL.parse("lake+s3://KEY:SECRET@bucket/p"), {})
    assert (from_url.root, from_url.access_key, from_url.secret_key) == ("bucket/p", "KEY", "SECRET")
    with pytest.raises(ConfigError, match="name a bucket"):
        lake_location(TargetURL.parse("lake+s3:///prefix"), {})


def test_path_templates() -> None:
    records = PathTemplate(FILES[RECORDS])
    assert records.fields == ("org_id", "sync_id", "sync_run_id", "batch_type", "batch_number")
    values = {"org_id": 1, "sync_id": 2, "sync_run_id": 3, "batch_type": "records_updated", "batch_number": 0}
    path = records.render(values)
    assert path == "sync_tracking_datasets/1/2/3/records_updated.0.parquet"
    assert records.parse(path) == {k: str(v) for k, v in values.items()}
    assert records.parse("sync_tracking_datasets/1/2/3/metadata.json") is None
    assert records.parse("sync_tracking_datasets/1/2/3/.records_updated.0.parquet.abc.tmp") is None
    same_batch = records.pattern({"org_id": 1, "sync_id": 2, "sync_run_id": 3, "batch_number": 0})
    assert same_batch.fullmatch("sync_tracking_datasets/1/2/3/records_deleted.0.parquet")
    assert not same_batch.fullmatch("sync_tracking_datasets/1/2/3/records_deleted.10.parquet")


def test_the_lake_holds_only_the_lake_layout_and_warehouses_not_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    assert CAPABILITIES.layouts == ("lake",)
    lake = registry().open(TargetURL.parse(f"lake:///{tmp_path / 'lake'}"), TargetSettings())
    duck = registry().open(TargetURL.parse(f"duckdb:///{tmp_path / 'x.duckdb'}"), TargetSettings())
    try:
        assert SyncLog(lake, Config(), spark).layouts(1) == ("lake",)
        assert SyncLog(duck, Config(), spark).layouts(1) == ("census",)
        census_only = Config(defaults=SyncSettings(layouts=("census",)))
        with pytest.raises(ConfigError, match="cannot hold the 'census' layout"):
            SyncLog(lake, census_only, spark).write(make_run(), spark.range(1))
        with pytest.raises(ConfigError, match="cannot hold the 'lake' layout"):
            SyncLog(duck, Config(syncs={5: SyncSettings(layouts=("lake",))}), spark).layouts(5)
    finally:
        lake.close()
        duck.close()

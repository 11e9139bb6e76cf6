"""synclog.toml, target URLs and relation names."""

from __future__ import annotations

from pathlib import Path

import pytest

from synclog.capabilities import Casefold
from synclog.config import DEFAULT_TARGET, Config
from synclog.errors import ConfigError
from synclog.naming import Relation
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import TARGET_TYPE as DUCKDB
from synclog.urls import TargetURL


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SYNCLOG_CONFIG", raising=False)
    config = Config.load()
    assert config.sync(1).retention_days == 7
    assert config.sync(1).layouts == ()  # the target's own default layout
    url, _ = config.resolve_target(None)
    assert str(url) == DEFAULT_TARGET


def test_full_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "s3cret")
    path = tmp_path / "synclog.toml"
    path.write_text(
        """
[targets.default]
url = "postgresql://synclog@db.internal:5432/analytics"
password_env = "WAREHOUSE_PASSWORD"
schemas = { census = "logs" }

[defaults]
retention_days = 14

[syncs.1234]
retention_days = 30
tables = { sync_log = { retention_days = 90 } }
"""
    )
    config = Config.load(path)
    url, settings = config.resolve_target(None)
    assert url.password == "s3cret"
    assert "s3cret" not in str(url) and "s3cret" not in repr(url)
    assert settings.schemas == {"census": "logs"}
    assert config.sync(1).retention_days == 14
    assert config.sync(1234).retention_for("sync_log") == 90
    assert config.sync(1234).retention_for("sync_changelog") == 30


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[defaults]\nretention_days = -1", "retention_days must be a whole number"),
        ("[defaults]\nretension_days = 3", "unknown key 'retension_days'"),
        ("[syncs.abc]\nretention_days = 3", "sync ids are integers"),
        ("[targets.x]\npassword_env = 'A'", "url is required"),
        ("[defaults\n", "synclog.toml"),
        ('state_dir = "/tmp/x"', "state_dir was replaced by storage"),
        ('[targets.x]\nurl = "duckdb:///x"\nstaging_dir = "/tmp"', "staging_dir was replaced by storage"),
        ('storage = "hdfs://nn/synclog"', "hdfs:// is not supported"),
        ('storage = "s3:///prefix"', "name a bucket"),
        ("[storage]\nshared = true", "url is required"),
        ('[storage]\nurl = "/x"\nshared = "yes"', "shared must be true or false"),
        ('[storage]\nurl = "/x"\naccess_key_id = "AK"', "unknown key 'access_key_id'"),
    ],
)
def test_bad_config_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "synclog.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Config.load(path)


def test_storage_is_one_location_for_every_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AK")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
    default = Config().storage
    assert (default.uri(), default.reaches_every_node) == (str(tmp_path / ".synclog"), False)
    on_s3 = Config.from_dict({"storage": "s3://bucket/synclog/"}).storage
    assert (on_s3.uri("runs"), on_s3.access_key, on_s3.reaches_every_node) == (
        "s3://bucket/synclog/runs",
        "AK",
        True,
    )
    assert "s3cret" not in repr(on_s3) + str(on_s3)
    shared = Config.from_dict({"storage": {"url": "/mnt/nfs/synclog", "shared": True}}).storage
    assert (shared.uri(), shared.reaches_every_node) == ("/mnt/nfs/synclog", True)
    volume = Config.from_dict({"storage": "/Volumes/main/logs/synclog"}).storage
    assert volume.reaches_every_node, "a Databricks volume is mounted on every node"
    endpoint = {"url": "s3://b/p", "endpoint_url": "http://127.0.0.1:9000", "region": "eu-west-1"}
    custom = Config.from_dict({"storage": endpoint}).storage
    assert (custom.endpoint_url, custom.region) == ("http://127.0.0.1:9000", "eu-west-1")
    _, settings = Config.from_dict({"storage": "s3://bucket/synclog"}).resolve_target("duckdb:///x.duckdb")
    assert settings.storage == on_s3, "targets stage their loads in the configured storage"


def test_unknown_target_name() -> None:
    with pytest.raises(ConfigError, match="unknown target 'prod'"):
        Config().resolve_target("prod")


def test_url_parsing_and_redaction() -> None:
    url = TargetURL.parse("postgresql://me:p%40ss@localhost:5433/db?sslmode=require")
    assert (url.scheme, url.host, url.port, url.user, url.password) == (
        "postgresql",
        "localhost",
        5433,
        "me",
        "p@ss",
    )
    assert str(url) == "postgresql://me:***@localhost:5433/db?sslmode=require"
    with pytest.raises(ConfigError, match="not a URL"):
        TargetURL.parse("synclog.duckdb")
    with pytest.raises(ConfigError, match="invalid port"):
        TargetURL.parse("postgresql://me:pw@host:99999999/db")


def test_file_urls_are_parsed_by_the_core(tmp_path: Path) -> None:
    assert TargetURL.parse("sqlite:///logs/x.sqlite").file_path() == "logs/x.sqlite"
    assert TargetURL.parse("sqlite:////var/x.sqlite").file_path() == "/var/x.sqlite"
    assert TargetURL.parse("duckdb:///:memory:").file_path() == ":memory:"
    with pytest.raises(ConfigError, match="has no host; use sqlite:///relative/path or sqlite:////absolute"):
        TargetURL.parse("sqlite://host/x.sqlite").file_path()
    with pytest.raises(ConfigError, match="name a database file"):
        TargetURL.parse("duckdb:///").file_path()
    missing = TargetURL.parse(f"duckdb:///{tmp_path / 'none.duckdb'}")
    DUCKDB.check(missing, TargetSettings())  # a write creates it
    with pytest.raises(ConfigError, match="there is no database file"):
        DUCKDB.check(missing, TargetSettings(read_only=True))
    assert not (tmp_path / "none.duckdb").exists()


def test_relations_fold_and_quote() -> None:
    lower = Relation(schema="Census", name="sync_log")
    assert lower.render() == '"census"."sync_log"'
    upper = Relation(schema="census", name="sync_log", database="census", casefold=Casefold.UPPER)
    assert upper.render() == '"CENSUS"."CENSUS"."SYNC_LOG"'
    assert str(upper) == "CENSUS.CENSUS.SYNC_LOG"
    assert Relation(schema="s", name="t", quote="`").render() == "`s`.`t`"


@pytest.mark.parametrize("name", ['census"; DROP TABLE x; --', "", "1abc", "a b"])
def test_names_that_are_not_plain_identifiers_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="not a plain identifier"):
        Relation(schema=name, name="sync_log")

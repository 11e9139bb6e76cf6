"""synclog.toml, target URLs and relation names."""

from __future__ import annotations

from pathlib import Path

import pytest

from synclog.capabilities import Casefold
from synclog.config import DEFAULT_TARGET, Config
from synclog.errors import ConfigError
from synclog.naming import Relation
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
    ],
)
def test_bad_config_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "synclog.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Config.load(path)


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

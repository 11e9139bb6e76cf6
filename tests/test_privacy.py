"""The payload policy: its configuration, its rules, the plugin hook, and the demo on DuckDB."""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pyspark.sql import SparkSession

from synclog.cli.main import main
from synclog.config import Config, SyncSettings
from synclog.errors import ConfigError, InputError
from synclog.plugins.hookspecs import hookimpl
from synclog.plugins.manager import registry
from synclog.privacy import REDACTED, Mask, PayloadPolicy
from synclog.storage.location import Location
from synclog.writer import SyncLog
from synclog_testing.factories import make_records, make_run, record_rows
from synclog_testing.privacy import (
    DEMO_LOG_FIELDS,
    EMAIL,
    MASK_KEY,
    MASK_KEY_ENV,
    POLICY,
    RAW,
    check_masked,
    check_tracking_cli,
    digest,
    files_text,
    masked_demo,
)

# -- configuration ------------------------------------------------------------------------------


def test_policy_comes_from_synclog_toml_per_sync() -> None:
    config = Config.from_dict(
        {
            "defaults": {
                "log_fields": ["id", "email"],
                "mask": {"email": "hmac"},
                "mask_key_env": "KEY_ENV",
                "redact_messages": [EMAIL],
            },
            "syncs": {"7": {"mask": {"phone": "redact"}, "log_fields": ["id"], "mask_identifier": "hmac"}},
        }
    )
    defaults, seven = config.sync(1).policy, config.sync(7).policy
    assert defaults == PayloadPolicy(("id", "email"), {"email": Mask.HMAC}, "KEY_ENV", (EMAIL,))
    assert seven.log_fields == ("id",)  # replaced
    assert seven.mask == {"email": Mask.HMAC, "phone": Mask.REDACT}  # added to the defaults' masks
    assert (seven.mask_key_env, seven.redact_messages, seven.mask_identifier) == (
        "KEY_ENV",
        (EMAIL,),
        Mask.HMAC,
    )
    assert Config().sync(1).policy == PayloadPolicy()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"mask": {"email": "hmac"}}, "defaults: hmac needs a key: set mask_key_env"),
        ({"mask_identifier": "hmac"}, "defaults: hmac needs a key: set mask_key_env"),
        ({"mask": {"email": "sha256"}}, "mask.email must be one of hmac, redact, got 'sha256'"),
        ({"mask_identifier": "redact"}, 'mask_identifier can only be "hmac"'),
        ({"redact_messages": ["ok", "(unclosed"]}, "redact_messages: '(unclosed' is not a valid regex"),
        ({"log_fields": "email"}, "log_fields must be a list of strings"),
        ({"mask": ["email"]}, 'mask must be a table of field = "hmac" or "redact"'),
        ({"mask_key_env": 3}, "mask_key_env must name an environment variable"),
    ],
)
def test_a_bad_policy_is_a_config_error(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^config: ") as raised:
        Config.from_dict({"defaults": settings})
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_key_comes_from_the_environment_and_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = PayloadPolicy(mask={"email": Mask.HMAC}, mask_key_env=MASK_KEY_ENV)
    monkeypatch.delenv(MASK_KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"the environment variable {MASK_KEY_ENV} is not set"):
        policy.key()
    monkeypatch.setenv(MASK_KEY_ENV, "short-secret")
    with pytest.raises(ConfigError, match="holds fewer than 16 bytes") as short:
        policy.key()
    assert "short-secret" not in str(short.value)
    monkeypatch.setenv(MASK_KEY_ENV, MASK_KEY)
    transform = policy.prepare(1)
    assert transform is not None
    assert MASK_KEY not in repr(transform) + str(transform)
    assert pickle.loads(pickle.dumps(transform)).payload('{"email": "a@b.co"}') == transform.payload(
        '{"email": "a@b.co"}'
    )


def test_a_missing_key_fails_a_command_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "synclog.toml"
    config.write_text(f'[defaults]\nmask = {{ email = "hmac" }}\nmask_key_env = "{MASK_KEY_ENV}"\n')
    monkeypatch.delenv(MASK_KEY_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["--config", str(config), "demo", "--target", "duckdb:///x.duckdb", "--scale", "0.01"]) == 2
    error = capsys.readouterr().err
    assert error == f"synclog: error: mask_key_env: the environment variable {MASK_KEY_ENV} is not set\n"
    assert files_text(Location.parse(str(tmp_path / ".synclog")))[0] == 0


# -- the rules, value by value ------------------------------------------------------------------


def test_payload_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MASK_KEY_ENV, MASK_KEY)
    policy = PayloadPolicy(
        log_fields=("email", "phone", "address", "plan"),
        mask={"email": Mask.HMAC, "phone": Mask.REDACT, "address": Mask.HMAC},
        mask_key_env=MASK_KEY_ENV,
    )
    transform = policy.prepare(1)
    assert transform is not None
    given = {
        "email": "ada@example.com",
        "phone": "+44 20 7946 0000",
        "address": {"city": "Oslo", "zip": "0150"},
        "plan": "pro",
        "ssn": "078-05-1120",
    }
    logged = json.loads(transform.payload(json.dumps(given)) or "")
    assert logged == {
        "email": digest("ada@example.com"),
        "phone": REDACTED,
        "address": digest('{"city":"Oslo","zip":"0150"}'),  # a nested object: its JSON text
        "plan": "pro",
    }
    assert json.loads(transform.payload('{"email": null, "plan": "x"}') or "") == {"email": None, "plan": "x"}
    assert transform.payload('["not", "an", "object"]') is None  # no fields to keep
    assert transform.payload("{not json") is None
    everything = PayloadPolicy(mask={"phone": Mask.REDACT}).prepare(1)
    assert everything is not None
    assert everything.payload('"just text"') == '"just text"'
    assert PayloadPolicy().prepare(1) is None


def test_messages_are_redacted_by_every_pattern() -> None:
    policy = PayloadPolicy(redact_messages=(EMAIL, r"(?i)token=\w+"))
    assert policy.redact_message("ada@example.com bounced; TOKEN=abc123 rejected") == (
        f"{REDACTED} bounced; {REDACTED} rejected"
    )
    assert policy.redact_message(None) is None


# -- on Spark: every payload shape, the hook, invalid input ------------------------------------


def duckdb_log(tmp_path: Path, spark: SparkSession, policy: PayloadPolicy, **settings: Any) -> SyncLog:
    config = Config(
        defaults=SyncSettings(layouts=("census", "hightouch"), **settings),
        storage=Location.parse(str(tmp_path / "storage")),
    )
    return SyncLog.open(f"duckdb:///{tmp_path / 'log.duckdb'}", config, spark, policy=policy)


def all_values(path: Path) -> str:
    """Every value of every table in the DuckDB file, as text (no column names)."""
    with duckdb.connect(str(path), read_only=True) as db:
        tables = db.sql("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
        return "\n".join(str(db.sql(f'SELECT * FROM "{s}"."{t}"').fetchall()) for s, t in tables)


def test_struct_and_map_payloads_are_masked_too(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MASK_KEY_ENV, MASK_KEY)
    run = make_run()
    frame = make_records(spark, record_rows(run, count=8)).selectExpr(
        "record_identifier", "operation", "status", "status_message",
        "named_struct('email', get_json_object(record_payload, '$.email'), 'plan', 'pro', "
        "'seats', CAST(get_json_object(record_payload, '$.seats') AS INT)) AS record_payload",
        "map('email', concat('fields-', get_json_object(record_payload, '$.email')), 'plan', 'max') "
        "AS fields",
        "batch_number", "batch_started_at", "batch_completed_at",
    )  # fmt: skip
    with duckdb_log(tmp_path, spark, POLICY) as log:
        log.write_run(run, frame)
    logged = all_values(tmp_path / "log.duckdb")
    assert RAW not in logged and '"plan"' not in logged
    assert digest("user2@example.com") in logged  # from the struct (census record_payload)
    assert digest("fields-user2@example.com") in logged  # from the map (hightouch fields)


def test_a_plugin_hook_transforms_payloads_on_the_executors(tmp_path: Path, spark: SparkSession) -> None:
    class DropPlan:
        """Drops `plan` everywhere and notes which process ran it."""

        @hookimpl
        def synclog_transform_payload(self, payload: dict[str, Any], sync_id: int) -> None:
            import os

            del payload["plan"]
            payload["worker"] = os.getpid()
            payload["email"] = "ada@example.com" if sync_id == 1234 else payload["email"]

    plugin = DropPlan()
    registry().manager.register(plugin)
    try:
        run = make_run()
        with duckdb_log(tmp_path, spark, PayloadPolicy(mask={"email": Mask.REDACT})) as log:
            log.write_run(run, make_records(spark, record_rows(run, count=6)))
    finally:
        registry().manager.unregister(plugin)
    with duckdb.connect(str(tmp_path / "log.duckdb"), read_only=True) as db:
        payloads = db.sql("SELECT record_payload FROM census.sync_log").fetchall()
        fields = db.sql("SELECT fields FROM hightouch_audit.sync_changelog").fetchall()
    for (text,) in payloads + fields:
        payload = json.loads(text)
        assert set(payload) == {"email", "seats", "worker"}
        assert payload["email"] == REDACTED, "the configured policy has the last word"
        assert payload["worker"] != os.getpid(), "called in a Spark worker, not the driver"
    assert len(payloads) == len(fields) == 6


def test_invalid_json_is_refused_without_being_shown(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MASK_KEY_ENV, MASK_KEY)
    run = make_run()
    rows = record_rows(run, count=4)
    rows[1] = (*rows[1][:4], '{"email": "ada@example.com", ', *rows[1][5:])
    with duckdb_log(tmp_path, spark, POLICY) as log, pytest.raises(InputError) as refused:
        log.write(run, make_records(spark, rows))
    assert "'record_payload' holds invalid JSON (not shown: a payload policy applies)" in str(refused.value)
    assert "ada@" not in str(refused.value)
    assert files_text(Location.parse(str(tmp_path / "storage")))[0] == 0


# -- the demo on DuckDB, and Sync Tracking over it --------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Iterator[tuple[Path, Path]]:
    """The demo, small, on DuckDB (census and hightouch) under a payload policy: folder and config."""
    folder = tmp_path_factory.mktemp("masked-demo")
    with pytest.MonkeyPatch.context() as env:
        env.setenv(MASK_KEY_ENV, MASK_KEY)
        config = masked_demo(folder, f"duckdb:///{folder / 'demo.duckdb'}", str(folder / "storage"))
    yield folder, config


def test_the_masked_demo_holds_no_raw_email_and_no_other_field(demo: tuple[Path, Path]) -> None:
    folder, _ = demo
    check_masked(all_values(folder / "demo.duckdb"))
    assert RAW not in files_text(Location.parse(str(folder / "storage")))[1]
    with duckdb.connect(str(folder / "demo.duckdb"), read_only=True) as db:
        payloads = db.sql(
            "SELECT record_payload FROM census.sync_log UNION ALL "
            "SELECT fields FROM hightouch_audit.sync_changelog UNION ALL "
            "SELECT fields FROM hightouch_audit.sync_snapshot"
        ).fetchall()
    assert len(payloads) > 1000
    assert all(set(json.loads(payload)) == set(DEMO_LOG_FIELDS) for (payload,) in payloads)


@pytest.mark.parametrize("layout", ["census", "hightouch"])
def test_records_and_runs_answer_on_the_masked_demo(
    demo: tuple[Path, Path], layout: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, config = demo
    monkeypatch.setenv(MASK_KEY_ENV, MASK_KEY)
    check_tracking_cli(config, f"duckdb:///{folder / 'demo.duckdb'}", layout, folder, capsys)

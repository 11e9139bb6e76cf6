"""The public dbt-hightouch package runs unchanged on the hightouch tables synclog writes.

dbt-hightouch (github.com/hightouchio/dbt-hightouch) and its one dependency, dbt_utils
(github.com/dbt-labs/dbt-utils), come from dbt Hub or GitHub, which CI cannot reach: the test
runs when `SYNCLOG_DBT_HIGHTOUCH` and `SYNCLOG_DBT_UTILS` name checkouts of the two, and skips
otherwise. The package's models are used as they are; only its `packages.yml` is pointed at the
local dbt_utils (dbt would fetch it from the Hub). Its one Snowflake-only model (`LATERAL
FLATTEN`) is switched off with the package's own var, as its README says for other warehouses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from harness.dbt_package import dbt_executable
from harness.errors import ServerUnavailable

from synclog.cli.main import main

pytestmark = [pytest.mark.dbt, pytest.mark.dbt_all]

CHECKOUTS = {"dbt_hightouch": "SYNCLOG_DBT_HIGHTOUCH", "dbt_utils": "SYNCLOG_DBT_UTILS"}
MODELS = (
    "stg_hightouch_audit__sync_changelog",
    "stg_hightouch_audit__sync_runs",
    "stg_hightouch_audit__sync_snapshot",
    "hightouch_audit__errors_by_sync",
    "hightouch_audit__add_by_pk",
    "hightouch_audit__sync_stats",
    "hightouch_audit__ops_by_pk",
)
SCALE = 0.02


def _checkouts() -> dict[str, Path]:
    found = {name: Path(os.environ.get(env, "")) for name, env in CHECKOUTS.items()}
    missing = [CHECKOUTS[n] for n, path in found.items() if not (path / "dbt_project.yml").is_file()]
    if missing:
        pytest.skip(f"no checkout named by {', '.join(missing)}: dbt Hub and GitHub are not reachable here")
    return found


def test_dbt_hightouch_builds_on_synclog_tables(tmp_path: Path) -> None:
    checkouts = _checkouts()
    try:
        dbt = dbt_executable()
    except ServerUnavailable as exc:
        pytest.skip(str(exc))
    package = shutil.copytree(checkouts["dbt_hightouch"], tmp_path / "dbt_hightouch")
    (package / "packages.yml").write_text(
        json.dumps({"packages": [{"local": str(checkouts["dbt_utils"])}]}), encoding="utf-8"
    )
    database = tmp_path / "logs.duckdb"
    config = tmp_path / "synclog.toml"
    config.write_text(f'storage = "{tmp_path / "storage"}"\n', encoding="utf-8")
    demo = ["--config", str(config), "demo", "--target", f"duckdb:///{database}", "--scale", str(SCALE)]
    assert main(demo) == 0

    project = tmp_path / "project"
    project.mkdir()
    (project / "dbt_project.yml").write_text(
        json.dumps({"name": "check", "version": "1.0.0", "config-version": 2, "profile": "check"})
    )
    (project / "packages.yml").write_text(json.dumps({"packages": [{"local": str(package)}]}))
    profile = {
        "check": {"target": "duckdb", "outputs": {"duckdb": {"type": "duckdb", "path": str(database)}}}
    }
    (project / "profiles.yml").write_text(json.dumps(profile))
    variables = {"hightouch_snowflake_models_disabled": True, "hightouch_audit_database": database.stem}
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_USE_COLORS": "false"}
    for command in (["deps"], ["build", "--vars", json.dumps(variables)]):
        done = subprocess.run(
            [str(dbt), *command, "--profiles-dir", str(project)],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]

    with duckdb.connect(str(database), read_only=True) as connection:
        schema = "main_hightouch_audit"
        for model in MODELS:
            rows = connection.execute(f"SELECT count(*) FROM {schema}.{model}").fetchone()
            assert rows is not None and rows[0] > 0, model
        # The package's "errors by sync" (rows per sync and message) agrees with the changelog.
        failures = connection.execute(
            "SELECT DISTINCT sync_id, failure_reason, row_id FROM hightouch_audit.sync_changelog "
            "WHERE failure_reason IS NOT NULL"
        ).fetchall()
        errors = connection.execute(
            "SELECT sync_id, row_error_message, n_rows_with_error "
            f"FROM {schema}.hightouch_audit__errors_by_sync"
        ).fetchall()
    want: dict[tuple[int, str], int] = {}
    for sync_id, reason, _row in failures:
        want[(sync_id, reason)] = want.get((sync_id, reason), 0) + 1
    assert {(sync_id, reason): n for sync_id, reason, n in errors} == want

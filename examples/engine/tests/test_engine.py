"""The example engine against DuckDB: the Census questions, answered in SQL from what it logged."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pyspark.sql import SparkSession

from synclog import BackgroundLog, Config, SyncLog, stable_id
from synclog_example_engine import ContactsAPI, already_in_destination, changes, contacts_run, sync
from synclog_example_engine.__main__ import main


def rows(database: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def logged(database: Path, run_id: int) -> list[tuple[Any, ...]]:
    """Every row the census log holds for the run, in a fixed order."""
    return rows(
        database,
        "SELECT record_identifier, operation, status, status_message, invalid_reason, batch_number"
        " FROM census.sync_log WHERE sync_run_id = ? ORDER BY batch_number, record_identifier",
        run_id,
    )


def test_every_answer_is_logged_once_and_a_replayed_batch_adds_nothing(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = changes()
    database = tmp_path / "logs.duckdb"
    url = f"duckdb:///{database}"
    events = tmp_path / "lineage.jsonl"  # where the OpenLineage client's file transport appends
    lineage_config = tmp_path / "openlineage.yml"
    lineage_config.write_text(f"transport: {{type: file, log_file_path: {events}, append: true}}")
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(lineage_config))
    notices = {"openlineage": {"namespace": "engine"}}
    config = Config.from_dict({"storage": str(tmp_path / "storage"), "notices": notices})
    with ContactsAPI(already_in_destination(source)) as api, BackgroundLog.open(url, config, spark) as log:
        report = sync(source, api.url, log, contacts_run(api_url=api.url), batch_size=40)
    run_id = report.run.sync_run_id
    assert report.run.status == "succeeded" and len(report.batches) == 5
    assert report.logged is not None and report.logged.queued  # finish returned before its loads
    result = report.logged.wait()  # they ended as the log closed
    answered = Counter("succeeded" if error is None else "rejected" for error in api.answers.values())
    assert result.statuses == answered and not result.pending and result.refused == ()

    # OpenLineage: the API's contacts are the output the engine named; the source, which names no
    # dataset, is named by synclog's ids; the log's tables by DuckDB's file.
    start, complete = (json.loads(line) for line in events.read_text().splitlines())
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    assert [(d["namespace"], d["name"]) for d in complete["inputs"]] == [
        (f"synclog:connection:{stable_id('source')}", f"object:{stable_id('users')}")
    ]
    outputs = [(d["namespace"], d["name"]) for d in complete["outputs"]]
    assert outputs[0] == (api.url, "/contacts")
    assert (f"duckdb://{database}", "census.sync_log") in outputs

    # Every attempted record exactly once, with the API's own answer.
    counted = rows(
        database,
        "SELECT record_identifier, COUNT(*), ANY_VALUE(status), ANY_VALUE(status_message)"
        " FROM census.sync_log WHERE sync_run_id = ? GROUP BY 1",
        run_id,
    )
    assert {identifier for identifier, *_ in counted} == set(api.answers)
    assert all(times == 1 for _, times, _, _ in counted)
    assert {identifier: (status, message) for identifier, _, status, message in counted} == {
        email: ("succeeded", None) if error is None else ("rejected", error)
        for email, error in api.answers.items()
    }

    # The most common rejection reason: the code before the colon (the messages echo values).
    reasons = Counter(error.split(":")[0] for error in api.answers.values() if error)
    assert len(reasons) > 1
    most_common = rows(
        database,
        "SELECT split_part(status_message, ':', 1) AS reason, COUNT(*) AS records FROM census.sync_log"
        " WHERE sync_run_id = ? AND status = 'rejected' AND invalid_reason IS NULL"
        " GROUP BY 1 ORDER BY 2 DESC LIMIT 1",
        run_id,
    )
    assert most_common == [reasons.most_common(1)[0]]

    # The engine retries: a batch logged again replaces its earlier copy.
    before = logged(database, run_id)
    with SyncLog.open(url, config, spark) as log:
        log.write(report.run, report.batches[2])
    assert logged(database, run_id) == before


def test_a_destination_outage_fails_the_run_and_aborts_what_was_not_sent(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the run store, `.synclog`, goes in the working folder
    database = tmp_path / "logs.duckdb"
    assert main(["--target", f"duckdb:///{database}", "--batch-size", "100", "--fail-from", "2"]) == 1
    assert " failed (HTTP 503: SERVICE_UNAVAILABLE: " in capsys.readouterr().out

    by_batch = rows(
        database,
        "SELECT batch_number, status, status_message LIKE 'Not attempted%', COUNT(*)"
        " FROM census.sync_log GROUP BY ALL ORDER BY ALL",
    )
    sent = {(batch, status) for batch, status, aborted, _ in by_batch if not aborted}
    unsent = {batch: records for batch, status, aborted, records in by_batch if aborted}
    assert {batch for batch, _ in sent} == {0}
    assert tuple(sorted({status for _, status in sent})) == ("rejected", "succeeded")
    assert unsent == {1: 60, 2: 40}  # the second upsert batch, then the deletes

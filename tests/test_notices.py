"""Notices: alert rules, webhook and Slack deliveries, OpenLineage run events and `synclog check`.

Deliveries go to a real HTTP receiver on loopback (`Receiver`); OpenLineage events through the
official client's http transport (configured by its own openlineage.yml) to the same receiver.
"""

from __future__ import annotations

import hmac
import json
import re
import threading
import time
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pyspark.sql import SparkSession

from synclog import BackgroundLog, project
from synclog.cli.main import main
from synclog.config import Config
from synclog.errors import ConfigError, InputError
from synclog.model import DestinationObject, Run, RunStatus, SourceObject
from synclog.naming import LineageDataset
from synclog.notices import lineage
from synclog.notices.delivery import SIGNATURE_HEADER, masked, signature
from synclog.notices.notify import Notices
from synclog.notices.rules import AlertRules, RunFacts, evaluate, outcome, stale
from synclog.storage.location import Location
from synclog.storage.run_state import RunState, RunStates
from synclog.storage.runstore import RunStore
from synclog.tracking import RecordQuery, RunQuery, find_records, find_runs
from synclog.writer import SyncLog
from synclog_testing.factories import RECORD_COLUMNS, make_records, make_run, record_rows

ROOT = Path(__file__).resolve().parent.parent
SECRET = "s3cret-signing-key"
NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps every POST (path, headers, body); `delay` seconds
    before answering, `status` as the answer."""

    def __init__(self, delay: float = 0.0, status: int = 200) -> None:
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                time.sleep(receiver.delay)
                receiver.received.append((self.path, dict(self.headers), body))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.delay, self.status = delay, status
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [json.loads(body) for p, _, body in self.received if p == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


def _config(tmp_path: Path, notices: str, alerts: str) -> Config:
    path = tmp_path / "synclog.toml"
    path.write_text(
        f'storage = "{tmp_path / "store"}"\n\n[notices]\n{notices}\n\n[defaults]\nlayouts = ["census"]\n'
        f"alerts = {{ {alerts} }}\n"
    )
    return Config.load(path)


def _healthy(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """`rows` all succeeded, with unique identifiers."""
    return [(f"ok{i}@example.com", r[1], "succeeded", None, *r[4:]) for i, r in enumerate(rows)]


# ---- rules, without Spark


def test_run_rules_fire_on_what_they_measure() -> None:
    rules = AlertRules(
        failed_run=True, rejection_rate=0.1, invalid_records=1, volume_change=0.5, volume_runs=3
    )
    bad = RunFacts(1, 7, "failed", {"succeeded": 5, "rejected": 3, "invalid_null": 1, "invalid_duplicate": 1})
    fired = {f.rule: f for f in evaluate(rules, bad, [40, 10, 30, 1])}
    assert sorted(fired) == ["failed_run", "invalid_records", "rejection_rate", "volume_change"]
    assert fired["rejection_rate"].measured == 0.3 and fired["rejection_rate"].threshold == 0.1
    assert fired["invalid_records"].measured == 2
    assert fired["volume_change"].measured == pytest.approx(2 / 3)  # 10 records against the median 30
    good = RunFacts(1, 8, "succeeded", {"succeeded": 19, "rejected": 1})
    assert evaluate(rules, good, [20, 10, 30]) == []
    assert evaluate(rules, good, [20, 10]) == [], "the volume rule waits for volume_runs earlier runs"
    assert evaluate(AlertRules(), bad, [100, 100, 100]) == [], "rules left unset never fire"


def test_volume_change_compares_with_the_median() -> None:
    rules = AlertRules(volume_change=0.5, volume_runs=3)
    spike = RunFacts(1, 9, "succeeded", {"succeeded": 200})
    (fired,) = evaluate(rules, spike, [100, 90, 1000, 5])  # the median of the newest three: 100
    assert fired.measured == 1.0 and "median 100" in fired.summary


def test_outcome_and_freshness() -> None:
    assert outcome("failed", 0) == "failed"
    assert outcome("succeeded", 3) == "aborted"
    assert outcome("running", 0) == "aborted"
    assert outcome("succeeded", 0) == "succeeded"
    rules = AlertRules(freshness_hours=24)
    assert stale(rules, 5, NOW - timedelta(hours=23), NOW) is None
    late = stale(rules, 5, NOW - timedelta(hours=30), NOW)
    assert late is not None and late.measured == 30 and "30.0 h ago" in late.summary
    never = stale(rules, 5, None, NOW)
    assert never is not None and never.measured is None
    assert stale(AlertRules(), 5, None, NOW) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[notices]\nwebhook = { url = 'ftp://x' }", "notices.webhook: url must start with http"),
        ("[notices]\nslack = { }", "notices.slack: give url or url_env"),
        ("[notices]\nslack = { url_env = 'X', secret_env = 'Y' }", "notices.slack: unknown key 'secret_env'"),
        ("[notices]\nretries = -1", "notices: retries must be a whole number"),
        ("[notices]\npager = {}", "notices: unknown key 'pager'"),
        (
            "[notices]\nopenlineage = { schema_url = 'urn:synclog:facet' }",
            "notices.openlineage: schema_url must be an http\\(s\\) URL a consumer can fetch",
        ),
        ("[notices]\nopenlineage = { producer = 9 }", "notices.openlineage: producer must be a string"),
        (
            "[defaults]\nalerts = { rejection_rate = 'high' }",
            "defaults.alerts: rejection_rate must be a number",
        ),
        ("[syncs.5]\nalerts = { failed_run = 1 }", "syncs.5.alerts: failed_run must be true or false"),
        ("[defaults]\nalerts = { volume_runs = 0 }", "defaults.alerts: volume_runs must be 1 or more"),
        ("[defaults]\nalerts = { lag = 1 }", "defaults.alerts: unknown key 'lag'"),
    ],
)
def test_bad_notice_settings_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "synclog.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Config.load(path)


def test_a_sync_overrides_the_default_rules(tmp_path: Path) -> None:
    path = tmp_path / "synclog.toml"
    path.write_text(
        "[defaults]\nalerts = { rejection_rate = 0.05, failed_run = true, freshness_hours = 26 }\n"
        "[syncs.7]\nalerts = { rejection_rate = 0.5, freshness_hours = false }\n"
    )
    config = Config.load(path)
    assert config.sync(1).alerts == AlertRules(failed_run=True, rejection_rate=0.05, freshness_hours=26)
    assert config.sync(7).alerts == AlertRules(failed_run=True, rejection_rate=0.5, freshness_hours=None)


def test_the_notice_page_examples_load() -> None:
    page = (ROOT / "docs/engines/notices.md").read_text()
    blocks = re.findall(r"^```toml\n(.*?)^```", page, re.S | re.M)
    config = Config.from_dict(tomllib.loads("\n".join(blocks)), source="docs/engines/notices.md")
    assert config.sync(1234).alerts.rejection_rate == 0.2 and config.sync(1234).alerts.freshness_hours is None
    assert config.sync(1).alerts.volume_runs == 5
    assert [e.kind for e in config.notices.endpoints] == ["webhook", "slack"]
    assert config.notices.lineage == lineage.LineageSettings(namespace="synclog")


def test_urls_are_masked_and_bodies_signed() -> None:
    assert masked("https://user:pw@hooks.example.com:8443/services/T0/B0/xyz?token=1") == (
        "https://hooks.example.com:8443/…"
    )
    body = b'{"rule": "failed_run"}'
    expected = hmac.new(SECRET.encode(), body, "sha256").hexdigest()
    assert signature(SECRET, body) == f"sha256={expected}"


# ---- a sync's runs, delivered to a loopback receiver


def _events_schema() -> dict[str, Any]:
    """The OpenLineage spec's required fields (2-0-2) as a JSON schema: openlineage-python ships
    its event classes, not the spec's JSON schemas."""
    facet = {"type": "object", "required": ["_producer", "_schemaURL"]}
    facets = {"type": "object", "additionalProperties": facet}
    dataset = {
        "type": "object",
        "required": ["namespace", "name"],
        "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}, "facets": facets},
    }
    return {
        "type": "object",
        "required": ["eventTime", "producer", "schemaURL", "run", "job", "eventType"],
        "properties": {
            "eventType": {"enum": ["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"]},
            "eventTime": {"type": "string", "format": "date-time"},
            "producer": {"type": "string", "format": "uri"},
            "schemaURL": {"type": "string", "format": "uri"},
            "run": {
                "type": "object",
                "required": ["runId"],
                "properties": {"runId": {"type": "string", "format": "uuid"}, "facets": facets},
            },
            "job": {
                "type": "object",
                "required": ["namespace", "name"],
                "properties": {"facets": facets},
            },
            "inputs": {"type": "array", "items": dataset},
            "outputs": {
                "type": "array",
                "items": {**dataset, "properties": {**dataset["properties"], "outputFacets": facets}},
            },
        },
    }


def _facet_schema() -> dict[str, Any]:
    """The published SynclogRunFacet.json, its reference to the spec's RunFacet resolved to the
    required fields."""
    schema = json.loads((ROOT / "docs" / lineage.FACET_SCHEMA_PATH).read_text())
    definition = schema["$defs"]["SynclogRunFacet"]
    definition["allOf"][0] = {"type": "object", "required": ["_producer", "_schemaURL"]}
    return definition


FORMATS = ("uri", "date-time", "uuid")
"""The formats the schemas declare. jsonschema skips a format it has no checker for, silently:
uri needs rfc3986-validator and date-time rfc3339-validator (the dev extra)."""


def _validate(event: dict[str, Any]) -> None:
    checker = jsonschema.FormatChecker()
    unchecked = [name for name in FORMATS if name not in checker.checkers]
    assert not unchecked, f"jsonschema has no checker for {unchecked}: install synclog[dev]"
    jsonschema.validate(event, _events_schema(), format_checker=checker)
    jsonschema.validate(event["run"]["facets"][lineage.FACET], _facet_schema(), format_checker=checker)


def test_an_aborted_run_ends_with_abort_the_same_run_id_and_the_spec_s_facet_keys() -> None:
    from openlineage.client.serde import Serde

    run = make_run(sync_run_id=42, status=RunStatus.RUNNING)
    counts = {"succeeded": 3, "aborted": 2}
    ended = outcome(run.status, counts["aborted"])
    settings = lineage.LineageSettings("acme")
    tables = [LineageDataset("duckdb:///srv/log.duckdb", "census.sync_log")]
    start = Serde.to_dict(lineage.run_event(run, settings, "running", run.started_at, {}, 0, tables))
    end = Serde.to_dict(lineage.run_event(run, settings, ended, NOW, counts, 3, tables))
    for event in (start, end):
        _validate(event)
    assert (start["eventType"], end["eventType"]) == ("START", "ABORT")
    assert (
        start["run"]["runId"] == end["run"]["runId"] == lineage.run_id(1234, 42) != lineage.run_id(1234, 43)
    )
    # Facet keys: the spec's own (jobType, outputStatistics), and one custom facet whose key is
    # {prefix}_{name}, prefixed with the producing project's name.
    for event in (start, end):
        assert list(event["job"]["facets"]) == ["jobType"]
        assert list(event["run"]["facets"]) == ["synclog_run"]
        assert re.fullmatch(r"synclog_[a-z][a-zA-Z]*", lineage.FACET)
    assert "outputFacets" not in start["outputs"][0] or start["outputs"][0]["outputFacets"] == {}
    assert list(end["outputs"][0]["outputFacets"]) == ["outputStatistics"]
    assert end["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 3
    assert [(o["namespace"], o["name"]) for o in end["outputs"]] == [
        ("synclog:connection:301", "object:401"),  # the engine named no dataset: synclog's ids do
        ("duckdb:///srv/log.duckdb", "census.sync_log"),
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [("producer", "not a uri"), ("schemaURL", "//no-scheme/x"), ("eventTime", "yesterday")],
)
def test_the_event_schema_check_refuses_a_malformed_uri_or_time(field: str, value: str) -> None:
    from openlineage.client.serde import Serde

    run = make_run(sync_run_id=42)
    event = Serde.to_dict(
        lineage.run_event(run, lineage.LineageSettings("acme"), "succeeded", NOW, {}, 0, [])
    )
    _validate(event)
    with pytest.raises(
        jsonschema.ValidationError, match=f"is not a '{'date-time' if field == 'eventTime' else 'uri'}'"
    ):
        _validate({**event, field: value})


def test_an_engine_names_its_source_and_destination_datasets() -> None:
    from openlineage.client.serde import Serde

    named = make_run(
        source_object=SourceObject(
            201, "Table", "users", lineage_namespace="postgres://app-db:5432", lineage_name="app.public.users"
        ),
        destination_object=DestinationObject(
            401, "Contact", "Contact", lineage_namespace="https://api.example.com", lineage_name="/contacts"
        ),
    )
    event = Serde.to_dict(lineage.run_event(named, lineage.LineageSettings(), "succeeded", NOW, {}, 0, []))
    named_as = [(d["namespace"], d["name"]) for d in (*event["inputs"], *event["outputs"])]
    assert named_as == [
        ("postgres://app-db:5432", "app.public.users"),
        ("https://api.example.com", "/contacts"),
    ]
    assert Run.from_dict(named.to_dict()) == named, "a run description carries them"
    with pytest.raises(InputError, match="give lineage_namespace and lineage_name together"):
        SourceObject(201, "Table", "users", lineage_namespace="postgres://app-db:5432")
    with pytest.raises(InputError, match=r"DestinationObject 401: give lineage_namespace"):
        Run.from_dict(
            {
                **named.to_dict(),
                "destination_object": {"id": 401, "type": "C", "name": "c", "lineage_name": "/c"},
            }
        )


def test_the_producer_and_schema_url_are_settings(tmp_path: Path) -> None:
    from openlineage.client.serde import Serde

    config = _config(
        tmp_path,
        'openlineage = { namespace = "acme", producer = "https://git.example.com/synclog/tree/v9", '
        'schema_url = "https://mirror.example.com/SynclogRunFacet.json#/$defs/SynclogRunFacet" }',
        "",
    )
    settings = config.notices.lineage
    assert settings is not None
    event = Serde.to_dict(lineage.run_event(make_run(), settings, "succeeded", NOW, {"succeeded": 1}, 1, []))
    facet = event["run"]["facets"]["synclog_run"]
    assert facet["_schemaURL"] == "https://mirror.example.com/SynclogRunFacet.json#/$defs/SynclogRunFacet"
    producers = {event["producer"], facet["_producer"], event["job"]["facets"]["jobType"]["_producer"]}
    assert producers == {"https://git.example.com/synclog/tree/v9"}


def test_a_run_kept_by_an_earlier_synclog_counts_its_unflagged_succeeded_records(tmp_path: Path) -> None:
    """run.json of a run kept before the accepted records were counted (finished after an upgrade)."""
    run = make_run()
    state = json.loads(RunState(run, statuses={0: {"succeeded": 5, "invalid_null": 1}}).to_json())
    del state["accepted"]
    folder = tmp_path / "runs" / str(run.sync_id) / str(run.sync_run_id)
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(state))
    assert RunStore(RunStates(Location.parse(str(tmp_path / "runs")))).accepted(run) == 5


# ---- OpenLineage run cycles, without Spark: events go to the client's file transport


class _WrittenLog:
    """What `Notices` reads of the log that wrote a run, for a log that names none of its tables
    (the datasets of the log's tables have tests of their own)."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @property
    def target(self) -> Any:
        raise AssertionError("no log table is named")

    def layouts(self, sync_id: int) -> tuple[str, ...]:
        return ()


@pytest.fixture
def lineage_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the OpenLineage client's file transport (its own openlineage.yml) appends each event."""
    events = tmp_path / "events.jsonl"
    (tmp_path / "openlineage.yml").write_text(
        f"transport:\n  type: file\n  log_file_path: {events}\n  append: true\n"
    )
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(tmp_path / "openlineage.yml"))
    return events


def _lineage_notices(tmp_path: Path) -> Notices:
    return Notices(_config(tmp_path, 'openlineage = { namespace = "acme" }', ""), _no_warning)


def _no_warning(line: str) -> None:
    raise AssertionError(line)


def _sent(events: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else []


def _expected(run: Run, event_type: str, at: str) -> dict[str, Any]:
    """The event the spec asks for, built with the client's own classes (no facets)."""
    from openlineage.client import event_v2 as ol
    from openlineage.client.serde import Serde

    # docs/engines/notices.md: an object the engine names no dataset for is
    # `synclog:connection:<connection id>` and `object:<object id>`
    source = (f"synclog:connection:{run.source.id}", f"object:{run.source_object.id}")
    destination = (f"synclog:connection:{run.destination.id}", f"object:{run.destination_object.id}")
    return Serde.to_dict(
        ol.RunEvent(
            eventType=ol.RunState[event_type],
            eventTime=at,
            run=ol.Run(runId=str(uuid.uuid5(lineage.RUN_NAMESPACE, f"{run.sync_id}/{run.sync_run_id}"))),
            job=ol.Job(namespace="acme", name=f"sync-{run.sync_id}"),
            inputs=[ol.InputDataset(namespace=source[0], name=source[1])],
            outputs=[ol.OutputDataset(namespace=destination[0], name=destination[1])],
            producer=lineage.LineageSettings().producer,
        )
    )


def _core(event: dict[str, Any]) -> dict[str, Any]:
    """An event without its facets: what the spec's run-cycle and naming rules are about."""
    return {
        "eventType": event["eventType"],
        "eventTime": event["eventTime"],
        "runId": event["run"]["runId"],
        "job": (event["job"]["namespace"], event["job"]["name"]),
        "inputs": [(d["namespace"], d["name"]) for d in event["inputs"]],
        "outputs": [(d["namespace"], d["name"]) for d in event["outputs"]],
        "producer": event["producer"],
        "schemaURL": event["schemaURL"],
    }


def test_a_run_written_again_has_one_run_cycle(tmp_path: Path, lineage_events: Path) -> None:
    start = datetime(2026, 3, 1, 9, tzinfo=UTC)
    run = make_run(sync_run_id=7, started_at=start, finished_at=start + timedelta(minutes=5))
    log = _WrittenLog(_config(tmp_path, "", ""))
    for _ in range(2):  # written and finished, then all of it again by a new process (a replay)
        notices = _lineage_notices(tmp_path)
        notices.started(log, run)
        notices.started(log, run)  # a second batch of the open run
        notices.finished(log, run, {"succeeded": 3}, 3)
        notices.started(log, run)  # a batch written after the run finished
        notices.close()
    events = _sent(lineage_events)
    assert [(e["eventType"], e["eventTime"]) for e in events] == [
        ("START", "2026-03-01T09:00:00+00:00"),
        ("COMPLETE", "2026-03-01T09:05:00+00:00"),
    ]
    assert [_core(e) for e in events] == [
        _core(_expected(run, "START", "2026-03-01T09:00:00+00:00")),
        _core(_expected(run, "COMPLETE", "2026-03-01T09:05:00+00:00")),
    ]

    # A run the engine says finished before it started (clock skew): its times still never go back.
    skewed = replace(run, sync_run_id=8, finished_at=start - timedelta(minutes=1), status=RunStatus.FAILED)
    notices = _lineage_notices(tmp_path)
    notices.finished(log, skewed, {"rejected": 2}, 0)  # no batch was written: START is sent first
    notices.close()
    later = [(e["eventType"], e["eventTime"]) for e in _sent(lineage_events)[2:]]
    assert later == [("START", "2026-03-01T09:00:00+00:00"), ("FAIL", "2026-03-01T09:00:00+00:00")]


def test_naive_run_times_are_utc_in_events_as_in_the_run(
    tmp_path: Path, lineage_events: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")  # the process's local zone: UTC-5 in March
    time.tzset()
    try:
        run = make_run(started_at=datetime(2026, 3, 1, 9), finished_at=datetime(2026, 3, 1, 9, 30))
        log, notices = _WrittenLog(_config(tmp_path, "", "")), _lineage_notices(tmp_path)
        notices.started(log, run)
        notices.finished(log, run, {"succeeded": 1}, 1)
        notices.close()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert [e["eventTime"] for e in _sent(lineage_events)] == [
        "2026-03-01T09:00:00+00:00",  # a naive time is UTC (synclog.model.as_utc), not local time
        "2026-03-01T09:30:00+00:00",
    ]


# ---- the events of a run written by SyncLog


@pytest.fixture(scope="module")
def written(
    tmp_path_factory: pytest.TempPathFactory, spark: SparkSession
) -> tuple[Path, list[dict[str, Any]], list[tuple[Any, ...]]]:
    """A run of 10 records logged by `write_run` into `duckdb:///logs.duckdb` (a path relative to
    the working folder), its OpenLineage events going to the client's file transport: the folder,
    the events and the records."""
    folder = tmp_path_factory.mktemp("written")
    (folder / "openlineage.yml").write_text(
        f"transport:\n  type: file\n  log_file_path: {folder / 'events.jsonl'}\n  append: true\n"
    )
    config = _config(folder, 'openlineage = { namespace = "acme" }', "")
    run = make_run(sync_run_id=11)
    rows = record_rows(run, 10)  # #4 and #9 rejected; #3 a NULL identifier, #9 repeats #8's
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("OPENLINEAGE_CONFIG", str(folder / "openlineage.yml"))
        with SyncLog.open("duckdb:///logs.duckdb", config, spark) as log:
            log.write_run(run, make_records(spark, rows))
    return folder, _sent(folder / "events.jsonl"), rows


def test_events_name_their_datasets_by_the_naming_spec(
    written: tuple[Path, list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    folder, events, _ = written
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    complete = events[-1]
    source = [(d["namespace"], d["name"]) for d in complete["inputs"]]
    destination, *tables = [(d["namespace"], d["name"]) for d in complete["outputs"]]
    # The engine named neither object: synclog's ids do, in a form no data source has.
    assert (source, destination) == (
        [("synclog:connection:101", "object:201")],
        ("synclog:connection:301", "object:401"),
    )
    # The log's tables, in DuckDB's file, named by its absolute path (not the relative URL's text).
    assert ("census.sync_log" in {name for _, name in tables}) and {ns for ns, _ in tables} == {
        f"duckdb://{folder}/logs.duckdb"
    }


def test_row_count_is_the_records_the_destination_accepted(
    written: tuple[Path, list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    _, events, rows = written
    accepted = sum(1 for row in rows if row[2] == "succeeded")  # the destination's answer per record
    complete = events[-1]
    assert complete["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == accepted == 8
    # The run's counts put the flagged records it accepted (#3 NULL, #8 DUPLICATE) under invalid.
    assert complete["run"]["facets"]["synclog_run"]["statuses"]["succeeded"] == 6


def test_the_facet_schema_and_the_producer_are_the_release_s(
    written: tuple[Path, list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    _, events, _ = written
    for event in events:
        _validate(event)
        published, _, pointer = event["run"]["facets"]["synclog_run"]["_schemaURL"].partition("#")
        assert published.startswith("https://"), "a URL a consumer can fetch"
        assert published.startswith(project.DOCS_URL) and pointer == "/$defs/SynclogRunFacet"
        version_folder = published.removeprefix(project.DOCS_URL).split("/")[-2]
        assert re.fullmatch(r"\d+-\d+-\d+", version_folder), "one path per version of the facet"
        schema_file = ROOT / "docs" / published.removeprefix(project.DOCS_URL)  # the site is built from docs/
        assert json.loads(schema_file.read_text())["$id"] == published
        assert event["producer"] == f"{project.SOURCE_URL}/tree/v{version('synclog')}"
    # The project's public URLs, the same wherever they are named.
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert (site["site_url"], site["repo_url"]) == (project.DOCS_URL, project.SOURCE_URL)
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert (urls["Documentation"], urls["Source"]) == (project.DOCS_URL, project.SOURCE_URL)


def test_a_sync_s_runs_send_notices_resolved_notices_and_lineage(
    tmp_path: Path, spark: SparkSession, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNCLOG_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("SYNCLOG_SLACK_URL", receiver.url("/slack/T0/B0/secret-path"))
    (tmp_path / "openlineage.yml").write_text(
        f"transport:\n  type: http\n  url: {receiver.url('')}\n  endpoint: lineage\n"
    )
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(tmp_path / "openlineage.yml"))
    config = _config(
        tmp_path,
        f'webhook = {{ url = "{receiver.url("/hook")}", secret_env = "SYNCLOG_WEBHOOK_SECRET" }}\n'
        'slack = { url_env = "SYNCLOG_SLACK_URL" }\nopenlineage = { namespace = "acme" }',
        "rejection_rate = 0.1, invalid_records = 0, failed_run = true, volume_change = 0.5, volume_runs = 2",
    )
    target = f"duckdb:///{tmp_path / 'log.duckdb'}"
    first = make_run(sync_run_id=1)
    second = make_run(sync_run_id=2, started_at=first.started_at + timedelta(minutes=10))
    third = make_run(
        sync_run_id=3,
        started_at=first.started_at + timedelta(minutes=20),
        status=RunStatus.FAILED,
        error="boom",
    )
    runs = [
        (first, record_rows(first, 40)),  # 8 of 40 rejected, a NULL and a DUPLICATE identifier
        (second, _healthy(record_rows(second, 40))),  # healthy again
        (third, _healthy(record_rows(third, 8))),  # failed, and 8 records against a median of 40
        (third, _healthy(record_rows(third, 8))),  # the same run written again
    ]
    messages: list[str] = []
    for run, rows in runs:  # a new SyncLog (a new process's) per run: what fired is kept in storage
        with SyncLog.open(target, config, spark, progress=messages.append) as log:
            log.write_run(run, make_records(spark, rows))

    hooks = receiver.bodies("/hook")
    assert [(h["sync_run_id"], h["state"], h["rule"]) for h in hooks] == [
        (1, "firing", "rejection_rate"),
        (1, "firing", "invalid_records"),
        (2, "resolved", "rejection_rate"),
        (2, "resolved", "invalid_records"),
        (3, "firing", "failed_run"),
        (3, "firing", "volume_change"),
    ]
    # 40 records: every 5th rejected, but #9 repeats #8's identifier (both DUPLICATE) and #3 is NULL
    assert hooks[0]["measured"] == 7 / 40 and hooks[0]["threshold"] == 0.1
    assert hooks[1]["measured"] == 3 and hooks[1]["threshold"] == 0
    assert hooks[5]["measured"] == 0.8 and "8 records, 80% off the median 40" in hooks[5]["summary"]
    for _, headers, body in [r for r in receiver.received if r[0] == "/hook"]:
        assert headers[SIGNATURE_HEADER] == signature(SECRET, body)
    slack = receiver.bodies("/slack/T0/B0/secret-path")
    assert [s["text"] for s in slack] == [f"synclog {h['summary']}" for h in hooks]
    assert all(block["type"] in ("section", "context") for s in slack for block in s["blocks"])

    events = receiver.bodies("/lineage")
    for event in events:
        _validate(event)
    ids = {n: lineage.run_id(1234, n) for n in (1, 2, 3)}
    assert [(e["run"]["runId"], e["eventType"]) for e in events] == [
        (ids[1], "START"),
        (ids[1], "COMPLETE"),
        (ids[2], "START"),
        (ids[2], "COMPLETE"),
        (ids[3], "START"),
        (ids[3], "FAIL"),  # the replay of run 3 sends nothing: its run cycle is over
    ]
    for first_event, last_event in zip(events[::2], events[1::2], strict=True):
        assert datetime.fromisoformat(first_event["eventTime"]) <= datetime.fromisoformat(
            last_event["eventTime"]
        )
    assert str(uuid.UUID(ids[3])) == ids[3] and ids[3] == lineage.run_id(1234, 3)
    complete = events[1]
    job = complete["job"]
    assert (job["namespace"], job["name"], job["facets"]["jobType"]["processingType"]) == (
        "acme",
        "sync-1234",
        "BATCH",
    )
    assert [(i["namespace"], i["name"]) for i in complete["inputs"]] == [
        ("synclog:connection:101", "object:201")
    ]
    destination, *tables = complete["outputs"]
    # 40 records, 8 rejected: the destination accepted 32, the NULL (#3) and DUPLICATE (#8)
    # identifiers among them; the run's counts put those two under invalid (30 succeeded).
    assert (destination["name"], destination["outputFacets"]["outputStatistics"]["rowCount"]) == (
        "object:401",
        32,
    )
    assert (f"duckdb://{tmp_path / 'log.duckdb'}", "census.sync_log") in {
        (t["namespace"], t["name"]) for t in tables
    }
    facet = complete["run"]["facets"]["synclog_run"]
    assert facet["statuses"] == {"succeeded": 30, "rejected": 7, "invalid_null": 1, "invalid_duplicate": 2}
    assert (facet["records"], facet["outcome"]) == (40, "succeeded")
    # Run 3 failed after some of its records reached the destination: partial.
    assert events[5]["run"]["facets"]["synclog_run"]["outcome"] == "partial"
    everything = b" ".join(body for _, _, body in receiver.received)
    assert b"example.com" not in everything and b"boom" not in everything, "no payload values, no errors"
    assert not [m for m in messages if m.startswith("warning")]


def test_the_cli_shows_the_console_transport_s_events(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "openlineage.yml").write_text("transport:\n  type: console\n")
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(tmp_path / "openlineage.yml"))
    config = tmp_path / "synclog.toml"
    config.write_text(
        f'storage = "{tmp_path / "store"}"\n[notices]\nopenlineage = {{ namespace = "acme" }}\n'
    )
    run = make_run(sync_run_id=9)
    (tmp_path / "run.json").write_text(json.dumps(run.to_dict()))
    records = [dict(zip(RECORD_COLUMNS, row, strict=True)) for row in record_rows(run, 4)]
    lines = [json.dumps(r, default=lambda moment: moment.isoformat()) for r in records]
    (tmp_path / "records.jsonl").write_text("\n".join(lines))
    target = f"duckdb:///{tmp_path / 'log.duckdb'}"
    files = ["--run", str(tmp_path / "run.json"), "--records", str(tmp_path / "records.jsonl")]
    assert main(["--config", str(config), "write", *files, "--target", target]) == 0
    shown = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    assert [(e["eventType"], e["job"]["name"]) for e in shown] == [
        ("START", "sync-1234"),
        ("COMPLETE", "sync-1234"),
    ]


def test_a_receiver_down_or_slow_changes_nothing_and_waits_a_bounded_time(
    tmp_path: Path, spark: SparkSession
) -> None:
    """Deliveries run behind the write: when `write_run` returns, no delivery to the slow receiver
    has ended (its first try alone takes the 1 s timeout), where a delivery inside the write would
    have given up, warning, before the write returned; `close` waits for them a bounded time."""
    slow = Receiver(delay=20)
    down = Receiver()
    down_url = down.url("/hook")
    down.close()
    try:
        config = _config(
            tmp_path,
            f'webhook = {{ url = "{down_url}" }}\nslack = {{ url = "{slow.url("/slack/secret-path")}" }}\n'
            "timeout_seconds = 1\nretries = 1",
            "rejection_rate = 0.1",
        )
        run = make_run(sync_run_id=1)
        rows = record_rows(run, 40)
        quiet = replace(config, notices=replace(config.notices, endpoints=()))
        results: dict[str, tuple[list[Any], list[Any]]] = {}
        warnings: list[str] = []
        for name, settings in (("quiet", quiet), ("noisy", config)):
            target = f"duckdb:///{tmp_path / f'{name}.duckdb'}"
            with SyncLog.open(target, settings, spark, progress=warnings.append) as log:
                log.write_run(run, make_records(spark, rows))
                given_up = [w for w in warnings if "to slack" in w]
                started = time.perf_counter()
                log.notices.close()
                closed = time.perf_counter() - started
                records = find_records(log.target, RecordQuery(1234, limit=100)).to_pylist()
                results[name] = (records, find_runs(log.target, RunQuery(1234)).to_pylist())
        assert len(results["noisy"][0]) == 40 and results["noisy"] == results["quiet"]
        assert given_up == [], "the write waited for the slow receiver"
        assert closed <= config.notices.patience + 1.0
        assert any(f"to webhook {masked(down_url)} not delivered after 2 tries" in w for w in warnings)
        assert any("to slack" in w and "not delivered" in w for w in warnings)
        assert all("\n" not in w and "secret-path" not in w for w in warnings)
    finally:
        slow.close()


def test_check_exits_by_the_rules_and_sends_freshness_once(
    tmp_path: Path, spark: SparkSession, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"duckdb:///{tmp_path / 'log.duckdb'}"
    run = make_run(sync_run_id=1)  # its batches completed about an hour ago
    with SyncLog.open(target, Config.from_dict({"storage": str(tmp_path / "store")}), spark) as log:
        log.write_run(run, make_records(spark, _healthy(record_rows(run, 10))))

    def check(alerts: str) -> tuple[int, list[str]]:
        path = tmp_path / "synclog.toml"
        path.write_text(
            f'storage = "{tmp_path / "store"}"\n[notices]\nwebhook = {{ url = "{receiver.url("/hook")}" }}\n'
            f"[defaults]\nalerts = {{ {alerts} }}\n"
        )
        code = main(["--config", str(path), "check", "--target", target])
        return code, capsys.readouterr().out.splitlines()

    assert check("freshness_hours = 2, failed_run = true") == (0, ["check: no rule fires"])
    code, lines = check("freshness_hours = 0.5")
    assert code == 1 and len(lines) == 1 and lines[0].startswith("freshness: sync 1234: last run finished")
    assert check("freshness_hours = 0.5")[0] == 1  # still stale: no second notice
    assert check("freshness_hours = 2")[0] == 0  # fresh again: resolved
    code, lines = check("rejection_rate = 0.0, invalid_records = 0")
    assert (code, lines) == (0, ["check: no rule fires"])
    hooks = [(h["state"], h["rule"]) for h in receiver.bodies("/hook")]
    assert hooks == [("firing", "freshness"), ("resolved", "freshness")]
    path = tmp_path / "synclog.toml"
    path.write_text("[defaults]\nalerts = { freshness = 1 }\n")
    assert main(["--config", str(path), "check", "--target", target]) == 2
    assert "unknown key 'freshness'" in capsys.readouterr().err


def test_a_batch_a_background_load_refused_is_a_notice_that_names_no_value(
    tmp_path: Path, spark: SparkSession, receiver: Receiver
) -> None:
    """No rule needed: the endpoint hears of the refused write, its batch, run and column, and
    not the value that broke the contract (a record's value never leaves in a notice)."""
    config = _config(tmp_path, f'webhook = {{ url = "{receiver.url("/hook")}" }}', "")
    run = make_run()
    rows = [dict(zip(RECORD_COLUMNS, r, strict=True)) for r in record_rows(run, count=10, batches=1)]
    rows[4]["status"] = "secret-looking-value"
    with BackgroundLog.open(f"duckdb:///{tmp_path / 'logs.duckdb'}", config, spark) as log:
        log.write(run, rows)
        log.finish(run)
    (notice,) = receiver.bodies("/hook")
    assert (notice["state"], notice["rule"], notice["measured"]) == ("firing", "refused_batch", 10)
    assert notice["summary"] == (
        f"firing refused_batch: sync {run.sync_id}: batch 0 of run {run.sync_run_id} refused "
        "(a value in column 'status' breaks the contract); its records are kept in storage"
    )
    assert "secret-looking-value" not in json.dumps(notice)

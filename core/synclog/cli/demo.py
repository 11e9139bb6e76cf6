"""`synclog demo`: write a simulated sync history, then answer the seeds' questions on it."""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from synclog.cli.output import format_table
from synclog.config import Config, SyncSettings
from synclog.demo import report
from synclog.demo.report import Unanswerable
from synclog.demo.simulator import DEMO_ORG_ID, HISTORY_DAYS, RUNS_PER_SYNC, SYNCS, history, records
from synclog.errors import TargetError, first_line
from synclog.targets.base import Target
from synclog.writer import SyncLog

DEMO_TARGET = "duckdb:///synclog-demo.duckdb"
"""What the demo writes where synclog.toml does not choose layouts."""


def add_parser(subs: Any) -> None:
    """Add `synclog demo` to the parser."""
    demo = subs.add_parser(
        "demo", help="simulate ten days of syncs and log them (census and hightouch layouts by default)"
    )
    demo.add_argument("--target", default=DEMO_TARGET, help=f"target URL or name (default: {DEMO_TARGET})")
    demo.add_argument(
        "--emit-inputs",
        type=Path,
        metavar="DIR",
        help="also write each run's inputs as DIR/<sync_run_id>/run.json and records.parquet",
    )
    demo.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="people per sync relative to the default (1.0 gives about 130,000 records)",
    )
    demo.add_argument(
        "--days",
        type=_days,
        default=HISTORY_DAYS,
        help=f"only the runs of the last DAYS of the {HISTORY_DAYS} (default {HISTORY_DAYS}; 1 gives "
        "one run per sync): the same runs, fewer of them",
    )
    demo.add_argument(
        "--now",
        type=_now,
        metavar="TIME",
        help="a fixed clock: the history ends, and retention counts, at TIME (ISO 8601, e.g. "
        "2026-03-01T08:00:00Z; UTC without an offset) instead of the current time, so that two "
        "targets' demos hold the same rows",
    )
    demo.set_defaults(handler=run_demo)


def _days(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= HISTORY_DAYS:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {HISTORY_DAYS}, got {text}")
    return int(text)


def _now(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be an ISO 8601 time such as 2026-03-01T08:00:00Z, got {text!r}"
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def run_demo(args: argparse.Namespace) -> int:
    """Simulate, write, report, clean up."""
    if not 0 < args.scale <= 100:
        raise SystemExit(f"synclog: error: --scale must be in (0, 100], got {args.scale}")
    now = args.now or datetime.now(UTC).replace(microsecond=0)
    runs = history(now, args.scale, args.days)
    with SyncLog.open(args.target, Config.load(args.config), writes=True) as log:
        log.config = demo_config(log.config, log.connector.capabilities.layouts)
        print(f"writing {len(runs)} runs of {len(SYNCS)} syncs over the last {args.days} days into {log.url}")
        total = 0
        for number, sim in enumerate(runs, 1):
            frame = records(log.spark, sim, args.scale)
            if args.emit_inputs:
                emit_inputs(args.emit_inputs, sim.run.to_dict(), frame)
            result = log.write_run(sim.run, frame)
            total += result.records
            rejected = result.statuses.get("rejected", 0) + result.statuses.get("aborted", 0)
            invalid = sum(n for s, n in result.statuses.items() if s.startswith("invalid"))
            print(
                f"[{number:2d}/{len(runs)}] {sim.run.started_at:%Y-%m-%d %H:%M}  "
                f"sync {sim.run.sync_id} run {sim.run.sync_run_id}  "
                f"{result.records:7,} records  {rejected:5,} rejected  {invalid:3,} invalid  "
                f"{result.seconds:4.1f}s",
                flush=True,
            )
        print(f"logged {total:,} records\n")
        unanswered = _print_answers(log)
        cleaned = log.cleanup(now)
        print(f"retention: {cleaned.total:,} rows older than their sync's retention deleted")
        if unanswered:
            raise TargetError(f"{log.url} could not answer {unanswered} of the demo's questions (see above)")
    if args.target == DEMO_TARGET:
        print("\ntry:  synclog records --target duckdb:///synclog-demo.duckdb --sync 1234 --status rejected")
    return 0


def demo_config(config: Config, held: tuple[str, ...]) -> Config:
    """`config`, writing every layout the target holds wherever it keeps the default layouts."""

    def every(settings: SyncSettings) -> SyncSettings:
        return settings if settings.layouts else replace(settings, layouts=held)

    syncs = {sync_id: every(settings) for sync_id, settings in config.syncs.items()}
    return replace(config, defaults=every(config.defaults), syncs=syncs)


Question = tuple[str, Callable[[], pa.Table]]
"""What the demo asks (its heading), and how the target answers it."""


def _print_answers(log: SyncLog) -> int:
    """The answers of each layout the demo wrote (a layout without answers prints none); how many
    questions the target failed to answer. A question the target cannot ask (its SQL needs a
    capability the target lacks) says so in one line; one that fails says so in one line too,
    and the rest are asked all the same."""
    last = SYNCS[0].first_run_id + RUNS_PER_SYNC - 1  # sync 1234's last run: 5678
    written = dict.fromkeys(name for sync in SYNCS for name in log.layouts(sync.sync_id))
    failed = 0
    for name in written:
        questions = QUESTIONS.get(name)
        if questions is not None:
            failed += sum(not _ask(log.target, question) for question in questions(log.target, last))
    return failed


def _ask(target: Target, question: Question) -> bool:
    """Print a question and its answer; False when the target failed to answer it."""
    heading, answer = question
    print(heading)
    try:
        table = answer()
    except Unanswerable as exc:
        print(f"  not asked: {exc}\n")
        return True
    except (TargetError, KeyboardInterrupt):
        raise  # an outage: what follows would fail as well
    except Exception as exc:
        print(f"  {target.url} could not answer it: {type(exc).__name__}: {first_line(exc)}\n")
        return False
    print(format_table(table), "\n")
    return True


def _hightouch_questions(target: Target, last: int) -> list[Question]:
    return [
        (
            "What is the most common sync error? (hightouch_audit.sync_snapshot)",
            lambda: report.sync_errors(target),
        ),
        (
            "Who entered, changed and left each audience, run by run? (sync_changelog, sync_runs)",
            lambda: report.audience_moves(target),
        ),
        ("Which rows does each model hold now? (sync_snapshot)", lambda: report.current_members(target)),
    ]


def _census_questions(target: Target, last: int) -> list[Question]:
    return [
        (
            "What is the most common reason the destinations reject records?",
            lambda: report.rejection_reasons(target),
        ),
        ("Which records failed the identifier checks?", lambda: report.invalid_records(target)),
        (
            f"Who entered and who left the segment in sync 1234's run {last}?",
            lambda: report.segment_changes(target, 1234, last),
        ),
    ]


def _lake_questions(target: Target, last: int) -> list[Question]:
    org = DEMO_ORG_ID
    seed = report.SEED_003.replace(report.SEED_003_PATH, repr(target.uri(report.run_files(org, 1234, last))))
    return [
        (
            f"Why were records of sync 1234's run {last} rejected? (seed 003, on {target.uri()})\n{seed}",
            lambda: report.rejected_records(target, org, 1234, last),
        ),
        ("Which statuses do the lake's records have?", lambda: report.lake_statuses(target)),
        (
            f"What do the payloads of run {last} hold? (its metadata.json)",
            lambda: report.lake_payload_schema(target, org, 1234, last),
        ),
    ]


QUESTIONS: dict[str, Callable[[Target, int], list[Question]]] = {
    "census": _census_questions,
    "hightouch": _hightouch_questions,
    "lake": _lake_questions,
}
"""The questions the demo asks, per layout."""


def emit_inputs(folder: Path, run: dict[str, Any], frame: DataFrame) -> None:
    """Write a run's inputs as `folder/<run id>/run.json` and one `records.parquet` file."""
    run_dir = folder / str(run["sync_run_id"])
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    scratch = Path(tempfile.mkdtemp(prefix="synclog-emit-", dir=folder))
    try:
        frame.coalesce(1).write.mode("overwrite").parquet(str(scratch / "out"))
        (part,) = (scratch / "out").glob("*.parquet")
        part.replace(run_dir / "records.parquet")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

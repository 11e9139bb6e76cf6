"""`python -m synclog_example_engine [--target URL]`: one run against a contacts API started on loopback."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext

from synclog import BackgroundLog, RunStatus, SynclogError, TargetError
from synclog_example_engine.destination import ContactsAPI
from synclog_example_engine.engine import SYNC_NAME, SyncReport, contacts_run, sync
from synclog_example_engine.source import already_in_destination, changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m synclog_example_engine", description=__doc__)
    parser.add_argument("--target", default="duckdb:///engine-logs.duckdb", help="synclog target URL or name")
    parser.add_argument("--sync", default=SYNC_NAME, help=f"the sync's name (default {SYNC_NAME})")
    parser.add_argument("--batch-size", type=int, default=40)
    parser.add_argument("--upserts", type=int, default=160, help="contacts to upsert (default 160)")
    parser.add_argument("--deletes", type=int, default=40, help="contacts to delete (default 40)")
    parser.add_argument("--fail-from", type=int, help="the API fails from this request on (1 = the first)")
    parser.add_argument(
        "--answer-seconds", type=float, default=0.0, help="the API takes this long to answer each batch"
    )
    parser.add_argument(
        "--no-log", action="store_true", help="sync without a log (to see what logging costs)"
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="exit once the run's end is queued, without waiting for its result (a loader loads it)",
    )
    args = parser.parse_args(argv)
    if args.batch_size < 1 or (args.fail_from is not None and args.fail_from < 1):
        parser.error("--batch-size and --fail-from must be at least 1")
    if min(args.upserts, args.deletes, args.answer_seconds) < 0:
        parser.error("--upserts, --deletes and --answer-seconds must not be negative")
    source = changes(args.upserts, args.deletes)
    existing = already_in_destination(source)
    try:
        with (
            ContactsAPI(existing, failing_from=args.fail_from, answer_seconds=args.answer_seconds) as api,
            nullcontext(None) if args.no_log else BackgroundLog.open(args.target, progress=warnings) as log,
        ):
            report = sync(
                source, api.url, log, contacts_run(api_url=api.url, sync_name=args.sync), args.batch_size
            )
        # Leaving the block closed the log: its own loads have ended (a loader's are its own).
        print(summary(report, args.target, wait=not args.no_wait))
    except SynclogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, TargetError) else 2
    return 0 if report.run.status == RunStatus.SUCCEEDED else 1


def warnings(line: str) -> None:
    """What the log reports: its warnings (an outage, a refused batch) on standard error."""
    if line.startswith("warning:"):
        print(line, file=sys.stderr)


def summary(report: SyncReport, target: str, *, wait: bool = True) -> str:
    """One line: the run, how it ended, and its records by status as logged (without `wait`: as
    queued, the log's result not waited for)."""
    why = f" ({report.run.error})" if report.run.error else ""
    head = f"run {report.run.extra['run_id']} {report.run.status}{why}"
    records = sum(len(batch) for batch in report.batches)
    if report.logged is None:
        return f"{head}: {records} records, not logged"
    if not wait:
        return f"{head}: {records} records, queued for {target}"
    logged = report.logged.wait()
    counts = ", ".join(f"{n} {status}" for status, n in sorted(logged.statuses.items()))
    refused = f" ({len(logged.refused)} write(s) refused: see the warnings)" if logged.refused else ""
    kept = ", kept for `synclog flush` (the warehouse did not answer)" if logged.pending else ""
    return f"{head}: {counts}, logged to {target}{kept}{refused}"


if __name__ == "__main__":
    sys.exit(main())

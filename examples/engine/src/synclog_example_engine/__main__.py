"""`python -m synclog_example_engine [--target URL]`: one run against a contacts API started on loopback."""

from __future__ import annotations

import argparse
import sys

from synclog import RunStatus, SyncLog, SynclogError, TargetError
from synclog_example_engine.destination import ContactsAPI
from synclog_example_engine.engine import contacts_run, sync
from synclog_example_engine.source import already_in_destination, changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m synclog_example_engine", description=__doc__)
    parser.add_argument("--target", default="duckdb:///engine-logs.duckdb", help="synclog target URL or name")
    parser.add_argument("--batch-size", type=int, default=40)
    parser.add_argument("--fail-from", type=int, help="the API fails from this request on (1 = the first)")
    args = parser.parse_args(argv)
    if args.batch_size < 1 or (args.fail_from is not None and args.fail_from < 1):
        parser.error("--batch-size and --fail-from must be at least 1")
    source = changes()
    try:
        with (
            ContactsAPI(already_in_destination(source), failing_from=args.fail_from) as api,
            SyncLog.open(args.target) as log,
        ):
            report = sync(source, api.url, log, contacts_run(api_url=api.url), args.batch_size)
    except SynclogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, TargetError) else 2
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.statuses.items()))
    why = f" ({report.run.error})" if report.run.error else ""
    print(f"run {report.run.extra['run_id']} {report.run.status}{why}: {counts}, logged to {args.target}")
    return 0 if report.run.status == RunStatus.SUCCEEDED else 1


if __name__ == "__main__":
    sys.exit(main())

"""The `write`, `cleanup`, `records`, `runs`, `check`, `flush`, `plugins` and `serve` commands.

Only `write` (and `flush` with runs kept) start Spark: the others read or delete with the
target's own SQL.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from synclog.cli.output import format_rows, format_table, write_rows
from synclog.config import Config
from synclog.errors import ConfigError
from synclog.ids import id_of
from synclog.inputs import read_records
from synclog.layouts.registry import LAYOUTS
from synclog.loading.lease import LeaseHeld
from synclog.loading.service import flush
from synclog.model import Run
from synclog.plugins.manager import registry
from synclog.result_files import OUT_SUFFIXES
from synclog.spark import LOG_LEVEL_ENV
from synclog.tracking import RecordQuery, RunQuery, Tracked, find_records, find_runs
from synclog.writer import SyncLog

_ID_HELP = "{} id, or its name (mapped to the id by synclog.stable_id)"


def add_parsers(subs: Any) -> None:
    """Add the commands of this module to the `synclog` parser."""
    write = subs.add_parser("write", help="log one run's record results from files")
    write.add_argument("--run", required=True, type=Path, help="run description (.json or .toml)")
    write.add_argument(
        "--records", required=True, type=Path, help="record results (.parquet file or folder, .jsonl)"
    )
    write.add_argument(
        "--in-progress",
        action="store_true",
        help="the run is still going: log these batches, and finish the run in a later call",
    )
    _target_option(write)
    write.set_defaults(handler=run_write)

    cleanup = subs.add_parser("cleanup", help="delete log rows older than each sync's retention")
    _target_option(cleanup)
    cleanup.set_defaults(handler=run_cleanup)

    records = subs.add_parser("records", help="show logged records of a sync (Sync Tracking)")
    records.add_argument("--sync", required=True, type=id_of, help=_ID_HELP.format("sync"))
    records.add_argument("--run", type=id_of, help=_ID_HELP.format("sync run"))
    records.add_argument(
        "--status",
        choices=[s.value for s in Tracked],
        help="record state (failed: rejected or invalid)",
    )
    records.add_argument("--search", metavar="IDENTIFIER", help="one record by its identifier")
    _page_options(records)
    _target_option(records)
    records.set_defaults(handler=run_records)

    runs = subs.add_parser("runs", help="list a sync's runs with records by status (Sync History)")
    runs.add_argument("--sync", required=True, type=id_of, help=_ID_HELP.format("sync"))
    _page_options(runs)
    _target_option(runs)
    runs.set_defaults(handler=run_runs)

    check = subs.add_parser(
        "check",
        help="apply each sync's alert rules (freshness, and the last run's); exit 1 when one fires",
    )
    check.add_argument("--sync", type=int, action="append", help="sync id (repeat; default: every sync)")
    _target_option(check)
    check.set_defaults(handler=run_check)

    flush = subs.add_parser(
        "flush", help="load batches kept while the target was down, and what ended writers left queued"
    )
    _target_option(flush)
    flush.set_defaults(handler=run_flush)

    plugins = subs.add_parser("plugins", help="list installed targets and their capabilities")
    plugins.set_defaults(handler=run_plugins)

    serve = subs.add_parser(
        "serve", help="browse syncs, runs and records in a read-only web page (needs synclog[serve])"
    )
    _target_option(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="port to listen on (default: 8000)")
    serve.add_argument(
        "--auth-token",
        help="a token every request must carry (default: $SYNCLOG_SERVE_TOKEN); "
        "required to listen on anything but a loopback address",
    )
    serve.set_defaults(handler=run_serve)


def _target_option(parser: argparse.ArgumentParser, default_help: str = "") -> None:
    parser.add_argument(
        "--target",
        help="target URL or a name from synclog.toml "
        + (default_help or "(default: [targets.default], else duckdb:///synclog.duckdb)"),
    )


def _page_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--layout",
        choices=sorted(LAYOUTS),
        help="the layout to read (default: the first one the target holds records in)",
    )
    parser.add_argument("--limit", type=_positive, default=20, help="rows at most (default 20)")
    parser.add_argument("--offset", type=_not_negative, default=0, help="rows to skip first (default 0)")
    parser.add_argument(
        "--out",
        type=_out_file,
        metavar="FILE",
        help=f"write the rows to FILE instead ({', '.join(OUT_SUFFIXES)})",
    )


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _not_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"must be a port number (1-65535), got {text}")
    return value


def _out_file(text: str) -> Path:
    path = Path(text)
    if path.suffix.lower() not in OUT_SUFFIXES:
        raise argparse.ArgumentTypeError(f"must end in {', '.join(OUT_SUFFIXES)}, got {text}")
    return path


def open_log(args: argparse.Namespace, **kwargs: Any) -> SyncLog:
    """The SyncLog for `--target` and `--config`."""
    return SyncLog.open(args.target, Config.load(args.config), **kwargs)


def run_write(args: argparse.Namespace) -> int:
    """`synclog write`: validate and log one run's record results."""
    run = Run.from_file(args.run)
    with open_log(args, progress=print, writes=True) as log:
        records = read_records(log.spark, args.records)
        result = log.write(run, records) if args.in_progress else log.write_run(run, records)
    statuses = ", ".join(f"{n:,} {s}" for s, n in sorted(result.statuses.items()))
    if result.pending:
        print(
            f"target unavailable: {result.records:,} records of run {run.sync_run_id} "
            "kept for `synclog flush`"
        )
        return 0
    print(
        f"logged {result.records:,} records of run {run.sync_run_id} ({statuses}) "
        f"into {log.url} in {result.seconds:.1f}s"
    )
    return 0


def run_check(args: argparse.Namespace) -> int:
    """`synclog check`: one line per rule that fires (exit 1), else one line saying none does."""
    with open_log(args, read_only=True, progress=_warn) as log:
        fired = log.notices.check(log.target, datetime.now(UTC), args.sync or ())
    for firing in fired:
        print(f"{firing.rule}: {firing.summary}")
    if not fired:
        print("check: no rule fires")
    return 1 if fired else 0


def _warn(message: str) -> None:
    print(message, file=sys.stderr)


def run_flush(args: argparse.Namespace) -> int:
    """`synclog flush`: load what waits in the queue for a loader (none runs) or was left there
    by engines that ended, and retry the loads that failed while the target was down. Where a
    loader runs, it does both itself: flush says so and loads nothing (nor opens the target).

    Exits 1 while runs still wait for the target, 2 when a layout refused a run (it stays kept,
    and each is named with the reason)."""
    with SyncLog.configured(args.target, Config.load(args.config), progress=print) as log:
        try:
            queued, still = flush(log, print)
        except LeaseHeld as exc:
            print(f"{exc}: it loads what is queued and retries what is kept")
            still = log.spool.every()
        else:
            print(f"loaded {queued} queued item(s); {len(still)} run(s) still kept")
    refused = [p for p in still if p.refused]
    for pending in refused:
        print(
            f"kept, refused: run {pending.run.sync_run_id} of sync {pending.run.sync_id}: {pending.refused}"
        )
    return 2 if refused else 1 if still else 0


def run_cleanup(args: argparse.Namespace) -> int:
    """`synclog cleanup`: apply retention."""
    with open_log(args, read_only=True) as log:
        result = log.cleanup(datetime.now(UTC))
    for table, count in result.deleted.items():
        print(f"{table}: {count:,} expired rows deleted")
    print(f"cleanup done: {result.total:,} rows deleted")
    return 0


def run_records(args: argparse.Namespace) -> int:
    """`synclog records`: filter, search and page through a sync's logged records."""
    with open_log(args, read_only=True) as log:
        searched = log.policy(args.sync).search_terms(args.search) if args.search else ()
        query = RecordQuery(
            sync_id=args.sync,
            sync_run_id=args.run,
            status=Tracked(args.status) if args.status else None,
            identifiers=searched,
            limit=args.limit,
            offset=args.offset,
        )
        table = find_records(log.target, query, args.layout)
    _show(table, args.out, "records", max_width=48)
    return 0


def run_runs(args: argparse.Namespace) -> int:
    """`synclog runs`: a sync's runs, newest first, with their records by status."""
    with open_log(args, read_only=True) as log:
        table = find_runs(log.target, RunQuery(args.sync, args.limit, args.offset), args.layout)
    _show(table, args.out, "runs")
    return 0


def _show(table: pa.Table, out: Path | None, what: str, max_width: int = 60) -> None:
    if out is not None:
        write_rows(table, out)
        print(f"{table.num_rows:,} {what} written to {out}")
    elif table.num_rows == 0:
        print(f"no {what} match", file=sys.stderr)
    else:
        print(format_table(table, max_width=max_width))


def run_plugins(args: argparse.Namespace) -> int:
    """`synclog plugins`: the installed targets and what each can do."""
    types = registry().types()
    print(
        format_rows(
            ["target", "URL schemes", "example", "summary"],
            [[t.name, ", ".join(f"{s}://" for s in t.schemes), t.example_url, t.summary] for t in types],
        )
    )
    print()
    header = ["capability", *[t.name for t in types]]
    names = [name for name, _ in types[0].capabilities.as_rows()] if types else []
    rows = [[name, *[dict(t.capabilities.as_rows())[name] for t in types]] for name in names]
    print(format_rows(header, rows))
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """`synclog serve`: the Sync Tracking pages, until interrupted."""
    try:
        import uvicorn

        from synclog.serve import TOKEN_ENV, Viewer, create_app, is_loopback
    except ImportError as exc:
        raise ConfigError(
            f"synclog serve needs the serve extra ({exc.name} is missing): pip install 'synclog[serve]'"
        ) from None
    token = args.auth_token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(args.host):
        raise ConfigError(
            f"--host {args.host} is reachable from other machines: set {TOKEN_ENV} (or --auth-token) "
            "so that only people with the token see the logs"
        )
    viewer = Viewer.open(args.target, Config.load(args.config))
    with viewer.target():  # connect now: a wrong URL or password shows at once
        pass
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"synclog serve: {viewer.url} on http://{shown}:{args.port}/ (Ctrl-C stops)", flush=True)
    try:
        uvicorn.run(
            create_app(viewer, token),
            host=args.host,
            port=args.port,
            log_level="info" if os.environ.get(LOG_LEVEL_ENV) else "warning",
            access_log=bool(os.environ.get(LOG_LEVEL_ENV)),
        )
    finally:
        viewer.close()
    return 0

"""`synclog loader start|stop|status|run`: the one loader of a storage and target (`synclog.loading`)."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from synclog.config import Config
from synclog.loading import process
from synclog.loading.lease import Lease, lease_for
from synclog.loading.service import Loader
from synclog.storage.queue import LoadQueue
from synclog.storage.run_state import RunStates
from synclog.storage.spool import Spool
from synclog.writer import SyncLog

_NONE = "no loader serves {target} on {storage}"


def add_parser(subs: Any) -> None:
    """Add `synclog loader` to the `synclog` parser."""
    loader = subs.add_parser(
        "loader",
        help="start, stop, show or run the loader that loads every engine's queued batches",
    )
    loader.add_argument("action", choices=["start", "stop", "status", "run"])
    loader.add_argument(
        "--target",
        help="target URL or a name from synclog.toml (default: [targets.default], else duckdb:///synclog.duckdb)",
    )
    loader.set_defaults(handler=run_loader)


def lease_of(config: Config, target: str | None) -> Lease:
    """The lease of the loader of `target` (as `--target` names it) on the configured storage."""
    url, _ = config.resolve_target(target)
    return lease_for(config.storage, url)


def start_loader(config: Config, config_path: str | None, target: str | None) -> str:
    """Start the loader of `target` unless one runs; one line saying which runs."""
    lease = lease_of(config, target)
    holder, started = process.start(lease, target or "", config_path)
    verb = "started" if started else "already running:"
    return f"{verb} loader for {lease.shown} ({holder.describe()}, log {process.log_file(lease)})"


def stop_loader(config: Config, target: str | None) -> str:
    """Stop the loader of `target`; one line saying what was stopped."""
    lease = lease_of(config, target)
    stopped = process.stop(lease)
    if stopped is None:
        return _NONE.format(target=lease.shown, storage=config.storage.uri())
    return f"stopped loader for {lease.shown} (pid {stopped.pid})"


def run_loader(args: argparse.Namespace) -> int:
    """Run one action; print what it did in a line (`run`: the loader's own lines, until stopped)."""
    config = Config.load(args.config)
    if args.action == "start":
        print(start_loader(config, args.config, args.target))
    elif args.action == "stop":
        print(stop_loader(config, args.target))
    elif args.action == "status":
        print(_status(config, args.target))
    else:
        _serve(config, args.target)
    return 0


def _status(config: Config, target: str | None) -> str:
    url, _ = config.resolve_target(target)
    lease = lease_for(config.storage, url)
    holder = lease.holder()
    queued = len(LoadQueue(config.storage, lease.target).items())
    kept = len(Spool(RunStates(config.storage.child("runs"))).every())
    waiting = f"{queued} item(s) queued, {kept} run(s) kept"
    if holder is None:
        return f"{_NONE.format(target=lease.shown, storage=config.storage.uri())}: {waiting}"
    return f"loader for {lease.shown}: {holder.describe()}; {waiting}"


def _serve(config: Config, target: str | None) -> None:
    """`synclog loader run`: load in the foreground until SIGTERM or SIGINT."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    log = SyncLog.configured(target, config, progress=_warning)
    Loader(log, _say).serve(stop)
    _say("stopped")


def _say(line: str) -> None:
    print(line, flush=True)


def _warning(line: str) -> None:
    """The loads' own lines: their warnings (an outage, a refused batch), not each table's rows."""
    if line.startswith("warning:"):
        _say(line)

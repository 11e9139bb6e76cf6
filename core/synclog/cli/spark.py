"""`synclog spark start|stop|status`: the warm Spark Connect server for sync engines, and its loader.

`start` returns once the server it started is warm (one small write has gone through its shared
session, `synclog.warm_up`, so that the first sync after it costs what later ones do) and the
loader of the target (`--target`, else the configured default) runs on it: every engine's
`BackgroundLog` then only queues its batches. `stop` stops that loader, then the server.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from synclog import spark_server
from synclog.cli.loader import start_loader, stop_loader
from synclog.config import Config
from synclog.spark import spark_session
from synclog.warm_up import warm_up

_NONE = "no Spark Connect server from `synclog spark start` is running"


def add_parser(subs: Any) -> None:
    """Add `synclog spark` to the `synclog` parser."""
    spark = subs.add_parser(
        "spark",
        help="start, stop or show the local Spark Connect server every synclog process then uses",
    )
    spark.add_argument("action", choices=["start", "stop", "status"])
    spark.add_argument(
        "--master", help="the server's Spark master (default: $SYNCLOG_SPARK_MASTER or local[*])"
    )
    spark.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    spark.add_argument("--driver-memory", help="the server's heap (default: $SYNCLOG_DRIVER_MEMORY or 2g)")
    spark.add_argument(
        "--target",
        help="the target whose loader start runs and stop stops: a URL or a name from synclog.toml "
        "(default: [targets.default], else duckdb:///synclog.duckdb)",
    )
    spark.add_argument("--no-loader", action="store_true", help="start the server alone (no loader)")
    spark.set_defaults(handler=run_spark)


def run_spark(args: argparse.Namespace) -> int:
    """Run one action and print one line about the server."""
    if args.action == "start":
        server, started = spark_server.start(args.master, args.port, args.driver_memory)
        warmed = ""
        if started:  # its shared session's first write: here, not in the first sync's process
            began = time.perf_counter()
            warm_up(spark_session())
            warmed = f", warmed up in {time.perf_counter() - began:.0f} s"
        verb = "started" if started else "already running:"
        print(f"{verb} Spark Connect server at {server.remote} (pid {server.pid}, log {server.log}{warmed})")
        if not args.no_loader:
            print(start_loader(Config.load(args.config), args.config, args.target))
    elif args.action == "stop":
        if not args.no_loader:
            print(stop_loader(Config.load(args.config), args.target))
        stopped = spark_server.stop()
        print(f"stopped Spark Connect server at {stopped.remote} (pid {stopped.pid})" if stopped else _NONE)
    else:
        running = spark_server.running()
        if running is None:
            print(_NONE)
        else:
            up = int(running.uptime())
            uptime = f"{up // 3600}h {up // 60 % 60}m {up % 60}s"
            print(f"running at {running.remote}, pid {running.pid}, up {uptime}")
    return 0

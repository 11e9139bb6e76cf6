"""`synclog` entry point: parse arguments, run a command, turn errors into one line and an exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from synclog.errors import SynclogError, TargetError, first_line
from synclog.notices.lineage import show_console_events
from synclog.spark import LOG_LEVEL_ENV

USAGE_ERROR = 2
TARGET_FAILURE = 1
DEBUG_ENV = "SYNCLOG_DEBUG"
"""Set to 1 to see the traceback of an unexpected error instead of its one line."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every synclog command."""
    from synclog.cli import commands, demo, loader, spark

    parser = _Parser(
        prog="synclog",
        description="Row-level sync logs, written back into the warehouse.",
    )
    parser.add_argument("--config", help="path of synclog.toml (default: ./synclog.toml)")
    parser.add_argument(
        "--verbose", action="store_true", help=f"show Spark's own log (WARN; or set {LOG_LEVEL_ENV})"
    )
    subs = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo.add_parser(subs)
    commands.add_parsers(subs)
    spark.add_parser(subs)
    loader.add_parser(subs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = build_parser().parse_args(argv)
    if args.verbose:
        os.environ.setdefault(LOG_LEVEL_ENV, "WARN")
    show_console_events()  # the console transport's OpenLineage events, on standard error
    try:
        return int(args.handler(args) or 0)
    except SynclogError as exc:
        code = TARGET_FAILURE if isinstance(exc, TargetError) else USAGE_ERROR
        print(f"synclog: error: {first_line(exc)}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print("synclog: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        print(f"synclog: error: {describe(exc)} (set {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return TARGET_FAILURE


def describe(exc: BaseException) -> str:
    """One line for an unexpected error: its type and first line, or for an error a Spark task
    raised, the task's own last line (`ValueError: …`) without the Python and JVM stack traces."""
    lines = str(exc).strip().splitlines()
    if "Traceback (most recent call last)" in str(exc):
        before_jvm = lines[
            : next((i for i, line in enumerate(lines) if line.startswith("JVM stacktrace")), None)
        ]
        raised = [line.strip() for line in before_jvm if line.strip() and not line.startswith(" ")]
        if raised:
            return f"a Spark task failed: {raised[-1]}"
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


if __name__ == "__main__":
    sys.exit(main())

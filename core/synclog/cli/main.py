"""`synclog` entry point: parse arguments, run a command, turn errors into one line and an exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from synclog.errors import InputError, SynclogError, TargetError

USAGE_ERROR = 2
TARGET_FAILURE = 1


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every synclog command."""
    from synclog.cli import commands, demo

    parser = _Parser(
        prog="synclog",
        description="Row-level sync logs, written back into the warehouse.",
    )
    parser.add_argument("--config", help="path of synclog.toml (default: ./synclog.toml)")
    subs = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo.add_parser(subs)
    commands.add_parsers(subs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (InputError, SynclogError) as exc:
        code = TARGET_FAILURE if isinstance(exc, TargetError) else USAGE_ERROR
        print(f"synclog: error: {exc}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print("synclog: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""`python -m synclog.docs_gen [--check] [--docs DIR]`: write (or check) the generated pages."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from synclog.docs_gen import stale, write


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m synclog.docs_gen", description=__doc__)
    parser.add_argument("--docs", type=Path, default=Path("docs"), help="the site's sources (default: docs)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    args = parser.parse_args()
    if args.check:
        pages = stale(args.docs)
        for path in pages:
            print(f"stale: {args.docs / path} (run python -m synclog.docs_gen)", file=sys.stderr)
        return 1 if pages else 0
    for path in write(args.docs):
        print(f"wrote {args.docs / path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

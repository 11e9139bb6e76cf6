"""`python fakesnow_serve.py HOST PORT [s3]`: fakesnow's server, with two stand-in fixes.

- **Stage references are names, not tables.** fakesnow refuses a statement naming a table
  without its database or schema while the session has no current schema, and it counts the
  `@db.schema.stage/prefix/` of a `COPY … FROM (SELECT … FROM @…)` as such a table: a COPY with
  every name qualified failed in a session that had not run `CREATE SCHEMA` (which sets the
  current schema) — a connection opened after an outage. Snowflake resolves a qualified stage
  without a current schema, so stage references are left out of that check.
- **`s3`: its DuckDB reads `s3://` from S3.** fakesnow treats a stage whose URL is `s3://…` as
  external and reads its files through DuckDB, which would need its httpfs extension; the one on
  PyPI is built for DuckDB 1.5 and fakesnow 0.12.1 runs DuckDB 2.0, which refuses it. So before
  the server starts, this registers an fsspec filesystem for `s3://` on fakesnow's shared DuckDB:
  pyarrow's S3 client, pointed at the endpoint in `AWS_ENDPOINT_URL` with the keys in
  `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`. The warehouse process reads the staged files
  over S3 itself, as Snowflake does; the stage's CREDENTIALS are not checked (fakesnow ignores
  them).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import uvicorn
from fakesnow import checks


def _tables_but_stages(relevant: Any) -> Any:
    def tables(expression: Any) -> list[Any]:
        return [t for t in relevant(expression) if not t.sql(dialect="snowflake").startswith("@")]

    return tables


def main(host: str, port: int, s3: bool) -> None:
    checks._relevant_tables = _tables_but_stages(checks._relevant_tables)
    server = importlib.import_module("fakesnow.server")  # the module, not fakesnow's `server()`
    if s3:
        import pyarrow.fs as pafs
        from fsspec.implementations.arrow import ArrowFSWrapper

        class S3Files(ArrowFSWrapper):
            """pyarrow's S3 filesystem under the `s3://` protocol (what DuckDB matches a path on)."""

            protocol = ("s3",)

        files = pafs.S3FileSystem(
            access_key=os.environ["AWS_ACCESS_KEY_ID"],
            secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
            region=os.environ.get("AWS_REGION", "us-east-1"),
            endpoint_override=os.environ["AWS_ENDPOINT_URL"],
        )
        server.shared_fs.duck_conn.register_filesystem(S3Files(files))
    uvicorn.run(server.app, host=host, port=port, log_level="info")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["s3"])

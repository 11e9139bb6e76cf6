"""`python fakesnow_s3.py HOST PORT`: fakesnow's server, its DuckDB reading `s3://` from S3.

fakesnow treats a stage whose URL is `s3://…` as external and reads its files through DuckDB,
which would need its httpfs extension; the one on PyPI is built for DuckDB 1.5 and fakesnow
0.12.1 runs DuckDB 2.0, which refuses it. So before the server starts, this registers an fsspec
filesystem for `s3://` on fakesnow's shared DuckDB: pyarrow's S3 client, pointed at the endpoint
in `AWS_ENDPOINT_URL` with the keys in `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`. The
warehouse process reads the staged files over S3 itself, as Snowflake does; the stage's
CREDENTIALS are not checked (fakesnow ignores them).
"""

from __future__ import annotations

import importlib
import os
import sys

import pyarrow.fs as pafs
import uvicorn
from fsspec.implementations.arrow import ArrowFSWrapper


class S3Files(ArrowFSWrapper):
    """pyarrow's S3 filesystem under the `s3://` protocol (what DuckDB matches a path on)."""

    protocol = ("s3",)


def main(host: str, port: int) -> None:
    s3 = pafs.S3FileSystem(
        access_key=os.environ["AWS_ACCESS_KEY_ID"],
        secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        region=os.environ.get("AWS_REGION", "us-east-1"),
        endpoint_override=os.environ["AWS_ENDPOINT_URL"],
    )
    server = importlib.import_module("fakesnow.server")  # the module, not fakesnow's `server()`
    server.shared_fs.duck_conn.register_filesystem(S3Files(s3))
    uvicorn.run(server.app, host=host, port=port, log_level="info")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

"""Bytes of row data through the driver, per target: `python bench/scale.py` rewrites bench/SCALE.md.

On a Spark standalone cluster whose worker cannot see the driver's disk (its own mount
namespace and /tmp: `integration/harness/spark_cluster.py`), with `storage` on moto's S3 (on
the GCS emulator for BigQuery, whose load jobs read only GCS), one `write_run` of N records
(≈300-byte payloads, generated on the executors) into each target on its stand-in, each by a
driver process of its own (`scale_driver.py`), which counts the bytes of files it reads or
writes through `storage`.

    python bench/scale.py                           # N = 1,000,000
    python bench/scale.py --records 2000 --targets snowflake,bigquery
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

from harness.bigquery_server import local_bigquery_server  # noqa: E402
from harness.databricks_sql_server import databricks_sql_server  # noqa: E402
from harness.fakesnow_server import fakesnow_server  # noqa: E402
from harness.gcs_server import gcs_server  # noqa: E402
from harness.postgres_server import PostgresServer, postgres_server  # noqa: E402
from harness.redshift_proxy import IAM_ROLE, redshift_stand_in  # noqa: E402
from harness.s3_server import S3Server, s3_server  # noqa: E402
from harness.spark_cluster import SparkCluster, spark_standalone, subprocess_env  # noqa: E402

REPORT = HERE / "SCALE.md"
BUCKET = "synclog-scale"
Setup = Callable[[ExitStack, "Shared"], dict[str, Any]]


class Shared:
    """What every target's run uses: moto's S3, PostgreSQL, a scratch folder."""

    def __init__(self, s3: S3Server, pg: PostgresServer, scratch: Path) -> None:
        self.s3, self.pg, self.scratch = s3, pg, scratch

    def s3_storage(self) -> dict[str, Any]:
        return {"storage": f"s3://{BUCKET}/{uuid.uuid4().hex}", "storage_options": self.s3.storage_options()}


def duckdb(stack: ExitStack, shared: Shared) -> dict[str, Any]:
    return {"url": f"duckdb:///{shared.scratch / 'scale.duckdb'}", **shared.s3_storage()}


def lake(stack: ExitStack, shared: Shared) -> dict[str, Any]:
    storage = shared.s3_storage()
    return {"url": f"lake+s3://{BUCKET}/lake", "options": shared.s3.storage_options(), **storage}


def postgres(stack: ExitStack, shared: Shared) -> dict[str, Any]:
    return {"url": shared.pg.url, **shared.s3_storage()}


def snowflake(stack: ExitStack, shared: Shared) -> dict[str, Any]:
    server = stack.enter_context(fakesnow_server(s3=shared.s3))
    url = f"snowflake://fake:snow@fakesnow/CENSUS?host={server.host}&port={server.port}&protocol=http"
    return {"url": url + "&network_timeout=600", **shared.s3_storage()}


def bigquery(stack: ExitStack, shared: Shared) -> dict[str, Any]:
    server = stack.enter_context(local_bigquery_server())
    gcs = stack.enter_context(gcs_server(server.gcs_root, bucket=BUCKET))
    return {
        "url": f"bigquery://synclog-scale?endpoint={server.endpoint}",
        "storage": f"gs://{BUCKET}/{uuid.uuid4().hex}",
        "storage_options": {"endpoint_url": gcs.endpoint_url},
    }


def redshift(stack: ExitStack, shared: Shared) -> dict[str, Any]:
    """A database of its own in the shared PostgreSQL: in the PostgreSQL target's, its write would
    replay the run that target wrote."""
    import psycopg

    with psycopg.connect(shared.pg.url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE scale_redshift")
    proxy = stack.enter_context(redshift_stand_in(shared.pg, shared.s3))
    url = f"redshift://{proxy.user}:unused@{proxy.host}:{proxy.port}/scale_redshift?ssl=false"
    return {"url": url, "options": {"iam_role": IAM_ROLE}, **shared.s3_storage()}


def databricks(stack: ExitStack, shared: Shared) -> dict[str, Any]:
    server = stack.enter_context(
        databricks_sql_server(["census"], parent_dir=shared.scratch, environment=shared.s3.environment)
    )
    os.environ["DATABRICKS_TOKEN"] = server.token
    url = f"databricks://{server.host}:{server.port}?http_path={server.http_path}&scheme=http&use_sea=true"
    keys = {"aws_access_key": shared.s3.access_key, "aws_secret_key": shared.s3.secret_key}
    return {"url": url, "options": keys, **shared.s3_storage()}


TARGETS: dict[str, Setup] = {
    "duckdb": duckdb,
    "lake": lake,
    "postgres": postgres,
    "snowflake": snowflake,
    "bigquery": bigquery,
    "redshift": redshift,
    "databricks": databricks,
}


@contextmanager
def shared_stand_ins(scratch: Path) -> Iterator[tuple[Shared, SparkCluster]]:
    with s3_server() as s3, postgres_server() as pg, spark_standalone(cores=2) as cluster:
        s3.create_bucket(BUCKET)
        yield Shared(s3, pg, scratch), cluster


def driver_env(cluster: SparkCluster, s3: S3Server, conf_dir: Path) -> dict[str, str]:
    """A driver of the cluster: its master and Spark settings, the S3 keys."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    defaults = "\n".join(f"{key} {value}" for key, value in cluster.driver_conf.items())
    (conf_dir / "spark-defaults.conf").write_text(defaults + "\n")
    return subprocess_env(
        {
            **cluster.driver_env,
            **s3.environment,
            "SPARK_CONF_DIR": str(conf_dir),
            "SYNCLOG_SPARK_MASTER": cluster.master_url,
            "DATABRICKS_TOKEN": os.environ.get("DATABRICKS_TOKEN", ""),
        }
    )


def run(names: list[str], records: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="synclog-scale-") as folder:
        scratch = Path(folder)
        with shared_stand_ins(scratch) as (shared, cluster):
            for name in names:
                with ExitStack() as stack:
                    spec = {"name": name, "records": records, **TARGETS[name](stack, shared)}
                    done = subprocess.run(
                        [sys.executable, str(HERE / "scale_driver.py"), json.dumps(spec)],
                        env=driver_env(cluster, shared.s3, scratch / "conf"),
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                if done.returncode != 0:
                    print(f"{name}: failed\n{done.stderr[-3000:]}", file=sys.stderr)
                    rows.append({"target": name, "error": done.stderr.strip().splitlines()[-1:]})
                    continue
                row = json.loads(done.stdout.strip().splitlines()[-1])
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def report(rows: list[dict[str, Any]], records: int) -> str:
    lines = [
        "# Row data through the driver, per target (`make scale`)",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}. One `write_run` of {records:,} records (≈300-byte payloads, "
        "generated on the executors) per target, by a driver of a Spark standalone cluster whose "
        "worker cannot see the driver's disk; `storage` on moto's S3 (BigQuery: the GCS emulator). "
        "Produced by `python bench/scale.py --records N`.",
        "",
        "Staged bytes: the files the loads were handed (the tasks' files and the driver's few "
        "metadata rows). Driver bytes: file contents the driver process read or wrote through "
        "`storage`, counted by a wrapper of every filesystem it builds (`bench/scale_driver.py`), "
        "by folder: `staging/` holds load rows, `runs/` the run store, where the driver reads and "
        "writes only the run's state (a JSON manifest of files and counts, no rows). The driver "
        "writes the run's metadata rows (source object, destination, destination object: one row "
        "each) to `staging/` itself, since it builds them.",
        "",
        "| target | rows loaded | staged bytes | driver read staging/ | driver wrote staging/ "
        "| driver read runs/ | driver wrote runs/ | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['target']} | failed: {' '.join(row['error'])} | | | | | | |")
            continue
        folders = row["driver_by_folder"]
        cells = [
            folders.get(f"{way} {folder}", 0) for folder in ("staging", "runs") for way in ("read", "written")
        ]
        lines.append(
            f"| {row['target']} | {row['rows']:,} | {row['staged_bytes']:,} | "
            + " | ".join(f"{cell:,}" for cell in cells)
            + f" | {row['seconds']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args()
    names = [name for name in args.targets.split(",") if name]
    unknown = sorted(set(names) - set(TARGETS))
    if unknown:
        parser.error(f"unknown target {unknown[0]!r} (known: {', '.join(TARGETS)})")
    rows = run(names, args.records)
    args.report.write_text(report(rows, args.records))
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()

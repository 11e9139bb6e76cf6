"""The dbt package on the demo: `dbt build` timed on PostgreSQL next to DuckDB.

Writes the demo (`synclog demo`, ten days of four syncs, about 130,000 records per layout at
scale 1) into a throwaway PostgreSQL cluster and into a DuckDB file, then runs `dbt build` of
the package (models, data tests, unit tests) on each with the profile docs/analysts/dbt.md shows,
timed from the outside; the slowest models come from dbt's run_results.json. Then each of the
doc's example questions runs on both, and the rows it returned are counted (the examples must
find something on the demo). Goal: PostgreSQL's build under 30 s.

Writes the section "dbt package on the demo" of bench/RESULTS.md (replacing an earlier one).

    python bench/dbt_bench.py [--out bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "integration"))
from harness.dbt_package import PACKAGE, dbt_executable  # noqa: E402
from harness.postgres_server import postgres_server  # noqa: E402

from synclog.plugins.manager import registry  # noqa: E402
from synclog.urls import TargetURL  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
TITLE = "## dbt package on the demo"
GOAL_S = 30.0
"""PostgreSQL: the whole package's `dbt build` at most this."""
DOCS = ROOT / "docs" / "analysts" / "dbt.md"
SCHEMA = "marts"


@dataclass(frozen=True)
class Build:
    """One warehouse's `dbt build`: its seconds, its slowest models and what the examples found."""

    warehouse: str
    demo_seconds: float
    seconds: float
    slowest: list[tuple[str, float]]
    examples: list[int]


def demo(url: str, folder: Path) -> float:
    """`synclog demo` into `url`; its seconds."""
    config = folder / "synclog.toml"
    config.write_text(f'storage = "{folder / "storage"}"\n', encoding="utf-8")
    started = time.perf_counter()
    synclog = Path(sys.executable).parent / "synclog"
    subprocess.run(
        [str(synclog), "--config", str(config), "demo", "--target", url],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def dbt_build(folder: Path, output: dict[str, Any]) -> tuple[float, list[tuple[str, float]]]:
    """`dbt build` of the package with a profile of `output`; its seconds and slowest nodes."""
    (folder / "profiles.yml").write_text(
        json.dumps({"synclog": {"target": "bench", "outputs": {"bench": output}}}), encoding="utf-8"
    )
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_USE_COLORS": "false"}
    command = [str(dbt_executable()), "build", "--project-dir", str(PACKAGE), "--profiles-dir", str(folder)]
    command += ["--target-path", str(folder / "target"), "--log-path", str(folder / "logs")]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"dbt build failed:\n{done.stdout[-4000:]}")
    results = json.loads((folder / "target" / "run_results.json").read_text(encoding="utf-8"))
    nodes = [(r["unique_id"].split(".")[-1], r["execution_time"]) for r in results["results"]]
    return seconds, sorted(nodes, key=lambda n: -n[1])[:5]


def examples() -> list[str]:
    """The doc's example questions, one statement each."""
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("## Questions, answered on the demo", 1)[1].split("```sql", 1)[1].split("```", 1)[0]
    return [s.strip() for s in block.split(";") if s.strip()]


def answered(url: str) -> list[int]:
    """Rows each example returned on the marts of `url`."""
    with registry().open(TargetURL.parse(url)) as target:
        return [target.query(statement).num_rows for statement in examples()]


def postgres_build(folder: Path) -> Build:
    with postgres_server() as pg:
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute("CREATE DATABASE demo")
        url = f"postgresql://{pg.user}@{pg.host}:{pg.port}/demo"
        written = demo(url, folder)
        output = {"type": "postgres", "host": pg.host, "port": pg.port, "user": pg.user, "password": ""}
        output |= {"dbname": "demo", "schema": SCHEMA, "threads": 1}
        seconds, slowest = dbt_build(folder, output)
        return Build("PostgreSQL", written, seconds, slowest, answered(url))


def duckdb_build(folder: Path) -> Build:
    path = folder / "synclog-demo.duckdb"
    written = demo(f"duckdb:///{path}", folder)
    output = {"type": "duckdb", "path": str(path), "schema": SCHEMA, "threads": 1}
    seconds, slowest = dbt_build(folder, output)
    return Build("DuckDB", written, seconds, slowest, answered(f"duckdb:///{path}"))


def report(builds: list[Build], load: tuple[float, float]) -> str:
    """The section for RESULTS.md."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    postgres, duckdb = builds
    lines = [
        TITLE,
        "",
        f"Measured {when} UTC by bench/dbt_bench.py; load average {load[0]:.1f} at the start and "
        f"{load[1]:.1f} at the end. The demo (`synclog demo`, scale 1) written into a throwaway "
        "PostgreSQL cluster and into a DuckDB file, then `dbt build` of the package (every model, "
        "data test and unit test, one thread) with the profile docs/analysts/dbt.md shows, timed "
        "from the outside (dbt's start included).",
        "",
        "| warehouse | demo written s | `dbt build` s | slowest nodes (dbt's seconds) | rows per example |",
        "|---|---|---|---|---|",
    ]
    for b in builds:
        slowest = ", ".join(f"{name} {s:.1f}" for name, s in b.slowest)
        rows = ", ".join(str(n) for n in b.examples)
        lines.append(f"| {b.warehouse} | {b.demo_seconds:.0f} | {b.seconds:.1f} | {slowest} | {rows} |")
    verdict = "met" if postgres.seconds < GOAL_S else "missed"
    empty = [i + 1 for b in builds for i, n in enumerate(b.examples) if n == 0]
    lines += [
        "",
        f"Goal: PostgreSQL's build under {GOAL_S:.0f} s — measured {postgres.seconds:.1f} s ({verdict}); "
        f"{postgres.seconds / duckdb.seconds:.2f}x DuckDB's {duckdb.seconds:.1f} s.",
        "Every doc example found rows on both."
        if not empty
        else f"Doc examples that found nothing: {sorted(set(empty))}.",
        "",
    ]
    return "\n".join(lines)


def write_section(section: str, out: Path) -> None:
    """Replace the section in `out` (or add it at the end)."""
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    if TITLE in text:
        before, rest = text.split(TITLE, 1)
        after = rest.split("\n## ", 1)
        text = before + section + ("\n## " + after[1] if len(after) > 1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    out.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="synclog-dbt-bench-") as tmp:
        folder = Path(tmp)
        (folder / "postgres").mkdir()
        (folder / "duckdb").mkdir()
        builds = [postgres_build(folder / "postgres"), duckdb_build(folder / "duckdb")]
    section = report(builds, (start_load, os.getloadavg()[0]))
    print(section)
    write_section(section, args.out)


if __name__ == "__main__":
    main()

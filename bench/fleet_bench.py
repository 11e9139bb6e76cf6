"""A fleet of syncs on one schedule: N engine processes started at once, one loader for them all.

For each target (a DuckDB file, PostgreSQL) the warm server runs (`synclog spark start`) with the
target's loader (`synclog loader start`). For N in `--engines` (1, 4, 8, 16), `--rounds` times,
N engine processes start at once, each one run of a sync of its own in the example engine's
shape (`examples/engine`: `--records` records in `--batches` batches, its contacts API on
loopback answering each batch in `--answer-seconds`), each logging through a `BackgroundLog` the
loader serves and exiting as soon as `finish` returns (it does not wait for its run's result).
Measured:

- runs queryable: rounds whose every run had all its rows in `census.sync_log` and its row in
  `census.synclog_runs`, with no `flush`; and the seconds from the last engine's `finish` until
  then (median over rounds);
- synclog's seconds on each engine's path (importing synclog, `BackgroundLog.open`, the writes,
  `finish`) and how long the engine process lived on after `finish` returned: p95 over every
  engine of every round;
- the loader's ticks, Spark write jobs and loads per tick (the most in a tick), from its lines;
- the fleet's wall time (first spawn to last exit) with synclog ÷ without it (the same engines
  with `--no-log`), medians over rounds;
- the loader's sustained records per second (records ÷ its seconds loading) and its process's
  peak memory (VmHWM; the Spark server's JVM is apart).

Replaces the section "Fleet" of bench/RESULTS.md.

    python bench/fleet_bench.py [--engines 1,4,8,16] [--rounds 3] [--targets duckdb,postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
TITLE = "## Fleet"
FRESH_GOAL_S, PATH_GOAL_S, EXIT_GOAL_S, RATIO_GOAL = 5.0, 0.1, 0.2, 1.10
"""Queryable after the last finish (at N = 8), synclog on the engine's path (p95), the engine's
exit after finish (p95), the fleet's wall time with synclog ÷ without (at N = 8)."""
TICK = re.compile(
    r"tick \d+: (\d+) write\(s\), (\d+) end\(s\) of (\d+) run\(s\), ([\d,]+) records: "
    r"(\d+) job\(s\), (\d+) load\(s\) in ([\d.]+) s"
)


# -- one engine, in a process of its own --------------------------------------------------------


def one_engine(args: argparse.Namespace) -> dict[str, Any]:
    """One run of the example engine, its log timed; when `finish` returned (epoch seconds)."""
    from engine_bench import Spent, TimedLog

    spent = Spent()
    timed = spent.timed

    log = None
    if not args.no_log:
        background = timed("import", lambda: __import__("synclog").BackgroundLog)
        log = timed("open", lambda: background.open())
    from synclog_example_engine import ContactsAPI, already_in_destination, changes, contacts_run, sync

    source = changes(args.records * 4 // 5, args.records - args.records * 4 // 5)
    with ContactsAPI(already_in_destination(source), answer_seconds=args.answer_seconds) as api:
        run = contacts_run(api_url=api.url, sync_name=args.one_engine)
        sync(
            source, api.url, None if log is None else TimedLog(log, timed), run, args.records // args.batches
        )
    finished = time.time()
    if log is not None:
        timed("close", log.close)
        if not log.served:
            raise SystemExit("no loader served this engine")
    spent["path"] = sum(spent.get(k, 0.0) for k in ("import", "open", "write", "finish"))
    return {**spent, "finished": finished, "sync_run_id": run.sync_run_id}


# -- a round: N engines at once -----------------------------------------------------------------


@dataclass
class Round:
    engines: list[dict[str, Any]]
    wall: float
    fresh: float | None = None
    """Seconds from the last finish until every run was queryable (None: not within the wait)."""
    ticks: list[tuple[int, ...]] = field(default_factory=list)


def fleet(n: int, folder: Path, args: argparse.Namespace, env: dict[str, str], *, log: bool) -> Round:
    """N engine processes at once; each one's timings and exit time, and the fleet's wall time."""
    tag = f"{n}-{time.monotonic_ns()}"
    command = [sys.executable, __file__, "--records", str(args.records), "--batches", str(args.batches)]
    command += ["--answer-seconds", str(args.answer_seconds)]
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [*command, "--one-engine", f"fleet-{tag}-{i}", *([] if log else ["--no-log"])],
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    exits: dict[int, float] = {}

    def waited(proc: subprocess.Popen[str]) -> None:
        proc.wait()
        exits[proc.pid] = time.time()

    watchers = [threading.Thread(target=waited, args=(p,)) for p in procs]
    for watcher in watchers:
        watcher.start()
    engines = []
    for proc, watcher in zip(procs, watchers, strict=True):
        out, err = proc.communicate()
        watcher.join()
        if proc.returncode != 0:
            raise SystemExit(f"an engine failed: {err.strip().splitlines()[-3:]}")
        said = json.loads(out.strip().splitlines()[-1])
        engines.append({**said, "exit": exits[proc.pid] - said["finished"]})
    return Round(engines, time.perf_counter() - started)


def queryable(target: Target, runs: list[int], records: int, timeout: float) -> bool:
    """Whether, within `timeout` s, every run of `runs` has its `records` rows and its run row."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if target.loaded(runs) == {run: records for run in runs}:
                return True
        except Exception as exc:  # a DuckDB file the loader holds at that moment
            if "lock" not in str(exc).lower():
                raise
        time.sleep(0.05)
    return False


class Target:
    """Where the fleet logs, and how to count what it holds without the loader's help."""

    def __init__(self, name: str, url: str, count: Callable[[str, list[int]], list[tuple[int, int]]]) -> None:
        self.name, self.url, self._count = name, url, count

    def loaded(self, runs: list[int]) -> dict[int, int]:
        """Per run of `runs` whose end is loaded (its `synclog_runs` row), its rows in sync_log."""
        ended = {run for run, _ in self._count("SELECT sync_run_id, 1 FROM census.synclog_runs", runs)}
        rows = self._count("SELECT sync_run_id, count(*) FROM census.sync_log", runs)
        return {run: count for run, count in rows if run in ended}


def duckdb_target(folder: Path) -> Target:
    import duckdb

    path = folder / "fleet.duckdb"

    def count(select: str, runs: list[int]) -> list[tuple[int, int]]:
        with duckdb.connect(str(path), read_only=True) as db:
            where = f"{select} WHERE sync_run_id IN ({', '.join('?' * len(runs))}) GROUP BY 1"
            return [(int(a), int(b)) for a, b in db.execute(where, runs).fetchall()]

    return Target("DuckDB file", f"duckdb:///{path}", count)


def postgres_target(pg: Any) -> Target:
    import psycopg

    def count(select: str, runs: list[int]) -> list[tuple[int, int]]:
        with psycopg.connect(pg.dsn, autocommit=True) as db:
            try:
                found = db.execute(f"{select} WHERE sync_run_id = ANY(%s) GROUP BY 1", [runs]).fetchall()
            except psycopg.errors.UndefinedTable:
                return []
            return [(int(a), int(b)) for a, b in found]

    return Target("PostgreSQL", pg.url, count)


# -- per target ---------------------------------------------------------------------------------


def measure(target: Target, folder: Path, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """Every N's rounds into `target`, its loader started for them and stopped after."""
    folder.mkdir(parents=True)
    (folder / "synclog.toml").write_text(
        f'storage = "{folder / "storage"}"\n\n[defaults]\nlayouts = ["census"]\n\n'
        f'[targets.default]\nurl = "{target.url}"\n'
    )
    synclog = [sys.executable, "-m", "synclog", "--config", str(folder / "synclog.toml")]
    started = subprocess.run(
        [*synclog, "loader", "start"], cwd=folder, env=env, capture_output=True, text=True
    )
    if started.returncode != 0:
        raise SystemExit(f"synclog loader start failed: {started.stderr.strip()}")
    print(started.stdout.strip(), flush=True)
    log_file = Path(started.stdout.rsplit("log ", 1)[1].rstrip(")\n"))
    pid = int(re.search(r"pid (\d+)", started.stdout)[1])  # type: ignore[index]
    found: dict[int, list[Round]] = {}
    alone: dict[int, list[Round]] = {}
    try:
        for n in args.engines:
            for number in range(args.rounds):
                seen = len(log_file.read_text().splitlines())
                done = fleet(n, folder, args, env, log=True)
                runs = [e["sync_run_id"] for e in done.engines]
                last = max(e["finished"] for e in done.engines)
                if queryable(target, runs, args.records, args.wait):
                    done.fresh = time.time() - last
                lines = log_file.read_text().splitlines()[seen:]
                done.ticks = [
                    tuple(int(g.replace(",", "")) for g in m.groups()[:6])
                    for m in map(TICK.search, lines)
                    if m
                ]
                found.setdefault(n, []).append(done)
                print(
                    f"{target.name} N={n} round {number}: wall {done.wall:.2f} s, fresh {done.fresh}, "
                    f"{len(done.ticks)} tick(s)",
                    flush=True,
                )
            if n in args.baseline:
                alone[n] = [fleet(n, folder, args, env, log=False) for _ in range(args.rounds)]
        busy = [float(m[7]) for m in map(TICK.search, log_file.read_text().splitlines()) if m]
        records = [
            int(m[4].replace(",", "")) for m in map(TICK.search, log_file.read_text().splitlines()) if m
        ]
        peak = _peak_kib(pid)
    finally:
        subprocess.run([*synclog, "loader", "stop"], cwd=folder, env=env, capture_output=True, text=True)
    return {"found": found, "alone": alone, "rate": sum(records) / sum(busy) if busy else 0.0, "peak": peak}


def _peak_kib(pid: int) -> int:
    """The peak resident memory of process `pid` (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


# -- the report ---------------------------------------------------------------------------------


def section(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    rows, verdicts = [], []
    for name, measured in results.items():
        for n, rounds in measured["found"].items():
            rows.append(_row(name, n, rounds, measured["alone"].get(n)))
            if n == 8:
                verdicts.append(_verdict(name, rounds, measured["alone"].get(8)))
        rows.append(
            f"| {name} | loader | | | | | | | | {measured['rate']:,.0f} records/s sustained, "
            f"peak {measured['peak'] / 1024:.0f} MiB |"
        )
    return "\n".join(
        [
            TITLE,
            "",
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by bench/fleet_bench.py; load average "
            f"{os.getloadavg()[0]:.1f}; {os.cpu_count()} cores. N engine processes start at once, each "
            f"one run of a sync of its own: the example engine syncs {args.records:,} records in "
            f"{args.batches} batches to its contacts API, which answers each batch in "
            f"{args.answer_seconds:g} s, logging through a `BackgroundLog` that the loader serves "
            "(the warm server and the target's loader running), and exits once `finish` returns. "
            f"{args.rounds} rounds per N; layout census. *queryable*: rounds whose every run was in "
            "`census.sync_log` and `census.synclog_runs` with no `flush`; *after last finish s*: median "
            "over rounds; *engine path s* and *exit after finish s*: p95 over every engine of every "
            "round; *ticks*: the loader's per round (median); *jobs* and *loads per tick*: the most "
            "in one tick (a load: a stage swapped in, or rows replaced, into one of the layout's five "
            "tables); *wall ratio*: the fleet's wall time (first spawn to last exit) with synclog ÷ "
            "the same engines with `--no-log`, medians.",
            "",
            "| target | N | queryable | after last finish s | engine path s (p95) "
            "| exit after finish s (p95) | ticks | jobs per tick | loads per tick | wall ratio |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            *verdicts,
            "",
        ]
    )


def _row(name: str, n: int, rounds: list[Round], alone: list[Round] | None) -> str:
    engines = [e for r in rounds for e in r.engines]
    fresh = [r.fresh for r in rounds if r.fresh is not None]
    ticks = [t for r in rounds for t in r.ticks]
    ratio = _ratio(rounds, alone)
    return (
        f"| {name} | {n} | {len(fresh)} of {len(rounds)} | "
        f"{f'{statistics.median(fresh):.2f}' if fresh else '-'} | "
        f"{p95([e['path'] for e in engines]):.3f} | {p95([e['exit'] for e in engines]):.3f} | "
        f"{statistics.median(len(r.ticks) for r in rounds):.0f} | "
        f"{max((t[4] for t in ticks), default=0)} | {max((t[5] for t in ticks), default=0)} | "
        f"{'-' if ratio is None else f'{ratio:.2f}'} |"
    )


def _ratio(rounds: list[Round], alone: list[Round] | None) -> float | None:
    if not alone:
        return None
    return statistics.median(r.wall for r in rounds) / statistics.median(r.wall for r in alone)


def _verdict(name: str, rounds: list[Round], alone: list[Round] | None) -> str:
    engines = [e for r in rounds for e in r.engines]
    fresh = [r.fresh for r in rounds if r.fresh is not None]
    ratio = _ratio(rounds, alone)
    goals = [
        (
            f"queryable ≤ {FRESH_GOAL_S:g} s after the last finish",
            len(fresh) == len(rounds) and statistics.median(fresh) <= FRESH_GOAL_S,
        ),
        (f"engine path p95 ≤ {PATH_GOAL_S} s", p95([e["path"] for e in engines]) <= PATH_GOAL_S),
        (f"exit ≤ {EXIT_GOAL_S} s after finish (p95)", p95([e["exit"] for e in engines]) <= EXIT_GOAL_S),
        (f"wall ratio ≤ {RATIO_GOAL:.2f}", ratio is not None and ratio <= RATIO_GOAL),
    ]
    verdicts = "; ".join(f"{goal}: {'met' if ok else 'missed'}" for goal, ok in goals)
    return f"Goals at N = 8, {name}: {verdicts}."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", type=lambda s: [int(n) for n in s.split(",")], default=[1, 4, 8, 16])
    parser.add_argument(
        "--baseline",
        type=lambda s: [int(n) for n in s.split(",")],
        default=[8],
        help="the N whose fleet also runs without a log (the wall ratio)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--answer-seconds", type=float, default=1.0)
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for a round's runs")
    parser.add_argument("--targets", default="duckdb,postgres")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--one-engine", help=argparse.SUPPRESS)
    parser.add_argument("--no-log", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_engine:
        print(json.dumps(one_engine(args)))
        return 0

    sys.path.insert(0, str(HERE.parent / "integration"))
    from engine_bench import start_warm, update_results
    from harness.postgres_server import postgres_server

    from synclog import spark_server

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="synclog-fleet-bench-") as tmp, postgres_server() as pg:
        folder = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
        env[spark_server.DIR_ENV] = os.environ[spark_server.DIR_ENV] = str(folder / "spark")
        start_warm(env)  # the warm server alone: each target's loader is started for its rounds
        try:
            targets = {
                "duckdb": lambda: duckdb_target(folder / "duckdb"),
                "postgres": lambda: postgres_target(pg),
            }
            for name in args.targets.split(","):
                target = targets[name]()
                results[target.name] = measure(target, folder / name, args, env)
        finally:
            spark_server.stop()
    update_results(args.out, [(TITLE, section(results, args))])
    return 0


if __name__ == "__main__":
    sys.exit(main())

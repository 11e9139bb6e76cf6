"""The model tests at length: `python bench/soak.py` rewrites bench/SOAK.md.

For each target it runs the conformance suite's stateful model test
(`ModelConformance.test_log_tables_follow_the_reference_model`: random sequences of writes,
replays, finishes, outages and retention over several syncs, every table compared with the
reference model after every step) with the Hypothesis profile `soak` (random, not derandomised:
every chunk draws sequences of its own from a seed of its own), in chunks of `--chunk` sequences,
one pytest process each, until the target has run its sequences. Only sequences that ran through
count (not those Hypothesis discarded), with the situations they reached (the model tests'
Hypothesis events: runs of one number in two syncs, refused runs, replays, outages, the
generators' inputs, …). A chunk that does not pass (a difference from the model, its time limit,
or an error) stops its target, and its sequences are not counted; its output, the shrunk sequence
and the seed that draws its sequences again (`SYNCLOG_MODEL_SEED`) included, is kept in
bench/soak-logs/.

    python bench/soak.py                                   # 2,000 per target, 200 on the stand-ins
    python bench/soak.py --targets duckdb --sequences 300 --until 18:05
    python bench/soak.py --targets snowflake,bigquery --cloud-sequences 50 --add

`--until HH:MM` (UTC) starts no chunk after that time and reports what ran; `--add` keeps the
report's earlier runs and adds this one below them (targets soaked in parts add up).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from suite_runs import CLASSES, LOCAL, chosen_targets, deadline, earlier_runs, node, run_heading  # noqa: E402

ROOT = HERE.parent
TEST = "test_log_tables_follow_the_reference_model"
TARGETS = {name: node(name, TEST) for name in CLASSES}
SECONDS_PER_SEQUENCE = {"local": 60, "stand-in": 240}
"""A chunk's time limit per sequence: past it the chunk is stuck, or the machine too busy, and
stops (usual: 3-10 s on this machine's databases, 8-45 s on the stand-ins, more beside other work)."""
REPORT = HERE / "SOAK.md"
LOGS = HERE / "soak-logs"


@dataclass
class Soaked:
    """What ran of one target."""

    target: str
    sequences: int = 0
    steps: int = 0
    failing: str = "0"
    """"0", "1" (a chunk found a difference), "timeout" (a chunk ran past its time limit) or
    "error" (a chunk could not run)."""
    seconds: float = 0.0
    log: str = ""
    failure: str = ""
    """What the failing chunk raised (its type and first line): a difference from the model is an
    AssertionError; anything else is an error of synclog's or of what it runs on, which its log
    tells apart."""
    situations: Counter[str] = field(default_factory=Counter)
    """Per situation, the sequences counted that reached it."""
    seed: int | None = None
    """The seed the failing chunk drew its sequences from."""

    def row(self) -> str:
        cells = (self.target, f"{self.sequences:,}", f"{self.steps:,}", self.failing, f"{self.seconds:,.0f}")
        return "| " + " | ".join(cells) + " |"


def soak(name: str, sequences: int, chunk: int, until: datetime | None) -> Soaked:
    """Run `sequences` of `name`'s sequences in chunks; what ran, and whether any failed."""
    node, env = TARGETS[name]
    done = Soaked(name)
    while done.sequences < sequences and (until is None or datetime.now(UTC) < until):
        with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as stats:
            stats_path = Path(stats.name)
        run_env = {
            **os.environ,
            **env,
            "SYNCLOG_MODEL_PROFILE": "soak",
            "SYNCLOG_MODEL_SEQUENCES": str(min(chunk, sequences - done.sequences)),
            "SYNCLOG_MODEL_STATS": str(stats_path),
        }
        # The suite's 900 s a test is no limit for a chunk of many sequences on a busy machine.
        limit = str(SECONDS_PER_SEQUENCE["local" if name in LOCAL else "stand-in"] * chunk)
        command = [sys.executable, "-m", "pytest", node, "-x", "-q", "-p", "no:cacheprovider"]
        command += ["--timeout", limit]
        started = time.perf_counter()
        result = subprocess.run(command, cwd=ROOT, env=run_env, capture_output=True, text=True, check=False)
        done.seconds += time.perf_counter() - started
        lines = [json.loads(line) for line in stats_path.read_text().splitlines() if line.strip()]
        stats_path.unlink()
        if result.returncode == 0 and lines:
            done.sequences += sum(line.get("sequences", 0) for line in lines)
            done.steps += sum(line.get("steps", 0) for line in lines)
            for line in lines:
                done.situations.update(line.get("situations", {}))
            print(f"{name}: {done.sequences} sequences, {done.steps} steps, {done.seconds:.0f} s", flush=True)
            continue
        LOGS.mkdir(exist_ok=True)
        log = LOGS / f"{name}-{datetime.now(UTC):%Y%m%dT%H%M%S}.txt"
        log.write_text(result.stdout + result.stderr, encoding="utf-8")
        done.failing = failing(result.stdout, lines)
        done.failure = next((line["failure"] for line in lines if line.get("failure")), "")
        done.seed = next((int(line["seed"]) for line in lines if "seed" in line), None)
        done.log = str(log.relative_to(ROOT))
        print(f"{name}: {OUTCOMES[done.failing]}, see {done.log}", flush=True)
        break
    return done


OUTCOMES = {"1": "FAILED", "timeout": "stopped at its time limit", "error": "could not run"}
LOGGED = {
    "1": "the failing chunk's output (its shrunk sequence)",
    "timeout": "the output of the chunk stopped at its time limit",
    "error": "the output of the chunk that could not run",
}


def failing(output: str, lines: list[dict[str, object]]) -> str:
    """How a chunk that did not pass ended: pytest-timeout's banner marks its time limit (the
    sequence it stopped then fails to replay, so its own error is no difference)."""
    if "+ Timeout +" in output:
        return "timeout"
    return "1" if any(line.get("failing") for line in lines) else "error"


def report(rows: list[Soaked], args: argparse.Namespace) -> str:
    """This run's section of SOAK.md."""
    *heading, command = run_heading("bench/soak.py")
    lines = [
        *heading,
        f"{command}: profile `soak`, chunks of {args.chunk} sequences (one pytest process each).",
        "",
        "| target | sequences | steps | failing | seconds |",
        "|---|---|---|---|---|",
        *(row.row() for row in rows),
    ]
    reached = sorted({name for row in rows for name in row.situations})
    if reached:
        lines += [
            "",
            "Situations: the sequences counted above that reached each (Hypothesis events).",
            "",
            "| situation | " + " | ".join(row.target for row in rows) + " |",
            "|---|" + "---|" * len(rows),
            *(
                f"| {name} | " + " | ".join(f"{row.situations[name]:,}" for row in rows) + " |"
                for name in reached
            ),
        ]
    for row in rows:
        if row.log:
            raised = f"; it raised `{row.failure}`" if row.failure else ""
            again = f"; `SYNCLOG_MODEL_SEED={row.seed}` draws its sequences again" if row.seed else ""
            lines.append(f"\n{row.target}: {LOGGED[row.failing]}: `{row.log}`{raised}{again}.")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--targets", default=",".join(TARGETS), help=f"comma-separated, of {', '.join(TARGETS)}"
    )
    parser.add_argument(
        "--sequences", type=int, default=2000, help="sequences per local target (default 2000)"
    )
    parser.add_argument(
        "--cloud-sequences", type=int, default=200, help="sequences per cloud stand-in (default 200)"
    )
    parser.add_argument("--chunk", type=int, default=100, help="sequences per pytest process (default 100)")
    parser.add_argument("--until", help="HH:MM UTC (the next such time): start no chunk after it")
    parser.add_argument("--add", action="store_true", help="keep the report's earlier runs")
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args()
    names = chosen_targets(parser, args.targets)
    until = deadline(args.until)
    rows = []
    for name in names:
        wanted = args.sequences if name in LOCAL else args.cloud_sequences
        rows.append(soak(name, wanted, args.chunk, until))
    header = (
        "# Soak: the model tests at length\n\n"
        "Every table of every layout compared with the reference model after every step of random "
        "sequences (`python bench/soak.py`, see its docstring; `make soak`). `failing` is 1 when a "
        "chunk found a difference (its shrunk sequence is in the log named below the table), "
        "`timeout` when a chunk ran past its time limit, `error` when a chunk could not run; a "
        "chunk that did not pass stops its target and its sequences are not counted. Sequences "
        "are those that ran through (Hypothesis's discarded ones are not counted since the runs "
        "that report situations: before them every sequence built counted); each run's situation "
        "table counts the sequences that reached each situation. A run's section is named by the "
        "time it ended.\n"
    )
    kept = earlier_runs(args.report, args.add)
    args.report.write_text(header + "\n" + kept + report(rows, args), encoding="utf-8")
    print(f"wrote {args.report}")
    return 1 if any(row.failing != "0" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Crash points, every one: `python bench/crash_sweep.py` rewrites bench/CRASHES.md.

For each target it runs the conformance suite's crash-point test
(`test_a_crash_at_any_statement_loses_and_doubles_nothing`, `synclog_testing.crash_points`) with
`SYNCLOG_CRASH_POINTS=all`: a trial at every statement boundary of a write, its finish and a
retention (where `make test` crashes at two drawn ones), each healed, flushed and compared with the
reference model. A trial's line is printed as it ends.

    python bench/crash_sweep.py                               # every target, every boundary
    python bench/crash_sweep.py --targets bigquery --part 2/4 --add

`--part k/n` runs every n-th boundary from the k-th (a long sweep in parts; the report's rows of
one target's parts add up). `--until HH:MM` (UTC) stops there and counts the trials that ended.
`--add` keeps the report's earlier runs and adds this one below them; the report is written after
each target.
A failing target's output is kept in bench/crash-logs/.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from suite_runs import CLASSES, chosen_targets, deadline, earlier_runs, node, run_heading  # noqa: E402

ROOT = HERE.parent
TEST = "test_a_crash_at_any_statement_loses_and_doubles_nothing"
REPORT = HERE / "CRASHES.md"
LOGS = HERE / "crash-logs"
TRIAL = re.compile(r"^crash trial (\d+) of (\d+): boundary (\d+) \((.*)\) (passed|FAILED), ([\d.]+) s$")


@dataclass
class Swept:
    """What ran of one target."""

    target: str
    part: str
    boundaries: int = 0
    trials: int = 0
    failed: int = 0
    outcome: str = "passed"
    """passed, FAILED (a trial's tables differed from the model), error (the test could not run)
    or stopped (at `--until`: its trials that ended are counted)."""
    seconds: float = 0.0
    log: str = ""

    def row(self) -> str:
        cells = (
            self.target,
            self.part,
            f"{self.boundaries:,}",
            f"{self.trials:,}",
            f"{self.failed:,}",
            self.outcome,
            f"{self.seconds:,.0f}",
        )
        return "| " + " | ".join(cells) + " |"


def sweep(name: str, part: str, until: datetime | None) -> Swept:
    """Run `name`'s crash-point test at every boundary of `part` (stopped at `until`); what ran,
    and how it ended."""
    test, env = node(name, TEST)
    done = Swept(name, part)
    run_env = {**os.environ, **env, "SYNCLOG_CRASH_POINTS": "all", "SYNCLOG_CRASH_PART": part}
    command = [sys.executable, "-m", "pytest", test, "-q", "-s", "-p", "no:cacheprovider"]
    command += ["--timeout", "0"]  # the suite's limit a test is no limit for hundreds of trials
    started = time.perf_counter()
    output: list[str] = []
    with subprocess.Popen(
        command, cwd=ROOT, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            trial = TRIAL.match(line.strip())
            if trial:
                done.trials = int(trial[1])
                done.failed += trial[5] == "FAILED"
                print(f"{name}: {line.strip()}", flush=True)
                if until is not None and datetime.now(UTC) >= until:
                    done.outcome = "stopped"
                    process.terminate()
    done.seconds = time.perf_counter() - started
    text = "".join(output)
    dry = re.search(r"the dry pass saw (\d+) boundaries", text)
    done.boundaries = int(dry[1]) if dry else 0
    if done.failed or (process.returncode != 0 and done.outcome != "stopped"):
        done.outcome = "FAILED" if done.failed else "error"
        LOGS.mkdir(exist_ok=True)
        log = LOGS / f"{name}-{datetime.now(UTC):%Y%m%dT%H%M%S}.txt"
        log.write_text(text, encoding="utf-8")
        done.log = str(log.relative_to(ROOT))
        print(f"{name}: {done.outcome}, see {done.log}", flush=True)
    return done


def report(rows: list[Swept]) -> str:
    """This run's section of CRASHES.md."""
    lines = [
        *run_heading("bench/crash_sweep.py"),
        "",
        "| target | part | boundaries | trials | failed | outcome | seconds |",
        "|---|---|---:|---:|---:|---|---:|",
        *(row.row() for row in rows),
    ]
    lines += [f"\n{row.target}: its output: `{row.log}`." for row in rows if row.log]
    return "\n".join(lines) + "\n"


HEADER = (
    "# Crash points: every statement boundary, on every target\n\n"
    "`python bench/crash_sweep.py` (see its docstring; in `make faults`): the conformance suite's "
    "crash-point test with `SYNCLOG_CRASH_POINTS=all` on each target: a trial at every boundary "
    "before and after each call that reaches the warehouse during a write, its finish and a "
    "retention; each trial heals the target, flushes, runs a failed retention again and compares "
    "every table with the reference model (nothing lost, nothing doubled, each column recorded "
    "once in `synclog_versions`). `boundaries` is what the dry pass counted; `trials` the trials "
    "run (all of a part's boundaries when it passed). A run's section is named by the time it "
    "ended.\n"
)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--targets", default=",".join(CLASSES), help=f"comma-separated, of {', '.join(CLASSES)}"
    )
    parser.add_argument("--part", default="1/1", help="k/n: every n-th boundary from the k-th (default 1/1)")
    parser.add_argument("--until", help="HH:MM UTC (the next such time): stop there, counting what ran")
    parser.add_argument("--add", action="store_true", help="keep the report's earlier runs")
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args()
    names = chosen_targets(parser, args.targets)
    part = re.fullmatch(r"(\d+)/(\d+)", args.part)
    if not part or not 1 <= int(part[1]) <= int(part[2]):
        parser.error(f"--part {args.part!r}: k/n with 1 <= k <= n")
    until = deadline(args.until)
    kept = earlier_runs(args.report, args.add)
    rows: list[Swept] = []
    for name in names:
        if until is not None and datetime.now(UTC) >= until:
            break
        rows.append(sweep(name, args.part, until))
        args.report.write_text(HEADER + "\n" + kept + report(rows), encoding="utf-8")
        print(f"wrote {args.report}", flush=True)
    return 1 if any(row.outcome != "passed" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

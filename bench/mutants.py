"""`make mutants`: how many realistic one-line bugs the fast suite catches (bench/MUTANTS.md).

The mutants are curated, not generated: `bench/mutants.toml` lists one-line bugs across the
layouts, canonical frames, identifiers, swaps, retention, the hightouch diff, the run store and
background loads, each the text it replaces in a file of the core and the failure it stands for.
For each, this script puts the bug in the worktree's file itself (the venv installs the core
editable, and Spark's Python workers import the same files), runs the fast suite against it with
`pytest -x` (stop at the first failure: a killed mutant ends early), and puts the file back
whatever happens (`finally`; SIGTERM and Ctrl-C too). It refuses to start while a file it would
mutate differs from git's HEAD, so it never restores over someone's edits, and a run killed
outright (SIGKILL) leaves a file `git checkout -- FILE` restores.

The fast suite (`SUITE`), ordered so most mutants die early: the core's unit tests that take a
second or two, the DuckDB model test (the reference model against random sequences; 22 of them
besides the simplest, the Hypothesis profile `mutants`: fresh sequences from a fixed seed, a failure not
shrunk), the loader's and `BackgroundLog`'s tests, then the rest of the DuckDB conformance
suite; the test that killed a mutant in the previous run (`MUTANTS.json`), else the test added for
it, goes first. The suite runs once unmutated first: a suite that fails alone would make every
mutant look killed.

    python bench/mutants.py                              # every mutant, rewrites MUTANTS.md
    python bench/mutants.py --only log-id-without-run,retention-at-cutoff --timeout 600
    python bench/mutants.py --list

A full run replaces bench/MUTANTS.json (each mutant's outcome) and MUTANTS.md; `--only` runs
update those mutants' rows and add the run to the report's list of runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MUTANTS = HERE / "mutants.toml"
RESULTS = HERE / "MUTANTS.json"
REPORT = HERE / "MUTANTS.md"
MODEL_TEST = "integration/test_duckdb.py::TestDuckDB::test_log_tables_follow_the_reference_model"
SUITE = (
    "tests/test_runs_in_code.py",
    "tests/test_config_and_names.py",
    "tests/test_load_protocol.py",
    "tests/test_sql_hooks.py",
    "tests/test_canonical.py",
    "tests/test_lake_layout.py",
    "tests/test_outage.py",
    "tests/test_duplicates_across_batches.py",
    "tests/test_batches.py",
    "tests/test_input_contract.py",
    "tests/test_read_rows.py",
    "tests/test_lake_target.py",
    MODEL_TEST,
    "tests/test_loader.py",
    "tests/test_background.py",
    "integration/test_duckdb.py",
)
"""The fast suite, in the order it runs: the unit tests that take a second or two (Spark's start
aside), then the model test (it compares every table with the reference model after every step
of random sequences, so it kills most bugs of the write path, and without shrinking its first
failure ends it), then the loader's and `BackgroundLog`'s tests (processes and threads: tens of
seconds), then the rest of the DuckDB conformance suite."""
FIRST_ENV = "SYNCLOG_MUTANTS_FIRST"
"""The test that killed the mutant in the last run (`MUTANTS.json`), run first: where it still
kills, the suite ends after it."""
MODEL_SEED = "20261129"
"""The model test's fresh sequences are drawn from this seed: every mutant meets the same ones."""
DEFAULT_TIMEOUT_S = 1200


@dataclass(frozen=True)
class Mutant:
    """One curated bug: `original` (found exactly once in `file`) becomes `replacement`."""

    id: str
    area: str
    file: str
    original: str
    replacement: str
    bug: str
    note: str = ""
    """Why a survivor cannot be killed (an equivalent mutant), shown in the report."""
    added_test: str = ""
    """The test added so that the suite kills this mutant, shown in the report (and run first where
the previous run did not kill it)."""


@dataclass
class Outcome:
    """What the fast suite did against one mutant."""

    id: str
    outcome: str
    """killed, survived, timeout (counted as killed: the suite hung) or invalid (not applied)."""
    killed_by: str = ""
    tests: int = 0
    seconds: float = 0.0
    run: str = ""
    """When the run that gave this outcome started (its entry in the report's runs)."""


def load_mutants(path: Path = MUTANTS) -> list[Mutant]:
    return [Mutant(**entry) for entry in tomllib.loads(path.read_text(encoding="utf-8"))["mutant"]]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """(As a pytest plugin, `-p mutants`) order the tests as `SUITE` does, the test `FIRST_ENV`
    names first."""
    first = os.environ.get(FIRST_ENV)

    def rank(item: pytest.Item) -> int:
        if first and item.nodeid.split("[")[0] == first.split("[")[0]:
            return -1
        return next((n for n, part in enumerate(SUITE) if item.nodeid.startswith(part)), len(SUITE))

    items.sort(key=rank)


# -- applying a mutant --------------------------------------------------------------------------


def modified(files: set[str]) -> list[str]:
    """The files of `files` that differ from git's HEAD (or are not tracked)."""
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--", *sorted(files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted({line[3:] for line in changed.splitlines() if line.strip()})


def applies(mutant: Mutant) -> bool:
    """Whether `mutant.original` occurs exactly once in its file."""
    path = ROOT / mutant.file
    return path.is_file() and path.read_text(encoding="utf-8").count(mutant.original) == 1


@contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """The file with the mutant in place; restored, bytes and times, however the block ends."""
    if modified({mutant.file}):
        raise SystemExit(f"{mutant.file} differs from git's HEAD: not mutating it (git checkout -- it?)")
    path = ROOT / mutant.file
    before, stat = path.read_bytes(), path.stat()
    try:
        path.write_text(before.decode("utf-8").replace(mutant.original, mutant.replacement), encoding="utf-8")
        yield
    finally:
        path.write_bytes(before)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    if modified({mutant.file}):
        raise SystemExit(f"{mutant.file} still differs from git's HEAD after restoring it")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


# -- running the suite --------------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteRun:
    passed: bool
    timed_out: bool
    failed: str
    tests: int
    seconds: float
    returncode: int


def run_suite(timeout: float, log: Path, first: str = "") -> SuiteRun:
    """The fast suite, stopping at its first failure; which test failed first, and how many ran.
    Runs in a process group of its own (Spark's JVM and workers inside), ended whole on timeout
    or interruption."""
    junit = log.with_suffix(".xml")
    files = list(dict.fromkeys(part.split("::")[0] for part in SUITE))
    command = [sys.executable, "-m", "pytest", *files, "-x", "-q", "-p", "no:cacheprovider", "-p", "mutants"]
    command += [f"--junitxml={junit}", "-o", "addopts=-ra"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        "PYTHONDONTWRITEBYTECODE": "1",  # no mutant's bytecode is cached beside the file
        "SYNCLOG_MODEL_PROFILE": "mutants",
        "SYNCLOG_MODEL_SEED": MODEL_SEED,
        FIRST_ENV: first,
    }
    started = time.perf_counter()
    timed_out = False
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            if process.poll() is None:
                _end_group(process)
    seconds = time.perf_counter() - started
    failed, tests = _first_failure(junit)
    return SuiteRun(process.returncode == 0, timed_out, failed, tests, seconds, process.returncode)


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """End the suite's process group: SIGTERM, then SIGKILL after 10 s."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sent)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def _first_failure(junit: Path) -> tuple[str, int]:
    """The first failing or erroring test of a JUnit report (as `file::Class::test`), and how
    many tests ran; ("", 0) without a report."""
    if not junit.exists():
        return "", 0
    cases = ET.parse(junit).getroot().iter("testcase")
    count, first = 0, ""
    for case in cases:
        count += 1
        if not first and (case.find("failure") is not None or case.find("error") is not None):
            module, _, cls = case.get("classname", "").rpartition(".")
            if not cls[:1].isupper():  # a module-level test: the class name is the module's
                module, cls = case.get("classname", ""), ""
            path = module.replace(".", "/") + ".py"
            first = "::".join(filter(None, [path, cls, case.get("name", "")]))
    junit.unlink()
    return first, count


def try_mutant(mutant: Mutant, timeout: float, logs: Path, run: str, first: str) -> Outcome:
    if not applies(mutant):
        return Outcome(mutant.id, "invalid", run=run)
    with applied(mutant):
        result = run_suite(timeout, logs / f"{mutant.id}.log", first)
    if result.timed_out:
        return Outcome(mutant.id, "timeout", "", result.tests, result.seconds, run)
    if result.passed:
        return Outcome(mutant.id, "survived", "", result.tests, result.seconds, run)
    if result.returncode not in (1, 2):  # no test ran, or pytest itself failed: no verdict
        return Outcome(
            mutant.id, "invalid", f"pytest exit {result.returncode}", result.tests, result.seconds, run
        )
    return Outcome(mutant.id, "killed", result.failed or "collection", result.tests, result.seconds, run)


# -- the report ---------------------------------------------------------------------------------


def score(outcomes: list[Outcome]) -> tuple[int, int]:
    """Mutants killed (timeouts included) and mutants that ran."""
    ran = [o for o in outcomes if o.outcome != "invalid"]
    return sum(o.outcome in ("killed", "timeout") for o in ran), len(ran)


def report(mutants: list[Mutant], state: dict[str, Any]) -> str:
    results = {o["id"]: Outcome(**o) for o in state["results"]}
    outcomes = [results[m.id] for m in mutants if m.id in results]
    killed, ran = score(outcomes)
    share = f"{killed / ran:.1%}" if ran else "n/a"
    lines = [
        "# Mutants: what the fast suite catches",
        "",
        f"`make mutants` (`python bench/mutants.py`, see its docstring) puts each of the {len(mutants)} "
        "curated one-line bugs of `bench/mutants.toml` into the core, runs the fast suite against it "
        "with `pytest -x` and puts the file back. The fast suite, in its order: "
        + ", ".join(f"`{s}`" for s in SUITE)
        + " (the model test: 22 sequences besides the simplest, fresh ones from seed "
        + f"{MODEL_SEED}, not shrunk), the test that killed a mutant in the previous run first.",
        "",
        f"**Score: {killed} of {ran} killed ({share}).** A timeout counts as killed (the suite hung).",
        "",
        "## Runs",
        "",
        "| started (UTC) | commit | command | mutants | killed | unmutated suite | wall "
        "| load average, start → end | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for entry in state["runs"]:
        lines.append(
            f"| {entry['started']} | {entry['commit']} | `{entry['command']}` | {entry['mutants']} | "
            f"{entry.get('killed', '')} | "
            f"{entry['baseline']} | {entry['wall']} | {entry['load']} | {entry['note']} |"
        )
    lines += [
        "",
        "## Mutants",
        "",
        "| id | area | the bug | outcome | killed by | tests run | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in mutants:
        o = results.get(m.id)
        if o is None:
            lines.append(f"| {m.id} | {m.area} | {m.bug} | not run | | | |")
            continue
        by = f"`{o.killed_by}`" if o.killed_by else ""
        lines.append(f"| {m.id} | {m.area} | {m.bug} | {o.outcome} | {by} | {o.tests} | {o.seconds:.0f} |")
    survivors = [m for m in mutants if m.id in results and results[m.id].outcome == "survived"]
    lines += ["", "## Survivors", ""]
    lines += [f"- **{m.id}** ({m.bug}): {m.note or 'no test kills it yet.'}" for m in survivors] or ["None."]
    added = [m for m in mutants if m.added_test]
    lines += ["", "## Tests added to kill a mutant (each survived the suite before)", ""]
    lines += [f"- **{m.id}**: `{m.added_test}`" for m in added] or ["None."]
    invalid = [m.id for m in mutants if m.id in results and results[m.id].outcome == "invalid"]
    if invalid:
        lines += [
            "",
            "Not applied (the text is not found exactly once, or pytest gave no verdict): "
            + ", ".join(invalid),
        ]
    return "\n".join(lines) + "\n"


def _load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated mutant ids (default: every mutant)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per mutant")
    parser.add_argument("--note", default="", help="said beside the run in the report (a shared machine)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated suite's run")
    args = parser.parse_args()
    mutants = load_mutants()
    if args.list:
        for m in mutants:
            print(f"{m.id:36} {m.area:18} {m.file}")
        return 0
    chosen = mutants
    if args.only:
        wanted = [w for w in args.only.split(",") if w]
        unknown = sorted(set(wanted) - {m.id for m in mutants})
        if unknown:
            parser.error(f"unknown mutant {unknown[0]!r}")
        chosen = [m for m in mutants if m.id in wanted]
    dirty = modified({m.file for m in chosen})
    if dirty:
        print(f"refusing to start: {', '.join(dirty)} differ from git's HEAD", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    started, load = datetime.now(UTC), _load_average()
    run = f"{started:%Y-%m-%d %H:%M}"
    logs = Path(tempfile.mkdtemp(prefix="synclog-mutants-"))
    clock = time.perf_counter()
    before = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {"results": []}
    killers = {r["id"]: r["killed_by"] for r in before["results"] if r["outcome"] == "killed"}
    outcomes = []
    baseline = "not run"
    try:
        if not args.no_baseline:
            alone = run_suite(args.timeout, logs / "unmutated.log")
            baseline = f"passed, {alone.tests} tests, {alone.seconds:.0f} s"
            print(f"unmutated suite: {baseline if alone.passed else 'FAILED'}", flush=True)
            if not alone.passed:
                print(
                    f"the suite fails without a mutant ({alone.failed}); see {logs}/unmutated.log",
                    file=sys.stderr,
                )
                return 1
        for number, mutant in enumerate(chosen, 1):
            first = killers.get(mutant.id) or mutant.added_test
            outcome = try_mutant(mutant, args.timeout, logs, run, first)
            outcomes.append(outcome)
            by = f" by {outcome.killed_by}" if outcome.killed_by else ""
            said = f"{outcome.outcome}{by} ({outcome.seconds:.0f} s)"
            print(f"[{number}/{len(chosen)}] {mutant.id}: {said}", flush=True)
    except KeyboardInterrupt:
        print("interrupted: every file is back as it was; nothing written", file=sys.stderr)
        return 130
    wall = time.perf_counter() - clock
    killed, ran = score(outcomes)
    entry = {
        "started": run,
        "killed": f"{killed} of {ran}",
        "commit": commit,
        "command": shlex.join(["python", "bench/mutants.py", *sys.argv[1:]]),
        "mutants": len(chosen),
        "baseline": baseline,
        "wall": f"{wall / 60:.1f} min",
        "load": f"{load} → {_load_average()}",
        "note": args.note,
    }
    full = not args.only
    state: dict[str, Any] = {"runs": [], "results": []}
    if not full and RESULTS.exists():
        state = json.loads(RESULTS.read_text(encoding="utf-8"))
    kept = [r for r in state["results"] if r["id"] not in {o.id for o in outcomes}]
    state = {"runs": [*state["runs"], entry], "results": kept + [asdict(o) for o in outcomes]}
    RESULTS.write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    REPORT.write_text(report(mutants, state), encoding="utf-8")
    print(f"{killed} of {ran} killed in {wall / 60:.1f} min; logs in {logs}; wrote {REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`make dist`, run by the pip of a fresh virtual environment (nothing installed but what `venv`
brings), builds wheels that install into that environment, outside the checkout, and run:
`synclog plugins` lists every target, and the SQLite example, a plugin built on the public API
alone, passes its whole test suite (the conformance suite and its demo through the `synclog`
command) from the wheels. `make test` runs that suite here only, not also from the checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("bigquery", "databricks", "duckdb", "lake", "postgres", "redshift", "snowflake", "sqlite")


CLEAN_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
"""The environment of the commands: nothing on the path points into the checkout."""


def run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=CLEAN_ENV, capture_output=True, text=True, timeout=1500
    )
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_wheels_install_and_run_in_a_clean_venv(tmp_path: Path) -> None:
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    dist = tmp_path / "dist"
    run("make", "-s", "dist", f"DIST={dist}", f"BUILD_PYTHON={env / 'bin' / 'python'}", cwd=ROOT)
    wheels = sorted(dist.glob("*.whl"))
    assert len(wheels) == 2 + len(list((ROOT / "plugins").iterdir())) + len(
        list((ROOT / "examples").iterdir())
    )  # the core, the test kit, the plugins and the examples

    # --no-compile: no byte-compiling of pyspark & co. ahead of the run
    pip_install = ("-m", "pip", "install", "-q", "--no-compile", "--find-links", dist)
    run(env / "bin" / "python", *pip_install, *wheels, cwd=tmp_path)
    show_files = "import importlib, sys; print(*(importlib.import_module(m).__file__ for m in sys.argv[1:]))"
    where = run(
        env / "bin" / "python", "-c", show_files, "synclog", "synclog_testing", "synclog_sqlite", cwd=tmp_path
    )
    assert all(path.startswith(str(env)) for path in where.split()), f"not from the wheels: {where}"

    listed = run(env / "bin" / "synclog", "plugins", cwd=tmp_path)
    assert all(f"\n{name} " in listed or listed.startswith(name) for name in TARGETS), listed

    # The SQLite example's tests, copied out of the checkout, by the venv's pytest against the
    # installed wheels (synclog-testing brings pytest and the conformance suite).
    suite = shutil.copytree(ROOT / "examples" / "synclog-sqlite" / "tests", tmp_path / "sqlite-tests")
    summary = (
        run(
            env / "bin" / "python",
            "-m",
            "pytest",
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--basetemp={tmp_path / 'sqlite-tmp'}",  # its own: a new numbered one prunes the oldest
            suite,
            cwd=tmp_path,
        )
        .strip()
        .splitlines()[-1]
    )
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) > 0 and "failed" not in summary, summary


def test_the_core_distribution_pulls_no_pytest() -> None:
    """`pip install synclog` brings no pytest and no pytest plugin: the conformance suite is
    synclog-testing's (only the dev extra names pytest)."""
    requires = metadata.requires("synclog") or []
    pulled = [r for r in requires if "extra ==" not in r]
    assert pulled and not [r for r in pulled if r.lower().startswith("pytest")], pulled
    assert not [e for e in metadata.distribution("synclog").entry_points if e.group == "pytest11"]
    testing = metadata.distribution("synclog-testing")
    assert [e.value for e in testing.entry_points if e.group == "pytest11"] == [
        "synclog_testing.pytest_plugin"
    ]

"""`make dist`, run by the pip of a fresh virtual environment (nothing installed but what `venv`
brings), builds wheels that install into that environment, outside the checkout, and run:
`synclog plugins` lists every target, and a tiny demo writes and answers."""

from __future__ import annotations

import subprocess
import venv
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("bigquery", "databricks", "duckdb", "lake", "postgres", "redshift", "snowflake", "sqlite")


def run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=1500)
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

    run(env / "bin" / "python", "-m", "pip", "install", "-q", "--find-links", dist, *wheels, cwd=tmp_path)
    where = run(env / "bin" / "python", "-c", "import synclog; print(synclog.__file__)", cwd=tmp_path)
    assert where.strip().startswith(str(env)), "synclog comes from the wheel, not the checkout"

    listed = run(env / "bin" / "synclog", "plugins", cwd=tmp_path)
    assert all(f"\n{name} " in listed or listed.startswith(name) for name in TARGETS), listed
    demo = run(
        env / "bin" / "synclog", "demo", "--scale", "0.01", "--target", "sqlite:///demo.sqlite", cwd=tmp_path
    )
    assert "logged" in demo and (tmp_path / "demo.census.sqlite").exists()


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

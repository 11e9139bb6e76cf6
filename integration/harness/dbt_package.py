"""Run the synclog dbt package (dbt/) with the dbt of `.venv-dbt` (`make dbt-install`).

dbt lives in its own virtualenv (it pins libraries that clash with pyspark's), so the tests call
its `dbt` as a subprocess: one profiles.yml per test module (JSON, which YAML reads), one target
per warehouse, every file dbt writes (target/, logs) under the module's temp folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ServerUnavailable

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "dbt"
"""The package's project folder."""
DBT_ENV = "SYNCLOG_DBT"
"""Names another `dbt` executable than .venv-dbt's."""
_TIMEOUT_S = 600


def dbt_executable() -> Path:
    """The `dbt` to run; ServerUnavailable (tests skip) when `make dbt-install` has not made it."""
    given = os.environ.get(DBT_ENV)
    path = Path(given) if given else REPO / ".venv-dbt" / "bin" / "dbt"
    if not path.is_file():
        raise ServerUnavailable(f"no dbt at {path}: `make dbt-install` creates .venv-dbt (or set {DBT_ENV})")
    return path


@dataclass(frozen=True)
class DbtRun:
    """One finished dbt command: its exit code and what it printed."""

    returncode: int
    output: str

    def check(self) -> DbtRun:
        """Self, or AssertionError with dbt's output when the command failed."""
        assert self.returncode == 0, self.output[-6000:]
        return self


@dataclass(frozen=True)
class DbtPackage:
    """The package with a profile of several targets (dbt `outputs`), run from a work folder."""

    executable: Path
    folder: Path

    @classmethod
    def with_outputs(cls, folder: Path, outputs: Mapping[str, Mapping[str, Any]]) -> DbtPackage:
        """Write the profile `synclog` with `outputs` into `folder`."""
        folder.mkdir(parents=True, exist_ok=True)
        first = next(iter(outputs))
        profile = {"synclog": {"target": first, "outputs": {k: dict(v) for k, v in outputs.items()}}}
        (folder / "profiles.yml").write_text(json.dumps(profile, indent=1), encoding="utf-8")
        return cls(dbt_executable(), folder)

    def target_path(self, target: str) -> Path:
        """Where dbt writes `target`'s manifest and compiled SQL."""
        return self.folder / f"target-{target}"

    def run(self, target: str, *command: str, variables: Mapping[str, Any] | None = None) -> DbtRun:
        """`dbt COMMAND` on the package against the profile's `target`."""
        args = [
            str(self.executable),
            *command,
            "--project-dir",
            str(PACKAGE),
            "--profiles-dir",
            str(self.folder),
            "--target",
            target,
            "--target-path",
            str(self.target_path(target)),
            "--log-path",
            str(self.folder / "logs"),
        ]
        if variables:
            args += ["--vars", json.dumps(dict(variables))]
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_USE_COLORS": "false"}
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=_TIMEOUT_S, env=env, cwd=self.folder, check=False
        )
        return DbtRun(done.returncode, done.stdout + done.stderr)

    def compiled(self, target: str) -> dict[str, str]:
        """Each compiled model's SQL by model name (after `dbt compile` or `dbt build`)."""
        root = self.target_path(target) / "compiled" / "synclog" / "models"
        models = (
            p for p in root.rglob("*.sql") if not any(s.endswith(".yml") for s in p.relative_to(root).parts)
        )
        return {p.stem: p.read_text(encoding="utf-8") for p in models}

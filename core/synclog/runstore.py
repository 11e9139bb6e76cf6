"""The run store: validated canonical batches of runs in progress, kept until the run completes.

Layout per run: `ROOT/<sync_id>/<sync_run_id>/batch_number=N/*.parquet`. A batch written again
replaces its folder. When the target is down, `pending.json` beside the batches says what is
still to be loaded: the store doubles as the spool that `SyncLog.flush` empties.
Incoming writes are staged in a hidden folder beside it (Spark ignores
names starting with `.`) and only moved in once they passed validation.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from synclog.model import Run

PARTITION = "batch_number"
PENDING = "pending.json"


@dataclass(frozen=True)
class Pending:
    """Batches of a run that a target could not take yet, and whether the run has finished."""

    run: Run
    batches: tuple[int, ...]
    finished: bool


class RunStore:
    """Canonical batches on local (or executor-shared) disk, by sync and run."""

    def __init__(self, root: str | Path) -> None:
        # Absolute now: Spark's JVM resolves a relative path against its own start directory.
        self.root = Path(root).absolute()

    def run_dir(self, run: Run) -> Path:
        """The folder of `run`'s committed batches."""
        return self.root / str(run.sync_id) / str(run.sync_run_id)

    def incoming(self, run: Run) -> Path:
        """A fresh hidden folder to stage one write of `run` in."""
        return self.run_dir(run) / f".incoming-{uuid.uuid4().hex}"

    def commit(self, run: Run, incoming: Path) -> list[int]:
        """Move the batches staged in `incoming` into place, replacing older copies."""
        batches = []
        for staged in sorted(incoming.glob(f"{PARTITION}=*")):
            final = self.run_dir(run) / staged.name
            shutil.rmtree(final, ignore_errors=True)
            staged.replace(final)
            batches.append(int(staged.name.partition("=")[2]))
        shutil.rmtree(incoming, ignore_errors=True)
        return batches

    def read(self, spark: SparkSession, run: Run, batches: Iterable[int] | None = None) -> DataFrame:
        """The canonical frame of `run`'s committed batches (all of them by default)."""
        base = self.run_dir(run)
        paths = [str(base / f"{PARTITION}={b}") for b in batches] if batches is not None else [str(base)]
        frame = spark.read.option("basePath", str(base)).parquet(*paths)
        return frame.withColumn(PARTITION, frame[PARTITION].cast("int"))

    def has(self, run: Run) -> bool:
        """Whether any batch of `run` is kept."""
        return any(self.run_dir(run).glob(f"{PARTITION}=*"))

    def drop(self, run: Run) -> None:
        """Forget `run` once every layout has what it needs."""
        shutil.rmtree(self.run_dir(run), ignore_errors=True)

    def mark_pending(self, run: Run, batches: Iterable[int], *, finished: bool) -> Pending:
        """Remember that `batches` (added to those already pending) still wait for the target."""
        before = self.pending_of(run)
        pending = Pending(
            run=run,
            batches=tuple(sorted({*batches, *(before.batches if before else ())})),
            finished=finished or (before.finished if before else False),
        )
        data = {"run": run.to_dict(), "batches": list(pending.batches), "finished": pending.finished}
        path = self.run_dir(run) / PENDING
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(f".{uuid.uuid4().hex}.tmp")
        scratch.write_text(json.dumps(data), encoding="utf-8")
        scratch.replace(path)
        return pending

    def pending_of(self, run: Run) -> Pending | None:
        """What of `run` still waits for the target, if anything."""
        return _read_pending(self.run_dir(run) / PENDING)

    def all_pending(self) -> list[Pending]:
        """Every run with something waiting for the target, oldest run first."""
        found = [_read_pending(p) for p in self.root.glob(f"*/*/{PENDING}")]
        return sorted((p for p in found if p), key=lambda p: p.run.started_at)

    def clear_pending(self, run: Run) -> None:
        """The target has everything of `run` that was waiting."""
        (self.run_dir(run) / PENDING).unlink(missing_ok=True)


def _read_pending(path: Path) -> Pending | None:
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return Pending(Run.from_dict(data["run"]), tuple(data["batches"]), bool(data["finished"]))

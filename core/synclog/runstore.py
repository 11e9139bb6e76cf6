"""The run store: validated canonical batches of runs in progress, kept until the run completes.

Layout per run: `ROOT/<sync_id>/<sync_run_id>/batch_number=N/*.parquet`. A batch written again
replaces its folder. Incoming writes are staged in a hidden folder beside it (Spark ignores
names starting with `.`) and only moved in once they passed validation.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from synclog.model import Run

PARTITION = "batch_number"


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

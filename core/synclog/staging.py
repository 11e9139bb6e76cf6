"""Stage Spark frames as Parquet files, written by the executors, for a target's bulk load."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import DataFrame


@contextmanager
def parquet_stage(frame: DataFrame, staging_dir: str | None = None) -> Iterator[list[str]]:
    """Write `frame` as Parquet files into a fresh folder; yield their paths; remove the folder.

    The executors write the files; the driver only lists the folder. An empty frame
    yields no paths.
    """
    folder = Path(tempfile.mkdtemp(prefix="synclog-stage-", dir=staging_dir))
    try:
        frame.write.mode("overwrite").parquet(str(folder / "data"))
        yield sorted(str(p) for p in (folder / "data").glob("*.parquet"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

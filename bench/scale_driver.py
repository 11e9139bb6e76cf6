"""One `write_run` of N records into one target, as a driver of a Spark standalone cluster; prints JSON.

Run by `bench/scale.py` in a process of its own, with the cluster's driver environment:

    python bench/scale_driver.py '{"name": …, "url": …, "storage": …, "options": {…}, "records": N}'

The bytes of files the driver process reads or writes through `storage` are counted at the
storage layer: in this process only, every filesystem that a `Location` builds is wrapped so
that each opened file counts what passes through it (the executors, other processes, build
their own, uncounted). It prints the target, the rows the log table holds, the staged bytes
(the files the tasks reported to the loads) and the driver's bytes.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
from fsspec.implementations.arrow import ArrowFSWrapper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from postgres_bench import records_frame  # noqa: E402

from synclog.config import Config  # noqa: E402
from synclog.spark import spark_session  # noqa: E402
from synclog.storage.location import Location  # noqa: E402
from synclog.storage.manifest import Manifest  # noqa: E402
from synclog.targets.base import TargetSettings  # noqa: E402
from synclog.targets.sql import SqlTarget  # noqa: E402
from synclog.writer import SyncLog  # noqa: E402
from synclog_testing.factories import make_run  # noqa: E402

DRIVER = Counter[str]()
"""Bytes of file contents this process read and wrote through `storage`."""
BY_FOLDER = Counter[str]()
"""The same by what they were: `read staging`, `written runs`, … (the path's first folder in storage)."""
STAGED = Counter[str]()
"""Bytes of the files the loads were handed (their sizes, asked of storage)."""


class _CountedFile:
    """A file object whose reads and writes add to DRIVER."""

    def __init__(self, inner: Any, folder: str) -> None:
        self._inner, self._folder = inner, folder

    def read(self, *args: Any) -> bytes:
        data = self._inner.read(*args)
        DRIVER["read"] += len(data)
        BY_FOLDER[f"read {self._folder}"] += len(data)
        return data

    def write(self, data: Any) -> int:
        DRIVER["written"] += len(data)
        BY_FOLDER[f"written {self._folder}"] += len(data)
        return self._inner.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> _CountedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()


class _CountingFiles(ArrowFSWrapper):
    def __init__(self, fs: pafs.FileSystem, root: str) -> None:
        super().__init__(fs)
        self.root = root

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        folder = path.removeprefix(self.root).strip("/").split("/")[0]
        return _CountedFile(super()._open(path, mode, **kwargs), folder)


def count_driver_storage(storage: Location) -> None:
    """Wrap every filesystem this process builds from a `Location` (executors are unaffected),
    and note the size of the files each load is handed."""
    built = Location.filesystem

    def counted(location: Location) -> pafs.FileSystem:
        return pafs.PyFileSystem(pafs.FSSpecHandler(_CountingFiles(built(location), storage.root)))

    Location.filesystem = counted  # type: ignore[method-assign]
    for target_type in {type_ for type_ in _subclasses(SqlTarget) if "load_files" in vars(type_)}:
        original = vars(target_type)["load_files"]

        def wrapper(self: Any, stage: Any, table: Any, manifest: Manifest, _original: Any = original) -> int:
            infos = built(manifest.location).get_file_info(manifest.paths())
            STAGED[table.name] += sum(info.size or 0 for info in infos)
            return int(_original(self, stage, table, manifest))

        target_type.load_files = wrapper  # type: ignore[method-assign]


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def main(spec: dict[str, Any]) -> dict[str, Any]:
    from synclog.plugins.manager import registry
    from synclog.urls import TargetURL

    spark = spark_session()
    storage = Location.parse(spec["storage"], spec.get("storage_options") or {})
    settings = TargetSettings(storage=storage, options=spec.get("options") or {})
    target = registry().open(TargetURL.parse(spec["url"]), settings)  # plugins are imported now
    count_driver_storage(storage)
    records = records_frame(spark, int(spec["records"]))
    started = time.monotonic()
    with SyncLog(target, replace(Config(), storage=storage), spark) as log:
        result = log.write_run(make_run(), records)
    seconds = time.monotonic() - started
    return {
        "target": spec["name"],
        "rows": max(result.loaded.values(), default=0),  # the records' table (or the lake's files)
        "seconds": round(seconds, 1),
        "staged_bytes": sum(STAGED.values()),
        "driver_read": DRIVER["read"],
        "driver_written": DRIVER["written"],
        "pending": result.pending,
        "driver_by_folder": dict(BY_FOLDER),
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))

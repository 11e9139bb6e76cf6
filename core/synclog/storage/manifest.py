"""Manifests: the files a job wrote, as reported by the tasks that wrote them.

A manifest is built on the driver from the tasks' results, never from listing storage: a file
that no successful task reported is not part of it (a failed or speculative attempt's leftover
is garbage under the job's own folder, which the job removes).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

from synclog.storage.location import Location

if TYPE_CHECKING:
    import pyarrow.dataset as pads


@dataclass(frozen=True)
class StoredFile:
    """One file of a manifest: its path inside the location, and its row count."""

    path: str
    rows: int


@dataclass(frozen=True)
class Manifest:
    """Parquet files under a location, with their row counts."""

    location: Location
    files: tuple[StoredFile, ...] = ()

    @property
    def rows(self) -> int:
        """Rows in all the files."""
        return sum(f.rows for f in self.files)

    def paths(self) -> list[str]:
        """The files as the location's filesystem names them."""
        return [self.location.path(f.path) for f in self.files]

    def uris(self) -> list[str]:
        """The files as readers outside synclog name them (local paths, s3:// or gs:// URLs)."""
        return [self.location.uri(f.path) for f in self.files]

    def dataset(self, schema: pa.Schema) -> pads.Dataset:
        """The files as one Arrow dataset with `schema` (streams; nothing is read up front)."""
        import pyarrow.dataset as pads  # imports pandas: a tenth of a second, for readers only

        return pads.dataset(
            self.paths(), schema=schema, format="parquet", filesystem=self.location.filesystem()
        )

    def batches(self, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """The rows, a record batch at a time, read on the driver."""
        yield from self.dataset(schema).to_batches()

    @contextlib.contextmanager
    def local_paths(self) -> Iterator[list[str]]:
        """The files on this machine's disk: themselves when local, else downloaded copies."""
        if self.location.local:
            yield self.paths()
            return
        folder = tempfile.mkdtemp(prefix="synclog-download-")
        try:
            fs, local = self.location.filesystem(), pafs.LocalFileSystem()
            copies = []
            for number, path in enumerate(self.paths()):
                copy = f"{folder}/part-{number:05d}.parquet"
                pafs.copy_files(path, copy, source_filesystem=fs, destination_filesystem=local)
                copies.append(copy)
            yield copies
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def to_list(self) -> list[dict[str, Any]]:
        """The files as JSON-ready data."""
        return [{"path": f.path, "rows": f.rows} for f in self.files]

    @classmethod
    def from_list(cls, location: Location, files: Iterable[Mapping[str, Any]]) -> Manifest:
        """The inverse of `to_list`."""
        return cls(location, tuple(StoredFile(str(f["path"]), int(f["rows"])) for f in files))

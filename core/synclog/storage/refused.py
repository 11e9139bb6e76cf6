"""Refused writes: queued records whose values break a rule, kept apart with why.

    <storage>/refused/<sync_id>/<sync_run_id>/<seq>-<engine>.arrow    the records, as queued
    <storage>/refused/<sync_id>/<sync_run_id>/<seq>-<engine>.why      one line: batches, rule, place

Nothing of a refused write reached a log table; its records stay here until someone deletes
them. The lines of a run's refused writes are what its `RunResult.refused` lists.
"""

from __future__ import annotations

import contextlib
import posixpath

import pyarrow.fs as pafs

from synclog.model import Run
from synclog.storage.files import publish
from synclog.storage.location import Location

WHY = ".why"


class Refusals:
    """The refused writes under `<storage>/refused`."""

    def __init__(self, storage: Location) -> None:
        self.location = storage.child("refused")

    def place(self, run: Run, name: str) -> str:
        """Where a refused write's records are kept, as a user would name it (`name`: the
        queued item's name without its loader)."""
        return self.location.uri(posixpath.join(self._folder(run), f"{name}.arrow"))

    def keep(self, run: Run, name: str, path: str, why: str) -> None:
        """Move the queued file at `path` (as the storage's filesystem names it) here, with the
        line saying why."""
        fs = self.location.filesystem()
        folder = self.location.path(self._folder(run))
        fs.create_dir(folder, recursive=True)
        publish(fs, posixpath.join(folder, f"{name}{WHY}"), lambda out: out.write(why.encode()))
        fs.move(path, posixpath.join(folder, f"{name}.arrow"))

    def of(self, run: Run) -> tuple[str, ...]:
        """The lines of `run`'s refused writes, in the order they were queued."""
        fs = self.location.filesystem()
        selector = pafs.FileSelector(self.location.path(self._folder(run)), allow_not_found=True)
        lines = []
        for info in sorted(fs.get_file_info(selector), key=lambda i: i.path):
            if info.type == pafs.FileType.File and info.path.endswith(WHY):
                with contextlib.suppress(FileNotFoundError), fs.open_input_stream(info.path) as stream:
                    lines.append(stream.read().decode())
        return tuple(lines)

    def _folder(self, run: Run) -> str:
        return f"{run.sync_id}/{run.sync_run_id}"

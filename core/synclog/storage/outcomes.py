"""Outcomes: what the loader made of each queued item, for the engine that queued it.

    <storage>/outcomes/<target>/<sync_id>/<sync_run_id>/<seq>-<engine>.json

A loader writes one small JSON file per item it is done with (loaded, refused, or failed with
the item still queued); the engine's `WriteResult.wait` / `RunResult.wait` read theirs and
delete it. Outcomes of engines that are gone are removed by the loader (`sweep`): an engine
that never waits costs a file for as long as it runs.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pyarrow.fs as pafs

from synclog.storage.files import publish
from synclog.storage.location import Location
from synclog.storage.owners import gone
from synclog.storage.queue import Queued


class Outcomes:
    """The outcomes of one target's queued items (see the module's doc)."""

    def __init__(self, storage: Location, target: str) -> None:
        self.location = storage.child(f"outcomes/{target}")

    def put(self, item: Queued, outcome: Mapping[str, Any]) -> None:
        """Record what became of `item` (replacing an earlier outcome of it)."""
        data = json.dumps(outcome).encode()
        publish(self.location.filesystem(), self.location.path(self._path(item)), lambda out: out.write(data))

    def take(self, item: Queued) -> dict[str, Any] | None:
        """`item`'s outcome, forgotten once read; None while there is none."""
        fs, path = self.location.filesystem(), self.location.path(self._path(item))
        try:
            with fs.open_input_stream(path) as stream:
                outcome: dict[str, Any] = json.loads(stream.read().decode())
        except FileNotFoundError:
            return None
        with contextlib.suppress(FileNotFoundError):
            fs.delete_file(path)
        return outcome

    def sweep(self) -> int:
        """Remove the outcomes of engines that are gone; how many."""
        fs = self.location.filesystem()
        found = fs.get_file_info(pafs.FileSelector(self.location.root, allow_not_found=True, recursive=True))
        removed = 0
        for info in found:
            name = posixpath.basename(info.path)
            if info.type != pafs.FileType.File or not name.endswith(".json") or "-" not in name:
                continue
            engine = name.removesuffix(".json").split("-", 1)[1]
            if gone(engine, info.mtime if isinstance(info.mtime, datetime) else None):
                with contextlib.suppress(FileNotFoundError):
                    fs.delete_file(info.path)
                removed += 1
        return removed

    def _path(self, item: Queued) -> str:
        return posixpath.join(str(item.sync_id), str(item.sync_run_id), f"{item.seq}-{item.engine}.json")

"""Remove what killed writers left under `storage`: the next writer's first step.

A writer killed with SIGKILL (or whose machine died) cleans nothing up. What it may leave, all
named with its owner tag (`synclog.storage.owners`), and what the sweep does with it once that
owner is gone:

    staging/<owner>/...                  load staging files          removed
    exports/<owner>/...                  read-back exports           removed
    runs/<sync>/<run>/w-…@<owner>/...    a run-store write's files   removed unless run.json names them
    runs/<sync>/<run>/.run.json.…@<owner>.tmp   an unpublished manifest   removed
    queue/…/.<item>.…@<owner>.tmp        a queued item being published    removed

A run's `run.json` and the files it names are the run store itself (batches waiting for the
run's next write, `finish` or `flush`), and the queue's items wait for their loads
(`synclog.storage.queue`): never leftovers. Live writers' files are left alone.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from datetime import UTC, datetime

import pyarrow.fs as pafs

from synclog.storage.location import Location
from synclog.storage.owners import gone, tag_of
from synclog.storage.run_state import STATE, RunStates

AREAS = ("staging", "exports")
"""Folders of `storage` whose subfolders are each one process's (named by its owner tag)."""


def sweep(storage: Location) -> list[str]:
    """Remove the leftovers of gone writers under `storage`; return their paths (relative to it)."""
    fs = storage.filesystem()
    now = datetime.now(UTC)
    removed: list[str] = []
    for area in AREAS:
        # Listed whole and grouped by owner folder: some object stores (the GCS emulator) list
        # no folders one level down.
        owners: dict[str, list[pafs.FileInfo]] = {}
        for info in _listing(fs, storage.path(area), recursive=True):
            inside = posixpath.relpath(info.path, storage.path(area)).split("/")
            if len(inside) > 1 or info.type == pafs.FileType.Directory:
                owners.setdefault(inside[0], []).append(info)
        for tag, inside_it in owners.items():
            if gone(tag, _newest(inside_it), now):
                with contextlib.suppress(FileNotFoundError):
                    fs.delete_dir(storage.path(f"{area}/{tag}"))
                removed.append(f"{area}/{tag}")
    states = RunStates(storage.child("runs"))
    runs: dict[str, list[pafs.FileInfo]] = {}  # the files of each <sync>/<run> folder
    for info in _listing(fs, states.location.root, recursive=True):
        inside = posixpath.relpath(info.path, states.location.root).split("/")
        if len(inside) > 2 and info.type == pafs.FileType.File:
            runs.setdefault(posixpath.join(states.location.root, *inside[:2]), []).append(info)
    for folder, found in runs.items():
        removed.extend(_sweep_run(fs, storage, states, folder, found, now))
    queued = {posixpath.dirname(i.path) for i in _listing(fs, storage.path("queue"), recursive=True)}
    for folder in sorted(queued):
        removed.extend(storage.relative(path) for path in sweep_scratch(fs, folder))
    return removed


def _sweep_run(
    fs: pafs.FileSystem,
    storage: Location,
    states: RunStates,
    folder: str,
    found: list[pafs.FileInfo],
    now: datetime,
) -> list[str]:
    state = states.read(posixpath.join(folder, STATE))
    named = (
        {states.location.path(f.path) for files in state.batches.values() for f in files} if state else set()
    )
    removed = []
    for info in found:
        if info.path in named or posixpath.basename(info.path) == STATE:
            continue
        inside = posixpath.relpath(info.path, folder).split("/")
        tag = tag_of(inside[0])  # a write's folder, or an unpublished manifest
        modified = info.mtime if isinstance(info.mtime, datetime) else None
        if tag and gone(tag, modified, now):
            with contextlib.suppress(FileNotFoundError):
                fs.delete_file(info.path)
            removed.append(storage.relative(info.path))
    if removed and isinstance(fs, pafs.LocalFileSystem):
        # Folders left empty (object stores have none); never a recursive delete: a live
        # writer may be creating its own folder beside them.
        emptied = {posixpath.dirname(storage.path(path)) for path in removed} | {folder}
        for path in sorted(emptied, key=len, reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(path)
    return removed


def sweep_scratch(fs: pafs.FileSystem, folder: str) -> list[str]:
    """Remove the scratch files (`.NAME.<uuid>@<owner>.tmp`, see `published`) of gone writers in
    `folder` (not below it); return their paths."""
    removed = []
    now = datetime.now(UTC)
    for info in _listing(fs, folder):
        name = posixpath.basename(info.path)
        if info.type != pafs.FileType.File or not (name.startswith(".") and name.endswith(".tmp")):
            continue
        tag = tag_of(name)
        modified = info.mtime if isinstance(info.mtime, datetime) else None
        if tag and gone(tag, modified, now):
            with contextlib.suppress(FileNotFoundError):
                fs.delete_file(info.path)
            removed.append(info.path)
    return removed


def _listing(fs: pafs.FileSystem, path: str, *, recursive: bool = False) -> list[pafs.FileInfo]:
    return fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=recursive))


def _newest(found: list[pafs.FileInfo]) -> datetime | None:
    """When anything of an owner's folder last changed (for another host's leftovers)."""
    files = [i.mtime for i in found if i.type == pafs.FileType.File and isinstance(i.mtime, datetime)]
    folders = [i.mtime for i in found if isinstance(i.mtime, datetime)]
    return max(files, default=max(folders, default=None))

"""What notices have told the outside about a sync, kept under `storage` so that it survives the process.

    <storage>/notices/<sync_id>.json
        {"open": {rule: sync_run_id}, "sent": [[sync_run_id, rule], ...],
         "lineage": {sync_run_id: [event type, event time], ...}}

`open` holds the rules that fired and have not been resolved since (a run, or a check, where
the rule holds again sends the "resolved" notice and closes it); `sent` the last notices sent,
so a run written or finished again sends none twice; `lineage` the last OpenLineage event sent
of each recent run (START, or its terminal event) and its time, so a run written or finished
again sends no second run cycle and no event before the ones sent. The file is replaced whole,
atomically; two processes finishing runs of one sync at the same moment may lose one's update
(a notice then repeats or a resolved notice is missed, nothing else).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from synclog.storage.files import publish
from synclog.storage.location import Location

KEPT = 200
"""Notices, and runs' OpenLineage events, remembered per sync (older ones cannot repeat: their
runs are long finished)."""


@dataclass
class SyncNotices:
    """One sync's open rules, the notices already sent, and its runs' last OpenLineage events."""

    open: dict[str, int] = field(default_factory=dict)
    sent: list[tuple[int, str]] = field(default_factory=list)
    lineage: dict[int, tuple[str, datetime]] = field(default_factory=dict)
    """Per run, the last OpenLineage event sent: its type and time."""

    def was_sent(self, sync_run_id: int, rule: str) -> bool:
        return (sync_run_id, rule) in self.sent

    def mark_sent(self, sync_run_id: int, rule: str) -> None:
        self.sent = [*self.sent, (sync_run_id, rule)][-KEPT:]

    def mark_lineage(self, sync_run_id: int, event_type: str, at: datetime) -> None:
        """Remember the run's last OpenLineage event (the oldest run's is forgotten past KEPT)."""
        self.lineage.pop(sync_run_id, None)
        self.lineage[sync_run_id] = (event_type, at)
        while len(self.lineage) > KEPT:
            del self.lineage[next(iter(self.lineage))]


class NoticeState:
    """The `SyncNotices` of every sync, one small JSON file each under `<storage>/notices`."""

    def __init__(self, storage: Location) -> None:
        self.location = storage.child("notices")

    def load(self, sync_id: int) -> SyncNotices:
        fs = self.location.filesystem()
        try:
            with fs.open_input_stream(self.location.path(f"{sync_id}.json")) as stream:
                data = json.loads(stream.read().decode())
        except FileNotFoundError:
            return SyncNotices()
        return SyncNotices(
            {str(k): int(v) for k, v in data.get("open", {}).items()},
            [(int(run), str(rule)) for run, rule in data.get("sent", [])],
            {
                int(run): (str(kind), datetime.fromisoformat(at))
                for run, (kind, at) in data.get("lineage", {}).items()
            },
        )

    def save(self, sync_id: int, notices: SyncNotices) -> None:
        fs = self.location.filesystem()
        lineage = {str(run): [kind, at.isoformat()] for run, (kind, at) in notices.lineage.items()}
        data = json.dumps({"open": notices.open, "sent": notices.sent, "lineage": lineage}).encode()
        publish(fs, self.location.path(f"{sync_id}.json"), lambda stream: stream.write(data))

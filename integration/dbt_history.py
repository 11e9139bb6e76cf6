"""The history the dbt package's tests write: every case the marts' definitions name, written
through synclog and given to the reference model alike (docs/analysts/dbt.md).

Two syncs share run numbers (1, 2, 3) and record identifiers. Sync A (`SYNC_A`, upsert / delete)
has five runs, the first two past retention; its run 3 failed part-way with records accepted
(partial), retried a rejected record in a later batch (both rows flagged DUPLICATE), sent a
record without an identifier and planned a record twice that it never sent; it is written batch
by batch, so its flags come from `finish`. Its later runs send records twice in one batch (some
rejected both times, one with two different payloads, one accepted with a field changed since
its last run) and bring a record back after a delete.
Sync B (`SYNC_B`, a whole-model sync) has three runs, the first past retention: a row whose
`added` row retention removed changes, a row leaves the model unsent, and its flagged records
sit in the run numbers sync A uses too. Then `cleanup` runs at `now` on both sides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from synclog.model import Behaviour, Connection, DestinationObject, Run, RunStatus, SourceObject
from synclog.writer import SyncLog
from synclog_testing.reference import Layouts, Record, ReferenceLog

SYNC_A = 1234
SYNC_B = 4567
RETENTION_DAYS = 7
LAYOUTS = ("census", "hightouch")


def _run(sync_id: int, number: int, started_at: datetime, *, full_model: bool) -> Run:
    base = sync_id * 10
    return Run(
        org_id=1,
        workspace_id=11,
        sync_id=sync_id,
        sync_run_id=number,
        primary_key="email",
        behaviour=Behaviour.MIRROR if full_model else Behaviour.UPSERT,
        source=Connection(base + 1, "Snowflake::Connection", "warehouse"),
        source_object=SourceObject(base + 2, "DataWarehouse::Query", f"model {sync_id}", model_id=7),
        destination=Connection(base + 3, "Braze::Connection", "Braze"),
        destination_object=DestinationObject(base + 4, "Braze::ObjectTypes::User", "User"),
        started_at=started_at,
        finished_at=started_at + timedelta(minutes=20),
        model_id=7,
        model_name=f"model {sync_id}",
        full_model=full_model,
    )


def _payload(user: str, plan: str, **more: Any) -> str:
    return json.dumps({"email": f"{user}@example.com", "plan": plan, **more})


@dataclass
class _Batches:
    """A run's records, batch by batch: batch k starts k minutes into the run."""

    run: Run
    records: list[Record] = field(default_factory=list)

    def add(
        self,
        batch: int,
        user: str | None,
        status: str = "succeeded",
        *,
        operation: str = "upsert",
        message: str | None = None,
        payload: str | None = None,
        error_code: str | None = None,
    ) -> _Batches:
        started = self.run.started_at + timedelta(minutes=batch)
        self.records.append(
            Record(
                record_identifier=None if user is None else f"{user}@example.com",
                operation=operation,
                status=status,
                status_message=message,
                record_payload=payload or _payload(user or "nobody", "free"),
                batch_number=batch,
                batch_started_at=started,
                batch_completed_at=started + timedelta(seconds=30),
                error_code=error_code,
            )
        )
        return self

    def batch(self, number: int) -> list[Record]:
        return [r for r in self.records if r.batch_number == number]


BAD_EMAIL = "INVALID_EMAIL: bad address"
RETRY = "RESOURCE_EXHAUSTED: retry later"
RATE_LIMITED = "rate limited"
"""A message without a code: the package reads the code from it."""


@dataclass(frozen=True)
class Step:
    """`write` (batches of a run), `finish`, or `write_run`."""

    kind: str
    run: Run
    records: tuple[Record, ...] = ()


def history(now: datetime) -> list[Step]:
    """The steps, oldest run first (each sync's runs in the order they started)."""

    def ago(days: float) -> datetime:
        return (now - timedelta(days=days)).replace(microsecond=0)

    steps: list[Step] = []

    def whole(b: _Batches) -> None:
        steps.append(Step("write_run", b.run, tuple(b.records)))

    # sync A, run 1 (past retention): three members enter, one is rejected
    a1 = _Batches(_run(SYNC_A, 1, ago(12), full_model=False))
    a1.add(0, "u1", payload=_payload("u1", "free", tags=["x", "y"], lifetime_value=1000.0))
    a1.add(0, "u2").add(0, "u3").add(0, "u4", "rejected", message=BAD_EMAIL)
    # sync B, run 1 (past retention): the whole model
    b1 = _Batches(_run(SYNC_B, 1, ago(11), full_model=True))
    b1.add(0, "u1").add(0, "u2").add(0, "u3")
    # sync A, run 2 (past retention): u1 changes, u5 enters
    a2 = _Batches(_run(SYNC_A, 2, ago(10), full_model=False))
    a2.add(0, "u1", payload=_payload("u1", "pro", tags=["x", "y"], lifetime_value=1000.0)).add(0, "u5")
    for b in (a1, b1, a2):
        whole(b)

    # sync A, run 3: written batch by batch, failed after some records were accepted (partial)
    a3 = _Batches(replace(_run(SYNC_A, 3, ago(5), full_model=False), status=RunStatus.FAILED, error="quota"))
    a3.add(0, "u1", payload=_payload("u1", "pro", tags=["x", "y"], lifetime_value=1000.0))
    a3.add(0, "u2", operation="delete").add(0, "u6")
    a3.add(0, "u7", "rejected", message=RETRY)  # retried in batch 1
    a3.add(0, None, payload=_payload("nobody", "free"))  # sent without an identifier
    a3.add(1, "u7").add(1, "u8", "rejected", message=RATE_LIMITED)
    a3.add(1, "u12", payload=_payload("u12", "free", lifetime_value=5))
    a3.add(2, "u9", "aborted").add(2, "u10", "aborted").add(2, "u11", "aborted").add(2, "u11", "aborted")
    for number in (0, 1, 2):
        steps.append(Step("write", a3.run, tuple(a3.batch(number))))
    steps.append(Step("finish", a3.run))

    # sync B, run 2: u1 sent as before (no changelog row), u2 changed (its `added` row is past
    # retention), u3 left the model, a record without identifier, u20 twice in one batch, rejected
    b2 = _Batches(_run(SYNC_B, 2, ago(4), full_model=True))
    b2.add(0, "u1").add(0, "u2", payload=_payload("u2", "pro"))
    b2.add(0, None, "rejected", message=BAD_EMAIL, payload=_payload("nobody", "free"))
    b2.add(0, "u20", "rejected", message=BAD_EMAIL).add(0, "u20", "rejected", message=BAD_EMAIL)
    whole(b2)

    # sync A, run 4: u3 twice with one payload (accepted), u12 twice with two payloads, u13 only
    # ever sent flagged, u4 rejected twice, u2 back after its delete; many rejections
    a4 = _Batches(_run(SYNC_A, 4, ago(3), full_model=False))
    u3 = _payload("u3", "enterprise", seats=3)
    a4.add(0, "u3", payload=u3).add(0, "u3", payload=u3)
    a4.add(0, "u12", payload=_payload("u12", "free")).add(0, "u12", payload=_payload("u12", "pro"))
    a4.add(0, "u13").add(0, "u13")
    a4.add(0, "u4", "rejected", message=BAD_EMAIL).add(0, "u4", "rejected", message=BAD_EMAIL)
    a4.add(1, "u2", payload=_payload("u2", "starter"))
    for user in ("u14", "u15", "u16"):
        a4.add(1, user, "rejected", message=RETRY, error_code="E42")
    whole(a4)

    # sync B, run 3: u3 back (added), u1 and u2 changed, one rejection, u21 aborted
    b3 = _Batches(_run(SYNC_B, 3, ago(2), full_model=True))
    b3.add(0, "u1", payload=_payload("u1", "pro")).add(0, "u2", payload=_payload("u2", "starter"))
    b3.add(0, "u3").add(0, "u20", "rejected", message="429 Too Many Requests: rate limit exceeded")
    b3.add(1, "u21", "aborted")
    whole(b3)

    # sync A, run 5: u6 twice in one batch (accepted, so flagged DUPLICATE) with a plan that
    # changed since run 3, u1's fields change (numbers, arrays, a field dropped and one added),
    # u12 changes from its payload of run 3 (run 4's two differ)
    a5 = _Batches(_run(SYNC_A, 5, ago(1), full_model=False))
    u6 = _payload("u6", "pro")
    a5.add(0, "u6", payload=u6).add(0, "u6", payload=u6)
    a5.add(0, "u1", payload=_payload("u1", "enterprise", tags=["x", "z"], seats=12.5))
    a5.add(1, "u12", payload=_payload("u12", "pro", lifetime_value=1e30))
    a5.add(1, "u5", "rejected", message=BAD_EMAIL)
    whole(a5)
    return steps


def write(log: SyncLog, steps: list[Step]) -> None:
    """The steps through synclog."""
    for step in steps:
        records = [r.as_input() for r in step.records]
        if step.kind == "write":
            log.write(step.run, records)
        elif step.kind == "finish":
            log.finish(step.run)
        else:
            log.write_run(step.run, records)


def model(steps: list[Step], layouts: Layouts) -> ReferenceLog:
    """The steps given to the reference model."""
    reference = ReferenceLog(layouts, RETENTION_DAYS)
    for step in steps:
        if step.kind == "write":
            reference.write(step.run, list(step.records))
        elif step.kind == "finish":
            reference.finish(step.run)
        else:
            reference.write_run(step.run, list(step.records))
    return reference


def now() -> datetime:
    """The history's present: this hour."""
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0)

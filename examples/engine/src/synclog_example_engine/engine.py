"""The engine: send the source's changes to the contacts API batch by batch, log each batch's answers.

It uses synclog's public API only: a `Run` built in code (`stable_id` for its string names),
`log.write(run, batch)` with a list of dicts as each batch is answered, `log.finish(run)` at the end.
The log is a `BackgroundLog` (`__main__`): both calls return once their work is durable, so the
engine sends its next batch while the last one is loaded.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from synclog import (
    Behaviour,
    Connection,
    DestinationObject,
    Run,
    RunResult,
    RunStatus,
    SourceObject,
    stable_id,
)
from synclog_example_engine.source import Changes

if TYPE_CHECKING:
    from synclog import BackgroundLog, SyncLog

SYNC_NAME = "users_to_contacts"
TIMEOUT_SECONDS = 10


class DestinationError(Exception):
    """The API did not answer a batch (connection failure, HTTP error): the run stops."""


@dataclass(frozen=True)
class SyncReport:
    """What a run did: the run as finished, each logged batch (as written), and what `finish`
    returned (`RunResult.wait` gives the run's records by status once its loads ended; None
    when the run was not logged)."""

    run: Run
    batches: list[list[dict[str, Any]]]
    logged: RunResult | None


def contacts_run(run_uuid: str | None = None, api_url: str | None = None, sync_name: str = SYNC_NAME) -> Run:
    """A new run of the sync, its engine names mapped to synclog's integer ids and kept in `extra`.

    Given the API's URL, the destination object says which dataset OpenLineage events name as
    the run's output: the API (`http://host:port`) and its contacts (`/contacts`). The source,
    a model this process computes, is no dataset anyone else names: it has none.
    """
    run_uuid = run_uuid or str(uuid.uuid4())
    contacts = DestinationObject(stable_id("contacts-api/contacts"), "Contact", "contacts")
    if api_url is not None:
        api = f"{urlsplit(api_url).scheme}://{urlsplit(api_url).netloc}"
        contacts = replace(contacts, lineage_namespace=api, lineage_name="/contacts")
    return Run(
        org_id=stable_id("example-org"),
        workspace_id=stable_id("example-org/prod"),
        sync_id=stable_id(sync_name),
        sync_run_id=stable_id(run_uuid),
        primary_key="email",
        behaviour=Behaviour.UPSERT,
        source=Connection(stable_id("source"), "Python::Connection", "source"),
        source_object=SourceObject(stable_id("users"), "Model", "users"),
        destination=Connection(stable_id("contacts-api"), "HTTP::Connection", "contacts-api"),
        destination_object=contacts,
        started_at=datetime.now(UTC),
        extra={"sync_name": sync_name, "run_id": run_uuid},
    )


def sync(
    source: Changes, api_url: str, log: BackgroundLog | SyncLog | None, run: Run, batch_size: int = 40
) -> SyncReport:
    """Upsert then delete in batches of `batch_size`; log every batch, then finish the run.

    Records the API refused are `rejected` with its message. When a batch gets no answer, the
    run stops: that batch and every later one are `aborted` (never sent), logged in one write,
    and the run `failed` with the error.
    """
    requests = [("upsert", chunk) for chunk in _chunks(source.upserts, batch_size)]
    requests += [("delete", [{"email": e} for e in chunk]) for chunk in _chunks(source.deletes, batch_size)]
    error: str | None = None
    batches: list[list[dict[str, Any]]] = []
    for number, (operation, records) in enumerate(requests):
        started = datetime.now(UTC)
        try:
            answers = _send(api_url, operation, records)
        except DestinationError as exc:
            error = str(exc)
            break
        batches.append(_logged(number, operation, records, answers, error, started, datetime.now(UTC)))
        if log is not None:
            log.write(run, batches[-1])
    if error is not None:
        stopped = datetime.now(UTC)
        unsent = [
            _logged(number, operation, records, {}, error, stopped, stopped)
            for number, (operation, records) in enumerate(requests)
            if number >= len(batches)
        ]
        if log is not None:
            log.write(run, [record for batch in unsent for record in batch])
        batches += unsent
    status = RunStatus.SUCCEEDED if error is None else RunStatus.FAILED
    finished = replace(run, status=status, finished_at=datetime.now(UTC), error=error)
    return SyncReport(finished, batches, log.finish(finished) if log is not None else None)


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def _send(api_url: str, operation: str, records: list[dict[str, Any]]) -> dict[str, str | None]:
    """POST one batch; the API's answer per email (None when accepted)."""
    body = {"records": records} if operation == "upsert" else {"emails": [r["email"] for r in records]}
    request = urllib.request.Request(
        f"{api_url}/contacts/{operation}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            results = json.load(response)["results"]
    except urllib.error.HTTPError as exc:
        raise DestinationError(f"HTTP {exc.code}: {json.load(exc).get('error', exc.reason)}") from None
    except (urllib.error.URLError, TimeoutError) as exc:
        raise DestinationError(f"{api_url} did not answer: {exc}") from None
    return {result["email"]: result["error"] for result in results}


def _logged(
    number: int,
    operation: str,
    records: list[dict[str, Any]],
    answers: dict[str, str | None],
    error: str | None,
    started: datetime,
    completed: datetime,
) -> list[dict[str, Any]]:
    """One batch as synclog takes it: a dict per record, with the API's answer or why it was not sent."""

    def outcome(email: str) -> tuple[str, str | None]:
        if email not in answers:
            return "aborted", f"Not attempted: {error}"
        message = answers[email]
        return ("succeeded", None) if message is None else ("rejected", message)

    logged = []
    for record in records:
        status, message = outcome(record["email"])
        logged.append(
            {
                "record_identifier": record["email"],
                "operation": operation,
                "status": status,
                "status_message": message,
                "record_payload": json.dumps(record),
                "batch_number": number,
                "batch_started_at": started,
                "batch_completed_at": completed,
            }
        )
    return logged

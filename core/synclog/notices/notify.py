"""What a SyncLog tells the outside about its runs: rule notices and OpenLineage events.

`Notices.started` and `Notices.finished` are called by the writer; `Notices.check` by
`synclog check`. A notice fires once per run and rule, and a "resolved" notice follows when a
later run (or check) finds the rule holding again: which rules are open, and which notices
were sent, lives under `storage` (`synclog.notices.state`), so it survives the process.
Nothing here fails or holds up a sync: an error is one warning line, deliveries run in the
background, and `close` waits for them a bounded time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from synclog.errors import SynclogError, first_line
from synclog.layouts.registry import layout
from synclog.model import Run, as_utc
from synclog.naming import LineageDataset
from synclog.notices import lineage
from synclog.notices.delivery import (
    Courier,
    Endpoint,
    Notice,
    Warn,
    masked,
    post_json,
    slack_body,
    webhook_body,
)
from synclog.notices.rules import RULES, AlertRules, Firing, RunFacts, evaluate, outcome, stale
from synclog.notices.state import NoticeState
from synclog.targets.base import Target
from synclog.tracking import RunQuery, find_runs, find_syncs, held_layouts

if TYPE_CHECKING:
    from synclog.config import Config


class WrittenLog(Protocol):
    """What notices read of the log (`synclog.writer.SyncLog`) that wrote a run."""

    @property
    def config(self) -> Config: ...

    @property
    def target(self) -> Target: ...

    def layouts(self, sync_id: int) -> tuple[str, ...]: ...


RUN_RULES = tuple(rule for rule in RULES if rule != "freshness")
REFUSED = "refused_batch"
"""The notice of a write that a load behind the engine refused (no rule: sent whenever it happens)."""


class Notices:
    """The notices and OpenLineage events of one SyncLog's runs."""

    def __init__(self, config: Config, warn: Warn) -> None:
        self.settings = config.notices
        self.config = config
        self.warn = warn
        self.state = NoticeState(config.storage)
        self._couriers: dict[str, Courier] = {}
        self._lineage_off: str | None = None if self.settings.lineage else "not configured"
        self._client: Any = None

    @property
    def sends(self) -> bool:
        """Whether anything is configured to be sent."""
        return bool(self.settings.endpoints) or self._lineage_off is None

    def started(self, log: WrittenLog, run: Run) -> None:
        """The run's first batch is written: its OpenLineage START event, unless it was sent."""
        self._guarded(run, lambda: self._lineage(log, run, None, {}, 0))

    def finished(self, log: WrittenLog, run: Run, statuses: dict[str, int], accepted: int) -> None:
        """The run has finished with these records by status, `accepted` of them taken by the
        destination: its rules, notices and terminal event."""

        def tell() -> None:
            ended = outcome(run.status, statuses.get("aborted", 0))
            rules = self.config.sync(run.sync_id).alerts
            if self.settings.endpoints:
                earlier = self._earlier(log, run, rules)
                facts = RunFacts(run.sync_id, run.sync_run_id, ended, statuses)
                self.announce(run.sync_id, run.sync_run_id, evaluate(rules, facts, earlier), RUN_RULES)
            self._lineage(log, run, ended, statuses, accepted)

        self._guarded(run, tell)

    def refused(self, run: Run, summary: str, records: int) -> None:
        """A load behind the engine refused a write of `run` (`summary` says which batches, why and
        where its `records` are kept): a `refused_batch` notice to every endpoint."""

        def tell() -> None:
            notice = Notice(
                "firing", run.sync_id, run.sync_run_id, REFUSED, records, 0, summary, datetime.now(UTC)
            )
            for endpoint in self.settings.endpoints:
                self._post(endpoint, notice)

        self._guarded(run, tell)

    def check(self, target: Target, now: datetime, sync_ids: Sequence[int] = ()) -> list[Firing]:
        """Every rule that fires now: freshness, and the run rules on each sync's last finished run.

        Looks at `sync_ids`, else every sync the target holds runs of and every configured one;
        freshness notices are sent (run notices were sent when the runs finished).
        """
        logged = held_layouts(target)
        syncs = list(sync_ids) or sorted(
            {*self.config.syncs, *(find_syncs(target).column("sync_id").to_pylist() if logged else ())}
        )
        fired: list[Firing] = []
        for sync_id in syncs:
            rules = self.config.sync(sync_id).alerts
            if rules == AlertRules():
                continue
            runs = self._finished_runs(target, sync_id, rules) if logged else []
            last = runs[0] if runs else None
            if last is not None:
                facts = RunFacts(
                    sync_id,
                    last["sync_run_id"],
                    outcome(last["status"], last["aborted"]),
                    {k: last[k] for k in ("succeeded", "rejected", "invalid", "aborted")},
                )
                fired += evaluate(rules, facts, [r["records"] for r in runs[1:]])
            late = stale(rules, sync_id, last["finished_at"] if last else None, now)
            fired += [late] if late else []
            if self.settings.endpoints:
                self.announce(
                    sync_id, last["sync_run_id"] if last else None, [late] if late else [], ["freshness"]
                )
        return fired

    def announce(
        self, sync_id: int, sync_run_id: int | None, firings: Sequence[Firing], rules: Iterable[str]
    ) -> list[Notice]:
        """Send what `firings` change for `sync_id`: each new firing, and a resolved notice for
        each of `rules` that was open and no longer fires. Returns the notices sent."""
        state = self.state.load(sync_id)
        run_key = sync_run_id or 0
        now = datetime.now(UTC)
        sent: list[Notice] = []
        for firing in firings:
            if not state.was_sent(run_key, firing.rule):
                sent.append(
                    Notice(
                        "firing",
                        sync_id,
                        sync_run_id,
                        firing.rule,
                        firing.measured,
                        firing.threshold,
                        firing.summary,
                        now,
                    )
                )
                state.mark_sent(run_key, firing.rule)
                state.open[firing.rule] = run_key
        firing_now = {f.rule for f in firings}
        for rule in [r for r in rules if r in state.open and r not in firing_now]:
            fired_in = state.open.pop(rule)
            summary = f"sync {sync_id}: {rule} holds again (it fired for run {fired_in})"
            sent.append(Notice("resolved", sync_id, sync_run_id, rule, None, 0, summary, now))
        if sent:
            self.state.save(sync_id, state)
        for notice in sent:
            for endpoint in self.settings.endpoints:
                self._post(endpoint, notice)
        return sent

    def close(self) -> None:
        """Wait, a bounded time, for what is still being delivered."""
        deadline = time.monotonic() + self.settings.patience
        for courier in self._couriers.values():
            courier.wait(deadline)

    def _post(self, endpoint: Endpoint, notice: Notice) -> None:
        url = endpoint.resolved_url()
        if not url:
            self.warn(f"warning: {endpoint.kind} notice not sent: ${endpoint.url_env} is not set")
            return
        secret = os.environ.get(endpoint.secret_env) if endpoint.secret_env else None
        if endpoint.secret_env and not secret:
            self.warn(
                f"warning: webhook notice not sent: ${endpoint.secret_env} (its signing key) is not set"
            )
            return
        body = slack_body(notice) if endpoint.kind == "slack" else webhook_body(notice)
        what = f"{notice.state} notice {notice.rule} of sync {notice.sync_id}"
        self._courier(f"{endpoint.kind} {masked(url)}").send(
            what, lambda timeout: post_json(url, body, timeout, secret)
        )

    def _courier(self, where: str) -> Courier:
        if where not in self._couriers:
            self._couriers[where] = Courier(
                where, self.warn, self.settings.timeout_seconds, self.settings.retries
            )
        return self._couriers[where]

    def _lineage(
        self, log: WrittenLog, run: Run, ended: str | None, statuses: dict[str, int], accepted: int
    ) -> None:
        """Send what is left of the run's OpenLineage run cycle: START unless it was sent, then
        the terminal event of `ended` (an outcome; None: the run goes on). Once the terminal
        event is sent, nothing more; no event is timed before one sent earlier."""
        settings = self.settings.lineage
        if settings is None or self._lineage_off:
            return
        self._lineage_off = lineage.available()
        if self._lineage_off:
            self.warn(f"warning: {self._lineage_off}")
            return
        state = self.state.load(run.sync_id)
        last = state.lineage.get(run.sync_run_id)
        if last is not None and last[0] != "START":
            return  # the run's cycle is over
        begun = as_utc(run.started_at) if last is None else last[1]
        due = [("running", begun)] if last is None else []
        if ended is not None:
            due.append((ended, max(as_utc(run.finished_at or datetime.now(UTC)), begun)))
        if not due:
            return
        tables = _tables(log, run.sync_id)
        sent = []
        for ending, at in due:
            kind = lineage.event_type(ending)
            sent.append((kind, lineage.run_event(run, settings, ending, at, statuses, accepted, tables)))
            state.mark_lineage(run.sync_run_id, kind, at)
        self.state.save(run.sync_id, state)
        for kind, event in sent:
            self._emit(f"OpenLineage {kind} event of sync {run.sync_id} run {run.sync_run_id}", event)

    def _emit(self, what: str, event: Any) -> None:
        self._courier("OpenLineage").send(what, lambda _timeout: self._emitter().emit(event))

    def _emitter(self) -> Any:
        if self._client is None:
            self._client = lineage.client()
        return self._client

    def _earlier(self, log: WrittenLog, run: Run, rules: AlertRules) -> list[int]:
        """Record counts of the sync's runs before `run`, newest first (none if the target is down)."""
        if rules.volume_change is None:
            return []
        try:
            rows = self._finished_runs(log.target, run.sync_id, rules)
        except SynclogError as exc:  # the target is down (or refuses): the rule waits for the next run
            self.warn(f"warning: volume rule of sync {run.sync_id} skipped: {first_line(exc)}")
            return []
        return [r["records"] for r in rows if r["sync_run_id"] != run.sync_run_id]

    def _finished_runs(self, target: Target, sync_id: int, rules: AlertRules) -> list[dict[str, Any]]:
        """The sync's finished runs as Sync Tracking lists them, newest first."""
        if not held_layouts(target):
            return []
        table = find_runs(target, RunQuery(sync_id, limit=rules.volume_runs + 2))
        return [row for row in table.to_pylist() if row["finished_at"] is not None]

    def _guarded(self, run: Run, action: Callable[[], None]) -> None:
        """Run `action`; a failing target or storage is a warning (a notice never fails the
        sync), a bug in synclog raises."""
        if not self.sends:
            return
        try:
            action()
        except (SynclogError, OSError) as exc:  # the target or storage failing: never the sync
            self.warn(f"warning: notices of sync {run.sync_id} run {run.sync_run_id}: {first_line(exc)}")


def _tables(log: WrittenLog, sync_id: int) -> list[LineageDataset]:
    """synclog's tables written for `sync_id`, as OpenLineage names them (the target's
    `lineage_dataset`), each once; none while the target does not answer."""
    settings = log.config.sync(sync_id)
    try:
        named = [
            log.target.lineage_dataset(log.target.relation(table, table.view))
            for name in log.layouts(sync_id)
            for table in layout(name).tables
            if settings.table(table.view or table.name).enabled
        ]
    except SynclogError:
        return []
    return list(dict.fromkeys(named))  # the lake keeps two tables in one folder

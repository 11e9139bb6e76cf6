"""One client connection of the Redshift stand-in proxy: redshift_connector <-> the proxy <-> Postgres.

Two threads per connection. The *client pump* reads the driver's messages, rewrites them (startup
parameters, Redshift SQL, COPY/UNLOAD) and forwards them; for every message it forwards it first
queues an *expectation*: what Postgres will answer and how to pass that on. The *backend pump* reads
Postgres's answers in order and lets the expectation at the head of the queue relay, rewrite or
swallow them. After an error Postgres skips everything up to the next Sync; the queue does the same.

S3 commands never reach Postgres as such:

- ``COPY … FROM 's3://…'`` is parsed into a placeholder (an empty statement); at Bind time the proxy
  asks Postgres, on this same connection, for the target table's columns, reads the Parquet or JSON
  files and binds one ``INSERT … SELECT`` with all rows as the json parameter $1 — one statement,
  inside the client's transaction; its ``INSERT 0 n`` goes back as ``COPY n``. The proxy logs each
  COPY and UNLOAD it completes (``COPY <table> <n> rows from <k> files``, ``UNLOAD <n> rows``).
- ``UNLOAD ('q') TO 's3://…'`` is prepared as ``q`` (translated); its rows are swallowed, written as
  Parquet to S3, and the client gets ``UNLOAD`` (Describe answers NoData, as Redshift does).
- A failure is reported as an ErrorResponse in the place of the failing message: the proxy binds a
  statement that does not exist, so Postgres itself enters its error state, and swaps the error text.
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq

from . import pg_wire as wire
from .pg_wire import Bind, Field, Message, Parse
from .redshift_commands import CommandError, CopyCommand, UnloadCommand, parse_s3_command
from .redshift_copy import COLUMNS_SQL, plan_load, target_columns
from .redshift_copy_json import plan_json_load
from .redshift_s3 import S3CommandError, S3Settings, copy_sources, get_object, s3_client
from .redshift_sql import split_statements, translate
from .redshift_unload import UnloadWriter, check_destination
from .result_rows import compact_row, json_columns, super_row_description

__all__ = ["DROPPED_STARTUP_PARAMETERS", "REDSHIFT_SERVER_VERSION", "Session"]

log = logging.getLogger(__name__)

#: What Redshift reports; redshift_connector parses it with packaging.version (Postgres's "15.4 (Debian…)"
#: fails) and, below 8.2, counts rows only for INSERT/DELETE/UPDATE/MOVE — as on a real cluster.
REDSHIFT_SERVER_VERSION = "8.0.2"

#: Startup parameters redshift_connector sends (core.py, Connection.__init__ / set_idc_plugins_params)
#: that Postgres rejects as unknown configuration parameters.
DROPPED_STARTUP_PARAMETERS = frozenset(
    {
        "client_protocol_version",
        "driver_version",
        "os_version",
        "driver_discovery_version",
        "plugin_name",
        "idp_type",
        "provider_name",
        "identity_namespace",
        "token_type",
        "idc_client_display_name",
    }
)

_META = "_synclog_stand_in_meta"
_LOAD = "_synclog_stand_in_load"
_MISSING = "_synclog_stand_in_no_such_statement"
_PARSE_FAILS = "SYNCLOG STAND-IN ERROR"
_META_TIMEOUT_S = 600.0


@dataclass
class _Portal:
    kind: str = "rows"  # rows | copy | unload
    fields: list[Field] | None = None
    command: CopyCommand | UnloadCommand | None = None
    client: Any = None
    files: int = 0


class _Future:
    """Rows of a query the proxy runs on the client's connection, or None if it failed or was skipped."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.rows: list[list[str | None]] | None = None

    def resolve(self, rows: list[list[str | None]] | None) -> None:
        if not self.event.is_set():
            self.rows = rows
            self.event.set()


# --------------------------------------------------------------------------- expectations


class _Expect:
    """What Postgres answers to one forwarded message, and what the client should see of it."""

    ends_at_ready = False  # Sync / Query / startup: finished by ReadyForQuery

    def __init__(self, visible: bool = True, future: _Future | None = None, error: str | None = None) -> None:
        self.visible = visible
        self.future = future
        self.error = error

    def on(self, message: Message) -> tuple[list[Message], bool]:
        if message.type == b"E":
            return [self._error(message)], True
        return ([message] if self.visible else []), True

    def _error(self, message: Message) -> Message:
        if self.future is not None:
            self.future.resolve(None)
        return wire.error_response(self.error) if self.error is not None else message

    def skipped(self) -> None:
        if self.future is not None:
            self.future.resolve(None)


class _UntilReady(_Expect):
    """Sync, a simple Query, a FunctionCall, the startup: relay everything up to ReadyForQuery."""

    ends_at_ready = True

    def __init__(self) -> None:
        super().__init__()
        self.json_columns: list[int] = []

    def on(self, message: Message) -> tuple[list[Message], bool]:
        if message.type == b"T":
            relabelled, fields = super_row_description(message.body)
            self.json_columns = json_columns(fields)
            return [relabelled], False
        if message.type == b"D":
            return [compact_row(message, self.json_columns)], False
        return [message], message.type == b"Z"


class _DescribeStatement(_Expect):
    def __init__(self, visible: bool, unload: bool) -> None:
        super().__init__(visible)
        self.unload = unload

    def on(self, message: Message) -> tuple[list[Message], bool]:
        if message.type == b"t":
            return ([message] if self.visible else []), False
        if message.type == b"T":
            message = wire.NO_DATA if self.unload else super_row_description(message.body)[0]
        return super().on(message)


class _DescribePortal(_Expect):
    """Records the portal's columns; relays them in ``visible`` or ``simple`` mode (simple hides NoData)."""

    def __init__(self, portal: _Portal, mode: str) -> None:
        super().__init__(mode != "hidden")
        self.portal = portal
        self.mode = mode

    def on(self, message: Message) -> tuple[list[Message], bool]:
        if message.type == b"E":
            return super().on(message)
        relay = self.visible and self.portal.kind != "unload"
        if message.type == b"T":
            relabelled, self.portal.fields = super_row_description(message.body)
            return ([relabelled] if relay else []), True
        self.portal.fields = []
        return ([message] if relay and self.mode != "simple" else []), True


class _MetaRows(_Expect):
    def __init__(self, future: _Future) -> None:
        super().__init__(visible=False, future=future)
        self.rows: list[list[str | None]] = []

    def on(self, message: Message) -> tuple[list[Message], bool]:
        if message.type == b"D":
            self.rows.append([None if v is None else v.decode() for v in wire.decode_data_row(message.body)])
            return [], False
        if message.type == b"C":
            assert self.future is not None
            self.future.resolve(self.rows)
            return [], True
        return super().on(message)


class _Execute(_Expect):
    def __init__(self, portal: _Portal) -> None:
        super().__init__()
        self.portal = portal
        self.writer: UnloadWriter | None = None

    def on(self, message: Message) -> tuple[list[Message], bool]:
        kind = self.portal.kind
        if message.type == b"D":
            if kind == "unload":
                self._writer().add(wire.decode_data_row(message.body))
                return [], False
            return [compact_row(message, json_columns(self.portal.fields))], False
        if message.type == b"C" and kind == "copy":
            return self._copied(message), True
        if message.type == b"C" and kind == "unload":
            return self._unloaded(), True
        return super().on(message)

    def _writer(self) -> UnloadWriter:
        if self.writer is None:
            assert isinstance(self.portal.command, UnloadCommand)
            self.writer = UnloadWriter(self.portal.client, self.portal.command, self.portal.fields or [])
        return self.writer

    def _copied(self, message: Message) -> list[Message]:
        rows = int(wire.command_tag(message.body).split()[-1])
        assert isinstance(self.portal.command, CopyCommand)
        table = self.portal.command.table
        log.info("COPY %s %d rows from %d files", table, rows, self.portal.files)
        note = f"Load into table '{table}' completed, {rows} record(s) loaded successfully."
        return [wire.notice_response(note), wire.command_complete(f"COPY {rows}")]

    def _unloaded(self) -> list[Message]:
        try:
            rows = self._writer().finish()
        except (S3CommandError, OSError, ValueError) as exc:
            return [wire.error_response(str(exc))]
        log.info("UNLOAD %d rows", rows)
        note = f"UNLOAD completed, {rows} record(s) unloaded successfully."
        return [wire.notice_response(note), wire.command_complete("UNLOAD")]


# --------------------------------------------------------------------------- the session


@dataclass
class Session:
    """Serves one client socket against one fresh connection to Postgres at `upstream`."""

    client: socket.socket
    upstream: tuple[str, int]
    s3: S3Settings
    backend: socket.socket | None = None
    queue: deque[_Expect] = field(default_factory=deque)
    lock: threading.Lock = field(default_factory=threading.Lock)
    skipping: bool = False
    statements: dict[str, CopyCommand | UnloadCommand] = field(default_factory=dict)
    portals: dict[str, _Portal] = field(default_factory=dict)
    client_out: wire.Outbox = field(init=False)
    backend_out: wire.Outbox = field(init=False)

    def run(self) -> None:
        try:
            self._serve()
        except (wire.ConnectionClosed, OSError, ValueError) as exc:
            log.debug("session ended: %s", exc)
        finally:
            self._close()

    def _serve(self) -> None:
        self.client_out = wire.Outbox(self.client)
        client_in = wire.Inbox(self.client)
        params = self._startup(client_in)
        if params is None:
            return
        self.backend = socket.create_connection(self.upstream)
        self.backend_out = wire.Outbox(self.backend)
        client_in.before_block = self.backend_out.flush
        self._push(_UntilReady())
        self.backend_out.send_raw(wire.build_startup(params))
        threading.Thread(target=self._backend_pump, name="redshift-proxy-backend", daemon=True).start()
        self._client_pump(client_in)

    def _startup(self, client_in: wire.Inbox) -> dict[str, str] | None:
        while True:
            body = client_in.startup_packet()
            code = wire.startup_code(body)
            if code in (wire.SSL_REQUEST, wire.GSSENC_REQUEST):
                self.client.sendall(b"N")  # plain TCP on loopback: connect with ssl=False
                continue
            if code == wire.CANCEL_REQUEST:
                with socket.create_connection(self.upstream) as cancel:
                    cancel.sendall((len(body) + 4).to_bytes(4, "big") + body)
                return None
            if code != wire.PROTOCOL_V3:
                raise ValueError(f"unsupported protocol {code}")
            params = wire.parse_startup_params(body)
            return {k: v for k, v in params.items() if k not in DROPPED_STARTUP_PARAMETERS}

    def _close(self) -> None:
        for sock in (self.client, self.backend):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        with self.lock:
            for expectation in self.queue:
                expectation.skipped()

    # ----------------------------------------------------------------------- client -> backend

    def _push(self, *expectations: _Expect) -> None:
        with self.lock:
            self.queue.extend(expectations)

    def _forward(self, message: Message, *expectations: _Expect) -> None:
        self._push(*expectations)
        self.backend_out.send(message)

    def _client_pump(self, client_in: wire.Inbox) -> None:
        handlers: dict[bytes, Callable[[bytes], None]] = {
            b"P": lambda body: self._parse(Parse.decode(body)),
            b"B": lambda body: self._bind(Bind.decode(body)),
            b"D": lambda body: self._describe(*wire.target(body)),
            b"E": lambda body: self._execute(wire.execute_portal(body)),
            b"C": lambda body: self._close_target(*wire.target(body)),
            b"S": lambda body: self._forward(wire.SYNC, _UntilReady()),
            b"Q": lambda body: self._query(wire.query_text(body)),
            b"F": lambda body: self._forward(Message(b"F", body), _UntilReady()),
        }
        while True:
            message = client_in.message()
            if message.type == b"X":
                self.backend_out.send(message)
                self.backend_out.flush()
                return
            handler = handlers.get(message.type)
            if handler is None:
                self.backend_out.send(message)  # Flush, CopyData/Done/Fail, password messages
            else:
                handler(message.body)

    def _parse(self, parse: Parse, visible: bool = True) -> None:
        try:
            command = parse_s3_command(parse.query)
        except CommandError as exc:
            self.statements.pop(parse.statement, None)
            self._forward(Parse(parse.statement, _PARSE_FAILS).message(), _Expect(visible, error=str(exc)))
            return
        if command is None:
            self.statements.pop(parse.statement, None)
            query = translate(parse.query)
            self._forward(Parse(parse.statement, query, parse.param_oids).message(), _Expect(visible))
            return
        self.statements[parse.statement] = command
        query = "" if isinstance(command, CopyCommand) else translate(command.query)
        self._forward(Parse(parse.statement, query).message(), _Expect(visible))

    def _describe(self, kind: str, name: str, mode: str = "visible") -> None:
        if kind == "S":
            unload = isinstance(self.statements.get(name), UnloadCommand)
            self._forward(wire.describe(kind, name), _DescribeStatement(mode != "hidden", unload))
        else:
            portal = self.portals.setdefault(name, _Portal())
            self._forward(wire.describe(kind, name), _DescribePortal(portal, mode))

    def _bind(self, bind: Bind, visible: bool = True, describe: str = "hidden") -> None:
        command = self.statements.get(bind.statement)
        portal = self.portals[bind.portal] = _Portal()
        if isinstance(command, CopyCommand):
            self._bind_copy(bind, command, portal, visible)
            return
        if isinstance(command, UnloadCommand):
            try:
                portal.client = s3_client(self.s3, command.credentials)
                check_destination(portal.client, command)
            except (S3CommandError, CommandError) as exc:
                self._fail_bind(bind, str(exc), visible)
                return
            portal.kind, portal.command = "unload", command
            bind = bind.with_text_results()
        self._forward(bind.message(), _Expect(visible))
        self._describe("P", bind.portal, describe)

    def _bind_copy(self, bind: Bind, command: CopyCommand, portal: _Portal, visible: bool) -> None:
        rows = self._ask(COLUMNS_SQL, command.table)
        if rows is None:  # the lookup failed (its error went to the client) or Postgres is skipping
            self._forward(bind.message(), _Expect(visible))
            return
        try:
            table, columns = target_columns(rows)
            client = s3_client(self.s3, command.credentials)
            sources = copy_sources(
                client, command.source, manifest=command.manifest, columnar=command.columnar
            )
            raw = [(source.url, get_object(client, source.bucket, source.key)) for source in sources]
            if command.columnar:
                parquet = [(url, pq.read_table(io.BytesIO(data))) for url, data in raw]
                plan = plan_load(command, table, columns, parquet)
            else:
                plan = plan_json_load(command, table, columns, raw)
        except (S3CommandError, CommandError) as exc:
            self._fail_bind(bind, str(exc), visible)
            return
        except Exception as exc:  # pyarrow: not a Parquet file, a corrupt one, …
            self._fail_bind(bind, f"Spectrum Scan Error: {type(exc).__name__}: {exc}", visible)
            return
        portal.kind, portal.command, portal.files = "copy", command, len(raw)
        self._forward(wire.close("S", _LOAD), _Expect(visible=False))
        self._forward(Parse(_LOAD, plan.sql).message(), _Expect(visible=False))
        self._forward(Bind(bind.portal, _LOAD, (0,), (plan.payload,)).message(), _Expect(visible))

    def _fail_bind(self, bind: Bind, error: str, visible: bool) -> None:
        self._forward(Bind(bind.portal, _MISSING).message(), _Expect(visible, error=error))

    def _ask(self, sql: str, *params: str) -> list[list[str | None]] | None:
        """Run `sql` on the client's own connection, mid-batch; None if it failed or was skipped."""
        future = _Future()
        with self.lock:  # after an error Postgres would skip the lookup and never answer it
            if self.skipping:
                return None
            self.queue.extend(
                [_Expect(False, future), _Expect(False, future), _Expect(False, future), _MetaRows(future)]
            )
        self.backend_out.send(
            wire.close("S", _META),
            Parse(_META, sql).message(),
            Bind("", _META, (0,) * len(params), tuple(p.encode() for p in params)).message(),
            wire.execute(""),
            wire.FLUSH,
        )
        self.backend_out.flush()
        if not future.event.wait(_META_TIMEOUT_S):
            raise TimeoutError("Postgres did not answer the stand-in's catalog query")
        return future.rows

    def _execute(self, portal_name: str) -> None:
        portal = self.portals.setdefault(portal_name, _Portal())
        self._forward(wire.execute(portal_name), _Execute(portal))

    def _close_target(self, kind: str, name: str) -> None:
        (self.statements if kind == "S" else self.portals).pop(name, None)
        self._forward(wire.close(kind, name), _Expect())

    def _query(self, text: str) -> None:
        statements = split_statements(text)
        if not any(_is_s3_command(s) for s in statements):
            self._forward(wire.query(translate(text)), _UntilReady())
            return
        # A simple query with COPY/UNLOAD in it runs as the equivalent extended-protocol sequence.
        for statement in statements:
            self._parse(Parse("", statement), visible=False)
            self._bind(Bind("", ""), visible=False, describe="simple")
            self._execute("")
        self._forward(wire.SYNC, _UntilReady())

    # ----------------------------------------------------------------------- backend -> client

    def _backend_pump(self) -> None:
        assert self.backend is not None
        backend_in = wire.Inbox(self.backend, before_block=self.client_out.flush)
        try:
            while True:
                self._relay(backend_in.message())
        except (wire.ConnectionClosed, OSError) as exc:
            log.debug("backend pump ended: %s", exc)
        finally:
            with contextlib.suppress(OSError):
                self.client_out.flush()
            self._close()

    def _relay(self, message: Message) -> None:
        kind = message.type
        if kind == b"S":
            name, _ = wire.parameter_status(message.body)
            if name == "server_version":
                message = wire.build_parameter_status(name, REDSHIFT_SERVER_VERSION)
            self.client_out.send(message)
            return
        if kind in (b"N", b"A"):
            self.client_out.send(message)
            return
        with self.lock:
            if kind == b"Z":
                while self.queue and not self.queue[0].ends_at_ready:
                    self.queue.popleft().skipped()
                self.skipping = False
            head = self.queue[0] if self.queue else None
        if head is None:
            self.client_out.send(message)
            return
        out, done = head.on(message)
        self.client_out.send(*out)
        if kind == b"E" and not head.ends_at_ready:
            with self.lock:
                self.queue.popleft()
                self.skipping = True
                for waiting in self.queue:
                    if waiting.ends_at_ready:
                        break
                    waiting.skipped()
        elif done:
            with self.lock:
                self.queue.popleft()


def _is_s3_command(statement: str) -> bool:
    try:
        return parse_s3_command(statement) is not None
    except CommandError:
        return True

"""PostgreSQL wire protocol v3: framing and the few messages the Redshift stand-in proxy reads or writes.

Only what the proxy needs: the startup packet, typed messages (one type byte, a 4-byte length that
counts itself, a body), and encoders/decoders for Parse, Bind, Describe, Execute, Close,
RowDescription, DataRow, CommandComplete, ErrorResponse/NoticeResponse and ParameterStatus.
Text is UTF-8 (the test clusters are created with ``--encoding UTF8``).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

PROTOCOL_V3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

_MAX_STARTUP = 10_000
_RECV_SIZE = 1 << 16
_FLUSH_AT = 1 << 16
_INT32 = struct.Struct("!i")
_INT16 = struct.Struct("!h")
_FIELD_TAIL = struct.Struct("!ihihih")  # table oid, column no, type oid, size, typmod, format


class ConnectionClosed(EOFError):
    """The peer closed the socket."""


@dataclass(frozen=True)
class Message:
    """One typed protocol message."""

    type: bytes
    body: bytes = b""

    def encode(self) -> bytes:
        return self.type + _INT32.pack(len(self.body) + 4) + self.body


class Outbox:
    """Buffered writes to one socket; :meth:`flush` sends what is pending."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = bytearray()

    def send(self, *messages: Message) -> None:
        for message in messages:
            self.pending += message.encode()
        if len(self.pending) >= _FLUSH_AT:
            self.flush()

    def send_raw(self, data: bytes) -> None:
        self.pending += data
        self.flush()

    def flush(self) -> None:
        if self.pending:
            self.sock.sendall(self.pending)
            self.pending.clear()


class Inbox:
    """Buffered message reads from one socket; `before_block` runs before every blocking read."""

    def __init__(self, sock: socket.socket, before_block: Callable[[], None] = lambda: None) -> None:
        self.sock = sock
        self.before_block = before_block
        self.buffer = bytearray()

    def _take(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self.before_block()
            chunk = self.sock.recv(_RECV_SIZE)
            if not chunk:
                raise ConnectionClosed
            self.buffer += chunk
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def message(self) -> Message:
        head = self._take(5)
        (length,) = _INT32.unpack_from(head, 1)
        return Message(head[:1], self._take(length - 4) if length > 4 else b"")

    def startup_packet(self) -> bytes:
        """The body of an untyped startup-phase packet (after its length)."""
        (length,) = _INT32.unpack(self._take(4))
        if not 8 <= length <= _MAX_STARTUP:
            raise ValueError(f"bad startup packet length {length}")
        return self._take(length - 4)


def startup_code(body: bytes) -> int:
    return _INT32.unpack_from(body)[0]


def parse_startup_params(body: bytes) -> dict[str, str]:
    parts = body[4:].split(b"\0")
    keys, values = parts[0:-2:2], parts[1:-2:2]
    return {k.decode(): v.decode() for k, v in zip(keys, values, strict=True)}


def build_startup(params: Mapping[str, str]) -> bytes:
    body = _INT32.pack(PROTOCOL_V3) + b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
    return _INT32.pack(len(body) + 4) + body


# --------------------------------------------------------------------------- primitives


def cstr(text: str | bytes) -> bytes:
    return (text.encode() if isinstance(text, str) else text) + b"\0"


class _Reader:
    def __init__(self, body: bytes) -> None:
        self.body = body
        self.pos = 0

    def cstr(self) -> str:
        end = self.body.index(b"\0", self.pos)
        text = self.body[self.pos : end].decode()
        self.pos = end + 1
        return text

    def int16(self) -> int:
        (value,) = _INT16.unpack_from(self.body, self.pos)
        self.pos += 2
        return int(value)

    def int32(self) -> int:
        (value,) = _INT32.unpack_from(self.body, self.pos)
        self.pos += 4
        return int(value)

    def take(self, size: int) -> bytes:
        data = self.body[self.pos : self.pos + size]
        self.pos += size
        return data


def _int16s(values: Sequence[int]) -> bytes:
    return _INT16.pack(len(values)) + b"".join(_INT16.pack(v) for v in values)


def _values(values: Sequence[bytes | None]) -> bytes:
    out = [_INT16.pack(len(values))]
    for value in values:
        out.append(_INT32.pack(-1) if value is None else _INT32.pack(len(value)) + value)
    return b"".join(out)


def _read_values(reader: _Reader) -> list[bytes | None]:
    values: list[bytes | None] = []
    for _ in range(reader.int16()):
        size = reader.int32()
        values.append(None if size < 0 else reader.take(size))
    return values


# --------------------------------------------------------------------------- frontend messages


@dataclass(frozen=True)
class Parse:
    statement: str
    query: str
    param_oids: tuple[int, ...] = ()

    @classmethod
    def decode(cls, body: bytes) -> Parse:
        reader = _Reader(body)
        name, query = reader.cstr(), reader.cstr()
        return cls(name, query, tuple(reader.int32() for _ in range(reader.int16())))

    def message(self) -> Message:
        oids = _INT16.pack(len(self.param_oids)) + b"".join(_INT32.pack(o) for o in self.param_oids)
        return Message(b"P", cstr(self.statement) + cstr(self.query) + oids)


@dataclass(frozen=True)
class Bind:
    portal: str
    statement: str
    param_formats: tuple[int, ...] = ()
    params: tuple[bytes | None, ...] = ()
    result_formats: tuple[int, ...] = ()

    @classmethod
    def decode(cls, body: bytes) -> Bind:
        reader = _Reader(body)
        portal, statement = reader.cstr(), reader.cstr()
        param_formats = tuple(reader.int16() for _ in range(reader.int16()))
        params = tuple(_read_values(reader))
        result_formats = tuple(reader.int16() for _ in range(reader.int16()))
        return cls(portal, statement, param_formats, params, result_formats)

    def message(self) -> Message:
        body = (
            cstr(self.portal)
            + cstr(self.statement)
            + _int16s(self.param_formats)
            + _values(self.params)
            + _int16s(self.result_formats)
        )
        return Message(b"B", body)

    def with_text_results(self) -> Bind:
        return replace(self, result_formats=(0,))


def target(body: bytes) -> tuple[str, str]:
    """(kind, name) of a Describe or Close message: kind is ``S`` (statement) or ``P`` (portal)."""
    return chr(body[0]), _Reader(body[1:]).cstr()


def describe(kind: str, name: str) -> Message:
    return Message(b"D", kind.encode() + cstr(name))


def close(kind: str, name: str) -> Message:
    return Message(b"C", kind.encode() + cstr(name))


def execute_portal(body: bytes) -> str:
    return _Reader(body).cstr()


def execute(portal: str, max_rows: int = 0) -> Message:
    return Message(b"E", cstr(portal) + _INT32.pack(max_rows))


SYNC = Message(b"S")
FLUSH = Message(b"H")


def query_text(body: bytes) -> str:
    return _Reader(body).cstr()


def query(text: str) -> Message:
    return Message(b"Q", cstr(text))


# --------------------------------------------------------------------------- backend messages


@dataclass(frozen=True)
class Field:
    name: str
    table_oid: int
    column: int
    type_oid: int
    size: int
    typmod: int
    format: int


def decode_row_description(body: bytes) -> list[Field]:
    reader = _Reader(body)
    fields = []
    for _ in range(reader.int16()):
        name = reader.cstr()
        values = _FIELD_TAIL.unpack_from(body, reader.pos)
        reader.pos += _FIELD_TAIL.size
        fields.append(Field(name, *values))
    return fields


def row_description(fields: Sequence[Field]) -> Message:
    body = _INT16.pack(len(fields)) + b"".join(
        cstr(f.name) + _FIELD_TAIL.pack(f.table_oid, f.column, f.type_oid, f.size, f.typmod, f.format)
        for f in fields
    )
    return Message(b"T", body)


def decode_data_row(body: bytes) -> list[bytes | None]:
    return _read_values(_Reader(body))


def data_row(values: Sequence[bytes | None]) -> Message:
    return Message(b"D", _values(values))


def command_tag(body: bytes) -> str:
    return _Reader(body).cstr()


def command_complete(tag: str) -> Message:
    return Message(b"C", cstr(tag))


NO_DATA = Message(b"n")


def decode_fields(body: bytes) -> dict[str, str]:
    """The fields of an ErrorResponse or NoticeResponse, keyed by their one-letter codes."""
    fields: dict[str, str] = {}
    pos = 0
    while body[pos : pos + 1] not in (b"", b"\0"):
        end = body.index(b"\0", pos)
        fields[chr(body[pos])] = body[pos + 1 : end].decode(errors="replace")
        pos = end + 1
    return fields


def _report(kind: bytes, severity: str, code: str, text: str, detail: str | None) -> Message:
    fields = {"S": severity, "V": severity, "C": code, "M": text}
    if detail:
        fields["D"] = detail
    return Message(kind, b"".join(k.encode() + cstr(v) for k, v in fields.items()) + b"\0")


def error_response(text: str, *, code: str = "XX000", detail: str | None = None) -> Message:
    return _report(b"E", "ERROR", code, text, detail)


def notice_response(text: str, *, severity: str = "INFO") -> Message:
    return _report(b"N", severity, "00000", text, None)


def parameter_status(body: bytes) -> tuple[str, str]:
    reader = _Reader(body)
    return reader.cstr(), reader.cstr()


def build_parameter_status(name: str, value: str) -> Message:
    return Message(b"S", cstr(name) + cstr(value))

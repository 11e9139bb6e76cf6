"""Parse Redshift's S3 commands — ``COPY … FROM 's3://…'`` and ``UNLOAD ('…') TO 's3://…'`` — into plain data.

COPY reads Parquet, or JSON with the ``'auto'`` option; UNLOAD writes Parquet (what the stand-in can
carry out). Any other data format or an option it does not know is a :class:`CommandError` naming it,
so a test never silently gets less than it asked for. Parsing is token based (sqlglot's Redshift
tokenizer), so quoted names, ``''`` inside the UNLOAD query and comments behave as in Redshift.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from .redshift_sql import tokenize

__all__ = ["CommandError", "CopyCommand", "Credentials", "UnloadCommand", "parse_s3_command"]

_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
_MB = 1024 * 1024
_MIN_FILE_MB, _MAX_FILE_MB = 5, int(6.2 * 1024)
_IGNORED_COPY_OPTIONS = {"ACCEPTINVCHARS", "STATUPDATE", "COMPUPDATE", "REGION"}
_COLUMNAR_ONLY = ("SERIALIZETOJSON",)
_JSON_ONLY = ("TIMEFORMAT", "TRUNCATECOLUMNS")


class CommandError(ValueError):
    """The statement is not a COPY/UNLOAD the stand-in can carry out (reported to the client)."""


@dataclass(frozen=True)
class Credentials:
    """Who the command acts as: an IAM role (the proxy's own S3 keys) or explicit keys."""

    iam_role: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class CopyCommand:
    table: str
    columns: tuple[str, ...] | None
    source: str
    credentials: Credentials
    manifest: bool = False
    serialize_to_json: bool = False
    fill_record: bool = False
    explicit_ids: bool = False
    data_format: str = "PARQUET"
    """PARQUET, or JSON (with the 'auto' option)."""
    time_format: str | None = None
    """TIMEFORMAT: only 'auto' is understood."""
    truncate_columns: bool = False

    @property
    def columnar(self) -> bool:
        return self.data_format == "PARQUET"


@dataclass(frozen=True)
class UnloadCommand:
    query: str
    prefix: str
    credentials: Credentials
    manifest: bool = False
    verbose: bool = False
    allow_overwrite: bool = False
    clean_path: bool = False
    parallel: bool = True
    max_file_bytes: int = _MAX_FILE_MB * _MB


def parse_s3_command(sql: str) -> CopyCommand | UnloadCommand | None:
    """The command in `sql`, or None when it is not an S3 COPY or an UNLOAD (then it is plain SQL)."""
    head = sql.lstrip()
    first = head[:6].upper()
    if first == "UNLOAD" and (len(head) == 6 or not (head[6].isalnum() or head[6] == "_")):
        return _parse_unload(_Tokens(head[6:]))
    if first[:4] == "COPY":
        tokens = _Tokens(head)
        if _is_s3_copy(tokens):
            return _parse_copy(tokens)
    return None


class _Tokens:
    def __init__(self, sql: str) -> None:
        try:
            self.items: list[Token] = [t for t in tokenize(sql) if t.token_type != TokenType.SEMICOLON]
        except SqlglotError as exc:
            raise CommandError(f"cannot read the statement: {exc}") from None
        self.sql = sql
        self.pos = 0

    def peek(self, offset: int = 0) -> Token | None:
        i = self.pos + offset
        return self.items[i] if i < len(self.items) else None

    def word(self, offset: int = 0) -> str:
        token = self.peek(offset)
        return "" if token is None or token.token_type == TokenType.STRING else token.text.upper()

    def next(self) -> Token:
        token = self.peek()
        if token is None:
            raise CommandError("unexpected end of statement")
        self.pos += 1
        return token

    def accept(self, *words: str) -> bool:
        if self.word() in words:
            self.pos += 1
            return True
        return False

    def string(self, what: str) -> str:
        token = self.next()
        if token.token_type != TokenType.STRING:
            raise CommandError(f"{what} must be a quoted string, not {token.text!r}")
        return token.text

    def number(self, what: str) -> float:
        token = self.next()
        try:
            return float(token.text)
        except ValueError:
            raise CommandError(f"{what} must be a number, not {token.text!r}") from None


def _is_s3_copy(tokens: _Tokens) -> bool:
    for i, token in enumerate(tokens.items):
        if token.token_type == TokenType.FROM:
            after = tokens.items[i + 1] if i + 1 < len(tokens.items) else None
            return (
                after is not None and after.token_type == TokenType.STRING and after.text.startswith("s3://")
            )
    return False


def _parse_copy(tokens: _Tokens) -> CopyCommand:
    tokens.next()  # COPY
    start = tokens.next()
    end = start
    while tokens.peek() is not None and tokens.peek().token_type == TokenType.DOT:  # type: ignore[union-attr]
        tokens.next()
        end = tokens.next()
    table = tokens.sql[start.start : end.end + 1]
    columns: tuple[str, ...] | None = None
    if tokens.peek() is not None and tokens.peek().token_type == TokenType.L_PAREN:  # type: ignore[union-attr]
        tokens.next()
        names = []
        while True:
            token = tokens.next()
            names.append(token.text if token.token_type == TokenType.IDENTIFIER else token.text.lower())
            if tokens.next().token_type == TokenType.R_PAREN:
                break
        columns = tuple(names)
    tokens.next()  # FROM
    source = tokens.string("FROM")
    options: dict[str, bool] = {}
    credentials = _Credentials()
    data_format: str | None = None
    time_format: str | None = None
    while tokens.peek() is not None:
        if credentials.take(tokens):
            continue
        word = tokens.next().text.upper()
        if word == "FORMAT":
            tokens.accept("AS")
            word = tokens.next().text.upper()
        if word == "PARQUET":
            data_format = "PARQUET"
        elif word == "JSON":
            tokens.accept("AS")
            option = tokens.string("JSON")
            if option.lower() != "auto":
                raise CommandError(
                    f"JSON {option!r} is not supported by the Redshift stand-in (only JSON 'auto')"
                )
            data_format = "JSON"
        elif word == "TIMEFORMAT":
            tokens.accept("AS")
            time_format = tokens.string("TIMEFORMAT")
            if time_format.lower() != "auto":
                raise CommandError(f"TIMEFORMAT {time_format!r} is not supported by the Redshift stand-in")
            options[word] = True
        elif word in ("MANIFEST", "SERIALIZETOJSON", "FILLRECORD", "EXPLICIT_IDS", "TRUNCATECOLUMNS"):
            options[word] = True
        elif word in _IGNORED_COPY_OPTIONS:
            tokens.accept("AS")
            if tokens.peek() is not None and (
                tokens.peek().token_type == TokenType.STRING  # type: ignore[union-attr]
                or tokens.word() in ("ON", "OFF", "TRUE", "FALSE")
            ):
                tokens.next()
        else:
            raise CommandError(
                f"COPY option {word} is not supported by the Redshift stand-in (Parquet or JSON 'auto' only)"
            )
    if data_format is None:
        raise CommandError("the Redshift stand-in loads only FORMAT AS PARQUET or FORMAT AS JSON 'auto'")
    misplaced = _JSON_ONLY if data_format == "PARQUET" else _COLUMNAR_ONLY
    for option in misplaced:
        if options.get(option):
            raise CommandError(f"{option} is not supported with FORMAT {data_format}")
    return CopyCommand(
        table=table,
        columns=columns,
        source=source,
        credentials=credentials.result("COPY"),
        manifest=options.get("MANIFEST", False),
        serialize_to_json=options.get("SERIALIZETOJSON", False),
        fill_record=options.get("FILLRECORD", False),
        explicit_ids=options.get("EXPLICIT_IDS", False),
        data_format=data_format,
        time_format=time_format,
        truncate_columns=options.get("TRUNCATECOLUMNS", False),
    )


def _parse_unload(tokens: _Tokens) -> UnloadCommand:
    if tokens.next().token_type != TokenType.L_PAREN:
        raise CommandError("UNLOAD needs ('select-statement')")
    query = tokens.string("the UNLOAD query")
    if tokens.next().token_type != TokenType.R_PAREN:
        raise CommandError("UNLOAD needs ('select-statement')")
    if tokens.next().text.upper() != "TO":
        raise CommandError("UNLOAD needs TO 's3://bucket/prefix'")
    prefix = tokens.string("TO")
    if not prefix.startswith("s3://"):
        raise CommandError(f"UNLOAD destination must be an s3:// path, not {prefix!r}")
    credentials = _Credentials()
    flags: dict[str, bool] = {}
    parquet, parallel, max_bytes = False, True, _MAX_FILE_MB * _MB
    while tokens.peek() is not None:
        if credentials.take(tokens):
            continue
        word = tokens.next().text.upper()
        if word == "FORMAT":
            tokens.accept("AS")
            word = tokens.next().text.upper()
        if word == "PARQUET":
            parquet = True
        elif word == "MANIFEST":
            flags["MANIFEST"] = True
            flags["VERBOSE"] = tokens.accept("VERBOSE")
        elif word in ("ALLOWOVERWRITE", "CLEANPATH"):
            flags[word] = True
        elif word == "PARALLEL":
            parallel = not tokens.accept("OFF", "FALSE")
            tokens.accept("ON", "TRUE")
        elif word == "MAXFILESIZE":
            tokens.accept("AS")
            size = tokens.number("MAXFILESIZE")
            unit = _MB * 1024 if tokens.accept("GB") else _MB
            tokens.accept("MB")
            max_bytes = int(size * unit)
            if not _MIN_FILE_MB * _MB <= max_bytes <= _MAX_FILE_MB * _MB:
                raise CommandError("MAXFILESIZE must be between 5 MB and 6.2 GB")
        else:
            raise CommandError(
                f"UNLOAD option {word} is not supported by the Redshift stand-in (Parquet only)"
            )
    if not parquet:
        raise CommandError("the Redshift stand-in unloads only FORMAT AS PARQUET")
    if flags.get("ALLOWOVERWRITE") and flags.get("CLEANPATH"):
        raise CommandError("CLEANPATH and ALLOWOVERWRITE cannot be used together")
    return UnloadCommand(
        query=query,
        prefix=prefix,
        credentials=credentials.result("UNLOAD"),
        manifest=flags.get("MANIFEST", False),
        verbose=flags.get("VERBOSE", False),
        allow_overwrite=flags.get("ALLOWOVERWRITE", False),
        clean_path=flags.get("CLEANPATH", False),
        parallel=parallel,
        max_file_bytes=max_bytes,
    )


class _Credentials:
    """Collects IAM_ROLE / ACCESS_KEY_ID / SECRET_ACCESS_KEY / SESSION_TOKEN / CREDENTIALS clauses."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def take(self, tokens: _Tokens) -> bool:
        word = tokens.word()
        if word == "IAM_ROLE":
            tokens.next()
            self.values["iam_role"] = "default" if tokens.accept("DEFAULT") else tokens.string("IAM_ROLE")
        elif word in ("ACCESS_KEY_ID", "SECRET_ACCESS_KEY", "SESSION_TOKEN"):
            tokens.next()
            self.values[word.lower()] = tokens.string(word)
        elif word in ("CREDENTIALS", "WITH") and (word != "WITH" or tokens.word(1) == "CREDENTIALS"):
            tokens.pos += 2 if word == "WITH" else 1
            tokens.accept("AS")
            self._parse_credentials_string(tokens.string("CREDENTIALS"))
        else:
            return False
        return True

    def _parse_credentials_string(self, text: str) -> None:
        names = {
            "aws_iam_role": "iam_role",
            "aws_access_key_id": "access_key_id",
            "aws_secret_access_key": "secret_access_key",
            "token": "session_token",
        }
        for part in filter(None, (p.strip() for p in text.split(";"))):
            key, sep, value = part.partition("=")
            if not sep or key.strip().lower() not in names:
                raise CommandError(
                    "Invalid credentials. Must be of the format: credentials "
                    "'aws_iam_role=...' or 'aws_access_key_id=...;aws_secret_access_key=...[;token=...]'"
                )
            self.values[names[key.strip().lower()]] = value.strip()

    def result(self, command: str) -> Credentials:
        role = self.values.get("iam_role")
        key, secret = self.values.get("access_key_id"), self.values.get("secret_access_key")
        if role is not None and (key or secret):
            raise CommandError(f"{command}: give either an IAM role or access keys, not both")
        if role is None and not (key and secret):
            raise CommandError(
                f"{command}: missing credentials (IAM_ROLE, or ACCESS_KEY_ID and SECRET_ACCESS_KEY)"
            )
        if role is not None and role != "default":
            for arn in role.split(","):
                if not _ROLE_ARN.match(arn.strip()):
                    raise CommandError(f"Invalid IAM_ROLE ARN format: {arn.strip()!r}")
        return Credentials(role, key, secret, self.values.get("session_token"))

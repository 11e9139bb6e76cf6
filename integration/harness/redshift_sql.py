"""Translate Redshift SQL into PostgreSQL SQL for the Redshift stand-in (sqlglot, redshift -> postgres).

On top of sqlglot's own transpilation:

- ``SUPER`` -> ``jsonb``; ``VARCHAR(MAX)`` -> ``varchar``; ``IDENTITY(s, i)`` -> an identity column;
- table and column attributes Postgres lacks are dropped: ``DISTSTYLE``, ``DISTKEY``,
  ``[COMPOUND | INTERLEAVED] SORTKEY``, ``ENCODE``, ``BACKUP`` (column-level ``DISTKEY`` / ``SORTKEY``
  too, which sqlglot cannot parse: they are cut out token by token first);
- ``GETDATE()`` / ``SYSDATE`` -> ``CAST(CURRENT_TIMESTAMP AS TIMESTAMP)`` (Redshift's are timestamps
  without time zone, in UTC; the test cluster runs in UTC);
- ``JSON_PARSE(x)`` -> ``CAST(x AS JSONB)``, ``JSON_SERIALIZE(x)`` -> ``CAST(x AS TEXT)``,
  ``JSON_EXTRACT_PATH_TEXT(x, ...)`` -> ``json_extract_path_text(CAST(x AS JSON), ...)``;
- SUPER navigation: ``alias.col.a.b`` / ``col.a`` (a dotted path whose head is not a table in
  scope) -> ``col -> 'a' -> 'b'``, ``col[0]`` -> ``col -> 0``; a navigation compared with a literal
  compares with ``to_jsonb(literal)``, and cast to a scalar type it is unwrapped first
  (``(nav #>> '{}')::type``) — as Redshift compares and casts SUPER scalars.

Parameter placeholders (``$1``, ``%s``) are kept. Translations are cached. A statement sqlglot cannot
parse, or only parses as an opaque command, is passed through (after the token-level cuts).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any, ClassVar

import sqlglot
from sqlglot import exp, transforms
from sqlglot.dialects.postgres import Postgres
from sqlglot.dialects.redshift import Redshift
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.tokens import Token, TokenType

__all__ = ["split_statements", "tokenize", "translate"]

logging.getLogger("sqlglot").setLevel(logging.ERROR)

_CACHE_SIZE = 2048
_REDSHIFT_ONLY_PROPERTIES = (
    exp.DistStyleProperty,
    exp.DistKeyProperty,
    exp.SortKeyProperty,
    exp.BackupProperty,
)
_SCALAR_CASTS = {
    exp.DataType.Type.VARCHAR,
    exp.DataType.Type.TEXT,
    exp.DataType.Type.CHAR,
    exp.DataType.Type.NCHAR,
    exp.DataType.Type.NVARCHAR,
    exp.DataType.Type.BPCHAR,
}


def _getdate(_args: list[Any]) -> exp.Expression:
    return exp.cast(exp.CurrentTimestamp(), exp.DataType.Type.TIMESTAMP)


class _RedshiftParser(Redshift.Parser):
    FUNCTIONS: ClassVar = {**Redshift.Parser.FUNCTIONS, "GETDATE": _getdate}
    NO_PAREN_FUNCTION_PARSERS: ClassVar = {
        **Redshift.Parser.NO_PAREN_FUNCTION_PARSERS,
        "SYSDATE": lambda self: _getdate([]),
    }


class _Redshift(Redshift):
    Parser = _RedshiftParser


class JsonGet(exp.Expression):
    """``this -> key`` on jsonb (SUPER navigation)."""

    arg_types: ClassVar = {"this": True, "expression": True}


class JsonScalarText(exp.Expression):
    """``this #>> '{}'``: a jsonb scalar as text (a JSON string unquoted)."""

    arg_types: ClassVar = {"this": True}


class _PostgresGenerator(Postgres.Generator):
    TRANSFORMS: ClassVar = {
        **Postgres.Generator.TRANSFORMS,
        JsonGet: lambda self, e: f"({self.sql(e, 'this')} -> {self.sql(e, 'expression')})",
        JsonScalarText: lambda self, e: f"({self.sql(e, 'this')} #>> '{{}}')",
    }


class _Postgres(Postgres):
    Generator = _PostgresGenerator


@lru_cache(maxsize=_CACHE_SIZE)
def translate(sql: str) -> str:
    """`sql` (Redshift, one or more statements) as PostgreSQL; unparseable input comes back as is."""
    cut = _cut_table_attributes(sql)
    try:
        statements = sqlglot.parse(cut, read=_Redshift)
    except SqlglotError:
        return cut
    if not statements or any(s is None or isinstance(s, exp.Command) for s in statements):
        return cut
    try:
        return ";\n".join(_to_postgres(s) for s in statements if s is not None)
    except (SqlglotError, ValueError):
        return cut


def split_statements(sql: str) -> list[str]:
    """The statements of `sql` as text slices (split at top-level semicolons), empty ones dropped."""
    pieces: list[str] = []
    start = 0
    for token in _tokens(sql):
        if token.token_type == TokenType.SEMICOLON:
            pieces.append(sql[start : token.start])
            start = token.end + 1
    pieces.append(sql[start:])
    return [p.strip() for p in pieces if p.strip()]


# --------------------------------------------------------------------------- token-level cuts


def tokenize(sql: str) -> list[Token]:
    """Redshift tokens of `sql` (raises sqlglot's TokenError on unterminated strings)."""
    return list(_Redshift().tokenize(sql))


def _tokens(sql: str) -> list[Token]:
    try:
        return tokenize(sql)
    except SqlglotError:
        return []


def _cut_table_attributes(sql: str) -> str:
    """Cut Redshift-only storage attributes out of CREATE TABLE text (strings and comments untouched)."""
    tokens = _tokens(sql)
    if not tokens or tokens[0].text.upper() != "CREATE":
        return sql
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        word = tokens[i].text.upper() if tokens[i].token_type != TokenType.STRING else ""
        end = i
        if word in ("DISTSTYLE", "ENCODE", "BACKUP") and i + 1 < len(tokens):
            end = i + 1
        elif word == "DISTKEY" or word == "SORTKEY":
            end = _skip_parenthesised(tokens, i + 1) - 1
            if end == i and i + 1 < len(tokens) and tokens[i + 1].text.upper() == "AUTO":
                end = i + 1
        elif word in ("COMPOUND", "INTERLEAVED") and i + 1 < len(tokens):
            if tokens[i + 1].text.upper() == "SORTKEY":
                end = _skip_parenthesised(tokens, i + 2) - 1
        else:
            i += 1
            continue
        spans.append((tokens[i].start, tokens[end].end + 1))
        i = end + 1
    if not spans:
        return sql
    out, last = [], 0
    for start, stop in spans:
        out.append(sql[last:start])
        last = stop
    out.append(sql[last:])
    return "".join(out)


def _skip_parenthesised(tokens: list[Token], i: int) -> int:
    """Index just after a parenthesised group starting at `i` (or `i` if there is none)."""
    if i >= len(tokens) or tokens[i].token_type != TokenType.L_PAREN:
        return i
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[j].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(tokens)


# --------------------------------------------------------------------------- AST rewrites


def _to_postgres(statement: exp.Expression) -> str:
    statement = _qualify_keeps_its_order(statement)
    _name_select_items(statement)
    statement = _rewrite_navigation(statement)
    statement = statement.transform(_rewrite_node)
    return statement.sql(dialect=_Postgres)


def _qualify_keeps_its_order(statement: exp.Expression) -> exp.Expression:
    """QUALIFY becomes a subquery (sqlglot); keep an ORDER BY of output names on the outer query."""
    for select in list(statement.find_all(exp.Select)):
        order = select.args.get("order")
        if not (select.args.get("qualify") and order):
            continue
        if not all(isinstance(o.this, exp.Column) and not o.this.table for o in order.expressions):
            continue
        select.set("order", None)
        outer = transforms.eliminate_qualify(select.copy())
        outer.set("order", order)
        if select is statement:
            return outer
        select.replace(outer)
    return statement


def _name_select_items(statement: exp.Expression) -> None:
    """Give rewritten select items the column names Redshift gives them (``email`` for ``p.email``)."""
    for select in statement.find_all(exp.Select):
        for item in select.expressions:
            name = _redshift_name(item)
            if name:
                item.replace(exp.alias_(item.copy(), name, quoted=name != name.lower()))


def _redshift_name(item: exp.Expression) -> str | None:
    if isinstance(item, exp.Column) and len(item.parts) >= 2 and not item.is_star:
        return item.parts[-1].name  # a plain table.column keeps its name anyway; a SUPER path gets it
    if isinstance(item, exp.ParseJSON):
        return "json_parse"
    if isinstance(item, exp.Anonymous) and item.name.upper() == "JSON_SERIALIZE":
        return "json_serialize"
    if isinstance(item, exp.Cast):
        if isinstance(item.this, exp.CurrentTimestamp):
            return "getdate"
        return _redshift_name(item.this) if isinstance(item.this, exp.Column) else None
    if isinstance(item, exp.Bracket):
        return item.this.name or None
    if isinstance(item, exp.Dot):
        return item.expression.name or None
    return None


def _rewrite_node(node: exp.Expression) -> exp.Expression | None:
    if isinstance(node, exp.DataType):
        return _rewrite_type(node)
    if isinstance(node, _REDSHIFT_ONLY_PROPERTIES):
        return None
    if isinstance(node, exp.ColumnConstraint) and isinstance(
        node.args.get("kind"), exp.EncodeColumnConstraint
    ):
        return None
    if isinstance(node, exp.GeneratedAsIdentityColumnConstraint):
        return exp.GeneratedAsIdentityColumnConstraint(this=False)  # BY DEFAULT, as Redshift's IDENTITY
    if isinstance(node, exp.JSONExtractScalar) and not isinstance(node.this, exp.Cast):
        node.set("this", exp.cast(node.this, exp.DataType.Type.JSON))  # Redshift's takes JSON text
        return node
    if isinstance(node, exp.ParseJSON):
        return exp.cast(node.this, exp.DataType.build("jsonb"))
    if isinstance(node, exp.Anonymous):
        return _rewrite_function(node)
    return node


def _rewrite_type(node: exp.DataType) -> exp.Expression:
    if node.this == exp.DataType.Type.SUPER:
        return exp.DataType.build("jsonb")
    params = node.expressions
    if len(params) == 1 and params[0].name.upper() == "MAX":
        return exp.DataType(this=node.this)
    return node


def _rewrite_function(node: exp.Anonymous) -> exp.Expression:
    name = node.name.upper()
    args = node.expressions
    if name == "JSON_SERIALIZE" and len(args) == 1:
        return exp.cast(args[0], exp.DataType.Type.TEXT)
    if name == "JSON_EXTRACT_PATH_TEXT" and args:
        json_arg = exp.cast(args[0], exp.DataType.Type.JSON)
        return exp.Anonymous(this="json_extract_path_text", expressions=[json_arg, *args[1:]])
    return node


def _rewrite_navigation(statement: exp.Expression) -> exp.Expression:
    """Dotted paths into SUPER columns and ``[i]`` subscripts become jsonb ``->`` chains."""
    try:
        scopes = traverse_scope(statement)
    except (SqlglotError, ValueError, KeyError, AttributeError):
        scopes = []
    for scope in scopes:
        for column in list(scope.columns):
            path = _navigation_path(column, scope)
            if path:
                column.replace(path)
    for bracket in list(statement.find_all(exp.Bracket)):
        navigated: exp.Expression = bracket.this
        for index in bracket.expressions:
            navigated = JsonGet(this=navigated, expression=index.copy())
        bracket.replace(navigated)
    for dot in list(statement.find_all(exp.Dot)):
        if dot.find(JsonGet) is not None and isinstance(dot.expression, exp.Identifier):
            dot.replace(JsonGet(this=dot.this, expression=exp.Literal.string(_attribute(dot.expression))))
    for node in list(statement.find_all(JsonGet)):
        _unwrap_for_comparison(node)
    return statement


def _navigation_path(column: exp.Column, scope: Scope) -> exp.Expression | None:
    parts = list(column.parts)
    if len(parts) < 2:
        return None
    names = [p.name for p in parts]
    if _is_source(names[0], scope):
        head, path = 2, parts[2:]
    elif len(parts) >= 3 and _is_qualified_table(names[0], names[1], scope):
        head, path = 3, parts[3:]
    else:
        head, path = 1, parts[1:]
    if not path:
        return None
    base = exp.column(parts[head - 1].copy(), table=parts[head - 2].copy() if head >= 2 else None)
    navigated: exp.Expression = base
    for part in path:
        navigated = JsonGet(this=navigated, expression=exp.Literal.string(_attribute(part)))
    return navigated


def _attribute(identifier: exp.Identifier) -> str:
    """Redshift folds unquoted SUPER attribute names to lower case."""
    return identifier.name if identifier.quoted else identifier.name.lower()


def _is_source(name: str, scope: Scope | None) -> bool:
    while scope is not None:
        if name.lower() in {s.lower() for s in scope.sources}:
            return True
        scope = scope.parent
    return False


def _is_qualified_table(schema: str, table: str, scope: Scope | None) -> bool:
    while scope is not None:
        for source in scope.sources.values():
            if isinstance(source, exp.Table) and (source.db.lower(), source.name.lower()) == (
                schema.lower(),
                table.lower(),
            ):
                return True
        scope = scope.parent
    return False


def _unwrap_for_comparison(node: JsonGet) -> None:
    """Compare a navigation with ``to_jsonb(literal)``; cast it to a scalar only after unwrapping."""
    parent = node.parent
    if isinstance(parent, JsonGet):
        return
    if isinstance(parent, exp.Binary) and isinstance(
        parent, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
    ):
        other = parent.expression if parent.this is node else parent.this
        if isinstance(other, exp.Literal):
            other.replace(exp.Anonymous(this="to_jsonb", expressions=[_typed_literal(other)]))
    elif isinstance(parent, exp.Cast):
        to = parent.to
        if to.this not in (exp.DataType.Type.SUPER, exp.DataType.Type.JSON, exp.DataType.Type.JSONB):
            node.replace(JsonScalarText(this=node.copy()))
            if to.this in _SCALAR_CASTS:
                parent.set("to", exp.DataType.build("text"))


def _typed_literal(literal: exp.Literal) -> exp.Expression:
    if literal.is_string:
        return exp.cast(literal.copy(), exp.DataType.Type.TEXT)
    return exp.cast(literal.copy(), exp.DataType.Type.DECIMAL)

"""ALTER TABLE: each action (ADD, DROP, MODIFY, CHANGE, RENAME, ALTER COLUMN, options) applied to a definition."""

from __future__ import annotations

from dataclasses import replace

from sqlglot.tokens import Token, TokenType

from cdc_mysql.ddl.columns import column_from_sqlglot, default_of, with_charset
from cdc_mysql.ddl.declared import column_declarations, declared_type
from cdc_mysql.ddl.parsing import parse_column_defs, parse_expression
from cdc_mysql.ddl.tokens import (
    charset_option, insert_index, paren_names, read_table_name, source_text, strip_position, token_ident, token_word,
)
from cdc_mysql.model import CHARACTER_TYPES, ColumnDef, TableDef, TableId

IGNORED_ALTER_OPTIONS = frozenset({
    "ENGINE", "AUTO_INCREMENT", "ROW_FORMAT", "ALGORITHM", "LOCK", "FORCE", "ORDER", "KEY_BLOCK_SIZE", "COLLATE",
    "PARTITION", "REMOVE", "COALESCE", "REORGANIZE", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR", "TRUNCATE",
    "DISCARD", "IMPORT", "ENABLE", "DISABLE", "STATS_PERSISTENT", "STATS_AUTO_RECALC", "STATS_SAMPLE_PAGES",
    "PACK_KEYS", "CHECKSUM", "DELAY_KEY_WRITE", "AVG_ROW_LENGTH", "MAX_ROWS", "MIN_ROWS", "INSERT_METHOD",
    "TABLESPACE", "COMPRESSION", "ENCRYPTION", "PAGE_CHECKSUM", "TRANSACTIONAL", "WITH", "WITHOUT", "SECONDARY_ENGINE",
    "ADD_PERIOD", "NOWAIT", "WAIT",
})


def is_partitioning(toks: list[Token]) -> bool:
    """True if an ALTER TABLE action is partition management; it comes last and takes the rest of the statement.

    ``DROP PARTITION p0, p1`` and ``PARTITION BY ... (PARTITION p0 ..., ...)`` continue past commas, and
    none of these change the columns.
    """
    words = [token_word(t) for t in toks[:3]]
    return "PARTITION" in words[:2] or "PARTITIONING" in words[:2] or words[:1] == ["PARTITIONS"]


def starts_partitioning(tokens: list[Token], k: int) -> bool:
    """True if ``PARTITION BY`` (one token to sqlglot) or ``REMOVE PARTITIONING`` starts at ``tokens[k]``."""
    words = tokens[k].text.upper().split() if tokens[k].token_type not in (TokenType.IDENTIFIER, TokenType.STRING) else []
    if k + 1 < len(tokens) and len(words) == 1:
        words.append(token_word(tokens[k + 1]))
    return words[:2] in (["PARTITION", "BY"], ["REMOVE", "PARTITIONING"])


def without_partition_options(tokens: list[Token], start: int) -> list[Token]:
    """ALTER TABLE's tokens without a trailing ``PARTITION BY ...`` / ``REMOVE PARTITIONING`` (which needs no comma)."""
    depth = 0
    for k in range(start, len(tokens)):
        tok = tokens[k]
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and k > start and tokens[k - 1].token_type != TokenType.COMMA:
            if starts_partitioning(tokens, k):
                return tokens[:k]
    return tokens


def alter_action(sql: str, table: TableDef, toks: list[Token]) -> tuple[TableDef, TableId | None]:
    """One ALTER TABLE action applied to ``table``: the new definition, and the new name of a rename."""
    w = [token_word(t) for t in toks]
    if not toks:
        return table, None
    head = w[0]
    if head == "ADD":
        j = 1
        if j < len(toks) and w[j] == "COLUMN":
            j += 1
        if j < len(toks) and w[j] == "IF":
            j += 3
        if j < len(toks) and w[j] == "CONSTRAINT":
            j += 1
            if j < len(toks) and w[j] not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                j += 1
        if j < len(toks) and w[j] == "PRIMARY":
            cols = paren_names(toks, j)
            cols = [table.column(c).name if table.column(c) else c for c in cols]
            columns = [replace(c, optional=False) if c.name in cols else c for c in table.columns]
            return replace(table.renumbered(columns), primary_key=tuple(cols)), None
        if j < len(toks) and w[j] == "UNIQUE":
            cols = paren_names(toks, j)
            return replace(table, unique_keys=table.unique_keys + (tuple(cols),)), None
        if j < len(toks) and w[j] in ("INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PERIOD", "SYSTEM",
                                      "PARTITION"):
            return table, None
        if j < len(toks) and toks[j].token_type == TokenType.L_PAREN:
            defs = source_text(sql, toks[j + 1], toks[-2])
            declarations = column_declarations(toks[j + 1:-1])
            columns = list(table.columns)
            for cd in parse_column_defs(defs):
                col, _ = column_from_sqlglot(cd, declared=declarations.get(cd.this.name.lower()))
                columns = [c for c in columns if c.name.lower() != col.name.lower()]
                columns.append(with_charset(col, table.charset))
            return table.renumbered(columns), None
        definition, position = strip_position(toks[j:])
        col, flags = column_of(sql, definition, table)
        if table.column(col.name) is not None and "IF" in w[:4]:
            return table, None
        columns = [c for c in table.columns]
        columns.insert(insert_index(columns, position, table), col)
        new = table.renumbered(columns)
        if flags["primary"]:
            new = replace(new, primary_key=(col.name,))
        if flags["unique"]:
            new = replace(new, unique_keys=new.unique_keys + ((col.name,),))
        return new, None
    if head == "DROP":
        j = 1
        if j < len(toks) and w[j] == "PRIMARY":
            return replace(table, primary_key=()), None
        if j < len(toks) and w[j] in ("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "PERIOD", "SYSTEM"):
            return table, None
        if j < len(toks) and w[j] == "COLUMN":
            j += 1
        if j < len(toks) and w[j] == "IF":
            j += 2
        name = token_ident(toks[j])
        if table.column(name) is None:
            if "IF" in w[:3]:
                return table, None
            raise ValueError(f"DROP COLUMN {name!r}: table {table.id} has no such column")
        return table.renumbered([c for c in table.columns if c.name.lower() != name.lower()]), None
    if head in ("MODIFY", "CHANGE"):
        j = 1
        if j < len(toks) and w[j] == "COLUMN":
            j += 1
        if j < len(toks) and w[j] == "IF":
            j += 2
        old_name = token_ident(toks[j])
        if head == "CHANGE":
            j += 1
        definition, position = strip_position(toks[j:])
        old = table.column(old_name)
        if old is None:
            if "IF" in w[:3]:
                return table, None
            raise ValueError(f"{head} COLUMN {old_name!r}: table {table.id} has no such column")
        col, flags = column_of(sql, definition, table)
        columns = [c for c in table.columns]
        index = next(k for k, c in enumerate(columns) if c.name.lower() == old_name.lower())
        if position is None:
            columns[index] = col
        else:
            del columns[index]
            columns.insert(insert_index(columns, position, table), col)
        pk = tuple(col.name if k.lower() == old_name.lower() else k for k in table.primary_key)
        uks = tuple(tuple(col.name if k.lower() == old_name.lower() else k for k in u) for u in table.unique_keys)
        new = replace(table.renumbered(columns), primary_key=pk, unique_keys=uks)
        if col.name in pk:
            new = new.renumbered([replace(c, optional=False) if c.name == col.name else c for c in new.columns])
        if flags["primary"]:
            new = replace(new, primary_key=(col.name,))
        return new, None
    if head == "RENAME":
        j = 1
        if j < len(toks) and w[j] == "COLUMN":
            old, new_name = token_ident(toks[j + 1]), token_ident(toks[j + 3])
            col = table.column(old)
            if col is None:
                raise ValueError(f"RENAME COLUMN {old!r}: table {table.id} has no such column")
            columns = [replace(c, name=new_name) if c is col else c for c in table.columns]
            pk = tuple(new_name if k.lower() == old.lower() else k for k in table.primary_key)
            return replace(table.renumbered(columns), primary_key=pk), None
        if j < len(toks) and w[j] in ("INDEX", "KEY"):
            return table, None
        if j < len(toks) and w[j] in ("TO", "AS"):
            j += 1
        new_id, _ = read_table_name(toks, j, table.id.database)
        return table, new_id
    if head == "ALTER":
        j = 1
        if j < len(toks) and w[j] == "COLUMN":
            j += 1
        name = token_ident(toks[j])
        col = table.column(name)
        if col is None:
            raise ValueError(f"ALTER COLUMN {name!r}: table {table.id} has no such column")
        op = w[j + 1:j + 3]
        if op[:2] == ["SET", "DEFAULT"]:
            value = source_text(sql, toks[j + 3], toks[-1])
            if value.startswith("(") and value.endswith(")"):
                value = value[1:-1]
            has_default, default = default_of(parse_expression(value))
            col = replace(col, has_default=has_default, default=default)
        elif op[:2] == ["DROP", "DEFAULT"]:
            col = replace(col, has_default=False, default=None)
        columns = [col if c.name == col.name else c for c in table.columns]
        return table.renumbered(columns), None
    if head == "CONVERT":
        charset = charset_option(toks[2:])
        columns = [replace(c, charset=charset) if c.type_name in CHARACTER_TYPES and c.type_name != "JSON" else c
                   for c in table.columns]
        return replace(table.renumbered(columns), charset=charset), None
    if head in ("DEFAULT", "CHARACTER", "CHARSET"):
        charset = charset_option(toks)
        return (replace(table, charset=charset) if charset else table), None
    if head == "COMMENT":
        k = 2 if len(toks) > 2 and toks[1].token_type == TokenType.EQ else 1
        return replace(table, comment=toks[k].text), None
    if head in IGNORED_ALTER_OPTIONS or (len(toks) > 1 and toks[1].token_type == TokenType.EQ):
        return table, None
    raise ValueError(f"unsupported ALTER TABLE action {' '.join(t.text for t in toks[:3])!r}")


def column_of(sql: str, definition: list[Token], table: TableDef) -> tuple[ColumnDef, dict[str, bool]]:
    """The column an ALTER TABLE action defines (with the table's charset)."""
    text = source_text(sql, definition[0], definition[-1])
    cds = parse_column_defs(text)
    if len(cds) != 1:
        raise ValueError(f"expected one column definition in {text!r}")
    col, flags = column_from_sqlglot(cds[0], declared=declared_type(definition, 1))
    return with_charset(col, table.charset), flags

"""``cdc ddl apply --dialect mysql|mariadb FILE.sql``: apply a DDL script to an empty model and print the tables."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from cdc_mysql.ddl import SchemaModel, UnparseableDdl, split_statements
from cdc_mysql.model import TableDef


def table_json(table: TableDef) -> dict[str, Any]:
    """A table as ``cdc ddl apply`` prints it."""
    return {
        "table": str(table.id),
        "primary_key": list(table.key_columns),
        "charset": table.charset,
        "columns": [
            {
                "name": c.name, "type": c.type_name, "jdbc_type": c.jdbc_type, "length": c.length, "scale": c.scale,
                "unsigned": c.unsigned, "nullable": c.optional,
                "default": c.default if c.has_default else None, "has_default": c.has_default,
                "auto_increment": c.auto_increment, "charset": c.charset,
                "enum_values": list(c.enum_values) if c.enum_values is not None else None,
            }
            for c in table.columns
        ],
    }


def apply_script(script: str, database: str | None = None) -> tuple[SchemaModel, list[dict[str, Any]]]:
    """Apply every statement of ``script`` in order; return the model and the errors (with line and column)."""
    model = SchemaModel()
    errors = []
    current = database
    for statement in split_statements(script):
        try:
            applied = model.apply(statement.text, current)
        except UnparseableDdl as e:
            errors.append({"line": statement.line, "column": statement.col, "error": e.reason,
                           "statement": statement.text})
            continue
        if applied.kind == "use" and applied.databases:
            current = applied.databases[0]
    return model, errors


def cmd_ddl_apply(args: argparse.Namespace) -> int:
    """Print the tables a DDL script leaves, as JSON; unparseable statements go to stderr with their position."""
    try:
        with open(args.file, encoding="utf-8") as f:
            script = f.read()
    except OSError as e:
        print(f"cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    model, errors = apply_script(script, args.database)
    doc = {"dialect": args.dialect, "tables": [table_json(model.tables[t]) for t in sorted(model.tables)],
           "errors": errors}
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    for e in errors:
        print(f"{args.file}:{e['line']}:{e['column']}: cannot parse: {e['error']}", file=sys.stderr)
    return 1 if errors else 0


def register(subparsers: Any) -> None:
    """Add ``ddl apply`` to the ``cdc`` command's subcommands."""
    p = subparsers.add_parser("ddl", help="apply MySQL/MariaDB DDL to an empty table model")
    sub = p.add_subparsers(dest="ddl_command", required=True)
    a = sub.add_parser("apply", help="apply the statements of FILE in order and print the tables as JSON")
    a.add_argument("--dialect", choices=("mysql", "mariadb"), default="mysql")
    a.add_argument("--database", default=None, help="the database unqualified names belong to (until a USE)")
    a.add_argument("file", help="a .sql file")
    a.set_defaults(func=cmd_ddl_apply)

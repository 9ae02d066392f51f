"""What the connector reads from Db2's catalog and the ASN control tables, in Db2 SQL (per platform: cdc_db2.dialects)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_core.relational import Table, TableId
from cdc_db2.dialects import DIALECTS, Dialect
from cdc_db2.dialects.base import text as _text
from cdc_db2.types import ColumnInfo, TypeModes, column

#: The dialect of ``db2.platform=LUW`` (the default).
LUW = DIALECTS["luw"]

#: Schemas Db2 keeps for itself; never captured.
SYSTEM_SCHEMAS = frozenset({"SYSIBM", "SYSCAT", "SYSSTAT", "SYSTOOLS", "SYSIBMADM", "SYSFUN", "SYSPROC", "SYSIBMINTERNAL",
                            "SYSIBMTS", "SYSPUBLIC", "NULLID", "SQLJ"})


def service_status_query(control: str) -> str:
    """The ASN capture service's status through the ASNCDC management UDF."""
    return f"VALUES ({control}.ASNCDCSERVICES('status', '{control.lower()}'))"


def quote(name: str) -> str:
    """A Db2 delimited identifier."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Registration:
    """One ``IBMSNAP_REGISTER`` row: a source table and its change-data table."""

    schema: str
    table: str
    cd_schema: str
    cd_table: str
    active: bool
    #: ``CD_NEW_SYNCHPOINT``: the commit sequence of the newest rows asncap wrote to the CD table (None: none yet).
    #: Not part of a registration's identity (it moves with every captured change); streaming reads the table's
    #: definition again when it lies above the position streamed so far (Connector._refresh).
    changed_at: bytes | None = field(default=None, compare=False)

    @property
    def change_table(self) -> str:
        """``"<CD_OWNER>"."<CD_TABLE>"``."""
        return f"{quote(self.cd_schema)}.{quote(self.cd_table)}"


@dataclass
class CaptureTable:
    """A captured table: its relational definition and the CD table its changes are read from."""

    table: Table
    registration: Registration
    #: The CD table's column names (what can be read from it); empty when unknown.
    cd_columns: frozenset[str] = frozenset()


def max_lsn_query(control: str, dialect: Dialect = LUW) -> str:
    """The highest synchpoint the capture program has reached, in ``dialect``."""
    return dialect.max_lsn_query(control)


def read_registrations(conn: Any, control: str, dialect: Dialect = LUW) -> list[Registration]:
    """Every table in capture mode (active or not)."""
    cur = conn.cursor()
    cur.execute(dialect.register_query(control))
    return [Registration(_text(s), _text(t), _text(cs), _text(ct), _text(state).upper() == "A",
                         None if changed is None else bytes(changed))
            for s, t, cs, ct, state, changed in cur.fetchall()]


def system_table(schema: str, table: str) -> bool:
    """Db2's own tables, never snapshotted: its catalog schemas and Debezium's SystemTablesPredicate (schemas
    starting with ASNCDC or SYSTOOLS, tables starting with IBMSNAP_ or IBMQREP_)."""
    s, t = schema.upper(), table.upper()
    return (s in SYSTEM_SCHEMAS or s.startswith(("ASNCDC", "SYSTOOLS")) or t.startswith(("IBMSNAP_", "IBMQREP_")))


def read_schemas(conn: Any, dialect: Dialect = LUW) -> list[str]:
    """Every schema holding a base table, Db2's own left out."""
    cur = conn.cursor()
    cur.execute(dialect.schemas_query())
    return sorted(s for (s,) in ((_text(r[0]),) for r in cur.fetchall()) if s.upper() not in SYSTEM_SCHEMAS)


def read_tables(conn: Any, db: str, schemas: list[str], modes: TypeModes,
                dialect: Dialect = LUW) -> dict[tuple[str, str], Table]:
    """The tables of ``schemas``, by ``(schema, table)``, with their key columns, from ``dialect``'s catalog."""
    if not schemas:
        return {}
    cur = conn.cursor()
    cur.execute(dialect.columns_query(schemas), tuple(schemas))
    infos: dict[tuple[str, str], list[ColumnInfo]] = {}
    keys: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for row in cur.fetchall():
        schema, table, info, keyseq = dialect.column_info(tuple(row))
        infos.setdefault((schema, table), []).append(info)
        if keyseq:
            keys.setdefault((schema, table), []).append((keyseq, info.name))
    return {k: Table(TableId(db, k[0], k[1]), [column(i, modes) for i in cols], [n for _, n in sorted(keys.get(k, []))])
            for k, cols in infos.items()}

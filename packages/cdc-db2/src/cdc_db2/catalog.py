"""What the connector reads from Db2's catalog and the ASN control tables, in Db2 SQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_core.relational import Table, TableId
from cdc_db2.types import ColumnInfo, TypeModes, column

#: Schemas Db2 keeps for itself; never captured.
SYSTEM_SCHEMAS = frozenset({"SYSIBM", "SYSCAT", "SYSSTAT", "SYSTOOLS", "SYSIBMADM", "SYSFUN", "SYSPROC", "SYSIBMINTERNAL",
                            "SYSIBMTS", "SYSPUBLIC", "NULLID", "SQLJ"})


def columns_query(schemas: list[str]) -> str:
    """Every column of the tables of ``schemas``, in ``SYSCAT.COLUMNS`` order (``KEYSEQ`` > 0: a key column)."""
    markers = ", ".join("?" for _ in schemas)
    return ("SELECT c.TABSCHEMA, c.TABNAME, c.COLNAME, c.COLNO, c.TYPENAME, c.LENGTH, c.SCALE, c.NULLS, c.KEYSEQ, "
            "c.CODEPAGE, c.\"DEFAULT\" FROM SYSCAT.COLUMNS c JOIN SYSCAT.TABLES t ON t.TABSCHEMA = c.TABSCHEMA "
            f"AND t.TABNAME = c.TABNAME WHERE t.TYPE = 'T' AND c.TABSCHEMA IN ({markers}) "
            "ORDER BY c.TABSCHEMA, c.TABNAME, c.COLNO")


def register_query(control: str) -> str:
    """The tables in capture mode: ``IBMSNAP_REGISTER`` rows of source tables (the global row has no owner)."""
    return (f"SELECT r.SOURCE_OWNER, r.SOURCE_TABLE, r.CD_OWNER, r.CD_TABLE, r.STATE FROM {control}.IBMSNAP_REGISTER r "
            "WHERE r.SOURCE_OWNER <> '' ORDER BY r.SOURCE_OWNER, r.SOURCE_TABLE")


def max_lsn_query(control: str) -> str:
    """The highest synchpoint the capture program has reached (everything below it is in the CD tables)."""
    return (f"SELECT MAX(t.SYNCHPOINT) FROM (SELECT CD_NEW_SYNCHPOINT AS SYNCHPOINT FROM {control}.IBMSNAP_REGISTER "
            f"UNION ALL SELECT SYNCHPOINT AS SYNCHPOINT FROM {control}.IBMSNAP_REGISTER) t")


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


def _text(value: Any) -> str:
    """A catalog string without the blanks Db2 pads CHAR columns with."""
    return "" if value is None else str(value).rstrip()


def read_registrations(conn: Any, control: str) -> list[Registration]:
    """Every table in capture mode (active or not)."""
    cur = conn.cursor()
    cur.execute(register_query(control))
    return [Registration(_text(s), _text(t), _text(cs), _text(ct), _text(state).upper() == "A")
            for s, t, cs, ct, state in cur.fetchall()]


def read_tables(conn: Any, db: str, schemas: list[str], modes: TypeModes) -> dict[tuple[str, str], Table]:
    """The tables of ``schemas``, by ``(schema, table)``, with their key columns."""
    if not schemas:
        return {}
    cur = conn.cursor()
    cur.execute(columns_query(schemas), tuple(schemas))
    infos: dict[tuple[str, str], list[ColumnInfo]] = {}
    keys: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for schema, table, name, colno, tname, length, scale, nulls, keyseq, codepage, default in cur.fetchall():
        key = (_text(schema), _text(table))
        name = _text(name)
        infos.setdefault(key, []).append(ColumnInfo(name, int(colno) + 1, _text(tname).upper(), int(length or 0),
                                                    int(scale or 0), _text(nulls) == "Y",
                                                    int(codepage if codepage is not None else 1208),
                                                    None if default is None else str(default)))
        if keyseq:
            keys.setdefault(key, []).append((int(keyseq), name))
    return {k: Table(TableId(db, k[0], k[1]), [column(i, modes) for i in cols], [n for _, n in sorted(keys.get(k, []))])
            for k, cols in infos.items()}

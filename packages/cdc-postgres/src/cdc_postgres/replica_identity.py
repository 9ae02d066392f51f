"""``replica.identity.autoset.values``: set captured tables' REPLICA IDENTITY at start, as Debezium does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from cdc_core.relational import TableId

#: One entry, as Debezium's ReplicaIdentityMapper reads it: ``<table regex>:<identity>``, case-insensitive.
_ENTRY = re.compile(r"^\s*(?P<table>[^\s:]+):(?P<identity>DEFAULT|INDEX (?P<index>\w*)|FULL|NOTHING)\s*$", re.I)

#: pg_class.relreplident codes.
_CODES = {"DEFAULT": "d", "FULL": "f", "NOTHING": "n", "INDEX": "i", "CHANGE": "c"}  # CHANGE: YugabyteDB only


@dataclass(frozen=True)
class AutosetRule:
    """A table regex (matched whole, case-insensitively, against ``schema.table``) and the identity to give it."""

    table: re.Pattern[str]
    identity: str  # DEFAULT, FULL, NOTHING or INDEX
    index: str | None = None

    def clause(self) -> sql.Composable:
        """The ``REPLICA IDENTITY ...`` clause's argument."""
        if self.identity == "INDEX":
            return sql.SQL("USING INDEX {}").format(sql.Identifier(self.index or ""))
        return sql.SQL(self.identity)

    def describe(self) -> str:
        """The identity as PostgreSQL's documentation names it."""
        return f"USING INDEX {self.index}" if self.identity == "INDEX" else self.identity


def autoset_problem(value: str) -> str | None:
    """What is wrong with a ``replica.identity.autoset.values`` value (Debezium's validation), or None."""
    if not value.strip():
        return "must not be empty"
    bad = [entry for entry in value.split(",") if not _ENTRY.match(entry)]
    if bad:
        return (f"{', '.join(repr(b) for b in bad)}: not of the form <schema.table regex>:<DEFAULT|FULL|NOTHING|"
                "INDEX index_name> (e.g. schema1.*:FULL,schema2.table2:NOTHING,schema2.table3:INDEX idx_name)")
    return None


def parse_autoset(value: str) -> list[AutosetRule]:
    """The rules of a valid ``replica.identity.autoset.values`` value, in order."""
    rules = []
    for entry in value.split(","):
        m = _ENTRY.match(entry)
        assert m is not None, entry  # validated before
        identity = m.group("identity").split()[0].upper()
        rules.append(AutosetRule(re.compile(m.group("table"), re.I), identity, m.group("index")))
    return rules


def apply_autoset(conn: psycopg.Connection, tables: dict[int, TableId], current: dict[int, str],
                  rules: list[AutosetRule], log: Any) -> None:
    """Give each captured table the identity its rule names, where it differs; update ``current`` (oid -> code).

    As Debezium: a table matched by two rules, a missing privilege or a refused ALTER is logged as
    an error and the table keeps its identity (the start goes on; the replica identity warnings
    that follow say what that means for its events).
    """
    for oid, tid in tables.items():
        name = f"{tid.schema}.{tid.table}"
        matched = [r for r in rules if r.table.fullmatch(name)]
        if not matched:
            continue
        if len(matched) > 1:
            log.error("replica.identity.autoset.values: more than one regular expression matches table %s "
                      "(%s); its replica identity is left as it is", name, ", ".join(r.table.pattern for r in matched))
            continue
        rule = matched[0]
        code = _CODES[rule.identity]
        if current.get(oid) == code and (code != "i" or _identity_index(conn, oid) == rule.index):
            log.info("replica identity for table %s is already %s", name, rule.describe())
            continue
        try:
            with conn.transaction():
                conn.execute(sql.SQL("ALTER TABLE {} REPLICA IDENTITY {}").format(
                    sql.Identifier(tid.schema, tid.table), rule.clause()))
        except psycopg.errors.InsufficientPrivilege as e:
            log.error("replica.identity.autoset.values: the replica identity of table %s could not be set to %s "
                      "for lack of privileges (the table's owner can): %s", name, rule.describe(),
                      str(e).splitlines()[0])
            continue
        except psycopg.Error as e:
            log.error("replica.identity.autoset.values: setting the replica identity of table %s to %s failed: %s",
                      name, rule.describe(), str(e).splitlines()[0])
            continue
        current[oid] = code
        log.info("replica identity set to %s for table %s", rule.describe(), name)


def _identity_index(conn: psycopg.Connection, oid: int) -> str | None:
    """The name of the index a table's REPLICA IDENTITY USING INDEX names."""
    row = conn.execute("SELECT c.relname FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid "
                       "WHERE i.indrelid = %s AND i.indisreplident", (oid,)).fetchone()
    return row[0] if row else None

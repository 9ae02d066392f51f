"""A captured table as the replication stream describes it: pgoutput's Relation message over the catalog.

Debezium's ``PgOutputMessageDecoder.handleRelationMessage`` (2.7) rebuilds a table on every
Relation message: each column's name, type OID and type modifier come from the message (the
log's own description of the table at that point), its nullability and default from the catalog
as it is when the message is read, and the key from the catalog's primary key, kept to the
columns the message has. The live catalog may be ahead of the stream (the table was altered
again since, or while the connector was stopped) or behind it, so it never decides a type.
"""

from __future__ import annotations

from cdc_core.relational import Table, TableId
from cdc_core.schema import Schema
from cdc_postgres.catalog import Catalog
from cdc_postgres.pgoutput import Relation
from cdc_postgres.types import column_for

__all__ = ["relation_table", "relation_table_id"]


def relation_table_id(rel: Relation) -> TableId:
    """The table id a Relation message names."""
    return TableId(None, rel.namespace, rel.name)


def _same_schema(a: Schema | None, b: Schema | None) -> bool:
    return a is b or (a is not None and b is not None and a.json_bytes() == b.json_bytes())


def _same_table(a: Table, b: Table) -> bool:
    """True if two definitions give the same events: ids, keys, and each column's type, schema (enum labels,
    default), nullability and source metadata."""
    return a.id == b.id and a.primary_key == b.primary_key and len(a.columns) == len(b.columns) and all(
        x.name == y.name and x.type_oid == y.type_oid and x.type_modifier == y.type_modifier
        and x.optional == y.optional and x.default_expression == y.default_expression
        and x.type_name == y.type_name and x.length == y.length and x.scale == y.scale
        and _same_schema(x.schema, y.schema)
        for x, y in zip(a.columns, b.columns))


def relation_table(rel: Relation, current: Table | None, catalog: Catalog) -> Table | None:
    """The table the changes after ``rel`` are encoded with; ``current`` itself if nothing changed.

    None if the table is not captured. Two catalog reads per Relation message (PostgreSQL sends
    one per table per session, and again after each change of its definition).
    """
    tid = relation_table_id(rel)
    if current is None and not catalog.filter.includes(tid):
        return None
    live = catalog.table(rel.oid)
    known = {c.name: c for c in live.columns} if live is not None else {}
    # Types outside the built-in mapping (enums, domains, extension types, their arrays) resolve
    # through pg_type by OID, as the catalog read does for live columns.
    infos = catalog.type_infos(sorted({rc.type_oid for rc in rel.columns}))
    columns = []
    for position, rc in enumerate(rel.columns, 1):
        col = known.get(rc.name)
        info = infos.get(rc.type_oid)
        # Debezium: nullability and default by name from the catalog (optional if absent); type
        # name, length and scale as ColumnMetaData derives them from the Relation.
        fresh_col = column_for(rc.name, rc.type_oid, rc.type_modifier, True if col is None else col.optional,
                               catalog.modes, position=col.position if col is not None else position,
                               type_name=info.name if info else None, type_info=info,
                               default_expression=None if col is None else col.default_expression, relation=True)
        if fresh_col.schema is None:
            catalog.log.warning("column %s.%s of the streamed relation has type oid %s, which has no mapping; "
                                "it is left out of change events", tid, rc.name, rc.type_oid)
        columns.append(fresh_col)
    names = {rc.name for rc in rel.columns}
    # The catalog's key may come "from the future" (a later ALTER): Debezium keeps only the
    # columns the Relation has; without one it keeps the key it knew (isColumnInPrimaryKey).
    # The Relation's own key flags are the replica identity, not the key: never used.
    pk = [c for c in (live.primary_key if live is not None else []) if c in names]
    if not pk and current is not None:
        pk = [c for c in current.primary_key if c in names]
    fresh = Table(tid, columns, pk, comment=live.comment if live is not None else None)
    if current is not None and _same_table(current, fresh):
        return current
    return fresh

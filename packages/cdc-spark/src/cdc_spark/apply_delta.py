"""Applying reduced changes to a Delta table through delta-rs, the applied state in the commit's metadata."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import TableNotFoundError

if TYPE_CHECKING:
    from cdc_spark.apply import AppliedState, Changes

POSITION_KEY = "cdc.position"
SNAPSHOT_KEY = "cdc.snapshot_id"
_OP = "__cdc_op"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_state(path: str) -> AppliedState:
    """The state recorded by the newest commit that carries one (nothing applied if none)."""
    from cdc_spark.apply import AppliedState

    try:
        table = DeltaTable(path)
    except TableNotFoundError:
        return AppliedState()
    for entry in table.history():
        if POSITION_KEY in entry:
            return AppliedState(int(entry[POSITION_KEY]), entry.get(SNAPSHOT_KEY) or None)
    return AppliedState()


def _metadata(state: AppliedState) -> CommitProperties:
    meta = {POSITION_KEY: str(state.position)}
    if state.snapshot_id:
        meta[SNAPSHOT_KEY] = state.snapshot_id
    return CommitProperties(custom_metadata=meta)


def write(path: str, keys: list[str], changes: Changes) -> None:
    """One atomic commit: overwrite for a replacing snapshot or a new table, else a MERGE."""
    try:
        table = DeltaTable(path)
    except TableNotFoundError:
        table = None
    if table is None or changes.replace:
        rows = changes.upserts
        write_deltalake(path, rows, mode="overwrite", schema_mode="overwrite" if table is not None else None,
                        commit_properties=_metadata(changes.state))
        return
    source = pa.concat_tables([
        changes.upserts.append_column(_OP, pa.array(["u"] * changes.upserts.num_rows, pa.string())),
        _delete_rows(changes, changes.upserts.schema),
    ])
    columns = {_quote(c): f"s.{_quote(c)}" for c in changes.upserts.column_names}
    predicate = " AND ".join(f"t.{_quote(k)} = s.{_quote(k)}" for k in keys)
    (
        table.merge(source=source, predicate=predicate, source_alias="s", target_alias="t",
                    commit_properties=_metadata(changes.state))
        .when_matched_delete(predicate=f"s.{_OP} = 'd'")
        .when_matched_update(updates=columns, predicate=f"s.{_OP} <> 'd'")
        .when_not_matched_insert(updates=columns, predicate=f"s.{_OP} <> 'd'")
        .execute()
    )


def _delete_rows(changes: Changes, schema: pa.Schema) -> pa.Table:
    """Delete keys as full-width rows (nulls outside the key) so they fit the MERGE source."""
    n = changes.deletes.num_rows
    cols = [changes.deletes[f.name] if f.name in changes.deletes.column_names else pa.nulls(n, f.type) for f in schema]
    return pa.table(cols + [pa.array(["d"] * n, pa.string())], names=[*schema.names, _OP])


def read_table(path: str) -> pa.Table:
    """The table's current rows."""
    return DeltaTable(path).to_pyarrow_table()

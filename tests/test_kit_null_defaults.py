"""JsonConverter's ``replace.null.with.default`` through ``cdc run``, for every connector of the kit.

Kafka's JsonConverter (as Debezium Server uses it) writes a NULL column whose schema has a default
as that default, unless ``debezium.format.value.replace.null.with.default=false``; then it writes
null, and ``source.snapshot`` of streamed events (Debezium leaves SnapshotRecord.FALSE unset) too.
"""

from __future__ import annotations

import pytest

from cdc_process import CdcProcess, write_properties
from kit import Column, Table, Workdir

ND = Table("nd", (Column("id", "int32", nullable=False), Column("label", "text", default="'none'"),
                  Column("n", "int32", default="7"), Column("plain", "text")))


@pytest.mark.parametrize("replace", [None, "true", "false"])
def test_null_with_a_default_is_written_as_the_default_unless_turned_off(connector, tmp_path, replace):
    connector.create_table(ND)
    connector.execute("INSERT INTO nd VALUES (0, NULL, NULL, NULL)")
    work = Workdir(tmp_path)
    props = connector.properties(work)
    if replace is not None:
        props["debezium.format.value.replace.null.with.default"] = replace
    cdc = CdcProcess(write_properties(work.config, props), work.root).start()
    try:
        cdc.wait_until(lambda: work.offsets.exists(), what="the snapshot to complete")
        for sql in ("INSERT INTO nd VALUES (1, NULL, NULL, NULL)",
                    "UPDATE nd SET label = 'x', n = 1, plain = 'p' WHERE id = 1",
                    "UPDATE nd SET label = NULL WHERE id = 1"):
            connector.execute(sql)
        events = cdc.wait_events(connector.topic(ND), 4)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    read, create, update, nulled = (e["value"] for e in events)
    on = replace != "false"
    label = "none" if connector.text_defaults else None  # the text column's default, where the schema has it
    fields = {f["field"]: f for f in read["schema"]["fields"][1]["fields"]}
    assert (fields["label"].get("default"), fields["n"].get("default")) == (label, 7)  # the schema, either way
    defaults = {"label": label, "n": 7, "plain": None} if on else {"label": None, "n": None, "plain": None}
    assert read["payload"]["after"] == {"id": 0, **defaults}
    assert create["payload"]["after"] == {"id": 1, **defaults}
    assert update["payload"]["before"] == {"id": 1, **defaults}
    assert update["payload"]["after"] == {"id": 1, "label": "x", "n": 1, "plain": "p"}
    assert nulled["payload"]["after"] == {"id": 1, "label": label if on else None, "n": 1, "plain": "p"}
    assert read["payload"]["source"]["snapshot"] in ("true", "last")
    assert create["payload"]["source"]["snapshot"] == ("false" if on else None)

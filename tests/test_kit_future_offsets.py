"""For every connector: an offsets file ahead of the server's log (copied from elsewhere, hand-edited) stops the start.

The error is one line naming the offsets file, saying the position is ahead of the server and
quoting it; the file is left as it was; the server is never told the connector got that far
(PostgreSQL's slot keeps its confirmed position); and with the right file put back, the change
made meanwhile is delivered -- nothing skipped. A connector whose Debezium does not refuse such a
start (``refuses_offsets_ahead`` False: SQL Server, Db2) goes on instead, with a warning saying
the position is ahead of the server and quoting it, and sends nothing.
"""

from __future__ import annotations

import time

import orjson

from kit import Column, Table, Workdir, insert_rows, start_cdc

FUT = Table("fut", (Column("id", "int32", nullable=False),))


def test_offset_beyond_the_servers_log_is_refused_and_nothing_is_skipped(connector, tmp_path):
    """Each way of moving the offset ahead: exit 1 with a clear line, file untouched, slot unmoved, nothing lost."""
    connector.create_table(FUT)
    insert_rows(connector, FUT, [{"id": 1}])
    work = Workdir(tmp_path)
    topic = connector.topic(FUT)
    cdc = start_cdc(connector, work)
    cdc.wait_events(topic, 1)
    assert cdc.terminate() == 0, cdc.log()
    good = work.offsets.read_bytes()
    doc = orjson.loads(good)
    insert_rows(connector, FUT, [{"id": 2}])  # made while cdc is down: must come once the right file is back

    for name, (offset, shown) in connector.offsets_ahead(doc["offsets"][0]["offset"]).items():
        doc["offsets"][0]["offset"] = offset
        work.offsets.write_bytes(orjson.dumps(doc))
        tampered = work.offsets.read_bytes()
        confirmed_before = connector.confirmed_position()
        sent = cdc.events(topic)
        cdc = start_cdc(connector, work)
        if connector.refuses_offsets_ahead:
            assert cdc.wait_exit(60) == 1, f"{name}: {cdc.log()}"
        else:
            cdc.wait_until(lambda: "ahead of" in cdc.log(), 60, f"{name}: the warning")
            time.sleep(2)  # a poll or more: nothing comes, and cdc runs on
            assert cdc.proc.poll() is None, f"{name}: cdc run exited: {cdc.log()}"
            assert cdc.events(topic) == sent, f"{name}: events sent from an offset ahead of the server"
            assert cdc.terminate() == 0, cdc.log()
        log = cdc.log()
        assert "Traceback" not in log, log
        named = str(work.offsets) in log or not connector.refuses_offsets_ahead  # a warning from the connector
        assert named and "ahead of" in log and shown in log, f"{name}: {log}"
        if connector.refuses_offsets_ahead:
            assert work.offsets.read_bytes() == tampered, f"{name}: the offsets file was rewritten"
        else:  # stopped cleanly, it wrote its position again: the same one, nothing streamed
            kept, put = (orjson.loads(b)["offsets"][0]["offset"] for b in (work.offsets.read_bytes(), tampered))
            assert connector.position(kept) == connector.position(put), f"{name}: the offset moved: {kept}"
        confirmed = connector.confirmed_position()
        if confirmed is not None:
            assert confirmed[0] <= confirmed[1] and confirmed[0] == confirmed_before[0], \
                f"{name}: the slot was confirmed past what was delivered: {confirmed} (was {confirmed_before})"

    work.offsets.write_bytes(good)
    cdc = start_cdc(connector, work)
    events = cdc.wait_events(topic, 2)
    assert cdc.terminate() == 0, cdc.log()
    assert [e["key"]["payload"]["id"] for e in events] == [1, 2], events

"""Every built-in transform and predicate against Kafka Connect 3.9's and Debezium 3.0.7's own classes.

The same records (Debezium change events with defaults, decimals, floats and transaction blocks;
tombstones, deletes, truncates, a heartbeat, a nested struct) go through cdc's chain and through
the Java classes (``DebeziumRunner transform``: JsonConverter in, the chain as Kafka Connect applies
it, JsonConverter out); topic, key, value and headers must be the same JSON, or both must fail.
Headers are compared twice: as plain values (``schemas.enable=false``) and as ``headerFrames``,
``{"schema","payload"}`` as Debezium Server's default header converter writes them, each with the
Connect schema the header was made with (the records go in with their headers' schemas too).
The few places where cdc deliberately does not fail as Kafka does are listed in ``LENIENT`` with
their reason. Chains: ``tests/data/transforms/differential.yaml``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance import debezium
from conformance.check import require_real_debezium
from cdc_core.config import Config
from cdc_core.errors import CdcError
from cdc_core.events import ChangeRecord
from cdc_core.plugins import registry
from cdc_core.schema import Schema, struct
from cdc_core.serializers.formats import header_framer, settings_from_server
from cdc_core.serializers.json import JsonSerializer
from cdc_core.transforms.chain import build_chain

CHAINS = yaml.safe_load((Path(__file__).parent / "data" / "transforms" / "differential.yaml").read_text())
#: (chain id, record name): why cdc passes a record Kafka's transform fails on.
LENIENT = {(c["id"], name): c["lenient"][name] for c in CHAINS["chains"] for name in c.get("lenient", {})}

DECIMAL = Schema("bytes", optional=True, name="org.apache.kafka.connect.data.Decimal", version=1,
                 parameters={"scale": "2", "connect.decimal.precision": "8"})
ROW = struct("db.public.t.Value", [
    ("id", Schema("int32")), ("name", Schema("string", optional=True)),
    ("qty", Schema("int64", optional=True, default=5)), ("price", DECIMAL),
    ("flag", Schema("boolean", optional=True, default=True)), ("f32", Schema("float32", optional=True)),
    ("f64", Schema("float64", optional=True)), ("note", Schema("string", optional=True, default="none")),
], optional=True)
KEY = struct("db.public.t.Key", [("id", Schema("int32"))])
SOURCE = struct("io.debezium.connector.postgresql.Source", [
    ("version", Schema("string")), ("connector", Schema("string")), ("name", Schema("string")),
    ("ts_ms", Schema("int64")), ("db", Schema("string")), ("schema", Schema("string")), ("table", Schema("string")),
    ("txId", Schema("int64", optional=True)), ("lsn", Schema("int64", optional=True))])
BLOCK = struct("event.block", [("id", Schema("string")), ("total_order", Schema("int64")),
                               ("data_collection_order", Schema("int64"))], optional=True, version=1)
ENVELOPE = struct("db.public.t.Envelope", [
    ("before", ROW), ("after", ROW), ("source", SOURCE), ("transaction", BLOCK), ("op", Schema("string")),
    ("ts_ms", Schema("int64", optional=True))], version=2)
HEARTBEAT = struct("io.debezium.connector.common.Heartbeat", [("ts_ms", Schema("int64"))])
NESTED = struct("db.public.nested.Value", [
    ("id", Schema("int32")),
    ("addr", struct("Addr", [("city", Schema("string", optional=True)),
                             ("geo", struct("Geo", [("lat", Schema("float64"))], optional=True))], optional=True)),
    ("tags", Schema("array", optional=True, items=Schema("string")))])


TIMES = struct("db.public.times.Value", [
    ("ts", Schema("int64", optional=True, name="org.apache.kafka.connect.data.Timestamp", version=1)),
    ("d", Schema("int32", optional=True, name="org.apache.kafka.connect.data.Date", version=1)),
    ("t", Schema("int32", optional=True, name="org.apache.kafka.connect.data.Time", version=1)),
    ("unix", Schema("int64", optional=True)), ("text", Schema("string", optional=True))])


def _money(cents: int) -> str:
    # BigInteger.toByteArray: the shortest two's complement, as JsonConverter writes a Decimal.
    return base64.b64encode(cents.to_bytes(cents.bit_length() // 8 + 1, "big", signed=True)).decode()


def _source(lsn: int) -> dict[str, Any]:
    return {"version": "3.0.7.Final", "connector": "postgresql", "name": "db", "ts_ms": 1700000000123, "db": "shop",
            "schema": "public", "table": "t", "txId": 77, "lsn": lsn}


ROW1 = {"id": 1, "name": "Ann", "qty": None, "price": _money(1234), "flag": None, "f32": 1.5, "f64": 12345678.9,
        "note": None}
ROW2 = {"id": 1, "name": "Ann B", "qty": 3, "price": _money(-50), "flag": False, "f32": None, "f64": 0.001,
        "note": "x"}


#: Records only the chains that name them get (a primary-key change: its headers carry the key schema).
KEY_CHANGE = ("key-change-delete", "key-change-tombstone", "key-change-create")
#: Debezium Server's header converter: JsonConverter with its defaults (schemas on).
FRAME = header_framer(settings_from_server({}))


def _records() -> dict[str, ChangeRecord]:
    tx = {"id": "77:123", "total_order": 2, "data_collection_order": 1}

    def env(op, before, after, transaction=None, lsn=100):
        return {"before": before, "after": after, "source": _source(lsn), "transaction": transaction, "op": op,
                "ts_ms": 1700000000999}

    return {
        "create": ChangeRecord("db.public.t", {"id": 1}, env("c", None, ROW1), KEY, ENVELOPE, {"lsn": 1}),
        "update": ChangeRecord("db.public.t", {"id": 1}, env("u", ROW1, ROW2, tx), KEY, ENVELOPE, {"lsn": 2}),
        "delete": ChangeRecord("db.public.t", {"id": 1}, env("d", ROW2, None, tx), KEY, ENVELOPE, {"lsn": 3}),
        "tombstone": ChangeRecord("db.public.t", {"id": 1}, None, KEY, None, {"lsn": 4}),
        "truncate": ChangeRecord("db.public.t", None, env("t", None, None), None, ENVELOPE, {"lsn": 5}),
        "heartbeat": ChangeRecord("__debezium-heartbeat.db", {"serverName": "db"}, {"ts_ms": 1700000000000},
                                  struct("io.debezium.connector.common.ServerNameKey", [("serverName", Schema("string"))]),
                                  HEARTBEAT, {"lsn": 6}),
        "with-drop-header": ChangeRecord("db.public.t", {"id": 1}, env("c", None, ROW2), KEY, ENVELOPE, {"lsn": 7},
                                         {"drop": ["note", "qty", "id", "price"]},
                                         header_schemas={"drop": Schema("array", items=Schema("string"))}),
        # A primary-key change as Debezium's RelationalChangeRecordEmitter makes it (id 1 -> 2).
        "key-change-delete": ChangeRecord("db.public.t", {"id": 1}, env("d", ROW1, None), KEY, ENVELOPE, {"lsn": 13},
                                          {"__debezium.newkey": {"id": 2}}, header_schemas={"__debezium.newkey": KEY}),
        "key-change-tombstone": ChangeRecord("db.public.t", {"id": 1}, None, KEY, None, {"lsn": 14},
                                             {"__debezium.newkey": {"id": 2}},
                                             header_schemas={"__debezium.newkey": KEY}),
        "key-change-create": ChangeRecord("db.public.t", {"id": 2}, env("c", None, {**ROW2, "id": 2}), KEY, ENVELOPE,
                                          {"lsn": 15}, {"__debezium.oldkey": {"id": 1}},
                                          header_schemas={"__debezium.oldkey": KEY}),
        "nested": ChangeRecord("db.public.nested", None, {"id": 9, "addr": {"city": "Oslo", "geo": {"lat": 59.9}},
                                                          "tags": ["a", "b"]}, None, NESTED, {"lsn": 8}),
        "times": ChangeRecord("db.public.times", None, {"ts": 1709618828009, "d": 19787, "t": 22028009,
                                                        "unix": -1500000, "text": "2024-03-05 06:07:08.009"},
                               None, TIMES, {"lsn": 10}),
        "times-old": ChangeRecord("db.public.times", None, {"ts": -86399999, "d": -3, "t": 0, "unix": 1709618828,
                                                            "text": "1969-12-31 23:59:59.999"}, None, TIMES, {"lsn": 11}),
        "times-null": ChangeRecord("db.public.times", None, {"ts": None, "d": None, "t": None, "unix": None,
                                                             "text": None}, None, TIMES, {"lsn": 12}),
        "nested-null": ChangeRecord("db.public.nested", None, {"id": 10, "addr": None, "tags": None}, None, NESTED,
                                    {"lsn": 9}),
    }


def _line(serializer: JsonSerializer, r: ChangeRecord) -> dict[str, Any]:
    try:
        (s,) = serializer.serialize([r])
    except AssertionError as e:  # the suite's JsonConverter grammar check (CDC_CHECK_JSON): Kafka would refuse it
        return {"error": f"JsonConverter would not write it: {e}"}
    return {"topic": r.topic, "key": None if s.key is None else json.loads(s.key),
            "value": None if s.value is None else json.loads(s.value), "headers": r.headers,
            "headerFrames": json.loads(json.dumps(FRAME(r)))}


def _cdc(chain_props: dict[str, Any], record: ChangeRecord, serializer: JsonSerializer) -> dict[str, Any]:
    chain = build_chain(Config(chain_props), registry())
    try:
        out = chain.apply([record])
    except CdcError as e:
        return {"error": str(e)}
    if not out or out[0].__class__ is not ChangeRecord:
        return {"dropped": True}
    return _line(serializer, out[0])


def _diff(a: Any, b: Any, path: str) -> list[str]:
    """Where two JSON documents differ (struct schema fields matched by name), one line each."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [] if list(a) == list(b) or set(a) != set(b) else [f"{path}: key order {list(a)} vs {list(b)}"]
        for k in dict.fromkeys([*a, *b]):
            out += _diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, dict) and "field" in x for x in a + b) and a + b:
        names_a, names_b = [x["field"] for x in a], [x["field"] for x in b]
        out = [] if names_a == names_b else [f"{path}: fields {names_a} vs {names_b}"]
        bb = {x["field"]: x for x in b}
        return out + [d for x in a if x["field"] in bb for d in _diff(x, bb[x["field"]], f"{path}.{x['field']}")]
    if type(a) is not type(b) or a != b:
        return [f"{path}: kafka={json.dumps(a)[:200]} cdc={json.dumps(b)[:200]}"]
    return []


@pytest.mark.timeout(300)
@pytest.mark.parametrize("replace_null_with_default", [True, False], ids=["converter-defaults", "converter-nulls"])
def test_every_chain_writes_what_kafka_and_debezium_write(tmp_path: Path, replace_null_with_default: bool) -> None:
    """Both JsonConverter settings of ``replace.null.with.default``: with it off, what the transforms
    themselves do with nulls of fields that have defaults (Kafka's ``Struct.get``) shows in the output."""
    require_real_debezium()
    serializer = JsonSerializer(key_replace_null_with_default=replace_null_with_default,
                                value_replace_null_with_default=replace_null_with_default)
    converter = {f"{side}.converter.replace.null.with.default": str(replace_null_with_default).lower()
                 for side in ("key", "value")}
    records = _records()
    failures: list[str] = []
    lenient_used: set[tuple[str, str]] = set()
    both_failed: list[str] = []
    compared = 0
    every = [name for name in records if name not in KEY_CHANGE]
    runs = [([_line(serializer, records[name]) for name in chain.get("records") or every],
             {**chain["properties"], **converter}) for chain in CHAINS["chains"]]
    results = debezium.transform(runs, tmp_path)
    for chain, theirs in zip(CHAINS["chains"], results):
        props = chain["properties"]
        names = chain.get("records") or every
        for name, java in zip(names, theirs):
            mine = _cdc(props, _records()[name], serializer)
            compared += 1
            if "error" in java or "error" in mine:
                reason = LENIENT.get((chain["id"], name))
                if "error" in java and "error" in mine:
                    both_failed.append(f"{chain['id']} / {name}")
                    continue
                if "error" in java and reason:
                    lenient_used.add((chain["id"], name))
                    continue
                failures.append(f"{chain['id']} / {name}: kafka={java} cdc={mine}")
                continue
            if java != mine:
                failures.append(f"{chain['id']} / {name}: " + "; ".join(_diff(java, mine, "")))
    assert not failures, f"{len(failures)} of {compared} records differ:\n" + "\n".join(failures)
    # Both failing is a match (e.g. ExtractField of a field a schema lacks) but must stay the exception.
    assert sorted(both_failed) == sorted(CHAINS["both_fail"]), both_failed
    assert set(LENIENT) == lenient_used, f"lenient entries where Kafka did not fail: {set(LENIENT) - lenient_used}"

"""The transform chain inside the engine (the library's ``Engine``, and ``cdc run``'s server layout)."""

from __future__ import annotations

import pytest

from memory_connector import CUSTOMERS, MemoryScript, add_script, insert, memory_registry, offset, source
from cdc_core.app import Application
from cdc_core.config.server import server_config
from cdc_core.engine import Engine
from cdc_core.errors import ConfigError
from cdc_core.events import RawChange
from cdc_core.stores.memory_offsets import MemoryOffsetStore

pytestmark = pytest.mark.timeout(30)
UNWRAP = {"transforms": "unwrap,route", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
          "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
          "transforms.route.regex": r"test\.public\.(.*)", "transforms.route.replacement": "flat.$1"}


def delete(pos: int, id_: int) -> RawChange:
    """A delete of customer ``id_`` at ``pos``."""
    return RawChange(CUSTOMERS, "d", (str(id_), "n", "e"), None, source(pos), offset(pos))


def engine_for(script: MemoryScript, **props) -> Engine:
    config = {"connector.class": "memory", "topic.prefix": "test", "memory.script": add_script(script),
              "poll.interval.ms": "10", **props}
    return Engine(config, plugins=memory_registry(), offset_store=MemoryOffsetStore())


def test_engine_flattens_reroutes_and_commits_the_offsets_of_dropped_deletes() -> None:
    # The last change is a delete: ExtractNewRecordState drops it and its tombstone, yet its offset is committed.
    script = MemoryScript([[insert(1), insert(2)], [delete(3, 1)]])
    engine = engine_for(script, **UNWRAP)
    seen = []
    engine.run(lambda records: seen.extend(records))
    assert [(r.topic, r.key, r.value) for r in seen] == [
        ("flat.customers", {"id": 1}, {"id": 1, "name": "n", "email": "e"}),
        ("flat.customers", {"id": 2}, {"id": 2, "name": "n", "email": "e"})]
    assert seen[0].value_schema.name == "test.public.customers.Value"
    assert engine.offset_store.get({"server": "test"}) == {"pos": 3}


def test_engine_without_transforms_has_no_chain() -> None:
    assert engine_for(MemoryScript([[insert(1)]])).transforms is None


def test_engine_refuses_a_bad_chain_at_start_naming_the_property() -> None:
    with pytest.raises(ConfigError) as e:
        engine_for(MemoryScript([]), transforms="u", **{"transforms.u.type": "io.debezium.transforms.Unwrap"})
    assert any(p.startswith("transforms.u.type: no transform called 'io.debezium.transforms.Unwrap'")
               for p in e.value.problems)


def test_debezium_server_layout_gives_debezium_transforms_to_the_connector() -> None:
    props = {"debezium.sink.type": "stdout", "debezium.source.connector.class": "memory",
             "debezium.source.topic.prefix": "test", "debezium.source.memory.script": add_script(MemoryScript([])),
             **{f"debezium.{k}": v for k, v in UNWRAP.items()}}
    app = Application(server_config(props), memory_registry())
    assert app.problems() == []
    assert app.server.source.get("transforms.unwrap.type") == "io.debezium.transforms.ExtractNewRecordState"
    props["debezium.transforms.route.regex"] = "("
    problems = Application(server_config(props), memory_registry()).problems()
    assert any(p.startswith("debezium.transforms.route.regex: '(' is not a valid regular expression") for p in problems), problems
    props["debezium.transforms.route.regex"] = "x"
    props["debezium.predicates"] = "p"
    problems = Application(server_config(props), memory_registry()).problems()
    assert any(p.startswith("debezium.predicates.p.type: is required") for p in problems), problems


def test_cdc_validate_names_bad_transform_properties(tmp_path, capsys, restore_logging) -> None:
    from cdc_core.cli import main

    path = tmp_path / "app.properties"
    path.write_text("\n".join([
        "debezium.sink.type=file", "debezium.sink.file.dir=out", "debezium.source.connector.class=postgres",
        "debezium.source.database.dbname=inventory", "debezium.source.topic.prefix=dbserver1",
        "debezium.transforms=unwrap,route",
        "debezium.transforms.unwrap.type=io.debezium.transforms.ExtractNewRecordState",
        "debezium.transforms.unwrap.delete.handling.mode=keep",
        "debezium.transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter",
        "debezium.transforms.route.regex=x", "debezium.transforms.route.replacment=y", ""]), encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "debezium.transforms.unwrap.delete.handling.mode: 'keep' is not one of: drop, rewrite, none" in err
    assert "debezium.transforms.route.replacement: is required and has no value" in err
    assert "debezium.transforms.route.replacment: unknown property" in err
    path.write_text(path.read_text().replace("=keep", "=rewrite").replace("replacment", "replacement"))
    assert main(["validate", str(path)]) == 0

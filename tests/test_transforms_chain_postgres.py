"""Filter, ContentBasedRouter and the outbox EventRouter through ``transforms=`` in the Engine, on a real PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres.testing import _drop_database as drop_database
from kit.engine import EngineThread
from test_outbox_postgres import CHAPTER_ROW, EVENT_ID, OUTBOX_TABLE, PAYLOAD


def _require_chain() -> None:
    try:
        import cdc_core.transforms.chain  # noqa: F401
    except ImportError:
        pytest.skip("cdc_core.transforms.chain (transforms= in the Engine) is not in this tree; the transforms "
                    "themselves are tested directly in test_transforms_scripting_postgres.py and test_outbox_postgres.py")


def test_the_three_transforms_in_one_chain(pg_server):
    _require_chain()
    db = f"chain_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(db)
    try:
        pg_server.execute(OUTBOX_TABLE, dbname=db)
        pg_server.execute("CREATE TABLE inventory.t (id int PRIMARY KEY, n int)", dbname=db)
        pg_server.execute(CHAPTER_ROW, dbname=db)
        pg_server.execute("INSERT INTO inventory.t VALUES (1, 1), (2, 200)", dbname=db)
        config = {
            "connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
            "database.user": pg_server.user, "database.dbname": db, "topic.prefix": "dbserver1", "slot.name": db,
            "snapshot.mode": "initial_only", "predicates": "isT",
            "predicates.isT.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            "predicates.isT.pattern": r"dbserver1\.inventory\.t",
            "transforms": "big,outbox,route",
            "transforms.big.type": "io.debezium.transforms.Filter", "transforms.big.language": "jsr223.groovy",
            "transforms.big.condition": "value.after.n > 100", "transforms.big.predicate": "isT",
            "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
            "transforms.outbox.predicate": "isT", "transforms.outbox.negate": "true",
            "transforms.route.type": "io.debezium.transforms.ContentBasedRouter",
            "transforms.route.language": "jsr223.graal.js",
            "transforms.route.topic.expression": "topic == 'dbserver1.inventory.t' ? 'big.t' : null",
        }
        engine = EngineThread(config).start()
        assert engine.join(60) is None
        assert [(r.topic, r.key, r.value if r.topic != "big.t" else r.value["after"], r.headers)
                for r in engine.snapshot()] == [
            ("outbox.event.Order", "1", PAYLOAD, {"id": EVENT_ID}),
            ("big.t", {"id": 2}, {"id": 2, "n": 200}, {}),
        ]
        bad = dict(config, **{"transforms.big.condition": "value.after.n = 1"})
        with pytest.raises(ConfigError) as e:
            Engine(bad, offset_store=MemoryOffsetStore())
        assert "transforms.big.condition: cannot use 'value.after.n = 1': an assignment is not part of the " \
               "expression language at column 15" in e.value.problems
    finally:
        drop_database(pg_server, db)

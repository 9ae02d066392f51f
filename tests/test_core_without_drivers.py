"""cdc-core imports and runs with no database driver installed (and a broken plugin only warns)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import cdc_core

BLOCKER = """
import sys
BLOCKED = ("psycopg", "psycopg_binary", "pymysql", "pymysqlreplication", "pyodbc", "ibm_db", "pyspark")
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not installed (blocked by the test)")
        return None
sys.meta_path.insert(0, Block())
"""


def test_every_core_module_imports_without_drivers():
    modules = [m.name for m in pkgutil.walk_packages(cdc_core.__path__, "cdc_core.")]
    code = BLOCKER + "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert len(modules) > 20


def test_cli_runs_without_drivers_and_names_the_connector_that_cannot_load(tmp_path):
    config = tmp_path / "app.properties"
    config.write_text("debezium.sink.type=stdout\ndebezium.source.connector.class=postgres\n"
                      "debezium.source.topic.prefix=x\ndebezium.source.database.dbname=db\n")
    code = BLOCKER + f"from cdc_core.cli import main\nsys.exit(main(['validate', {str(config)!r}]))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    # The connector is imported only when configured (cdc_core.plugins.LazyPlugin): the error names it and why.
    assert ("debezium.source.connector.class: the connector 'postgres' (cdc_postgres.connector:PostgresConnector) "
            "could not be loaded: ImportError: psycopg is not installed (blocked by the test)") in result.stderr

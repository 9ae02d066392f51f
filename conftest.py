"""Fixtures shared by every package's tests: one throwaway PostgreSQL and one MariaDB server per session."""

import os

# Every record JsonSerializer writes during the tests (here and in `cdc run` subprocesses) is checked
# against Kafka JsonConverter's grammar (cdc_core.serializers.checking); set before cdc_core is imported.
os.environ.setdefault("CDC_CHECK_JSON", "1")
os.environ.setdefault("CDC_CHECK_JSON_KNOWN", os.path.join(os.path.dirname(__file__), "tests", "data",
                                                           "jsonconverter_known_problems.txt"))

pytest_plugins = ["cdc_postgres.testing", "cdc_mysql.testing", "kit.plugin"]

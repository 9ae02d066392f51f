"""``replica.identity.autoset.values`` on YugabyteDB: CHANGE, DEFAULT, FULL or NOTHING per table regex.

Applied at start, as on PostgreSQL (``cdc_postgres.replica_identity.apply_autoset``); on YugabyteDB a
slot keeps the identity its tables had when it was created, so a change reaches only a new slot.
"""

from __future__ import annotations

import re

from cdc_postgres.replica_identity import AutosetRule

from cdc_yugabyte.config import _AUTOSET_ENTRY


def parse_autoset(value: str) -> list[AutosetRule]:
    """The rules of a valid value (``cdc_yugabyte.config.autoset_problem`` said so), in order."""
    rules = []
    for entry in value.split(","):
        m = _AUTOSET_ENTRY.match(entry)
        assert m is not None, entry
        rules.append(AutosetRule(re.compile(m.group("table"), re.I), m.group("identity").upper()))
    return rules

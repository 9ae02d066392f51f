"""``python -m cdc_db2.standin.cli ...``: the ``cdc`` command with connections routed to the stand-in (tests only)."""

from __future__ import annotations

import sys

from cdc_core.cli import main
from cdc_db2.standin import dbapi

if __name__ == "__main__":
    dbapi.install()
    sys.exit(main())

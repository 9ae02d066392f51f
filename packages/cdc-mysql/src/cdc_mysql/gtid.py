"""GTID sets in both formats: MySQL's ``uuid:1-5:7`` and MariaDB's ``domain-server-sequence``."""

from __future__ import annotations

import re
from collections.abc import Callable


class MySqlGtidSet:
    """A MySQL GTID set: source UUID -> sorted, merged intervals of transaction numbers."""

    def __init__(self, text: str = ""):
        self.intervals: dict[str, list[tuple[int, int]]] = {}
        for part in filter(None, (p.strip() for p in (text or "").replace("\n", "").split(","))):
            uuid, *ranges = part.split(":")
            for r in ranges:
                lo, _, hi = r.partition("-")
                self._add(uuid.lower(), int(lo), int(hi or lo))

    def _add(self, uuid: str, lo: int, hi: int) -> None:
        items = self.intervals.setdefault(uuid, [])
        items.append((lo, hi))
        items.sort()
        merged: list[tuple[int, int]] = []
        for a, b in items:
            if merged and a <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self.intervals[uuid] = merged

    def add(self, gtid: str) -> None:
        """Add one GTID (``uuid:n``)."""
        uuid, _, n = gtid.rpartition(":")
        self._add(uuid.lower(), int(n), int(n))

    def contains(self, gtid: str) -> bool:
        """True if ``gtid`` is in the set."""
        uuid, _, n = gtid.rpartition(":")
        return any(a <= int(n) <= b for a, b in self.intervals.get(uuid.lower(), ()))

    def includes(self, other: MySqlGtidSet) -> bool:
        """True if every transaction of ``other`` is in this set."""
        for uuid, intervals in other.intervals.items():
            have = self.intervals.get(uuid, ())
            for lo, hi in intervals:
                if not any(a <= lo and hi <= b for a, b in have):
                    return False
        return True

    def filtered(self, keep) -> MySqlGtidSet:
        """The set restricted to sources for which ``keep(uuid)`` is true."""
        out = MySqlGtidSet()
        out.intervals = {u: list(v) for u, v in self.intervals.items() if keep(u)}
        return out

    def sources(self) -> list[str]:
        """The server UUIDs the set has transactions of."""
        return list(self.intervals)

    def retain(self, keep: Callable[[str], bool]) -> MySqlGtidSet:
        """The set restricted to sources whose GTIDs pass ``keep`` (a ``gtid.source.includes``/``excludes`` test)."""
        return self.filtered(lambda uuid: keep(f"{uuid}:1"))

    def __str__(self) -> str:
        return ",".join(u + "".join(f":{a}" if a == b else f":{a}-{b}" for a, b in v)
                        for u, v in sorted(self.intervals.items()))


class MariaDbGtidSet:
    """A MariaDB GTID position: domain -> the last ``domain-server-sequence`` of that domain."""

    _GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")

    def __init__(self, text: str = ""):
        self.positions: dict[int, tuple[int, int]] = {}
        for part in filter(None, (p.strip() for p in (text or "").split(","))):
            self.add(part)

    def add(self, gtid: str) -> None:
        """Record ``domain-server-sequence`` as its domain's latest."""
        parts = gtid.split("-")
        if len(parts) == 3 and gtid.isascii() and parts[0].isdigit() and parts[1].isdigit() and parts[2].isdigit():
            self.positions[int(parts[0])] = (int(parts[1]), int(parts[2]))  # the streamer's case: once a transaction
            return
        m = self._GTID.match(gtid.strip())
        if not m:
            raise ValueError(f"not a MariaDB GTID: {gtid!r}")
        domain, server, seq = (int(g) for g in m.groups())
        self.positions[domain] = (server, seq)

    def contains(self, gtid: str) -> bool:
        """True if ``gtid`` is at or before its domain's recorded position."""
        domain, _, seq = (int(g) for g in gtid.split("-"))
        return domain in self.positions and seq <= self.positions[domain][1]

    def includes(self, other: MariaDbGtidSet) -> bool:
        """True if every domain of ``other`` is at or before this position's (seqs grow within a domain)."""
        have = self.positions
        return all(d in have and have[d][1] >= seq for d, (_, seq) in other.positions.items())

    def filtered(self, keep) -> MariaDbGtidSet:
        """The set restricted to domains for which ``keep(str(domain))`` is true."""
        out = MariaDbGtidSet()
        out.positions = {d: p for d, p in self.positions.items() if keep(str(d))}
        return out

    def sources(self) -> list[int]:
        """The GTID domains the position has a transaction of."""
        return list(self.positions)

    def retain(self, keep: Callable[[str], bool]) -> MariaDbGtidSet:
        """The position restricted to domains whose GTIDs pass ``keep`` (a ``gtid.source.includes``/``excludes`` test)."""
        out = MariaDbGtidSet()
        out.positions = {d: (s, n) for d, (s, n) in self.positions.items() if keep(f"{d}-{s}-{n}")}
        return out

    def __str__(self) -> str:
        positions = self.positions
        if len(positions) == 1:  # one domain: the common case, written at every commit
            for d, (s, n) in positions.items():
                return f"{d}-{s}-{n}"
        return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(positions.items()))


def gtid_set(flavor_format: str, text: str = "") -> MySqlGtidSet | MariaDbGtidSet:
    """A GTID set of the given format (``mysql`` or ``mariadb``)."""
    return MariaDbGtidSet(text) if flavor_format == "mariadb" else MySqlGtidSet(text)


def gtid_source(flavor_format: str, gtid: str) -> str:
    """The source a GTID comes from: MySQL's server UUID, MariaDB's ``domain-server``."""
    if flavor_format == "mariadb":
        return gtid.rpartition("-")[0]
    return gtid.rpartition(":")[0].lower()


def source_filter(flavor_format: str, includes: list[re.Pattern[str]] | None,
                  excludes: list[re.Pattern[str]] | None) -> Callable[[str], bool] | None:
    """``gtid.source.includes``/``excludes`` as a test on a GTID (None when neither is set)."""
    if includes:
        return lambda gtid: any(p.fullmatch(gtid_source(flavor_format, gtid)) for p in includes)
    if excludes:
        return lambda gtid: not any(p.fullmatch(gtid_source(flavor_format, gtid)) for p in excludes)
    return None

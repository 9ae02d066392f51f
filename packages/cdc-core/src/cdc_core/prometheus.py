"""Serving connector metrics at ``http://127.0.0.1:<metrics.port>/metrics`` in Prometheus format.

Names follow the common JMX-exporter mapping of Debezium's MBeans:
``debezium_metrics_<Attribute>{context="snapshot|streaming|...", name="<topic.prefix>", plugin="<connector>"}``
(connector-specific contexts such as ``schema-history`` too), plus a label per ``custom.metric.tags`` pair,
as the exporter maps the keys Debezium appends to the MBean name. Like the JMX exporter, string attributes
are left out unless their group maps them to numbers. Values are read from the metrics objects at scrape time, so events pay nothing for it.
"""

from __future__ import annotations

from typing import Any

from cdc_core.metric_tags import label_name
from cdc_core.metrics import ConnectorMetrics


class _Collector:
    def __init__(self, metrics: ConnectorMetrics):
        self.metrics = metrics

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        tags = self.metrics.tags
        labels = ["context", "name", "plugin", *(label_name(k) for k in tags)]
        extra = list(tags.values())
        families: dict[str, Any] = {}
        for context, values in self.metrics.numeric_values().items():
            for attr, value in values.items():
                if isinstance(value, bool):
                    value = 1 if value else 0
                if isinstance(value, dict) and attr == "RowsScanned":
                    fam = families.setdefault(attr, GaugeMetricFamily(
                        f"debezium_metrics_{attr}", f"Debezium {attr}", labels=[*labels, "table"]))
                    for table, rows in value.items():
                        fam.add_metric([context, self.metrics.server, self.metrics.plugin, *extra, table], rows)
                    continue
                if not isinstance(value, (int, float)):
                    continue
                fam = families.setdefault(attr, GaugeMetricFamily(f"debezium_metrics_{attr}", f"Debezium {attr}", labels=labels))
                fam.add_metric([context, self.metrics.server, self.metrics.plugin, *extra], value)
        yield from families.values()


def serve(metrics: ConnectorMetrics, port: int, host: str = "127.0.0.1"):
    """Start the HTTP endpoint in a daemon thread; returns the server (``shutdown()`` stops it)."""
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(metrics))
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server

"""Provisioning for the metrics/traces/logs stack: Jinja templates rendered to config files.

``render.render_all(params, out_dir)`` writes Prometheus, Tempo, Loki, Alloy,
Grafana and collector settings files; ``local_prometheus.start_local_prometheus``
runs Debian's/any ``prometheus`` binary with the rendered scrape config.
Nothing here imports Jinja at module import time (the CLI imports this package
to build its parser).
"""

from __future__ import annotations

"""Agent, tool, workflow and MCP spans: what they are and what the collector counts of them.

Contract of the package (docs/attribute-mapping.md, "Agents, tools, workflows, MCP"):

- :mod:`.classify` turns one OTLP span that is no LLM call into an :class:`.classify.AgentOp`
  (kind, name, tool type, MCP method, error type, duration) or None. Pure, never raises, and
  costs a few hash probes on a span that carries none of the marker keys.
- :mod:`.toolturn` says whether an LLM span reported as ``stop`` holds a tool-call part in
  its output (then it is a tool-call turn).
- :mod:`.dedup` finds the LLM spans that wrap another LLM span of the same call (an agent
  SDK's span over the client library's): they are forwarded, not counted.

Nothing here imports prometheus_client: the exporter (collector/exporters/agents.py) reads
the records.
"""

"""The pipeline below every door: batches, the stage contracts, the chain, the Pipeline.

Doors (the OTLP receiver, the REST API, the test-call bridge) build a :class:`Batch`
and call :meth:`Pipeline.submit`; processors enrich it; exporters take it. This
package imports no door and no exporter.
"""

from __future__ import annotations

from llm_observe.pipeline.chain import LOGGED_FAILURES, ProcessorChain, ProcessorStats
from llm_observe.pipeline.contracts import Batch, Exporter, Origin, Processor
from llm_observe.pipeline.pipeline import Backpressure, Pipeline
from llm_observe.pipeline.placement import Place, on_loop, place, run_placed

__all__ = ["LOGGED_FAILURES", "Backpressure", "Batch", "Exporter", "Origin", "Pipeline", "Place",
           "Processor", "ProcessorChain", "ProcessorStats", "on_loop", "place",
           "run_placed"]

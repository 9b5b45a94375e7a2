"""One loaded embedding model: onnxruntime session + tokenizer + length-bucketed batching.

:func:`load` finds the weights package, takes the graph from the cache (building it on first
use) and opens the onnxruntime session. ``onnx``/``safetensors`` and the graph builders are
imported only when a graph must be built, so a start with a cached graph imports just
onnxruntime, numpy and tokenizers (the 1 s cold-start budget).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
from numpy.typing import NDArray
from tokenizers import Tokenizer

from llm_observe.embedding import batching, cache, cpu, weights
from llm_observe.embedding.tokenizer import encode, load_tokenizer

log = logging.getLogger(__name__)

FP32 = "fp32"
INT8 = "int8"


@dataclass(frozen=True, slots=True)
class PlanCosts:
    """The batching cost model of one variant (see batching.plan_groups), measured here."""

    run_overhead_tokens: float
    attention_factor: float


# Fitted (least squares on run time = overhead + tokens + B*S^2 over 66 group shapes, CPU
# time of one thread) on a 2-core AVX-512 VNNI x86 box: fp32 0.21 ms/token, attention 0.0018,
# overhead ~7 tokens; int8 0.13 ms/token, so attention padding (still fp32) weighs more:
# 0.0031, overhead ~14 tokens. Overheads doubled for the thread-pool sync of 2 threads.
PLAN_COSTS = {
    FP32: PlanCosts(run_overhead_tokens=15.0, attention_factor=0.002),
    INT8: PlanCosts(run_overhead_tokens=25.0, attention_factor=0.003),
}


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What a load did, for logs and the benchmark."""

    graph_path: Path | None
    built: bool
    seconds: float


class EmbeddingModel:
    """A ready model. ``encode`` is not locked: the Embedder serialises calls."""

    def __init__(self, session: ort.InferenceSession, tokenizer: Tokenizer, variant: str,
                 max_batch: int, dimension: int) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.variant = variant
        self.max_batch = max_batch
        self.dimension = dimension
        self.costs = PLAN_COSTS[variant]

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-length embeddings, one row per text, in input order."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        ids = encode(self.tokenizer, texts)
        groups = batching.plan_groups([len(s) for s in ids], self.max_batch,
                                      self.costs.run_overhead_tokens,
                                      self.costs.attention_factor)
        for group in groups:
            (vectors,) = self.session.run(None, batching.pack([ids[i] for i in group]))
            out[group] = vectors
        return out


def session_options(threads: int) -> ort.SessionOptions:
    """Graph optimisations on; ``threads`` intra-op threads (0 = onnxruntime's default)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # our graphs trigger no warnings worth a log line
    return options


def build_graph(files: weights.ModelFiles, variant: str) -> bytes:
    """Serialised ONNX graph of ``variant``, built from the installed weights."""
    from llm_observe.embedding import graph, quantize  # onnx + safetensors: build path only

    if variant == INT8:
        model = quantize.build_int8(files, levels=cpu.int8_weight_levels())
    else:
        model = graph.build(files)
    return bytes(model.SerializeToString())


def cache_variant(variant: str) -> str:
    """The variant as the graph cache names it: the int8 graph depends on this CPU's kernels."""
    if variant == INT8 and cpu.int8_weight_levels() != 127:
        return f"{INT8}-w{cpu.int8_weight_levels().bit_length() + 1}"
    return variant


def load(*, quantized: bool, threads: int, max_batch: int,
         cache_dir: str | None) -> tuple[EmbeddingModel, LoadReport]:
    """Open the model, building and caching its graph if needed.

    Raises weights.WeightsNotFound when the weights package is missing. A cache directory we
    cannot write only costs the cache: the graph is then built in memory every start.
    """
    start = time.perf_counter()
    files = weights.locate()
    config = files.config()
    variant = INT8 if quantized else FP32
    path = cache.graph_path(cache.cache_root(cache_dir), weights.weights_sha256(files),
                            cache_variant(variant))
    options = session_options(threads)
    providers = ["CPUExecutionProvider"]
    graph_path: Path | None
    try:
        graph_path, built = cache.load_or_build(path, lambda: build_graph(files, variant))
        session = ort.InferenceSession(str(graph_path), options, providers=providers)
    except OSError as exc:
        log.warning("embedding graph cache %s unusable (%s); building in memory", path, exc)
        graph_path, built = None, True
        session = ort.InferenceSession(build_graph(files, variant), options, providers=providers)
    tokenizer = load_tokenizer(files, config.max_seq_length)
    model = EmbeddingModel(session, tokenizer, variant, max_batch, config.hidden_size)
    model.encode(["warm up"])  # first run sizes the arena and packs the weights
    return model, LoadReport(graph_path, built, time.perf_counter() - start)

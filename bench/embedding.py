"""Embedding benchmark: ours (fp32, int8) against sentence-transformers on the same texts.

    python -m bench.embedding            # 1,000 prompts; sentence-transformers if installed
    python -m bench.embedding --quick    # 100 prompts, smoke run

Figures (one JSON line each): sentences/s at batch 1 and 32, p50/p99 single-text latency,
process start to first vector (cached graph), first start with a graph build, peak RSS,
cosine against sentence-transformers on the bench texts and on the committed fixture, and
ratios against sentence-transformers measured in the same run. The machine is shared, so the
systems are interleaved chunk by chunk: a load spike slows all of them, not one.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench._common import emit, quick
from llm_observe.embedding import Embedder, EmbeddingConfig

BENCH = "embedding"
ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "embedding_reference.json"
ST = "sentence-transformers"
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # sentence-transformers must never reach a hub

_SYSTEMS = [
    "You are a helpful assistant. Answer concisely and cite sources when you can.",
    "You are a senior site-reliability engineer. Be precise, list commands, never guess.",
    "You are a support agent for an online shop. Be polite; never promise refunds.",
    "You are a code reviewer. Point out bugs, security problems and missing tests.",
]
_ASKS = ["Summarise", "Explain", "Rewrite in a friendly tone", "Translate into French",
         "Classify the sentiment of", "Extract the action items from", "Write tests for",
         "Find the bug in", "Draft a reply about", "List three risks in"]
_SUBJECTS = ["the billing service", "our Kubernetes cluster", "the checkout page",
             "a Postgres replica", "the mobile app", "the fraud model", "a customer's invoice",
             "the onboarding email", "the quarterly report", "a flaky integration test"]
_FACTS = [
    "The request timed out after thirty seconds while the upstream kept the connection open.",
    "Customers in the EU region reported double charges on orders placed before 09:15 UTC.",
    "Latency at the 99th percentile doubled after the deploy while the median stayed flat.",
    "The model answered in Spanish although the user wrote in English.",
    "Our retry policy uses exponential backoff with jitter and gives up after five attempts.",
    "The invoice lists three line items, a discount and a shipping fee that was waived.",
    "The migration adds a nullable column and backfills it in batches of ten thousand rows.",
    "The feature flag is enabled for five percent of traffic in the canary region.",
    "We saw a spike of 429 responses from the provider around midnight.",
]
_CODE = [
    "def handler(event, ctx):\n    body = json.loads(event['body'])\n    return {'ok': True}\n",
    "for (let i = 0; i < rows.length; i++) {\n  total += rows[i].price * rows[i].qty;\n}\n",
    "SELECT user_id, count(*) FROM orders WHERE created_at > now() - interval '1 day';\n",
]


def prompts(n: int, seed: int = 7) -> list[str]:
    """Realistic LLM prompts: chat questions, system+context, RAG passages, code review.

    Token lengths (MiniLM tokenizer): median ~70, mean ~100, ~12% past the 256 window.
    """
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind, ask = rng.random(), f"{rng.choice(_ASKS)} {rng.choice(_SUBJECTS)}."
        if kind < 0.35:
            out.append(ask + (" " + rng.choice(_FACTS) if rng.random() < 0.5 else ""))
        elif kind < 0.65:
            facts = " ".join(rng.choice(_FACTS) for _ in range(rng.randint(1, 4)))
            out.append(f"{rng.choice(_SYSTEMS)}\nUser: {ask}\n{facts}")
        elif kind < 0.85:
            passages = "\n".join(
                f"[{k}] " + " ".join(rng.choice(_FACTS) for _ in range(rng.randint(2, 5)))
                for k in range(rng.randint(2, 6)))
            out.append(f"{rng.choice(_SYSTEMS)}\nContext:\n{passages}\nQuestion: {ask}")
        else:
            code = "".join(rng.choice(_CODE) for _ in range(rng.randint(1, 6)))
            out.append(f"{ask}\n```\n{code}```")
    return out


Encode = Callable[[list[str]], np.ndarray]


def ours(cache_dir: str, quantized: bool, threads: int = 0) -> Encode:
    embedder = Embedder(EmbeddingConfig(cache_dir=cache_dir, quantized=quantized,
                                        threads=threads))
    embedder.start_warmup()
    if not embedder.wait(600):
        raise SystemExit(f"embedder failed: {embedder.error}")
    return lambda texts: np.asarray(embedder.embed_batch(texts), dtype=np.float32)


def sentence_transformers(threads: int = 0) -> Encode | None:
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    from llm_observe.embedding import weights

    if threads:
        torch.set_num_threads(threads)

    model = SentenceTransformer(str(weights.locate().directory), device="cpu")
    return lambda texts: model.encode(texts, batch_size=32, convert_to_numpy=True)


# After a call, torch's OpenMP threads and onnxruntime's pool spin for up to ~200 ms before
# sleeping; without a pause the next system would share the cores with that spinning.
SWITCH_PAUSE_S = 0.4


def interleaved(systems: dict[str, Encode], texts: Sequence[str], batch: int,
                chunk: int = 128, clock: Callable[[], float] = time.perf_counter,
                ) -> dict[str, list[float]]:
    """Per-call seconds of each system, alternating systems every ``chunk`` texts."""
    calls: dict[str, list[float]] = {name: [] for name in systems}
    for start in range(0, len(texts), chunk):
        part = texts[start:start + chunk]
        for name, encode in systems.items():
            time.sleep(SWITCH_PAUSE_S)
            for i in range(0, len(part), batch):
                t = clock()
                encode(list(part[i:i + batch]))
                calls[name].append(clock() - t)
    return calls


def throughput(systems: dict[str, Encode], texts: Sequence[str]) -> None:
    for batch in (1, 32):
        calls = interleaved(systems, texts, batch)
        rates = {name: len(texts) / sum(c) for name, c in calls.items()}
        for name, rate in rates.items():
            emit(BENCH, "throughput", rate, "sentences/s", system=name, batch=batch,
                 texts=len(texts))
            if batch == 1:
                ms = sorted(x * 1000 for x in calls[name])
                emit(BENCH, "latency_p50", statistics.median(ms), "ms", system=name)
                emit(BENCH, "latency_p99", ms[min(len(ms) - 1, int(len(ms) * 0.99))], "ms",
                     system=name)
            if ST in rates and name != ST:
                emit(BENCH, "throughput_ratio", rate / rates[ST], "x", system=name,
                     baseline=ST, batch=batch)


def cpu_throughput(systems: dict[str, Encode], texts: Sequence[str]) -> None:
    """Sentences per CPU-second, every system on one thread: the work each one does, which a
    shared, oversubscribed machine distorts far less than wall time of two threads."""
    for batch in (1, 32):
        calls = interleaved(systems, texts, batch, clock=time.process_time)
        rates = {name: len(texts) / sum(c) for name, c in calls.items()}
        for name, rate in rates.items():
            emit(BENCH, "cpu_throughput_1thread", rate, "sentences/cpu-s", system=name,
                 batch=batch, texts=len(texts))
            if ST in rates and name != ST:
                emit(BENCH, "cpu_throughput_1thread_ratio", rate / rates[ST], "x",
                     system=name, baseline=ST, batch=batch)


def accuracy(systems: dict[str, Encode], texts: Sequence[str]) -> None:
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))["items"]
    ref = np.array([i["vector"] for i in fixture], dtype=np.float32)
    st_vectors = systems[ST](list(texts)) if ST in systems else None
    for name, encode in systems.items():
        if name == ST:
            continue
        got = encode([i["text"] for i in fixture])
        cos = np.sum(got * ref, axis=1) / np.linalg.norm(ref, axis=1)
        # emit() rounds to 3 decimals; "exact" keeps the digits that matter for cosines.
        emit(BENCH, "cosine_fixture_min", float(cos.min()), "cosine", system=name,
             texts=len(fixture), exact=f"{cos.min():.7f}")
        emit(BENCH, "cosine_fixture_mean", float(cos.mean()), "cosine", system=name,
             exact=f"{cos.mean():.7f}")
        if st_vectors is not None:
            got = encode(list(texts))
            cos = np.sum(got * st_vectors, axis=1) / np.linalg.norm(st_vectors, axis=1)
            emit(BENCH, "cosine_vs_st_min", float(cos.min()), "cosine", system=name,
                 texts=len(texts), exact=f"{cos.min():.7f}")
            emit(BENCH, "cosine_vs_st_mean", float(cos.mean()), "cosine", system=name,
                 exact=f"{cos.mean():.7f}")


_COLD = textwrap.dedent("""
    import json, sys, time
    start = float(sys.argv[1])
    kind, cache = sys.argv[2], sys.argv[3]
    texts = json.loads(sys.stdin.read())
    if kind == "st":
        from sentence_transformers import SentenceTransformer
        from llm_observe.embedding import weights
        m = SentenceTransformer(str(weights.locate().directory), device="cpu")
        first = m.encode(texts[:1]); first_at = time.time()
        m.encode(texts, batch_size=32)
    else:
        from llm_observe.embedding import Embedder, EmbeddingConfig
        e = Embedder(EmbeddingConfig(cache_dir=cache, quantized=kind == "int8"))
        e.start_warmup()
        assert e.wait(600), e.error
        first = e.embed(texts[:1]); first_at = time.time()
        e.embed_batch(texts)
    # VmHWM, not ru_maxrss: Linux carries the parent's ru_maxrss over fork + exec.
    status = open("/proc/self/status").read().splitlines()
    hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(json.dumps({"first_vector_s": first_at - start, "peak_rss_mb": hwm / 1024}))
""")


def cold(kind: str, cache: str, texts: Sequence[str]) -> dict[str, float]:
    """Process start to first vector, and peak RSS after a batch of 32, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _COLD, repr(time.time()), kind, cache],
                          input=json.dumps(list(texts[:32])), capture_output=True, text=True,
                          env=env, check=True, timeout=900)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cold_starts(kinds: Sequence[str], cache: str, texts: Sequence[str]) -> None:
    with tempfile.TemporaryDirectory() as fresh:
        for kind in ("fp32", "int8"):
            built = cold(kind, fresh, texts)
            emit(BENCH, "first_start_with_build", built["first_vector_s"], "s",
                 system=f"ours-{kind}")
    runs = {kind: [cold(kind, cache, texts) for _ in range(3)] for kind in kinds}
    starts = {k: statistics.median(r["first_vector_s"] for r in v) for k, v in runs.items()}
    names = {"fp32": "ours-fp32", "int8": "ours-int8", "st": ST}
    for kind, r in runs.items():
        emit(BENCH, "cold_start_to_first_vector", starts[kind], "s", system=names[kind],
             graph="cached" if kind != "st" else "n/a")
        emit(BENCH, "peak_rss", max(x["peak_rss_mb"] for x in r), "MiB", system=names[kind])
    if "st" in starts:
        for kind in ("fp32", "int8"):
            emit(BENCH, "cold_start_ratio", starts["st"] / starts[kind], "x",
                 system=names[kind], baseline=ST, meaning="baseline seconds / ours")


def main() -> None:
    texts = prompts(100 if quick() else 1000)
    with tempfile.TemporaryDirectory() as cache:
        systems: dict[str, Encode] = {"ours-fp32": ours(cache, False),
                                      "ours-int8": ours(cache, True)}
        st = sentence_transformers()
        if st is not None:
            systems[ST] = st
        else:
            emit(BENCH, "note", 0, "", message="sentence-transformers not installed: no baseline")
        for encode in systems.values():
            encode(list(texts[:32]))  # warm every system before timing
        throughput(systems, texts)
        accuracy(systems, texts)
        single: dict[str, Encode] = {"ours-fp32": ours(cache, False, threads=1),
                                     "ours-int8": ours(cache, True, threads=1)}
        st_single = sentence_transformers(threads=1) if st is not None else None
        if st_single is not None:
            single[ST] = st_single
        cpu_throughput(single, texts)
        cold_starts(["fp32", "int8"] + (["st"] if st is not None else []), cache, texts)


if __name__ == "__main__":
    main()

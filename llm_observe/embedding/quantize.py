"""The opt-in int8 variant: smoothed, per-token dynamic int8 projections; FFN output in fp32.

Why not ``onnxruntime.quantization.quantize_dynamic``: it gives each activation matrix one
scale, and BERT's LayerNorm outputs carry a few outlier channels (here channel 99 reaches ~28
while the median channel stays under 2), so every other channel keeps only a few int8 levels;
the sentence vectors fall to cosine 0.905 (0.980 with per-channel weights) against fp32. One
range per batch also lets one extreme token of one text coarsen every other text in the batch;
the 2-3-token texts, whose vector is the mean of [CLS], one token and [SEP], suffer most.

What we do instead, each step measured on this model (docs/embeddings.md has the numbers):

- **Smoothing** (SmoothQuant, Xiao et al. 2023, arXiv:2211.10438): divide each input channel
  ``k`` by ``s_k = amax_k^a / wmax_k^(1-a)`` and multiply the weights' column ``k`` by the same
  factor, which moves the outliers into the weights where per-channel scales absorb them.
  ``amax_k`` comes from a calibration pass over calibration.TEXTS; ``a`` = 0.7 was best. For
  the attention output projection the division is folded into the value rows of the QKV
  weights (attention is linear in V), so it costs nothing at run time; for QKV and the FFN
  input it is one ``Mul`` over ``[T, 384]``.
- **Per-token range**: each row is divided by its own max |x| before quantising, and the
  product multiplied back after, so every token uses the full int8 range whatever else is in
  the batch. Then ``DynamicQuantizeMatMul`` (onnxruntime contrib op: u8 activations, s8
  weights with one scale per output channel, the VNNI u8 x s8 kernel) does the product. The
  ranges are measured on every batch, so calibration only sets the balance; it never clips.
  (A per-axis ``QuantizeLinear`` would express this directly but is ~10x slower than a Gemm.)
- **The FFN output projection stays fp32**: its input is the GELU output, where no per-channel
  division can be folded, and quantising it cost the most accuracy for the least speed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from llm_observe.embedding import batching, calibration, graph
from llm_observe.embedding.graph import Array, GraphBuilder, fp32_linear
from llm_observe.embedding.tokenizer import encode, load_tokenizer
from llm_observe.embedding.weights import ModelFiles

ALPHA = 0.7
QUANTIZED_KINDS = frozenset({"qkv", "ffn_in", "attn_out"})
# The guard encoder (llm_observe/guard) quantises the FFN output too: 0.72x its CPU time
# for a 256-token text with its recall and false alarms unchanged (docs/scanning.md, Cost).
ALL_KINDS = QUANTIZED_KINDS | {"ffn_out"}
_FLOOR = 1e-5


def key(kind: str, layer: int) -> str:
    """Name of one linear layer in calibration maps."""
    return f"l{layer}_{kind}"


@dataclass(frozen=True, slots=True)
class SmoothInt8Linear:
    """A :class:`~llm_observe.embedding.graph.LinearEmitter` for the int8 variant.

    ``factors`` maps :func:`key` to the smoothing factors ``s`` of that layer's input channels.
    """

    factors: Mapping[str, Array]
    levels: int = 127  # weight range +-levels; 63 on CPUs whose kernels saturate (cpu.py)
    kinds: frozenset[str] = QUANTIZED_KINDS  # the rest stay fp32 Gemms

    def __call__(self, g: GraphBuilder, x: str, weight: Array, bias: Array, kind: str,
                 layer: int) -> str:
        if kind not in self.kinds:
            return fp32_linear(g, x, weight, bias, kind, layer)
        if kind == "qkv" and key("attn_out", layer) in self.factors:
            # Pre-divide V so the attention context arrives already smoothed for attn_out.
            weight, bias = weight.copy(), bias.copy()
            third = weight.shape[0] // 3
            s_ctx = self.factors[key("attn_out", layer)]
            weight[2 * third:] /= s_ctx[:, None]
            bias[2 * third:] /= s_ctx
        tag = key(kind, layer)
        s = self.factors.get(tag)
        if s is not None:
            weight = weight * s[None, :]
            if kind != "attn_out":
                x = g.op("Mul", [x, g.const(f"{tag}_inv_s", (1.0 / s).astype(np.float32))],
                         f"{tag}_smooth")
        # Per-token range: max |x| of each row, from ReduceMax/ReduceMin (no |x| copy).
        high = g.op("ReduceMax", [x], f"{tag}_max", axes=[1], keepdims=1)
        low = g.op("Neg", [g.op("ReduceMin", [x], f"{tag}_min", axes=[1], keepdims=1)],
                   f"{tag}_negmin")
        row = g.op("Max", [high, low, g.const("tiny", np.array(1e-6, np.float32))], f"{tag}_row")
        unit = g.op("Div", [x, row], f"{tag}_unit")
        qmax = float(self.levels)
        w_scale = np.maximum(np.abs(weight).max(axis=1), 1e-12) / qmax   # per output channel
        w_q = np.clip(np.rint(weight / w_scale[:, None]), -qmax, qmax).astype(np.int8)
        product = g.op("DynamicQuantizeMatMul",
                       [unit, g.const(f"{tag}_wq", np.ascontiguousarray(w_q.T)),
                        g.const(f"{tag}_ws", w_scale.astype(np.float32))],
                       f"{tag}_dq", domain="com.microsoft")
        return g.op("Add", [g.op("Mul", [product, row], f"{tag}_rescale"),
                            g.const(f"{tag}_b", bias)], f"{tag}_out")


def smoothing_factors(weights: Mapping[str, Array], channel_max: Mapping[str, Array],
                      num_layers: int, alpha: float = ALPHA) -> dict[str, Array]:
    """Per-input-channel factors ``amax^a / wmax^(1-a)`` for every quantised layer."""
    names = {"qkv": "attention.self.query", "attn_out": "attention.output.dense",
             "ffn_in": "intermediate.dense"}
    factors: dict[str, Array] = {}
    for layer in range(num_layers):
        for kind, module in names.items():
            w = weights[f"encoder.layer.{layer}.{module}.weight"]
            if kind == "qkv":  # Q, K and V share the input: take the max over all three
                w = np.concatenate([weights[f"encoder.layer.{layer}.attention.self.{p}.weight"]
                                    for p in ("query", "key", "value")])
            wmax = np.maximum(np.abs(w).max(axis=0), _FLOOR)
            amax = np.maximum(channel_max[key(kind, layer)], _FLOOR)
            factors[key(kind, layer)] = (amax**alpha / wmax ** (1.0 - alpha)).astype(np.float32)
    return factors


@dataclass(slots=True)
class _Recorder:
    """fp32 emitter that remembers every linear layer's input value name."""

    inputs: dict[str, str]

    def __call__(self, g: GraphBuilder, x: str, weight: Array, bias: Array, kind: str,
                 layer: int) -> str:
        self.inputs[key(kind, layer)] = x
        return fp32_linear(g, x, weight, bias, kind, layer)


def calibrate(files: ModelFiles, weights: Mapping[str, Array],
              texts: Sequence[str] = calibration.TEXTS,
              num_layers: int | None = None) -> dict[str, Array]:
    """Per-channel max |activation| at each linear layer's input over ``texts`` (fp32 run)."""
    recorder = _Recorder({})
    model = graph.build(files, recorder, dict(weights), num_layers)
    for name, value in recorder.inputs.items():
        # Appended after every existing node, so the graph stays topologically sorted.
        out = f"amax_{name}"
        model.graph.node.append(helper.make_node("Abs", [value], [value + "_abs"]))
        model.graph.node.append(helper.make_node("ReduceMax", [value + "_abs"], [out],
                                                 axes=[0], keepdims=0))
        model.graph.output.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    tokenizer = load_tokenizer(files, files.config().max_seq_length)
    names = list(recorder.inputs)
    maxima = {n: np.zeros(0, np.float32) for n in names}
    for ids in encode(tokenizer, texts):
        outs = session.run([f"amax_{n}" for n in names], batching.pack([ids]))
        for n, value in zip(names, outs, strict=True):
            maxima[n] = value if maxima[n].size == 0 else np.maximum(maxima[n], value)
    return maxima


def build_int8(files: ModelFiles, weights: Mapping[str, Array] | None = None,
               levels: int = 127, kinds: frozenset[str] = QUANTIZED_KINDS,
               num_layers: int | None = None) -> onnx.ModelProto:
    """Calibrate, then build the int8 graph (the fp32 graph's wiring, smoothed int8 linears)
    with weights in +-``levels`` (see cpu.int8_weight_levels); ``kinds`` are the linear
    layers made int8 (``ffn_out`` has no smoothing factor: per-token range only);
    ``num_layers`` as in graph.build."""
    w = dict(weights) if weights is not None else graph.load_weights(files)
    layers = files.config().num_layers if num_layers is None else num_layers
    factors = smoothing_factors(w, calibrate(files, w, num_layers=layers), layers)
    return graph.build(files, SmoothInt8Linear(factors, levels, kinds), w, layers)

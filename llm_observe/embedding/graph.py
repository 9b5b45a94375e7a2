"""Build the MiniLM (BERT) sentence-embedding graph from safetensors with the onnx helper API.

The graph is written for this workload, not exported from torch:

- **No padding in the dense layers.** Tokens arrive *packed* (``input_ids`` is ``[T]``, the
  real tokens of every text back to back). Every projection and the feed-forward block run on
  ``[T, hidden]``; only the attention scores need the ``[B, S]`` layout, reached with one
  ``Gather`` through ``pad_map`` and left again through ``token_index``. Padded slots point at
  token 0 and are masked out by ``key_mask`` (MultiHeadAttention's key-padding mask), so
  they cost attention work but no dense work.
- **Pooling in the graph.** ``pool`` is a ``[B, T]`` matrix of 1/len weights, so mean pooling
  over the attention mask (sentence-transformers ``Pooling``, mode mean) is one MatMul, followed
  by the L2 normalisation of its ``Normalize`` module (``x / max(||x||, 1e-12)``).
- Folded constants: QKV in one ``[3H, H]`` Gemm, 1/sqrt(head_dim) folded into the query weights,
  the (always zero) token-type row folded into the position table.

Every linear layer goes through a :class:`LinearEmitter`, so the int8 variant (quantize.py)
swaps the projections without a second copy of the BERT wiring.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

from llm_observe.embedding.weights import BertConfig, ModelFiles

OPSET = 17  # LayerNormalization is a standard op from 17 on
OUTPUT = "embedding"
INPUTS = ("input_ids", "position_ids", "token_index", "pad_map", "key_mask", "pool")

Array = NDArray[np.float32]


class GraphBuilder:
    """Collects nodes and initializers; hands out unique value names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, value: NDArray[np.generic]) -> str:
        name = self.name(hint)
        # np.ascontiguousarray would turn a 0-d scalar into shape [1].
        self.initializers.append(numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str = "", domain: str = "",
           **attrs: Any) -> str:
        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, domain=domain,
                                           **attrs))
        return out


class LinearEmitter(Protocol):
    """Emits ``x @ weight.T + bias`` for a packed ``[T, in]`` input; returns the output name.

    ``weight`` has torch's ``[out, in]`` layout; ``kind`` is one of ``qkv``, ``attn_out``,
    ``ffn_in``, ``ffn_out`` and ``layer`` its index, so a quantiser can keep layers in fp32.
    """

    def __call__(self, g: GraphBuilder, x: str, weight: Array, bias: Array, kind: str,
                 layer: int) -> str: ...


def fp32_linear(g: GraphBuilder, x: str, weight: Array, bias: Array, kind: str,
                layer: int) -> str:
    """Plain fp32 Gemm; transB keeps torch's layout and MLAS pre-packs it at load."""
    return g.op("Gemm", [x, g.const(f"l{layer}_{kind}_w", weight),
                         g.const(f"l{layer}_{kind}_b", bias)], f"l{layer}_{kind}", transB=1)


def load_weights(files: ModelFiles) -> dict[str, Array]:
    """All tensors of model.safetensors as float32 numpy arrays (int tensors dropped)."""
    tensors = load_file(str(files.weights))
    return {k: v.astype(np.float32) for k, v in tensors.items() if v.dtype.kind == "f"}


def build(files: ModelFiles, linear: LinearEmitter = fp32_linear,
          weights: dict[str, Array] | None = None,
          num_layers: int | None = None) -> onnx.ModelProto:
    """Build the sentence-embedding model: packed token ids in, unit 384-d vectors out.

    ``num_layers`` keeps only the first layers (the guard tier's cut-down student, whose
    feed-forward width is read from its weights); default: all of the config's."""
    cfg = files.config()
    w = weights if weights is not None else load_weights(files)
    g = GraphBuilder()
    hidden = _embeddings(g, cfg, w)
    for i in range(cfg.num_layers if num_layers is None else num_layers):
        hidden = _layer(g, cfg, w, hidden, i, linear)
    pooled = g.op("MatMul", ["pool", hidden], "mean_pool")
    norm = g.op("ReduceL2", [pooled], "l2", axes=[1], keepdims=1)
    norm = g.op("Max", [norm, g.const("eps", np.array(1e-12, np.float32))], "l2_clamped")
    g.nodes.append(helper.make_node("Div", [pooled, norm], [OUTPUT], name=OUTPUT))
    return _model(g, cfg)


def _embeddings(g: GraphBuilder, cfg: BertConfig, w: dict[str, Array]) -> str:
    word = g.op("Gather", [g.const("word_emb", w["embeddings.word_embeddings.weight"]),
                           "input_ids"], "word", axis=0)
    # Every text is one segment, so token_type_ids are all 0: fold that row into positions.
    pos_table = (w["embeddings.position_embeddings.weight"]
                 + w["embeddings.token_type_embeddings.weight"][0])
    pos = g.op("Gather", [g.const("pos_emb", pos_table), "position_ids"], "pos", axis=0)
    summed = g.op("Add", [word, pos], "emb_sum")
    return _layer_norm(g, cfg, w, summed, "embeddings.LayerNorm")


def _layer_norm(g: GraphBuilder, cfg: BertConfig, w: dict[str, Array], x: str,
                prefix: str) -> str:
    return g.op("LayerNormalization", [x, g.const("ln_g", w[f"{prefix}.weight"]),
                                       g.const("ln_b", w[f"{prefix}.bias"])],
                "ln", axis=-1, epsilon=cfg.layer_norm_eps)


def _layer(g: GraphBuilder, cfg: BertConfig, w: dict[str, Array], x: str, i: int,
           linear: LinearEmitter) -> str:
    p = f"encoder.layer.{i}."
    scale = 1.0 / math.sqrt(cfg.hidden_size // cfg.num_heads)
    qkv_w = np.concatenate([w[p + "attention.self.query.weight"] * scale,
                            w[p + "attention.self.key.weight"],
                            w[p + "attention.self.value.weight"]])
    qkv_b = np.concatenate([w[p + "attention.self.query.bias"] * scale,
                            w[p + "attention.self.key.bias"],
                            w[p + "attention.self.value.bias"]])
    qkv = linear(g, x, qkv_w, qkv_b, "qkv", i)
    ctx = _attention(g, cfg, qkv, i)
    attn = linear(g, ctx, w[p + "attention.output.dense.weight"],
                  w[p + "attention.output.dense.bias"], "attn_out", i)
    # Add + LayerNormalization measured faster here than the contrib SkipLayerNormalization.
    x = _layer_norm(g, cfg, w, g.op("Add", [attn, x], "res1"), p + "attention.output.LayerNorm")
    inner = linear(g, x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"],
                   "ffn_in", i)
    # hidden_act "gelu" in BERT is the exact erf form; ORT fuses this pattern into Gelu.
    half = g.op("Mul", [inner, g.const("half", np.array(0.5, np.float32))], "gelu_half")
    erf = g.op("Erf", [g.op("Div", [inner, g.const("sqrt2", np.array(math.sqrt(2), np.float32))],
                            "gelu_div")], "gelu_erf")
    act = g.op("Mul", [half, g.op("Add", [erf, g.const("one", np.array(1.0, np.float32))],
                                  "gelu_add")], "gelu")
    out = linear(g, act, w[p + "output.dense.weight"], w[p + "output.dense.bias"], "ffn_out", i)
    return _layer_norm(g, cfg, w, g.op("Add", [out, x], "res2"), p + "output.LayerNorm")


def _attention(g: GraphBuilder, cfg: BertConfig, qkv: str, i: int) -> str:
    """Multi-head self-attention on the padded layout; returns packed ``[T, hidden]``.

    ORT's contrib MultiHeadAttention (CPU kernel) takes the key-padding mask directly and
    needs no head transposes; the query scale is already folded into the weights.
    """
    padded = g.op("Gather", [qkv, "pad_map"], f"l{i}_pad", axis=0)  # [B, S, 3H]
    q, k, v = (g.name(f"l{i}_{part}") for part in "qkv")
    g.nodes.append(helper.make_node("Split", [padded, g.const("thirds", np.array(
        [cfg.hidden_size] * 3, np.int64))], [q, k, v], name=g.name(f"l{i}_split"), axis=2))
    ctx = g.op("MultiHeadAttention", [q, k, v, "", "key_mask"], f"l{i}_mha",
               domain="com.microsoft", num_heads=cfg.num_heads, scale=1.0)  # [B, S, H]
    flat = g.op("Reshape", [ctx, g.const("flat", np.array([-1, cfg.hidden_size], np.int64))],
                f"l{i}_ctx_flat")                                    # [B*S, H]
    return g.op("Gather", [flat, "token_index"], f"l{i}_unpad", axis=0)


def _model(g: GraphBuilder, cfg: BertConfig) -> onnx.ModelProto:
    i64, f32 = TensorProto.INT64, TensorProto.FLOAT
    inputs = [
        helper.make_tensor_value_info("input_ids", i64, ["T"]),
        helper.make_tensor_value_info("position_ids", i64, ["T"]),
        helper.make_tensor_value_info("token_index", i64, ["T"]),
        helper.make_tensor_value_info("pad_map", i64, ["B", "S"]),
        helper.make_tensor_value_info("key_mask", TensorProto.INT32, ["B", "S"]),
        helper.make_tensor_value_info("pool", f32, ["B", "T"]),
    ]
    outputs = [helper.make_tensor_value_info(OUTPUT, f32, ["B", cfg.hidden_size])]
    graph = helper.make_graph(g.nodes, "all-MiniLM-L6-v2", inputs, outputs, g.initializers)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="llm-observe")
    model.ir_version = 8  # readable by every onnxruntime >= 1.14
    return model


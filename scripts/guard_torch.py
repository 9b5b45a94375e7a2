"""Torch stage of scripts/train_guard.py: a 2-layer student cut from MiniLM, fine-tuned.

Run by train_guard.py with a separate interpreter that has torch (CPU wheel; never the
project's environment):

    /tmp/trainvenv/bin/python scripts/guard_torch.py DATA.json MODEL_DIR OUT_DIR [TEACHER.npz]

- Reads the labelled rows (guard_data.py) as the run-time windows of
  scripts/guard_windows.py (training split only).
- The student is all-MiniLM-L6-v2's embeddings (frozen, not shipped) and its first
  LAYERS layers, each feed-forward block cut from 1,536 to FFN units (the units with the
  largest mean |GELU output| x |output weights| over the first PRUNE_WINDOWS windows,
  kept in their original order), and a logistic head on the mean-pooled, L2-normalised
  vector. Why: 6 layers cost 32 ms per 256 tokens on one core, 2 layers with FFN 768
  ~9 ms (docs/scanning.md, "Cost"). Embedding output is computed once and cached.
- Fits the layers + head with class- and family-balanced weights: AdamW, EPOCHS epochs,
  linear decay. With TEACHER.npz (scripts/guard_teacher.py: the previous 6-layer
  encoder's vectors and logits of the same windows) it is distilled: the head starts as
  the teacher's, and the loss adds the teacher's probabilities as soft labels and
  1 - cosine to its sentence vector. Deterministic: fixed seeds, one thread,
  deterministic algorithms.
- Writes ``student.safetensors`` after every epoch (``student-eN.safetensors``; fp16
  layer tensors under their BERT names, ``head.weight``/``head.bias`` fp32) to OUT_DIR.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from pathlib import Path

import guard_windows  # scripts/: run as a script, its folder is on sys.path
import numpy as np
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file

LAYERS = 2              # student layers (MiniLM's first ones)
FFN = 768               # feed-forward units kept per layer (of 1,536)
PRUNE_WINDOWS = 512     # windows the unit importance is measured on
EPOCHS, BATCH, LR_LAYER, LR_HEAD = 4, 32, 3e-4, 2e-3
# With a teacher (4th argument: scripts/guard_teacher.py's vectors of the same windows):
# the loss adds its probabilities (soft labels) and 1 - cosine to its sentence vector.
DISTILL_PROB, DISTILL_VEC = 1.0, 1.0
torch.manual_seed(0)
torch.set_num_threads(1)  # 2 threads spin against each other on a shared, loaded machine
torch.use_deterministic_algorithms(True)


class Layer(torch.nn.Module):
    def __init__(self, w: dict[str, torch.Tensor], i: int) -> None:
        super().__init__()
        p = f"encoder.layer.{i}."
        self.prefix = p
        names = ["attention.self.query", "attention.self.key", "attention.self.value",
                 "attention.output.dense", "intermediate.dense", "output.dense"]
        self.lin = torch.nn.ModuleDict()
        for n in names:
            out_f, in_f = w[p + n + ".weight"].shape
            lin = torch.nn.Linear(in_f, out_f)
            lin.weight.data.copy_(w[p + n + ".weight"])
            lin.bias.data.copy_(w[p + n + ".bias"])
            self.lin[n.replace(".", "_")] = lin
        self.ln1 = torch.nn.LayerNorm(384, eps=1e-12)
        self.ln2 = torch.nn.LayerNorm(384, eps=1e-12)
        for ln, n in ((self.ln1, "attention.output.LayerNorm"), (self.ln2, "output.LayerNorm")):
            ln.weight.data.copy_(w[p + n + ".weight"])
            ln.bias.data.copy_(w[p + n + ".bias"])

    def prune(self, keep: torch.Tensor) -> None:
        """Keep only the feed-forward units ``keep`` (sorted indices)."""
        inner, out = self.lin["intermediate_dense"], self.lin["output_dense"]
        new_in = torch.nn.Linear(384, len(keep))
        new_in.weight.data.copy_(inner.weight.data[keep])
        new_in.bias.data.copy_(inner.bias.data[keep])
        new_out = torch.nn.Linear(len(keep), 384)
        new_out.weight.data.copy_(out.weight.data[:, keep])
        new_out.bias.data.copy_(out.bias.data)
        self.lin["intermediate_dense"], self.lin["output_dense"] = new_in, new_out

    def importance(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Sum over real tokens of |GELU output| per unit, times its output weights' norm."""
        self.seen = torch.zeros(self.lin["intermediate_dense"].out_features)
        self._record = True
        self.forward(x, mask)
        self._record = False
        return self.seen * self.lin["output_dense"].weight.norm(dim=0)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, 12, 32).transpose(1, 2)
        q = heads(self.lin["attention_self_query"](x))
        k = heads(self.lin["attention_self_key"](x))
        v = heads(self.lin["attention_self_value"](x))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(32)
        att = att.masked_fill(~mask[:, None, None, :], -1e4).softmax(-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(self.lin["attention_output_dense"](ctx) + x)
        inner = torch.nn.functional.gelu(self.lin["intermediate_dense"](x))
        if getattr(self, "_record", False):
            self.seen += (inner.abs() * mask[..., None]).sum((0, 1))
        return self.ln2(self.lin["output_dense"](inner) + x)

    def state(self) -> dict[str, np.ndarray]:
        out = {}
        for n, lin in self.lin.items():
            name = self.prefix + n.replace("attention_self_", "attention.self.").replace(
                "attention_output_", "attention.output.").replace(
                "intermediate_", "intermediate.").replace("output_dense", "output.dense")
            out[name + ".weight"] = lin.weight.detach().numpy().astype(np.float16)
            out[name + ".bias"] = lin.bias.detach().numpy().astype(np.float16)
        for ln, n in ((self.ln1, "attention.output.LayerNorm"), (self.ln2, "output.LayerNorm")):
            out[self.prefix + n + ".weight"] = ln.weight.detach().numpy().astype(np.float16)
            out[self.prefix + n + ".bias"] = ln.bias.detach().numpy().astype(np.float16)
        return out


def embed_input(w: dict[str, torch.Tensor], ids: torch.Tensor) -> torch.Tensor:
    pos = torch.arange(ids.shape[1])
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][pos]
         + w["embeddings.token_type_embeddings.weight"][0])
    return torch.nn.functional.layer_norm(x, (384,), w["embeddings.LayerNorm.weight"],
                                          w["embeddings.LayerNorm.bias"], 1e-12)


def pooled(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1).float()
    return torch.nn.functional.normalize((x * m).sum(1) / m.sum(1), dim=-1, eps=1e-12)


def batches(n_items: list[int], size: int) -> list[list[int]]:
    return [n_items[i:i + size] for i in range(0, len(n_items), size)]


def pad(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    s = max(map(len, seqs))
    ids = torch.zeros(len(seqs), s, dtype=torch.long)
    mask = torch.zeros(len(seqs), s, dtype=torch.bool)
    for i, q in enumerate(seqs):
        ids[i, :len(q)] = torch.tensor(q)
        mask[i, :len(q)] = True
    return ids, mask


def balanced(labels: list[int], weights: list[float]) -> tuple[torch.Tensor, torch.Tensor]:
    """(labels, sample weights) as tensors, the weights rescaled so each class sums to half
    the windows (the teacher's recipe and the student's)."""
    y = torch.tensor(labels, dtype=torch.float32)
    sw = torch.tensor(weights, dtype=torch.float64)
    for cls in (0, 1):
        sw[y == cls] /= sw[y == cls].sum()
    return y, (sw * len(sw) / 2).float()


def training_inputs(data_path: Path, model_dir: Path, out_dir: Path) -> tuple[
        list[list[int]], dict[str, torch.Tensor], torch.Tensor, torch.Tensor, list[int]]:
    """What the teacher's and the student's torch stages start from: the training windows
    (token ids), MiniLM's float tensors, labels and balanced weights, and the windows'
    order by length (little padding in a batch). Creates ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    seqs, labels, weights = guard_windows.training_windows(data_path,
                                                           model_dir / "tokenizer.json")
    w = {k: v.float() for k, v in load_file(str(model_dir / "model.safetensors")).items()
         if v.dtype.is_floating_point}
    y, sw = balanced(labels, weights)
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    print(f"{len(seqs)} windows, {sum(map(len, seqs))} tokens, {int(y.sum())} attack", flush=True)
    return seqs, w, y, sw, order


def main() -> None:
    data_path, model_dir, out_dir = map(Path, sys.argv[1:4])
    teacher = np.load(sys.argv[4]) if len(sys.argv) > 4 else None
    seqs, w, y, sw, order = training_inputs(data_path, model_dir, out_dir)
    # 1. embedding output, cached (sorted by length: little padding).
    cache: list[tuple[list[int], torch.Tensor, torch.Tensor]] = []
    with torch.no_grad():
        for idx in batches(order, 64):
            ids, mask = pad([seqs[i] for i in idx])
            cache.append((idx, embed_input(w, ids).half(), mask))
    layers = torch.nn.ModuleList([Layer(w, i) for i in range(LAYERS)])
    # 2. prune each FFN to its FFN most useful units, measured on a hash-spread sample.
    start = time.time()
    sample = sorted(range(len(seqs)), key=lambda i: hashlib.sha256(str(i).encode()).digest())
    with torch.no_grad():
        for li, layer in enumerate(layers):
            score = torch.zeros(layer.lin["intermediate_dense"].out_features)
            for idx in batches(sample[:PRUNE_WINDOWS], 64):
                ids, mask = pad([seqs[i] for i in idx])
                x = embed_input(w, ids)
                for lower in layers[:li]:
                    x = lower(x, mask)
                score += layer.importance(x, mask)
            layer.prune(torch.sort(torch.topk(score, FFN).indices).values)
    print(f"pruned to {FFN} units in {time.time() - start:.0f}s", flush=True)
    head = torch.nn.Linear(384, 1)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    if teacher is not None:  # the student learns the teacher's vector: start at its head
        if len(teacher["logit"]) != len(seqs):
            raise SystemExit("teacher vectors are of other windows")
        head.weight.data.copy_(torch.from_numpy(teacher["head_weight"])[None, :])
        head.bias.data.copy_(torch.from_numpy(teacher["head_bias"]))
        t_emb = torch.from_numpy(teacher["emb"].astype(np.float32))
        t_prob = torch.sigmoid(torch.from_numpy(teacher["logit"]))
    params = [{"params": layers.parameters(), "lr": LR_LAYER},
              {"params": head.parameters(), "lr": LR_HEAD}]
    opt = torch.optim.AdamW(params, weight_decay=0.01)
    steps = EPOCHS * sum(math.ceil(len(c[0]) / BATCH) for c in cache)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / steps))
    rng = np.random.RandomState(0)
    for epoch in range(EPOCHS):
        start = time.time()
        total = 0.0
        for n_done, c in enumerate(rng.permutation(len(cache))):  # similar lengths, shuffled
            idx, xs, mask = cache[c]
            for part in range(0, len(idx), BATCH):
                sel = slice(part, part + BATCH)
                x, m = xs[sel].float(), mask[sel]
                for layer in layers:
                    x = layer(x, m)
                vec = pooled(x, m)
                logit = head(vec).squeeze(-1)
                ii = torch.tensor(idx[sel])
                loss = (torch.nn.functional.binary_cross_entropy_with_logits(
                    logit, y[ii], reduction="none") * sw[ii]).mean()
                if teacher is not None:
                    soft = torch.nn.functional.binary_cross_entropy_with_logits(
                        logit, t_prob[ii], reduction="none")
                    loss = loss + DISTILL_PROB * (soft * sw[ii]).mean() + DISTILL_VEC * (
                        1 - (vec * t_emb[ii]).sum(-1)).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                total += float(loss.detach()) * len(ii)
            if n_done % 20 == 0:
                print(f"  epoch {epoch}: {n_done}/{len(cache)} batches, "
                      f"{time.time() - start:.0f}s", flush=True)
        print(f"epoch {epoch}: loss {total / len(seqs):.4f} in {time.time() - start:.0f}s",
              flush=True)
        state = {k: v for layer in layers for k, v in layer.state().items()}
        state["head.weight"] = head.weight.detach().numpy()[0].astype(np.float32)
        state["head.bias"] = head.bias.detach().numpy().astype(np.float32)
        save_file(state, str(out_dir / f"student-e{epoch}.safetensors"))
        save_file(state, str(out_dir / "student.safetensors"))


if __name__ == "__main__":
    main()

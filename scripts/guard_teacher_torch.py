"""Torch stage of the teacher (scripts/train_guard.py): fine-tune MiniLM's top layer and a head.

The recipe of the 6-layer encoder shipped before the student (git f83aec4's
scripts/guard_torch.py; its windows and weights now come from the student's code), kept
so the teacher can be retrained on the current rows: train_guard.py runs it first
(without ``--legacy-apps``), then scripts/guard_teacher.py reads its
``top_layers.safetensors`` as the teacher the 2-layer student is distilled from. Run
with a separate interpreter that has torch (CPU wheel; never the project's environment):

    /tmp/trainvenv/bin/python scripts/guard_teacher_torch.py DATA.json MODEL_DIR OUT_DIR

- Reads the labelled rows (guard_data.py) as the student does: the same training
  windows, negatives subsampled per kind, seeded picks (scripts/guard_windows.py
  ``training_windows``; the earlier script's inline copy of it gave the same 5,670
  windows, labels and weights on the fixed rows).
- Runs the frozen lower layers once and caches their output (the expensive part), then
  fits (1) a logistic head on the frozen model's sentence embedding (mean pool + L2, the
  [embeddings] extra's vector) and (2) the top TOP layers + a head started from (1), with
  class- and family-balanced weights. Deterministic: fixed seeds, fixed thread count,
  ``torch.use_deterministic_algorithms``.
- The layer, embedding and pooling code is the student's (scripts/guard_torch.py: the
  same arithmetic; its pruning hooks are not used here).
- Writes ``frozen_head.npz`` and ``top_layers.safetensors`` (fp16 top-layer tensors under
  their BERT names, plus ``head.weight``/``head.bias``) to OUT_DIR.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from guard_torch import Layer, batches, embed_input, pad, pooled, training_inputs
from safetensors.numpy import save_file

TOP = 1                 # fine-tuned top layers
EPOCHS, BATCH, LR_LAYER, LR_HEAD = 1, 32, 1e-4, 1e-3
LAYERS = 6
torch.manual_seed(0)
torch.set_num_threads(1)  # 2 threads spin against each other on a shared, loaded machine
torch.use_deterministic_algorithms(True)


def main() -> None:
    data_path, model_dir, out_dir = map(Path, sys.argv[1:4])
    seqs, w, y, sw, order = training_inputs(data_path, model_dir, out_dir)
    # 1. frozen lower layers, cached (sorted by length: little padding).
    start = time.time()
    lower = [Layer(w, i).eval() for i in range(LAYERS - TOP)]
    top = torch.nn.ModuleList([Layer(w, i) for i in range(LAYERS - TOP, LAYERS)])
    cache: list[tuple[list[int], torch.Tensor, torch.Tensor]] = []
    emb = torch.zeros(len(seqs), 384)
    with torch.no_grad():
        for idx in batches(order, 64):
            ids, mask = pad([seqs[i] for i in idx])
            x = embed_input(w, ids)
            for layer in lower:
                x = layer(x, mask)
            cache.append((idx, x.half(), mask))
            if len(cache) % 20 == 0:
                print(f"  {len(cache) * 64} windows in {time.time() - start:.0f}s", flush=True)
            for layer in top:
                x = layer(x, mask)
            emb[idx] = pooled(x, mask)
    print(f"cached lower layers in {time.time() - start:.0f}s", flush=True)
    # 2. frozen head: weighted logistic regression on the frozen sentence embedding.
    head = torch.nn.Linear(384, 1)
    opt = torch.optim.LBFGS(head.parameters(), max_iter=200, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = (torch.nn.functional.binary_cross_entropy_with_logits(
            head(emb).squeeze(-1), y, reduction="none") * sw).mean() \
            + 1e-4 * head.weight.pow(2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    np.savez(out_dir / "frozen_head.npz", weight=head.weight.detach().numpy()[0],
             bias=head.bias.detach().numpy())
    # 3. fine-tune the top layer(s) and the head (started from the frozen head).
    params = [{"params": top.parameters(), "lr": LR_LAYER},
              {"params": head.parameters(), "lr": LR_HEAD}]
    opt2 = torch.optim.AdamW(params, weight_decay=0.01)
    steps = EPOCHS * math.ceil(len(seqs) / BATCH)
    sched = torch.optim.lr_scheduler.LambdaLR(opt2, lambda s: max(0.0, 1 - s / steps))
    rng = np.random.RandomState(0)
    flat = [(c, j) for c in range(len(cache)) for j in range(len(cache[c][0]))]
    for epoch in range(EPOCHS):
        start = time.time()
        perm = rng.permutation(len(cache))  # batches of similar length, shuffled
        total = 0.0
        for c in perm:
            idx, xs, mask = cache[c]
            for part in range(0, len(idx), BATCH):
                sel = slice(part, part + BATCH)
                x = xs[sel].float()
                m = mask[sel]
                for layer in top:
                    x = layer(x, m)
                logit = head(pooled(x, m)).squeeze(-1)
                ii = torch.tensor(idx[sel])
                loss = (torch.nn.functional.binary_cross_entropy_with_logits(
                    logit, y[ii], reduction="none") * sw[ii]).mean()
                opt2.zero_grad()
                loss.backward()
                opt2.step()
                sched.step()
                total += float(loss) * len(ii)
        print(f"epoch {epoch}: loss {total / len(flat):.4f} in {time.time() - start:.0f}s",
              flush=True)
    state = {k: v for layer in top for k, v in layer.state().items()}
    state["head.weight"] = head.weight.detach().numpy()[0].astype(np.float32)
    state["head.bias"] = head.bias.detach().numpy().astype(np.float32)
    save_file(state, str(out_dir / "top_layers.safetensors"))


if __name__ == "__main__":
    main()

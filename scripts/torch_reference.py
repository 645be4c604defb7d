#!/usr/bin/env python3
"""The same GPT-2 training step in PyTorch, as an independent reference for axonn.

Loads an llm.c fp32 model file (for example one written by `axonn train --steps 0 --save`) or a
Hugging Face GPT-2 directory (model.safetensors + config.json, `axonn export --format
safetensors`; read here with its own safetensors reader, Conv1D matrices transposed back),
reads batches from an llm.c token shard in axonn's sequential order (windows of B*T+1 tokens
advancing by B*T), and trains with the same AdamW (decay on matrices and embeddings only),
warm-up + cosine schedule and global-norm clipping. Prints one line per step:
    step N loss L ms T
Modes: --mode losses (compare against axonn's metrics CSV) and --mode bench (median step time,
tokens/s). --device cuda runs it on a GPU (the optimizer on the GPU, fused AdamW), with
--precision bf16 as PyTorch's usual mixed precision (fp32 weights, bf16 autocast) and
--attention sdpa for PyTorch's fused causal attention (flash) instead of the explicit T x T
softmax axonn computes. --random-model L,C,NH,T,V draws the weights instead of reading a file.
Needs python3-torch (Debian) or any PyTorch; never needed to build or test axonn.
"""
import argparse
import math
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

NAMES = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b",
         "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"]


def random_model(spec):
    L, C, NH, T, V = (int(x) for x in spec.split(","))
    Vp = (V + 127) // 128 * 128
    g = torch.Generator().manual_seed(0)
    shapes = {"wte": (Vp, C), "wpe": (T, C), "ln1w": (L, C), "ln1b": (L, C),
              "qkvw": (L, 3 * C, C), "qkvb": (L, 3 * C), "attprojw": (L, C, C),
              "attprojb": (L, C), "ln2w": (L, C), "ln2b": (L, C), "fcw": (L, 4 * C, C),
              "fcb": (L, 4 * C), "fcprojw": (L, C, 4 * C), "fcprojb": (L, C),
              "lnfw": (C,), "lnfb": (C,)}
    params = {}
    for name in NAMES:
        if name.endswith("w") and name.startswith("ln"):
            t = torch.ones(shapes[name])
        elif name.endswith("b"):
            t = torch.zeros(shapes[name])
        else:
            t = torch.randn(shapes[name], generator=g) * 0.02
        params[name] = t.requires_grad_()
    return dict(maxT=T, V=V, L=L, NH=NH, C=C, Vp=Vp), params


def read_model(path):
    with open(path, "rb") as f:
        header = struct.unpack("256i", f.read(1024))
        assert header[0] == 20240326 and header[1] == 3, "not an llm.c fp32 model file"
        maxT, V, L, NH, C, Vp = header[2:8]
        data = np.frombuffer(f.read(), dtype=np.float32)
    shapes = {"wte": (Vp, C), "wpe": (maxT, C), "ln1w": (L, C), "ln1b": (L, C),
              "qkvw": (L, 3 * C, C), "qkvb": (L, 3 * C), "attprojw": (L, C, C),
              "attprojb": (L, C), "ln2w": (L, C), "ln2b": (L, C), "fcw": (L, 4 * C, C),
              "fcb": (L, 4 * C), "fcprojw": (L, C, 4 * C), "fcprojb": (L, C),
              "lnfw": (C,), "lnfb": (C,)}
    params, off = {}, 0
    for name in NAMES:
        n = int(np.prod(shapes[name]))
        params[name] = torch.tensor(data[off:off + n].reshape(shapes[name]).copy(),
                                    requires_grad=True)
        off += n
    assert off == data.size, "file size does not match its header"
    return dict(maxT=maxT, V=V, L=L, NH=NH, C=C, Vp=Vp), params


def read_hf_model(path):
    """A Hugging Face GPT-2 directory, into read_model's names and llm.c's shapes (wte padded
    to a multiple of 128 rows, as axonn pads it)."""
    import json, os
    cfg = json.load(open(os.path.join(path, "config.json")))
    with open(os.path.join(path, "model.safetensors"), "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    def t(name, transpose=False):
        e = header[name]
        assert e["dtype"] == "F32", name + " is not F32"
        b, en = e["data_offsets"]
        a = np.frombuffer(data[b:en], dtype="<f4").reshape(e["shape"])
        return a.T if transpose else a
    L, C, V, NH, maxT = cfg["n_layer"], cfg["n_embd"], cfg["vocab_size"], cfg["n_head"], cfg["n_positions"]
    Vp = (V + 127) // 128 * 128
    wte = np.zeros((Vp, C), dtype=np.float32)
    wte[:V] = t("wte.weight")
    per = {"ln1w": ("ln_1.weight", 0), "ln1b": ("ln_1.bias", 0), "qkvw": ("attn.c_attn.weight", 1),
           "qkvb": ("attn.c_attn.bias", 0), "attprojw": ("attn.c_proj.weight", 1),
           "attprojb": ("attn.c_proj.bias", 0), "ln2w": ("ln_2.weight", 0), "ln2b": ("ln_2.bias", 0),
           "fcw": ("mlp.c_fc.weight", 1), "fcb": ("mlp.c_fc.bias", 0),
           "fcprojw": ("mlp.c_proj.weight", 1), "fcprojb": ("mlp.c_proj.bias", 0)}
    arrays = {"wte": wte, "wpe": t("wpe.weight"), "lnfw": t("ln_f.weight"), "lnfb": t("ln_f.bias")}
    for name, (hf, tr) in per.items():
        arrays[name] = np.stack([t("h.%d.%s" % (l, hf), tr) for l in range(L)])
    params = {name: torch.tensor(np.ascontiguousarray(arrays[name]), requires_grad=True)
              for name in NAMES}
    return dict(maxT=maxT, V=V, L=L, NH=NH, C=C, Vp=Vp), params


def forward(cfg, p, idx, targets, sdpa=False):
    B, T = idx.shape
    C, NH, V = cfg["C"], cfg["NH"], cfg["V"]
    x = p["wte"][idx] + p["wpe"][:T]
    mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(1)
    for l in range(cfg["L"]):
        h = F.layer_norm(x, (C,), p["ln1w"][l], p["ln1b"][l], 1e-5)
        q, k, v = F.linear(h, p["qkvw"][l], p["qkvb"][l]).split(C, dim=2)
        q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in (q, k, v))
        if sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
            y = att.masked_fill(mask, float("-inf")).softmax(dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        x = x + F.linear(y, p["attprojw"][l], p["attprojb"][l])
        h = F.layer_norm(x, (C,), p["ln2w"][l], p["ln2b"][l], 1e-5)
        h = F.gelu(F.linear(h, p["fcw"][l], p["fcb"][l]), approximate="tanh")
        x = x + F.linear(h, p["fcprojw"][l], p["fcprojb"][l])
    x = F.layer_norm(x, (C,), p["lnfw"], p["lnfb"], 1e-5)
    logits = x @ p["wte"][:V].t()
    return F.cross_entropy(logits.view(-1, V), targets.view(-1))


def read_tokens(path):
    with open(path, "rb") as f:
        header = struct.unpack("256i", f.read(1024))
        assert header[0] == 20240520, "not an llm.c token shard"
        return np.frombuffer(f.read(), dtype=np.uint16).astype(np.int64)


def lr_at(a, step):
    if a.warmup > 0 and step <= a.warmup:
        return a.lr * step / a.warmup
    if a.lr_schedule == "constant" or a.steps <= a.warmup:
        return a.lr
    progress = min(1.0, (step - a.warmup) / (a.steps - a.warmup))
    floor = a.lr * a.min_lr_frac
    return floor + 0.5 * (a.lr - floor) * (1 + math.cos(math.pi * progress))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="llm.c fp32 model file, or a Hugging Face GPT-2 directory")
    ap.add_argument("--random-model", help="L,C,NH,T,V: random weights instead of --model")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--attention", choices=["explicit", "sdpa"], default="explicit")
    ap.add_argument("--data", help="token shard; default: random tokens (bench mode)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr-schedule", default="cosine")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mode", choices=["losses", "bench"], default="losses")
    ap.add_argument("--warmup-steps", type=int, default=2, help="bench: untimed steps first")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if not a.model and not a.random_model:
        ap.error("--model or --random-model is required")
    import os
    cfg, p = random_model(a.random_model) if a.random_model else \
        read_hf_model(a.model) if os.path.isdir(a.model) else read_model(a.model)
    dev = torch.device(a.device)
    if a.device == "cuda":
        p = {n: t.detach().to(dev).requires_grad_() for n, t in p.items()}
    amp = torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16")
    decay_names = ("wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw")
    decay = [p[n] for n in decay_names]
    other = [p[n] for n in NAMES if n not in decay_names]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps,
                            **({"fused": True} if a.device == "cuda" else {}))
    BT = a.batch * a.seq
    tokens = read_tokens(a.data) if a.data else \
        np.random.default_rng(0).integers(0, cfg["V"], BT * 64 + 1)
    windows = (len(tokens) - 1) // BT
    times = []
    for step in range(1, a.steps + 1):
        w = (step - 1) % windows
        buf = torch.from_numpy(tokens[w * BT: w * BT + BT + 1])
        x, y = (t.view(a.batch, a.seq).to(dev) for t in (buf[:-1], buf[1:]))
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(a, step)
        opt.zero_grad(set_to_none=True)
        with amp:
            loss = forward(cfg, p, x, y, a.attention == "sdpa")
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(list(p.values()), a.grad_clip)
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        if step > a.warmup_steps:
            times.append(ms)
        if a.mode == "losses":
            print(f"step {step} loss {loss.item():.6f} ms {ms:.2f}", flush=True)
    if a.mode == "bench":
        med = float(np.median(times))
        where = f"threads {a.threads}" if a.device == "cpu" else \
            f"{torch.cuda.get_device_name()} {a.precision} attention {a.attention}, " \
            f"peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB"
        print(f"torch {torch.__version__} {where}: median step {med:.2f} ms, "
              f"{BT / med * 1e3:.0f} tokens/s over {len(times)} steps")


if __name__ == "__main__":
    sys.exit(main())

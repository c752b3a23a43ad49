#!/usr/bin/env python3
"""perf/train_torch.py — the models of `vkgrad train` in PyTorch, eager fp32.

What a user would run instead of vkgrad: the same Llama-style, Mamba-1 and
Mamba-2 language models (perf/train/model.h), the same initial parameters
(same seed, same names, same formulas: perf/train/model_common.c), the same
corpus split and the same batches (perf/train/corpus.h, batches.h), AdamW
with the same settings, on CUDA with TF32 off. It prints the same progress
lines and step time, split into forward, backward and optimizer by CUDA
events, so the two can be put side by side.

Attention goes through matmul and a masked softmax (as vkgrad's does) or,
with --attention sdpa, through scaled_dot_product_attention. The Mamba scans
are a plain sequential loop over the tokens in PyTorch ops, as a user without
custom kernels would write them; --scan mamba_ssm uses mamba_ssm's CUDA
kernels instead (selective_scan_fn for Mamba-1, mamba_chunk_scan_combined for
Mamba-2) when that package is installed.

    python3 perf/train_torch.py --model mamba1 --size small --steps 50
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

CORPUS_DIR = "/usr/share/games/fortunes"
VOCAB = 128
EVERY = 10
MASK64 = (1 << 64) - 1


# ---- rng.h -------------------------------------------------------------------
class Rng:
    def __init__(self, seed, stream):
        h = 0xCBF29CE484222325
        for b in stream.encode():
            h = ((h ^ b) * 0x100000001B3) & MASK64
        self.state = (seed ^ h) & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0**-53


# ---- corpus.h ------------------------------------------------------------------
def load_corpus(directory):
    names = sorted(
        (n for n in os.listdir(directory)
        if not n.startswith(".") and "." not in n
        and os.path.isfile(os.path.join(directory, n))
        and not os.path.islink(os.path.join(directory, n))),
        key=lambda s: s.encode())
    train, val = bytearray(), bytearray()
    record = 0
    for n in names:
        text = open(os.path.join(directory, n), "rb").read()
        records, start, pos = [], 0, 0
        while pos < len(text):
            nl = text.find(b"\n", pos)
            end = nl + 1 if nl >= 0 else len(text)
            line = text[pos:end]
            if line == b"%\n" or (nl < 0 and line == b"%"):
                if pos > start:
                    records.append(text[start:pos])
                start = end
            pos = end
        if len(text) > start:
            records.append(text[start:])
        for r in records:
            dst = val if record % EVERY == EVERY - 1 else train
            dst += r + b"%\n"
            record += 1
    tok = bytes(b if b < VOCAB else 0 for b in range(256))
    return bytes(train).translate(tok), bytes(val).translate(tok)


# ---- batches.h -----------------------------------------------------------------
def train_batch(train, rng, n_ctx, batch):
    span = len(train) - n_ctx
    offs = [rng.next() % span for _ in range(batch)]
    x = [train[o:o + n_ctx] for o in offs]
    y = [train[o + 1:o + n_ctx + 1] for o in offs]
    return x, y


def val_batches(val, n_ctx, batch, want):
    per = n_ctx * batch
    n = min((len(val) - 1) // per, want)
    out = []
    for k in range(n):
        x, y = [], []
        for b in range(batch):
            o = (k * batch + b) * n_ctx
            x.append(val[o:o + n_ctx])
            y.append(val[o + 1:o + n_ctx + 1])
        out.append((x, y))
    return out


def to_tensor(rows, device):
    return torch.tensor([list(r) for r in rows], dtype=torch.long, device=device)


# ---- presets (model_common.c) --------------------------------------------------
def preset(model, size):
    small = size == "small"
    c = dict(model=model, size=size, n_layer=6 if small else 2, d_model=512 if small else 64,
             n_ctx=512 if small else 64, batch=16 if small else 8, vocab=VOCAB, eps=1e-5,
             rope_base=10000.0, d_conv=4)
    if model == "llama":
        c.update(n_head=8 if small else 4, d_ff=1408 if small else 176)
        c["head_dim"] = c["d_model"] // c["n_head"]
    elif model == "mamba1":
        c.update(d_inner=2 * c["d_model"], d_state=16, dt_rank=(c["d_model"] + 15) // 16)
    elif model == "mamba2":
        c.update(d_inner=2 * c["d_model"], d_state=128, head_dim=64 if small else 32)
        c["n_head"] = c["d_inner"] // c["head_dim"]
    else:
        raise SystemExit(f"unknown model {model}")
    return c


# ---- initial values (train_param_init) -----------------------------------------
def init_values(name, kind, ne, bound, seed):
    """Values in ggml order (ne[0] fastest) as a flat list of float64."""
    rng = Rng(seed, name)
    n = math.prod(ne)
    if kind == "uniform":
        return [bound * (2.0 * rng.uniform() - 1.0) for _ in range(n)]
    if kind == "ones":
        return [1.0] * n
    if kind == "zeros":
        return [0.0] * n
    if kind == "a_log_states":
        return [math.log(i % ne[0] + 1) for i in range(n)]
    if kind == "a_log_heads":
        return [math.log(1.0 + 15.0 * rng.uniform()) for _ in range(n)]
    if kind == "dt_bias":
        lo, hi = math.log(1e-3), math.log(1e-1)
        out = []
        for _ in range(n):
            y = math.exp(lo + (hi - lo) * rng.uniform())
            out.append(y + math.log(-math.expm1(-y)))
        return out
    raise ValueError(kind)


class Params:
    """Parameters by vkgrad's names; a ggml shape [ne0, ne1] is a row-major
    PyTorch tensor (ne1, ne0), so a weight [n_in, n_out] is nn.Linear's."""

    def __init__(self, seed, device):
        self.seed, self.device, self.p = seed, device, {}

    def new(self, name, kind, ne, bound=0.0):
        v = torch.tensor(init_values(name, kind, ne, bound, self.seed), dtype=torch.float32)
        t = v.reshape(tuple(reversed(ne))).to(self.device).requires_grad_(True)
        self.p[name] = t
        return t

    def linear(self, name, n_in, n_out):
        return self.new(name, "uniform", [n_in, n_out], 1.0 / math.sqrt(n_in))

    def norm(self, name, d):
        return self.new(name, "ones", [d])


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


# ---- the models (x: [B, T, D]) --------------------------------------------------
class Llama:
    def __init__(self, c, P, attention):
        self.c, self.attention = c, attention
        D, F_ = c["d_model"], c["d_ff"]
        self.layers = []
        for l in range(c["n_layer"]):
            b = f"blk{l}."
            self.layers.append(dict(
                attn_norm=P.norm(b + "attn_norm", D), wq=P.linear(b + "wq", D, D),
                wk=P.linear(b + "wk", D, D), wv=P.linear(b + "wv", D, D),
                wo=P.linear(b + "wo", D, D), mlp_norm=P.norm(b + "mlp_norm", D),
                w1=P.linear(b + "w1", D, F_), w3=P.linear(b + "w3", D, F_),
                w2=P.linear(b + "w2", F_, D)))
        hd, T = c["head_dim"], c["n_ctx"]
        inv = torch.tensor([c["rope_base"] ** (-2.0 * i / hd) for i in range(hd // 2)],
                           dtype=torch.float32, device=P.device)
        ang = torch.arange(T, dtype=torch.float32, device=P.device)[:, None] * inv[None, :]
        self.cos, self.sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]
        self.mask = torch.triu(torch.full((T, T), float("-inf"), device=P.device), 1)

    def rope(self, x):  # NeoX pairs (i, i + hd/2); x [B, T, H, hd]
        h = x.shape[-1] // 2
        a, b = x[..., :h], x[..., h:]
        return torch.cat([a * self.cos - b * self.sin, a * self.cos + b * self.sin], -1)

    def block(self, L, x):
        c = self.c
        B, T, D = x.shape
        H, hd = c["n_head"], c["head_dim"]
        h = rms_norm(x, L["attn_norm"], c["eps"])
        q = self.rope(F.linear(h, L["wq"]).view(B, T, H, hd)).transpose(1, 2)
        k = self.rope(F.linear(h, L["wk"]).view(B, T, H, hd)).transpose(1, 2)
        v = F.linear(h, L["wv"]).view(B, T, H, hd).transpose(1, 2)
        if self.attention == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = q @ k.transpose(-1, -2) / math.sqrt(hd) + self.mask
            o = torch.softmax(s, -1) @ v
        x = x + F.linear(o.transpose(1, 2).reshape(B, T, D), L["wo"])
        h = rms_norm(x, L["mlp_norm"], c["eps"])
        return x + F.linear(F.silu(F.linear(h, L["w1"])) * F.linear(h, L["w3"]), L["w2"])


def causal_conv(u, w, b):  # u [B, T, ch], w [ch, d_conv]: vkgrad's SSM_CONV with zero history
    T = u.shape[1]
    y = F.conv1d(u.transpose(1, 2), w.unsqueeze(1), b, padding=w.shape[1] - 1,
                 groups=w.shape[0])
    return y[..., :T].transpose(1, 2)


def scan_mamba1_sequential(u, dt, A, Bm, Cm):
    """u, dt [B, T, Di]; A [Di, N]; Bm, Cm [B, T, N] -> y [B, T, Di]."""
    dt = F.softplus(dt)
    s = u.new_zeros(u.shape[0], u.shape[2], A.shape[1])
    ys = []
    for t in range(u.shape[1]):
        a = torch.exp(dt[:, t, :, None] * A)
        s = a * s + (dt[:, t] * u[:, t])[:, :, None] * Bm[:, t, None, :]
        ys.append((s * Cm[:, t, None, :]).sum(-1))
    return torch.stack(ys, 1)


def scan_mamba2_sequential(u, dt, A, Bm, Cm):
    """u [B, T, H, P]; dt [B, T, H]; A [H]; Bm, Cm [B, T, N] -> y [B, T, H, P]."""
    dt = F.softplus(dt)
    Bsz, T, H, P = u.shape
    s = u.new_zeros(Bsz, H, P, Bm.shape[-1])
    ys = []
    for t in range(T):
        a = torch.exp(dt[:, t] * A)[:, :, None, None]
        s = a * s + (dt[:, t, :, None] * u[:, t])[..., None] * Bm[:, t, None, None, :]
        ys.append((s * Cm[:, t, None, None, :]).sum(-1))
    return torch.stack(ys, 1)


class Mamba:
    def __init__(self, c, P, scan):
        self.c, self.scan = c, scan
        D, Di, N, dc = c["d_model"], c["d_inner"], c["d_state"], c["d_conv"]
        self.layers = []
        for l in range(c["n_layer"]):
            b = f"blk{l}."
            L = dict(norm=P.norm(b + "norm", D))
            if c["model"] == "mamba1":
                R = c["dt_rank"]
                L["in_proj"] = P.linear(b + "in_proj", D, 2 * Di)
                ch = Di
            else:
                H = c["n_head"]
                ch = Di + 2 * N
                L["in_proj"] = P.linear(b + "in_proj", D, Di + ch + H)
            L["conv_w"] = P.new(b + "conv_w", "uniform", [dc, ch], 1.0 / math.sqrt(dc))
            L["conv_b"] = P.new(b + "conv_b", "zeros", [ch])
            if c["model"] == "mamba1":
                L["x_proj"] = P.linear(b + "x_proj", Di, R + 2 * N)
                L["dt_proj"] = P.linear(b + "dt_proj", R, Di)
                L["dt_bias"] = P.new(b + "dt_bias", "dt_bias", [Di])
                L["A_log"] = P.new(b + "A_log", "a_log_states", [N, Di])
                L["D"] = P.new(b + "D", "ones", [Di])
            else:
                L["dt_bias"] = P.new(b + "dt_bias", "dt_bias", [H])
                L["A_log"] = P.new(b + "A_log", "a_log_heads", [1, H])
                L["D"] = P.new(b + "D", "ones", [1, H])
                L["gate_norm"] = P.norm(b + "gate_norm", Di)
            L["out_proj"] = P.linear(b + "out_proj", Di, D)
            self.layers.append(L)

    def block(self, L, x):
        c = self.c
        Di, N = c["d_inner"], c["d_state"]
        h = rms_norm(x, L["norm"], c["eps"])
        p = F.linear(h, L["in_proj"])
        if c["model"] == "mamba1":
            R = c["dt_rank"]
            u, z = p[..., :Di], p[..., Di:]
            u = F.silu(causal_conv(u, L["conv_w"], L["conv_b"]))
            xd = F.linear(u, L["x_proj"])
            dt = F.linear(xd[..., :R], L["dt_proj"]) + L["dt_bias"]
            Bm, Cm = xd[..., R:R + N], xd[..., R + N:]
            A = -torch.exp(L["A_log"])
            if self.scan == "mamba_ssm":
                from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
                y = selective_scan_fn(u.transpose(1, 2).contiguous(), dt.transpose(1, 2).contiguous(),
                                      A, Bm.transpose(1, 2).contiguous(),
                                      Cm.transpose(1, 2).contiguous(), None, None, None,
                                      delta_softplus=True).transpose(1, 2)
            else:
                y = scan_mamba1_sequential(u, dt, A, Bm, Cm)
            y = (y + u * L["D"]) * F.silu(z)
        else:
            H, P_ = c["n_head"], c["head_dim"]
            ch = Di + 2 * N
            z, xbc, dt = p[..., :Di], p[..., Di:Di + ch], p[..., Di + ch:]
            xbc = F.silu(causal_conv(xbc, L["conv_w"], L["conv_b"]))
            u, Bm, Cm = xbc[..., :Di], xbc[..., Di:Di + N], xbc[..., Di + N:]
            B_, T = u.shape[:2]
            u4 = u.reshape(B_, T, H, P_)
            A = -torch.exp(L["A_log"]).reshape(H)
            dt = dt + L["dt_bias"]
            if self.scan == "mamba_ssm":
                from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
                y4 = mamba_chunk_scan_combined(u4, F.softplus(dt), A, Bm[:, :, None, :],
                                               Cm[:, :, None, :], chunk_size=64)
            else:
                y4 = scan_mamba2_sequential(u4, dt, A, Bm, Cm)
            y4 = y4 + u4 * L["D"].reshape(H, 1)
            y = rms_norm(y4.reshape(B_, T, Di) * F.silu(z), L["gate_norm"], c["eps"])
        return x + F.linear(y, L["out_proj"])


class Model:
    def __init__(self, c, seed, device, attention, scan):
        P = Params(seed, device)
        self.c = c
        self.emb = P.new("tok_emb", "uniform", [c["d_model"], c["vocab"]], 1.0)
        self.body = Llama(c, P, attention) if c["model"] == "llama" else Mamba(c, P, scan)
        self.out_norm = P.norm("out_norm", c["d_model"])
        self.head = P.linear("lm_head", c["d_model"], c["vocab"])
        self.params = P.p

    def loss(self, tokens, targets):
        x = F.embedding(tokens, self.emb)
        for L in self.body.layers:
            x = self.body.block(L, x)
        logits = F.linear(rms_norm(x, self.out_norm, self.c["eps"]), self.head)
        return F.cross_entropy(logits.reshape(-1, self.c["vocab"]), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, choices=["llama", "mamba1", "mamba2"])
    ap.add_argument("--size", default="tiny", choices=["tiny", "small"])
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--eval-every", type=int, default=None)
    ap.add_argument("--val-batches", type=int, default=8)
    ap.add_argument("--corpus", default=CORPUS_DIR)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--attention", default="matmul", choices=["matmul", "sdpa"])
    ap.add_argument("--scan", default="sequential", choices=["sequential", "mamba_ssm"])
    ap.add_argument("--csv", default=None)
    a = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    c = preset(a.model, a.size)
    steps = a.steps or (1000 if c["d_model"] >= 256 else 300)
    lr = a.lr or (1e-3 if c["d_model"] >= 256 else 3e-3)
    eval_every = a.eval_every or max(steps // 10, 1)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"

    train, val = load_corpus(a.corpus)
    vb = [(to_tensor(x, dev), to_tensor(y, dev))
          for x, y in val_batches(val, c["n_ctx"], c["batch"], a.val_batches)]
    m = Model(c, a.seed, dev, a.attention, a.scan)
    n_params = sum(p.numel() for p in m.params.values())
    opt = torch.optim.AdamW(list(m.params.values()), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)
    name = torch.cuda.get_device_name(dev) if cuda else "CPU"
    print(f"train_torch: {a.model} {a.size} on {name}, PyTorch {torch.__version__} eager fp32, "
          f"TF32 off, attention {a.attention if a.model == 'llama' else '-'}, scan "
          f"{a.scan if a.model != 'llama' else '-'}: {c['n_layer']} layers, d_model "
          f"{c['d_model']}, {c['n_ctx']} tokens x batch {c['batch']}, {n_params} parameters, "
          f"seed {a.seed}, AdamW lr {lr:g}")

    def evaluate():
        with torch.no_grad():
            return sum(m.loss(x, y).item() for x, y in vb) / max(len(vb), 1)

    csv = open(a.csv, "w") if a.csv else None
    if csv:
        csv.write("step,train_loss,val_loss,tokens_per_s,seconds\n")
    rng = Rng(a.seed, "batches")
    n_tok = c["n_ctx"] * c["batch"]
    v = evaluate()
    print(f"step 0  validation loss {v:.4f}")
    if csv:
        csv.write(f"0,,{v:.6f},,0\n")
    wall, fwd, bwd, upd = [], [], [], []
    t0 = time.perf_counter()
    for s in range(1, steps + 1):
        x, y = train_batch(train, rng, c["n_ctx"], c["batch"])
        x, y = to_tensor(x, dev), to_tensor(y, dev)
        if cuda:
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
            torch.cuda.synchronize()
        ts = time.perf_counter()
        if cuda:
            ev[0].record()
        loss = m.loss(x, y)
        if cuda:
            ev[1].record()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cuda:
            ev[2].record()
        opt.step()
        if cuda:
            ev[3].record()
        lv = loss.item()  # the one value that comes back, as in vkgrad
        dt = time.perf_counter() - ts
        if s > 1:
            wall.append(dt)
            if cuda:
                fwd.append(ev[0].elapsed_time(ev[1]))
                bwd.append(ev[1].elapsed_time(ev[2]))
                upd.append(ev[2].elapsed_time(ev[3]))
        ev_now = s % eval_every == 0 or s == steps
        if ev_now:
            v = evaluate()
        if csv:
            csv.write(f"{s},{lv:.6f},{v:.6f}," if ev_now else f"{s},{lv:.6f},,")
            csv.write(f"{n_tok / dt:.1f},{time.perf_counter() - t0:.3f}\n")
        if s % max(steps // 20, 1) == 0 or s == 1 or s == steps or ev_now:
            line = f"step {s}/{steps}  loss {lv:.4f}"
            if ev_now:
                line += f"  validation {v:.4f}"
            print(line + f"  {n_tok / dt:.0f} tok/s", flush=True)
    if csv:
        csv.close()
    print(f"done: {steps} steps in {time.perf_counter() - t0:.1f} s; train loss {lv:.4f}, "
          f"validation loss {v:.4f} (a uniform guess: ln {VOCAB} = {math.log(VOCAB):.4f})")
    if wall:
        w = statistics.median(wall)
        print(f"step time: {w * 1e3:.3f} ms (median wall), {n_tok / w:.0f} tokens/s")
    if fwd:
        f_, b_, u_ = (statistics.median(z) for z in (fwd, bwd, upd))
        print(f"step split (CUDA events, median of {len(fwd)} steps): forward {f_:.3f} ms, "
              f"backward {b_:.3f} ms, optimizer {u_:.3f} ms, sum {f_ + b_ + u_:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

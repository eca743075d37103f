#!/usr/bin/env python3
"""One transformer layer (Megatron/GPT-NeoX structure, TP-local shapes, no communication), bf16,
forward and forward+backward times on this GPU, for comparison with `sim --ops`.
Structure per layer: LN, QKV linear, baddbmm scores (scale folded in), masked_fill (causal),
softmax (unfused) or SDPA flash, bmm context, out linear, residual add, LN, fc1 linear, GeLU,
fc2 linear, residual add. No dropout, no rotary. Writes $OUT/layer.csv."""
import os, time, statistics, math
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
OUT = os.environ.get("OUT", "/tmp/out"); os.makedirs(OUT, exist_ok=True)
dev = "cuda"; dt = torch.bfloat16

class Layer(torch.nn.Module):
    def __init__(s, h, heads, hl, fl, flash):
        super().__init__()
        s.h, s.heads, s.hl, s.flash = h, heads, hl, flash
        s.d = hl // heads
        s.ln1 = torch.nn.LayerNorm(h); s.ln2 = torch.nn.LayerNorm(h)
        s.qkv = torch.nn.Linear(h, 3 * hl); s.out = torch.nn.Linear(hl, h)
        s.fc1 = torch.nn.Linear(h, fl); s.fc2 = torch.nn.Linear(fl, h)
    def forward(s, x, mask):
        b, sq, h = x.shape
        y = s.qkv(s.ln1(x)).view(b, sq, s.heads, 3, s.d)
        q, k, v = [y[:, :, :, i].permute(0, 2, 1, 3) for i in range(3)]  # b, heads, s, d (strided)
        if s.flash:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                ctx = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        else:
            qb = q.reshape(b * s.heads, sq, s.d); kb = k.reshape(b * s.heads, sq, s.d); vb = v.reshape(b * s.heads, sq, s.d)
            sc = torch.baddbmm(torch.empty(b * s.heads, sq, sq, device=x.device, dtype=x.dtype), qb, kb.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(s.d))
            sc = sc.masked_fill(mask, -10000.0)
            p = torch.softmax(sc, dim=-1)
            ctx = torch.bmm(p, vb).view(b, s.heads, sq, s.d)
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, sq, s.hl)
        x = x + s.out(ctx)
        return x + s.fc2(F.gelu(s.fc1(s.ln2(x))))

def ev(): return torch.cuda.Event(enable_timing=True)
rows = []
cfgs = [("1.3b_tp1", 2048, 16, 2048, 8192), ("13b_tp8", 5120, 5, 640, 2560), ("20b_tp8", 6144, 8, 768, 3072)]
for name, h, heads, hl, fl in cfgs:
    for sq in [512, 1024, 2048, 4096]:
        for flash in [False, True]:
            torch.manual_seed(0)
            L = Layer(h, heads, hl, fl, flash).to(dev, dt)
            b = 4
            x = torch.randn(b, sq, h, device=dev, dtype=dt, requires_grad=True)
            mask = torch.triu(torch.ones(sq, sq, device=dev, dtype=torch.bool), 1)
            g = torch.randn(b, sq, h, device=dev, dtype=dt)
            st = torch.cuda.Stream(); st.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(st):
                for _ in range(3):
                    for p_ in L.parameters(): p_.grad = None
                    x.grad = None
                    L(x, mask).backward(g)
            torch.cuda.current_stream().wait_stream(st)
            for p_ in L.parameters(): p_.grad = None
            x.grad = None
            gf = torch.cuda.CUDAGraph()
            with torch.cuda.graph(gf):
                yf = L(x, mask)
            gb = torch.cuda.CUDAGraph()
            with torch.cuda.graph(gb):
                y = L(x, mask); y.backward(g)
            f, fb = [], []
            for graph, lst in ((gf, f), (gb, fb)):
                graph.replay(); torch.cuda.synchronize()
                for _ in range(5):
                    a, e = ev(), ev()
                    a.record(); graph.replay(); e.record(); torch.cuda.synchronize()
                    lst.append(a.elapsed_time(e))
            rows.append((name, h, heads, hl, fl, b, sq, "flash" if flash else "standard", statistics.median(f) * 1e3, statistics.median(fb) * 1e3))
            print(rows[-1], flush=True)
            del L, x, g, y, yf, gf, gb
            torch.cuda.empty_cache()
with open(os.path.join(OUT, "layer.csv"), "w") as fh:
    fh.write("config,hidden,heads_local,hidden_local,ffn_local,micro_batch,seq_len,attention,fwd_us,fwd_bwd_us\n")
    for r in rows:
        fh.write("%s,%d,%d,%d,%d,%d,%d,%s,%.1f,%.1f\n" % r)

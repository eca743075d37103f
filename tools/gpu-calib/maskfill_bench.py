#!/usr/bin/env python3
"""Masked fill on an H100: out-of-place masked_fill (what autograd runs for the gradient), in-place
masked_fill_ (what GPT-NeoX's attention_mask_func runs forward), torch.where and a copy, over
b*a x s x s fp16 scores with a broadcast causal [1, s, s] mask; bytes = read + write. Run by hand on
a GPU machine: python3 maskfill_bench.py (writes mf.csv to $OUT)."""
import torch, os, csv
out = os.environ.get("OUT", ".")
rows = []
def t(fn, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / reps / 1e3
for L in (1024, 2048, 4096):
    n = 256 * 1024 * 1024 // (L * L)
    a = torch.randn(n, L, L, device="cuda", dtype=torch.float16)
    m = torch.ones(L, L, device="cuda", dtype=torch.bool).triu(1).view(1, L, L)
    byt = 2 * a.numel() * 2
    to = t(lambda: a.masked_fill(m, -10000.0))
    ti = t(lambda: a.masked_fill_(m, -10000.0))
    tw = t(lambda: torch.where(m, torch.tensor(-10000.0, device="cuda", dtype=torch.float16), a))
    tc = t(lambda: a.clone())
    for name, tt in (("masked_fill", to), ("masked_fill_", ti), ("where", tw), ("copy", tc)):
        rows.append((name, L, n, byt, tt, byt / tt / 1e9))
        print(name, L, n, "%.3f ms" % (tt * 1e3), "%.0f GB/s" % (byt / tt / 1e9))
with open(os.path.join(out, "mf.csv"), "w") as f:
    w = csv.writer(f); w.writerow(["kernel", "row", "batch", "bytes", "seconds", "GBps"]); w.writerows(rows)

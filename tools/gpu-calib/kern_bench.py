#!/usr/bin/env python3
"""Memory-bound and attention kernels after a heat soak: softmax forward and backward over row
lengths and masked_fill (CUDA-graph timed), FlashAttention-2 forward (graph) and forward + backward
(eager). Writes $OUT/kern.csv."""
import os, time, math, statistics
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
OUT = os.environ.get("OUT", "/tmp/out"); os.makedirs(OUT, exist_ok=True)
dev = "cuda"; dt = torch.bfloat16
def ev(): return torch.cuda.Event(enable_timing=True)
def gtime(fn, reps=20):
    st = torch.cuda.Stream(); st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps): fn()
    g.replay(); torch.cuda.synchronize()
    r = []
    for _ in range(5):
        a, e = ev(), ev(); a.record(); g.replay(); e.record(); torch.cuda.synchronize()
        r.append(a.elapsed_time(e) * 1e3 / reps)
    return statistics.median(r)
def etime(fn, reps=10):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    r = []
    for _ in range(5):
        a, e = ev(), ev(); a.record()
        for _ in range(reps): fn()
        e.record(); torch.cuda.synchronize()
        r.append(a.elapsed_time(e) * 1e3 / reps)
    return statistics.median(r)
x = torch.randn(8192, 8192, device=dev, dtype=dt); y = torch.randn_like(x)
end = time.time() + 10
while time.time() < end:
    for _ in range(20): torch.mm(x, y)
    torch.cuda.synchronize()
del x, y
rows = []
def add(kernel, shape, nbytes, flops, us):
    rows.append((kernel, shape, nbytes, flops, us)); print(rows[-1], flush=True)
total = 256 * 1024 * 1024  # elements per softmax / masked_fill case
for L in [128, 256, 512, 1024, 2048, 4096, 8192]:
    R = total // L
    a = torch.randn(R, L, device=dev, dtype=dt); gy = torch.randn_like(a)
    add("softmax", "%dx%d" % (R, L), 2 * a.numel() * 2, 0, gtime(lambda: torch.softmax(a, -1)))
    p = torch.softmax(a, -1)
    add("softmax_bwd", "%dx%d" % (R, L), 3 * a.numel() * 2, 0,
        gtime(lambda: torch._softmax_backward_data(gy, p, -1, dt)))
    m = torch.triu(torch.ones(L, L, device=dev, dtype=torch.bool), 1)
    a3 = a.view(-1, L, L)
    add("masked_fill", "%dx%dx%d" % (a3.shape[0], L, L), 2 * a.numel() * 2, 0,
        gtime(lambda: a3.masked_fill(m, -10000.0)))
    del a, gy, p, a3
# flash forward and backward (backward through autograd, timed eagerly: long kernels)
for (B, H, d) in [(4, 16, 128), (4, 8, 96), (4, 32, 64), (4, 5, 128)]:
    for s in [512, 1024, 2048, 4096]:
        q = torch.randn(B, H, s, d, device=dev, dtype=dt, requires_grad=True)
        k = torch.randn_like(q, requires_grad=True); v = torch.randn_like(q, requires_grad=True)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = F.scaled_dot_product_attention(q, k, v)
            go = torch.randn_like(o)
            f = 4.0 * B * H * s * s * d
            add("flash_fwd", "%dx%dx%d d%d" % (B * H, s, s, d), B * H * s * d * 2 * 4, f, gtime(lambda: F.scaled_dot_product_attention(q, k, v), reps=5))
            add("flash_fwd_bwd", "%dx%dx%d d%d" % (B * H, s, s, d), B * H * s * d * 2 * 12, 3.5 * f,
                etime(lambda: torch.autograd.grad(F.scaled_dot_product_attention(q, k, v), (q, k, v), go)))
        del q, k, v, o, go
with open(os.path.join(OUT, "kern.csv"), "w") as fh:
    fh.write("kernel,shape,bytes,flops,time_us\n")
    for r in rows: fh.write("%s,%s,%d,%.0f,%.3f\n" % r)

#!/usr/bin/env python3
"""First pass (eager PyTorch, CUDA events): GEMM / batched GEMM / memory-bound microbenchmarks for
the simulator's GPU model; the kernel-time figures come from gemm_bench.py (CUDA graphs). Used for:
layer norm and GeLU backward, fused Adam, FlashAttention forward (s >= 1024).
Writes $OUT/gemm.csv, $OUT/mem.csv and $OUT/env.txt. Random data (never zeros); inputs rotated
among several buffers so that small operands do not sit in L2; CUDA events; median of 3 trials."""
import os, sys, time, math, subprocess, statistics
import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
props = torch.cuda.get_device_properties(0)
t_start = time.time()
BUDGET = float(os.environ.get("BUDGET_S", "330"))

def smi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:
        return "nvidia-smi failed: %s" % e

env = open(os.path.join(OUT, "env.txt"), "w")
env.write("device %s, %d SMs, L2 %d bytes, mem %d bytes\n" % (props.name, props.multi_processor_count,
          getattr(props, "L2_cache_size", 0), props.total_memory))
env.write("torch %s, cuda %s, cublas %s\n" % (torch.__version__, torch.version.cuda,
          torch.backends.cuda.preferred_blas_library() if hasattr(torch.backends.cuda, "preferred_blas_library") else "?"))
env.write("smi before: %s\n" % smi())
env.flush()

def timeit(fn, target_ms=12.0):
    fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    est = max(s.elapsed_time(e), 1e-3)
    reps = int(min(200, max(3, target_ms / est)))
    for _ in range(2):
        fn()
    res = []
    for _ in range(3):
        s.record()
        for _ in range(reps):
            fn()
        e.record(); torch.cuda.synchronize()
        res.append(s.elapsed_time(e) / reps)
    return statistics.median(res) * 1e3  # microseconds

def nbuf(bytes_per_set):
    return max(1, min(8, math.ceil(192e6 / max(bytes_per_set, 1))))

gemm_rows = []
def gemm(label, m, n, k, dtype=torch.bfloat16, layout="fwd", batch=1):
    """fwd: y[M,N] = x[M,K] W[N,K]^T (nn.Linear); dgrad: (M,K)=(M,N)(N,K); wgrad (N,K)=(M,N)^T(M,K)
       bmm: [B,M,K] @ [B,K,N]"""
    el = torch.finfo(dtype).bits // 8
    if batch > 1 or layout == "bmm":
        per = batch * (m * k + k * n + m * n) * el
        nb = nbuf(per)
        A = [torch.randn(batch, m, k, device=dev, dtype=dtype) for _ in range(nb)]
        B = [torch.randn(batch, k, n, device=dev, dtype=dtype) for _ in range(nb)]
        C = [torch.empty(batch, m, n, device=dev, dtype=dtype) for _ in range(nb)]
        it = [0]
        def fn():
            i = it[0] = (it[0] + 1) % nb
            torch.bmm(A[i], B[i], out=C[i])
    else:
        per = (m * k + k * n + m * n) * el
        nb = nbuf(per)
        if layout == "fwd":
            A = [torch.randn(m, k, device=dev, dtype=dtype) for _ in range(nb)]
            B = [torch.randn(n, k, device=dev, dtype=dtype) for _ in range(nb)]
            it = [0]
            def fn():
                i = it[0] = (it[0] + 1) % nb
                F.linear(A[i], B[i])
        elif layout == "nn":
            A = [torch.randn(m, k, device=dev, dtype=dtype) for _ in range(nb)]
            B = [torch.randn(k, n, device=dev, dtype=dtype) for _ in range(nb)]
            it = [0]
            def fn():
                i = it[0] = (it[0] + 1) % nb
                torch.mm(A[i], B[i])
        elif layout == "tn":  # A^T B with A stored [K, M]: the weight-gradient layout
            A = [torch.randn(k, m, device=dev, dtype=dtype) for _ in range(nb)]
            B = [torch.randn(k, n, device=dev, dtype=dtype) for _ in range(nb)]
            it = [0]
            def fn():
                i = it[0] = (it[0] + 1) % nb
                torch.mm(A[i].t(), B[i])
    us = timeit(fn)
    fl = 2.0 * batch * m * n * k
    gemm_rows.append((label, str(dtype).replace("torch.", ""), layout, batch, m, n, k, us, fl / us / 1e6))
    del A, B

def flush_gemm():
    with open(os.path.join(OUT, "gemm.csv"), "w") as f:
        f.write("label,dtype,layout,batch,m,n,k,time_us,tflops\n")
        for r in gemm_rows:
            f.write("%s,%s,%s,%d,%d,%d,%d,%.3f,%.2f\n" % r)

def over():
    return time.time() - t_start > BUDGET

# E) square sizes and small K: the fall-off
for n in [128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384]:
    gemm("square", n, n, n)
for k in [32, 64, 128, 256, 512, 1024, 2048, 4096]:
    gemm("smallk", 8192, 8192, k)
gemm("square_fp16", 8192, 8192, 8192, torch.float16)
gemm("square_fp16", 4096, 4096, 4096, torch.float16)
flush_gemm()
env.write("smi after squares: %s\n" % smi()); env.flush()

# D) wave sweep: M = 8192, K = 4096, N in steps of 128; and M = 2048
for n in range(128, 8192 + 1, 128):
    gemm("wave_m8192", 8192, n, 4096)
for n in range(256, 8192 + 1, 256):
    gemm("wave_m2048", 2048, n, 2048)
flush_gemm()

# B) alignment: one dimension around 4096 (and 2048), the others fixed
for n in list(range(4032, 4161, 8)) + [4095, 4097, 4099, 4100, 4104, 4112, 4128, 4160, 4176, 4192]:
    gemm("align_n", 8192, n, 4096)
for k in list(range(4032, 4161, 8)) + [4095, 4097, 4099, 4100]:
    gemm("align_k", 8192, 4096, k)
for h in [1984, 2000, 2016, 2032, 2040, 2047, 2048, 2049, 2056, 2064, 2080, 2096, 2112]:
    gemm("align_h_qkv", 8192, 3 * h, h)
    gemm("align_h_fc2", 8192, h, 4 * h)
flush_gemm()

# C) vocabulary projection: unpadded 50257 vs padded
for h in [2048, 5120]:
    for v in [50257, 50304, 50432, 51200]:
        for t in [1, 2, 8]:
            vl = math.ceil(v / t)
            gemm("vocab_fwd_h%d_v%d_t%d" % (h, v, t), 8192, vl, h)
            if t == 1:
                gemm("vocab_dgrad_h%d_v%d" % (h, v), 8192, h, vl, layout="nn")
                gemm("vocab_wgrad_h%d_v%d" % (h, v), vl, h, 8192, layout="tn")
flush_gemm()
env.write("smi after vocab: %s\n" % smi()); env.flush()

# F) attention batched GEMMs: scores [s x d]x[d x s], context [s x s]x[s x d]
for B in [8, 32, 64]:
    for d in [64, 96, 128]:
        for s in [512, 1024, 2048, 4096]:
            gemm("bmm_scores_d%d" % d, s, s, d, layout="bmm", batch=B)
            gemm("bmm_context_d%d" % d, s, d, s, layout="bmm", batch=B)
for d in [80, 100, 127, 129]:
    gemm("bmm_scores_d%d" % d, 2048, 2048, d, layout="bmm", batch=32)
    gemm("bmm_context_d%d" % d, 2048, d, 2048, layout="bmm", batch=32)
flush_gemm()

# A) the model GEMMs: QKV, attention output, MLP fc1 and fc2, sharded by TP, forward
done = set()
for h in [512, 768, 1024, 2048, 4096, 5120, 6144]:
    for t in [1, 2, 4, 8]:
        if h == 512 and t > 2 or h == 768 and t > 4:
            pass
        for M in [2048, 4096, 8192, 16384]:
            for name, n, k in [("qkv", 3 * h // t, h), ("attn_out", h, h // t), ("fc1", 4 * h // t, h), ("fc2", h, 4 * h // t)]:
                key = (M, n, k)
                if key in done:
                    continue
                done.add(key)
                gemm("model_%s_h%d_t%d" % (name, h, t), M, n, k)
        if over():
            break
    flush_gemm()
    if over():
        break
env.write("model gemms done at %.0f s\n" % (time.time() - t_start)); env.flush()

# backward layouts at M = 8192
for h in [2048, 5120, 6144]:
    for t in [1, 8]:
        for name, n, k in [("qkv", 3 * h // t, h), ("attn_out", h, h // t), ("fc1", 4 * h // t, h), ("fc2", h, 4 * h // t)]:
            gemm("bwd_dgrad_%s_h%d_t%d" % (name, h, t), 8192, k, n, layout="nn")
            gemm("bwd_wgrad_%s_h%d_t%d" % (name, h, t), n, k, 8192, layout="tn")
            gemm("fp16_%s_h%d_t%d" % (name, h, t), 8192, n, k, torch.float16)
flush_gemm()
env.write("smi after gemms: %s\n" % smi()); env.flush()

# G) memory-bound operators
mem_rows = []
def mem(label, fn, bytes_moved, shape):
    us = timeit(fn)
    mem_rows.append((label, shape, bytes_moved, us, bytes_moved / us / 1e3))
def flush_mem():
    with open(os.path.join(OUT, "mem.csv"), "w") as f:
        f.write("label,shape,bytes,time_us,gbps\n")
        for r in mem_rows:
            f.write("%s,%s,%.0f,%.3f,%.1f\n" % r)

for nbytes in [64e6, 256e6, 1e9, 4e9]:
    n = int(nbytes // 2)
    x = torch.randn(n, device=dev, dtype=torch.bfloat16); y = torch.empty_like(x)
    mem("copy", lambda: y.copy_(x), 2 * n * 2, "n=%d" % n)
    del x, y
for (M, h) in [(8192, 2048), (8192, 5120), (16384, 6144), (2048, 2048)]:
    x = torch.randn(M, h, device=dev, dtype=torch.bfloat16); w = torch.randn(h, device=dev, dtype=torch.bfloat16); b = torch.randn_like(w)
    mem("layernorm", lambda: F.layer_norm(x, (h,), w, b), 2 * M * h * 2, "%dx%d" % (M, h))
    r = torch.randn_like(x)
    mem("add", lambda: torch.add(x, r), 3 * M * h * 2, "%dx%d" % (M, h))
    mem("dropout", lambda: F.dropout(x, 0.1, True), M * h * (2 * 2 + 1), "%dx%d" % (M, h))
    x4 = torch.randn(M, 4 * h // 8 if M == 16384 else 4 * h, device=dev, dtype=torch.bfloat16)
    mem("gelu", lambda: F.gelu(x4), 2 * x4.numel() * 2, "%dx%d" % tuple(x4.shape))
    del x, w, b, r, x4
for (B, s) in [(64, 512), (64, 1024), (64, 2048), (32, 4096)]:
    x = torch.randn(B, s, s, device=dev, dtype=torch.bfloat16)
    mem("softmax", lambda: torch.softmax(x, -1), 2 * x.numel() * 2, "%dx%dx%d" % (B, s, s))
    del x
flush_mem()
# layer norm / gelu / softmax backward through autograd
for (M, h) in [(8192, 2048), (8192, 5120)]:
    x = torch.randn(M, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(h, device=dev, dtype=torch.bfloat16, requires_grad=True); b = torch.randn_like(w, requires_grad=True)
    y = F.layer_norm(x, (h,), w, b); g = torch.randn_like(y)
    mem("layernorm_bwd", lambda: torch.autograd.grad(y, (x, w, b), g, retain_graph=True), 3 * M * h * 2, "%dx%d" % (M, h))
    x4 = torch.randn(M, 4 * h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    y4 = F.gelu(x4); g4 = torch.randn_like(y4)
    mem("gelu_bwd", lambda: torch.autograd.grad(y4, x4, g4, retain_graph=True), 3 * x4.numel() * 2, "%dx%d" % (M, 4 * h))
    del x, w, b, y, g, x4, y4, g4
flush_mem()
# fused Adam over 100 M fp32 parameters: reads p, g, m, v, writes p, m, v = 28 bytes/param
try:
    n = 100_000_000
    p = torch.nn.Parameter(torch.randn(n, device=dev)); p.grad = torch.randn(n, device=dev)
    opt = torch.optim.Adam([p], lr=1e-4, fused=True); opt.step()
    mem("adam_fused_fp32", lambda: opt.step(), 28.0 * n, "n=%d" % n)
    del p, opt
except Exception as ex:
    env.write("adam failed: %s\n" % ex)
flush_mem()
# flash attention (SDPA) vs the unfused path, causal, b=4
try:
    from torch.nn.attention import sdpa_kernel, SDPBackend
    for (a, d) in [(16, 128), (64, 96), (40, 128)]:
        for s in [512, 1024, 2048, 4096]:
            q = torch.randn(4, a, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn_like(q, requires_grad=True); v = torch.randn_like(q, requires_grad=True)
            fl = 4.0 * 4 * a * s * s * d
            for backend, nm in [(SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.MATH, "math")]:
                try:
                    with sdpa_kernel(backend):
                        us = timeit(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=False))
                    gemm_rows.append(("sdpa_%s_fwd_a%d" % (nm, a), "bfloat16", "sdpa", 4 * a, s, s, d, us, fl / us / 1e6))
                except Exception as ex:
                    env.write("sdpa %s failed: %s\n" % (nm, ex))
            del q, k, v
            if over():
                break
except Exception as ex:
    env.write("sdpa failed: %s\n" % ex)
flush_gemm()
env.write("smi end: %s\nelapsed %.0f s\n" % (smi(), time.time() - t_start))
env.close()
print(open(os.path.join(OUT, "env.txt")).read())
print("gemm rows %d, mem rows %d" % (len(gemm_rows), len(mem_rows)))
for r in gemm_rows[:40]:
    print(r)

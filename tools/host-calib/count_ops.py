#!/usr/bin/env python3
"""Count the ATen operators one transformer layer dispatches in PyTorch eager,
forward and backward, and time what one dispatch costs on this CPU.

Our own code, written for the simulator's host model (issue 26, "Host work
measured, not assumed"; sim/run/executor.c's host_op_dispatch). Three layer
styles are written after their frameworks' code (sources cited at each class):

  neox      GPT-NeoX as of 2022 under DeepSpeed (configs/1-3B.yml: standard
            attention, every fusion off, rotary_pct 0.25, no parallel
            residual); neox_pr is the same with gpt_j_residual (20B.yml).
  megatron  Megatron-LM's legacy GPT layer (megatron/model/transformer.py,
            2022-2023) with its fused kernels; where Debian's CPU torch lacks
            a kernel the stand-in dispatches the same number of operators the
            fused kernel launches (see FusedStandIn and the table below).
  llama     Meta's Llama 3 reference block (llama3 llama/model.py: RMSNorm,
            complex rotary, SwiGLU, GQA by repeat_kv, explicit
            matmul-softmax-matmul attention), KV cache removed for training;
            llama_sdpa replaces the attention core by one fused
            scaled-dot-product-attention operator (torchtitan-style training).

Counting: a TorchDispatchMode (torch.utils._python_dispatch, PyTorch >= 1.13)
sees every ATen operator that reaches the Python dispatch key, that is the op
stream below autograd and below CompositeImplicitAutograd decompositions, and
above the backend kernels: what a CUDA/HIP build would dispatch too (counts do
not depend on device or shape, with two exceptions handled here: dropout with
p>0 is native_dropout on CUDA (one fused op) but bernoulli_/div_/mul on CPU;
we dispatch native_dropout, the CUDA path). Backward is counted with the mode
active around loss.backward(); the autograd engine runs CPU work on the
calling thread and carries the mode in its thread-local state. As a cross
check the same passes run under torch.autograd.profiler, counting aten::
events with no aten:: ancestor ("profiler_toplevel", what Python or the
autograd engine called) and all aten:: events ("profiler_all", including the
CPU kernels' internal calls, which are CPU-specific).

Run:  python3 tools/host-calib/count_ops.py [--quick]
Writes host_ops.csv and dispatch_cost.csv next to this file.
"""

import argparse
import contextlib
import csv
import math
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

torch.set_num_threads(1)
torch.manual_seed(0)

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------

# Operators that launch no device kernel: views and metadata-only ops, and
# allocations (the caching allocator, no kernel). Everything else dispatched
# (arithmetic, copies, fills, reductions, GEMMs, in-place updates) launches
# at least one kernel on a GPU. A view is an op whose schema returns an alias
# that is not written (Tensor(a)); an in-place op returns Tensor(a!) and does
# launch a kernel.
NO_KERNEL_NAMES = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "_unsafe_view", "detach", "lift_fresh", "alias", "_reshape_alias",
    "resolve_conj", "resolve_neg", "set_",
}


def is_view_or_alloc(func):
    name = func.overloadpacket.__name__
    if name in NO_KERNEL_NAMES:
        return True
    for r in func._schema.returns:
        ai = r.alias_info
        if ai is not None and not ai.is_write:
            return True
    return False


class OpCounter(TorchDispatchMode):
    """Records every ATen operator dispatched while active. Within
    suspended() operators run but are not recorded (they compute what a fused
    kernel computes); synthetic() records the operators the fused kernel
    dispatches instead."""

    def __init__(self):
        super().__init__()
        self.ops = []        # names as counted (fused kernels as stand-ins)
        self.kernel_ops = 0  # of those, ones that launch a kernel
        self.raw = 0         # every op actually dispatched, stand-ins' too
        self.detach = 0      # detach calls seen (not counted, see below)
        self.raw_kernels = 0  # of raw, ones that launch a kernel
        self._suspend = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name != "detach":
            self.raw += 1
            if not is_view_or_alloc(func):
                self.raw_kernels += 1
        if name == "detach":
            # Under a Python dispatch mode PyTorch 1.13 dispatches extra
            # detach calls of its own (x.detach() shows twice; an op whose
            # output autograd saves, exp or _softmax, shows a detach after it;
            # the profiler shows neither). They launch nothing; left out of
            # every dispatch_mode count. Real detaches (one per AccumulateGrad
            # on a first backward, clip_grad_norm_'s) are in the profiler's.
            self.detach += 1
            return func(*args, **(kwargs or {}))
        if not self._suspend:
            self.ops.append(func.overloadpacket.__name__)
            if not is_view_or_alloc(func):
                self.kernel_ops += 1
        return func(*args, **(kwargs or {}))

    @contextlib.contextmanager
    def suspended(self):
        self._suspend += 1
        try:
            yield
        finally:
            self._suspend -= 1

    def synthetic(self, name, n=1, kernels=None):
        self.ops.extend([name] * n)
        self.kernel_ops += n if kernels is None else kernels


_ACTIVE = []  # the OpCounter in use, if any (stand-ins report to it)


@contextlib.contextmanager
def counting():
    c = OpCounter()
    _ACTIVE.append(c)
    try:
        with c:
            yield c
    finally:
        _ACTIVE.pop()


@contextlib.contextmanager
def fused(name, n_ops=1):
    """Run the enclosed eager ops as one fused kernel: not recorded, n_ops
    recorded instead (under the profiler they run as what they are)."""
    if _ACTIVE:
        with _ACTIVE[-1].suspended():
            yield
        _ACTIVE[-1].synthetic(name, n_ops)
    else:
        yield


def profiler_counts(fn):
    """(top-level aten ops, all aten ops) dispatched while fn() runs."""
    with torch.autograd.profiler.profile() as prof:
        fn()
    top = allops = 0
    for e in prof.function_events:
        if not e.name.startswith("aten::"):
            continue
        allops += 1
        p = e.cpu_parent
        nested = False
        while p is not None:
            if p.name.startswith("aten::"):
                nested = True
                break
            p = p.cpu_parent
        if not nested:
            top += 1
    return top, allops


# Dropout: the CUDA path (ATen's at::dropout takes native_dropout when
# input.is_cuda() and 0 < p < 1: aten/src/ATen/native/Dropout.cpp,
# is_fused_kernel_acceptable). p == 0 dispatches nothing on either device.
def dropout(x, p, training=True):
    if not training or p == 0:
        return x
    return torch.native_dropout(x, p, True)[0]


# --------------------------------------------------------------------------
# (a) GPT-NeoX, 2022, under DeepSpeed (EleutherAI/gpt-neox megatron/model/
#     transformer.py ParallelSelfAttention / ParallelMLP /
#     ParallelTransformerLayer, megatron/model/fused_softmax.py
#     FusedScaleMaskSoftmax.forward_torch_softmax, megatron/model/
#     positional_embeddings.py RotaryEmbedding/apply_rotary_pos_emb,
#     megatron/model/utils.py gpt2_attention_mask_func, megatron/mpu/layers.py
#     Column/RowParallelLinear at model-parallel size 1; configs/1-3B.yml:
#     scaled_upper_triang_masked_softmax_fusion, bias_gelu_fusion,
#     rope_fusion, layernorm_fusion all false, gpt_j_residual false,
#     hidden_dropout = attention_dropout = 0, checkpoint_activations true).
# Layout [s, b, h]. Model-parallel regions (copy_to/reduce_from) are identity
# autograd functions at TP 1 and dispatch nothing.
# --------------------------------------------------------------------------


class NeoXRotary(nn.Module):
    # positional_embeddings.py RotaryEmbedding: cos/sin cached per seq_len.
    def __init__(self, dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq)
        self.seq_len_cached = None

    def forward(self, x, seq_dim=0, seq_len=None):
        if seq_len is None:
            seq_len = x.shape[seq_dim]
        if seq_len != self.seq_len_cached:
            self.seq_len_cached = seq_len
            t = torch.arange(seq_len, device=x.device).type_as(self.inv_freq)
            freqs = torch.einsum("i,j->ij", t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1).to(x.device)
            self.cos_cached = emb.cos()[:, None, None, :]
            self.sin_cached = emb.sin()[:, None, None, :]
        return self.cos_cached, self.sin_cached


def neox_rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=x1.ndim - 1)


def neox_apply_rotary_pos_emb(q, k, cos, sin, offset: int = 0):
    # GPT-NeoX wraps this in @torch.jit.script for fp16; TorchScript's GPU
    # fuser may then fuse the elementwise ops. Run eagerly here (the bf16
    # path, apply_rotary_pos_emb_torch, is plain eager).
    cos, sin = cos[offset: q.shape[0] + offset, ...], sin[offset: q.shape[0] + offset, ...]
    return (q * cos) + (neox_rotate_half(q) * sin), (k * cos) + (neox_rotate_half(k) * sin)


class NeoXLayer(nn.Module):
    def __init__(self, h, heads, rotary_pct=0.25, gpt_j_residual=False,
                 hidden_dropout=0.0, attention_dropout=0.0):
        super().__init__()
        self.h, self.np, self.hn = h, heads, h // heads
        self.gpt_j_residual = gpt_j_residual
        self.hidden_dropout, self.attention_dropout = hidden_dropout, attention_dropout
        self.input_layernorm = nn.LayerNorm(h)           # norms.py: torch LayerNorm
        self.post_attention_layernorm = nn.LayerNorm(h)
        self.query_key_value = nn.Linear(h, 3 * h)       # ColumnParallelLinear, bias added
        self.dense = nn.Linear(h, h)                      # RowParallelLinear, skip_bias_add
        self.dense_h_to_4h = nn.Linear(h, 4 * h)          # skip_bias_add
        self.dense_4h_to_h = nn.Linear(4 * h, h)          # skip_bias_add
        self.rotary_ndims = int(self.hn * rotary_pct)
        self.rotary_emb = NeoXRotary(self.rotary_ndims)
        self.norm_factor = math.sqrt(self.hn)             # apply_query_key_layer_scaling off

    # mpu/layers.py: skip_bias_add -> F.linear without bias, bias returned
    @staticmethod
    def _linear_skip_bias(lin, x):
        return F.linear(x, lin.weight), lin.bias

    def attention(self, hidden_states, attention_mask):
        mixed_x_layer = F.linear(hidden_states, self.query_key_value.weight,
                                 self.query_key_value.bias)
        new_tensor_shape = mixed_x_layer.size()[:-1] + (self.np, 3 * self.hn)
        mixed_x_layer = mixed_x_layer.view(*new_tensor_shape)
        # mpu.split_tensor_along_last_dim -> torch.split (contiguous_split_chunks False)
        query_layer, key_layer, value_layer = torch.split(mixed_x_layer, self.hn, dim=-1)
        # rotary on the first rotary_ndims of each head
        query_rot, query_pass = query_layer[..., : self.rotary_ndims], query_layer[..., self.rotary_ndims:]
        key_rot, key_pass = key_layer[..., : self.rotary_ndims], key_layer[..., self.rotary_ndims:]
        seq_len = key_layer.shape[0]
        cos, sin = self.rotary_emb(value_layer, seq_len=seq_len)
        query_layer, key_layer = neox_apply_rotary_pos_emb(query_rot, key_rot, cos, sin, offset=0)
        query_layer = torch.cat((query_layer, query_pass), dim=-1)
        key_layer = torch.cat((key_layer, key_pass), dim=-1)
        # ParallelSelfAttention.attention (non-flash)
        output_size = (query_layer.size(1), query_layer.size(2), query_layer.size(0), key_layer.size(0))
        query_layer = query_layer.view(output_size[2], output_size[0] * output_size[1], -1)
        key_layer = key_layer.view(output_size[3], output_size[0] * output_size[1], -1)
        matmul_result = torch.empty(output_size[0] * output_size[1], output_size[2], output_size[3],
                                    dtype=query_layer.dtype, device=query_layer.device)
        matmul_result = torch.baddbmm(matmul_result, query_layer.transpose(0, 1),
                                      key_layer.transpose(0, 1).transpose(1, 2),
                                      beta=0.0, alpha=(1.0 / self.norm_factor))
        attention_scores = matmul_result.view(*output_size)
        # FusedScaleMaskSoftmax.forward_torch_softmax: scale None
        # (apply_query_key_layer_scaling off), softmax_in_fp32 default false;
        # gpt2_attention_mask_func: masked_fill_(mask, -10000.0)
        attention_scores.masked_fill_(attention_mask, -10000.0)
        attention_probs = torch.nn.Softmax(dim=-1)(attention_scores)
        # rng tracker fork (torch.cuda get/set_rng_state: host work, no ATen op here)
        attention_probs = dropout(attention_probs, self.attention_dropout)
        output_size = (value_layer.size(1), value_layer.size(2), query_layer.size(0), value_layer.size(3))
        value_layer = value_layer.view(value_layer.size(0), output_size[0] * output_size[1], -1)
        attention_probs = attention_probs.view(output_size[0] * output_size[1], output_size[2], -1)
        context_layer = torch.bmm(attention_probs, value_layer.transpose(0, 1))
        context_layer = context_layer.view(*output_size)
        context_layer = context_layer.permute(2, 0, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.h,)
        context_layer = context_layer.view(*new_context_layer_shape)
        return self._linear_skip_bias(self.dense, context_layer)

    def mlp(self, x):
        intermediate_parallel, bias_parallel = self._linear_skip_bias(self.dense_h_to_4h, x)
        intermediate_parallel = F.gelu(intermediate_parallel + bias_parallel)  # bias_gelu_fusion off
        return self._linear_skip_bias(self.dense_4h_to_h, intermediate_parallel)

    # transformer.py get_bias_dropout_add (bias_dropout_fusion off)
    def bias_dropout_add(self, x, bias, residual, prob):
        out = dropout(x + bias, prob)
        if residual is not None:
            out = residual + out
        return out

    def forward(self, x, attention_mask):
        if self.gpt_j_residual:
            residual = x
            x1, x2 = self.input_layernorm(x), self.post_attention_layernorm(x)
            attention_output, attention_bias = self.attention(x1, attention_mask)
            with torch.enable_grad():
                attention_output = self.bias_dropout_add(
                    attention_output, attention_bias.expand_as(attention_output), None, self.hidden_dropout)
            mlp_output, mlp_bias = self.mlp(x2)
            with torch.enable_grad():
                output = self.bias_dropout_add(
                    mlp_output, mlp_bias.expand_as(mlp_output), attention_output, self.hidden_dropout)
            return residual + output  # self.reduce: identity at TP 1
        residual = x
        attention_output, attention_bias = self.attention(self.input_layernorm(x), attention_mask)
        with torch.enable_grad():
            attention_output = self.bias_dropout_add(
                attention_output, attention_bias.expand_as(residual), residual, self.hidden_dropout)
        layernorm_output = self.post_attention_layernorm(attention_output)
        mlp_output, mlp_bias = self.mlp(layernorm_output)
        with torch.enable_grad():
            output = self.bias_dropout_add(
                mlp_output, mlp_bias.expand_as(attention_output), attention_output, self.hidden_dropout)
        return output


# --------------------------------------------------------------------------
# (b) Megatron-LM legacy GPT layer (NVIDIA/Megatron-LM megatron/model/
#     transformer.py ParallelAttention/CoreAttention/ParallelMLP/
#     ParallelTransformerLayer, megatron/model/fused_softmax.py,
#     megatron/model/fused_bias_gelu.py, megatron/model/fused_bias_dropout
#     (transformer.py bias_dropout_add_fused_train), megatron/core/
#     tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication,
#     megatron/model/distributed.py DistributedDataParallel grad hooks).
# Defaults of pretrain_gpt.py: learned absolute positions (no rotary),
# attention/hidden dropout 0.1, masked_softmax_fusion, bias_gelu_fusion,
# bias_dropout_fusion, gradient_accumulation_fusion all on.
# Fused kernels stood in (Debian's torch has none of apex/Megatron's):
#   apex MixedFusedLayerNorm        -> torch layer_norm (1 op fwd, 1 op bwd;
#                                      apex: 1 kernel fwd, 2-3 kernels bwd)
#   scaled_upper_triang_masked_softmax_cuda forward/backward
#                                   -> FusedStandIn: 1 op fwd, 1 op bwd
#   bias_gelu (@torch.jit.script, nvfuser) in GeLUFunction
#                                   -> 1 op fwd, 1 op bwd (+ the engine's
#                                      sum for the bias gradient)
#   bias_dropout_add_fused_train (@torch.jit.script, nvfuser)
#                                   -> 1 op fwd (x+bias, dropout, +residual),
#                                      1 op bwd
#   fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32
#                                   -> 1 op (GEMM accumulating into main_grad)
# --------------------------------------------------------------------------


class _ScaledUpperTriangMaskedSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inputs, scale):
        with fused("scaled_upper_triang_masked_softmax_forward"):
            sq, sk = inputs.shape[-2], inputs.shape[-1]
            mask = torch.ones(sq, sk, dtype=torch.bool, device=inputs.device).triu(1)
            probs = torch.softmax((inputs * scale).masked_fill(mask, float("-inf")), -1)
        ctx.save_for_backward(probs)
        ctx.scale = scale
        return probs

    @staticmethod
    def backward(ctx, grad):
        (probs,) = ctx.saved_tensors
        with fused("scaled_upper_triang_masked_softmax_backward"):
            g = torch._softmax_backward_data(grad, probs, -1, probs.dtype) * ctx.scale
        return g, None


class _GeLUFunction(torch.autograd.Function):
    # fused_bias_gelu.py GeLUFunction: forward bias_gelu(bias, input),
    # backward bias_gelu_back -> returns (tmp, tmp)
    @staticmethod
    def forward(ctx, inputs, bias):
        ctx.save_for_backward(inputs, bias)
        with fused("bias_gelu"):
            x = bias + inputs
            out = x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
        return out

    @staticmethod
    def backward(ctx, grad_output):
        inputs, bias = ctx.saved_tensors
        with fused("bias_gelu_back"):
            x = bias + inputs
            tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
            ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + tanh_out)
            tmp = ff * grad_output
        return tmp, tmp


class _BiasDropoutAddFused(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias, residual, prob):
        with fused("bias_dropout_add_fused_train"):
            out, mask = torch.native_dropout(x + bias, prob, True)
            out = residual + out
        ctx.save_for_backward(mask)
        ctx.prob = prob
        return out

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        with fused("bias_dropout_add_fused_train_backward"):
            gx = torch.ops.aten.native_dropout_backward(g, mask, 1.0 / (1.0 - ctx.prob))
        return gx, gx, g, None


class _LinearWithGradAccumulation(torch.autograd.Function):
    # core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication
    # at TP 1, sequence_parallel off, gradient_accumulation_fusion on.
    @staticmethod
    def forward(ctx, inputs, weight, bias):
        ctx.save_for_backward(inputs, weight)
        ctx.use_bias = bias is not None
        output = torch.matmul(inputs, weight.t())
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        inputs, weight = ctx.saved_tensors
        grad_input = grad_output.matmul(weight)
        grad_output = grad_output.view(grad_output.shape[0] * grad_output.shape[1], grad_output.shape[2])
        total_input = inputs.view(inputs.shape[0] * inputs.shape[1], inputs.shape[2])
        with fused("wgrad_gemm_accum_fp32"):
            weight.main_grad.add_(grad_output.t().matmul(total_input))
        grad_weight = None
        grad_bias = grad_output.sum(dim=0) if ctx.use_bias else None
        return grad_input, grad_weight, grad_bias


class MegatronLinear(nn.Module):
    def __init__(self, fin, fout, skip_bias_add):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(fout, fin) * 0.02)
        self.bias = nn.Parameter(torch.zeros(fout))
        self.skip_bias_add = skip_bias_add

    def forward(self, x):
        bias = self.bias if not self.skip_bias_add else None
        out = _LinearWithGradAccumulation.apply(x, self.weight, bias)
        return out, (self.bias if self.skip_bias_add else None)


class MegatronLayer(nn.Module):
    def __init__(self, h, heads, hidden_dropout=0.1, attention_dropout=0.1):
        super().__init__()
        self.h, self.np, self.hn = h, heads, h // heads
        self.hidden_dropout, self.attention_dropout = hidden_dropout, attention_dropout
        self.input_layernorm = nn.LayerNorm(h)
        self.post_attention_layernorm = nn.LayerNorm(h)
        self.query_key_value = MegatronLinear(h, 3 * h, skip_bias_add=False)
        self.dense = MegatronLinear(h, h, skip_bias_add=True)
        self.dense_h_to_4h = MegatronLinear(h, 4 * h, skip_bias_add=True)
        self.dense_4h_to_h = MegatronLinear(4 * h, h, skip_bias_add=True)
        self.norm_factor = math.sqrt(self.hn)
        self.coeff = None  # apply_query_key_layer_scaling: coeff = layer_number;
        # scale cancels in softmax; one scale multiply either way (inside the kernel)
        self._buffer = None

    def _global_buffer(self, shape, dtype):
        # core/utils.py GlobalMemoryBuffer.get_tensor: buffer[0:numel].view(shape)
        numel = shape[0] * shape[1] * shape[2]
        if self._buffer is None or self._buffer.numel() < numel or self._buffer.dtype != dtype:
            self._buffer = torch.empty(numel, dtype=dtype)
        return self._buffer[0:numel].view(*shape)

    def core_attention(self, query_layer, key_layer, value_layer):
        output_size = (query_layer.size(1), query_layer.size(2), query_layer.size(0), key_layer.size(0))
        query_layer = query_layer.reshape(output_size[2], output_size[0] * output_size[1], -1)
        key_layer = key_layer.view(output_size[3], output_size[0] * output_size[1], -1)
        matmul_input_buffer = self._global_buffer(
            (output_size[0] * output_size[1], output_size[2], output_size[3]), query_layer.dtype)
        matmul_result = torch.baddbmm(matmul_input_buffer, query_layer.transpose(0, 1),
                                      key_layer.transpose(0, 1).transpose(1, 2),
                                      beta=0.0, alpha=(1.0 / self.norm_factor))
        attention_scores = matmul_result.view(*output_size)
        # FusedScaleMaskSoftmax.forward_fused_softmax, upper-triangular (causal) path
        b, np_, sq, sk = attention_scores.size()
        probs = _ScaledUpperTriangMaskedSoftmax.apply(attention_scores.view(-1, sq, sk), 1.0)
        attention_probs = probs.view(b, np_, sq, sk)
        attention_probs = dropout(attention_probs, self.attention_dropout)  # under rng fork
        output_size = (value_layer.size(1), value_layer.size(2), query_layer.size(0), value_layer.size(3))
        value_layer = value_layer.view(value_layer.size(0), output_size[0] * output_size[1], -1)
        attention_probs = attention_probs.view(output_size[0] * output_size[1], output_size[2], -1)
        context_layer = torch.bmm(attention_probs, value_layer.transpose(0, 1))
        context_layer = context_layer.view(*output_size)
        context_layer = context_layer.permute(2, 0, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.h,)
        return context_layer.view(*new_context_layer_shape)

    def self_attention(self, hidden_states):
        mixed_x_layer, _ = self.query_key_value(hidden_states)
        new_tensor_shape = mixed_x_layer.size()[:-1] + (self.np, 3 * self.hn)
        mixed_x_layer = mixed_x_layer.view(*new_tensor_shape)
        query_layer, key_layer, value_layer = torch.split(mixed_x_layer, self.hn, dim=-1)
        context_layer = self.core_attention(query_layer, key_layer, value_layer)
        return self.dense(context_layer)

    def mlp(self, x):
        intermediate_parallel, bias_parallel = self.dense_h_to_4h(x)
        intermediate_parallel = _GeLUFunction.apply(intermediate_parallel, bias_parallel)
        return self.dense_4h_to_h(intermediate_parallel)

    def forward(self, hidden_states, attention_mask=None):
        layernorm_output = self.input_layernorm(hidden_states)
        attention_output, attention_bias = self.self_attention(layernorm_output)
        residual = hidden_states
        layernorm_input = _BiasDropoutAddFused.apply(
            attention_output, attention_bias.expand_as(residual), residual, self.hidden_dropout)
        layernorm_output = self.post_attention_layernorm(layernorm_input)
        mlp_output, mlp_bias = self.mlp(layernorm_output)
        residual = layernorm_input
        output = _BiasDropoutAddFused.apply(
            mlp_output, mlp_bias.expand_as(residual), residual, self.hidden_dropout)
        return output  # make_viewless_tensor: output is not a view, no op


def megatron_ddp_hooks(layer):
    """megatron/model/distributed.py (use_contiguous_buffers_in_local_ddp):
    every parameter gets main_grad (a view into one contiguous buffer) and a
    hook on its AccumulateGrad node: main_grad.add_(grad); grad = None.
    Weights under gradient_accumulation_fusion get no .grad (wgrad GEMM
    accumulates in place); biases and norms do."""
    params = [p for p in layer.parameters()]
    total = sum(p.numel() for p in params)
    buf = torch.zeros(total)
    off = 0
    handles = []
    for p in params:
        p.main_grad = buf[off: off + p.numel()].view_as(p)
        off += p.numel()
        param_tmp = p.expand_as(p)
        grad_acc = param_tmp.grad_fn.next_functions[0][0]

        def hook(*unused, p=p):
            if p.grad is not None:
                p.main_grad.add_(p.grad.data)
                p.grad = None
        grad_acc.register_hook(hook)
        handles.append(grad_acc)  # keep the node alive (Megatron keeps grad_accs)
    layer._grad_accs = handles


# --------------------------------------------------------------------------
# (c) Llama (meta-llama/llama3 llama/model.py TransformerBlock, Attention,
#     FeedForward, RMSNorm, apply_rotary_emb, repeat_kv; fairscale Column/
#     RowParallelLinear at model-parallel size 1 are F.linear without bias).
#     Training form: the inference KV cache writes are dropped, keys/values
#     are this step's xk/xv. Layout [b, s, h].
# --------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim))


class _SDPAStandIn(torch.autograd.Function):
    # PyTorch >= 2.0 F.scaled_dot_product_attention(is_causal=True) on a GPU:
    # one _scaled_dot_product_flash_attention (or _efficient_attention) op
    # forward, one *_backward op backward.
    @staticmethod
    def forward(ctx, q, k, v):
        with fused("_scaled_dot_product_flash_attention"):
            s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(q.shape[-1])
            sq = s.shape[-1]
            mask = torch.ones(sq, sq, dtype=torch.bool).triu(1)
            p = torch.softmax(s.masked_fill(mask, float("-inf")), -1)
            out = torch.matmul(p, v)
        ctx.save_for_backward(q, k, v, p)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        with fused("_scaled_dot_product_flash_attention_backward"):
            gv = torch.matmul(p.transpose(2, 3), g)
            gp = torch.matmul(g, v.transpose(2, 3))
            gs = torch._softmax_backward_data(gp, p, -1, p.dtype) / math.sqrt(q.shape[-1])
            gq = torch.matmul(gs, k)
            gk = torch.matmul(gs.transpose(2, 3), q)
        return gq, gk, gv


class LlamaLayer(nn.Module):
    def __init__(self, h, heads, kv_heads, seq, multiple_of=256, sdpa=False, norm_eps=1e-5):
        super().__init__()
        self.n_heads, self.n_kv = heads, kv_heads
        self.n_rep = heads // kv_heads
        self.head_dim = h // heads
        self.sdpa = sdpa
        self.wq = nn.Linear(h, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(h, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(h, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, h, bias=False)
        hidden = int(2 * (4 * h) / 3)
        hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(h, hidden, bias=False)
        self.w2 = nn.Linear(hidden, h, bias=False)
        self.w3 = nn.Linear(h, hidden, bias=False)
        self.attention_norm = RMSNorm(h, eps=norm_eps)
        self.ffn_norm = RMSNorm(h, eps=norm_eps)
        self.freqs_cis = precompute_freqs_cis(self.head_dim, seq * 2)[:seq]

    def attention(self, x, freqs_cis, mask):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = F.linear(x, self.wq.weight), F.linear(x, self.wk.weight), F.linear(x, self.wv.weight)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)
        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        if self.sdpa:
            output = _SDPAStandIn.apply(xq, keys, values)
        else:
            scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
            if mask is not None:
                scores = scores + mask
            scores = F.softmax(scores.float(), dim=-1).type_as(xq)
            output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return F.linear(output, self.wo.weight)

    def feed_forward(self, x):
        return F.linear(F.silu(F.linear(x, self.w1.weight)) * F.linear(x, self.w3.weight), self.w2.weight)

    def forward(self, x, mask):
        h = x + self.attention(self.attention_norm(x), self.freqs_cis, mask)
        return h + self.feed_forward(self.ffn_norm(h))


# --------------------------------------------------------------------------
# Building, one pass at a time
# --------------------------------------------------------------------------


def build(style, h, heads, seq, mb, dtype=torch.float32):
    """(layer, make_input(), run(x) -> output) for one style."""
    if style in ("neox", "neox_pr"):
        layer = NeoXLayer(h, heads, rotary_pct=0.25, gpt_j_residual=(style == "neox_pr"))
        mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)[None, None]  # get_ltor_masks: True = masked
        shape = (seq, mb, h)
        run = lambda m, x: m(x, mask)
    elif style == "neox_drop":
        layer = NeoXLayer(h, heads, rotary_pct=0.25, hidden_dropout=0.1, attention_dropout=0.1)
        mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)[None, None]
        shape = (seq, mb, h)
        run = lambda m, x: m(x, mask)
    elif style == "megatron":
        layer = MegatronLayer(h, heads)
        shape = (seq, mb, h)
        run = lambda m, x: m(x)
    elif style in ("llama", "llama_sdpa"):
        layer = LlamaLayer(h, heads, max(1, heads // 2), seq, multiple_of=min(256, h),
                           sdpa=(style == "llama_sdpa"))
        mask = torch.full((seq, seq), float("-inf")).triu(1).to(dtype)
        shape = (mb, seq, h)
        run = lambda m, x: m(x, mask)
    else:
        raise ValueError(style)
    layer = layer.to(dtype)
    if isinstance(layer, LlamaLayer):
        pass  # freqs_cis stays complex64 as in the reference
    if style == "megatron":
        megatron_ddp_hooks(layer)
    make_input = lambda: torch.randn(*shape, dtype=dtype, requires_grad=True)
    return layer, make_input, run


STYLE_NOTES = {
    "neox": "GPT-NeoX 2022 1-3B.yml: unfused softmax+masked_fill, unfused bias-GeLU, torch LayerNorm, rotary_pct 0.25, dropout 0, sequential residual",
    "neox_pr": "as neox with gpt_j_residual (parallel attention+MLP, 20B.yml)",
    "neox_drop": "as neox with hidden/attention dropout 0.1 (native_dropout, CUDA path)",
    "megatron": "Megatron-LM legacy layer; stand-ins: apex LN->torch LN, upper-triang softmax, bias_gelu, bias_dropout_add, wgrad accum fusion (1 op each); dropout 0.1; DDP main_grad hooks",
    "llama": "llama3 reference block (RMSNorm, complex rotary, SwiGLU, GQA repeat_kv, explicit attention), no KV cache",
    "llama_sdpa": "as llama with attention core as one fused SDPA op fwd and bwd (PyTorch>=2 flash path stand-in)",
}


def count_layer(style, h, heads, seq, mb, dtype=torch.float32, autocast=False):
    """Counts for forward, first backward (grads None) and accumulating
    backward (grads exist). Returns dict pass -> (ops, kernel_ops, names)."""
    torch.manual_seed(0)
    layer, make_input, run = build(style, h, heads, seq, mb, dtype)
    layer.train()
    ac = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if autocast else contextlib.nullcontext
    # warm-up (rotary cache, buffers)
    with ac():
        y = run(layer, make_input())
    y.float().sum().backward()
    layer.zero_grad(set_to_none=True)
    res = {}
    x = make_input()
    with counting() as c:
        with ac():
            y = run(layer, x)
    res["forward"] = (len(c.ops), c.kernel_ops, list(c.ops))
    # the gradient arriving from the next layer: backward(gradient=...), so no
    # loss or its backward is counted
    g = torch.ones_like(y)
    with counting() as c:
        y.backward(g)
    res["backward"] = (len(c.ops), c.kernel_ops, list(c.ops))
    # second micro-batch: AccumulateGrad now adds into existing .grad
    x = make_input()
    with ac():
        y = run(layer, x)
    g = torch.ones_like(y)
    with counting() as c:
        y.backward(g)
    res["backward_accum"] = (len(c.ops), c.kernel_ops, list(c.ops))
    # full activation recomputation (GPT-NeoX checkpoint_activations with
    # checkpoint_num_layers 1; Megatron --recompute-granularity full): the
    # layer runs under a reentrant checkpoint (torch.utils.checkpoint,
    # use_reentrant=True, which DeepSpeed's and Megatron's CheckpointFunction
    # resemble; DeepSpeed's partition_activations adds its own narrow/clone
    # and gather ops, not counted), so backward re-runs the forward.
    import torch.utils.checkpoint as tuc
    layer.zero_grad(set_to_none=True)
    x = make_input()
    with counting() as c:
        with ac():
            y = tuc.checkpoint(lambda t: run(layer, t), x)
    res["forward_ckpt"] = (len(c.ops), c.kernel_ops, list(c.ops))
    g = torch.ones_like(y)
    with counting() as c:
        y.backward(g)
    res["backward_ckpt"] = (len(c.ops), c.kernel_ops, list(c.ops))
    # profiler cross-check (fresh grads)
    layer.zero_grad(set_to_none=True)
    x = make_input()
    holder = {}

    def fwd():
        with ac():
            holder["y"] = run(layer, x)
    res["prof_forward"] = profiler_counts(fwd)
    yy = holder["y"]
    res["prof_backward"] = profiler_counts(lambda: yy.backward(torch.ones_like(yy)))
    nparams = sum(1 for _ in layer.parameters())
    return res, nparams, layer


def count_optimizer(layer, foreach):
    params = [p for p in layer.parameters()]
    for p in params:
        if p.grad is None:
            p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.1, foreach=foreach)
    opt.step()  # step 1 creates state (zeros_like); count the steady state
    with counting() as c:
        opt.step()
    steady = (len(c.ops), c.kernel_ops, list(c.ops))
    opt2 = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.1, foreach=foreach)
    with counting() as c:
        opt2.step()
    first = (len(c.ops), c.kernel_ops, list(c.ops))
    prof = profiler_counts(lambda: opt.step())
    return steady, first, prof


def count_clip(layer, foreach=None):
    params = [p for p in layer.parameters()]
    for p in params:
        if p.grad is None:
            p.grad = torch.randn_like(p)
    with counting() as c:
        torch.nn.utils.clip_grad_norm_(params, 1.0)
    prof = profiler_counts(lambda: torch.nn.utils.clip_grad_norm_(params, 1.0))
    return (len(c.ops), c.kernel_ops, list(c.ops)), prof


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------


# The machine this was written on is shared (2 vCPUs, load average up to
# 19): wall time there includes waiting for a CPU. Every figure is therefore
# this thread's CPU time (time.thread_time); the wall-clock median is kept
# alongside (WALL) for comparison.
WALL = {}


def timeit(fn, iters, repeats, key=None):
    out, wall = [], []
    for _ in range(repeats):
        w0, t0 = time.perf_counter(), time.thread_time()
        for _ in range(iters):
            fn()
        out.append((time.thread_time() - t0) / iters)
        wall.append((time.perf_counter() - w0) / iters)
    if key is not None:
        WALL[key] = wall
    return out


def summarize(samples):
    s = sorted(samples)
    return statistics.median(s), s[0], s[-1]


def time_layer(style, iters, repeats):
    """Per-op cost of a tiny layer's forward, and of its backward. Shapes
    tiny (hidden 32, 4 heads, seq 8, micro-batch 1) so kernels cost ~0."""
    h, heads, seq, mb = 32, 4, 8, 1
    torch.manual_seed(0)
    layer, make_input, run = build(style, h, heads, seq, mb)
    x = make_input()
    for _ in range(20):
        y = run(layer, x)
        y.backward(torch.ones_like(y))
    layer.zero_grad(set_to_none=True)
    # actual ops dispatched, stand-ins' real ops included
    with counting() as c:
        y = run(layer, x)
    f_raw, f_k = c.raw, c.raw_kernels
    g = torch.ones_like(y)
    with counting() as c:
        y.backward(g)
    b_raw, b_k = c.raw, c.raw_kernels
    layer.zero_grad(set_to_none=True)
    # real detaches (AccumulateGrad's), which the mode cannot tell from its own
    y = run(layer, x)
    with torch.autograd.profiler.profile() as prof:
        y.backward(g)
    b_raw += sum(1 for e in prof.function_events
                 if e.name == "aten::detach" and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")))
    layer.zero_grad(set_to_none=True)
    x.grad = None

    def fwd():
        return run(layer, x)

    def fwd_bwd():
        y = run(layer, x)
        y.backward(g)
        for p in layer.parameters():
            p.grad = None
        x.grad = None

    tf = timeit(fwd, iters, repeats, key=style + "_f")
    tfb = timeit(fwd_bwd, iters, repeats, key=style + "_fb")
    # per-parameter grad reset loop cost, to subtract
    params = list(layer.parameters())

    def reset():
        for p in params:
            p.grad = None
        x.grad = None
    tr = timeit(reset, iters, repeats)
    per_f = [t / f_raw for t in tf]
    per_b = [(tb - t - r) / b_raw for tb, t, r in zip(tfb, tf, tr)]
    per_fb = [(tb - r) / (f_raw + b_raw) for tb, r in zip(tfb, tr)]
    return (f_raw, b_raw, f_k, b_k, per_f, per_b, per_fb)


def time_trivial(iters, repeats):
    a = torch.ones(1)
    b = torch.ones(1)
    ag = torch.ones(1, requires_grad=True)
    m = torch.ones(4, 4)
    res = {}
    cases = [
        ("python_loop_lambda", lambda: None),
        ("torch.add(a,b) 1-elem", lambda: torch.add(a, b)),
        ("a.add_(b) in place 1-elem", lambda: a.add_(b)),
        ("a.add_(1.0) in place, Python scalar 1-elem", lambda: a.add_(1.0)),
        ("a.view(-1) view", lambda: a.view(-1)),
        ("torch.add(ag,b) 1-elem, records autograd", lambda: torch.add(ag, b)),
        ("torch.mm 4x4", lambda: torch.mm(m, m)),
    ]
    for k, fn in cases:
        res[k] = timeit(fn, iters, repeats, key=k)
    return res


def time_hooks(iters, repeats):
    """Python hook overheads, the lower bound of DeepSpeed's: (1) a hook on
    each parameter's AccumulateGrad node (ZeRO-1/2 reduce_ready_partitions
    registration pattern), empty, and doing ZeRO-2's IPG copy
    (narrow + copy_ + view_as); (2) nn.Module forward pre- and post-hooks
    (ZeRO-3 registers both on every module), empty. Measured as the
    difference against the same work without hooks, per hook call."""
    out = {}
    n = 256
    params = [nn.Parameter(torch.ones(4)) for _ in range(n)]
    buf = torch.zeros(4 * n)

    def loss():
        return sum(p.sum() for p in params)

    def run_bwd():
        loss().backward()
        for p in params:
            p.grad = None

    base = timeit(run_bwd, iters, repeats)
    accs = []
    for kind in ("empty", "ipg_copy"):
        accs.clear()
        for i, p in enumerate(params):
            grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
            if kind == "empty":
                def hook(*_):
                    return None
            else:
                def hook(*_, p=p, i=i):
                    new_grad = buf.narrow(0, 4 * i, p.numel())
                    new_grad.copy_(p.grad.view(-1))
                    p.grad.data = new_grad.data.view_as(p.grad)
            grad_acc.register_hook(hook)
            accs.append(grad_acc)
        t = timeit(run_bwd, iters, repeats)
        out["param_hook_" + kind] = [(a - b) / n for a, b in zip(t, base)]
        # remove: rebuild params (hooks on grad_acc nodes cannot be removed in 1.13 by handle)
        params[:] = [nn.Parameter(torch.ones(4)) for _ in range(n)]
        base = timeit(run_bwd, iters, repeats)
    mods = nn.Sequential(*[nn.Identity() for _ in range(n)])
    xin = torch.ones(1)
    base = timeit(lambda: mods(xin), iters, repeats)
    hs = []
    for mm in mods:
        hs.append(mm.register_forward_pre_hook(lambda mod, inp: None))
        hs.append(mm.register_forward_hook(lambda mod, inp, outp: None))
    t = timeit(lambda: mods(xin), iters, repeats)
    out["module_pre_post_hook_pair_empty"] = [(a - b) / n for a, b in zip(t, base)]
    for hh in hs:
        hh.remove()
    return out


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer timing iterations")
    ap.add_argument("--outdir", default=HERE)
    ap.add_argument("--dump-ops", action="store_true", help="print each pass's op names")
    ap.add_argument("--timing-only", action="store_true", help="skip counting (host_ops.csv untouched)")
    ap.add_argument("--count-only", action="store_true", help="skip timing (dispatch_cost.csv untouched)")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    h, heads, seq, mb = 256, 4, 128, 2
    rows = []
    styles = [] if args.timing_only else ["neox", "neox_pr", "neox_drop", "megatron", "llama", "llama_sdpa"]
    layers = {}
    for style in styles:
        res, nparams, layer = count_layer(style, h, heads, seq, mb)
        layers[style] = layer
        note = STYLE_NOTES[style] + "; %d parameters" % nparams
        for ps in ("forward", "backward", "backward_accum", "forward_ckpt", "backward_ckpt"):
            ops, kops, names = res[ps]
            pnote = {"forward": "fp32",
                     "backward": "fp32; first micro-batch (.grad None)",
                     "backward_accum": "fp32; later micro-batch (AccumulateGrad adds)",
                     "forward_ckpt": "fp32; under torch.utils.checkpoint (reentrant), forward run without grad",
                     "backward_ckpt": "fp32; under torch.utils.checkpoint: recomputed forward + backward (.grad None)"}[ps]
            rows.append((style, ps, "dispatch_mode", ops, pnote + "; " + note))
            rows.append((style, ps, "dispatch_mode_kernels", kops,
                         "excluding views, detach and allocations (no device kernel)"))
            if args.dump_ops:
                print(style, ps, ops, kops, " ".join(names), file=sys.stderr)
        for ps, key in (("forward", "prof_forward"), ("backward", "prof_backward")):
            top, allops = res[key]
            rows.append((style, ps, "profiler_toplevel", top,
                         "torch.autograd.profiler aten:: events with no aten:: ancestor (composites undecomposed)"))
            rows.append((style, ps, "profiler_all", allops,
                         "all aten:: events incl. CPU kernels' internal calls (CPU-specific)"))
        # precision variants
        for label, kw in (("bf16_model", dict(dtype=torch.bfloat16)),
                          ("bf16_autocast", dict(autocast=True))):
            if style == "megatron" and label == "bf16_autocast":
                # Megatron never uses autocast: it wraps the model in
                # Float16Module (half weights), which bf16_model counts.
                continue
            try:
                r2, _, _ = count_layer(style, h, heads, seq, mb, **kw)
                for ps in ("forward", "backward"):
                    rows.append((style, ps, "dispatch_mode_" + label, r2[ps][0],
                                 {"bf16_model": "layer in bf16 (how Megatron/DeepSpeed/FSDP run: half weights, explicit .float() casts dispatch)",
                                  "bf16_autocast": "torch.autocast('cpu', bfloat16) (CPU autocast op lists differ from CUDA's)"}[label]))
                    if args.dump_ops:
                        print(style, ps, label, r2[ps][0], " ".join(r2[ps][2]), file=sys.stderr)
            except Exception as e:  # noqa: BLE001
                rows.append((style, "forward", "dispatch_mode_" + label, -1, "failed: %s" % e))
        # optimizer and clip on this layer's parameters
        for fe in (False, True):
            steady, first, prof = count_optimizer(layer, fe)
            rows.append((style, "optimizer", "dispatch_mode", steady[0],
                         "torch.optim.AdamW foreach=%s steady-state step over %d params (first step %d ops); kernels %d; profiler_toplevel %d"
                         % (fe, nparams, first[0], steady[1], prof[0])))
            if args.dump_ops:
                print(style, "adamw foreach", fe, steady[0], " ".join(steady[2]), file=sys.stderr)
        clip, prof = count_clip(layer)
        rows.append((style, "clip", "dispatch_mode", clip[0],
                     "torch.nn.utils.clip_grad_norm_(max_norm=1.0) over %d params (torch 1.13: per-param norm, stack, norm, per-param mul_); kernels %d; profiler_toplevel %d"
                     % (nparams, clip[1], prof[0])))
        if args.dump_ops:
            print(style, "clip", clip[0], " ".join(clip[2]), file=sys.stderr)
        print("counted", style, file=sys.stderr)

    if not args.timing_only:
        with open(os.path.join(args.outdir, "host_ops.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["style", "pass", "count_method", "aten_ops", "notes"])
            for r in rows:
                w.writerow(r)

    if args.count_only:
        return
    # ---- timing
    iters, repeats = (200, 5) if args.quick else (1000, args.repeats)
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    trows = []
    env = "torch %s, %s, 1 thread, python %s" % (torch.__version__, cpu, platform.python_version())
    for style in ("neox", "megatron", "llama"):
        f_raw, b_raw, f_k, b_k, per_f, per_b, per_fb = time_layer(style, iters // 4, repeats)
        for what, samples, nops, nk in (("forward", per_f, f_raw, f_k), ("backward", per_b, b_raw, b_k),
                                        ("forward+backward", per_fb, f_raw + b_raw, f_k + b_k)):
            med, lo, hi = summarize(samples)
            trows.append(("layer_" + style, what, nops, "%.3f" % (med * 1e6), "%.3f" % (lo * 1e6),
                          "%.3f" % (hi * 1e6), repeats, nk, "%.3f" % (med * 1e6 * nops / nk),
                          "%.1f" % (med * 1e6 * nops),
                          "tiny layer (h32, 4 heads, s8, b1) thread CPU time / ops actually dispatched%s (wall median %.3f us per op for fwd+bwd); %s"
                          % (" (stand-ins run eagerly: their real ops counted)" if style == "megatron" else "",
                             statistics.median(WALL[style + "_fb"]) * 1e6 / (f_raw + b_raw), env)))
        print("timed", style, file=sys.stderr)
    triv = time_trivial(iters * 20, repeats)
    loop_med = summarize(triv["python_loop_lambda"])[0]
    for k, samples in triv.items():
        med, lo, hi = summarize(samples)
        trows.append(("trivial_op", k, 1, "%.3f" % (med * 1e6), "%.3f" % (lo * 1e6), "%.3f" % (hi * 1e6),
                      repeats, "", "", "%.3f" % (med * 1e6), "thread CPU time per call incl. Python loop+lambda (%.3f us median; wall median %.3f us); %s"
                      % (loop_med * 1e6, statistics.median(WALL[k]) * 1e6, env)))
    hooks = time_hooks(iters // 2, repeats)
    for k, samples in hooks.items():
        med, lo, hi = summarize(samples)
        trows.append(("hook", k, "", "%.3f" % (med * 1e6), "%.3f" % (lo * 1e6), "%.3f" % (hi * 1e6),
                      repeats, "", "", "%.3f" % (med * 1e6), "extra CPU time per hook call vs none, 256 tiny params/modules; " + env))
    with open(os.path.join(args.outdir, "dispatch_cost.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["what", "pass", "ops", "us_per_op_median", "us_per_op_min", "us_per_op_max", "repeats",
                    "kernel_ops", "us_per_kernel_op_median", "us_total_median", "notes"])
        for r in trows:
            w.writerow(r)
    for r in trows:
        print(",".join(str(x) for x in r[:10]), file=sys.stderr)


if __name__ == "__main__":
    main()

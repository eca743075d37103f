#!/usr/bin/env bash
# sim import of the PyTorch FSDP formats (sim/input/import_fsdp.c): MosaicML llm-foundry training
# YAMLs and Hugging Face accelerate configs (hand-written in their style, tests/import/). Each
# imports to a scenario that sim runs, with its values checked; each sharding strategy maps to
# its zero and hybrid_shard; what cannot be expressed or known is refused with its place (exit
# 2); hostile interpolations end quickly.
# Usage: import_fsdp.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
d="$(cd "$src/tests/import" && pwd)"
run_json() { # name, scenario, --set...: runs it, JSON report in $tmp/out
    local name="$1" file="$2"; shift 2
    check "$name-runs" 0 "$sim" "$file" --format json --no-timing "$@"
}
# the report without what names the scenario (the two files spell one run differently)
bare() { sed '/"resolved_scenario": {/,/^  },$/d' "$1" | grep -v '"scenario"\|"description"\|"name"\|"overrides"'; }
same() { # name, a, b: the two reports agree
    if cmp -s <(bare "$2") <(bare "$3"); then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL $1: the reports differ"; diff <(bare "$2") <(bare "$3") | head; fi
}

# llm-foundry, newer style (${variables.*}): MPT-1B as the benchmark row ran it, found without
# --format; Composer's default BACKWARD_POST is named; with pre, the report is exactly that of the
# hand-written validation scenario of the same run
f1="$d/foundry_mpt_1b.yaml"
check mpt1b 0 "$sim" import "$f1" --topology dgx-h100 -o "$tmp/m1.yaml"
expect_grep mpt1b-format "^# Imported by .*(llm-foundry)" "$tmp/m1.yaml"
expect_grep mpt1b-zero "zero: 3 .*# fsdp_config.sharding_strategy FULL_SHARD" "$tmp/m1.yaml"
expect_grep mpt1b-batch "global_batch: 112 .*# global_train_batch_size" "$tmp/m1.yaml"
expect_grep mpt1b-micro "micro_batch: 14 .*# device_train_microbatch_size" "$tmp/m1.yaml"
expect_grep mpt1b-seq "seq_len: 2048 .*# max_seq_len" "$tmp/m1.yaml"
expect_grep mpt1b-post "fsdp_backward_prefetch: post  (backward_prefetch BACKWARD_POST, Composer" "$tmp/m1.yaml"
expect_grep mpt1b-ffn "ffn_hidden: 8192 .*expansion_ratio 4 x d_model" "$tmp/m1.yaml"
expect_grep mpt1b-attn "attention: flash .*attn_impl" "$tmp/m1.yaml"
expect_grep mpt1b-default-mp "fsdp_config.mixed_precision = DEFAULT .*:74:20; DEFAULT reduce-scatters gradients in fp32 (Composer's reduce_dtype" "$tmp/m1.yaml"
expect_grep mpt1b-var-unmapped "^#   variables.global_seed = 17 " "$tmp/m1.yaml"
expect_grep mpt1b-resolved "^#   train_loader.dataset.shuffle_seed = 17 " "$tmp/m1.yaml"
if grep -q "variables.max_seq_len" "$tmp/m1.yaml"; then
    fail=$((fail + 1)); echo "FAIL mpt1b-var-used: variables.max_seq_len, read through max_seq_len, listed as not mapped"
else pass=$((pass + 1)); fi
run_json mpt1b "$tmp/m1.yaml"
expect_grep mpt1b-params '"params": 1315950592' "$tmp/out"
expect_grep mpt1b-fw '"framework": "pytorch"' "$tmp/out"
cp "$tmp/out" "$tmp/post.json"
run_json mpt1b-pre "$tmp/m1.yaml" --set training.fsdp_backward_prefetch=pre
cp "$tmp/out" "$tmp/pre.json"
# the validation scenario sets Composer's BACKWARD_POST, as the import does by default
run_json mpt1b-validation "$src/scenarios/validation/mosaic_mpt_1b_h100.yaml"
same mpt1b-same "$tmp/post.json" "$tmp/out"
if cmp -s <(bare "$tmp/pre.json") <(bare "$tmp/out"); then
    fail=$((fail + 1)); echo "FAIL mpt1b-prefetch-moves: BACKWARD_PRE changed nothing"
else pass=$((pass + 1)); fi

# llm-foundry, older style (${max_seq_len}): MPT-70B on 8 nodes, checkpointing, accumulation 4,
# BACKWARD_PRE and PURE given: exactly the validation scenario with BACKWARD_PRE (which takes
# Composer's default, BACKWARD_POST)
check mpt70b 0 "$sim" import "$d/foundry_mpt_70b.yaml" --topology dgx-h100 --nodes 8 -o "$tmp/m70.yaml"
expect_grep mpt70b-recompute "recompute: full .*# fsdp_config.activation_checkpointing" "$tmp/m70.yaml"
expect_grep mpt70b-pre "fsdp_backward_prefetch: pre .*# fsdp_config.backward_prefetch" "$tmp/m70.yaml"
run_json mpt70b "$tmp/m70.yaml"
cp "$tmp/out" "$tmp/m70.json"
run_json mpt70b-validation "$src/scenarios/validation/mosaic_mpt_70b_h100.yaml" \
    --set training.fsdp_backward_prefetch=pre
same mpt70b-same "$tmp/m70.json" "$tmp/out"
# on one node the global batch 2048 over 8 GPUs is 256 a GPU: accumulation 32
check mpt70b-1node 0 "$sim" import "$d/foundry_mpt_70b.yaml" --topology dgx-h100 -o "$tmp/m70n.yaml"
expect_grep mpt70b-1node-default "nodes: 1  (the file does not say how many GPUs" "$tmp/m70n.yaml"

# each sharding strategy: zero, hybrid_shard, and a run that loads
strategy() { # name, value, zero, hybrid line or '', [extra fsdp_config line]
    sed "s/sharding_strategy: FULL_SHARD/sharding_strategy: $2${5:+\\n  $5}/" "$f1" >"$tmp/s.yaml"
    check "strategy-$1" 0 "$sim" import "$tmp/s.yaml" --topology dgx-h100 --nodes 2 -o "$tmp/s_out.yaml"
    expect_grep "strategy-$1-zero" "zero: $3 " "$tmp/s_out.yaml"
    if [ -n "$4" ]; then expect_grep "strategy-$1-hybrid" "$4" "$tmp/s_out.yaml"
    elif grep -q hybrid_shard "$tmp/s_out.yaml"; then fail=$((fail + 1)); echo "FAIL strategy-$1: hybrid_shard written"
    else pass=$((pass + 1)); fi
    run_json "strategy-$1" "$tmp/s_out.yaml"
    expect_grep "strategy-$1-json" "\"zero\": $3" "$tmp/out"
}
strategy full FULL_SHARD 3 ''
strategy grad-op SHARD_GRAD_OP 2 ''
strategy hybrid HYBRID_SHARD 3 "hybrid_shard: true .*the ranks of one node"
strategy hybrid-zero2 _HYBRID_SHARD_ZERO2 2 "hybrid_shard: true"
strategy hybrid-mesh HYBRID_SHARD 3 "hybrid_shard: 4 .*data_parallel_shard_degree" "data_parallel_shard_degree: 4"
strategy no-shard NO_SHARD 0 ''
expect_grep no-shard-prefetch "fsdp_config.limit_all_gathers = true .*no effect without sharded parameters" "$tmp/s_out.yaml"
{ sed '/^fsdp_config:/,$d' "$f1"; echo 'fsdp_config: {}'; } >"$tmp/empty.yaml"
check fsdp-empty 0 "$sim" import "$tmp/empty.yaml" --topology dgx-h100
expect_grep fsdp-empty-zero "zero: 3 .*FULL_SHARD, the default sharding strategy" "$tmp/out"
sed '/^fsdp_config:/,$d' "$f1" >"$tmp/ddp.yaml"
check ddp 0 "$sim" import "$tmp/ddp.yaml" --topology dgx-h100 -o "$tmp/ddp_out.yaml"
expect_grep ddp-zero "zero: 0 .*no FSDP: PyTorch DDP" "$tmp/ddp_out.yaml"
run_json ddp "$tmp/ddp_out.yaml"

# bad and unknowable values, each refused with its place (exit 2)
refuse() { # name, sed expression, expected message, [import options]
    local name="$1" expr="$2" msg="$3"; shift 3
    sed "$expr" "$f1" >"$tmp/bad.yaml"
    check "$name" 2 "$sim" import "$tmp/bad.yaml" --topology dgx-h100 "$@"
    expect_grep "$name-text" "$msg" "$tmp/err"
}
refuse micro-auto 's/^device_train_microbatch_size: 14/device_train_microbatch_size: auto/' \
    "bad.yaml:69:31: device_train_microbatch_size = auto: Composer searches at run time"
refuse micro-missing '/^device_train_microbatch_size/d' "no device_train_microbatch_size, whose default is auto"
refuse global-world 's/^global_train_batch_size: 112/global_train_batch_size: 100/' \
    "bad.yaml:65:26: global_train_batch_size = 100: llm-foundry requires a global batch that the 8 GPUs divide"
refuse micro-short 's/^device_train_microbatch_size: 14/device_train_microbatch_size: 5/' \
    "device_train_microbatch_size = 5: the per-GPU batch 14 .* the last of 4"
refuse precision 's/^precision: amp_bf16/precision: amp_int8/' "bad.yaml:70:12: precision = amp_int8: expected amp_bf16, amp_fp16, amp_fp8 or fp32"
refuse strategy-bad 's/sharding_strategy: FULL_SHARD/sharding_strategy: HALF_SHARD/' "sharding_strategy = HALF_SHARD: expected FULL_SHARD"
refuse prefetch-bad 's/limit_all_gathers: true/backward_prefetch: BACKWARD_SIDE/' "backward_prefetch = BACKWARD_SIDE: expected BACKWARD_PRE, BACKWARD_POST or NONE"
refuse full-mp 's/mixed_precision: DEFAULT/mixed_precision: FULL/' "mixed_precision = FULL: FULL gathers parameters and reduces gradients in fp32"
refuse offload 's/activation_cpu_offload: false/cpu_offload: true/' "fsdp_config.cpu_offload = true: offloading to the host CPU is not modelled"
refuse shard-degree 's/limit_all_gathers: true/data_parallel_shard_degree: 4/' "data_parallel_shard_degree = 4: a shard group is HYBRID_SHARD's"
refuse alibi 's/attn_impl: triton/alibi: true/' "attn_config.alibi = true: ALiBi is not modelled"
refuse window 's/attn_impl: triton/sliding_window_size: 512/' "sliding_window_size = 512: sliding-window (local) attention is not modelled"
refuse geglu 's/^  expansion_ratio: 4/  ffn_config:\n    ffn_type: mptglu/' "ffn_type = mptglu: a GeLU-gated MLP"
refuse hf-model 's/name: mpt_causal_lm/name: hf_causal_lm/' "model.name = hf_causal_lm: only mpt_causal_lm's shape is in the file"
refuse env 's/^max_seq_len: .*/max_seq_len: ${oc.env:SEQ_LEN}/' \
    "max_seq_len = \${oc.env:SEQ_LEN}: its value comes from \${oc.env:SEQ_LEN}, an OmegaConf resolver"
refuse missing-var 's/^max_seq_len: .*/max_seq_len: ${variables.seq}/' "\${variables.seq}, which names no setting of the file"
refuse mapping-var 's/^max_seq_len: .*/max_seq_len: ${variables}/' "\${variables}, which names a mapping, not a value"
refuse unclosed 's/^max_seq_len: .*/max_seq_len: ${variables.max_seq_len/' "max_seq_len = \${variables.max_seq_len: its value comes from an interpolation \${ never closed"
refuse big-int 's/^  n_layers: 24/  n_layers: 9223372036854775808/' "model.n_layers = 9223372036854775808: expected a whole number"
refuse cycle 's/^  max_seq_len: 2048/  max_seq_len: ${max_seq_len}/' "an interpolation that refers back to itself"
# amp_fp8 reaches Transformer Engine layers only (llm-foundry's validate_config)
sed 's/^precision: amp_bf16/precision: amp_fp8/' "$f1" >"$tmp/fp8.yaml"
check fp8-torch 0 "$sim" import "$tmp/fp8.yaml" --topology dgx-h100
expect_grep fp8-torch-bf16 "precision: bf16 .*amp_fp8 without Transformer Engine layers" "$tmp/out"
sed 's/^precision: amp_bf16/precision: amp_fp8/; s/^  vocab_size: 50368/  vocab_size: 50368\n  fc_type: te/' "$f1" >"$tmp/fp8te.yaml"
check fp8-te 0 "$sim" import "$tmp/fp8te.yaml" --topology dgx-h100 -o "$tmp/fp8te_out.yaml"
expect_grep fp8-te-fp8 "precision: fp8 .*# precision" "$tmp/fp8te_out.yaml"
run_json fp8-te "$tmp/fp8te_out.yaml"
expect_grep fp8-te-json '"precision": "fp8"' "$tmp/out"
# a GQA MPT with rotary positions and SwiGLU loads; an hf_causal_lm takes --model
sed 's/attn_impl: triton/attn_impl: torch\n    attn_type: grouped_query_attention\n    kv_n_heads: 4\n    rope: true/; s/^  expansion_ratio: 4/  ffn_config:\n    ffn_type: mptglu\n    ffn_act_fn:\n      name: silu\n    ffn_hidden_size: 5632\n  no_bias: true\n  norm_type: rmsnorm/' "$f1" >"$tmp/llama.yaml"
check llama-like 0 "$sim" import "$tmp/llama.yaml" -o "$tmp/llama_out.yaml"
run_json llama-like "$tmp/llama_out.yaml"
expect_grep llama-like-kv '"kv_heads": 4' "$tmp/out"
expect_grep llama-like-rope '"pos_emb": "rotary"' "$tmp/out"
expect_grep llama-like-attn '"model.attention": "standard"' "$tmp/out"
expect_grep llama-like-mlp 'mlp: swiglu .*ffn_config.ffn_type' "$tmp/llama_out.yaml"
expect_grep llama-like-norm 'norm: rmsnorm .*model.norm_type' "$tmp/llama_out.yaml"
sed 's/name: mpt_causal_lm/name: hf_causal_lm/' "$f1" >"$tmp/hf.yaml"
check hf-model-option 0 "$sim" import "$tmp/hf.yaml" --model llama-2-7b --topology dgx-h100 -o "$tmp/hf_out.yaml"
expect_grep hf-model-option-line 'model: "llama-2-7b" .*# --model' "$tmp/hf_out.yaml"
expect_grep hf-model-option-unmapped "^#   model.d_model = 2048 " "$tmp/hf_out.yaml"
run_json hf-model-option "$tmp/hf_out.yaml"
# a variable read through another variable is read too
sed 's/^  max_seq_len: 2048/  max_seq_len: ${variables.seq}/; s/^  global_seed: 17/  global_seed: 17\n  seq: 2048/' "$f1" >"$tmp/chain2.yaml"
check var-chain 0 "$sim" import "$tmp/chain2.yaml" -o "$tmp/chain2_out.yaml"
if grep -q "variables.seq = \|variables.max_seq_len = " "$tmp/chain2_out.yaml"; then
    fail=$((fail + 1)); echo "FAIL var-chain-used: a variable read through another listed as not mapped"
else pass=$((pass + 1)); fi
# an escaped \${ is text; a relative ${.x} names a sibling
sed 's/^run_name: .*/run_name: \\${literal}/; s/^  vocab_size: 50368/  vocab_size: ${.n_layers}/' "$f1" >"$tmp/rel.yaml"
check relative 0 "$sim" import "$tmp/rel.yaml" -o "$tmp/rel_out.yaml"
expect_grep relative-vocab "vocab: 24 .*# model.vocab_size" "$tmp/rel_out.yaml"
expect_grep relative-escape '^#   run_name = ${literal} ' "$tmp/rel_out.yaml"
# a scenario's import: key reads it too
cp "$f1" "$tmp/f1.yaml"
printf 'import: f1.yaml\ntopology: dgx-h100\ntraining:\n  fsdp_backward_prefetch: pre\n' >"$tmp/key.yaml"
run_json key "$tmp/key.yaml"
same key-same "$tmp/out" "$tmp/pre.json"

# hostile interpolations: a chain past 64 links, and values doubling a level, end at once
python3 -c "
print('variables:')
for i in range(100000): print(f'  v{i}: \${{variables.v{i+1}}}')
print('  v100000: 2048')
print('model: {name: mpt_causal_lm}')
print('max_seq_len: \${variables.v0}')
print('global_train_batch_size: 8')
print('device_train_microbatch_size: 1')" >"$tmp/chain.yaml"
check chain 2 timeout 60 "$sim" import "$tmp/chain.yaml"
expect_grep chain-text "max_seq_len = \${variables.v0}: its value comes from interpolations nested more than 64 deep" "$tmp/err"
python3 -c "
print('variables:')
for i in range(60): print(f'  v{i}: \${{variables.v{i+1}}}\${{variables.v{i+1}}}')
print('  v60: ab')
print('model: {name: mpt_causal_lm}')
print('run_name: \${variables.v0}')
print('max_seq_len: 2048')
print('global_train_batch_size: 8')
print('device_train_microbatch_size: 1')" >"$tmp/double.yaml"
check doubling 0 timeout 60 "$sim" import "$tmp/double.yaml" -o "$tmp/double_out.yaml"
expect_grep doubling-unmapped "^#   run_name = \${variables.v0}  " "$tmp/double_out.yaml"

# the YAML reader's bounds hold here too: a NUL byte, nesting past 64, 200,000 keys each
# interpolated (linear: about 2 s), a newline in the file's name kept out of the scenario's keys
printf 'model: {name: mpt_causal_lm}\nmax_seq_len: 2048\0\nglobal_train_batch_size: 8\n' >"$tmp/nul.yaml"
check nul 2 "$sim" import "$tmp/nul.yaml"
expect_grep nul-text "nul.yaml:2:18: a NUL byte" "$tmp/err"
python3 -c "print('model: {name: mpt_causal_lm}\nx: ' + '['*100000 + ']'*100000)" >"$tmp/deep.yaml"
check deep 2 "$sim" import "$tmp/deep.yaml"
expect_grep deep-text "deep.yaml:2:67: mappings and sequences nested more than 64 deep" "$tmp/err"
python3 -c "
print('model: {name: mpt_causal_lm}\nmax_seq_len: 2048\nglobal_train_batch_size: 8\ndevice_train_microbatch_size: 1')
for i in range(200000): print(f'k{i}: \${{max_seq_len}}')" >"$tmp/big.yaml"
check big 0 timeout 60 "$sim" import "$tmp/big.yaml" -o "$tmp/big_out.yaml"
expect_grep big-unmapped "^#   k199999 = 2048 " "$tmp/big_out.yaml"
n="$tmp/"$'acc\nsim: {interference: false}\n.yaml'
cp "$d/accelerate_fsdp.yaml" "$n"
check inject 0 "$sim" import --format accelerate "$n" --model llama-2-7b -o "$tmp/inj.yaml"
expect_grep inject-comment '^# Imported by `sim import` from .*/acc\\x0asim: {interference' "$tmp/inj.yaml"
run_json inject "$tmp/inj.yaml"

# accelerate: FSDP over 2 nodes of 8 (num_machines, num_processes), a model from --model
a1="$d/accelerate_fsdp.yaml"
check accel-no-model 2 "$sim" import "$a1"
expect_grep accel-no-model-text "an accelerate config holds no model; name one with --model" "$tmp/err"
check accel 0 "$sim" import "$a1" --model llama-2-7b --topology dgx-h100 -o "$tmp/a.yaml"
expect_grep accel-format "^# Imported by .*(accelerate)" "$tmp/a.yaml"
expect_grep accel-nodes "^nodes: 2" "$tmp/a.yaml"
expect_grep accel-pre "fsdp_backward_prefetch: pre .*# fsdp_config.fsdp_backward_prefetch" "$tmp/a.yaml"
expect_grep accel-recompute "recompute: full .*fsdp_activation_checkpointing" "$tmp/a.yaml"
expect_grep accel-unmapped "^#   fsdp_config.fsdp_state_dict_type = SHARDED_STATE_DICT " "$tmp/a.yaml"
run_json accel "$tmp/a.yaml"
expect_grep accel-gpus '"gpus": 16' "$tmp/out"
expect_grep accel-bf16 '"precision": "bf16"' "$tmp/out"
# the strategy by number (1-5) or name; no prefetch given is accelerate's NO_PREFETCH
for s in "1 3" "2 2" "3 0" "4 3" "5 2" "HYBRID_SHARD_ZERO2 2" "shard_grad_op 2"; do
    set -- $s
    sed "s/fsdp_sharding_strategy: FULL_SHARD/fsdp_sharding_strategy: $1/; /fsdp_backward_prefetch/d" "$a1" >"$tmp/as.yaml"
    check "accel-strategy-$1" 0 "$sim" import "$tmp/as.yaml" --model llama-2-7b --topology dgx-h100 -o "$tmp/as_out.yaml"
    expect_grep "accel-strategy-$1-zero" "zero: $2 " "$tmp/as_out.yaml"
    run_json "accel-strategy-$1" "$tmp/as_out.yaml"
done
expect_grep accel-none "fsdp_backward_prefetch: none  (no fsdp_backward_prefetch: accelerate" "$tmp/as_out.yaml"
sed 's/distributed_type: FSDP/distributed_type: MULTI_GPU/' "$a1" >"$tmp/ddp.yaml"
check accel-ddp 0 "$sim" import "$tmp/ddp.yaml" --model llama-2-7b --topology dgx-h100 -o "$tmp/addp.yaml"
expect_grep accel-ddp-zero "zero: 0 .*no FSDP" "$tmp/addp.yaml"
expect_grep accel-ddp-unmapped "fsdp_sharding_strategy = FULL_SHARD .*no effect: distributed_type is not FSDP" "$tmp/addp.yaml"
run_json accel-ddp "$tmp/addp.yaml"
arefuse() { # name, sed expression, expected message
    sed "$2" "$a1" >"$tmp/abad.yaml"
    check "$1" 2 "$sim" import "$tmp/abad.yaml" --model llama-2-7b --topology dgx-h100
    expect_grep "$1-text" "$3" "$tmp/err"
}
arefuse accel-fsdp2 's/fsdp_version: 1/fsdp_version: 2/' "abad.yaml:20:17: fsdp_config.fsdp_version = 2: FSDP2 (fully_shard) is not modelled"
arefuse accel-deepspeed 's/distributed_type: FSDP/distributed_type: DEEPSPEED/' "distributed_type = DEEPSPEED: FSDP and MULTI_GPU (DDP) are read"
arefuse accel-procs 's/num_processes: 16/num_processes: 12/' "num_processes = 12: 12 processes on 2 machines, and the topology has 8 GPUs a node"
arefuse accel-offload 's/fsdp_offload_params: false/fsdp_offload_params: true/' "fsdp_offload_params = true: offloading to the host CPU"
arefuse accel-nowrap 's/TRANSFORMER_BASED_WRAP/NO_WRAP/' "fsdp_auto_wrap_policy = NO_WRAP: one FSDP unit for the whole model"
arefuse accel-precision 's/mixed_precision: bf16/mixed_precision: int4/' "mixed_precision = int4: expected bf16, fp16, fp8 or no"
arefuse accel-strategy 's/fsdp_sharding_strategy: FULL_SHARD/fsdp_sharding_strategy: 7/' "fsdp_sharding_strategy = 7: expected FULL_SHARD.*(or 1-5)"
sed 's/fsdp_backward_prefetch: BACKWARD_PRE/fsdp_backward_prefetch: NO_PREFETCH/' "$a1" >"$tmp/anp.yaml"
check accel-no-prefetch 0 "$sim" import "$tmp/anp.yaml" --model llama-2-7b --topology dgx-h100
expect_grep accel-no-prefetch-none "fsdp_backward_prefetch: none .*# fsdp_config.fsdp_backward_prefetch" "$tmp/out"
arefuse accel-cpu 's/use_cpu: false/use_cpu: true/' "use_cpu = true: training on the CPU is not modelled"
# a scenario's import: key: its model: reaches the import as --model would
printf 'import: %s\nmodel: llama-2-7b\ntopology: dgx-h100\n' "$a1" >"$tmp/akey.yaml"
run_json accel-key "$tmp/akey.yaml"
cp "$tmp/out" "$tmp/akey.json"
run_json accel-key-cli "$tmp/a.yaml"
same accel-key-same "$tmp/akey.json" "$tmp/out"
# --nodes overrides the machines: num_machines and num_processes are then listed as not mapped
check accel-nodes-option 0 "$sim" import "$a1" --model llama-2-7b --topology dgx-h100 --nodes 4
expect_grep accel-nodes-option-unmapped "^#   num_processes = 16 " "$tmp/out"

# the format by name; a GPT-NeoX file is not an llm-foundry one
check format-name 0 "$sim" import --format accelerate "$a1" --model llama-2-7b --topology dgx-h100
check format-wrong 2 "$sim" import --format llm-foundry "$d/neox_20B.yml"
expect_grep format-wrong-text "no model.name" "$tmp/err"
check neox-still 0 "$sim" import "$d/neox_20B.yml"
expect_grep neox-still-format "(gpt-neox)" "$tmp/out"
finish import_fsdp

#!/usr/bin/env bash
# sim import on real launch scripts and configs (issue 29): a Megatron-LM script read as bash
# expands it (tests/import/megatron_llama3_8b_fp8.sh, in the style of Megatron-LM's
# examples/llama/train_llama3_8b_h100_fp8.sh), what cannot be known statically refused by name,
# DeepSpeed offload refused by key, DeepSpeed "auto" precision, GPT-NeoX expansion_factor, Hugging
# Face names, and a scenario's import: key saying what it dropped.
# Usage: import_scripts.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
d="$(cd "$src/tests/import" && pwd)"

# the Llama-3 8B fp8 script: variables, ${1:-default}, arrays, the fp8 block under an if,
# quoted "--fp8-format hybrid", --attention-backend fused, a bool before ')' and torchrun
check l3 0 "$sim" import "$d/megatron_llama3_8b_fp8.sh" --topology dgx-h100 -o "$tmp/l3.yaml"
expect_grep l3-fp8 "precision: fp8 .*# fp8_format" "$tmp/l3.yaml"
expect_grep l3-attn "attention: flash .*# attention_backend" "$tmp/l3.yaml"
expect_grep l3-layers "layers: 32 .*# num_layers" "$tmp/l3.yaml"
expect_grep l3-seq "seq_len: 8192 " "$tmp/l3.yaml"
expect_grep l3-vocab "vocab: 128256 " "$tmp/l3.yaml"
expect_grep l3-nodes "nodes: 1  (torchrun's --nnodes)" "$tmp/l3.yaml"
expect_grep l3-kv "kv_heads: 8 " "$tmp/l3.yaml"
expect_grep l3-save "save = checkpoints/llama3_8b_fp8  (.*megatron_llama3_8b_fp8.sh:54: --save)" "$tmp/l3.yaml"
expect_grep l3-amax "fp8_amax_history_len = 1024" "$tmp/l3.yaml"
expect_grep l3-overlap "overlap_param_gather = true" "$tmp/l3.yaml"
if grep -q "tokenizer_model\|vocab_size = 1 " "$tmp/l3.yaml"; then
    fail=$((fail + 1)); echo "FAIL l3-else: the else branch was read"; else pass=$((pass + 1)); fi
check l3-runs 0 "$sim" "$tmp/l3.yaml" --format json --no-timing
expect_grep l3-json-fp8 '"precision": "fp8"' "$tmp/out"
expect_grep l3-json-params '"params": 8030261248' "$tmp/out"

# a bare argument list still imports; a bool before ')' or another command takes no value
printf 'ARGS=(\n  --num-layers 2 --hidden-size 256 --num-attention-heads 4\n  --swiglu\n)\nTRAIN=(\n  --disable-bias-linear\n)\ntorchrun ${ARGS[@]} ${TRAIN[@]} --overlap-param-gather\n' >"$tmp/b.sh"
check bools 0 "$sim" import "$tmp/b.sh"
expect_grep bools-swiglu "mlp: swiglu .*# swiglu" "$tmp/out"
expect_grep bools-bias "bias: false .*# disable_bias_linear" "$tmp/out"
expect_grep bools-overlap "overlap_param_gather = true" "$tmp/out"

# what only running the script would tell is refused by name when it is needed, listed when not
printf -- '--num-layers $LAYERS --hidden-size 256 --num-attention-heads 4\n' >"$tmp/env.sh"
check unset-var 2 "$sim" import "$tmp/env.sh"
expect_grep unset-var-text 'env.sh:1: --num-layers: num_layers = \$LAYERS: its value comes from \$LAYERS, which the file does not set' "$tmp/err"
printf 'L=$(cat layers.txt)\n--num-layers $L --hidden-size 256 --num-attention-heads 4\n' >"$tmp/cmd.sh"
check command-subst 2 "$sim" import "$tmp/cmd.sh"
expect_grep command-subst-text "\$(cat layers.txt), a command's output" "$tmp/err"
printf 'if [ -f big ]; then P=--bf16; fi\n--num-layers 2 --hidden-size 256 --num-attention-heads 4 $P\n' >"$tmp/cond.sh"
check cond 2 "$sim" import "$tmp/cond.sh"
expect_grep cond-text "cannot settle holds (the block at line 1)" "$tmp/err"
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --save $1 --load ${2:-ckpt}\n' >"$tmp/args.sh"
check script-args 0 "$sim" import "$tmp/args.sh"
expect_grep script-args-save 'save = \$1 ' "$tmp/out"
expect_grep script-args-load 'load = ckpt ' "$tmp/out"

# DeepSpeed offload is refused naming the key (it was simulated as GPU-resident ZeRO-3)
check offload 2 "$sim" import "$d/ds_config_offload.json" --model gpt-neox-1.3b
expect_grep offload-text "key zero_optimization.offload_optimizer.device: .* = cpu: offloading to the host" "$tmp/err"
sed 's/"device": "cpu"/"device": "none"/g' "$d/ds_config_offload.json" >"$tmp/none.json"
check offload-none 0 "$sim" import "$tmp/none.json" --model gpt-neox-1.3b
# "auto" precision: bf16 as a named default (the HF Trainer fills it), not fp32
check ds-auto 0 "$sim" import "$d/ds_config_auto.json" --model gpt-neox-125m --nodes 1
expect_grep ds-auto-prec "precision: bf16  (fp16 / bf16 \"auto\"" "$tmp/out"
# GPT-NeoX expansion_factor 8: a 16384-wide MLP (was 4h, silently)
check neox-xf 0 "$sim" import "$d/neox_expansion.yml"
expect_grep neox-xf-ffn "ffn_hidden: 16384 .*# expansion_factor 8 x hidden" "$tmp/out"
# a Hugging Face config.json is named by its folder, or its model_type
mkdir -p "$tmp/Meta-Llama-3-8B"; cp "$d/hf_llama3_8b_config.json" "$tmp/Meta-Llama-3-8B/config.json"
check hf-name 0 "$sim" import "$tmp/Meta-Llama-3-8B/config.json"
expect_grep hf-name-folder 'name: "Meta-Llama-3-8B"' "$tmp/out"
# a scenario's import: key prints what sim import says it dropped
cp "$d/ds_config.json" "$tmp/ds.json"
printf 'import: ds.json\nmodel: gpt-neox-1.3b\nnodes: 2\n' >"$tmp/key.yaml"
check key-notes 0 "$sim" "$tmp/key.yaml" --no-timing
expect_grep key-notes-unmapped "^#   zero_optimization.allgather_bucket_size = 200000000" "$tmp/err"
expect_grep key-notes-header "^# Imported by \`sim import\` from .*ds.json (deepspeed)" "$tmp/err"
# context parallelism is parallel.cp and cp_comm; a2a is refused by name
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --context-parallel-size 2 --cp-comm-type all_gather\n' >"$tmp/cp.sh"
check megatron-cp 0 "$sim" import "$tmp/cp.sh"
expect_grep megatron-cp-text "^  cp: 2" "$tmp/out"
expect_grep megatron-cp-comm "^  cp_comm: all_gather" "$tmp/out"
expect_grep megatron-cp-nodes "TP 1 x CP 2 x PP 1" "$tmp/out"
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --context-parallel-size 2 --cp-comm-type a2a\n' >"$tmp/cpa.sh"
check megatron-cp-a2a 2 "$sim" import "$tmp/cpa.sh"
expect_grep megatron-cp-a2a-text "a2a and a2a+p2p are not modelled" "$tmp/err"
# a layout larger than any machine is refused at import (its product overflows 64 bits)
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --context-parallel-size 1048576 --tensor-model-parallel-size 1048576 --pipeline-model-parallel-size 1048576\n' >"$tmp/huge.sh"
check megatron-huge 2 "$sim" import "$tmp/huge.sh"
expect_grep megatron-huge-text "needs 1.153e+18 GPUs, more than 1048576 nodes" "$tmp/err"
# Megatron-LM's FSDP is refused by name, not simulated as its DDP
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --use-torch-fsdp2\n' >"$tmp/fsdp.sh"
check megatron-fsdp 2 "$sim" import "$tmp/fsdp.sh"
expect_grep megatron-fsdp-text "fsdp.sh:1: --use-torch-fsdp2: .*PyTorch FSDP2 (per-parameter sharding) is not modelled" "$tmp/err"
# Megatron-FSDP: optim_grads_params is zero 3 under framework megatron, and the scenario runs
# with its per-layer gathers; optim_grads (ZeRO-2) is refused at the flag; the strategy without
# --use-megatron-fsdp shards nothing and is listed as not mapped
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --bf16 --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params\n' >"$tmp/mfsdp.sh"
check megatron-fsdp3 0 "$sim" import "$tmp/mfsdp.sh" -o "$tmp/mfsdp.yaml"
expect_grep megatron-fsdp3-zero "zero: 3 .*# use_megatron_fsdp, data_parallel_sharding_strategy optim_grads_params" "$tmp/mfsdp.yaml"
check megatron-fsdp3-run 0 "$sim" "$tmp/mfsdp.yaml" -f json
expect_grep megatron-fsdp3-gathers '"op": "allgather"' "$tmp/out"
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --use-custom-fsdp --data-parallel-sharding-strategy optim_grads\n' >"$tmp/mfsdp2.sh"
check megatron-fsdp2 2 "$sim" import "$tmp/mfsdp2.sh"
expect_grep megatron-fsdp2-text "mfsdp2.sh:1: --data-parallel-sharding-strategy: .*optim_grads (ZeRO-2) is not modelled" "$tmp/err"
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --data-parallel-sharding-strategy optim_grads_params\n' >"$tmp/nofsdp.sh"
check megatron-strategy-alone 0 "$sim" import "$tmp/nofsdp.sh"
expect_grep megatron-strategy-listed "#   data_parallel_sharding_strategy = optim_grads_params" "$tmp/out"
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --num-experts 8 --expert-model-parallel-size 4\n' >"$tmp/ep.sh"
check megatron-ep 0 "$sim" import "$tmp/ep.sh"
expect_grep megatron-ep-key "ep: 4 .*# expert_model_parallel_size" "$tmp/out"

# an assignment under a test the file cannot settle keeps both values: B=() in the else does not
# hide the --bf16 of its if (it did, and the run was fp32 without a word)
printf 'if [[ "$A" == x ]]; then B=(--bf16)\nelif [ -z "$C" ]; then B=(--fp16 "${D[@]}" ${E:+y} `date`)\nelse B=(); fi\n--num-layers 2 --hidden-size 64 --num-attention-heads 2 ${B[@]} 2>&1 >/dev/null\nexit 0\n--bf16\n' >"$tmp/mix.sh"
check shell-union 2 "$sim" import "$tmp/mix.sh"
expect_grep shell-union-text "mix.sh:1: --bf16: bf16 = true: its value comes from a line that runs only if" "$tmp/err"

# a flag given twice: the last counts, as Megatron-LM's argparse keeps it; the first is listed
printf -- '--num-layers 2 --hidden-size 64 --num-attention-heads 2 --num-layers 4\n' >"$tmp/dup.sh"
check megatron-dup 0 "$sim" import "$tmp/dup.sh"
expect_grep megatron-dup-last "layers: 4 .*# num_layers" "$tmp/out"
expect_grep megatron-dup-first "^#   num_layers = 2 " "$tmp/out"

finish import_scripts

#!/usr/bin/env bash
# sim import against hostile files (issue 29; reproducers in ../shared/notes/ux-reliability-3.md,
# Part B2): each is refused with its place (exit 2), or imported with nothing silently lost, and
# none crashes or hangs.
# Usage: import_hostile.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
d="$(cd "$src/tests/import" && pwd)"
py() { python3 -c "$@"; }

# deep JSON nesting: json-glib recursed once a level and 100,000 '[' overflowed the stack
# (SIGSEGV); now refused at the YAML reader's 64 levels with its line and column, also through
# an HF config.json and a scenario's import: key
py "print('{\"x\": ' + '['*100000 + ']'*100000 + '}')" >"$tmp/deep.json"
check deep-json 2 "$sim" import "$tmp/deep.json" --model gpt-neox-1.3b
expect_grep deep-json-text "deep.json:1:70: objects and arrays nested more than 64 deep" "$tmp/err"
py "print('{\"hidden_size\": 64, \"x\": ' + '{\"a\": '*100000 + '1' + '}'*100000 + '}')" >"$tmp/config.json"
check deep-hf 2 "$sim" import "$tmp/config.json"
expect_grep deep-hf-text "nested more than 64 deep" "$tmp/err"
printf 'import: deep.json\nmodel: gpt-neox-1.3b\n' >"$tmp/deepkey.yaml"
check deep-key 2 "$sim" "$tmp/deepkey.yaml"
expect_grep deep-key-text "deepkey.yaml:1:9: import: .*deep.json:1:70: objects and arrays" "$tmp/err"
# 64 levels are fine; brackets inside strings count for nothing
py "print('{\"a\": ' + '['*63 + ']'*63 + ', \"s\": \"' + '['*100 + '\", \"train_micro_batch_size_per_gpu\": 2}')" >"$tmp/ok.json"
check deep-ok 0 "$sim" import "$tmp/ok.json" --model gpt-neox-1.3b

# a NUL in a JSON key (the escape) was read as the key before it: train_batch_size set 2 nodes
printf '{"train_batch_size\\u0000junk": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 1}}\n' >"$tmp/k.json"
check json-nul-key 2 "$sim" import "$tmp/k.json" --model gpt-neox-1.3b
expect_grep json-nul-key-text "k.json:1:20: a NUL character (\\\\u0000) in a string" "$tmp/err"
printf '{"a": 1,\n "b": "x\0y"}\n' >"$tmp/raw.json"
check json-nul-raw 2 "$sim" import "$tmp/raw.json" --model gpt-neox-1.3b
expect_grep json-nul-raw-text "raw.json:2:9: a NUL byte" "$tmp/err"
# an escaped backslash before u0000 is no NUL
printf '{"a\\\\u0000": 1, "train_micro_batch_size_per_gpu": 4}\n' >"$tmp/bs.json"
check json-backslash 0 "$sim" import "$tmp/bs.json" --model gpt-neox-1.3b

# 200,000 keys in a GPT-NeoX .yml: the duplicate-key check was quadratic (killed at 120 s); now
# a hash set (about 1 s here); the limit of 60 s catches a return to quadratic
py "
print('{')
for i in range(200000): print(f'  \"k{i}\": {i},')
print('  \"num_layers\": 24, \"hidden_size\": 2048, \"num_attention_heads\": 16}')" >"$tmp/big.yml"
check big-yaml 0 timeout 60 "$sim" import "$tmp/big.yml" -o "$tmp/big.yaml"
expect_grep big-yaml-unmapped "k199999 = 199999" "$tmp/big.yaml"
py "
print('{')
for i in range(50000): print(f'  \"k{i}\": {i},')
print('  \"k777\": 1}')" >"$tmp/dup.yml"
check big-yaml-dup 2 timeout 60 "$sim" import "$tmp/dup.yml"
expect_grep big-yaml-dup-text "dup.yml:50002:3: key 'k777' appears twice" "$tmp/err"

# the config file's name, a key and a value went raw into the scenario's comments: a newline in
# the name became a live key (sim: {interference: false ...} changed the answer, exit 0); now
# escaped (\x0a), and a '"' or a byte that is not UTF-8 in the name no longer breaks the file
printf '{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "hidden_act": "silu", "rms_norm_eps": 1e-05, "vocab_size": 128256, "rope_theta": 500000.0, "tie_word_embeddings": false, "we\\nird": "x\\ny\\u2028z"}' >"$tmp/c.json"
n="$tmp/"$'y\nsim: {interference: false, host: false}\n"x\xff.json'
cp "$tmp/c.json" "$n"
check inject 0 "$sim" import "$n" -o "$tmp/inj.yaml"
check inject-runs 0 "$sim" "$tmp/inj.yaml" --format json --no-timing
grep '"iteration_time_s"' "$tmp/out" >"$tmp/a"
check inject-plain 0 "$sim" import "$tmp/c.json" -o "$tmp/plain.yaml"
"$sim" "$tmp/plain.yaml" --format json --no-timing | grep '"iteration_time_s"' >"$tmp/b"
if cmp -s "$tmp/a" "$tmp/b"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL inject-same: the file name changed the answer"; cat "$tmp/a" "$tmp/b"; fi
expect_grep inject-comment '^# Imported by `sim import` from .*/y\\x0asim: {interference' "$tmp/inj.yaml"
expect_grep inject-key '^#   we\\x0aird = x\\x0ay\\u2028z ' "$tmp/inj.yaml"
expect_grep inject-name 'name: "y\\nsim: .*\\"x' "$tmp/inj.yaml"
# a '"' in --topology named the topology, not a YAML parse error of text the user never wrote
check topology-quote 2 "$sim" import "$d/hf_moe.json" --topology 'fron"tier'
expect_grep topology-quote-text "topology 'fron\"tier' not found" "$tmp/err"
check collective-topology-quote 2 "$sim" collective --op allreduce --ranks 16 --topology 'fron"tier'
expect_grep collective-topology-quote-text "topology 'fron\"tier' not found" "$tmp/err"

# a NUL ended a Megatron-LM argument file: --bf16 after it was lost (fp32, exit 0)
printf -- '--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096\n--micro-batch-size 1\0 --bf16\n' >"$tmp/a.sh"
check megatron-nul 2 "$sim" import "$tmp/a.sh"
expect_grep megatron-nul-text "a.sh:2:21: a NUL byte" "$tmp/err"

# an inconsistent DeepSpeed batch (63 with micro-batch 2 and accumulation 2; DeepSpeed refuses
# it) imported with exit 0 and train_batch_size nowhere; with --nodes given, a consistent one no
# longer sets DP and is listed as not mapped
printf '{"train_batch_size": 63, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2}\n' >"$tmp/b.json"
check ds-batch 2 "$sim" import "$tmp/b.json" --model gpt-neox-1.3b
expect_grep ds-batch-text "b.json: key train_batch_size: train_batch_size = 63: .*63 is no multiple of 4" "$tmp/err"
printf '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2}\n' >"$tmp/b2.json"
check ds-batch-nodes 0 "$sim" import "$tmp/b2.json" --model gpt-neox-1.3b --nodes 3
expect_grep ds-batch-nodes-unmapped "^#   train_batch_size = 64 " "$tmp/out"

# launch scripts that would make the reader do unbounded work, or that bash refuses
{ echo 'A=(x)'; for i in $(seq 40); do echo 'A+=(${A[@]})'; done; echo '--num-layers 2'; } >"$tmp/dbl.sh"
check shell-doubling 2 timeout 60 "$sim" import "$tmp/dbl.sh"
expect_grep shell-doubling-text "dbl.sh:23: more than 4194304 words" "$tmp/err"
{ echo 'X=x'; for i in $(seq 40); do echo 'X=$X$X'; done; echo '--num-layers 2'; } >"$tmp/dblx.sh"
check shell-doubling-text-bytes 2 timeout 60 "$sim" import "$tmp/dblx.sh"
expect_grep shell-doubling-bytes-text "dblx.sh:23: more than 4194304 words or 4 MiB of text" "$tmp/err"
# 5,000 levels: past the depth bound, and within the text bound (each level copies the rest)
py "print('X=' + '\${a:-'*5000 + 'q' + '}'*5000); print('--num-layers \$X --hidden-size 64 --num-attention-heads 2')" >"$tmp/nest.sh"
check shell-nesting 2 timeout 60 "$sim" import "$tmp/nest.sh"
expect_grep shell-nesting-text "defaults nested more than 64 deep" "$tmp/err"
printf -- '--num-layers 2 --hidden-size 64\nX=${\n--num-attention-heads 2 "oops\n--bf16\n' >"$tmp/open.sh"
check shell-unclosed 2 "$sim" import "$tmp/open.sh"
expect_grep shell-unclosed-text "open.sh:2: a quote, \${ or \$( opened here is never closed" "$tmp/err"

# a whole number past int64 in JSON came back wrapped: hidden_size 2^63 was echoed negative
printf '{"hidden_size": 4096,\n "num_hidden_layers": 9223372036854775808, "num_attention_heads": 32}\n' >"$tmp/big.json"
check json-int64 2 "$sim" import "$tmp/big.json"
expect_grep json-int64-text "big.json:2:23: the whole number 9223372036854775808 is past what 64 bits hold" "$tmp/err"
printf '{"hidden_size": 4096, "num_hidden_layers": -9223372036854775808, "num_attention_heads": 1e400, "x": [-1, 2.5e3]}\n' >"$tmp/edge.json"
check json-int64-edge 2 "$sim" import "$tmp/edge.json"
expect_grep json-int64-edge-text "num_hidden_layers = -9223372036854775808: expected a whole number" "$tmp/err"

# scalars are written by libyaml's emitter (sim/input/yaml_out.c): a name with a quote, a
# backslash, a tab and YAML's line breaks LS and NEL comes back as given, through sim import and
# again through --print-scenario's output run as a scenario
nm=$'q"b\\s\tt\xe2\x80\xa8l\xc2\x85n'
check roundtrip-import 0 "$sim" import "$src/tests/import/hf_llama3_8b_config.json" --name "$nm" -o "$tmp/rt.yaml"
"$sim" "$tmp/rt.yaml" --print-scenario >"$tmp/rt2.yaml" 2>/dev/null
for f in rt rt2; do
    got=$("$sim" "$tmp/$f.yaml" -f json --no-timing | python3 -c 'import json,sys; sys.stdout.write(json.load(sys.stdin)["model"]["name"])')
    if [ "$got" = "$nm" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL roundtrip-$f: model name came back as '$got'"; fi
done
finish import_hostile

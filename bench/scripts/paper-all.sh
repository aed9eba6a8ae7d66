#!/usr/bin/env bash
# Runs the `paper query` experiments of bench/RESULTS.md, section "Query".
# Usage: bench/scripts/paper-all.sh [main|tuned|sweep|extra|all] [run-label]
# Outputs go to bench/results/<label>/ (table .txt and .json per run).
set -euo pipefail
cd "$(dirname "$0")/../.."
what=${1:-all}
label=${2:-run1}
out=bench/results/$label
mkdir -p "$out"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-bench}
cargo build --release -q -p bloomslice-bench --bin paper
paper=$CARGO_TARGET_DIR/release/paper
# Which engine and kernels were measured (read-only git queries).
{
    git rev-parse HEAD
    git status --short engine kernels
} >"$out/ENGINE_STATE.txt"

run() { # name, args...
    local name=$1
    shift
    echo "== $name: paper query $*" >&2
    "$paper" query "$@" --json-out "$out/$name.json" >"$out/$name.txt" 2>"$out/$name.log"
}

if [[ $what == main || $what == all ]]; then
    run paper-1000 --workload paper
    run full-1000 --workload full
    run full-10000 --workload full --filters 10000
    run large-100000 --workload large
fi
if [[ $what == tuned || $what == all ]]; then
    # The main runs again with the recommended max_shard_columns.
    run tuned-paper-1000 --workload paper --shard-columns 16384
    run tuned-full-1000 --workload full --shard-columns 16384
    run tuned-full-10000 --workload full --filters 10000 --shard-columns 16384
    run tuned-large-100000 --workload large --shard-columns 16384
fi
if [[ $what == sweep || $what == all ]]; then
    for c in 2048 4096 8192 16384; do
        run sweep-full-10000-cols-$c --workload full --filters 10000 --engines sliced --shard-columns "$c"
        run sweep-paper-1000-cols-$c --workload paper --engines sliced --shard-columns "$c"
    done
    for d in 0 2 4 8 16; do
        run sweep-full-10000-prefetch-$d --workload full --filters 10000 --engines sliced --prefetch "$d"
        run sweep-paper-1000-prefetch-$d --workload paper --engines sliced --prefetch "$d"
    done
fi
if [[ $what == extra || $what == all ]]; then
    # paper N = 1000 has only 1024 columns, so it cannot tell shard widths
    # apart: sweep them where they matter too.
    for c in 1024 2048 4096 8192 16384 32768; do
        run extra-paper-10000-cols-$c --workload paper --filters 10000 --engines sliced --shard-columns "$c"
    done
    for c in 4096 16384 32768; do
        run extra-large-100000-cols-$c --workload large --engines sliced --shard-columns "$c"
    done
    for d in 1 2 4; do
        run extra-full-10000-cols-16384-prefetch-$d --workload full --filters 10000 --engines sliced \
            --shard-columns 16384 --prefetch "$d"
        run extra-paper-10000-cols-16384-prefetch-$d --workload paper --filters 10000 --engines sliced \
            --shard-columns 16384 --prefetch "$d"
    done
fi

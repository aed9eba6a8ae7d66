#!/bin/sh
# Regenerates the raw outputs of the "Collections" section of bench/RESULTS.md:
#   bench/results/collection/run.sh OUTDIR
# (from the repository root after `cargo build --release -p bloomslice-bench --bin paper`).
set -e
out=${1:?output directory}
paper=${PAPER:-target/release/paper}
mkdir -p "$out"
run() {
    name=$1; shift
    for kernels in avx512 avx2; do
        BLOOMSLICE_KERNELS=$kernels "$paper" query --workload skewed --rounds ${ROUNDS:-7} "$@" \
            --json-out "$out/$name-$kernels.json" > "$out/$name-$kernels.txt" 2> "$out/$name-$kernels.log"
    done
}
run lognormal --sizes lognormal
run equal --sizes equal --queries 50000 --score-queries 200
run one-huge --sizes one-huge --filters 4000
run tiny --sizes tiny --filters 5000
run lists --lists /var/lib/dpkg/info

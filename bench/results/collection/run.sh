#!/bin/sh
# Regenerates the raw outputs of the "Collections" section of bench/RESULTS.md:
#   bench/results/collection/run.sh OUTDIR
# (from the repository root after `cargo build --release -p bloomslice-bench --bin paper`).
set -e
out=${1:?output directory}
paper=${PAPER:-target/release/paper}
mkdir -p "$out"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //; s/(R)//g; s/ Processor//') family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
run() {
    name=$1; shift
    for kernels in avx512 avx2; do
        {
            echo "# command: ROUNDS=${ROUNDS:-7} bench/results/collection/run.sh $out"
            echo "# engine: $(git rev-parse --short HEAD)"
            echo "# cpu: $cpu"
            BLOOMSLICE_KERNELS=$kernels "$paper" query --workload skewed --rounds ${ROUNDS:-7} "$@"
        } > "$out/$name-$kernels.txt"
    done
}
run lognormal --sizes lognormal
run equal --sizes equal --queries 50000 --score-queries 200
run one-huge --sizes one-huge --filters 4000
run tiny --sizes tiny --filters 5000
run lists --lists /var/lib/dpkg/info

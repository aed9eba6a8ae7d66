#!/bin/sh
# Regenerates bench/results/collection/levels-<cpu>.txt (the "Levels" table of
# bench/RESULTS.md): bench/results/collection/levels-run.sh OUTFILE
# (from the repository root after
# `cargo build --release -p bloomslice-bench --example levelprobe`).
set -e
out=${1:?output file}
probe=${PROBE:-target/release/examples/levelprobe}
{
    echo "# command: cargo run --release -p bloomslice-bench --example levelprobe -- lists /var/lib/dpkg/info | synthetic N (N = 1000, 10000, 100000, 1000000)"
    echo "# engine: $(git rev-parse --short HEAD)"
    echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
    "$probe" lists /var/lib/dpkg/info
    for n in 1000 10000 100000 1000000; do
        "$probe" synthetic "$n"
    done
} > "$out"

#!/usr/bin/env bash
# The persistence speed figures (bench/RESULTS.md, section "Files"), all in
# one run on one disk:
#   - dd sequential write (with fdatasync) and read of 1 GiB, for reference;
#   - save / load / mmap-open of a ~1 GiB index (persist-speed);
#   - `bloomslice build` from a TSV of 10 million lines against inserting
#     the same keys through the library directly.
# Usage: bench/scripts/persist-speed.sh [DIR] [GIB] [TSV_LINES]
set -euo pipefail
dir=${1:-/tmp/bloomslice-persist-speed}
gib=${2:-1}
lines=${3:-10000000}
mkdir -p "$dir"
cargo build --release -p bloomslice-cli --bins
bin=${CARGO_TARGET_DIR:-target}/release
echo "== dd (1 GiB)"
echo "(write + fdatasync)"
dd if=/dev/zero of="$dir/dd.bin" bs=1M count=1024 conv=fdatasync 2>&1 | tail -1
echo "(read, direct I/O: the disk itself)"
dd if="$dir/dd.bin" of=/dev/null bs=1M iflag=direct 2>&1 | tail -1
echo "(read, page cache)"
dd if="$dir/dd.bin" of=/dev/null bs=1M 2>&1 | tail -1
rm -f "$dir/dd.bin"
echo "== persist-speed"
"$bin/persist-speed" --dir "$dir" --gib "$gib" --tsv-lines "$lines"
echo "== bloomslice build --tsv ($lines lines)"
start=$(date +%s.%N)
"$bin/bloomslice" build "$dir/tsv.bsi" --tsv "$dir/keys.tsv" --force | grep -E "^(sets|wrote)"
end=$(date +%s.%N)
echo "bloomslice build wall time: $(echo "$end - $start" | bc) s = $(echo "$lines / ($end - $start)" | bc) keys/s (read + parse + insert + save)"
rm -f "$dir/tsv.bsi" "$dir/keys.tsv"

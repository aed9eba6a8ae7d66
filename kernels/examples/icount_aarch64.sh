#!/usr/bin/env bash
# Instructions the NEON and portable backends execute per call of the hot
# kernels on aarch64, counted under qemu-aarch64 (user mode): the example
# `icount` calls one kernel REPS times; qemu runs one instruction per
# translation block (`-singlestep`), unchained (`nochain`), and logs every
# block it executes (`-d exec`) whose address lies inside the kernel's entry
# point (`-dfilter`, the symbol's address and size from `nm`, placed where
# qemu loads the binary, found from the address of `main` it prints). The
# entry point holds the whole kernel (the generic algorithm is inlined into
# it); calls out of it, none on these inputs but the output's `Vec` growth
# check, are not counted. Lines per call = log lines / REPS.
#
# With --check, exits 1 unless NEON executes fewer instructions than the
# portable tier for every kernel, and both give the same answers (CI runs it
# so). Needs the aarch64 target, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross
# and qemu-user (see .ci/run). Results: bench/RESULTS.md, section "Kernels".
set -euo pipefail
check_mode=false
if [ "${1:-}" = --check ]; then check_mode=true; fi
cd "$(dirname "$0")/../.."
target=aarch64-unknown-linux-gnu
reps=${REPS:-200}
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
cargo build --locked --release --target "$target" -p bloomslice-kernels --example icount >&2
bin=${CARGO_TARGET_DIR:-target}/$target/release/examples/icount
qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
main_at=$(aarch64-linux-gnu-nm "$bin" | awk '$3 ~ /icount4main/ {print $1}')
base=$(( $("${qemu[@]}" "$bin" scalar and_runs 1 | awk '/^main/ {print $2}') - 0x$main_at ))
printf '%-20s %-9s %12s %8s  %s\n' kernel backend "insns/call" "bytes" check
failed=0
for kernel in and_runs append_mapped_bits count_runs popcount; do
  counts=()
  checks=()
  for backend in portable neon; do
    case $backend in
      portable) symbol="bloomslice_kernels::arch::portable::$kernel" ;;
      neon) symbol="bloomslice_kernels::arch::aarch64::neon::entry::$kernel" ;;
    esac
    read -r at size < <(aarch64-linux-gnu-nm -S -C "$bin" | awk -v s="$symbol" '$4 == s && NF == 4 {print $1, $2}')
    range=$(printf '0x%x+0x%x' $((base + 0x$at)) $((0x$size)))
    check=$("${qemu[@]}" -singlestep -d exec,nochain -dfilter "$range" -D "$log" "$bin" "$backend" "$kernel" "$reps" \
      | awk '/^check/ {print $2}')
    lines=$(grep -c '^Trace' "$log")
    counts+=("$lines")
    checks+=("$check")
    printf '%-20s %-9s %12s %8d  %s\n' "$kernel" "$backend" "$(awk -v l="$lines" -v r="$reps" 'BEGIN {printf "%.1f", l / r}')" \
      $((0x$size)) "$check"
  done
  if [ "${checks[0]}" != "${checks[1]}" ] || [ "${counts[1]}" -ge "${counts[0]}" ]; then
    echo "$kernel: NEON does not execute fewer instructions than portable, or answers differently"
    failed=1
  fi
done
if $check_mode && [ "$failed" = 1 ]; then exit 1; fi

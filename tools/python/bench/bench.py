"""Python side of the speed comparison (bench/RESULTS.md, section "Bindings").

Reads DIR/full.bsi and DIR/queries.u64 written by
`cargo run --release -p bloomslice-capi --example capi-bench -- DIR`, then
times, best of REPEAT:

- `query_batch` with the whole NumPy uint64 array of hashes (per key);
- the same from 1 and from 2 Python threads sharing one index, each thread
  querying the whole array ROUNDS times (throughput ratio).

Prints `py_ns_per_key <ns> matches <n>` and
`threads_speedup <2-thread throughput / 1-thread throughput>`.
"""

import sys
import threading
import time

import numpy as np

import bloomslice


def main() -> None:
    directory = sys.argv[1]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    index = bloomslice.Index.open(f"{directory}/full.bsi", mmap=False)
    hashes = np.fromfile(f"{directory}/queries.u64", dtype="<u8").astype(np.uint64)
    best, matches = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        ids, offsets = index.query_batch(hashes)
        best = min(best, time.perf_counter() - start)
        assert matches is None or matches == len(ids)
        matches = len(ids)
    print(f"py_ns_per_key {best * 1e9 / len(hashes):.2f} matches {matches}")

    rounds = 5

    def work() -> None:
        for _ in range(rounds):
            index.query_batch(hashes)

    def run(threads: int) -> float:
        ts = [threading.Thread(target=work) for _ in range(threads)]
        start = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return threads * rounds * len(hashes) / (time.perf_counter() - start)

    # Alternate 1- and 2-thread runs so both see the same machine load;
    # keep the best of each (the machine is shared).
    one = two = 0.0
    for _ in range(repeat):
        one = max(one, run(1))
        two = max(two, run(2))
    print(f"threads_speedup {two / one:.2f} (1 thread {one / 1e6:.2f} M keys/s, 2 threads {two / 1e6:.2f} M keys/s)")


if __name__ == "__main__":
    main()

"""Fan-out cost of bloomslice.ray against the library in one process
(bench/RESULTS.md, "Scaling out with Ray").

    python ray_bench.py gen DIR CLI      # once: DIR/full.bsi, DIR/queries.u64, DIR/s{1,2,4,8}/
    python ray_bench.py run DIR [ROUNDS] # the tables

`gen` builds the `full` workload with N = 10 000 filters (m = 100 992,
k = 7, 10 000 random 64-bit keys per filter, given as caller hashes) with
the Python API, writes 100 000 queries (half present, half random) and
splits the index 1, 2, 4 and 8 ways with the CLI's `split`.

`run` starts a local Ray cluster (2 CPUs, 1 GB object store), then for
batches of 1, 64, 1 024 and 65 536 keys times `Index.query_batch` in this
process and `RayIndex.query_batch` over 1, 2, 4 and 8 shard actors on the
same queries (every answer is checked against the library's first), best
of ROUNDS passes each, and prints per-batch latency, per-key cost and the
throughput of 2 actors (2 shards) against 1 actor (1 shard).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np

import bloomslice

N_FILTERS = 10_000
KEYS_PER_FILTER = 10_000
QUERIES = 100_000
SHARDS = (1, 2, 4, 8)
BATCHES = (1, 64, 1024, 65_536)


class LazySets:
    """The `full` workload's sets, generated one at a time (the Python API
    takes any object with `items()`)."""

    def __init__(self, present: np.ndarray) -> None:
        self.present = present
        self.chosen: list[np.ndarray] = []

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        for i in range(N_FILTERS):
            rng = np.random.default_rng(1_000_003 + i)
            keys = rng.integers(0, np.iinfo(np.uint64).max, KEYS_PER_FILTER, dtype=np.uint64, endpoint=True)
            take = int(self.present[i])
            if take:
                self.chosen.append(keys[rng.integers(0, KEYS_PER_FILTER, take)])
            yield f"filter-{i:05d}", keys


def gen(directory: str, cli: str) -> None:
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(42)
    present = rng.multinomial(QUERIES // 2, [1 / N_FILTERS] * N_FILTERS)
    sets = LazySets(present)
    start = time.perf_counter()
    # Any object with `items()` is accepted; the stubs say Mapping.
    index = bloomslice.Index.build(sets, n_exp=10_000, fp=0.01)  # type: ignore[arg-type]
    print(f"built N = {len(index)} in {time.perf_counter() - start:.1f} s")
    index.save(f"{directory}/full.bsi")
    queries = np.concatenate([*sets.chosen, rng.integers(0, np.iinfo(np.uint64).max, QUERIES // 2, dtype=np.uint64)])
    rng.shuffle(queries)
    queries.astype("<u8").tofile(f"{directory}/queries.u64")
    for k in SHARDS:
        subprocess.run([cli, "split", f"{directory}/full.bsi", "--shards", str(k), f"{directory}/s{k}"], check=True)


def batches(queries: np.ndarray, size: int) -> list[np.ndarray]:
    # Small batches: enough of them for a stable figure, not the whole set.
    count = {1: 2000, 64: 400, 1024: 60}.get(size, len(queries) // size)
    return [queries[i * size : (i + 1) * size] for i in range(count)]


def best_pass(query: object, parts: list[np.ndarray], rounds: int) -> float:
    """Best seconds per batch over `rounds` passes over `parts`."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for part in parts:
            query(part)  # type: ignore[operator]
        best = min(best, (time.perf_counter() - start) / len(parts))
    return best


def run(directory: str, rounds: int) -> None:
    import ray

    from bloomslice.ray import RayIndex

    queries = np.fromfile(f"{directory}/queries.u64", dtype="<u8").astype(np.uint64)
    print(f"load average before: {os.getloadavg()}")
    library = bloomslice.Index.open(f"{directory}/full.bsi")
    ray.init(num_cpus=2, object_store_memory=1_000_000_000, include_dashboard=False, logging_level=logging.ERROR)
    try:
        table: dict[tuple[int, int], float] = {}
        for size in BATCHES:
            parts = batches(queries, size)
            table[(0, size)] = best_pass(library.query_batch, parts, rounds)
        want = [library.query_batch(queries[i * 1024 : (i + 1) * 1024]) for i in range(4)]
        for k in SHARDS:
            with RayIndex.open(f"{directory}/s{k}") as index:
                for i, (ids, offsets) in enumerate(want):
                    got = index.query_batch(queries[i * 1024 : (i + 1) * 1024])
                    assert np.array_equal(got.offsets, offsets), "offsets differ"
                    for j in range(1024):
                        a, b = offsets[j], offsets[j + 1]
                        assert set(got.ids[a:b].tolist()) == set(ids[a:b].tolist()), f"key {j} differs"
                for size in BATCHES:
                    table[(k, size)] = best_pass(index.query_batch, batches(queries, size), rounds)
        print("\nper batch (best pass), microseconds; per key in ns for the largest batch")
        print("| keys per batch | library | " + " | ".join(f"Ray, {k} shard{'s' if k > 1 else ''}" for k in SHARDS) + " |")
        print("| ---: | ---: |" + " ---: |" * len(SHARDS))
        for size in BATCHES:
            cells = [f"{table[(k, size)] * 1e6:,.0f}" for k in (0, *SHARDS)]
            print(f"| {size:,} | " + " | ".join(cells) + " |")
        big = BATCHES[-1]
        for k in SHARDS:
            lib, through = table[(0, big)], table[(k, big)]
            print(f"{k} shards, {big}-key batches: {through * 1e9 / big:.0f} ns/key vs library {lib * 1e9 / big:.0f}"
                  f" ns/key: {through / lib:.2f}x")
        one, two = table[(1, big)], table[(2, big)]
        print(f"throughput 1 actor {big / one / 1e6:.3f} M keys/s, 2 actors {big / two / 1e6:.3f} M keys/s: {one / two:.2f}x")
    finally:
        ray.shutdown()
    print(f"load average after: {os.getloadavg()}")


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "gen":
        gen(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "run":
        run(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

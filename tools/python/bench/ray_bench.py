"""Fan-out cost of bloomslice.ray against the library in one process
(bench/RESULTS.md, section "Scale-out").

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
of ROUNDS passes each (after a warm-up pass; a pass of 65 536-key batches
is 4 batches), and prints per-batch latency, per-key cost and the
throughput of 2 actors (2 shards) against 1 actor (1 shard), batch by batch
and as a stream of batches with two in flight (`query_stream`), with the
median and best of the ratios taken within each round.
"""

from __future__ import annotations

import logging
import statistics
import os
import subprocess
import sys
import threading
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
    """The batches of one timed pass: enough small ones for a stable
    figure; for 65 536 keys, 4 batches that overlap (the query set holds
    100 000 keys), so a pass measures the steady state and not one call."""
    count = {1: 300, 64: 200, 1024: 60}.get(size, 4)
    step = size if size * count <= len(queries) else (len(queries) - size) // (count - 1)
    return [queries[i * step : i * step + size] for i in range(count)]


def best_pass(query: object, parts: list[np.ndarray], rounds: int) -> float:
    """Best seconds per batch over `rounds` passes over `parts`."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for part in parts:
            query(part)  # type: ignore[operator]
        best = min(best, (time.perf_counter() - start) / len(parts))
    return best


def two_threads(index: bloomslice.Index, a: np.ndarray, b: np.ndarray) -> None:
    """Queries `a` and `b` from two threads at once (the GIL is released)."""
    worker = threading.Thread(target=index.query_batch, args=(b,))
    worker.start()
    index.query_batch(a)
    worker.join()


def run(directory: str, rounds: int) -> None:
    import ray

    from bloomslice.ray import RayIndex

    queries = np.fromfile(f"{directory}/queries.u64", dtype="<u8").astype(np.uint64)
    print(f"load average before: {os.getloadavg()}")
    library = bloomslice.Index.open(f"{directory}/full.bsi")
    # Ray starts workers at niceness 15 by default; the library runs at 0.
    # On a shared machine that alone would tilt the comparison.
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(num_cpus=2, object_store_memory=1_000_000_000, include_dashboard=False, logging_level=logging.ERROR)
    indexes = {k: RayIndex.open(f"{directory}/s{k}") for k in SHARDS}
    try:
        want = [library.query_batch(queries[i * 1024 : (i + 1) * 1024]) for i in range(4)]
        for k, index in indexes.items():
            for i, (ids, offsets) in enumerate(want):
                got = index.query_batch(queries[i * 1024 : (i + 1) * 1024])
                assert np.array_equal(got.offsets, offsets), f"{k} shards: offsets differ"
                for j in range(1024):
                    a, b = offsets[j], offsets[j + 1]
                    assert set(got.ids[a:b].tolist()) == set(ids[a:b].tolist()), f"{k} shards: key {j} differs"
        engines: dict[int, object] = {0: library.query_batch, **{k: ix.query_batch for k, ix in indexes.items()}}
        # Rounds interleave the engines, so each sees the same load; each
        # figure is the best pass over all rounds, and ratios are also
        # taken within a round (their median and best are printed too).
        # A warm-up pass first: the first calls of a process pay for fresh
        # memory (several times a steady call).
        big = BATCHES[-1]
        big_parts = batches(queries, big)
        for query in engines.values():
            best_pass(query, big_parts, 1)
        table: dict[tuple[int, int], float] = {}
        ratios: dict[str, list[float]] = {}
        for _ in range(rounds):
            this: dict[tuple[int, int], float] = {}
            for size in BATCHES:
                parts = batches(queries, size)
                for k, query in engines.items():
                    this[(k, size)] = best_pass(query, parts, 1)
                    table[(k, size)] = min(table.get((k, size), float("inf")), this[(k, size)])
            # Control: how much a second core gives the library itself right
            # now (2 threads, half a batch each, vs 1 thread).
            half = big // 2
            this[(-2, big)] = best_pass(lambda b: two_threads(library, b[:half], b[half:]), big_parts, 1)
            this[(-1, big)] = this[(0, big)]
            # The same batches as a stream with 2 in flight (`query_stream`):
            # the driver merges one batch while the actors scan the next.
            for k in (1, 2):
                start = time.perf_counter()
                for _ in indexes[k].query_stream(big_parts):
                    pass
                this[(-10 - k, big)] = (time.perf_counter() - start) / len(big_parts)
                table[(-10 - k, big)] = min(table.get((-10 - k, big), float("inf")), this[(-10 - k, big)])
            for name, ratio in (
                ("4 shards / library", this[(4, big)] / this[(0, big)]),
                ("1 actor / 2 actors", this[(1, big)] / this[(2, big)]),
                ("library 1 thread / 2 threads", this[(-1, big)] / this[(-2, big)]),
                ("stream: 1 actor / 2 actors", this[(-11, big)] / this[(-12, big)]),
            ):
                ratios.setdefault(name, []).append(ratio)
            print(f"round: 4 shards / library {this[(4, big)] / this[(0, big)]:.2f}x, "
                  f"2 actors vs 1 {this[(1, big)] / this[(2, big)]:.2f}x, "
                  f"stream 2 actors vs 1 {this[(-11, big)] / this[(-12, big)]:.2f}x, "
                  f"control: library 2 threads vs 1 {this[(-1, big)] / this[(-2, big)]:.2f}x, "
                  f"load {os.getloadavg()[0]:.1f}")
        print("\nper batch (best pass), microseconds")
        print("| keys per batch | library | " + " | ".join(f"Ray, {k} shard{'s' if k > 1 else ''}" for k in SHARDS) + " |")
        print("| ---: | ---: |" + " ---: |" * len(SHARDS))
        for size in BATCHES:
            cells = [f"{table[(k, size)] * 1e6:,.0f}" for k in (0, *SHARDS)]
            print(f"| {size:,} | " + " | ".join(cells) + " |")
        for k in SHARDS:
            lib, through = table[(0, big)], table[(k, big)]
            print(f"{k} shards, {big}-key batches: {through * 1e9 / big:.0f} ns/key vs library {lib * 1e9 / big:.0f}"
                  f" ns/key: {through / lib:.2f}x")
        one, two = table[(1, big)], table[(2, big)]
        print(f"throughput 1 actor {big / one / 1e6:.3f} M keys/s, 2 actors {big / two / 1e6:.3f} M keys/s: {one / two:.2f}x")
        one, two = table[(-11, big)], table[(-12, big)]
        print(f"stream throughput 1 actor {big / one / 1e6:.3f} M keys/s, 2 actors {big / two / 1e6:.3f} M keys/s:"
              f" {one / two:.2f}x")
        for name, values in ratios.items():
            print(f"same-round ratio {name}: median {statistics.median(values):.2f}x, "
                  f"best {(min if name.startswith('4 shards') else max)(values):.2f}x, over {len(values)} rounds")
    finally:
        for index in indexes.values():
            index.close()
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

"""Batch queries from Python: a collection (sets sized from their own keys)
against the same sets in one index of one filter length, in one run
(bench/RESULTS.md, section "Bindings").

Set i of SETS holds 20 000 / (i + 1) keys (at least 2: one set of 20 000, a
long tail of small ones), at 1% false positives. The queries are QUERIES
hashes (``bloomslice.hash_keys``), half of keys in the sets, half absent,
answered by ``Index.query_batch`` on a NumPy array; the two indexes are timed
alternately, best of R passes each, after checking that the collection
answers every present key with its set.

    python tools/python/bench/collection_bench.py [SETS] [QUERIES] [R]
"""

from __future__ import annotations

import random
import sys
import time

import numpy as np
import numpy.typing as npt

import bloomslice


def best_of(repeat: int, index: bloomslice.Index, hashes: npt.NDArray[np.uint64]) -> tuple[float, int]:
    best = float("inf")
    total = 0
    for _ in range(repeat):
        start = time.perf_counter()
        ids, _ = index.query_batch(hashes)
        best = min(best, time.perf_counter() - start)
        total = len(ids)
    return best, total


def main() -> None:
    sets_n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    queries = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    sets: dict[bytes | str, list[str]] = {
        f"set{i:05d}": [f"set{i}-key{j}" for j in range(max(2, 20_000 // (i + 1)))] for i in range(sets_n)
    }
    rng = random.Random(42)
    names: list[bytes | str] = list(sets)
    present = []
    for _ in range(queries // 2):
        name = names[rng.randrange(sets_n)]
        present.append((name, sets[name][rng.randrange(len(sets[name]))]))
    keys = [k for _, k in present] + [f"absent-{i}" for i in range(queries - len(present))]
    order = list(range(len(keys)))
    rng.shuffle(order)
    keys = [keys[i] for i in order]
    hashes = bloomslice.hash_keys(keys)

    start = time.perf_counter()
    collection = bloomslice.Index.build(sets, fp=0.01)
    built_collection = time.perf_counter() - start
    start = time.perf_counter()
    one_m = bloomslice.Index.build(sets, n_exp=20_000, fp=0.01)
    built_one_m = time.perf_counter() - start

    # No false negatives: every present key's answer holds its set.
    ids, offsets = collection.query_batch(bloomslice.hash_keys([k for _, k in present]))
    for i, (name, _) in enumerate(present):
        assert collection.id(name) in ids[offsets[i] : offsets[i + 1]], name

    rows: dict[str, list[tuple[float, int]]] = {"collection": [], "one-m": []}
    for _ in range(2):
        for label, index in (("collection", collection), ("one-m", one_m)):
            rows[label].append(best_of(repeat, index, hashes))
    info = collection.inspect()
    parts = info["parts"]
    assert isinstance(parts, list)
    for label, index, built in (("collection", collection, built_collection), ("one-m", one_m, built_one_m)):
        seconds = min(t for t, _ in rows[label])
        matches = rows[label][0][1]
        print(
            f"{label}: {len(index)} sets, {index.inspect()['memory_bytes']} bytes, built in {built:.2f} s; "
            f"{queries} queries in {seconds * 1e3:.1f} ms = {queries / seconds / 1e6:.2f} M keys/s, "
            f"{matches} matches"
        )
    print(f"collection parts: {[(p['m'], p['sets']) for p in parts]}")
    ratio = min(t for t, _ in rows["collection"]) / min(t for t, _ in rows["one-m"])
    print(f"time ratio collection / one-m: {ratio:.3f}")


if __name__ == "__main__":
    main()

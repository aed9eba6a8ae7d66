"""Indexes built without a size: collections whose sets are each sized from
their own keys, in size-classed parts, against a plain-Python model."""

import pathlib
from typing import Dict, List

import numpy as np
import pytest

import bloomslice
from conftest import assert_reload_sees_save

# Skewed sizes: many small sets, a few large ones (a heavy tail).
SIZES = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584] * 3


def skewed_sets() -> Dict[str, List[str]]:
    return {f"set{i:02d}": [f"s{i}-{j}" for j in range(n)] for i, n in enumerate(SIZES)}


def model_answer(sets: Dict[str, List[str]], key: str) -> List[str]:
    return sorted(name for name, keys in sets.items() if key in keys)


def test_a_collection_answers_as_a_python_model_of_its_sets() -> None:
    sets = skewed_sets()
    members = {name: set(keys) for name, keys in sets.items()}
    # At 1e-9 no false positive is expected among these keys, so every
    # answer must equal the model's.
    index = bloomslice.Index.build(sets, fp=1e-9)
    info = index.inspect()
    assert info["fp"] == 1e-9 and info["m"] is None and len(info["parts"]) >= 2  # type: ignore[arg-type]
    assert sum(p["sets"] for p in info["parts"]) == len(sets)  # type: ignore[attr-defined]
    keys = [k for keys in sets.values() for k in keys[::3]] + [f"absent-{i}" for i in range(2000)]
    want = [sorted(n for n, m in members.items() if k in m) for k in keys]
    assert [index.query(k) for k in keys] == want
    assert index.query_batch(keys) == want
    hashes = bloomslice.hash_keys(keys)
    ids, offsets = index.query_batch(hashes)
    got = [sorted(index.name(int(i)) for i in ids[offsets[j] : offsets[j + 1]]) for j in range(len(keys))]
    assert got == want
    ids32, offsets32 = index.query_batch_compact(hashes)
    assert ids32.dtype == np.uint32 and np.array_equal(ids32.astype(np.uint64), ids)
    assert np.array_equal(offsets32, offsets)

    # Scores: per set, how many of the keys read it holds.
    read = sets["set16"][:1000] + sets["set03"] + [f"absent-{i}" for i in range(50)]
    counts = {n: sum(k in m for k in read) for n, m in members.items()}
    assert index.score(read) == {n: c for n, c in sorted(counts.items()) if c > 0}
    assert index.score(read, 0.5) == {"set16": 1000}
    assert index.score(read, 5) == {n: c for n, c in sorted(counts.items()) if c >= 5}
    ids, scores = index.score(bloomslice.hash_keys(read), 1000)
    assert ids.tolist() == [index.id("set16")] and scores.tolist() == [1000]


def test_a_skewed_collection_costs_far_less_than_one_size_and_keeps_every_key() -> None:
    # 2000 sets of 5 keys and 8 of 5000: one filter length for all must
    # hold 5000 keys in every filter.
    sets: Dict[str, List[str]] = {f"tiny{i}": [f"t{i}-{j}" for j in range(5)] for i in range(2000)}
    sets.update({f"big{i}": [f"b{i}-{j}" for j in range(5000)] for i in range(8)})
    collection = bloomslice.Index.build(sets, fp=0.01)
    one_m = bloomslice.Index.build(sets, n_exp=5000, fp=0.01)
    assert len(one_m.inspect()["parts"]) == 1  # type: ignore[arg-type]
    assert collection.inspect()["memory_bytes"] * 3 < one_m.inspect()["memory_bytes"]  # type: ignore[operator]

    names = collection.names()
    keys = [k for ks in sets.values() for k in ks]
    owner = np.array([collection.id(n) for n, ks in sets.items() for _ in ks], dtype=np.uint64)
    ids, offsets = collection.query_batch(bloomslice.hash_keys(keys))
    counts = np.diff(offsets).astype(np.int64)
    # Every key's answer holds its own set: no false negatives.
    hit = (ids == np.repeat(owner, counts)).astype(np.int64)
    per_key = np.add.reduceat(hit, offsets[:-1].astype(np.int64)) if len(ids) else np.zeros(len(keys))
    assert np.all(counts > 0) and np.all(per_key == 1)
    # Absent keys: the mean false-positive rate over the sets stays near 1%.
    absent = bloomslice.hash_keys([f"absent-{i}" for i in range(5000)])
    ids, _ = collection.query_batch(absent)
    assert len(ids) / (len(absent) * len(names)) < 0.015


def test_layout_knobs_and_the_fixed_size_form() -> None:
    sets = skewed_sets()
    assert len(bloomslice.Index.build(sets, fp=0.01, max_parts=1).inspect()["parts"]) == 1  # type: ignore[arg-type]
    one = bloomslice.Index.build(sets, fp=0.01, query_cost_weight=1e9).inspect()
    assert len(one["parts"]) == 1  # type: ignore[arg-type]
    many = bloomslice.Index.build(sets, fp=0.01, query_cost_weight=0.0, max_parts=16).inspect()
    assert len(many["parts"]) > 2  # type: ignore[arg-type]
    # The least-memory layout takes no more memory than one part.
    assert many["memory_bytes"] <= one["memory_bytes"]  # type: ignore[operator]
    fixed = bloomslice.Index.build(sets, n_exp=3000, fp=0.01).inspect()
    assert fixed["fp"] is None and len(fixed["parts"]) == 1  # type: ignore[arg-type]
    assert fixed["m"] == fixed["parts"][0]["m"] and fixed["m"] > 3000 * 9  # type: ignore[index,operator]
    with pytest.raises(ValueError, match="without n_exp"):
        bloomslice.Index.build(sets, n_exp=100, max_parts=2)
    with pytest.raises(ValueError, match="at least 1"):
        bloomslice.Index.build(sets, fp=0.01, max_parts=0)
    with pytest.raises(ValueError, match="query_cost_weight"):
        bloomslice.Index.build(sets, fp=0.01, query_cost_weight=float("nan"))
    with pytest.raises(ValueError):
        bloomslice.Index.build(sets, fp=0.0)


def test_sets_are_added_grown_updated_and_removed() -> None:
    sets = skewed_sets()
    index = bloomslice.Index.build(sets, fp=1e-9)
    index.add("huge", [f"h-{j}" for j in range(20_000)])
    assert index.query("h-19999") == ["huge"]
    # "set00" holds 1 key; 3000 more make it outgrow its filter.
    index.add_keys("set00", [f"grow-{j}" for j in range(3000)])
    details = {d["name"]: d for d in index.inspect()["set_details"]}  # type: ignore[union-attr]
    assert details["set00"]["filters"] >= 2  # type: ignore[operator]
    assert all(index.query(f"grow-{j}") == ["set00"] for j in range(0, 3000, 7))
    assert index.query("s0-0") == ["set00"]
    # A grown set is reported once, and scored once per key.
    assert index.score([f"grow-{j}" for j in range(100)] + ["s0-0"], 1.0) == {"set00": 101}
    index.update("set01", ["new-a", "new-b"])
    assert index.query("new-a") == ["set01"] and index.query("s1-0") == []
    index.remove("set02")
    assert index.query("s2-0") == [] and "set02" not in index and len(index) == len(sets)
    with pytest.raises(ValueError, match="no set named"):
        index.add_keys("set02", ["x"])
    with pytest.raises(ValueError, match="already"):
        index.add("set03", ["x"])


def test_collection_files_save_open_and_map(tmp_path: pathlib.Path) -> None:
    sets = skewed_sets()
    index = bloomslice.Index.build(sets, fp=1e-9)
    index.add_keys("set00", [f"grow-{j}" for j in range(3000)])
    path = tmp_path / "c.bsi"
    index.save(path)
    keys = [k for keys in sets.values() for k in keys[::5]] + ["grow-2999", "absent"]
    want = [index.query(k) for k in keys]
    for opened in (bloomslice.Index.open(path), bloomslice.Index.open(path, mmap=False),
                   bloomslice.Index.open(path, verify=True)):
        assert [opened.query(k) for k in keys] == want
        assert opened.query_batch(keys) == want
        assert opened.score(keys) == index.score(keys)
        info = opened.inspect()
        assert len(info["parts"]) == len(index.inspect()["parts"])  # type: ignore[arg-type]
        assert info["file"] == str(path)
    # A changed copy saved over the file is seen after reload.
    assert_reload_sees_save(path, "late", "late-key")


def test_index_files_of_one_size_open_and_save_as_they_were(tmp_path: pathlib.Path) -> None:
    sets = skewed_sets()
    fixed = bloomslice.Index.build(sets, n_exp=3000, fp=0.01)
    path = tmp_path / "v1.bsi"
    fixed.save(path)
    keys = [k for keys in sets.values() for k in keys[::5]] + [f"absent-{i}" for i in range(500)]
    for opened in (bloomslice.Index.open(path), bloomslice.Index.open(path, mmap=False)):
        info = opened.inspect()
        assert (info["m"], len(info["parts"])) == (fixed.inspect()["m"], 1)  # type: ignore[arg-type]
        assert opened.query_batch(keys) == fixed.query_batch(keys)
        assert opened.score(keys, 0.001) == fixed.score(keys, 0.001)
        assert str(info["format_version"]).startswith("1.") and info["fp"] is None
        opened.add("new", [f"n-{j}" for j in range(10)])
        assert opened.query("n-3") == ["new"]
        opened.save(tmp_path / "again.bsi")
        again = bloomslice.Index.open(tmp_path / "again.bsi").inspect()
        assert str(again["format_version"]).startswith("1.") and again["sets"] == len(sets) + 1

"""Tests of the bloomslice Python package against the CLI and itself."""

import json
import math
import os
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import bloomslice
from conftest import CLI_PARAMS, PARAMS, SETS, assert_reload_sees_save

QUERY_KEYS = [k for keys in SETS.values() for k in keys[::7]] + [f"absent-{i}" for i in range(300)]


def cli_answers(cli: str, index: pathlib.Path, keys: list[str]) -> dict[str, list[str]]:
    out = subprocess.run([cli, "query", str(index), "--json", *keys], check=True, capture_output=True, text=True)
    answers = {}
    for line in out.stdout.splitlines():
        doc = json.loads(line)
        answers[doc["key"]] = sorted(doc["sets"])
    assert len(answers) == len(keys)
    return answers


def test_answers_equal_the_cli(cli, set_dir, tmp_path):
    idx = tmp_path / "cli.bsi"
    subprocess.run([cli, "build", str(idx), "--dir", str(set_dir), *CLI_PARAMS], check=True, capture_output=True)
    want = cli_answers(cli, idx, QUERY_KEYS)
    assert sum(len(v) for k, v in want.items() if k.startswith("absent")) > 0, "expected some false positives"

    opened = bloomslice.Index.open(idx)
    loaded = bloomslice.Index.open(idx, mmap=False)
    from_dir = bloomslice.Index.build(set_dir, **PARAMS)
    from_dict = bloomslice.Index.build(SETS, **PARAMS)
    for index in (opened, loaded, from_dir, from_dict):
        assert len(index) == len(SETS)
        assert [index.query(k) for k in QUERY_KEYS] == [want[k] for k in QUERY_KEYS]
        assert index.query_batch(QUERY_KEYS) == [want[k] for k in QUERY_KEYS]
        hashes = np.array([index.hash(k) for k in QUERY_KEYS], dtype=np.uint64)
        ids, offsets = index.query_batch(hashes)
        assert ids.dtype == np.uint64 and offsets.dtype == np.uint64
        assert len(offsets) == len(QUERY_KEYS) + 1 and offsets[0] == 0 and offsets[-1] == len(ids)
        for i, key in enumerate(QUERY_KEYS):
            names = sorted(index.name(int(x)) for x in ids[offsets[i] : offsets[i + 1]])
            assert names == want[key], key
            assert list(ids[offsets[i] : offsets[i + 1]]) == index.query_ids(key)
        ids2, offsets2 = index.query_batch([k.encode() for k in QUERY_KEYS], arrays=True)
        assert np.array_equal(ids, ids2) and np.array_equal(offsets, offsets2)

    # An index saved from Python answers the CLI as the CLI's own.
    saved = tmp_path / "py.bsi"
    from_dict.save(saved)
    assert cli_answers(cli, saved, QUERY_KEYS) == want


def test_keys_are_bytes_or_str_alike_and_no_false_negatives():
    index = bloomslice.Index.build({b"a": [b"x", "\u00e9t\u00e9"], "b": ["y"]}, n_exp=1000, fp=0.001)
    assert index.query("\u00e9t\u00e9") == ["a"] == index.query("\u00e9t\u00e9".encode())
    assert "a" in index and b"b" in index and "c" not in index
    for name, keys in SETS.items():
        index.add(name, keys)
    for name, keys in SETS.items():
        assert all(name in index.query(k) for k in keys)
    assert index.names()[:2] == ["a", "b"]
    assert index.id("set03") == 5 and index.name(5) == "set03"


def test_add_remove_save_and_reopen(tmp_path):
    index = bloomslice.Index.build(SETS, **PARAMS)
    new_id = index.add("extra", [b"only-here"])
    assert "extra" in index.query("only-here") and new_id == len(SETS)
    index.remove("set00")
    assert "set00" not in index.query("s0-k1")
    path = tmp_path / "x.bsi"
    index.save(path)
    mapped = bloomslice.Index.open(path, verify=True)
    assert mapped.query_batch(QUERY_KEYS) == index.query_batch(QUERY_KEYS)
    # Saving over a mapped file replaces it by rename: the old map still answers.
    mapped.remove("extra")
    mapped.save(path)
    assert "extra" not in bloomslice.Index.open(path).query("only-here")
    assert mapped.query_batch(QUERY_KEYS[:50]) == index.query_batch(QUERY_KEYS[:50])
    info = bloomslice.Index.open(path, verify=True).inspect()
    assert (info["sets"], info["m"], info["k"], info["seed"]) == (len(SETS) - 1, 448, 3, 0)
    assert info["file"] == str(path) and info["checksums_verified"] is True and info["mapped"] is True
    assert info["format_version"].startswith("1.")
    details = info["set_details"]
    assert sorted(d["name"] for d in details) == sorted(n for n in SETS if n != "set00")
    assert details[0]["estimated_fp"] >= details[-1]["estimated_fp"]
    assert 0 < info["fill"] < 1 and info["memory_bytes"] > 0
    assert index.inspect()["file"] is None


def test_hostile_files_raise(tmp_path):
    good = tmp_path / "good.bsi"
    bloomslice.Index.build(SETS, **PARAMS).save(good)
    data = good.read_bytes()
    bad = tmp_path / "bad.bsi"
    cases = [b"", b"BSLC", data[:7], data[:100], data[: len(data) // 2], data[:-1], b"x" * 4096]
    flipped = bytearray(data)
    flipped[-9] ^= 0x10
    header = bytearray(data)
    header[12] ^= 0xFF
    for content in cases + [bytes(header)]:
        bad.write_bytes(content)
        for kwargs in ({}, {"verify": True}, {"mmap": False}):
            with pytest.raises(bloomslice.IndexError):
                bloomslice.Index.open(bad, **kwargs)
    bad.write_bytes(bytes(flipped))
    for kwargs in ({"verify": True}, {"mmap": False}):
        with pytest.raises(bloomslice.IndexError, match="checksum"):
            bloomslice.Index.open(bad, **kwargs)
    assert issubclass(bloomslice.IndexError, OSError)
    with pytest.raises(FileNotFoundError):
        bloomslice.Index.open(tmp_path / "missing.bsi")
    with pytest.raises(OSError):
        bloomslice.Index.open(tmp_path)
    with pytest.raises(FileNotFoundError):
        bloomslice.Index.build(tmp_path / "no-such-dir")
    with pytest.raises(OSError):
        bloomslice.Index.build(SETS, **PARAMS).save(tmp_path / "no-such-dir" / "x.bsi")


def test_bad_arguments_raise():
    index = bloomslice.Index.build(SETS, **PARAMS)
    with pytest.raises(TypeError):
        index.query(42)
    with pytest.raises(TypeError):
        index.query_batch([b"ok", 3])
    with pytest.raises(TypeError):
        index.query_batch("not a list")
    with pytest.raises(TypeError):
        index.query_batch(np.zeros(3, dtype=np.float64))
    with pytest.raises(TypeError):
        index.query_batch(np.zeros((2, 2), dtype=np.uint64))
    with pytest.raises(ValueError, match="contiguous"):
        index.query_batch(np.zeros(10, dtype=np.uint64)[::2])
    with pytest.raises(ValueError, match="rate"):
        bloomslice.Index.build(SETS, fp=1.5)
    with pytest.raises(ValueError):
        bloomslice.Index.build(SETS, m=0, k=3)
    with pytest.raises(ValueError, match="both m and k"):
        bloomslice.Index.build(SETS, m=100)
    with pytest.raises(ValueError, match="twice"):
        bloomslice.Index.build({"a": ["x"], b"a": ["y"]})
    with pytest.raises(TypeError):
        bloomslice.Index.build({"a": "not-a-list-of-keys"})
    with pytest.raises(TypeError):
        bloomslice.Index.build({"a": [1, 2]})
    with pytest.raises(TypeError):
        bloomslice.Index.build(12)
    with pytest.raises(ValueError, match="empty"):
        index.add("", ["x"])
    with pytest.raises(ValueError, match="already"):
        index.add("set01", ["x"])
    with pytest.raises(ValueError, match="no set named"):
        index.remove("nope")
    with pytest.raises(ValueError):
        index.name(10**6)
    assert len(index) == len(SETS)
    assert index.query_batch([]) == []
    ids, offsets = index.query_batch(np.array([], dtype=np.uint64))
    assert len(ids) == 0 and list(offsets) == [0]


def test_threads_query_one_index_concurrently():
    index = bloomslice.Index.build(SETS, **PARAMS)
    hashes = np.array([index.hash(k) for k in QUERY_KEYS] * 20, dtype=np.uint64)
    want_arrays = index.query_batch(hashes)
    want_lists = index.query_batch(QUERY_KEYS)
    errors = []

    def worker(n: int) -> None:
        try:
            for _ in range(n):
                ids, offsets = index.query_batch(hashes)
                assert np.array_equal(ids, want_arrays[0]) and np.array_equal(offsets, want_arrays[1])
                assert index.query_batch(QUERY_KEYS) == want_lists
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def writer() -> None:
        try:
            for i in range(30):
                index.add(f"tmp{i}", [f"tmp-key-{i}"])
                index.remove(f"tmp{i}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(15,)) for _ in range(4)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(index) == len(SETS)


@pytest.mark.parametrize("kind", ["array", "list"])
def test_gil_is_released_while_a_batch_runs(kind):
    # A worker runs one long batch; meanwhile this thread keeps running
    # Python code. Were the GIL held during the batch, this thread would run
    # only for at most one switch interval (5 ms) of it; released, it runs
    # through the whole batch.
    index = bloomslice.Index.build({f"s{i}": [f"k{i}-{j}" for j in range(100)] for i in range(64)}, m=1 << 20, k=7)
    n = 2_000_000 if kind == "array" else 300_000
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    if kind == "list":
        keys = [b"key-%d" % i for i in range(n)]
    state = {"inside": False, "done": False, "call": 0.0}

    def worker() -> None:
        start = time.perf_counter()
        state["inside"] = True
        index.query_batch(keys, arrays=True)
        state["inside"] = False
        state["call"] = time.perf_counter() - start
        state["done"] = True

    t = threading.Thread(target=worker)
    first = last = None
    t.start()
    while not state["done"]:
        if state["inside"]:
            now = time.perf_counter()
            first = now if first is None else first
            last = now
    t.join()
    assert state["call"] >= 0.02, "the batch is too short to tell"
    assert first is not None and last - first >= 0.5 * state["call"], (first, last, state["call"])


MEMORY_SCRIPT = r"""
import resource, sys
import numpy as np
import bloomslice

def peak_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

n = 1_000_000
index = bloomslice.Index.build({f"s{i}": [f"k{i}-{j}" for j in range(100)] for i in range(4)}, m=1 << 20, k=7)
if sys.argv[1] == "array":
    keys = (np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(0xD1B54A32D192ED03)
    index.query_batch(keys[:5000])  # warm up
else:
    keys = [b"key-%d" % i for i in range(n)]
    index.query_batch(keys[:5000], arrays=True)
before = peak_bytes()
ids, offsets = index.query_batch(keys, arrays=True)
growth = peak_bytes() - before
assert len(offsets) == n + 1 and len(ids) < n // 100, len(ids)
print(growth, ids.nbytes + offsets.nbytes)
"""


@pytest.mark.parametrize("kind", ["array", "list"])
def test_million_key_batch_does_not_copy_the_keys(kind):
    # In a fresh process, so the peak RSS is this call's own. The keys are
    # 8 MB as a hash array and 16 MB as KeyHash pairs (more as a list of
    # bytes): one whole copy of them would add at least 8 MB to the peak
    # beyond the answer's own arrays (8 MB of offsets, few ids); hashing a
    # chunk at a time adds well under 4 MB.
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, kind], check=True, capture_output=True, text=True)
    growth, answer_bytes = map(int, out.stdout.split())
    assert answer_bytes >= 8 * 1_000_001
    assert growth <= answer_bytes + 4 * 1024 * 1024, (growth, answer_bytes)


def test_batches_of_many_chunks_whose_answers_change_size_equal_key_by_key_answers() -> None:
    # Batches are answered 4 096 keys at a time and the answer arrays are
    # sized from the ids per key seen so far: keys with no sets, then keys
    # in every set, then none again, must still come back whole and in order.
    hot = [f"hot-{i}" for i in range(6000)]
    index = bloomslice.Index.build({f"s{j}": hot for j in range(40)}, m=1 << 20, k=4)
    keys = [f"cold-{i}" for i in range(5000)] + hot + [f"cold2-{i}" for i in range(3000)]
    want = [sorted(index.query_ids(key)) for key in keys]
    assert sum(len(w) for w in want[5000:11000]) == 40 * 6000
    for batch in (keys, bloomslice.hash_keys(keys)):
        ids, offsets = index.query_batch(batch, arrays=True)
        assert len(offsets) == len(keys) + 1 and offsets[-1] == len(ids)
        got = [sorted(ids[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(keys))]
        assert got == want


def test_query_batch_compact_answers_as_query_batch_with_uint32_ids() -> None:
    hot = [f"hot-{i}" for i in range(6000)]
    index = bloomslice.Index.build({f"s{j}": hot[j * 100 :] for j in range(40)}, m=1 << 16, k=4)
    hashes = bloomslice.hash_keys(hot + [f"cold-{i}" for i in range(5000)])
    ids, offsets = index.query_batch(hashes)
    small_ids, small_offsets = index.query_batch_compact(hashes)
    assert small_ids.dtype == np.uint32 and small_offsets.dtype == np.uint64
    assert small_ids.tolist() == ids.tolist() and small_offsets.tolist() == offsets.tolist()
    empty_ids, empty_offsets = index.query_batch_compact(np.zeros(0, dtype=np.uint64))
    assert len(empty_ids) == 0 and empty_offsets.tolist() == [0]
    with pytest.raises(TypeError):
        index.query_batch_compact(["not", "hashes"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.query_batch_compact(np.zeros(3, dtype=np.int64))  # type: ignore[arg-type]


HOT_FIRST_SCRIPT = r"""
import numpy as np
import bloomslice

rng = np.random.default_rng(5)
hot = rng.integers(0, 2**63, 4096, dtype=np.uint64)
index = bloomslice.Index.build({f"s{i}": hot for i in range(1000)}, m=1 << 18, k=8)
cold = rng.integers(0, 2**63, 4_000_000, dtype=np.uint64)
ids, offsets = index.query_batch(np.concatenate([hot, cold]))
assert np.all(np.diff(offsets[:4097].astype(np.int64)) >= 1000)
print(len(ids) - 1000 * 4096)
"""


def test_hot_keys_first_do_not_reserve_an_answer_for_every_key() -> None:
    # The first 4 096 keys match all 1 000 sets, the next four million almost
    # none: sized from the first chunk's rate, the answer would reserve
    # 4.5e9 ids (36 GB, more than the 24 GB test machines have), an allocation failure
    # that aborts the process.
    out = subprocess.run([sys.executable, "-c", HOT_FIRST_SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert 0 <= int(out.stdout) < 100_000


def test_readme_example_is_the_tested_example():
    readme = pathlib.Path(__file__).resolve().parents[3] / "README.md"
    example = pathlib.Path(__file__).resolve().parents[1] / "examples" / "example.py"
    assert example.read_text() in readme.read_text(), "README's 'From Python' example differs from examples/example.py"
    env = dict(os.environ)
    subprocess.run([sys.executable, str(example)], check=True, cwd=example.parent.parent, env=env, capture_output=True)


def test_hash_arrays_build_and_hash_keys_agree_with_index_hash() -> None:
    index = bloomslice.Index.build({"a": ["x", "y"]}, seed=7)
    hashes = bloomslice.hash_keys(["x", b"y", "z"], seed=7)
    assert hashes.dtype == np.uint64
    assert hashes.tolist() == [index.hash("x"), index.hash(b"y"), index.hash("z")]
    # A set given as an array of hashes answers as one given as keys.
    by_hash = bloomslice.Index.build({"a": hashes[:2]}, seed=7)
    assert by_hash.query("x") == ["a"] and by_hash.query("y") == ["a"]
    by_hash.add("b", bloomslice.hash_keys(["z"], seed=7))
    assert by_hash.query("z") == ["b"]
    with pytest.raises(TypeError, match="uint64"):
        bloomslice.Index.build({"a": np.zeros(2, dtype=np.int64)})
    with pytest.raises(TypeError):
        bloomslice.hash_keys("xy")


def test_merge_answers_concatenates_key_by_key_and_checks_its_input() -> None:
    u = lambda *v: np.array(v, dtype=np.uint64)  # noqa: E731
    ids, offsets = bloomslice.merge_answers([(u(1, 2, 3), u(0, 2, 2, 3)), (u(10, 11), u(0, 0, 1, 2))])
    assert ids.tolist() == [1, 2, 10, 3, 11]
    assert offsets.tolist() == [0, 2, 3, 5]
    # uint32 ids (from query_batch_compact) merge alike and come out uint64,
    # alone or beside uint64 parts.
    n32 = lambda *v: np.array(v, dtype=np.uint32)  # noqa: E731
    ids, offsets = bloomslice.merge_answers([(n32(1, 2, 3), u(0, 2, 2, 3)), (u(10, 11), u(0, 0, 1, 2))])
    assert ids.dtype == np.uint64 and ids.tolist() == [1, 2, 10, 3, 11] and offsets.tolist() == [0, 2, 3, 5]
    ids, offsets = bloomslice.merge_answers([(n32(4_000_000_000, 7), u(0, 1, 2))])
    assert ids.dtype == np.uint64 and ids.tolist() == [4_000_000_000, 7]
    with pytest.raises(TypeError, match="uint64 or uint32"):
        bloomslice.merge_answers([(np.array([1], dtype=np.int32), u(0, 1))])
    for bad in (
        [(u(1), u(0, 1)), (u(1), u(0, 0, 1))],  # different key counts
        [(u(1, 2), u(0, 1))],  # offsets end before the ids
        [(u(1), u(0, 2, 1))],  # decreasing
        [(u(1), u(1, 1))],  # not from 0
        [],
    ):
        with pytest.raises(ValueError):
            bloomslice.merge_answers(bad)


def test_large_merges_split_over_two_threads_equal_a_reference() -> None:
    # From 2^20 ids on, two threads each write half of the answer.
    rng = np.random.default_rng(3)
    n = 40_000
    parts = []
    for p, dtype in enumerate((np.uint64, np.uint32, np.uint64)):
        counts = rng.integers(0, 25, n)
        counts[rng.integers(0, n, 200)] = 0
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint64)
        ids = (rng.integers(0, 2**31, int(offsets[-1])) + p).astype(dtype)
        parts.append((ids, offsets))
    total = sum(len(ids) for ids, _ in parts)
    assert total >= 1 << 20
    ids, offsets = bloomslice.merge_answers(parts)
    keys = np.concatenate([np.repeat(np.arange(n), np.diff(o).astype(np.int64)) for _, o in parts])
    which = np.concatenate([np.full(len(i), p) for p, (i, _) in enumerate(parts)])
    order = np.lexsort((which, keys))  # by key, then part; stable within a part
    want = np.concatenate([i.astype(np.uint64) for i, _ in parts])[order]
    assert ids.dtype == np.uint64 and np.array_equal(ids, want)
    assert np.array_equal(offsets, np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=n))]).astype(np.uint64))


def test_reload_sees_another_writers_save(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "i.bsi"
    bloomslice.Index.build({"a": ["x"]}).save(path)
    assert_reload_sees_save(path, "b", "y")
    with pytest.raises(ValueError, match="not opened from a file"):
        bloomslice.Index.build({"a": ["x"]}).reload()


def test_manifests_from_the_cli(cli: str, set_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    subprocess.run([cli, "build", str(tmp_path / "i.bsi"), "--dir", str(set_dir), *CLI_PARAMS], check=True,
                   capture_output=True)
    subprocess.run([cli, "split", str(tmp_path / "i.bsi"), "--shards", "3", str(tmp_path / "s")], check=True,
                   capture_output=True)
    m = bloomslice.read_manifest(tmp_path / "s")
    assert [f["file"] for f in m["files"]] == ["shard-0000.bsi", "shard-0001.bsi", "shard-0002.bsi"]
    assert sorted(name for f in m["files"] for _, name in f["sets"]) == sorted(SETS)
    assert bloomslice.file_checksum(m["files"][0]["path"]) == (m["files"][0]["bytes"], m["files"][0]["xxh3"])
    new_id = bloomslice.collection_add(tmp_path / "s", 2, "new", ["fresh"])
    assert new_id == len(SETS)
    shard = bloomslice.Index.open(m["files"][2]["path"])
    assert "new" in shard.query("fresh")
    assert bloomslice.collection_remove(tmp_path / "s", "new") == 2
    with pytest.raises(ValueError, match="no set named"):
        bloomslice.collection_remove(tmp_path / "s", "new")
    (tmp_path / "s" / "manifest.json").write_text("[]")
    with pytest.raises(bloomslice.IndexError, match="manifest"):
        bloomslice.read_manifest(tmp_path / "s")


def test_sharded_index_answers_as_the_unsplit_index(cli: str, set_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    subprocess.run([cli, "build", str(tmp_path / "i.bsi"), "--dir", str(set_dir), *CLI_PARAMS], check=True,
                   capture_output=True)
    subprocess.run([cli, "split", str(tmp_path / "i.bsi"), "--shards", "3", str(tmp_path / "s")], check=True,
                   capture_output=True)
    whole = bloomslice.Index.open(tmp_path / "i.bsi")
    opened = [bloomslice.Index.open_shards(tmp_path / "s", mmap=mmap, verify=True) for mmap in (True, False)]
    # A manifest given to `open` (its directory or its file) opens the same way.
    opened += [bloomslice.Index.open(tmp_path / "s"), bloomslice.Index.open(tmp_path / "s" / "manifest.json")]
    for sharded in opened:
        info = sharded.inspect()
        assert len(sharded) == len(whole) and sharded.names() == whole.names()
        assert sharded.ids() == whole.ids() == list(range(len(SETS)))
        assert info["shard_files"] == ["shard-0000.bsi", "shard-0001.bsi", "shard-0002.bsi"]
        assert info["file"] == str(tmp_path / "s" / "manifest.json") and whole.inspect()["shard_files"] is None
        assert info["m"] == whole.inspect()["m"] and sharded.memory_bytes() > 0
        assert info["sets"] == len(SETS) and len(info["set_details"]) == len(SETS)  # type: ignore[arg-type]
        assert "set00" in sharded and "nope" not in sharded
        assert sharded.name(sharded.id("set01")) == "set01"
        assert "files=3" in repr(sharded) and "manifest.json" in repr(sharded)
        keys = [k for keys in SETS.values() for k in keys] + ["absent-1", "absent-2"]
        assert sharded.query_batch(keys) == whole.query_batch(keys)
        for key in keys:
            assert sharded.query(key) == whole.query(key)
            assert sorted(sharded.query_ids(key)) == sorted(whole.query_ids(key))
            assert sharded.hash(key) == whole.hash(key)
        hashes = bloomslice.hash_keys(keys, seed=info["seed"])  # type: ignore[arg-type]
        ids, offsets = sharded.query_batch(hashes)
        want_ids, want_offsets = whole.query_batch(hashes)
        assert offsets.tolist() == want_offsets.tolist()
        for i in range(len(keys)):
            got = sorted(ids[offsets[i]:offsets[i + 1]].tolist())
            assert got == sorted(want_ids[want_offsets[i]:want_offsets[i + 1]].tolist())
        compact_ids, compact_offsets = sharded.query_batch_compact(hashes)
        assert compact_ids.dtype == np.uint32 and compact_ids.tolist() == ids.tolist()
        assert compact_offsets.tolist() == offsets.tolist()
        for threshold in (0, 1, 0.5, 1.0):
            assert sharded.score(keys, threshold) == whole.score(keys, threshold)
            got_ids, got_counts = sharded.score(hashes, threshold)
            want_score = whole.score(hashes, threshold)
            assert got_ids.tolist() == want_score[0].tolist() and got_counts.tolist() == want_score[1].tolist()
        # Read-only: every change is refused, and the index is unchanged.
        changes = [
            lambda: sharded.add("new", ["x"]),
            lambda: sharded.add_keys("set00", ["x"]),
            lambda: sharded.update("set00", ["x"]),
            lambda: sharded.remove("set00"),
            lambda: sharded.save(tmp_path / "whole.bsi"),
            lambda: sharded.save_shards(tmp_path / "again", 2),
        ]
        for change in changes:
            with pytest.raises(bloomslice.UnsupportedOperation, match="read-only"):
                change()
        assert issubclass(bloomslice.UnsupportedOperation, ValueError)
        assert len(sharded) == len(SETS) and not (tmp_path / "whole.bsi").exists()
        assert not (tmp_path / "again").exists()
    # Reload opens the manifest again and sees a writer's change.
    sharded = opened[0]
    bloomslice.collection_add(tmp_path / "s", 1, "late", ["late-key"])
    assert "late" not in sharded
    sharded.reload()
    assert "late" in sharded and "late" in sharded.query("late-key")
    # No map of the files may outlive the in-place write below.
    del sharded, opened, changes
    (tmp_path / "s" / "shard-0001.bsi").write_bytes((tmp_path / "s" / "shard-0000.bsi").read_bytes())
    with pytest.raises(bloomslice.IndexError, match="manifest"):
        bloomslice.Index.open_shards(tmp_path / "s", verify=True)


def test_save_shards_is_the_split_of_the_cli(cli: str, tmp_path: pathlib.Path) -> None:
    """Python's save_shards and the CLI's split are the library's one split:
    the same files, names and sets, for sized and fixed-size indexes."""
    sizes = [3, 10, 40, 150, 600, 2400]
    sets = {f"c{i:02d}": [f"ck-{i}-{j}" for j in range(sizes[i % len(sizes)])] for i in range(18)}
    for kind, params in (("sized", {"fp": 0.01}), ("fixed", {"n_exp": 500, "fp": 0.01})):
        index = bloomslice.Index.build(sets, **params)  # type: ignore[arg-type]
        index.save(tmp_path / f"{kind}.bsi")
        for shards in (1, 3, 5):
            py_dir, cli_dir = tmp_path / f"{kind}-py-{shards}", tmp_path / f"{kind}-cli-{shards}"
            manifest = index.save_shards(py_dir, shards)
            assert manifest == str(py_dir / "manifest.json")
            subprocess.run([cli, "split", str(tmp_path / f"{kind}.bsi"), "--shards", str(shards), str(cli_dir)],
                           check=True, capture_output=True)
            py_m, cli_m = bloomslice.read_manifest(py_dir), bloomslice.read_manifest(cli_dir)
            assert [f["file"] for f in py_m["files"]] == [f"shard-{i:04d}.bsi" for i in range(shards)]
            assert [(f["file"], f["sets"]) for f in py_m["files"]] == [(f["file"], f["sets"]) for f in cli_m["files"]]
            assert py_m["params"] == cli_m["params"]
            assert all(f["sets"] for f in py_m["files"]), "no shard is empty"
            ids = [i for f in py_m["files"] for i, _ in f["sets"]]
            assert ids == sorted(ids) == index.ids(), "runs of ids, every set once"
            sharded = bloomslice.Index.open_shards(py_dir, verify=True)
            keys = [k for ks in sets.values() for k in ks[::7]] + [f"absent-{i}" for i in range(200)]
            assert sharded.query_batch(keys) == index.query_batch(keys), (kind, shards)
            assert sharded.score(keys, 1) == index.score(keys, 1)
        with pytest.raises(FileExistsError, match="already exists"):
            index.save_shards(tmp_path / f"{kind}-py-3", 3)
        for bad in (0, len(sets) + 1):
            with pytest.raises(ValueError, match="cannot be split"):
                index.save_shards(tmp_path / f"{kind}-bad", bad)


def naive_scores(index: bloomslice.Index, keys: list[str]) -> dict[str, int]:
    """Per set name, how many of `keys` (with repeats) `query` answers it for."""
    counts: dict[str, int] = {}
    for key in keys:
        for name in index.query(key):
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_score_counts_equal_a_naive_count_of_query_answers() -> None:
    index = bloomslice.Index.build(SETS, **PARAMS)
    # Some keys of a few sets, absent keys (false positives are common at
    # this fill) and repeats, which count each time.
    keys = [f"s{i}-k{j}" for i in (0, 3, 7) for j in range(0, 120, 3 + i)] + [f"absent-{i}" for i in range(50)]
    keys += keys[:9]
    full = naive_scores(index, keys)
    assert len(full) > 3, "the workload should score many sets"
    hashes = np.array([index.hash(k) for k in keys], dtype=np.uint64)
    names = index.names()
    for threshold in (0, 1, 2, 5, 40, 10**6, 2**40, 0.0, 0.05, 0.1, 1 / 3, 0.5, 1.0):
        # A least count of 0 reports the sets with a count of at least 1.
        least = max(bloomslice.score_min_count(threshold, len(keys)), 1)
        if isinstance(threshold, float):
            assert least == max(math.ceil(threshold * len(keys) - 1e-9), 1)
        else:
            assert least == max(min(threshold, 2**32 - 1), 1)
        want = {name: c for name, c in full.items() if c >= least}
        assert index.score(keys, threshold) == want, threshold
        assert list(index.score(keys, threshold)) == sorted(want)
        ids, counts = index.score(hashes, threshold)
        assert ids.dtype == np.uint64 and counts.dtype == np.uint32
        assert ids.tolist() == sorted(ids.tolist())
        assert {names[i]: c for i, c in zip(ids.tolist(), counts.tolist())} == want
        ids2, counts2 = index.score(keys, threshold, arrays=True)
        assert ids2.tolist() == ids.tolist() and counts2.tolist() == counts.tolist()
    assert index.score(keys) == full
    assert index.score([], 0) == {} and index.score([], 0.5) == {}
    ids, counts = index.score(np.array([], dtype=np.uint64), 0)
    assert len(ids) == 0 and len(counts) == 0
    # 0.8 of 100 keys is 80, not 81, though 0.8 is not exact in binary.
    assert bloomslice.score_min_count(0.8, 100) == 80
    assert bloomslice.score_min_count(0.5, 3) == 2
    assert bloomslice.score_min_count(7, 3) == 7


def test_score_rejects_bad_thresholds_and_keys() -> None:
    index = bloomslice.Index.build(SETS, **PARAMS)
    for bad in (1.5, -0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="fraction"):
            index.score(["s0-k0"], bad)
        with pytest.raises(ValueError):
            bloomslice.score_min_count(bad, 10)
    with pytest.raises(ValueError, match=">= 0"):
        index.score(["s0-k0"], -1)
    for wrong in ("1", True, [1]):
        with pytest.raises(TypeError):
            index.score(["s0-k0"], wrong)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        index.score("one key", 1)
    with pytest.raises(TypeError):
        index.score([b"ok", 3], 1)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        index.score(np.zeros(3, dtype=np.int64), 1)
    with pytest.raises(ValueError, match="contiguous"):
        index.score(np.zeros(10, dtype=np.uint64)[::2], 1)
    # numpy integers and floats are ints and floats.
    assert index.score(["s0-k0"], np.int64(1)) == index.score(["s0-k0"], 1)  # type: ignore[call-overload]
    assert index.score(["s0-k0"], np.float64(1.0)) == index.score(["s0-k0"], 1)

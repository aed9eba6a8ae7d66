"""bloomslice.ray on a real local Ray cluster of two nodes (started here with
`ray start`, one CPU each, small object stores, stopped at the end): shard
files split 4 and 8 ways answer exactly as the single file, a level index
file is served as a shard too, actors killed mid-stream give no wrong or
silently partial answer, writes go to the owning shard, and everything the
tests start is stopped."""

from __future__ import annotations

import io
import json
import logging
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

# The cluster requires a token, fresh for each run, so nothing else on the
# network can use it whatever ~/.ray holds. Ray reads these settings when it
# is imported, so they are set first; `ray start` inherits them.
os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), RAY_USAGE_STATS_ENABLED="0")
ray = pytest.importorskip("ray")

import bloomslice  # noqa: E402
from bloomslice.ray import RayIndex, ShardUnavailableError  # noqa: E402

RAY = str(pathlib.Path(sys.executable).with_name("ray"))
NODE = ["--num-cpus", "1", "--object-store-memory", "100000000", "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A head node and a second node on this machine; stopped afterwards."""
    port = free_port()
    env = dict(os.environ)
    address = f"127.0.0.1:{port}"
    try:
        subprocess.run(
            [RAY, "start", "--head", "--port", str(port), "--include-dashboard=false", *NODE],
            check=True, env=env, capture_output=True, timeout=120,
        )
        subprocess.run([RAY, "start", "--address", address, *NODE], check=True, env=env, capture_output=True, timeout=120)
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
        deadline = time.monotonic() + 60
        while sum(1 for n in ray.nodes() if n["Alive"]) < 2:
            assert time.monotonic() < deadline, "the second node did not join"
            time.sleep(0.2)
        yield address
    finally:
        ray.shutdown()
        subprocess.run([RAY, "stop", "--force"], env=env, capture_output=True, timeout=120)



def test_ray_example_runs_on_a_laptop_sized_local_instance() -> None:
    """examples/ray_example.py as a laptop runs it: its own local Ray
    instance of 2 CPUs, 4 actors of half a CPU. First in this file, so it
    runs before the module's cluster takes this machine's CPUs."""
    example = pathlib.Path(__file__).resolve().parents[1] / "examples" / "ray_example.py"
    out = subprocess.run(
        [sys.executable, str(example)], env=dict(os.environ), capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0] == "['site-3']", out.stdout
    assert "{'site-5': 100}" in lines, out.stdout
    assert lines[-1] == "['site-new']", out.stdout


SETS = 40


@pytest.fixture(scope="module")
def collection(cli: str, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """40 sets of 60 keys in 1024-bit filters (many false positives) as
    i.bsi, split 4 and 8 ways (s4/, s8/)."""
    d = tmp_path_factory.mktemp("ray")
    lines = [f"set-{s:02d}\tkey-{s}-{k}\n" for s in range(SETS) for k in range(60)]
    (d / "sets.tsv").write_text("".join(lines))
    subprocess.run([cli, "build", "i.bsi", "--tsv", "sets.tsv", "--m", "1024", "--k", "3"], cwd=d, check=True)
    for k in (4, 8):
        subprocess.run([cli, "split", "i.bsi", "--shards", str(k), f"s{k}"], cwd=d, check=True, capture_output=True)
    return d


KEYS = [f"key-{s}-{j}" for s in range(SETS) for j in (0, 17)] + [f"absent-{i}" for i in range(80)]


def per_key(ids: np.ndarray, offsets: np.ndarray) -> list[set[int]]:
    return [set(ids[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(offsets) - 1)]


def expected(d: pathlib.Path, keys: list[str]) -> list[set[int]]:
    ids, offsets = bloomslice.Index.open(d / "i.bsi").query_batch(keys, arrays=True)
    return per_key(ids, offsets)


@pytest.mark.parametrize("shards", [4, 8])
def test_shards_answer_as_the_single_file(cluster: str, collection: pathlib.Path, shards: int) -> None:
    single = bloomslice.Index.open(collection / "i.bsi")
    want = expected(collection, KEYS)
    assert any(len(w) > 1 for w in want), "the workload should have false positives"
    with RayIndex.open(collection / f"s{shards}") as index:
        assert len(index.files) == shards and len(index) == SETS
        # The actors are spread over both nodes.
        got = index.query_batch(KEYS)
        assert got.missing == []
        assert per_key(got.ids, got.offsets) == want
        # Several shards answer with uint32 ids; the merged answer is uint64.
        assert got.ids.dtype == np.uint64 and got.offsets.dtype == np.uint64
        hashes = bloomslice.hash_keys(KEYS, seed=0)
        assert per_key(*index.query_batch(hashes)[:2]) == want
        for key in KEYS[::7]:
            assert index.query(key) == single.query(key)
        assert index.names() == single.names()
        for n in (0, 1, 64):
            part = index.query_batch(hashes[:n])
            assert per_key(part.ids, part.offsets) == want[:n]
        cuts = [0, 5, 5, 70, len(KEYS)]
        stream = list(index.query_stream((hashes[a:b] for a, b in zip(cuts, cuts[1:])), in_flight=3))
        assert [per_key(a.ids, a.offsets) for a in stream] == [want[a:b] for a, b in zip(cuts, cuts[1:])]
        # Scores: summed over the shards, threshold applied on the driver.
        for threshold in (0, 2, 3, 0.0, 0.01, 0.5, 1.0, 10**12):
            want_ids, want_counts = single.score(hashes, threshold)
            got_score = index.score(hashes, threshold)
            assert got_score.missing == []
            assert got_score.ids.dtype == np.uint64 and got_score.counts.dtype == np.uint32
            assert got_score.ids.tolist() == want_ids.tolist(), threshold
            assert got_score.counts.tolist() == want_counts.tolist(), threshold
        by_name = index.score(KEYS, 2)
        assert dict(zip((index.name(int(i)) for i in by_name.ids), by_name.counts.tolist())) == single.score(KEYS, 2)
        assert index.score(hashes[:0], 0).ids.tolist() == []
        with pytest.raises(ValueError, match="fraction"):
            index.score(hashes, 1.5)
        with pytest.raises(ValueError):
            index.score(hashes, -1)


def test_collection_shards_answer_as_the_collection(cluster: str, tmp_path: pathlib.Path) -> None:
    """Sets of skewed sizes, each sized from its own keys (a collection),
    written as collection shard files: the actors answer, score and take
    writes as the one collection does."""
    sizes = [3, 10, 40, 150, 600, 2400]
    sets: dict[bytes | str, list[str]] = {
        f"c{i:02d}": [f"ck-{i}-{j}" for j in range(sizes[i % len(sizes)])] for i in range(18)
    }
    single = bloomslice.Index.build(sets, fp=0.01)
    assert len(single.inspect()["parts"]) >= 2  # type: ignore[arg-type]
    manifest = single.save_shards(tmp_path / "cs", 3)
    assert pathlib.Path(manifest).name == "manifest.json"
    keys = [k for ks in sets.values() for k in ks[::9]] + [f"absent-{i}" for i in range(300)]
    hashes = bloomslice.hash_keys(keys, seed=0)
    ids, offsets = single.query_batch(hashes)
    want = per_key(ids, offsets)
    local = bloomslice.Index.open_shards(tmp_path / "cs")
    assert per_key(*local.query_batch(hashes)) == want
    with RayIndex.open(tmp_path / "cs") as index:
        assert len(index.files) == 3 and len(index) == len(sets)
        got = index.query_batch(hashes)
        assert got.missing == [] and per_key(got.ids, got.offsets) == want
        for threshold in (0, 1, 0.5):
            want_ids, want_counts = single.score(hashes, threshold)
            scored = index.score(hashes, threshold)
            assert scored.ids.tolist() == want_ids.tolist() and scored.counts.tolist() == want_counts.tolist()
        index.add("late", ["late-key"], shard=0)
        assert "late" in index.query("late-key")
        index.remove("c05")
        assert "c05" not in index.query("ck-5-0")


def test_a_level_index_file_is_served_as_a_shard(cluster: str, tmp_path: pathlib.Path) -> None:
    """The actors open their file with `Index.open`, so a level index file
    listed in a manifest is served as any other: its replicas answer and
    score as the file opened here, and writes are refused (the manifest's
    writers write collection files) with the index unchanged."""
    sets: dict[bytes | str, list[str]] = {
        f"v{i:03d}": [f"vk-{i}-{j}" for j in range(1500 if i % 25 == 0 else 1 + i % 17)] for i in range(150)
    }
    levels = bloomslice.Index.build(sets, levels=True)
    info = levels.inspect()
    assert isinstance(info["levels"], int) and info["levels"] >= 2
    path = tmp_path / "lv" / "levels.bsl"
    path.parent.mkdir()
    levels.save(path)
    size, xxh3 = bloomslice.file_checksum(path)
    entries = [{"id": i, "name": name} for i, name in enumerate(levels.names())]
    manifest = {
        "format": "bloomslice-manifest",
        "version": 1,
        # A level index has no one filter length; the actors read `k`,
        # `seed` and `scheme` from the file, the driver hashes with `seed`.
        "params": {"m": 4096, "k": info["k"], "seed": 0, "scheme": info["scheme"]},
        "files": [{"file": path.name, "bytes": size, "xxh3": f"{xxh3:016x}", "sets": entries}],
    }
    (path.parent / "manifest.json").write_text(json.dumps(manifest))
    keys = [k for ks in sets.values() for k in ks[::5]] + [f"absent-{i}" for i in range(500)]
    hashes = bloomslice.hash_keys(keys, seed=0)
    want = per_key(*levels.query_batch(hashes))
    with RayIndex.open(path.parent, replicas=2, verify=True) as index:
        assert index.files == [path.name] and len(index) == len(sets)
        got = index.query_batch(hashes)
        assert got.missing == [] and per_key(got.ids, got.offsets) == want
        for threshold in (0, 2, 0.5):
            want_ids, want_counts = levels.score(hashes, threshold)
            scored = index.score(hashes, threshold)
            assert scored.ids.tolist() == want_ids.tolist() and scored.counts.tolist() == want_counts.tolist()
        for change in (lambda: index.add("late", ["late-key"], shard=0), lambda: index.remove("v001")):
            with pytest.raises(io.UnsupportedOperation, match="level index file"):
                change()
        assert index.query("vk-1-0") == levels.query("vk-1-0") and index.query("late-key") == []


def test_a_killed_actor_mid_stream_gives_no_wrong_answer(cluster: str, collection: pathlib.Path) -> None:
    want = expected(collection, KEYS)
    hashes = bloomslice.hash_keys(KEYS, seed=0)
    want_scores = bloomslice.Index.open(collection / "i.bsi").score(hashes, 2)
    for replicas in (1, 2):
        with RayIndex.open(collection / "s4", replicas=replicas, retry_seconds=60) as index:
            victims = [index.actors[1][0], index.actors[3][replicas - 1]]
            # Batches sent ahead (query_stream) meet the same faults.
            for batch, got in enumerate(index.query_stream(hashes for _ in range(12))):
                if batch == 4:
                    os.kill(ray.get(victims[0].ready.remote()), signal.SIGKILL)
                assert got.missing == [] and per_key(got.ids, got.offsets) == want, f"stream batch {batch}"
            for batch in range(24):
                if batch in (5, 13):
                    pid = ray.get(victims[batch // 10].ready.remote())
                    os.kill(pid, signal.SIGKILL)
                if batch % 2:
                    # Odd batches (the kills too) score: the same retries.
                    scored = index.score(hashes, 2)
                    assert scored.missing == []
                    assert scored.ids.tolist() == want_scores[0].tolist(), f"score {batch}, {replicas} replicas"
                    assert scored.counts.tolist() == want_scores[1].tolist(), f"score {batch}, {replicas} replicas"
                    continue
                got = index.query_batch(hashes)
                assert got.missing == []
                assert per_key(got.ids, got.offsets) == want, f"batch {batch}, {replicas} replicas"


def test_a_dead_shard_is_an_error_naming_it_or_an_explicit_partial_answer(
    cluster: str, collection: pathlib.Path
) -> None:
    want = expected(collection, KEYS)
    with RayIndex.open(collection / "s4", max_restarts=0, retry_seconds=2) as index:
        dead = index.files[2]
        dead_ids = {i for i, _ in bloomslice.read_manifest(collection / "s4")["files"][2]["sets"]}
        pid = ray.get(index.actors[2][0].ready.remote())
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ShardUnavailableError, match=dead) as err:
            index.query_batch(KEYS)
        assert err.value.shards == [dead]
        partial = index.query_batch(KEYS, allow_partial=True)
        assert partial.missing == [dead]
        assert per_key(partial.ids, partial.offsets) == [w - dead_ids for w in want]
        assert partial.ids.dtype == np.uint64
        with pytest.raises(ShardUnavailableError, match=dead):
            index.score(KEYS, 1)
        full_ids, full_counts = bloomslice.Index.open(collection / "i.bsi").score(KEYS, 1, arrays=True)
        scored = index.score(KEYS, 1, allow_partial=True)
        assert scored.missing == [dead]
        alive = [(i, c) for i, c in zip(full_ids.tolist(), full_counts.tolist()) if i not in dead_ids]
        assert list(zip(scored.ids.tolist(), scored.counts.tolist())) == alive


@pytest.mark.parametrize("mmap", [True, False])
def test_writes_go_to_the_owning_shard_and_keep_the_manifest_true(
    cluster: str, collection: pathlib.Path, cli: str, tmp_path: pathlib.Path, mmap: bool
) -> None:
    d = tmp_path / "s4"
    shutil.copytree(collection / "s4", d)
    # Mapped or read into the actors' memory, the shards answer alike and
    # reload after writes as they were opened.
    with RayIndex.open(d, replicas=2, mmap=mmap) as index:
        assert per_key(*index.query_batch(KEYS)[:2]) == expected(collection, KEYS)
        new_id = index.add("fresh", ["brand-new-key"], shard=1)
        assert new_id == SETS
        assert "fresh" in index.query("brand-new-key")
        for replica in index.actors[1]:
            ids, offsets = ray.get(replica.query_batch.remote(bloomslice.hash_keys(["brand-new-key"])))
            assert new_id in ids.tolist()
        with pytest.raises(ValueError, match="fresh"):
            index.add("fresh", ["x"])
        with pytest.raises(ValueError, match="shard 9"):
            index.add("other", ["x"], shard=9)
        index.remove("set-03")
        assert "set-03" not in index.query("key-3-0")
        with pytest.raises(KeyError):
            index.remove("set-03")
    # The manifest matches the files: merge verifies every checksum.
    subprocess.run([cli, "merge", str(d), str(tmp_path / "m.bsi")], check=True, capture_output=True)
    merged = bloomslice.Index.open(tmp_path / "m.bsi")
    assert len(merged) == SETS and "fresh" in merged and "set-03" not in merged


def test_bad_arguments_are_clear_errors(cluster: str, collection: pathlib.Path, tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="replicas"):
        RayIndex.open(collection / "s4", replicas=0)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(bloomslice.IndexError, match="manifest"):
        RayIndex.open(tmp_path)
    with pytest.raises(FileNotFoundError):
        RayIndex.open(tmp_path / "missing.json")
    with RayIndex.open(collection / "s4") as index:
        with pytest.raises(TypeError, match="uint64"):
            index.query_batch(np.zeros(3, dtype=np.int32))
        with pytest.raises(TypeError):
            index.query_batch("one key")
    with pytest.raises(RuntimeError, match="closed"):
        index.query_batch(KEYS)
    # A shard file that vanished: the actors cannot start; a clear error.
    broken = tmp_path / "broken"
    shutil.copytree(collection / "s4", broken)
    (broken / "shard-0002.bsi").unlink()
    with pytest.raises(RuntimeError, match="shard-0002.bsi"):
        RayIndex.open(broken, max_restarts=0, open_timeout=60)


def test_close_stops_every_actor(cluster: str, collection: pathlib.Path) -> None:
    index = RayIndex.open(collection / "s8")
    actors: list[Any] = [a for r in index.actors for a in r]
    pids = ray.get([a.ready.remote() for a in actors])
    index.close()
    index.close()
    deadline = time.monotonic() + 30
    for pid in pids:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, f"actor process {pid} is still running"
            time.sleep(0.1)

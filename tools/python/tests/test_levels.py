"""Level indexes through `bloomslice.Index`: a level index file written by
the CLI (`bloomslice build --levels`) or built here (`levels=True`) answers
every read as the CLI does, with no false negatives; its writes go beside
the levels, and only a split into shard files raises `UnsupportedOperation`."""

import io
import json
import pathlib
import subprocess
from collections.abc import Callable

import numpy as np
import pytest

import bloomslice
from conftest import write_sets

# Heavy-tailed sizes, enough sets for levels to pay: every 30th set of
# 2 000 keys, the others of 1 to 20.
LEVEL_SETS = {
    f"lset{i:03d}": [f"l{i}-k{j}" for j in range(2000 if i % 30 == 0 else 1 + (i * 7) % 20)] for i in range(300)
}
KEYS = [k for keys in LEVEL_SETS.values() for k in keys[::3]] + [f"absent-{i}" for i in range(2000)]


@pytest.fixture()
def level_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    """LEVEL_SETS as a directory of text files, one key per line."""
    return write_sets(tmp_path / "level-sets", LEVEL_SETS)


@pytest.fixture()
def level_file(cli: str, level_dir: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
    """A level index file of LEVEL_SETS written by the CLI."""
    path = tmp_path / "cli.bsl"
    subprocess.run([cli, "build", str(path), "--dir", str(level_dir), "--levels"], check=True, capture_output=True)
    return path


def cli_answers(cli: str, index: pathlib.Path, keys: list[str]) -> list[list[str]]:
    """The CLI's answer to every key of `keys` (sorted set names), from stdin."""
    out = subprocess.run(
        [cli, "query", str(index), "--json"], input="\n".join(keys) + "\n", check=True, capture_output=True, text=True
    )
    answers = [sorted(json.loads(line)["sets"]) for line in out.stdout.splitlines()]
    assert len(answers) == len(keys)
    return answers


def test_a_cli_level_file_answers_as_the_cli(cli: str, level_file: pathlib.Path) -> None:
    want = cli_answers(cli, level_file, KEYS)
    assert any(want[i] for i in range(len(KEYS)) if KEYS[i].startswith("absent")), "expected false positives"
    for kwargs in ({}, {"verify": True}, {"mmap": False}):
        index = bloomslice.Index.open(level_file, **kwargs)
        assert len(index) == len(LEVEL_SETS) and index.names() == sorted(LEVEL_SETS)
        assert [index.query(k) for k in KEYS] == want
        assert index.query_batch(KEYS) == want
        hashes = np.array([index.hash(k) for k in KEYS], dtype=np.uint64)
        assert np.array_equal(hashes, bloomslice.hash_keys(KEYS, seed=0))
        ids, offsets = index.query_batch(hashes)
        assert ids.dtype == np.uint64 and len(offsets) == len(KEYS) + 1 and offsets[-1] == len(ids)
        for i, key in enumerate(KEYS[::5]):
            row = ids[offsets[5 * i] : offsets[5 * i + 1]].tolist()
            assert row == index.query_ids(key)
            assert sorted(index.name(x) for x in row) == want[5 * i], key
        ids2, offsets2 = index.query_batch(KEYS, arrays=True)
        assert np.array_equal(ids, ids2) and np.array_equal(offsets, offsets2)
        narrow, offsets3 = index.query_batch_compact(hashes)
        assert narrow.dtype == np.uint32 and np.array_equal(narrow, ids) and np.array_equal(offsets3, offsets)
        info = index.inspect()
        assert info["format_version"] == "3.1" and info["sets"] == len(LEVEL_SETS) and info["fp"] == 0.01
        assert isinstance(info["levels"], int) and info["levels"] >= 2
        assert info["parts"] == [] and info["set_details"] == [] and info["m"] is None and info["mapped"] is False
        assert "levels=" in repr(index) and "cli.bsl" in repr(index)
    # No false negatives, for every key of every set.
    index = bloomslice.Index.open(level_file)
    answers = index.query_batch([k for keys in LEVEL_SETS.values() for k in keys])
    flat = [name for name, keys in LEVEL_SETS.items() for _ in keys]
    assert all(name in got for name, got in zip(flat, answers))


def test_levels_built_here_are_the_clis(
    cli: str, level_dir: pathlib.Path, level_file: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    want = cli_answers(cli, level_file, KEYS)
    depth = bloomslice.Index.open(level_file).inspect()["levels"]
    from_dict = bloomslice.Index.build(LEVEL_SETS, levels=True)
    from_dir = bloomslice.Index.build(level_dir, levels=True, fp=0.01)
    for index in (from_dict, from_dir):
        assert index.query_batch(KEYS) == want
        assert index.inspect()["file"] is None and index.inspect()["levels"] == depth
    # Saved from Python: a level index file the CLI reads as its own.
    saved = tmp_path / "py.bsl"
    from_dict.save(saved)
    assert saved.read_bytes() == level_file.read_bytes()
    assert cli_answers(cli, saved, KEYS) == want
    # The layout's knobs apply where levels do not pay; a fixed size does not mix.
    few = {name: LEVEL_SETS[name] for name in sorted(LEVEL_SETS)[:10]}
    flat = bloomslice.Index.build(few, levels=True, max_parts=1)
    assert flat.inspect()["levels"] == 1
    assert all(name in flat.query(keys[0]) for name, keys in few.items())
    with pytest.raises(ValueError, match="levels"):
        bloomslice.Index.build(few, levels=True, n_exp=100)
    with pytest.raises(ValueError, match="levels"):
        bloomslice.Index.build(few, levels=True, m=1024, k=3)


def naive_scores(index: bloomslice.Index, keys: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for answer in index.query_batch(keys):
        for name in answer:
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_scores_of_a_level_index_count_its_answers(level_file: pathlib.Path) -> None:
    index = bloomslice.Index.open(level_file)
    keys = [f"l{i}-k{j}" for i in (0, 30, 7) for j in range(0, 300, 3)] + [f"absent-{i}" for i in range(200)]
    full = naive_scores(index, keys)
    names = index.names()
    hashes = bloomslice.hash_keys(keys)
    for threshold in (0, 1, 2, 50, 0.1, 0.3, 1.0):
        least = max(bloomslice.score_min_count(threshold, len(keys)), 1)
        want = {name: c for name, c in full.items() if c >= least}
        assert index.score(keys, threshold) == want, threshold
        ids, counts = index.score(hashes, threshold)
        assert ids.tolist() == sorted(ids.tolist())
        assert {names[i]: c for i, c in zip(ids.tolist(), counts.tolist())} == want


def test_a_level_index_takes_writes(cli: str, level_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Sets added, grown, replaced and removed answer so, with the errors of
    any index; saved and opened again (here and by the CLI), the same
    answers; a split into shard files is still refused."""
    new = [f"new-{j}" for j in range(50)]
    grown = [f"grown-{j}" for j in range(30)]
    fresh = [f"fresh-{j}" for j in range(20)]
    probes = KEYS + new + grown + fresh
    for built, index in enumerate((bloomslice.Index.open(level_file), bloomslice.Index.build(LEVEL_SETS, levels=True))):
        before = index.query_batch(KEYS)
        assert index.add("new", new) == len(LEVEL_SETS) and index.id("new") == len(LEVEL_SETS)
        index.add_keys("lset001", grown)
        index.add_keys("new", grown[:5])
        index.update("lset002", fresh)
        index.remove("lset000")
        hashed = index.add("hashed", np.array([7, 8, 9], dtype=np.uint64))
        assert hashed == len(LEVEL_SETS) + 1
        # The errors of any index; the index is unchanged by them.
        with pytest.raises(ValueError, match="already"):
            index.add("new", ["x"])
        refused: list[Callable[[], object]] = [
            lambda: index.add_keys("lset000", ["x"]),
            lambda: index.update("nosuch", ["x"]),
            lambda: index.remove("lset000"),
        ]
        for change in refused:
            with pytest.raises(ValueError, match="no set named"):
                change()
        assert len(index) == len(LEVEL_SETS) + 1 and "lset000" not in index.names()
        assert all("new" in got for got in index.query_batch(new + grown[:5]))
        assert all("lset001" in got for got in index.query_batch(grown))
        assert all("lset002" in got for got in index.query_batch(fresh))
        assert not any("lset000" in got for got in index.query_batch(LEVEL_SETS["lset000"]))
        old = LEVEL_SETS["lset002"]
        assert sum("lset002" in got for got in index.query_batch(old)) < len(old) // 2
        ids, _ = index.query_batch(np.array([8], dtype=np.uint64))
        assert hashed in ids.tolist()
        # Every other answer of the build stays.
        after = index.query_batch(KEYS)
        assert all(set(was) - {"lset000", "lset002"} <= set(now) for was, now in zip(before, after))
        # Saved with its writes and opened again: the same answers and names.
        saved = tmp_path / f"written-{built}.bsl"
        index.save(saved)
        want = index.query_batch(probes)
        for kwargs in ({}, {"verify": True}, {"mmap": False}):
            again = bloomslice.Index.open(saved, **kwargs)
            assert again.query_batch(probes) == want and again.names() == index.names()
            assert again.query_ids("new-3") == index.query_ids("new-3")
            assert again.inspect()["format_version"] == "3.1"
        assert cli_answers(cli, saved, probes) == want
        # Shard files are collection files: a level index is not split.
        with pytest.raises(bloomslice.UnsupportedOperation, match="level index.*shard files"):
            index.save_shards(tmp_path / "shards", 2)
        with pytest.raises(io.UnsupportedOperation, match="levels"):
            index.save_shards(tmp_path / "shards", 2)
        assert not (tmp_path / "shards").exists()
    # Reload opens the file again, as it was opened: the writes are gone.
    index = bloomslice.Index.open(level_file)
    index.add("late", ["late-key"])
    index.reload()
    assert len(index) == len(LEVEL_SETS) and "late" not in index.names()


def test_damaged_level_files_raise(level_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    data = level_file.read_bytes()
    bad = tmp_path / "bad.bsl"
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x10
    for content in (data[:10], data[:64], data[: len(data) // 2], data[:-1], bytes(flipped)):
        bad.write_bytes(content)
        for kwargs in ({}, {"verify": True}, {"mmap": False}):
            with pytest.raises(bloomslice.IndexError):
                bloomslice.Index.open(bad, **kwargs)

"""Shared fixtures: the CLI binary and a small directory of sets."""

import os
import pathlib
import shutil

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def cli() -> str:
    """The `bloomslice` CLI (BLOOMSLICE_CLI, else target/release/bloomslice)."""
    path = os.environ.get("BLOOMSLICE_CLI") or str(REPO / "target" / "release" / "bloomslice")
    if not os.environ.get("BLOOMSLICE_CLI") and not os.path.isfile(path):
        path = str(REPO / "target" / "debug" / "bloomslice")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        found = shutil.which("bloomslice")
        if found is None:
            pytest.fail(f"the CLI is missing at {path}: run `cargo build --release -p bloomslice-cli`")
        path = found
    return path


SETS = {f"set{i:02d}": [f"s{i}-k{j}" for j in range(120)] for i in range(12)}
"""Twelve sets of 120 ASCII keys; with n_exp=100 and fp=0.2 they overflow
their filters, so false positives are common and must match too."""

PARAMS = {"n_exp": 100, "fp": 0.2}
CLI_PARAMS = ["--n-exp", "100", "--fp", "0.2"]


def assert_reload_sees_save(path: pathlib.Path, name: str, key: str) -> None:
    """A reader of the file at `path` sees set `name` holding `key`, added by
    another handle and saved over the file, only after `reload()`."""
    import bloomslice

    reader = bloomslice.Index.open(path)
    writer = bloomslice.Index.open(path, mmap=False)
    writer.add(name, [key])
    writer.save(path)
    assert reader.query(key) == []
    reader.reload()
    assert reader.query(key) == [name]


def write_sets(d: pathlib.Path, sets: dict[str, list[str]]) -> pathlib.Path:
    """`sets` as the directory `d` of text files, one key per line."""
    d.mkdir()
    for name, keys in sets.items():
        (d / name).write_text("\n".join(keys) + "\n")
    return d


@pytest.fixture()
def set_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    """SETS as a directory of text files, one key per line."""
    return write_sets(tmp_path / "sets", SETS)

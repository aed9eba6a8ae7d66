"""Type stubs of the bloomslice package (the native module `bloomslice._native`)."""

import builtins
import os
from io import UnsupportedOperation as UnsupportedOperation
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Optional, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

Key = Union[bytes, str]
"""A key or set name: bytes as is, str as its UTF-8 bytes."""

Keys = Union[Iterable[Key], npt.NDArray[np.uint64]]
"""The keys of a set: bytes/str keys, or a uint64 NumPy array of key hashes."""

class IndexError(builtins.OSError):
    """A file that is not a valid bloomslice index (wrong magic bytes,
    unsupported version, truncated, checksum mismatch, inconsistent tables)."""

class Index:
    """Named sets of keys stored as bit-sliced Bloom filters: answers "which
    sets may contain this key?" with no false negatives and a small rate of
    false positives. One class over every kind of index, with the same
    reads: built without a size (`Index.build(sets, fp=...)`, the default),
    or opened from a collection file, its sets are each sized from their own
    keys and kept in size-classed parts, so a skewed collection costs memory
    for its sets' sizes; built with `n_exp` (or `m` and `k`) every filter
    has one length; built with `levels=True` or opened from a level index
    file, it keeps the sets in levels, and sets written later beside them
    until it is built again; opened with `Index.open_shards`, it is the
    shard files of a manifest, read-only: its changes raise
    `UnsupportedOperation`.
    Queries may run from many threads at once (the GIL is released while
    the index works); changes wait for them."""

    @staticmethod
    def open(path: Union[str, os.PathLike[str]], *, mmap: bool = True, verify: bool = False) -> Index:
        """Opens a collection file, an index file of one filter length (as
        the fixed-size index it was saved from) or a level index file
        (`bloomslice build --levels`; read whole and fully
        verified even when mapped), memory-mapped (the default: the file must not
        be truncated or written in place while the index is alive) or read
        into memory (`mmap=False`, fully verified). `verify=True` checks every
        checksum of a mapped file first. A manifest (a directory holding
        `manifest.json`, or a `.json` file) opens as `open_shards` would.

        Raises FileNotFoundError/OSError if the file cannot be read and
        bloomslice.IndexError if it is not a valid index file."""

    @staticmethod
    def open_shards(manifest: Union[str, os.PathLike[str]], *, mmap: bool = True, verify: bool = False) -> Index:
        """Opens a manifest (the file, or its directory) and every shard
        file it lists, each checked against its entry, as one read-only
        index that answers as the unsplit index would; mapped with
        `mmap=True` (the contract of `open`), else read into memory.
        `verify=True` also compares every file with the manifest's size and
        checksum. Changes (`add`, `add_keys`, `update`, `remove`, `save`,
        `save_shards`) raise `UnsupportedOperation`; `reload` opens the
        manifest again. bloomslice.IndexError for an invalid manifest or a
        file that disagrees with it."""

    @staticmethod
    def build(
        sets: Union[Mapping[str, Keys], Mapping[bytes, Keys], Mapping[Key, Keys], str, os.PathLike[str]],
        *,
        n_exp: Optional[int] = None,
        fp: float = 0.01,
        m: Optional[int] = None,
        k: Optional[int] = None,
        seed: int = 0,
        max_parts: Optional[int] = None,
        query_cost_weight: Optional[float] = None,
        levels: bool = False,
    ) -> Index:
        """Builds an index from a mapping of set name to keys (bytes/str, or
        a uint64 NumPy array of key hashes), or from a directory of text
        files (one set per file, one key per line). Set ids follow name
        order.

        Without `n_exp`, `m` or `k`, each set is sized from its own number
        of keys at false-positive rate `fp`, in size-classed parts (a
        collection) chosen by the layout: `max_parts` (most parts, default
        8), `query_cost_weight` (the price of one more part as a fraction of
        the memory, default 0.05: 0 takes the least memory, large values one
        part). With `n_exp` every filter holds `n_exp` keys at `fp`;
        with `m` and `k` it has exactly `m` bits and `k` hashes.

        With `levels=True` (sizes from the data only) the sets are kept in
        levels where they pay, as `bloomslice build --levels` does: large
        sets split into pieces, small ones merged into columns above their
        own filters, so absent keys mostly stop at the top (fewer false
        sets per key); sets written later go beside the levels until the
        index is built again, and it saves as a level index file.

        Raises ValueError for bad parameters, layout knobs or `levels`
        given with a fixed size, or duplicate names, TypeError for keys that are not
        bytes/str, OSError for an unreadable directory."""

    def query(self, key: Key) -> list[str]:
        """Names of the sets that may contain `key`, sorted."""

    def query_ids(self, key: Key) -> list[int]:
        """Ids of the sets that may contain `key`, in index order (a
        manifest's shard files in manifest order)."""

    @overload
    def query_batch(
        self, keys: npt.NDArray[np.uint64], *, arrays: bool = ...
    ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """Queries many keys. A 1-D uint64 NumPy array of hashes (see `hash`)
        is read in place and gives `(ids, offsets)`: the set ids of key `i`
        are `ids[offsets[i]:offsets[i + 1]]` (a manifest's shard files in
        manifest order). A sequence of bytes/str keys gives one sorted list
        of names per key, or `(ids, offsets)` with `arrays=True`."""
    @overload
    def query_batch(
        self, keys: Sequence[Key], *, arrays: Literal[True]
    ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
    @overload
    def query_batch(self, keys: Sequence[Key], *, arrays: Literal[False] = ...) -> list[list[str]]: ...
    def query_batch_compact(
        self, keys: npt.NDArray[np.uint64]
    ) -> Tuple[npt.NDArray[np.unsignedinteger[Any]], npt.NDArray[np.uint64]]:
        """`query_batch` on a uint64 array of hashes, with the ids as uint32
        when every set id of the index fits in 32 bits (else uint64): half
        the bytes to send across processes. `merge_answers` takes either."""

    @overload
    def score(
        self, keys: npt.NDArray[np.uint64], threshold: Union[int, float] = 0, *, arrays: bool = ...
    ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
        """Scores one query of many keys: per set, how many of `keys` it may
        contain (a repeated key counts each time); reports the sets whose
        count reaches `threshold`. A 1-D uint64 NumPy array of hashes gives
        `(ids, counts)` (uint64 and uint32 arrays, ascending id); a sequence
        of bytes/str keys gives a dict of set name to count (name order), or
        `(ids, counts)` with `arrays=True`.

        `threshold` is an int (a least count) or a float in [0, 1] (a least
        fraction of `len(keys)`, rounded up; 0.8 of 100 keys is 80). Sets
        with a count of 0 are never reported, so `0` (the default) or `0.0`
        gives every set with a count of at least 1. ValueError for a
        negative count or a fraction outside [0, 1], TypeError otherwise."""
    @overload
    def score(
        self, keys: Sequence[Key], threshold: Union[int, float] = ..., *, arrays: Literal[True]
    ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]: ...
    @overload
    def score(
        self, keys: Sequence[Key], threshold: Union[int, float] = ..., *, arrays: Literal[False] = ...
    ) -> dict[str, int]: ...

    def hash(self, key: Key) -> int:
        """The 64-bit hash of `key` under this index's seed, for
        `query_batch` with a NumPy array."""

    def name(self, id: int) -> str:
        """The name of set `id` (ValueError if it has none)."""

    def id(self, name: Key) -> int:
        """The id of the set called `name` (ValueError if none)."""

    def names(self) -> list[str]:
        """Set names in id order."""

    def ids(self) -> list[int]:
        """Set ids, ascending."""

    def memory_bytes(self) -> int:
        """Bytes of memory the index holds (mapped rows included)."""

    def add(self, name: Key, keys: Union[Iterable[Key], npt.NDArray[np.uint64]]) -> int:
        """Adds a new set (keys, or a uint64 NumPy array of key hashes);
        returns its id. In an index built without a size the set goes to the
        part that holds its number of keys (a new part if none does); in a
        level index, beside the levels. ValueError if the name is taken."""

    def add_keys(self, name: Key, keys: Union[Iterable[Key], npt.NDArray[np.uint64]]) -> None:
        """Adds keys to a set. In an index built without a size a set that
        outgrows its filter gains one in a larger part (its false-positive
        rate stays below twice `fp`); in a fixed-size index the keys go into
        its one filter; a set of a level index's levels gains a filter beside
        them (its rate at most the sum of both). ValueError if no set has
        this name."""

    def update(self, name: Key, keys: Union[Iterable[Key], npt.NDArray[np.uint64]]) -> None:
        """Replaces the keys of a set (id and name stay; an index built
        without a size places it again by its new size; a level index stops
        answering from the set's filters in the levels). ValueError if no
        set has this name."""

    def remove(self, name: Key) -> None:
        """Removes a set (in a level index its filters in the levels stop
        answering). ValueError if no set has this name."""

    def save(self, path: Union[str, os.PathLike[str]]) -> None:
        """Saves atomically (temporary file, fsync, rename): an index built
        with `n_exp` or `m` and `k` as an index file (format 1), a level
        index as a level index file (format 3; 3.1 with the sets written
        since its build), any other as a collection file (format 2)."""

    def save_shards(self, dir: Union[str, os.PathLike[str]], shards: int) -> str:
        """Writes the index as `shards` shard files and a manifest in `dir`
        (for `Index.open_shards` and `bloomslice.ray.RayIndex`), as
        `bloomslice split` does: each set in one file, keeping its id, the
        sets in id order cut into runs of about equal filter bytes, as
        collection files `shard-0000.bsi`, `shard-0001.bsi`, ... Returns the
        manifest's path. FileExistsError if `dir` holds the manifest or one
        of these files, ValueError for `shards` outside 1..len(index),
        UnsupportedOperation for shard files, and for a level index (shard
        files are collection files, which have parts, not levels)."""

    def inspect(self) -> dict[str, object]:
        """Parameters (`m` is None when the parts differ; `fp` is the target
        rate of sets sized from their keys, else None), `parts` (per part
        `m`, `sets`, `columns`, `memory_bytes`, `fill`; every shard file's,
        for a manifest), memory, fill, file facts (`file`, `format_version`,
        `file_bytes`, `checksums_verified`; a manifest's path for shard
        files), `shard_files` (a manifest's file names, else None),
        `levels` (the levels a key may read in a level index, else None)
        and per-set details (`filters`, `ones`, `fill`, `estimated_fp` of
        the union of its filters), like `bloomslice inspect --json`. A level
        index has no parts: `parts` and the set details are empty, `m` and
        `fill` None."""

    def reload(self) -> None:
        """Opens this index's file (or manifest) again, as it was opened, to
        see changes another writer saved. ValueError if it was not opened
        from a file."""

    def __len__(self) -> int: ...
    def __contains__(self, name: Key) -> bool: ...

def hash_keys(keys: Iterable[Key], *, seed: int = 0) -> npt.NDArray[np.uint64]:
    """The 64-bit hashes of `keys` under `seed` (as `Index.hash` gives them
    for an index of that seed), for `query_batch` with a NumPy array."""

def score_min_count(threshold: Union[int, float], keys: int) -> int:
    """The least count `threshold` (as `Index.score` takes it) asks of a
    query of `keys` keys, rounded as the library rounds it. Same errors as
    `Index.score` for a bad threshold."""

def read_manifest(path: Union[str, os.PathLike[str]]) -> dict[str, Any]:
    """Reads and checks a manifest of shard files (the file, or its
    directory): `path`, `dir`, `params` (`m`, `k`, `seed`, `scheme`) and
    `files` (`file`, `path`, `bytes`, `xxh3`, `sets` as `(id, name)` pairs).
    Raises OSError if it cannot be read and bloomslice.IndexError if it is
    not a valid manifest."""

def file_checksum(path: Union[str, os.PathLike[str]]) -> Tuple[int, int]:
    """`(size, xxh3-64)` of a file, as a manifest records them."""

def collection_add(
    manifest: Union[str, os.PathLike[str]],
    shard: int,
    name: Key,
    keys: Union[Iterable[Key], npt.NDArray[np.uint64]],
    *,
    wait: float = 10.0,
) -> int:
    """Adds a set to shard file `shard` of a collection and records it in
    its manifest, under the manifest's lock and the file's writer lock;
    returns the new set's id."""

def collection_remove(manifest: Union[str, os.PathLike[str]], name: Key, *, wait: float = 10.0) -> int:
    """Removes a set from the shard file that holds it and from the
    manifest (same locks as `collection_add`); returns that file's index."""

def merge_answers(
    parts: Sequence[Tuple[npt.NDArray[np.unsignedinteger[Any]], npt.NDArray[np.uint64]]],
) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Merges `(ids, offsets)` answers of shards holding disjoint sets, key
    by key (part order within a key); ids may be uint64 or uint32 (from
    `query_batch_compact`) and come out uint64. TypeError for other id
    dtypes, ValueError for parts over different key counts or invalid
    offsets."""

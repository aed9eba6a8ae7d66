"""Serve the shard files of a manifest with Ray actors.

``bloomslice split IDX --shards K DIR`` (or :meth:`bloomslice.Index.save_shards`,
the same split) writes K shard files and a manifest; :meth:`RayIndex.open`
starts one Ray actor per file (times ``replicas``).
Each actor maps its file and answers batches with the GIL released. A
batch is hashed once on the caller, sent to every shard as one NumPy array
(one object in Ray's object store, not one call per key), and the shards'
answers are merged (:func:`bloomslice.merge_answers`, the library's
``sharded::merge_answers``, in the order of :meth:`bloomslice.Index.open_shards`):
a set never straddles files, so the union of their ids is exactly the
answer of the merged index. With several shards, their
answers travel with ``uint32`` ids when every id fits (half the bytes;
``Index.query_batch_compact``), and the merge widens them to ``uint64``::

    from bloomslice.ray import RayIndex
    with RayIndex.open("sites-shards/", replicas=2) as index:
        index.query("apple")                       # sorted set names
        ids, offsets, missing = index.query_batch(["apple", "pear"])
        ids, counts, missing = index.score(read_kmers, 0.8)  # sets with >= 80 % of them

Faults: actors are created with restarts allowed. A call that meets a dead
or restarting actor is sent again, to the next replica of the same shard or
to the restarted actor, until ``retry_seconds`` have passed; then
:class:`ShardUnavailableError` names the shard. A partial answer is never
returned silently: only ``allow_partial=True`` returns what the live shards
answered, with the missing shards' file names in ``missing``.

Writes (:meth:`RayIndex.add`, :meth:`RayIndex.remove`) go to the actor that
owns the set, which changes its file under the manifest's lock and the
file's writer lock (:func:`bloomslice.collection_add`) and reloads it; the
other replicas of that shard reload too.

The actors open the files by the paths the manifest gives (relative to its
directory, made absolute on the caller), so every node must see the
manifest's directory at the same path (one machine, or a shared volume on
Kubernetes with KubeRay).

Multi-key scores (:meth:`RayIndex.score`): every shard counts, for each
of its sets, how many keys of the query it may contain, and the driver sums
the counts and applies the threshold (a fraction is of the whole query,
which every shard sees), with the same faults handling as ``query_batch``.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Optional, Union

import numpy as np
import numpy.typing as npt
import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from . import Index, file_checksum, hash_keys, merge_answers, read_manifest, score_min_count
from . import collection_add as _collection_add
from . import collection_remove as _collection_remove

__all__ = ["Answer", "RayIndex", "ScoreAnswer", "ShardUnavailableError"]

U64 = npt.NDArray[np.uint64]
Keys = Union[U64, Sequence[Union[bytes, str]]]

# Errors after which a call is worth sending again: the actor died, is
# restarting, or is unreachable. `ActorUnavailableError` is a subclass of
# `RayActorError` in Ray 2.x.
_TRANSIENT: tuple[type[BaseException], ...] = (RayActorError, GetTimeoutError)


class ShardUnavailableError(RuntimeError):
    """No live actor of one or more shards answered in time. ``shards``
    holds the file names of the shards that did not answer, ``causes`` the
    last error seen for each."""

    def __init__(self, shards: list[str], causes: list[str]) -> None:
        self.shards = shards
        self.causes = causes
        detail = "; ".join(f"{s}: {c}" for s, c in zip(shards, causes))
        super().__init__(
            f"no answer from shard(s) {', '.join(shards)} (their actors died and did not come back in time, "
            f"or the call failed): {detail}"
        )


class Answer(NamedTuple):
    """The answer to a batch: the set ids of key ``i`` are
    ``ids[offsets[i]:offsets[i + 1]]`` (grouped by shard, in each shard's
    index order); ``missing`` lists the shard files that did not answer
    (always empty unless ``allow_partial=True``)."""

    ids: U64
    offsets: U64
    missing: list[str]


class ScoreAnswer(NamedTuple):
    """The answer to :meth:`RayIndex.score`: the sets ``ids`` (ascending)
    whose counts ``counts[i]`` reached the threshold; ``missing`` lists the
    shard files that did not answer (always empty unless
    ``allow_partial=True``; their sets are then absent)."""

    ids: U64
    counts: npt.NDArray[np.uint32]
    missing: list[str]


class _Shard:
    """The actor of one shard file: the file mapped (or read into memory),
    queried with the GIL released (``Index.query_batch`` on a ``uint64``
    array)."""

    def __init__(self, manifest: str, shard: int, verify: bool, mmap: bool = True) -> None:
        # A restarted actor runs this again and reads the manifest as it is
        # now, so it serves the file as the last writer left it.
        entry = read_manifest(manifest)["files"][shard]
        path = entry["path"]
        if verify:
            size, xxh3 = file_checksum(path)
            if (size, xxh3) != (entry["bytes"], entry["xxh3"]):
                raise ValueError(f"{path} does not match the manifest (changed or replaced since it was written)")
        self._index = Index.open(path, mmap=mmap, verify=verify)

    def ready(self) -> int:
        """The actor's process id (tests kill it)."""
        return os.getpid()

    def query_batch(self, hashes: U64) -> tuple[U64, U64]:
        ids, offsets = self._index.query_batch(hashes)
        return ids, offsets

    def query_batch_compact(self, hashes: U64) -> tuple[npt.NDArray[np.unsignedinteger[Any]], U64]:
        """As :meth:`query_batch`, with ``uint32`` ids when they fit: half
        the bytes through the object store (and the network) for the
        driver's merge, which widens them."""
        return self._index.query_batch_compact(hashes)

    def score(self, hashes: U64) -> tuple[U64, npt.NDArray[np.uint32]]:
        """Every set of this shard with a count above 0."""
        ids, counts = self._index.score(hashes, 0)
        return ids, counts

    def reload(self) -> None:
        self._index.reload()

    def add(self, manifest: str, shard: int, name: str, keys: U64, wait: float) -> int:
        new_id = _collection_add(manifest, shard, name, keys, wait=wait)
        self._index.reload()
        return new_id

    def remove(self, manifest: str, name: str, wait: float) -> int:
        shard = _collection_remove(manifest, name, wait=wait)
        self._index.reload()
        return shard


class RayIndex:
    """Shard files served by Ray actors, queried as one index. Open with
    :meth:`open`; close with :meth:`close` (or use it as a context manager)."""

    params: dict[str, Any]
    """The collection's parameters: ``m``, ``k``, ``seed``, ``scheme``."""
    _manifest_path: str
    _retry_seconds: float
    _call_timeout: float
    _actors: list[list[Any]]
    _next: list[int]
    _seed: int
    _files: list[str]
    _names: dict[int, str]
    _owner: dict[str, int]

    def __init__(self) -> None:
        raise TypeError("use RayIndex.open(manifest)")

    @classmethod
    def open(
        cls,
        manifest: Union[str, os.PathLike[str]],
        replicas: int = 1,
        *,
        num_cpus: float = 0.0,
        max_restarts: int = -1,
        retry_seconds: float = 30.0,
        call_timeout: float = 120.0,
        open_timeout: float = 120.0,
        verify: bool = False,
        mmap: bool = True,
        actor_options: Optional[dict[str, Any]] = None,
    ) -> RayIndex:
        """Starts ``replicas`` actors per shard file of ``manifest`` (a
        manifest file or its directory) on the Ray cluster this process is
        connected to (``ray.init`` first), spread over its nodes, and waits
        until every actor has opened its file.

        ``num_cpus`` is each actor's CPU request (0 lets actors share
        nodes freely); ``max_restarts`` how often Ray restarts a dead actor
        (-1: always); ``retry_seconds`` how long a query keeps trying a
        shard whose actors are dead; ``call_timeout`` bounds one call;
        ``verify`` checks every file against the manifest's checksums and
        its own before serving. ``mmap=True`` (the default) has each actor
        map its file: it opens at once, and replicas on one node share the
        page cache. ``mmap=False`` reads each file into its actor's memory,
        on huge pages: one copy per actor, whose scans skip the TLB misses
        a mapped file's 4 KiB pages cost on random rows (what that saves,
        and what it does not through Ray: ``bench/RESULTS.md``, section
        "Scale-out"). ``actor_options`` go to Ray's
        ``.options()`` as they are (for example ``resources`` or a
        ``scheduling_strategy``).

        Raises ``ValueError`` for bad arguments, ``OSError`` /
        ``bloomslice.IndexError`` for an unreadable or invalid manifest, and
        ``RuntimeError`` if the actors do not start within
        ``open_timeout`` seconds (the cluster lacks the resources asked for,
        or a file cannot be opened: the cause is in the message).
        """
        if replicas < 1:
            raise ValueError(f"replicas must be at least 1, got {replicas}")
        for what, value in (
            ("retry_seconds", retry_seconds),
            ("call_timeout", call_timeout),
            ("open_timeout", open_timeout),
            ("num_cpus", num_cpus),
        ):
            if not value >= 0:
                raise ValueError(f"{what} must be >= 0, got {value}")
        if not ray.is_initialized():
            raise RuntimeError("connect to a Ray cluster first (ray.init(address=...))")
        self = cls.__new__(cls)
        self._manifest_path = os.path.abspath(read_manifest(manifest)["path"])
        self._retry_seconds = retry_seconds
        self._call_timeout = call_timeout
        self._read_manifest()
        options: dict[str, Any] = {
            "num_cpus": num_cpus,
            "max_restarts": max_restarts,
            # Calls are not retried by Ray: this class re-sends them, to
            # the restarted actor or to another replica.
            "max_task_retries": 0,
            "scheduling_strategy": "SPREAD",
        }
        options.update(actor_options or {})
        actor_class: Any = ray.remote(_Shard)
        self._actors = []
        self._next = [0] * len(self._files)
        try:
            for s in range(len(self._files)):
                self._actors.append(
                    [
                        actor_class.options(**options).remote(self._manifest_path, s, verify, mmap)
                        for _ in range(replicas)
                    ]
                )
            ready = [a.ready.remote() for replica in self._actors for a in replica]
            done, pending = ray.wait(ready, num_returns=len(ready), timeout=open_timeout)
            if pending:
                raise RuntimeError(
                    f"{len(pending)} of {len(ready)} shard actors did not start within {open_timeout} s "
                    "(does the cluster have the CPUs and memory they ask for?)"
                )
            ray.get(done)
        except Exception as e:
            self.close()
            if isinstance(e, RuntimeError) and "did not start" in str(e):
                raise
            raise RuntimeError(f"cannot start the shard actors of {self._manifest_path}: {e}") from e
        return self

    def _read_manifest(self) -> None:
        m = read_manifest(self._manifest_path)
        params = m["params"]
        self._seed = int(params["seed"])
        self.params = dict(params)
        self._files = [f["file"] for f in m["files"]]
        self._names = {}
        self._owner = {}
        for s, f in enumerate(m["files"]):
            for set_id, name in f["sets"]:
                label = name if name is not None else f"#{set_id}"
                self._names[set_id] = label
                self._owner[label] = s

    @property
    def files(self) -> list[str]:
        """The shard file names, in shard order."""
        return list(self._files)

    @property
    def actors(self) -> list[list[Any]]:
        """The actor handles: one list of replicas per shard."""
        return [list(r) for r in self._actors]

    def __len__(self) -> int:
        return len(self._names)

    def __enter__(self) -> RayIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops every actor (without restart). Idempotent."""
        for replica in getattr(self, "_actors", []):
            for actor in replica:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone is fine
                    pass
        self._actors = []

    def _hashes(self, keys: Keys) -> U64:
        if isinstance(keys, np.ndarray):
            if keys.dtype != np.uint64 or keys.ndim != 1:
                raise TypeError(f"a NumPy array of keys must be a 1-D array of uint64 hashes, not {keys.ndim}-D {keys.dtype}")
            return np.ascontiguousarray(keys)
        if isinstance(keys, (bytes, str)):
            raise TypeError("keys must be a sequence of keys; for one key use query()")
        return hash_keys(keys, seed=self._seed)

    def _submit(self, method: str, arg: Any) -> dict[int, Any]:
        """Calls ``method(arg)`` on one replica of every shard (the next
        one, round robin) and returns the pending results."""
        if not self._actors:
            raise RuntimeError("this RayIndex is closed")
        replicas = len(self._actors[0])
        refs: dict[int, Any] = {}
        for s in range(len(self._actors)):
            self._next[s] = (self._next[s] + 1) % replicas
            refs[s] = getattr(self._actors[s][self._next[s]], method).remote(arg)
        return refs

    def _fan_out(self, method: str, arg: Any, allow_partial: bool) -> tuple[dict[int, Any], list[str]]:
        """Calls ``method(arg)`` on one replica of every shard; re-sends a
        call that meets a dead actor until ``retry_seconds`` pass."""
        return self._gather(method, arg, self._submit(method, arg), allow_partial)

    def _gather(
        self, method: str, arg: Any, refs: dict[int, Any], allow_partial: bool
    ) -> tuple[dict[int, Any], list[str]]:
        """Waits for the calls of :meth:`_submit`, re-sending those that
        meet a dead actor until ``retry_seconds`` pass."""
        if not self._actors:
            raise RuntimeError("this RayIndex is closed")
        shards = len(self._actors)
        replicas = len(self._actors[0])
        deadline = time.monotonic() + self._retry_seconds
        results: dict[int, Any] = {}
        failed: dict[int, str] = {}
        for s in range(shards):
            attempt = 0
            while True:
                try:
                    results[s] = ray.get(refs[s], timeout=self._call_timeout)
                    break
                except _TRANSIENT as e:
                    cause = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    if time.monotonic() >= deadline:
                        failed[s] = cause
                        break
                    attempt += 1
                    time.sleep(min(0.05 * 2**attempt, 1.0))
                    # The next replica, or (one replica) the restarted actor.
                    self._next[s] = (self._next[s] + 1) % replicas
                    refs[s] = getattr(self._actors[s][self._next[s]], method).remote(arg)
                except RayTaskError as e:
                    # The call itself failed (for example the file is gone):
                    # sending it again would fail again.
                    failed[s] = str(e).strip().splitlines()[-1]
                    break
        missing = [self._files[s] for s in sorted(failed)]
        if failed and not allow_partial:
            raise ShardUnavailableError(missing, [failed[s] for s in sorted(failed)])
        return results, missing

    def query_batch(self, keys: Keys, *, allow_partial: bool = False) -> Answer:
        """Answers many keys: a 1-D ``uint64`` NumPy array of hashes (see
        :func:`bloomslice.hash_keys`) or a sequence of ``bytes``/``str``
        keys. Every shard is called once, with the whole batch as one
        array. Raises :class:`ShardUnavailableError` if a shard cannot
        answer, unless ``allow_partial=True``."""
        hashes = self._hashes(keys)
        ref = ray.put(hashes)
        method = self._batch_method()
        return self._answer(len(hashes), ref, method, self._submit(method, ref), allow_partial)

    def _batch_method(self) -> str:
        # One shard's answer is the answer: it stays uint64. Several are
        # merged here, so they travel as uint32 ids where those fit.
        return "query_batch" if len(self._files) == 1 else "query_batch_compact"

    def query_stream(
        self, batches: Iterable[Keys], *, allow_partial: bool = False, in_flight: int = 2
    ) -> Iterator[Answer]:
        """Answers a stream of batches in order, as :meth:`query_batch`
        would one by one, with up to ``in_flight`` batches sent ahead: the
        shards scan the next batch while this process merges the answers
        of the previous one. Faults are handled per batch as in
        :meth:`query_batch`."""
        if in_flight < 1:
            raise ValueError(f"in_flight must be at least 1, got {in_flight}")
        pending: deque[tuple[int, Any, str, dict[int, Any]]] = deque()
        for keys in batches:
            hashes = self._hashes(keys)
            ref = ray.put(hashes)
            method = self._batch_method()
            pending.append((len(hashes), ref, method, self._submit(method, ref)))
            if len(pending) >= in_flight:
                yield self._answer(*pending.popleft(), allow_partial)
        while pending:
            yield self._answer(*pending.popleft(), allow_partial)

    def _answer(self, n: int, ref: Any, method: str, refs: dict[int, Any], allow_partial: bool) -> Answer:
        results, missing = self._gather(method, ref, refs, allow_partial)
        parts = [results[s] for s in sorted(results)]
        if not parts:
            empty = np.zeros(0, dtype=np.uint64)
            return Answer(empty, np.zeros(n + 1, dtype=np.uint64), missing)
        # A lone part is the answer only if it is already uint64 (a partial
        # answer of several shards comes compact, and merging widens it).
        if len(parts) == 1 and parts[0][0].dtype == np.uint64:
            ids, offsets = parts[0]
        else:
            ids, offsets = merge_answers(parts)
        return Answer(ids, offsets, missing)

    def score(
        self, keys: Keys, threshold: Union[int, float] = 0, *, allow_partial: bool = False
    ) -> ScoreAnswer:
        """Scores one query of many keys (as :meth:`bloomslice.Index.score`
        with ``arrays=True``): the sets whose count of ``keys`` (a 1-D
        ``uint64`` array of hashes or a sequence of ``bytes``/``str``)
        reaches ``threshold``, an ``int`` (a least count) or a ``float`` in
        ``[0, 1]`` (a least fraction of ``len(keys)``). Sets with a count of
        0 are never reported: ``0`` or ``0.0`` gives every set with a count
        of at least 1. Every shard is called once with the whole query as
        one array and returns all its sets with a count above 0; the counts
        are summed per set and the threshold applied here. A bad threshold
        raises ``ValueError``/``TypeError`` before anything is sent; a shard
        that cannot answer raises :class:`ShardUnavailableError`, unless
        ``allow_partial=True``."""
        hashes = self._hashes(keys)
        min_count = max(score_min_count(threshold, len(hashes)), 1)
        ref = ray.put(hashes)
        results, missing = self._gather("score", ref, self._submit("score", ref), allow_partial)
        parts = [results[s] for s in sorted(results)]
        all_ids = np.concatenate([np.zeros(0, dtype=np.uint64), *(p[0] for p in parts)])
        all_counts = np.concatenate([np.zeros(0, dtype=np.uint64), *(p[1].astype(np.uint64) for p in parts)])
        # Shards hold disjoint sets, so each id comes from one shard; summed
        # all the same, so the answer would stay right if a set were split.
        ids, where = np.unique(all_ids, return_inverse=True)
        totals = np.zeros(len(ids), dtype=np.uint64)
        np.add.at(totals, where, all_counts)
        keep = totals >= min_count
        return ScoreAnswer(ids[keep].astype(np.uint64), totals[keep].astype(np.uint32), missing)

    def query_ids(self, key: Union[bytes, str]) -> list[int]:
        """The ids of the sets that may contain ``key``, sorted."""
        answer = self.query_batch([key])
        return sorted(int(i) for i in answer.ids)

    def query(self, key: Union[bytes, str]) -> list[str]:
        """The names of the sets that may contain ``key``, sorted (unnamed
        sets as ``#id``)."""
        return sorted(self._names[i] for i in self.query_ids(key))

    def name(self, set_id: int) -> str:
        """The name of set ``set_id`` (``#id`` if unnamed); ``KeyError`` if
        no shard holds it."""
        return self._names[set_id]

    def names(self) -> list[str]:
        """Every set name, in id order."""
        return [self._names[i] for i in sorted(self._names)]

    def add(self, name: str, keys: Keys, *, shard: Optional[int] = None, wait: float = 10.0) -> int:
        """Adds the set ``name`` holding ``keys`` (a sequence of keys or a
        ``uint64`` array of hashes) to ``shard`` (default: the shard with
        the fewest sets), under the manifest's and the file's writer locks;
        returns its id. ``ValueError`` if ``shard`` does not exist or the
        name is already in use."""
        if not self._actors:
            raise RuntimeError("this RayIndex is closed")
        if shard is None:
            sizes = [0] * len(self._files)
            for owner in self._owner.values():
                sizes[owner] += 1
            shard = min(range(len(sizes)), key=sizes.__getitem__)
        if not 0 <= shard < len(self._files):
            raise ValueError(f"shard {shard} does not exist (there are {len(self._files)})")
        hashes = self._hashes(keys)
        replicas = self._actors[shard]
        new_id: int = self._call_write(shard, replicas[0].add.remote(self._manifest_path, shard, name, hashes, wait))
        self._after_write(shard, skip=0)
        return new_id

    def remove(self, name: str, *, wait: float = 10.0) -> None:
        """Removes the set called ``name`` from the shard that holds it.
        ``KeyError`` if no shard holds it."""
        if not self._actors:
            raise RuntimeError("this RayIndex is closed")
        if name not in self._owner:
            raise KeyError(f"no set named {name!r} in the collection")
        shard = self._owner[name]
        self._call_write(shard, self._actors[shard][0].remove.remote(self._manifest_path, name, wait))
        self._after_write(shard, skip=0)

    def _call_write(self, shard: int, ref: Any) -> Any:
        try:
            return ray.get(ref, timeout=self._call_timeout)
        except RayTaskError as e:
            cause = e.cause if isinstance(getattr(e, "cause", None), Exception) else None
            if cause is not None:
                raise cause from None
            raise
        except _TRANSIENT as e:
            # Whether the write happened is unknown: the manifest says.
            self._read_manifest()
            raise ShardUnavailableError([self._files[shard]], [f"{type(e).__name__} during a write"]) from e

    def _after_write(self, shard: int, skip: int) -> None:
        reloads = [a.reload.remote() for r, a in enumerate(self._actors[shard]) if r != skip]
        for ref in reloads:
            try:
                ray.get(ref, timeout=self._call_timeout)
            except _TRANSIENT:
                # A dead replica reads the file as it is now when it restarts.
                pass
        self._read_manifest()

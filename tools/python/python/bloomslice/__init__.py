"""bloomslice: which of N Bloom filters may contain this key, at memory speed.

An :class:`Index` holds named sets of keys as Bloom filters stored
bit-sliced, so one query tests every set at once. Build one from a dict of
set name to keys (each set sized from its own keys at false-positive rate
``fp``), or from a directory of text files (one set per file, one key per
line); or open an index file made by the ``bloomslice`` CLI (or saved from
Python)::

    import bloomslice
    index = bloomslice.Index.build({"fruit": ["apple", "pear"], "trees": ["oak", "pear"]}, fp=0.01)
    index.query("pear")  # ['fruit', 'trees'] (and, rarely, false positives)
    index.score(["apple", "pear", "oak"], 0.5)  # {'fruit': 2, 'trees': 2}: sets with >= half the keys

Errors are exceptions: ``ValueError`` / ``TypeError`` for bad arguments,
``OSError`` for files that cannot be read or written, and
:class:`bloomslice.IndexError` (a subclass of ``OSError``) for files that
are not valid index files; changing an index opened from shard files,
or splitting a level index into them, raises ``io.UnsupportedOperation``
(also :class:`bloomslice.UnsupportedOperation`).

Collections split into shard files (``bloomslice split`` or
:meth:`Index.save_shards`) are described by a manifest
(:func:`read_manifest`), opened in this process as one read-only
:class:`Index` with :meth:`Index.open_shards`, or served by Ray actors with
:mod:`bloomslice.ray` (which needs ``ray`` installed).
"""

from ._native import (
    Index,
    IndexError,
    UnsupportedOperation,
    __version__,
    collection_add,
    collection_remove,
    file_checksum,
    hash_keys,
    merge_answers,
    read_manifest,
    score_min_count,
)

__all__ = [
    "Index",
    "IndexError",
    "UnsupportedOperation",
    "__version__",
    "collection_add",
    "collection_remove",
    "file_checksum",
    "hash_keys",
    "merge_answers",
    "read_manifest",
    "score_min_count",
]

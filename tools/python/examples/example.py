import os
import tempfile

import numpy as np

import bloomslice

# Build in memory: set name -> keys (bytes or str). Each set is sized from its
# own keys at false-positive rate fp, so sets of very different sizes share
# one index (in size-classed parts) without the small ones paying for the large.
index = bloomslice.Index.build(
    {"fruit": ["apple", "pear", "plum"], "trees": ["oak", "pear", "birch"], "docs": [f"doc-{i}" for i in range(5000)]},
    fp=0.01,
)
print(index)  # <bloomslice.Index sets=3 parts=2 fp=0.01 k=7 seed=0>
print(index.query("pear"))  # ['fruit', 'trees']
print(index.query_batch(["apple", "granite"]))  # [['fruit'], []] (barring a 1% false positive)
print(index.score([f"doc-{i}" for i in range(100)], 0.9))  # {'docs': 100}: the sets holding >= 90% of the keys

# Many keys at once: a NumPy array of hashes is read in place, and the
# answer is CSR arrays: the set ids of key i are ids[offsets[i]:offsets[i+1]].
hashes = np.array([index.hash(k) for k in ["oak", "pear"]], dtype=np.uint64)
ids, offsets = index.query_batch(hashes)
print([index.name(int(i)) for i in ids[offsets[1] : offsets[2]]])  # the sets of "pear"

# Change, save atomically, map the file back and inspect it.
index.add("rocks", ["granite", "basalt"])
index.add_keys("fruit", [f"fruit-{i}" for i in range(1000)])  # outgrows its filter: gains a larger one
index.remove("trees")
path = os.path.join(tempfile.mkdtemp(), "demo.bsi")
index.save(path)
mapped = bloomslice.Index.open(path)  # memory-mapped: do not rewrite the file in place
assert mapped.query("granite") == ["rocks"] and mapped.query("fruit-7") == ["fruit"]
info = mapped.inspect()
print(info["sets"], info["fp"], info["k"])  # 3 0.01 7
try:
    bloomslice.Index.open(__file__)  # not an index file
except bloomslice.IndexError as e:
    print("refused:", e)

# One filter length for every set instead: n_exp keys each at fp.
fixed = bloomslice.Index.build({"fruit": ["apple", "pear"], "trees": ["oak", "pear"]}, n_exp=10_000, fp=0.01)
print(fixed.inspect()["m"])  # 100992 bits per filter

# Shard files (sets in id order, cut into runs of equal bytes) and a manifest,
# opened as one read-only index that answers as the whole (or served by Ray:
# bloomslice.ray).
manifest = index.save_shards(os.path.join(tempfile.mkdtemp(), "shards"), 2)
shards = bloomslice.Index.open_shards(manifest)
assert shards.query_batch(["granite", "doc-7", "fruit-7"]) == [["rocks"], ["docs"], ["fruit"]]
print(shards)  # <bloomslice.Index sets=3 files=2 k=7 seed=0, manifest=".../shards/manifest.json">

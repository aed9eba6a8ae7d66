import os
import tempfile

import numpy as np

import bloomslice

# Build in memory: set name -> keys (bytes or str).
index = bloomslice.Index.build(
    {"fruit": ["apple", "pear", "plum"], "trees": ["oak", "pear", "birch"]},
    n_exp=10_000,  # keys per set
    fp=0.01,  # false-positive rate at that size
)
print(index.query("pear"))  # ['fruit', 'trees']
print(index.query_batch(["apple", "granite"]))  # [['fruit'], []] (barring a 1% false positive)

# Many keys at once: a NumPy array of hashes is read in place, and the
# answer is CSR arrays: the set ids of key i are ids[offsets[i]:offsets[i+1]].
hashes = np.array([index.hash(k) for k in ["oak", "pear"]], dtype=np.uint64)
ids, offsets = index.query_batch(hashes)
print([index.name(int(i)) for i in ids[offsets[1] : offsets[2]]])  # the sets of "pear"

# Change, save atomically, map the file back and inspect it.
index.add("rocks", ["granite", "basalt"])
index.remove("trees")
path = os.path.join(tempfile.mkdtemp(), "demo.bsi")
index.save(path)
mapped = bloomslice.Index.open(path)  # memory-mapped: do not rewrite the file in place
assert mapped.query("granite") == ["rocks"]
info = mapped.inspect()
print(info["sets"], info["m"], info["k"])  # 2 100992 7
try:
    bloomslice.Index.open(__file__)  # not an index file
except bloomslice.IndexError as e:
    print("refused:", e)

# Sets of very different sizes: without n_exp each set is sized from its own
# keys, at false-positive rate fp, in size-classed parts (a collection).
collection = bloomslice.Index.build({"small": ["a", "b"], "large": [f"doc-{i}" for i in range(5000)]}, fp=0.01)
print(collection)  # <bloomslice.Index sets=2 parts=2 fp=0.01 k=7 seed=0>
print(collection.score([f"doc-{i}" for i in range(100)], 0.9))  # {'large': 100}
collection.add_keys("small", [f"more-{i}" for i in range(1000)])  # outgrows its filter: gains a larger one
collection.save(path)  # a collection file
print(bloomslice.Index.open(path).query("more-7"))  # ['small']

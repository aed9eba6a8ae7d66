"""Serve the shard files of a collection with Ray actors, on this machine.

Needs the bloomslice wheel and Ray (``pip install ray==2.60.0``). Starts a
local Ray instance of 2 CPUs in this process and stops it at the end, so it
runs on a laptop.
"""

import os
import shutil
import tempfile

import ray

import bloomslice
from bloomslice.ray import RayIndex

work = tempfile.mkdtemp()
try:
    # Eight sites of 30 to 3 840 documents (site i holds 30 * 2^i), each
    # sized from its own documents at 1% false positives (a collection),
    # written as 4 collection shard files and a manifest.
    index = bloomslice.Index.build({f"site-{i}": [f"doc-{i}-{j}" for j in range(30 * 2**i)] for i in range(8)}, fp=0.01)
    shards = os.path.join(work, "sites-shards")
    index.save_shards(shards, 4)

    # A Ray instance of this process only: 2 CPUs and a 100 MB object store.
    # One actor per shard file, each asking for half a CPU: 4 x 0.5 = 2 CPUs.
    # (Asking for more than the cluster has makes `open` wait `open_timeout`
    # seconds and fail.)
    ray.init(address="local", num_cpus=2, object_store_memory=100 * 2**20, include_dashboard=False)
    with RayIndex.open(shards, num_cpus=0.5, open_timeout=60) as sharded:
        print(sharded.query("doc-3-17"))  # ['site-3'] (barring a 1% false positive)
        ids, offsets, missing = sharded.query_batch(["doc-0-1", "doc-7-999", "absent"])
        print([sorted(sharded.name(int(i)) for i in ids[offsets[k] : offsets[k + 1]]) for k in range(3)])
        hits = sharded.score([f"doc-5-{j}" for j in range(100)], 0.9)  # sets holding >= 90% of them
        print({sharded.name(int(i)): int(c) for i, c in zip(hits.ids, hits.counts)})  # {'site-5': 100}
        sharded.add("site-new", ["fig", "kiwi"])  # to the shard with the fewest sets
        print(sharded.query("fig"))  # ['site-new']
finally:
    ray.shutdown()
    shutil.rmtree(work)

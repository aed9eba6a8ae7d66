"""Serve the shard files of a collection with Ray actors, on this machine.

Needs the bloomslice wheel, Ray (``pip install ray==2.60.0``) and the
``bloomslice`` CLI to split the index (on PATH, or named by the
BLOOMSLICE_CLI environment variable). Starts a local Ray instance of 2 CPUs
in this process and stops it at the end, so it runs on a laptop.
"""

import os
import shutil
import subprocess
import tempfile

import ray

import bloomslice
from bloomslice.ray import RayIndex

cli = os.environ.get("BLOOMSLICE_CLI") or shutil.which("bloomslice") or "bloomslice"
work = tempfile.mkdtemp()
try:
    # Eight sets of 1 000 documents in one index file, split into 4 shard files.
    index = bloomslice.Index.build({f"site-{i}": [f"doc-{i}-{j}" for j in range(1000)] for i in range(8)}, n_exp=1000)
    index_path = os.path.join(work, "sites.bsi")
    index.save(index_path)
    shards = os.path.join(work, "sites-shards")
    subprocess.run([cli, "split", index_path, "--shards", "4", shards], check=True, stdout=subprocess.DEVNULL)

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

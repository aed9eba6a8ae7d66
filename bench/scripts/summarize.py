#!/usr/bin/env python3
"""Summarises bench/results/<label>/*.json into compact tables (markdown).

Usage: bench/scripts/summarize.py bench/results/LABEL [bench/results/LABEL2 ...]
"""
import json
import pathlib
import sys


def rows(path):
    return json.loads(pathlib.Path(path).read_text())


def main():
    for d in map(pathlib.Path, sys.argv[1:]):
        print(f"### {d.name}\n")
        print("| run | engine | batched | cols | prefetch | ns/query | vs fastbloom | roofline | (runs) |")
        print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for f in sorted(d.glob("*.json")):
            for r in rows(f):
                ratio = r["ratio_vs_naive_fastbloom"]
                runs = r.get("run_roofline_fraction")
                print(
                    f"| {f.stem} | {r['engine']} | {'yes' if r['batched'] else 'no'} | {r['max_shard_columns']} "
                    f"| {r['prefetch_distance']} | {r['ns_per_query']:.1f} "
                    f"| {'-' if ratio is None else f'{ratio:.1f}x'} | {r['roofline_fraction']:.3f} "
                    f"| {'-' if runs is None else f'{runs:.3f}'} |"
                )
        print()


if __name__ == "__main__":
    main()

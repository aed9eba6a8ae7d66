# Summarises `firstprobe` outputs: python3 firstprobe-summary.py FILE...
# A file's build is the part of its name before "-run" (for example
# firstprobe-10000-this-run1.txt -> this). Each run is filed by where the two
# virtual CPUs sat, from the line transfer times it printed at its start and
# end: "one die" when both were under 60 ns, "two dies" when both were over,
# "moved" otherwise. Prints, per phase, placement and build, the median over
# runs of the p50 of the 1st and 2nd query after a publish and of the rest.
import re, statistics, sys
from collections import defaultdict

rows = defaultdict(list)
for path in sys.argv[1:]:
    name = path.rsplit('/', 1)[-1]
    build = re.sub(r'^firstprobe-\d+-(six-|nta-)?', '', name.split('-run')[0])
    text = open(path).read()
    # "one transfer" lines: the same ping-pong, from a C probe run before
    # the example printed its own (the `six` series).
    ns = [float(x) for x in re.findall(r'(?:between cores 0 and 1:|one transfer) ([\d.]+) ns', text)]
    place = 'one die' if ns and max(ns) < 60 else ('two dies' if ns and min(ns) >= 60 else 'moved')
    for line in text.splitlines():
        cells = re.findall(r'(\d+): (\d+)/(\d+)/(\d+)', line)
        if len(cells) == 5:
            rows[(line.split()[0], place, build)].append((int(cells[0][1]), int(cells[1][1]), int(cells[4][1])))
print(f"{'phase':<11} {'placement':<9} {'build':<9} {'runs':>4} {'1st':>6} {'2nd':>6} {'rest':>6}  (ns, medians of p50)")
for (phase, place, build), v in sorted(rows.items()):
    med = lambda i: statistics.median(x[i] for x in v)
    print(f"{phase:<11} {place:<9} {build:<9} {len(v):>4} {med(0):>6.0f} {med(1):>6.0f} {med(2):>6.0f}")

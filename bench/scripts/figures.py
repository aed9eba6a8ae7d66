#!/usr/bin/env python3
"""Regenerates the figure tables of README.md and bench/RESULTS.md from the raw
outputs in bench/results/.

Every table in those documents sits between two markers:

    <!-- figures:NAME -->
    ...generated text...
    <!-- /figures:NAME -->

and NAME is a key of TABLES below: a function that reads its raw files and
returns the markdown between the markers (the table, then a line naming its
raw files with the command, engine commit and CPU each records in its
header lines `# command: ...`, `# engine: ...`, `# cpu: ...`).

    python3 bench/scripts/figures.py --check   # exit 1 naming every table that differs
    python3 bench/scripts/figures.py --write   # rewrite the tables in place

Standard library only. One function per kind of table; every parser reads
the text the bench binaries print, lines starting with `#` being comments.
"""
import pathlib
import re
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
DOCS = [ROOT / "README.md", ROOT / "bench" / "RESULTS.md"]
MARKER = re.compile(r"<!-- figures:([\w.-]+) -->\n(.*?)<!-- /figures:\1 -->", re.S)


# ---------------------------------------------------------------- helpers


def read(rel):
    return (RESULTS / rel).read_text()


def lines(rel):
    """The file's lines without its `#` comment lines."""
    return [l for l in read(rel).splitlines() if not l.startswith("#")]


def meta(rel):
    """The `# command:`, `# engine:` and `# cpu:` header lines of a raw file."""
    found = {}
    for l in read(rel).splitlines()[:12]:
        m = re.match(r"#\s*(command|engine|cpu):\s*(.*)", l)
        if m:
            found[m.group(1)] = m.group(2).strip()
    missing = {"command", "engine", "cpu"} - found.keys()
    if missing:
        raise SystemExit(f"bench/results/{rel}: no header line for {', '.join(sorted(missing))}")
    return found


def sources(*rels):
    """The line under a table naming its raw files and what made them (files
    that share command, engine and CPU are listed together)."""
    groups = {}
    for rel in rels:
        m = meta(rel)
        groups.setdefault((m["command"], m["engine"], m["cpu"]), []).append(f"`{rel}`")
    parts = [f"{', '.join(files)}: `{cmd}`, engine `{eng}`, {cpu}" for (cmd, eng, cpu), files in groups.items()]
    return "Raw (`bench/results/`): " + "; ".join(parts) + ".\n"


def num(s):
    """A number as printed (kept to its decimals), thousands grouped by a space."""
    s = str(s)
    whole, dot, frac = s.partition(".")
    sign = "-" if whole.startswith("-") else ""
    whole = whole.lstrip("-")
    if len(whole) > 3:
        groups = []
        while len(whole) > 3:
            groups.insert(0, whole[-3:])
            whole = whole[:-3]
        whole = " ".join([whole] + groups)
    return sign + whole + dot + frac


def rng(values, median=False, suffix=""):
    """`min-max` of printed numbers (one value when they agree), `(median)` if asked."""
    if not values:
        return "-"
    vals = sorted(values, key=float)
    lo, hi = vals[0], vals[-1]
    out = num(lo) if float(lo) == float(hi) else f"{num(lo)}-{num(hi)}"
    if median and len(vals) > 1:
        out += f" ({statistics.median(float(v) for v in vals):.1f})"
    return out + suffix


def ratio(a, b, digits=2):
    return f"{float(a) / float(b):.{digits}f}"


def table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


KERNELS = {"avx512": "AVX-512", "avx2": "AVX2"}


# ---------------------------------------------------------------- parsers


def paper_query_rows(rel):
    """Engine rows of `paper query` outputs: one dict per row with its run's
    workload, N, k, kernels, build (alternating files) and output number."""
    rows, cur, run = [], {}, 0
    for l in lines(rel):
        m = re.match(r"=== round (\d+) n (\d+) kern (\w+) build (\w+)", l)
        if m:
            run += 1
            cur = {"build": m.group(4)}
            continue
        m = re.match(r"workload (\w+): N = (\d+) filters .* k = (\d+),", l)
        if m:
            if "build" not in cur:
                run += 1
                cur = {}
            cur.update(workload=m.group(1), n=int(m.group(2)), k=int(m.group(3)), run=run)
            continue
        m = re.match(r"kernels: dispatched (\w+)", l)
        if m:
            cur["kernels"] = m.group(1)
            continue
        f = l.split()
        if len(f) >= 10 and f[1] in ("yes", "no") and "workload" in cur:
            rows.append(dict(cur, engine=f[0], batched=f[1] == "yes", ns=f[2], vs=f[4], roofline=f[7]))
    return rows


def pick(rows, **want):
    return [r for r in rows if all(r.get(k) == v for k, v in want.items())]


def multi_rows(rel):
    """Rows of `paper query --workload multi` outputs."""
    rows, cur = [], {}
    for l in lines(rel):
        m = re.match(r"multi: N = (\d+),.* kernels (\w+)", l)
        if m:
            cur = {"n": int(m.group(1)), "kernels": m.group(2), "run": cur.get("run", 0) + 1}
            continue
        f = l.split()
        if len(f) == 9 and f[1].isdigit() and cur:
            rows.append(dict(cur, engine=f[0], keys=int(f[1]), cls=f[2], thr=int(f[3]), ns_key=f[5], vs_pk=f[6].rstrip("x")))
    return rows


def probe_rounds(rel, current=("this", "new")):
    """`keyprobe` outputs: {(kernels, measure): [values]} over the rounds of the
    current build (`== build this ...` or `== new KERNELS` sections)."""
    out, keep, kernels = {}, False, None
    for l in lines(rel):
        if l.startswith("=="):
            keep = any(re.search(rf"\b{c}\b", l) for c in current)
            kernels = "avx2" if "avx2" in l else "avx512"
            continue
        m = re.match(r"round \d+: (.*)", l)
        if m and keep:
            for item in m.group(1).replace("; ", ", ").split(", "):
                name, _, value = item.rpartition(" ")
                out.setdefault((kernels, name), []).append(value)
    return out


def latency_runs(rel):
    """`paper latency` text output: the inline rows and the first query after
    a publish at 1 000/s."""
    run = {"modes": {}}
    section = None
    for l in lines(rel):
        m = re.match(r"single-key latency, full N = (\d+), .* (\w+) kernels", l)
        if m:
            run.update(n=int(m.group(1)), kernels=m.group(2))
        f = l.split()
        if len(f) >= 6 and f[0] in ("inline", "pool") and f[1].isdigit():
            run["modes"][(f[0], int(f[1]))] = {"made": f[2], "q": f[5].split("/")}
        m = re.match(r"publish \((\w+) at (\d+)/s\)", l)
        if m:
            section = (m.group(1), int(m.group(2)))
        m = re.match(r"\s+first query after each publish .*: \d+: ([\d./]+)", l)
        if m and section:
            run.setdefault("first", {})[section] = m.group(1).split("/")
    return run


def collection_rows(rel):
    """Engine rows of `paper query --workload skewed` text outputs."""
    rows = {}
    for l in lines(rel):
        f = l.split()
        if len(f) >= 9 and f[1].isdigit() and f[0] in ("one-m", "collection", "collection-pow2", "levels", "naive"):
            times = re.findall(r"(-|[\d.]+ \([\d.]+x\))", l.split(None, 8)[8])
            t = [x.split()[0] for x in times]
            rows[f[0]] = {"parts": f[1], "runs": f[2], "memory": int(f[3]), "x_opt": f[4],
                          "fp_mean": f[6], "fp_max": f[7], "batch": t[0], "single": t[1], "score": t[2]}
        m = re.match(r"\s+(collection|collection-pow2|levels|naive)\s+(\S+) / (\S+) / (\S+)$", l)
        if m:
            rows[m.group(1)]["vs"] = m.groups()[1:]
    return rows


def pct(v):
    return "-" if v == "-" else f"{float(v) * 100:.2f}%"


def mib(b):
    return f"{b / 1e6:.1f} MB" if b >= 1e6 else f"{b / 1e3:.0f} KB"


# ---------------------------------------------------------------- tables


def query_alternating(rel, extra):
    """Batched and single-key `paper query` per N and kernels (current build of
    an alternating file), with `extra`'s larger N appended."""
    rows = paper_query_rows(rel)
    out = []
    for n in sorted({r["n"] for r in rows}):
        for kern in ("avx512", "avx2"):
            new = pick(rows, n=n, kernels=kern, build="new")
            if not new:
                continue
            b = [r["ns"] for r in pick(new, engine="sliced", batched=True)]
            s = [r["ns"] for r in pick(new, engine="sliced", batched=False)]
            sc = [r["ns"] for r in pick(new, engine="sliced-scalar", batched=True)]
            best = min(map(float, sc)) / min(map(float, b))
            out.append([f"`full` {num(n)}, {KERNELS[kern]}", rng(b), rng(s), rng(sc), f"{best:.2f}x"])
    big = paper_query_rows(extra)
    for n in sorted({r["n"] for r in big} - {r["n"] for r in rows}):
        for kern in ("avx512", "avx2"):
            b = [r["ns"] for r in pick(big, n=n, kernels=kern, engine="sliced", batched=True)]
            s = [r["ns"] for r in pick(big, n=n, kernels=kern, engine="sliced", batched=False)]
            if b:
                out.append([f"`full` {num(n)}, {KERNELS[kern]}", rng(b), rng(s), "-", "-"])
    head = ["N, kernels", "batched", "single key", "scalar kernels, batched", "dispatched / scalar (best)"]
    return table(head, out) + "\n" + sources(rel, extra)


def query_vs_fastbloom(rel):
    """Every engine of `paper query` per workload and kernels (k = 7 runs)."""
    rows = [r for r in paper_query_rows(rel) if r["k"] == 7]
    out = []
    seen = []
    for r in rows:
        key = (r["workload"], r["n"], r["kernels"])
        if key not in seen:
            seen.append(key)
    for wl, n, kern in seen:
        rs = pick(rows, workload=wl, n=n, kernels=kern)
        fb = [r["ns"] for r in pick(rs, engine="naive-fastbloom")]
        b = pick(rs, engine="sliced", batched=True)
        s = [r["ns"] for r in pick(rs, engine="sliced", batched=False)]
        sc = [r["ns"] for r in pick(rs, engine="sliced-scalar", batched=True)]
        out.append([f"`{wl}` {num(n)}, {KERNELS[kern]}", rng(fb), rng([r["ns"] for r in b]),
                    rng([r["roofline"] for r in b]), rng([r["vs"].rstrip("x") for r in b], suffix="x"),
                    rng(s), rng(sc)])
    head = ["workload, kernels", "naive fastbloom", "batched", "roofline fraction", "vs fastbloom",
            "single key", "scalar kernels, batched"]
    return table(head, out) + "\n" + sources(rel)


def scoring(*rels):
    """`paper query --workload multi`: ns per query key per N, kernels and query size."""
    rows = [r for rel in rels for r in multi_rows(rel)]
    out = []
    for n in sorted({r["n"] for r in rows}):
        for kern in ("avx512", "avx2"):
            for keys in (100, 1000):
                rs = pick(rows, n=n, kernels=kern, keys=keys)
                if not rs:
                    continue
                mixed = lambda e: [r["ns_key"] for r in pick(rs, engine=e, cls="mixed", thr=1)]
                rand = lambda e, c: [r[c] for r in pick(rs, engine=e, cls="random", thr=1)]
                pool = []
                for run in sorted({r["run"] for r in rs}):
                    one = pick(rs, run=run, engine="pool-score-pruned", cls="mixed", thr=1)
                    two = pick(rs, run=run, engine="pool-score-pruned", cls="mixed", thr=2)
                    if one and two:
                        pool.append(ratio(one[0]["ns_key"], two[0]["ns_key"]))
                score_vs = [r["vs_pk"] for r in pick(rs, engine="score", cls="mixed", thr=1)]
                out.append([f"{num(n)}, {KERNELS[kern]}, {num(keys)}", rng(mixed("per-key-count")),
                            rng(mixed("batched")), rng(mixed("score")), rng(mixed("score-pruned")),
                            rng(rand("score-pruned", "ns_key")), rng(score_vs, suffix="x"),
                            rng(rand("score-pruned", "vs_pk"), suffix="x"), rng(pool, suffix="x")])
    head = ["N, kernels, keys", "per-key-count", "batched", "score", "score-pruned, mixed",
            "score-pruned, random", "score vs per-key-count", "pruned random vs per-key-count", "pool 2 / 1"]
    return table(head, out) + "\n" + sources(*rels)


def score_sweep(rel):
    """`score_sweep`: random half-dense filters, per N and k, AVX-512 / AVX2."""
    got = {}
    for l in lines(rel):
        m = re.match(r"N (\d+) m \d+ k (\d+) d [\d.]+ (\w+) q \d+: .* score ([\d.]+) pruned [\d.]+ ns/key "
                     r"\| pk/score ([\d.]+) pk/pruned ([\d.]+) score/batched ([\d.]+)", l)
        if m:
            got[(int(m.group(1)), int(m.group(2)), m.group(3))] = m.groups()[3:]
    out = []
    for (n, k) in sorted({(n, k) for n, k, _ in got}):
        if k not in (2, 7, 14) or n not in (1000, 10000):
            continue
        a, b = got[(n, k, "avx512")], got[(n, k, "avx2")]
        out.append([num(n), str(k)] + [f"{a[i]} / {b[i]}" for i in range(4)])
    head = ["N", "k", "score, ns per key", "per-key-count / score", "per-key-count / pruned", "score / batched"]
    return table(head, out) + "\n" + sources(rel)


def threads_pool(rel):
    """`paper query --threads 1,2`: Mkeys/s of the pinned pool against rayon."""
    runs, cur = [], None
    for l in lines(rel):
        m = re.match(r"throughput, full N=(\d+)", l)
        if m:
            cur = {"n": int(m.group(1))}
            runs.append(cur)
        f = l.split()
        if cur is not None and len(f) == 8 and f[0].isdigit() and f[1] in ("1", "2"):
            cur[int(f[1])] = {"pool": f[3], "rayon": f[5], "pool_rayon": f[7].rstrip("x")}
    out = []
    for n in sorted({r["n"] for r in runs}):
        rs = [r for r in runs if r["n"] == n]
        out.append([num(n), rng([r[1]["pool"] for r in rs]), rng([r[2]["pool"] for r in rs]),
                    rng([ratio(r[2]["pool"], r[1]["pool"]) for r in rs], suffix="x"),
                    rng([ratio(r[2]["rayon"], r[1]["rayon"]) for r in rs], suffix="x"),
                    rng([r[2]["pool_rayon"] for r in rs])])
    head = ["N", "pool, 1 worker", "pool, 2 workers", "pool 2 vs 1", "rayon 2 vs 1", "pool / rayon, 2 threads"]
    return table(head, out) + "\n" + sources(rel)


KEYPROBE_ROWS = [
    ("chase", "`chase`"),
    ("l1", "`l1`"),
    ("single", "`single`"),
    ("batched", "`batched`, per key"),
    ("single / (chase + l1)", "`single / (chase + l1)`"),
    ("single / batched", "`single / batched`"),
]


def cpu_name(rel):
    """The short name in brackets of a raw file's CPU header (`Zen 5`), else all of it."""
    cpu = meta(rel)["cpu"]
    return cpu[cpu.index("(") + 1:cpu.index(")")] if "(" in cpu else cpu


def keyprobe(*pairs):
    """`keyprobe N`: ns per key (or ratios) per measure, range over rounds (median);
    one column per CPU, AVX-512 / AVX2 in each cell. `pairs` are the (N = 1 000,
    N = 10 000) files of each CPU."""
    got = [[probe_rounds(rel) for rel in pair] for pair in pairs]
    out = []
    for i, n in enumerate(("1 000", "10 000")):
        for key, label in KEYPROBE_ROWS:
            med = "/" not in key
            cells = [f"{rng(g[i].get(('avx512', key), []), median=med)} / {rng(g[i].get(('avx2', key), []), median=med)}"
                     for g in got]
            out.append([f"{n}, {label}"] + cells)
    head = ["N, measure"] + [f"{cpu_name(pair[0])}: AVX-512 / AVX2" for pair in pairs]
    return table(head, out) + "\n" + sources(*[rel for pair in pairs for rel in pair])


def paper_latency(*rels):
    """`paper latency --no-pool`: one inline reader, us, range over runs; a row per
    CPU, N and kernels."""
    runs = [dict(latency_runs(rel), cpu=cpu_name(rel)) for rel in rels]
    out = []
    for r0 in runs:
        key = (r0["cpu"], r0["n"], r0["kernels"])
        if any(row[0] == f"{key[0]}, {num(key[1])}, {KERNELS[key[2]]}" for row in out):
            continue
        rs = [r for r in runs if (r["cpu"], r["n"], r["kernels"]) == key]
        none = [r["modes"][("inline", 0)]["q"] for r in rs]
        busy = [r["modes"][("inline", 1000)] for r in rs]
        first = [r["first"][("inline", 1000)][0] for r in rs if ("inline", 1000) in r.get("first", {})]
        out.append([f"{key[0]}, {num(key[1])}, {KERNELS[key[2]]}",
                    f"{rng([q[0] for q in none])} / {rng([q[3] for q in none])}",
                    f"{rng([b['q'][0] for b in busy])} / {rng([b['q'][2] for b in busy])} / {rng([b['q'][3] for b in busy])}",
                    rng([b["made"] for b in busy]), rng(first)])
    head = ["CPU, N, kernels", "no writer: p50 / p99.9", "writer at 1 000/s: p50 / p99 / p99.9",
            "publishes made a second", "first query after a publish, p50"]
    return table(head, out) + "\n" + sources(*rels)


def pubprobe(rel):
    """`pubprobe 10000`: us per publish by operation, current build only."""
    got, keep = {}, False
    for l in lines(rel):
        if l.startswith("=="):
            keep = l.strip() == "== new"
        m = re.match(r"round \d+: insert ([\d.]+), update ([\d.]+), delete ([\d.]+)", l)
        if m and keep:
            for op, v in zip(("insert", "update", "delete"), m.groups()):
                got.setdefault(op, []).append(v)
    row = [rng(got[op]) for op in ("insert", "update", "delete")]
    return table(["insert", "update", "delete"], [row], ["---:"] * 3) + "\n" + sources(rel)


def mapprobe(*rels):
    """`mapprobe N DIR`: mapped / loaded time of the same index, range over rounds."""
    out = []
    for rel in rels:
        cpu = cpu_name(rel)
        cur = None
        for l in lines(rel):
            m = re.match(r"(\d+) filters, .* file (\S+) .*loaded ([\d.]+) MB, mapped ([\d.]+) MB", l)
            if m:
                fs = "tmpfs" if "/dev/shm" in m.group(2) else "ext4"
                cur = [f"{num(m.group(1))}, {fs}", f"{m.group(4)} of {m.group(3)} MB", [], []]
                out.append((cpu, cur))
            m = re.match(r"round \d+: batched .*\(mapped / loaded ([\d.]+)\); single .*\(([\d.]+)\)", l)
            if m and cur:
                cur[2].append(m.group(1))
                cur[3].append(m.group(2))
    rows = [[cpu, r[0], r[1], rng(r[2]), rng(r[3])] for cpu, r in out]
    head = ["CPU", "N, file system", "rows of the map on huge pages", "batched, mapped / loaded", "single key"]
    return table(head, rows, ["---", "---"] + ["---:"] * 3) + "\n" + sources(*rels)


def collections(*names):
    """`paper query --workload skewed` per shape: best round, AVX-512 / AVX2."""
    out = []
    labels = {"lognormal": "skewed", "lists": "package lists", "equal": "`full` N = 1 000"}
    rels = []
    for name in names:
        a = collection_rows(f"collection/latest/{name}-avx512.txt")
        b = collection_rows(f"collection/latest/{name}-avx2.txt")
        rels += [f"collection/latest/{name}-avx512.txt", f"collection/latest/{name}-avx2.txt"]
        for eng in ("one-m", "collection", "collection-pow2", "levels", "naive"):
            if eng not in a or (name == "equal" and eng in ("collection-pow2", "levels", "naive")):
                continue
            x, y = a[eng], b[eng]
            runs = f"{x['runs']} filters" if eng == "naive" else x["runs"]
            if eng == "levels":
                runs = f"{x['runs']} at most"
            out.append([labels[name], eng, "-" if eng in ("naive", "levels") else x["parts"], runs, mib(x["memory"]),
                        f"{num(x['batch'])} / {num(y['batch'])}", f"{num(x['single'])} / {num(y['single'])}",
                        f"{num(x['score'])} / {num(y['score'])}",
                        pct(x["fp_mean"]) + " / " + pct(x["fp_max"])])
    head = ["workload", "engine", "parts", "row runs", "memory", "batched", "single", "threshold, 100-key",
            "FP per set, mean / max"]
    return table(head, out, ["---", "---"] + ["---:"] * 7) + "\n" + sources(*rels)


def levelprobe(rel):
    """`levelprobe`: the flat collection against the levels, one block a collection."""
    out, name = [], None
    for l in lines(rel):
        m = re.match(r"(.*?)(?:, N = ([\d]+))?: (\d+) keys, per-set optimum", l)
        if m:
            name = "package lists" if m.group(1).startswith("/") else f"log-normal, N = {num(m.group(2))}"
            sets = num(m.group(2)) if m.group(2) else None
            continue
        m = re.match(r"\s*(flat|levels)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", l)
        if m:
            eng, build, memory, xopt, false, absent, present, distinct = m.groups()
            out.append([name, eng, build, mib(float(memory)), xopt, false, num(absent), num(present),
                        num(distinct) if name == "package lists" else "-"])
    head = ["sets", "engine", "build, s", "memory", "x optimum", "false sets per absent key", "absent, ns",
            "present, ns", "each distinct key, ns"]
    return table(head, out, ["---", "---"] + ["---:"] * 7) + "\n" + sources(rel)


def collection_extremes(*names):
    """Extreme shapes: the collection's cost as a ratio to one `m`, AVX-512 / AVX2."""
    out, rels = [], []
    for name in names:
        ra, rb = f"collection/latest/{name}-avx512.txt", f"collection/latest/{name}-avx2.txt"
        rels += [ra, rb]
        a, b = collection_rows(ra), collection_rows(rb)
        shape = read(ra).split("workload: ", 1)[1].split(";")[0]
        c = a["collection"]
        out.append([shape, c["parts"], f"{c['x_opt']}x", mib(c["memory"]), mib(a["one-m"]["memory"])]
                   + [f"{a['collection']['vs'][i]} / {b['collection']['vs'][i]}" for i in range(3)])
    head = ["shape", "parts", "memory x optimum", "memory", "one `m` memory", "batched", "single", "threshold"]
    return table(head, out, ["---"] + ["---:"] * 7) + "\n" + sources(*rels)


def collection_prefetch(rel):
    """`collection_prefetch`: ns a key, batched / single, per prefetch mode."""
    got, order = {}, []
    for l in lines(rel):
        m = re.match(r"\s*(always|never|auto)\s+(\d+) sets\s+(\S+ \w+) rows.*batched\s+([\d.]+) ns, single\s+([\d.]+) ns(.*)", l)
        if m:
            size, unit = m.group(3).split()
            key = (int(m.group(2)), mib(float(size) * {"KB": 1e3, "MB": 1e6}[unit]))
            if key not in order:
                order.append(key)
            got[(key, m.group(1))] = f"{num(round(float(m.group(4))))} / {num(round(float(m.group(5))))}"
    rows = [[num(s), r] + [got.get(((s, r), mode), "-") for mode in ("always", "never", "auto")] for s, r in order]
    return table(["sets", "rows", "always prefetch", "never", "auto (default)"], rows) + "\n" + sources(rel)


def scale_out(rel):
    """`ray_bench.py run`: one row per run."""
    out, run = [], None
    for l in lines(rel):
        m = re.match(r"4 shards, 65536-key batches: (\d+) ns/key vs library (\d+) ns/key: ([\d.]+x)", l)
        if m:
            run = [str(len(out) + 1), num(m.group(2)), f"{num(m.group(1))} ({m.group(3)})"]
            out.append(run)
        m = re.match(r"throughput 1 actor .*: ([\d.]+x)", l)
        if m and run:
            run.append(m.group(1))
        m = re.match(r"same-round ratio library 1 thread / 2 threads: median ([\d.]+x)", l)
        if m and run:
            run.append(m.group(1))
    head = ["run", "library, ns per key", "4 shards (vs library)", "2 actors vs 1", "library 2 threads vs 1 (median)"]
    return table(head, out) + "\n" + sources(rel)


def popularity(*rels):
    """Section 5.1 of the popularity-conscious paper: integer DP over optimal+."""
    got = {}
    for rel in rels:
        n = re.search(r"N(\d+)", rel).group(1)
        for l in lines(rel):
            m = re.match(r"\s*(\d\.\d\d)\s+[\d.]+ \|.*\|\s+([\d.]+)\s+([\d.]+)$", l)
            if m:
                got.setdefault(m.group(1), {})[n] = m.groups()[1:]
    rows = [[a] + [v for n in ("100", "1000") for v in got[a][n]] for a in sorted(got)]
    head = ["alpha", "N = 100 predicted", "N = 100 measured", "N = 1 000 predicted", "N = 1 000 measured"]
    return table(head, rows) + "\n" + sources(*rels)


def stable(rel):
    """Stable and importance-aware filters: uniform repeats 10%, percent."""
    out, keep = [], False
    for l in lines(rel):
        if l.startswith("uniform repeats 10%"):
            keep = True
            continue
        if keep and not l.startswith("  "):
            break
        f = l.split()
        if keep and f and f[0] != "algo":
            out.append([f[0], f[1], f[2], f[5], f[6]])
    return table(["algo", "FP", "FN", "FP, top importance", "FN, top importance"], out) + "\n" + sources(rel)


TABLES = {
    "query-zen4": lambda: query_alternating("query/zen4-alternating.txt", "query/zen4-avx512.txt"),
    "query-zen4-fastbloom": lambda: query_vs_fastbloom("query/zen4-vs-fastbloom.txt"),
    "query-zen3": lambda: query_vs_fastbloom("query/zen3-avx2.txt"),
    "scoring-zen4": lambda: scoring("scoring/zen4-avx512.txt", "scoring/zen4-avx2.txt"),
    "scoring-xeon": lambda: scoring("scoring/xeon-avx512.txt", "scoring/xeon-avx2.txt"),
    "score-sweep-xeon": lambda: score_sweep("scoring/xeon-score_sweep.txt"),
    "threads-zen4": lambda: threads_pool("threads/zen4-pool.txt"),
    "keyprobe": lambda: keyprobe(("latency/keyprobe-1000-zen5.txt", "latency/keyprobe-10000-zen5.txt"),
                                 ("latency/keyprobe-1000.txt", "latency/keyprobe-10000.txt")),
    "paper-latency": lambda: paper_latency(*[f"latency/paper-latency-{n}-zen5-{k}-run{r}.txt"
                                             for n in (10000, 1000) for k in ("avx512", "avx2") for r in (1, 2)],
                                           *[f"latency/paper-latency-10000-first-{k}-run{r}.txt"
                                             for k in ("avx512", "avx2") for r in (1, 2, 3)]),
    "pubprobe-zen4": lambda: pubprobe("latency/pubprobe-10000.txt"),
    "mapprobe": lambda: mapprobe("latency/mapprobe-zen5.txt", "latency/mapprobe.txt"),
    "collections-xeon": lambda: collections("lognormal", "lists", "equal"),
    "collection-extremes-xeon": lambda: collection_extremes("one-huge", "tiny"),
    "collection-prefetch": lambda: collection_prefetch("collection/prefetch.txt"),
    "levels-xeon": lambda: levelprobe("collection/levels-xeon.txt"),
    "scale-out-zen4": lambda: scale_out("scale-out/ray-zen4.txt"),
    "popularity": lambda: popularity("popularity/section-5.1-N100.txt", "popularity/section-5.1-N1000.txt"),
    "stable": lambda: stable("stable/paper-stable-20000.txt"),
}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "--check"
    if mode not in ("--check", "--write") or len(sys.argv) > 2:
        raise SystemExit("usage: figures.py --check | --write")
    stale, used = [], set()
    for doc in DOCS:
        text = doc.read_text()

        def regenerate(m):
            name = m.group(1)
            if name not in TABLES:
                raise SystemExit(f"{doc.name}: unknown table `{name}` (known: {', '.join(TABLES)})")
            used.add(name)
            new = TABLES[name]()
            if new != m.group(2):
                stale.append(f"{doc.relative_to(ROOT)}: {name}")
            return f"<!-- figures:{name} -->\n{new}<!-- /figures:{name} -->"

        new_text = MARKER.sub(regenerate, text)
        if mode == "--write" and new_text != text:
            doc.write_text(new_text)
    unused = sorted(set(TABLES) - used)
    if unused:
        print("tables in no document: " + ", ".join(unused), file=sys.stderr)
    if mode == "--check" and stale:
        print("tables that differ from bench/results (run bench/scripts/figures.py --write):", file=sys.stderr)
        for s in stale:
            print("  " + s, file=sys.stderr)
        return 1
    if mode == "--check" and unused:
        return 1
    if mode == "--write":
        print(f"{len(stale)} table(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())

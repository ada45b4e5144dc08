#!/usr/bin/env python3
"""Summarise EDF benchmark output (go test -bench ... -count=N) as Markdown.

Pick benchmarks: median ns/op per benchmark and edf's ratio to each baseline
at the same weights (w=) and n. BenchmarkBuild: New and NewFrom against the
heap baseline's construction, in time and in retained heap bytes.
Usage: edf-ratios.py [--min] FILE
A pick ratio is the median, over the runs (-count), of edf's time over the
baseline's in the same run: the benchmarks run the implementations of one
size one after the other, so a run's pair saw about the same machine load.
With --min, the ns/op columns show the fastest run of each benchmark instead of the median (on a
loaded machine the fastest run is the one least disturbed).
"""
import re
import statistics
import sys
from collections import defaultdict

DISTS = ['1..100', '1..1e6', '63..64', 'pareto']
LINE = re.compile(r'^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$')

ns, retained, allocs = defaultdict(list), defaultdict(list), {}
stat = statistics.median
args = sys.argv[1:]
if args and args[0] == '--min':
    stat, args = min, args[1:]
for line in open(args[0]):
    m = LINE.match(line.strip())
    if not m:
        continue
    name, rest = m.group(1), m.group(3)
    ns[name].append(float(m.group(2)))
    r = re.search(r'([\d.]+) retained-B', rest)
    if r:
        retained[name].append(float(r.group(1)))
    a = re.search(r'(\d+) allocs/op', rest)
    if a:
        allocs[name] = a.group(1)

rows = defaultdict(dict)  # (bench, w, n) -> impl -> (ns, retained, allocs, runs)
for name, v in ns.items():
    parts = name.split('/')
    if len(parts) != 4:  # not a w=/impl=/n= benchmark (BuildA58, FirstPeriod)
        continue
    bench, w, impl, n = parts
    ret = stat(retained[name]) if retained[name] else None
    rows[(bench, w[2:], int(n[2:]))][impl[5:]] = (stat(v), ret, allocs.get(name, '?'), v)


def order(k):
    return (k[0], DISTS.index(k[1]) if k[1] in DISTS else 9, k[2])


picks = [k for k in rows if k[0] != 'BenchmarkBuild']
if picks:
    base = sorted({i for k in picks for i in rows[k] if i != 'edf'})
    print('| benchmark | w | n | edf ns/op | ' + ' | '.join(f'{b} ns/op' for b in base)
          + ' | ' + ' | '.join(f'edf / {b}' for b in base) + ' |')
    print('|---|---|---:|---:|' + '---:|' * (2 * len(base)))
    for k in sorted(picks, key=order):
        r = rows[k]
        e = r['edf']
        cells = [f'{r[b][0]:.1f}' if b in r else '—' for b in base]
        ratios = [f'**{statistics.median(x / y for x, y in zip(e[3], r[b][3])):.2f}**' if b in r else '—'
                  for b in base]
        print(f'| {k[0][9:]} | {k[1]} | {k[2]} | {e[0]:.1f} ({e[2]} allocs) | '
              + ' | '.join(cells) + ' | ' + ' | '.join(ratios) + ' |')

builds = [k for k in rows if k[0] == 'BenchmarkBuild']
if builds:
    print()
    print('| w | n | New ns | NewFrom ns | heap build ns | New / heap | NewFrom / heap '
          '| edf retained B | heap retained B | retained ratio |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for k in sorted(builds, key=order):
        r = rows[k]
        e, f, h = r['edf'], r['edf-newfrom'], r['heap-baseline']
        print(f'| {k[1]} | {k[2]} | {e[0]:.0f} | {f[0]:.0f} | {h[0]:.0f} | **{e[0] / h[0]:.2f}** '
              f'| **{f[0] / h[0]:.2f}** | {e[1]:.0f} | {h[1]:.0f} | **{e[1] / h[1]:.2f}** |')

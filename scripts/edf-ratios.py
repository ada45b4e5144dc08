#!/usr/bin/env python3
"""Median ns/op per benchmark and edf's ratios to each baseline, as Markdown."""
import re, sys, statistics
from collections import defaultdict
runs = defaultdict(list)
allocs = {}
pat = re.compile(r'^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$')
for line in open(sys.argv[1]):
    m = pat.match(line.strip())
    if not m: continue
    name, ns, rest = m.group(1), float(m.group(2)), m.group(3)
    runs[name].append(ns)
    a = re.search(r'([\d.]+) allocs/op', rest)
    if a: allocs[name] = a.group(1)
med = {k: statistics.median(v) for k, v in runs.items()}
# name: Bench/w=X/impl=Y/n=N
rows = defaultdict(dict)
for k, v in med.items():
    parts = k.split('/')
    bench, w, impl, n = parts[0], parts[1][2:], parts[2][5:], int(parts[3][2:])
    rows[(bench, w, n)][impl] = (v, allocs.get(k, '?'))
impls = sorted({i for r in rows.values() for i in r if i != 'edf'})
print('| benchmark | w | n | edf ns/op | ' + ' | '.join(f'{i} ns/op' for i in impls) + ' | ' + ' | '.join(f'edf/{i}' for i in impls) + ' |')
print('|---|---|---:|---:|' + '---:|' * (2 * len(impls)))
for (bench, w, n) in sorted(rows, key=lambda k: (k[0], [d for d in ['1..100','1..1e6','63..64','pareto']].index(k[1]) if k[1] in ['1..100','1..1e6','63..64','pareto'] else 9, k[2])):
    r = rows[(bench, w, n)]
    e = r.get('edf')
    cells = [f'{r[i][0]:.1f}' if i in r else '—' for i in impls]
    ratios = [f'{e[0]/r[i][0]:.2f}' if (e and i in r) else '—' for i in impls]
    print(f'| {bench} | {w} | {n} | {e[0]:.1f} ({e[1]} allocs) | ' + ' | '.join(cells) + ' | ' + ' | '.join(ratios) + ' |')

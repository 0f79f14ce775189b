#!/usr/bin/env python3
"""check_layers.py — the layering rule of ARCHITECTURE.md, checked on the source tree.

Every `#include "..."` edge of src/, include/ and cuda/ is derived from the files. A file's
layer is its folder (src/<layer>/, include/<layer>/; src/main.c is `main`; a file of cuda/
takes the layer ARCHITECTURE.md's "cuda/ by layer" line gives it). A file may include a
header of its own layer or of a layer below it, never above. The base includes no MPI,
HDF5, YAML, JSON or CUDA header
(cuda/cuda_common.h, CUDA's own helpers, sits in the base layer by the order it may be
included in, not in src/base/). Every quoted include names an existing header.

    python3 tests/check_layers.py [ROOT]     exit 0 when the tree keeps the rule, else 1
                                            with one line per broken edge
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
arch = open(os.path.join(ROOT, 'ARCHITECTURE.md'), encoding='utf-8').read()

m = re.search(r'^Layer order, lowest first:(.*)$', arch, re.M)
if not m:
    sys.exit('check_layers: ARCHITECTURE.md has no "Layer order, lowest first:" line')
order = re.findall(r'`([a-z]+)`', m.group(1))
rank = {name: i for i, name in enumerate(order)}
m = re.search(r'^cuda/ by layer:(.*)$', arch, re.M)
cuda_layer = dict(re.findall(r'`([\w.]+)` ([a-z]+)', m.group(1))) if m else {}
FORBIDDEN_IN_BASE = ('mpi.h', 'hdf5.h', 'H5', 'yaml.h', 'jansson.h', 'cuda', 'nccl.h', 'cublas')


def layer_of(rel):
    parts = rel.split('/')
    if parts[0] in ('src', 'include') and len(parts) == 3:
        return parts[1]
    if rel == 'src/main.c':
        return 'main'
    if parts[0] == 'cuda':  # a file of cuda/, or of its folder cuda/layers/ (the entry `layers`)
        return cuda_layer.get(parts[1] if len(parts) == 2 else parts[1] if parts[1] == 'layers' else None)
    return None


problems = []
files = []
for top in ('src', 'include', 'cuda'):
    for d, _, names in os.walk(os.path.join(ROOT, top)):
        for n in names:
            if n.endswith(('.c', '.h', '.cu', '.cuh')):
                files.append(os.path.relpath(os.path.join(d, n), ROOT))
edges = 0
for rel in sorted(files):
    mine = layer_of(rel)
    if mine not in rank:
        problems.append(f'{rel}: in no layer of ARCHITECTURE.md (its folder, or its entry in "cuda/ by layer")')
        continue
    text = open(os.path.join(ROOT, rel), encoding='utf-8').read()
    for ln, line in enumerate(text.split('\n'), 1):
        q = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        s = re.match(r'\s*#\s*include\s+<([^>]+)>', line)
        if s and rel.split('/')[:2] in (['src', 'base'], ['include', 'base']) and any(s.group(1).startswith(f) for f in FORBIDDEN_IN_BASE):
            problems.append(f'{rel}:{ln}: the base includes <{s.group(1)}> (the base is MPI-, HDF5-, YAML- and JSON-free)')
        if not q:
            continue
        target = q.group(1)
        edges += 1
        if target == 'version.h':  # generated into build/, included by the app layer only
            if mine != 'app':
                problems.append(f'{rel}:{ln}: includes the generated version.h (only the app layer may)')
            continue
        if rel.startswith('cuda/') and ('/' not in target or target.startswith('layers/')):
            path = os.path.join('cuda', target)
        else:
            path = os.path.join('include', target)
        if not os.path.isfile(os.path.join(ROOT, path)):
            problems.append(f'{rel}:{ln}: includes "{target}", which is no header of include/ (or of cuda/ for a cuda file)')
            continue
        theirs = layer_of(path)
        if theirs not in rank:
            problems.append(f'{rel}:{ln}: includes {path}, which is in no layer')
        elif rank[theirs] > rank[mine]:
            problems.append(f'{rel}:{ln}: {mine} includes "{target}" of {theirs}, a layer above it '
                            f'(order: {" < ".join(order)})')
for p in problems:
    print(p)
print(f'check_layers: {len(files)} files, {edges} include edges, {len(problems)} against the layer order')
sys.exit(1 if problems else 0)

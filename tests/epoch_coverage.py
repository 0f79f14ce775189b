"""epoch_coverage.py BEGIN N G W EPOCHS < `ddptok plan --steps 1..EPOCHS*Q --world-size W` output:
checks the global sampler's epochs (docs/sampling.md "Epochs") from what `plan` prints, knowing
only the documented rule: train ids are [BEGIN, BEGIN + N); an epoch is Q = ceil(N / G)
consecutive windows of G slots whose ids, -1 aside, are every train id exactly once (the last
window holding N - (Q - 1) G of them, the rest -1); each rank's shares of a window are disjoint
and together the window's ids; no two epochs in the same order. Prints one line per failed
property ("FAIL ...") and the windows' ids as one line per step on success (so that two world
sizes can be compared); exit 1 on any failure."""
import re
import sys

begin, n, G, W, epochs = map(int, sys.argv[1:6])
Q = -(-n // G)
fail = []
windows, shares = {}, {}
step = None
for line in sys.stdin:
    m = re.fullmatch(r"step (\d+) epoch (\d+) window (\d+)/(\d+):((?: -?\d+)*)\n?", line)
    if m:
        step = int(m.group(1))
        e, k, q = int(m.group(2)), int(m.group(3)), int(m.group(4))
        if q != Q or (e, k) != ((step - 1) // Q + 1, (step - 1) % Q + 1):
            fail.append(f"step {step}: epoch {e} window {k}/{q}, expected {(step - 1) // Q + 1} window {(step - 1) % Q + 1}/{Q}")
        windows[step] = [int(x) for x in m.group(5).split()]
        shares[step] = {}
        continue
    m = re.fullmatch(r"  rank (\d+):((?: -?\d+)*)\n?", line)
    if m and step is not None:
        shares[step][int(m.group(1))] = [int(x) for x in m.group(2).split()]
for u in range(1, epochs * Q + 1):
    if u not in windows:
        fail.append(f"step {u}: no window printed")
        continue
    w = windows[u]
    if len(w) != G:
        fail.append(f"step {u}: {len(w)} slots, expected G = {G}")
    k = (u - 1) % Q
    want = G if k < Q - 1 else n - (Q - 1) * G
    real = [x for x in w if x >= 0]
    if len(real) != want or any(x < 0 for x in w[:want]):
        fail.append(f"step {u}: {len(real)} ids, expected {want} then -1 (window {k + 1} of {Q})")
    got = sorted(x for r in range(W) for x in shares[u].get(r, []))
    if sorted(shares[u]) != list(range(W)) or got != sorted(real):
        fail.append(f"step {u}: the ranks' shares are not a partition of the window")
orders = []
for e in range(epochs):
    ids = [x for u in range(e * Q + 1, (e + 1) * Q + 1) for x in windows.get(u, []) if x >= 0]
    if sorted(ids) != list(range(begin, begin + n)):
        dup = len(ids) - len(set(ids))
        fail.append(f"epoch {e + 1}: {len(ids)} ids, {dup} repeated, {n - len(set(ids))} train ids missing: "
                    "expected every train id exactly once")
    orders.append(ids)
if len(orders) > 1 and any(orders[i] == orders[j] for i in range(len(orders)) for j in range(i)):
    fail.append("two epochs visit the train ids in the same order (the permutation is not keyed by the epoch)")
for line in fail[:10]:
    print("FAIL", line)
if not fail:
    for u in sorted(windows):
        print(u, *windows[u])
sys.exit(1 if fail else 0)

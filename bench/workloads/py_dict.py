"""Builds a 1M-entry dict of small objects. Run it with PYTHONMALLOC=malloc so every object is a
real malloc (CPython's pymalloc would otherwise serve small objects from its own arenas)."""
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
d = {}
for i in range(N):
    d[f"key-{i}"] = (i, str(i))
# Touch every value once more so the dict is used, not only built.
total = sum(v[0] for v in d.values())
assert total == N * (N - 1) // 2
print(f"py_dict: {len(d)} entries", file=sys.stderr)

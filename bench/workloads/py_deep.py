"""Allocations from 2^LEVELS distinct Python call paths, each about 60 frames deep: the shape of a
big interpreter run's call trees (many deep sites) for bench/gui_speed.sh. Level i calls a<i> or
b<i> by one bit of the path's number, then a chain of PAD frames ends in one malloc'ed bytearray
(over 512 bytes: not pymalloc's); every fourth one is kept to the end, the rest freed at once.
Paths run in order over about a second, so a time range holds a share of the sites."""
import sys
import time

LEVELS = int(sys.argv[1]) if len(sys.argv) > 1 else 14
PAD = 40

kept = []


def leaf(path):
    block = bytearray(600 + (path % 16) * 64)
    if path % 4 == 0:
        kept.append(block)


def pad(n, path):
    if n == 0:
        return leaf(path)
    return pad(n - 1, path)


# a0..a{LEVELS-1} and b0..: distinct functions, so the trees (merged by function) branch.
source = []
for i in range(LEVELS):
    nxt = f"a{i + 1}" if i + 1 < LEVELS else None
    for name in ("a", "b"):
        call = (f"(a{i + 1} if (path >> {i + 1}) & 1 else b{i + 1})(path)" if nxt else f"pad({PAD}, path)")
        source.append(f"def {name}{i}(path):\n    return {call}\n")
exec("".join(source))

start = time.perf_counter()
for path in range(1 << LEVELS):
    (a0 if path & 1 else b0)(path)
    if path % 256 == 255:
        time.sleep(0.01)  # spread over time: a range selects part of the run
print(f"py_deep: {1 << LEVELS} paths, {len(kept)} blocks kept, {time.perf_counter() - start:.2f} s",
      file=sys.stderr)

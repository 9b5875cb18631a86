# 2^LEVELS distinct Python call paths about 40 frames deep, each ending in one malloc'ed block
# (bytearray of 601 to 1561 bytes: past pymalloc's 512), made one after another over the run:
# the shape of a big interpreter run's call trees, small. Level i calls a<i> or b<i> by bit i
# of the path's number, so the top-down tree has exactly one `leaf` per path
# (tests/unit/analyzer_tree_index_test.cpp). Every fourth block is kept to the end.
import sys
import time

LEVELS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
PAD = 24
kept = []


def leaf(path):
    block = bytearray(600 + (path % 16) * 64)
    if path % 4 == 0:
        kept.append(block)


def pad(n, path):
    if n == 0:
        return leaf(path)
    return pad(n - 1, path)


source = []
for i in range(LEVELS):
    for name in ("a", "b"):
        call = f"(a{i + 1} if (path >> {i + 1}) & 1 else b{i + 1})(path)" if i + 1 < LEVELS else f"pad({PAD}, path)"
        source.append(f"def {name}{i}(path):\n    return {call}\n")
exec("".join(source))

for path in range(1 << LEVELS):
    (a0 if path & 1 else b0)(path)
    if path % 16 == 15:
        time.sleep(0.005)  # spread over time, so a range holds some paths

# Suggestions for Python's small objects (record --python-allocators, docs/python.md): the ground
# truth of PythonAllocators.SuggestionsForObjects, whose expectations name these lines.
import sys
import json  # the import system's objects: the interpreter's own work, no advice


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


POINTS = [Point(i, i + 1) for i in range(20000)]  # 20,000 instances alive at once (line 13)


def concat(n):
    s = ""
    for _ in range(n):
        s += "x"  # one str grown in place a character at a time (line 19)
    return s


def tuples(n):
    total = 0
    for i in range(n):  # an int each turn, dropped the next (line 25)
        t = (i, i + 1)  # a tuple each turn, dropped the next (line 26)
        total += t[1]
    return total


def scalars(n):
    import numpy as np  # numpy's scalars are objects its C code makes (line 32)
    return [np.float64(i) for i in range(n)]  # line 33


KEPT = concat(3000), tuples(50000), json.dumps([1, 2])
if len(sys.argv) > 1:
    KEPT += (scalars(int(sys.argv[1])),)

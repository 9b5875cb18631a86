# Python's small objects (record --python-allocators, docs/python.md): the ground truth of
# tests/integration/python_allocators_test.cpp, whose expectations name these lines.
KEEP = []
BIG = [None] * 100


def make_small(n):
    for _ in range(n):
        KEEP.append(bytes(100))  # 33 + 100 = 133 bytes from pymalloc (line 9), kept to the end


def make_big(n):
    for i in range(n):
        BIG[i] = bytes(1000)  # 1033 bytes: past pymalloc's 512, from malloc (line 14)


def churn(n):
    t = None
    for _ in range(n):
        t = bytes(50)  # 83 bytes (line 20), each freed when the next one replaces it
    return t


make_small(10000)
make_big(100)
churn(100000)

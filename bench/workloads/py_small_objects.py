"""Makes and frees small objects and prints what each cost in this process's own CPU time
(time.process_time: what a profiler adds inside the program, whatever else the machine runs).
Each round builds a list of N tuples of two new ints (three pymalloc objects per entry) and drops
it. bench/python_allocators.sh runs it under each profiler."""
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
ROUNDS = 3
t0 = time.process_time()
for _ in range(ROUNDS):
    keep = [(i, i + 1) for i in range(N)]
    del keep
t1 = time.process_time()
print(f"py_small_objects: {(t1 - t0) * 1e9 / (ROUNDS * N * 3):.1f} ns per object", file=sys.stderr)

# numpy: a module-level list keeps 20 arrays of 100,000 float64 (800,000 bytes each), made by
# numpy's C code at keep() (line 9); finalization frees them. Checked by the tests.
import numpy as np

KEPT = []

def keep():
    for _ in range(20):
        KEPT.append(np.ones(100_000))

keep()

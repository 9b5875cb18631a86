# numpy: the peak is two 80 MB arrays alive at once, made at known lines.
import numpy as np

def build():
    a = np.ones(10_000_000)
    b = a * 2.0
    return float(b.sum())

print(build())

# Two phases of kept blocks with a marker between them, for the --time filter's Python leak
# count: first() keeps 300 blocks at line 11 before the marker, second() 200 at line 15 after.
import ctypes
import time

KEPT = []
mark = getattr(ctypes.CDLL(None), "memledger_mark", None)  # the preload library's, when recorded

def first():
    for _ in range(300):
        KEPT.append(bytearray(7000))

def second():
    for _ in range(200):
        KEPT.append(bytearray(7100))

first()
time.sleep(0.2)
if mark:
    mark(b"second")
time.sleep(0.2)
second()

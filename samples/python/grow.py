# keep() holds N (argv[1], default 1000) bytearrays of 3001 bytes in a global list: a leak that
# grows with N. memledger diff of two runs names its line; checked by the tests (line 9).
import sys

KEPT = []

def keep(n):
    for _ in range(n):
        KEPT.append(bytearray(3000))

keep(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)

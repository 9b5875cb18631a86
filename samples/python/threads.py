# Four Python threads, each keeping 200 blocks of its own size from worker(); checked by line.
import threading

KEPT = []
LOCK = threading.Lock()

def worker(size):
    for _ in range(200):
        block = bytearray(size)
        with LOCK:
            KEPT.append(block)

threads = [threading.Thread(target=worker, args=(10000 + i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()

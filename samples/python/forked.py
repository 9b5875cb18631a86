# multiprocessing with fork: the parent and a child each keep blocks at their own line.
import multiprocessing as mp

KEPT = []

def child_work():
    for _ in range(100):
        KEPT.append(bytearray(6001))

def parent_work():
    for _ in range(100):
        KEPT.append(bytearray(6002))

if __name__ == "__main__":
    ctx = mp.get_context("fork")
    p = ctx.Process(target=child_work)
    p.start()
    p.join()
    parent_work()

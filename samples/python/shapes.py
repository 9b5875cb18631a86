# A generator, an exception raised through frames, and a coroutine, each keeping blocks of a
# size of its own at a known line (the tests check these lines).
import asyncio

KEPT = []

def produce(n):
    for _ in range(n):
        yield bytearray(5001)

def consume():
    for block in produce(50):
        KEPT.append(block)

def thrower(depth):
    if depth == 0:
        KEPT.append(bytearray(5002))
        raise ValueError("deep")
    thrower(depth - 1)

def catcher():
    for _ in range(30):
        try:
            thrower(4)
        except ValueError:
            KEPT.append(bytearray(5003))

async def coro_alloc():
    await asyncio.sleep(0)
    KEPT.append(bytearray(5004))

async def coro_main():
    await asyncio.gather(*(coro_alloc() for _ in range(40)))

consume()
catcher()
asyncio.run(coro_main())

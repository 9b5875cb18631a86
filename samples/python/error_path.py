# An error the evaluation loop raises itself: f(*n) with an int n. CPython formats its message
# on the loop's unlikely path, which GCC moves out of _PyEval_EvalFrameDefault into a part of its
# own (_PyEval_EvalFrameDefault.cold, that no dynamic symbol covers). target's name is long, so
# each message is one str of 713 bytes (3.11), over pymalloc's 512: malloc, from the cold part.
# The 200 TypeErrors are kept, with their messages. Line numbers are checked by the tests.
KEPT = []

def target(*args):
    return args

target.__qualname__ = "target_" + "x" * 600

def call_with_star(n):
    for _ in range(n):
        try:
            target(*n)
        except TypeError as e:
            KEPT.append(e)

call_with_star(200)

# py_leaker keeps 20,000 4 KiB bytearrays in a global list (80 MiB): live when the program's own
# code ends, freed by the interpreter's finalization. Line numbers are checked by the tests.
KEPT = []

def py_leaker(n):
    for _ in range(n):
        KEPT.append(bytearray(4096))

py_leaker(20000)

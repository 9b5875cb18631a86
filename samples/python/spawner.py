# A Python child started by subprocess inside the recorded tree: the child (grow.py, 400 blocks
# at its line 9) and this parent (200 blocks at line 11) each keep blocks at their own lines.
import os
import subprocess
import sys

KEPT = []

def parent_keep():
    for _ in range(200):
        KEPT.append(bytearray(3500))

here = os.path.dirname(os.path.abspath(__file__))
subprocess.run([sys.executable, os.path.join(here, "grow.py"), "400"], check=True)
parent_keep()

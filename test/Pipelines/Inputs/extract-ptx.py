#!/usr/bin/env python3
"""Writes the PTX of every gpu.binary in an MLIR file (format=isa) to
DIR/<binary>.ptx, so that ptxas can check it, and counts the kernels
(.entry) in them. Usage: extract-ptx.py IN DIR"""
import os
import re
import sys

text = open(sys.argv[1]).read()
os.makedirs(sys.argv[2], exist_ok=True)
found = 0
kernels = 0
for m in re.finditer(r'gpu\.binary @(\w+)[^\n]*?assembly = "((?:[^"\\]|\\.)*)"',
                     text):
    # MLIR string escapes: \XX (hex byte) and \\.
    ptx = re.sub(r'\\([0-9A-Fa-f]{2}|\\)',
                 lambda e: '\\' if e.group(1) == '\\' else chr(int(e.group(1), 16)),
                 m.group(2))
    with open(os.path.join(sys.argv[2], m.group(1) + ".ptx"), "w") as f:
        f.write(ptx)
    found += 1
    kernels += len(re.findall(r'^\.visible \.entry ', ptx, re.M))
print(f"extracted {found} PTX modules, {kernels} kernels")
sys.exit(0 if found else 1)

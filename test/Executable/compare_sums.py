#!/usr/bin/env python3
"""Runs two builds of one program and compares the sums they print.

  compare_sums.py PREFIX TOLERANCE -- CMD_A... -- CMD_B...

Each command must exit 0 and print, on every rank, lines that start with
PREFIX followed by numbers (`gpt sums 1.0e+00 2.0e+00 3.0e+00`). The two
runs must print the same number of such lines, and each number of A must
equal B's within TOLERANCE relative (of the larger magnitude, at least 1).
Used to check a target's rewrites against another target's independent
ones (gpu-on-host's cuBLASLt epilogues against the host's loops).
"""
import subprocess
import sys


def run(cmd, prefix):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        print(p.stdout)
        sys.exit("FAIL: %s exited with %d" % (" ".join(cmd), p.returncode))
    rows = [l[len(prefix):].split() for l in p.stdout.splitlines()
            if l.startswith(prefix)]
    if not rows:
        print(p.stdout)
        sys.exit("FAIL: %s printed no line starting with %r" % (cmd[-1], prefix))
    return sorted([float(x) for x in r] for r in rows)


def main():
    prefix, tol = sys.argv[1], float(sys.argv[2])
    rest = sys.argv[3:]
    if rest.count("--") != 2 or rest[0] != "--":
        sys.exit("usage: compare_sums.py PREFIX TOLERANCE -- A... -- B...")
    cut = rest.index("--", 1)
    a, b = run(rest[1:cut], prefix), run(rest[cut + 1:], prefix)
    if len(a) != len(b):
        sys.exit("FAIL: %d lines against %d" % (len(a), len(b)))
    worst = 0.0
    for ra, rb in zip(a, b):
        for x, y in zip(ra, rb):
            d = abs(x - y) / max(1.0, abs(x), abs(y))
            worst = max(worst, d)
            if d > tol:
                sys.exit("FAIL: %r against %r (relative %.3g > %g)" % (ra, rb, d, tol))
    print("PASS: %d lines agree within %.3g relative (tolerance %g)" %
          (len(a), worst, tol))


if __name__ == "__main__":
    main()

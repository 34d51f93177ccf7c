#!/usr/bin/env python3
"""The negative control of check-emulated-run.py: on copies of the traces of
a run that passed (DIR, N ranks, as run-emulated-compare.sh left them), each
altered in one way a broken compiler or runtime would alter them, the
checker must fail, with a message that names what is wrong.

  check-emulated-run-negative.py DIR N [CHECK_OPTION...]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from emutrace import fail, read_lines, read_trace

HERE = os.path.dirname(os.path.abspath(__file__))


def edit(path, change):
    lines = read_lines(path, path)
    lines = change(lines)
    with open(path, "w") as f:
        f.write("".join(l + "\n" for l in lines))


def first(lines, pattern):
    i = next((i for i, l in enumerate(lines) if re.match(pattern, l)), None)
    if i is None:
        fail("the traces have no line matching %r to alter" % pattern)
    return i


def drop_last_collective(lines):
    return lines[:-1]


def extra_sync(lines, shared):
    """One more synchronisation: at the end of the first marked call, or
    (a program without marks) after the first one."""
    if any(l.startswith("mark return ") for l in lines):
        i = first(lines, r"mark return ")
    else:
        i = first(lines, r"sync ") + 1
    return lines[:i] + ["sync stream=" + shared] + lines[i:]


def nccl_count_off_by_one(lines):
    i = first(lines, r"collective \w+ .*count=")
    lines[i] = re.sub(r"count=(\d+)",
                      lambda m: "count=%d" % (int(m.group(1)) + 1), lines[i])
    return lines


def leak(lines):
    lines[-1] = "exit live_allocations=1 live_bytes=4"
    return lines


def off_stream(lines, kind):
    i = first(lines, kind + r" .*stream=s\d+$")
    lines[i] = re.sub(r"stream=s\d+$", "stream=s99", lines[i])
    return lines


def foreign_kernel(lines):
    i = first(lines, r"launch ")
    lines[i] = "launch another_kernel " + lines[i].split(" ", 2)[2]
    return lines


def unmarked_host_sync(lines):
    i = first(lines, r"mark host-sync$")
    return lines[:i] + lines[i + 1:]


def main():
    d, n, options = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    shared = read_trace(d + "/cuda", 0, "emu")[2]
    last = n - 1
    emu = lambda r: "cuda/emu.%d" % r
    cases = [
        ("a collective missing from the CUDA build", "cuda/rt.%d" % last,
         drop_last_collective, r"rank %d: collective \d+ differs" % last),
        ("one synchronisation more", emu(0), lambda l: extra_sync(l, shared),
         r"rank 0, .*(synchronised the stream \d+ times, expected|"
         r"\d+ host synchronisations, expected \d+)"),
        ("an NCCL call with another count", emu(last % 2),
         nccl_count_off_by_one,
         r"rank %d: NCCL call 1 is not the runtime's collective" % (last % 2)),
        ("an allocation never freed", emu(last), leak,
         r"rank %d, .*live_allocations=1 .*expected every allocation "
         r"freed at exit" % last),
        ("a kernel on another stream", emu(0),
         lambda l: off_stream(l, "launch"), r"not on the shared stream"),
        ("a collective on another stream", emu(0),
         lambda l: off_stream(l, "collective"), r"not on the shared stream"),
    ]
    if "--syncs" not in options:
        cases.append(("a synchronisation the program did not mark", emu(0),
                      unmarked_host_sync, r"did not mark as its own"))
    if "--own-kernels" in options:
        cases.append(("a kernel of another function", emu(0), foreign_kernel,
                      r"launched another function's kernel"))
    failed = 0
    for what, path, change, expected in cases:
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "run")
            shutil.copytree(d, copy)
            edit(os.path.join(copy, path), change)
            p = subprocess.run(
                [sys.executable, os.path.join(HERE, "check-emulated-run.py"),
                 copy, str(n)] + options,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = p.stdout.strip().replace(copy, d)
        if p.returncode != 0 and re.search(expected, out):
            print("ok: %s (%s): %s" % (what, path, out.splitlines()[0]))
        else:
            failed += 1
            print("NOT CAUGHT: %s (%s): exit %d, expected /%s/:\n%s" %
                  (what, path, p.returncode, expected, out))
    if failed:
        fail("%d of %d altered traces passed the checker" % (failed,
                                                             len(cases)))
    print("PASS: the checker rejected all %d altered traces" % len(cases))


main()

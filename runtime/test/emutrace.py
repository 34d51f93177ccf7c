"""Shared by the checkers of the emulated CUDA driver's traces
(MESHRT_EMU_TRACE) and of the runtime's collective traces (MESHRT_TRACE):
reading one rank's trace, its key=value fields, and failing with a message."""
import re
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read_lines(path, what):
    """The lines of the file at path, without newlines; fails naming what."""
    try:
        with open(path) as f:
            return [l.rstrip("\n") for l in f]
    except OSError as e:
        fail("%s: no trace: %s" % (what, e))


def read_trace(d, r, name="trace"):
    """The lines of rank r's emulated-driver trace DIR/NAME.r, and its shared
    stream (the first stream the runtime created)."""
    path = "%s/%s.%d" % (d, name, r)
    lines = read_lines(path, "rank %d" % r)
    m = re.search(r"^stream-create (s\d+)", "\n".join(lines), re.M)
    if not m:
        fail("rank %d: no shared stream created" % r)
    return path, lines, m.group(1)


def fields(line):
    """The key=value fields of a trace line, as a dict of strings."""
    return dict(f.split("=", 1) for f in line.split() if "=" in f)

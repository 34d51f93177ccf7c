"""Shared by the checkers of the emulated CUDA driver's traces
(MESHRT_EMU_TRACE): reading one rank's trace, and failing with a message."""
import re
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read_trace(d, r):
    """The lines of rank r's trace DIR/trace.r, and its shared stream (the
    first stream the runtime created)."""
    path = "%s/trace.%d" % (d, r)
    try:
        lines = [l.rstrip("\n") for l in open(path)]
    except OSError as e:
        fail("rank %d: no trace: %s" % (r, e))
    m = re.search(r"^stream-create (s\d+)", "\n".join(lines), re.M)
    if not m:
        fail("rank %d: no shared stream created" % r)
    return path, lines, m.group(1)

#!/usr/bin/env python3
"""Checks the emulated driver's traces (MESHRT_EMU_TRACE) of meshrt-gpu-tests'
"mpi-backend" scenario on N ranks: stream-ordered collectives on the MPI
backend, staged through host memory.

  check-staging-trace.py DIR N

The program marks some calls ("mark staged <op>" ... "mark end"). In every
marked region of every rank (file DIR/trace.r):
  * the first thing is a host synchronisation of the shared stream (also
    when the call named the null stream), before any buffer is asked about
    or copied;
  * every device-to-host copy comes before every host-to-device copy, and
    all copies are on the shared stream;
  * after the last copy back to the device the stream is synchronised again
    (the call returns with its work done);
  * an in-place region with copies copies once each way.
At least one region per rank must stage (copies both ways) and one must not
(host buffers: no copy at all).
"""
import re
import sys


from emutrace import fail, read_trace


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    for r in range(n):
        path, lines, shared = read_trace(d, r)
        regions, cur, name = [], None, None
        for l in lines:
            if l.startswith("mark staged "):
                cur, name = [], l[len("mark staged "):]
            elif l == "mark end" and cur is not None:
                regions.append((name, cur))
                cur = None
            elif cur is not None:
                cur.append(l)
        if len(regions) < 3:
            fail("rank %d: %d marked regions, expected more" % (r, len(regions)))
        staged = plain = 0
        for name, body in regions:
            where = "rank %d, %s: %s" % (r, name, body)
            if not body or body[0] != "sync stream=" + shared:
                fail("%s: does not start with a sync of %s" % (where, shared))
            d2h = [i for i, l in enumerate(body) if l.startswith("memcpy d2h")]
            h2d = [i for i, l in enumerate(body) if l.startswith("memcpy h2d")]
            for i in d2h + h2d:
                if not body[i].endswith(" stream=" + shared):
                    fail("%s: copy not on the shared stream" % where)
            if d2h and h2d and max(d2h) > min(h2d):
                fail("%s: a copy to the host after a copy back" % where)
            if h2d and not any(l == "sync stream=" + shared
                               for l in body[max(h2d) + 1:]):
                fail("%s: no sync after the copy back" % where)
            if "in place" in name and (d2h or h2d) and \
                    (len(d2h), len(h2d)) != (1, 1):
                fail("%s: in place should copy once each way" % where)
            if d2h and h2d:
                staged += 1
            elif not d2h and not h2d:
                plain += 1
        if not staged or not plain:
            fail("rank %d: %d staged and %d unstaged regions, expected both" %
                 (r, staged, plain))
    print("staging traces OK (%d ranks)" % n)


main()

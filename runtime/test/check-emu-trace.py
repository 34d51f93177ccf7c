#!/usr/bin/env python3
"""Checks the traces the emulated CUDA driver wrote (MESHRT_EMU_TRACE) for
meshrt-gpu-tests' "stream" scenario on N ranks.

  check-emu-trace.py DIR N DEVICES

For every rank r (file DIR/trace.r):
  * the device context is created for device r % DEVICES (one node), before
    the module is loaded (lazy load after device selection);
  * from the first kernel launch to the next host synchronisation the
    stream holds exactly: launch produce, all_reduce, launch consume,
    all_gather, reduce_scatter, all_to_all, broadcast, permute, each on the
    shared stream, with the launch shapes and counts the program used, and
    no host synchronisation in between (the calls did not wait);
  * collectives name the same communicator on every rank, with this rank;
  * every allocation was freed (the exit line), every stream-ordered free
    names the shared stream.
"""
import re
import sys


from emutrace import fail, read_trace


def main():
    d, n, devices = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    comms = set()
    for r in range(n):
        path, lines, s = read_trace(d, r)
        where = "rank %d (%s)" % (r, path)
        ctx = [i for i, l in enumerate(lines) if l.startswith("context ")]
        mod = [i for i, l in enumerate(lines) if l.startswith("module-load")]
        if not ctx or lines[ctx[0]] != "context device=%d" % (r % devices):
            fail("%s: first context is %r, expected device %d" %
                 (where, lines[ctx[0]] if ctx else None, r % devices))
        if not mod or mod[0] < ctx[0]:
            fail("%s: module loaded before the device was selected" % where)
        start = next((i for i, l in enumerate(lines)
                      if l.startswith("launch produce")), None)
        if start is None:
            fail("%s: no launch of 'produce'" % where)
        end = next((i for i in range(start, len(lines))
                    if lines[i].startswith("sync ")), None)
        if end is None:
            fail("%s: no host synchronisation after the launches" % where)
        window = lines[start:end]
        cnt = "count=4 "
        group = (r"memcpy d2d bytes=16" if n == 1
                 else r"collective group ops=2 comm=c\d+ bytes=32")
        expected = [
            r"launch produce grid=2,1,1 block=128,1,1 smem=0 stream=%s" % s,
            r"collective all_reduce comm=c\d+ rank=%d/%d %stype=7 op=0 "
            r"stream=%s" % (r, n, cnt, s),
            r"launch consume grid=1,1,1 block=32,1,1 smem=0 stream=%s" % s,
            r"collective all_gather comm=c\d+ rank=%d/%d %stype=7 op=-1 "
            r"stream=%s" % (r, n, cnt, s),
            r"collective reduce_scatter comm=c\d+ rank=%d/%d %stype=7 op=0 "
            r"stream=%s" % (r, n, cnt, s),
            r"collective group ops=%d comm=c\d+ bytes=%d" % (2 * n, 32 * n),
            r"collective broadcast comm=c\d+ rank=%d/%d %stype=7 root=%d "
            r"stream=%s" % (r, n, cnt, n - 1, s),
            group,
        ]
        if len(window) != len(expected):
            fail("%s: between the first launch and the first sync:\n  %s\n"
                 "expected %d entries" % (where, "\n  ".join(window),
                                           len(expected)))
        for got, want in zip(window, expected):
            if not re.fullmatch(want, got):
                fail("%s: %r does not match %r" % (where, got, want))
            c = re.search(r"comm=(c\d+)", got)
            if c:
                comms.add(c.group(1))
        if lines[end] != "sync stream=%s" % s:
            fail("%s: the first sync is %r, not on the shared stream" %
                 (where, lines[end]))
        for l in lines:
            if l.startswith("free ") and "async" in l and not l.endswith(s):
                fail("%s: stream-ordered free off the shared stream: %r" %
                     (where, l))
        allocs = sum(1 for l in lines if l.startswith("alloc "))
        frees = sum(1 for l in lines if l.startswith("free "))
        if lines[-1] != "exit live_allocations=0 live_bytes=0" or \
                allocs != frees:
            fail("%s: leaks: %d allocations, %d frees, last line %r" %
                 (where, allocs, frees, lines[-1]))
        if not any(l.startswith("sync event=") for l in lines):
            fail("%s: mgpuEventSynchronize left no trace" % where)
    if len(comms) != 1:
        fail("collectives ran on several communicators: %s" % sorted(comms))
    print("PASS: %d traces checked" % n)


main()

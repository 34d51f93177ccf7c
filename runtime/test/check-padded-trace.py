#!/usr/bin/env python3
"""Checks the emulated driver's traces of meshrt-gpu-tests' "padded" mode on
N ranks: the NCCL backend's padded collectives move only the data.

  check-padded-trace.py DIR N

Blocks of 3 elements, data in the first 3 N - 2. For every rank r:
  * reduce_scatter_padded is one ncclReduce per member J whose block holds
    data, rooted at J, of exactly that data (3 elements, 1 for the last
    member), in member order; no ncclReduceScatter (which would reduce the
    padding too);
  * all_gather_padded is one group of sends and receives of the data only:
    r's data to each other member, each other member's data from it;
  * all_to_all_padded (split, then concat, of the same blocks) is one group
    each of the data only between r and the other members (r's own block is
    a copy, and a send or receive of no data is left out): split sends
    valid_in(j) elements of block j to each other member j and receives
    valid_in(r) from each; concat sends valid_in(r) to each and receives
    valid_in(j) from each j. "ops" and "bytes" (f32) are exactly those.
On one rank there is no group at all.
"""
import sys

from emutrace import fail, fields, read_trace

BLOCK = 3


def valid_in(j, n):
    return min(BLOCK, max(0, BLOCK * n - 2 - BLOCK * j))


def group_of(pairs):
    """(ops, bytes) of a group of f32 sends and receives with these (sent,
    received) element counts per peer, the empty ones left out."""
    ops = sum((s != 0) + (r != 0) for s, r in pairs)
    return ops, 4 * sum(s + r for s, r in pairs)


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    for r in range(n):
        path, lines, _ = read_trace(d, r)
        where = "rank %d (%s)" % (r, path)
        coll = [l for l in lines if l.startswith("collective ")]
        if any(l.startswith("collective reduce_scatter ") for l in coll):
            fail("%s: an ncclReduceScatter moved the padding" % where)
        reduces = [fields(l) for l in coll if l.startswith("collective reduce ")]
        want = [(str(j), str(valid_in(j, n))) for j in range(n) if valid_in(j, n)]
        got = [(f["root"], f["count"]) for f in reduces]
        if got != want:
            fail("%s: ncclReduce (root, count) %s, expected %s" % (where, got, want))
        mine = valid_in(r, n)
        peers = [j for j in range(n) if j != r]
        # (elements sent to, elements received from) each other member.
        gather = [(mine, valid_in(j, n)) for j in peers]
        split = [(valid_in(j, n), mine) for j in peers]
        concat = [(mine, valid_in(j, n)) for j in peers]
        groups = [fields(l) for l in coll if l.startswith("collective group ")]
        if n == 1:
            if groups:
                fail("%s: a group on one rank: %s" % (where, groups))
            continue
        want = [group_of(p) for p in (gather, split, concat)]
        got = [(int(g["ops"]), int(g["bytes"])) for g in groups]
        if got != want:
            fail("%s: groups (ops, bytes) %s, expected %s (all_gather_padded, "
                 "all_to_all_padded split, all_to_all_padded concat)" %
                 (where, got, want))
    print("PASS: %d ranks, padded collectives move the data only" % n)


if __name__ == "__main__":
    main()

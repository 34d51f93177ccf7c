#!/usr/bin/env python3
"""Checks a program compiled with --target=cuda and run on the emulated CUDA
driver and NCCL against the same program's host build, which ran on the MPI
backend and checked its numbers (run-emulated-compare.sh runs both).

  check-emulated-run.py DIR N [--without-bitwise] [--own-kernels]
      [--syncs S | --syncs-file FILE | --call-syncs F=S...]

  DIR/host/rt.R   the host build's collective trace (MESHRT_TRACE), rank R
  DIR/cuda/rt.R   the CUDA build's collective trace
  DIR/cuda/emu.R  the CUDA build's emulated-driver trace (MESHRT_EMU_TRACE)

For every rank R < N:
 (a) the CUDA build ran the same collectives as the host build, in the same
     order, with the same dtypes, counts, reductions, roots, offsets and
     groups (world ranks in group order); with --without-bitwise the host
     build's bitwise reductions are left out (the CUDA build ran on NCCL,
     which has none, and skipped them);
 (b) in the driver's trace: every allocation was freed (the exit line); the module was loaded after the
     device context; every kernel launch, collective, copy, stream-ordered
     allocation and free, and every host synchronisation is on the shared
     stream; and the synchronisations are exactly the ones the program must
     do:
       - with marks (the program writes "mark call F" ... "mark return F"
         around each call of a compiled function F, see EmulatedDriver.h):
         one synchronisation in each call (S for a function F named by
         --call-syncs), the last one after everything the call enqueued;
         kernels launched only inside calls (with --own-kernels, only F's
         own, named F_...); outside calls, one synchronisation for each
         "mark host-sync" (the program's own reads) and no other;
       - with --syncs S (a program with no host code to mark calls): S;
         --syncs-file FILE reads S from FILE (a generator's count);
 (c) the emulated NCCL ran the runtime trace's collectives, in order: the
     same kind, count, dtype, reduction or root, on a communicator whose
     members are the group, in group order; all_to_all as one group of 2n
     sends and receives, permute as one group of its send and/or receive
     (a device copy when a rank sends to itself, nothing when it neither
     sends nor receives), barrier as a one-element i32 sum.
Failures name the rank, the file and the line.
"""
import argparse
import re

from emutrace import fail, fields, read_lines, read_trace

BITWISE = {"band", "bor", "bxor"}
DTYPE_SIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i32": 4,
              "i64": 8, "u8": 1}
NCCL_TYPE = {"i8": 0, "u8": 1, "i32": 2, "i64": 4, "f16": 6, "f32": 7,
             "f64": 8, "bf16": 9}
NCCL_OP = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}


def runtime_trace(d, build, r, without_bitwise):
    """[(line number, line)] of one build's collective trace."""
    path = "%s/%s/rt.%d" % (d, build, r)
    out = []
    for i, l in enumerate(read_lines(path, "rank %d, %s build" % (r, build))):
        if without_bitwise and fields(l).get("op") in BITWISE:
            continue
        out.append((i + 1, l))
    return path, out


def check_same_collectives(d, r, without_bitwise):
    """(a); returns the CUDA build's trace."""
    hpath, host = runtime_trace(d, "host", r, without_bitwise)
    cpath, cuda = runtime_trace(d, "cuda", r, False)
    for k in range(max(len(host), len(cuda))):
        h = host[k] if k < len(host) else (None, "(nothing)")
        c = cuda[k] if k < len(cuda) else (None, "(nothing)")
        if h[1] != c[1]:
            fail("rank %d: collective %d differs between the builds:\n"
                 "  host build %s:%s: %s\n  CUDA build %s:%s: %s" %
                 (r, k + 1, hpath, h[0], h[1], cpath, c[0], c[1]))
    if not cuda:
        fail("rank %d: the program ran no collective (%s)" % (r, cpath))
    return cpath, cuda


def valid_in(j, count, valid):
    """The data elements of member j's block (the runtime's validIn)."""
    return max(0, min(count, valid - j * count))


def p2p_group(members, sizes):
    """A grouped send/receive of the given element counts (empty ones left
    out), as the emulated NCCL traces it; [] when nothing moves."""
    sizes = [b for b in sizes if b]
    if not sizes:
        return []
    return [{"kind": "group", "members": members, "ops": len(sizes),
             "bytes": sum(sizes)}]


def expected_nccl(line, me):
    """What the NCCL backend must hand the emulated NCCL for one runtime
    trace line on world rank `me`: a list of dicts (empty: nothing)."""
    kind = line.split()[0]
    f = fields(line)
    members = [int(x) for x in f["group"].split(",")]
    n, g = len(members), members.index(me)
    want = {"members": members, "rank": g}
    if kind == "barrier":
        return [dict(want, kind="all_reduce", count=1, type=2, op=0)]
    dtype = line.split()[1]
    count = int(f["count"])
    elem = DTYPE_SIZE[dtype]
    want.update(count=count, type=NCCL_TYPE[dtype])
    if kind in ("all_reduce", "reduce_scatter"):
        return [dict(want, kind=kind, op=NCCL_OP[f["op"]])]
    if kind == "all_gather":
        return [dict(want, kind=kind)]
    if kind == "broadcast":
        return [dict(want, kind=kind, root=int(f["root"]))]
    size = count * elem
    if kind == "all_to_all":
        return p2p_group(members, [size] * (2 * n))
    if kind == "permute":
        to, frm = int(f["to"]), int(f["from"])
        if to == g and frm == g:
            return []  # A device-to-device copy.
        return p2p_group(members, [size * (to >= 0), size * (frm >= 0)])
    # The padded collectives: NCCL has none of unequal blocks
    # (NcclBackend.cpp). Valid elements of block j:
    valid = int(f.get("valid", 0))
    block = [valid_in(j, count, valid) for j in range(n)]
    others = [j for j in range(n) if j != g]
    if kind == "all_gather_padded":
        # This member's data to each other one, theirs from each.
        return p2p_group(members, [x * elem for j in others
                                   for x in (block[g], block[j])])
    if kind == "all_to_all_padded":
        split = int(f["side"]) == 0  # MESHRT_PADDED_SPLIT
        return p2p_group(members, [x * elem for j in others for x in
                                   ((block[j], block[g]) if split
                                    else (block[g], block[j]))])
    if kind == "reduce_scatter_padded":
        # One reduce per member with data, of its valid elements, to it.
        return [dict(want, kind="reduce", count=block[j], root=j)
                for j in range(n) if block[j]]
    fail("unknown collective in the runtime trace: %r" % line)


def actual_nccl(line, comms):
    """The emulated NCCL's trace line as a dict like expected_nccl's."""
    tok = line.split()
    f = fields(line)
    got = {"kind": tok[1], "members": comms.get(f["comm"])}
    if tok[1] == "group":
        return dict(got, ops=int(f["ops"]), bytes=int(f["bytes"]))
    rank = f["rank"].split("/")[0]
    got.update(rank=int(rank), count=int(f["count"]), type=int(f["type"]))
    if tok[1] in ("all_reduce", "reduce_scatter"):
        got["op"] = int(f["op"])
    if tok[1] in ("broadcast", "reduce"):
        got["root"] = int(f["root"])
    return got


def check_nccl(r, rt_path, rt, emu_path, emu):
    """(c); returns the number of NCCL calls."""
    comms = {}
    actual = []
    for i, l in enumerate(emu):
        if l.startswith("nccl-comm "):
            comms[l.split()[1]] = [int(x) for x in
                                   fields(l)["members"].split(",")]
        elif l.startswith("collective "):
            actual.append((i + 1, l, actual_nccl(l, comms)))
    expected = [(n, l, e) for n, l in rt for e in expected_nccl(l, r)]
    for k in range(max(len(expected), len(actual))):
        e = expected[k] if k < len(expected) else (None, "(nothing)", None)
        a = actual[k] if k < len(actual) else (None, "(nothing)", None)
        if e[2] != a[2]:
            fail("rank %d: NCCL call %d is not the runtime's collective:\n"
                 "  runtime  %s:%s: %s\n    wants %s\n"
                 "  emulated %s:%s: %s\n    is    %s" %
                 (r, k + 1, rt_path, e[0], e[1], e[2], emu_path, a[0], a[1],
                  a[2]))
    return len(actual)


def check_driver(r, path, lines, shared, a):
    """(b) with the options `a`; returns (calls, host syncs, launches)."""
    where = lambda i: "rank %d, %s:%d" % (r, path, i + 1)
    live = re.fullmatch(r"exit live_allocations=(\d+) live_bytes=\d+",
                        lines[-1])
    if not live or live.group(1) != "0":
        fail("%s: %r, expected every allocation freed at exit" %
             (where(len(lines) - 1), lines[-1]))
    syncs = a.syncs
    call_syncs = dict(a.call_syncs)
    ctx = next((i for i, l in enumerate(lines) if l.startswith("context ")),
               None)
    mod = next((i for i, l in enumerate(lines)
                if l.startswith("module-load")), None)
    if mod is not None and (ctx is None or mod < ctx):
        fail("%s: module loaded before the device context" % where(mod))
    marked = syncs is None
    call = None        # (name, line) of the call being made.
    in_call = 0        # Its synchronisations so far.
    pending = 0        # "mark host-sync" not yet followed by their sync.
    calls = host_syncs = launches = total_syncs = 0
    for i, l in enumerate(lines):
        f = fields(l)
        stream = f.get("stream")
        # Synchronous allocations and frees (cudaMalloc: the NCCL backend's
        # scratch) name the null stream s0; all other work is stream-ordered.
        synchronous = stream == "s0" and (
            l.startswith("alloc ") or l.startswith("free ") and " sync " in l)
        if stream is not None and stream != shared and not synchronous:
            fail("%s: not on the shared stream %s: %r" % (where(i), shared, l))
        if l.startswith("mark call "):
            if call:
                fail("%s: call of %s inside the call of %s (line %d)" %
                     (where(i), l.split()[2], call[0], call[1] + 1))
            if pending:
                fail("%s: 'mark host-sync' with no synchronisation after it"
                     % where(i))
            call, in_call = (l.split()[2], i), 0
            calls += 1
        elif l.startswith("mark return "):
            if not call or l.split()[2] != call[0]:
                fail("%s: %r without its call" % (where(i), l))
            want = call_syncs.get(call[0], 1)
            if in_call != want:
                fail("%s: the call of %s (from line %d) synchronised the "
                     "stream %d times, expected %s" %
                     (where(i), call[0], call[1] + 1, in_call,
                      "once, at its end" if want == 1 else want))
            call = None
        elif l == "mark host-sync":
            if call or pending:
                fail("%s: 'mark host-sync' %s" % (
                    where(i), "inside a call" if call else
                    "twice with no synchronisation in between"))
            pending = 1
        elif l.startswith("sync "):
            total_syncs += 1
            if l != "sync stream=" + shared:
                fail("%s: a host synchronisation of something else than the "
                     "shared stream %s: %r" % (where(i), shared, l))
            if not marked:
                continue
            if call:
                in_call += 1
            elif pending:
                pending = 0
                host_syncs += 1
            else:
                fail("%s: a synchronisation outside any call that the program "
                     "did not mark as its own ('mark host-sync')" % where(i))
        elif re.match(r"(launch|collective|memcpy|memset)", l):
            if call and in_call == call_syncs.get(call[0], 1):
                fail("%s: %r enqueued after the synchronisation that ends the "
                     "call of %s" % (where(i), l, call[0]))
            if l.startswith("launch "):
                launches += 1
                if marked and not call:
                    fail("%s: a kernel launched outside any compiled call: %r"
                         % (where(i), l))
                if a.own_kernels and not l.split()[1].startswith(call[0] +
                                                                 "_"):
                    fail("%s: the call of %s launched another function's "
                         "kernel: %r" % (where(i), call[0], l))
    if call:
        fail("rank %d, %s: the call of %s (line %d) never returned" %
             (r, path, call[0], call[1] + 1))
    if pending:
        fail("rank %d, %s: the last 'mark host-sync' has no synchronisation" %
             (r, path))
    if marked and not calls:
        fail("rank %d, %s: no call marked (mark call F ... mark return F); "
             "give --syncs for a program without marks" % (r, path))
    if not marked and total_syncs != syncs:
        fail("rank %d, %s: %d host synchronisations, expected %d" %
             (r, path, total_syncs, syncs))
    return calls, host_syncs if marked else total_syncs, launches


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("ranks", type=int)
    p.add_argument("--without-bitwise", action="store_true")
    p.add_argument("--own-kernels", action="store_true")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--syncs", type=int)
    g.add_argument("--syncs-file")
    g.add_argument("--call-syncs", action="append", default=[],
                   type=lambda v: (v.split("=")[0], int(v.split("=")[1])))
    a = p.parse_args()
    if a.syncs_file:
        with open(a.syncs_file) as f:
            a.syncs = int(f.read().split()[0])
    for r in range(a.ranks):
        rt_path, rt = check_same_collectives(a.dir, r, a.without_bitwise)
        emu_path, emu, shared = read_trace(a.dir + "/cuda", r, "emu")
        calls, syncs, launches = check_driver(r, emu_path, emu, shared, a)
        nccl = check_nccl(r, rt_path, rt, emu_path, emu)
        if r == 0:
            summary = (len(rt), nccl, calls, syncs, launches)
    print("PASS: %d ranks; rank 0: %d collectives as in the host build, %d "
          "NCCL calls matching them; %s; %d kernel launches; %s" %
          (a.ranks, summary[0], summary[1],
           "%d calls, each with its synchronisations, and %d "
           "synchronisations of the program's own" % (summary[2], summary[3])
           if a.syncs is None else
           "%d synchronisations in all" % summary[3], summary[4],
           "every allocation freed"))


main()

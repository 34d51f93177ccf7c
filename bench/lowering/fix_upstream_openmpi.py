#!/usr/bin/env python3
"""Patches two Open MPI ABI mistakes of LLVM 22's MPI-to-LLVM conversion in a
textual LLVM IR file, so that upstream's program can run at all:

1. The MPI_Op globals are named `ompi_mpi_sum`, `ompi_mpi_max`, ...; Open MPI
   exports `ompi_mpi_op_sum`, `ompi_mpi_op_max`, ... (the link fails).
2. mpi.comm_split loads the new communicator as an i32 and sign-extends it
   (CommSplitOpLowering always loads i32); an Open MPI MPI_Comm is a pointer,
   so the handle is truncated and the next call on it segfaults. We load the
   whole 64-bit pointer instead.

3. mpi.send and mpi.recv pass the size of the buffer's first dim as the
   element count (MPIToLLVM reads sizes[0] only): a memref<1x18xf32>, the
   row halo that shard.update_halo's lowering allocates, moves 1 float, and
   the receiver reads 17 uninitialised ones. We pass the product of the
   sizes (the buffers are fresh, contiguous allocations).

Usage: fix_upstream_openmpi.py IN.ll OUT.ll   (prints what it changed)
"""
import re
import sys

OPS = ("no_op", "max", "min", "sum", "prod", "land", "band", "lor", "bor",
       "lxor", "bxor", "minloc", "maxloc", "replace")


def main(src_path, dst_path):
    text = open(src_path).read()
    renamed = 0
    for op in OPS:
        text, n = re.subn(rf"@ompi_mpi_{op}\b", f"@ompi_mpi_op_{op}", text)
        renamed += n
    lines = text.split("\n")
    splits = fixed = 0
    for i, line in enumerate(lines):
        m = re.search(r"call i32 @MPI_Comm_split\(.*, ptr (%[\w.]+)\)", line)
        if not m:
            continue
        splits += 1
        out = m.group(1)
        for j in range(i + 1, min(i + 20, len(lines))):
            ld = re.match(rf"(\s*)(%[\w.]+) = load i32, ptr {re.escape(out)}, align 4$", lines[j])
            if not ld:
                continue
            indent, val = ld.groups()
            lines[j] = f"{indent}{val} = load i64, ptr {out}, align 8"
            for k in range(j + 1, min(j + 20, len(lines))):
                sx = re.match(rf"(\s*)(%[\w.]+) = sext i32 {re.escape(val)} to i64$", lines[k])
                if sx:
                    lines[k] = f"{sx.group(1)}{sx.group(2)} = add i64 {val}, 0"
                    fixed += 1
                    break
            break
    counts = 0
    for i, line in enumerate(lines):
        m = re.search(r"call i32 @MPI_(?:Send|Recv)\(ptr %[\w.]+, i32 (%[\w.]+),", line)
        if not m:
            continue
        count = m.group(1)
        for j in range(i - 1, max(i - 8, -1), -1):
            tr = re.match(rf"(\s*){re.escape(count)} = trunc i64 (%[\w.]+) to i32$", lines[j])
            if not tr:
                continue
            size0 = tr.group(2)
            for k in range(j - 1, max(j - 8, -1), -1):
                ev = re.match(rf"(\s*){re.escape(size0)} = extractvalue (\{{ ptr, ptr, i64, \[(\d+) x i64\], "
                              rf"\[\d+ x i64\] \}}) (%[\w.]+), 3, 0$", lines[k])
                if not ev:
                    continue
                indent, ty, rank, desc = ev.groups()
                prod = size0
                extra = []
                for d in range(1, int(rank)):
                    dim, mul = f"%mpi_count{counts}.d{d}", f"%mpi_count{counts}.n{d}"
                    extra += [f"{indent}{dim} = extractvalue {ty} {desc}, 3, {d}",
                              f"{indent}{mul} = mul i64 {prod}, {dim}"]
                    prod = mul
                if extra:
                    lines[j] = f"{tr.group(1)}{count} = trunc i64 {prod} to i32"
                    lines[j:j] = extra
                    counts += 1
                break
            break
    if fixed != splits:
        sys.exit(f"fix_upstream_openmpi: fixed {fixed} of {splits} MPI_Comm_split results;"
                 " the IR does not look as expected")
    open(dst_path, "w").write("\n".join(lines))
    print(f"fix_upstream_openmpi: renamed {renamed} MPI_Op references, "
          f"widened {fixed} MPI_Comm_split results to 64 bits, "
          f"made {counts} MPI_Send/MPI_Recv counts the product of the sizes")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

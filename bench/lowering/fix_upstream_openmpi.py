#!/usr/bin/env python3
"""Patches two Open MPI ABI mistakes of LLVM 22's MPI-to-LLVM conversion in a
textual LLVM IR file, so that upstream's program can run at all:

1. The MPI_Op globals are named `ompi_mpi_sum`, `ompi_mpi_max`, ...; Open MPI
   exports `ompi_mpi_op_sum`, `ompi_mpi_op_max`, ... (the link fails).
2. mpi.comm_split loads the new communicator as an i32 and sign-extends it
   (CommSplitOpLowering always loads i32); an Open MPI MPI_Comm is a pointer,
   so the handle is truncated and the next call on it segfaults. We load the
   whole 64-bit pointer instead.

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
    if fixed != splits:
        sys.exit(f"fix_upstream_openmpi: fixed {fixed} of {splits} MPI_Comm_split results;"
                 " the IR does not look as expected")
    open(dst_path, "w").write("\n".join(lines))
    print(f"fix_upstream_openmpi: renamed {renamed} MPI_Op references, "
          f"widened {fixed} MPI_Comm_split results to 64 bits")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

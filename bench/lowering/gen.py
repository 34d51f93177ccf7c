#!/usr/bin/env python3
"""Writes the all_reduce chain of bench/lowering/run.sh in several forms.

  gen.py ours          STEPS ELEMS [AxB] > ours.mlir      mesh dialect, for mesh-compile
  gen.py upstream      STEPS ELEMS [AxB] > upstream.mlir  LLVM 22 shard (+ mpi init/finalize)
  gen.py ours-loop     STEPS ELEMS [AxB] > ours.mlir      the same two as one scf.for
  gen.py upstream-loop STEPS ELEMS [AxB] > upstream.mlir  loop of STEPS iterations
  gen.py direct       STEPS ELEMS [AxB] > direct.c       C on libmeshrt's C ABI, static buffers
  gen.py direct-fresh STEPS ELEMS [AxB] > fresh.c        the same, a new buffer per step
  gen.py direct-reuse STEPS ELEMS [AxB] > reuse.c        the same, freed after its last use
  gen.py expect       STEPS ELEMS [AxB]                  what every form must print, from
                                                         the closed form (meshes (A, 4) only)

All compute the same thing on an (A, B) mesh (upstream: grid), by default
(2, 4) (8 ranks), with axes ("a", "b"): x starts as [0, 1, ..., ELEMS-1] (f32);
each of STEPS steps does a little local work, t = fma(x, 0.25, bias) with
bias = 10 a + b + 1 (the rank's coordinates), then x = all_reduce(t, sum) over
axis "b" (grid axis 1): the pattern a K-split matmul chain leaves after
partitioning. The MLIR forms "ours" and "upstream" are straight-line, one
value per step, as a partitioner emits them; the "-loop" forms are one
scf.for of STEPS iterations carrying x (its body: the fma and the all_reduce),
so that their size does not grow with STEPS. The C forms are loops. On (2, 4) a step adds 40 a + 10 to every element, so
values stay integers below 2^22 for STEPS up to ~80,000: every sum is exact
whatever order MPI adds in, and the programs must agree bit for bit. (On
(1, 2), x converges to 6; the operations are the same in every form.)

Each program synchronises all ranks (an all_reduce of one zero), times the
chain with clock_gettime(CLOCK_MONOTONIC), then prints one line per rank:
  rank R checksum C sum S loop_ns T
C is sum_j (j + 1) * bits(x_j) over the final buffer (64-bit, wrapping), S the
plain sum of the elements, T the time of the chain on that rank.
"""
import sys

# llvm-dialect helpers both MLIR forms use: printf and a monotonic clock.
LLVM_HELPERS = r'''llvm.mlir.global internal constant @bench_fmt("rank %lld checksum %lld sum %.1f loop_ns %lld\0A\00") {addr_space = 0 : i32}
llvm.func @printf(!llvm.ptr, ...) -> i32
llvm.func @clock_gettime(i32, !llvm.ptr) -> i32
llvm.func @bench_now_ns() -> i64 {
  %one = llvm.mlir.constant(1 : i32) : i32
  %ts = llvm.alloca %one x !llvm.array<2 x i64> : (i32) -> !llvm.ptr
  %rc = llvm.call @clock_gettime(%one, %ts) : (i32, !llvm.ptr) -> i32
  %s = llvm.load %ts : !llvm.ptr -> i64
  %nsp = llvm.getelementptr %ts[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<2 x i64>
  %ns = llvm.load %nsp : !llvm.ptr -> i64
  %g = llvm.mlir.constant(1000000000 : i64) : i64
  %sg = llvm.mul %s, %g : i64
  %t = llvm.add %sg, %ns : i64
  llvm.return %t : i64
}
'''


def main_body(steps, elems, coords, sync, all_reduce, loop=False):
    """The body of @main. `coords` defines %ia, %ib (the rank's coordinates)
    and %rank; `all_reduce(dst, src)` is one all_reduce over axis b and
    `sync(dst, src)` one over both axes (on tensor<1xf32>). `loop`: the steps
    as one scf.for carrying x rather than straight-line."""
    t = f"tensor<{elems}xf32>"
    init = ", ".join(f"{j}.0" for j in range(elems))
    out = [f"  %x0 = arith.constant dense<[{init}]> : {t}",
           f"  %quarter = arith.constant dense<0.25> : {t}",
           "  %c0 = arith.constant 0 : index",
           "  %c1 = arith.constant 1 : index",
           "  %c10 = arith.constant 10 : index",
           f"  %celems = arith.constant {elems} : index",
           "  %zero64 = arith.constant 0 : i64",
           "  %zerof64 = arith.constant 0.0 : f64",
           coords,
           "  %bi0 = arith.muli %ia, %c10 : index",
           "  %bi1 = arith.addi %bi0, %ib : index",
           "  %bi2 = arith.addi %bi1, %c1 : index",
           "  %bi3 = arith.index_cast %bi2 : index to i64",
           "  %bf0 = arith.uitofp %bi3 : i64 to f32",
           # Start together: an all_reduce over every rank of [0.0], added to
           # the bias so that it cannot be dropped.
           "  %zerot = arith.constant dense<0.0> : tensor<1xf32>",
           sync("%synct", "%zerot"),
           "  %sync = tensor.extract %synct[%c0] : tensor<1xf32>",
           "  %bf = arith.addf %bf0, %sync : f32",
           f"  %be = tensor.empty() : {t}",
           f"  %bias = linalg.fill ins(%bf : f32) outs(%be : {t}) -> {t}",
           "  %time0 = llvm.call @bench_now_ns() : () -> i64"]
    if loop:
        out += [f"  %csteps = arith.constant {steps} : index",
                "  %xlast = scf.for %i = %c0 to %csteps step %c1"
                f" iter_args(%x = %x0) -> ({t}) {{",
                f"    %t = math.fma %x, %quarter, %bias : {t}",
                "  " + all_reduce("%xnext", "%t"),
                f"    scf.yield %xnext : {t}",
                "  }"]
        last = "%xlast"
    else:
        for i in range(1, steps + 1):
            out += [f"  %t{i} = math.fma %x{i-1}, %quarter, %bias : {t}",
                    all_reduce(f"%x{i}", f"%t{i}")]
        last = f"%x{steps}"
    out += ["  %time1 = llvm.call @bench_now_ns() : () -> i64",
            "  %dt = arith.subi %time1, %time0 : i64",
            "  %ck:2 = scf.for %j = %c0 to %celems step %c1"
            " iter_args(%h = %zero64, %s = %zerof64) -> (i64, f64) {",
            f"    %e = tensor.extract {last}[%j] : {t}",
            "    %bits = arith.bitcast %e : f32 to i32",
            "    %b64 = arith.extui %bits : i32 to i64",
            "    %j1 = arith.addi %j, %c1 : index",
            "    %w = arith.index_cast %j1 : index to i64",
            "    %p = arith.muli %b64, %w : i64",
            "    %h2 = arith.addi %h, %p : i64",
            "    %e64 = arith.extf %e : f32 to f64",
            "    %s2 = arith.addf %s, %e64 : f64",
            "    scf.yield %h2, %s2 : i64, f64",
            "  }",
            "  %r64 = arith.index_cast %rank : index to i64",
            "  %fmt = llvm.mlir.addressof @bench_fmt : !llvm.ptr",
            "  %pr = llvm.call @printf(%fmt, %r64, %ck#0, %ck#1, %dt)"
            " vararg(!llvm.func<i32 (ptr, ...)>)"
            " : (!llvm.ptr, i64, i64, f64, i64) -> i32"]
    return "\n".join(out) + "\n"


def ours(steps, elems, a, b, loop=False):
    t = f"tensor<{elems}xf32>"
    coords = ('  %ia = mesh.axis_index @m "a" : index\n'
              '  %ib = mesh.axis_index @m "b" : index\n'
              f'  %cb = arith.constant {b} : index\n'
              '  %ra = arith.muli %ia, %cb : index\n'
              '  %rank = arith.addi %ra, %ib : index')
    body = main_body(
        steps, elems, coords,
        lambda d, s: f'  {d} = mesh.all_reduce {s} on @m axes = ["a", "b"]'
                     ' reduction = sum : tensor<1xf32> -> tensor<1xf32>',
        lambda d, s: f'  {d} = mesh.all_reduce {s} on @m axes = ["b"]'
                     f' reduction = sum : {t} -> {t}', loop)
    return ("// Generated by bench/lowering/gen.py ours: see its docstring.\n"
            f'mesh.mesh @m(["a" = {a}, "b" = {b}])\n' + LLVM_HELPERS +
            "func.func @main() -> i32 {\n" + body +
            "  %ret = arith.constant 0 : i32\n  return %ret : i32\n}\n")


def upstream(steps, elems, a, b, loop=False):
    t = f"tensor<{elems}xf32>"
    coords = ("  %idx:2 = shard.process_multi_index on @g : index, index\n"
              "  %ia = arith.addi %idx#0, %c0 : index\n"
              "  %ib = arith.addi %idx#1, %c0 : index\n"
              "  %rank = shard.process_linear_index on @g : index")
    body = main_body(
        steps, elems, coords,
        lambda d, s: f"  {d} = shard.all_reduce {s} on @g grid_axes = [0, 1]"
                     " reduction = sum : tensor<1xf32> -> tensor<1xf32>",
        lambda d, s: f"  {d} = shard.all_reduce {s} on @g grid_axes = [1]"
                     f" reduction = sum : {t} -> {t}", loop)
    # convert-shard-to-mpi neither starts nor stops MPI: the program does, and
    # the MPI-to-LLVM conversion needs to know the implementation (its ABI).
    return ("// Generated by bench/lowering/gen.py upstream: see its docstring.\n"
            'module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">} {\n'
            f"shard.grid @g(shape = {a}x{b})\n" + LLVM_HELPERS +
            "func.func @main() -> i32 {\n"
            "  %init = mpi.init : !mpi.retval\n" + body +
            "  %fin = mpi.finalize : !mpi.retval\n"
            "  %ret = arith.constant 0 : i32\n  return %ret : i32\n}\n}\n")


def direct(steps, elems, a, b, buffers="static"):
    """buffers: "static" (two static arrays), "fresh" (a new malloc'd output
    per all_reduce, all freed at the end, as the compiled code does) or
    "reuse" (the same, but each buffer freed once the next step has read it,
    so malloc hands the same memory back)."""
    if buffers in ("fresh", "reuse"):
        what = ("Each all_reduce writes a fresh\n * malloc'd buffer, "
                + ("all freed at the end (as the compiled code does)"
                   if buffers == "fresh" else
                   "freed once the next step has read it")
                + "; the next\n * step's fma runs in place.")
        free_early = ("    if (cur != x)\n      free(cur);\n"
                      if buffers == "reuse" else "")
        free_late = ("" if buffers == "reuse" else
                     "  for (int i = 0; i < STEPS - 1; ++i)\n    free(outs[i]);\n")
        bufs = "static float x[ELEMS];"
        loop = """  float *outs[STEPS];
  float *cur = x;
  for (int i = 0; i < STEPS; ++i) {
    for (int j = 0; j < ELEMS; ++j)
      cur[j] = fmaf(cur[j], 0.25f, bias);
    outs[i] = malloc(ELEMS * sizeof(float));
    meshrt_all_reduce(comm_b, cur, outs[i], ELEMS, MESHRT_F32, MESHRT_SUM);
""" + free_early + """    cur = outs[i];
  }
  const int64_t dt = now_ns() - t0;
  memcpy(x, cur, sizeof x);
  free(cur);
""" + free_late
    else:
        what = "Two static buffers, t and x."
        bufs = "static float x[ELEMS], t[ELEMS];"
        loop = """  for (int i = 0; i < STEPS; ++i) {
    for (int j = 0; j < ELEMS; ++j)
      t[j] = fmaf(x[j], 0.25f, bias);
    meshrt_all_reduce(comm_b, t, x, ELEMS, MESHRT_F32, MESHRT_SUM);
  }
  const int64_t dt = now_ns() - t0;"""
    loop = loop.rstrip("\n")
    return f'''/* Generated by bench/lowering/gen.py: see its docstring. The same chain
 * written by hand against meshrt.h. {what} */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <meshrt/meshrt.h>

#define STEPS {steps}
#define ELEMS {elems}

static int64_t now_ns(void) {{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}}

int main(void) {{
  meshrt_init(MESHRT_BACKEND_AUTO);
  const int64_t sizes[2] = {{{a}, {b}}};
  const char *const names[2] = {{"a", "b"}};
  meshrt_mesh_t mesh;
  meshrt_mesh_declare("m", 2, sizes, names, &mesh);
  const int64_t axis_b[1] = {{1}}, axes_ab[2] = {{0, 1}};
  meshrt_comm_t comm_b, comm_ab;
  meshrt_comm_get(mesh, 1, axis_b, &comm_b);
  meshrt_comm_get(mesh, 2, axes_ab, &comm_ab);
  int64_t ia, ib;
  meshrt_mesh_coordinate(mesh, 0, &ia);
  meshrt_mesh_coordinate(mesh, 1, &ib);
  {bufs}
  for (int j = 0; j < ELEMS; ++j)
    x[j] = (float)j;
  float zero = 0.0f, sync;
  meshrt_all_reduce(comm_ab, &zero, &sync, 1, MESHRT_F32, MESHRT_SUM);
  const float bias = (float)(10 * ia + ib + 1) + sync;
  const int64_t t0 = now_ns();
{loop}
  uint64_t h = 0;
  double s = 0;
  for (int j = 0; j < ELEMS; ++j) {{
    uint32_t bits;
    memcpy(&bits, &x[j], 4);
    h += (uint64_t)bits * (uint64_t)(j + 1);
    s += x[j];
  }}
  printf("rank %lld checksum %lld sum %.1f loop_ns %lld\\n",
         (long long)({b} * ia + ib), (long long)h, s, (long long)dt);
  meshrt_finalize();
  return 0;
}}
'''


def expect(steps, elems, a, b):
    """The lines every form prints, but for loop_ns, from the closed form
    x_j = j + STEPS (40 a + 10), in run.sh's sorted .sums format. Only for
    B = 4, where a step adds 40 a + 10; exact while x stays below 2^22."""
    import struct
    if b != 4:
        sys.exit("gen.py expect: only meshes (A, 4) have the closed form")
    if elems - 1 + steps * (40 * (a - 1) + 10) >= 2**22:
        sys.exit("gen.py expect: values reach 2^22, sums may round")
    lines = []
    for ia in range(a):
        xs = [j + steps * (40 * ia + 10) for j in range(elems)]
        h = sum((j + 1) * struct.unpack("<I", struct.pack("<f", x))[0]
                for j, x in enumerate(xs)) % 2**64
        h = h - 2**64 if h >= 2**63 else h
        lines += [f"rank {ia * b + ib} checksum {h} sum {float(sum(xs)):.1f}"
                  for ib in range(b)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    kinds = {"ours": ours, "upstream": upstream, "direct": direct,
             "ours-loop": lambda *a: ours(*a, loop=True),
             "upstream-loop": lambda *a: upstream(*a, loop=True),
             "direct-fresh": lambda *a: direct(*a, buffers="fresh"),
             "direct-reuse": lambda *a: direct(*a, buffers="reuse"),
             "expect": expect}
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in kinds:
        sys.exit(__doc__)
    kind, steps, elems = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    a, b = (int(s) for s in (sys.argv[4] if len(sys.argv) == 5 else "2x4").split("x"))
    print(kinds[kind](steps, elems, a, b), end="")

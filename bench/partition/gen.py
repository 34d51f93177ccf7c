#!/usr/bin/env python3
"""The four workloads of ../../../shared/bench/upstream/gen.py, in our `mesh` dialect.

Same programs, op for op, as upstream's generator (LLVM 22 `shard` dialect):
  ew   : chain of N elementwise ops on tensor<256x256xf32>, cycling
         add, tanh, sub, exp (upstream: tosa.add/tanh/sub/exp; ours: arith.addf,
         math.tanh, arith.subf, math.exp). Only the first argument is annotated
         ([["a"], ["b"]] on a 2x4 mesh); every add and sub also uses %arg1, so one
         value has N/2 users.
  ew1  : as ew, but add and sub use (prev, prev): no value with O(N) users, and
         no second argument (upstream drops it too).
  mm   : N/4 blocks of tensor.empty, linalg.fill, linalg.matmul(x, W_i), add(m, m);
         x row-split on "a", every W_i replicated (data parallel).
  kred : as mm, but x is [["a"], ["b"]] and every W_i is [["b"], []]: the
         contraction dim is split over "b", so each block's matmul is partial and
         needs a reduction; the running value is re-annotated to [["a"], ["b"]]
         before every matmul after the first (upstream does the same).

Mapping: upstream `shard.grid @g(shape = 2x4)` -> `mesh.mesh @g(["a" = 2, "b" = 4])`
(grid axis 0 -> "a", 1 -> "b"); `shard.sharding @g split_axes = [[0], [1]]` +
`shard.shard %v to %s annotate_for_users` -> `mesh.shard %v : T to
#mesh.sharding<@g, [["a"], ["b"]]>`.

--style=op   (default) annotates exactly where upstream does, with `mesh.shard`
             ops: on %arg0 and on every weight.
--style=attr puts the same shardings on the function arguments instead
             (`{mesh.sharding = ...}`); the kred re-annotations stay `mesh.shard`.

Payload ops (counted like upstream: elementwise + linalg.matmul/fill + tensor.empty)
are N for ew/ew1 and 4 * (N // 4) for mm/kred, as upstream.

Usage: gen.py [--style=op|attr] KIND N > out.mlir
"""
import sys

MESH = 'mesh.mesh @g(["a" = 2, "b" = 4])'


def sh(dims):
    return "#mesh.sharding<@g, [" + ", ".join(
        "[" + ", ".join(f'"{a}"' for a in d) + "]" for d in dims) + "]>"


def ew(n, shape="256x256", shared_operand=True, style="op"):
    t = f"tensor<{shape}xf32>"
    s = sh([["a"], ["b"]])
    a0 = f"%arg0: {t} {{mesh.sharding = {s}}}" if style == "attr" else f"%arg0: {t}"
    args = [a0] + ([f"%arg1: {t}"] if shared_operand else [])
    out = [MESH, f"func.func @main({', '.join(args)}) -> {t} {{"]
    if style == "attr":
        prev = "%arg0"
    else:
        out.append(f"  %x0 = mesh.shard %arg0 : {t} to {s}")
        prev = "%x0"
    for i in range(n):
        k = i % 4
        cur = f"%v{i}"
        if k == 0:
            rhs = "%arg1" if shared_operand else prev
            out.append(f"  {cur} = arith.addf {prev}, {rhs} : {t}")
        elif k == 1:
            out.append(f"  {cur} = math.tanh {prev} : {t}")
        elif k == 2:
            rhs = "%arg1" if shared_operand else prev
            out.append(f"  {cur} = arith.subf {prev}, {rhs} : {t}")
        else:
            out.append(f"  {cur} = math.exp {prev} : {t}")
        prev = cur
    out.append(f"  return {prev} : {t}")
    out.append("}")
    return "\n".join(out)


def mm(n, M=256, K=256, kred=False, style="op"):
    t = f"tensor<{M}x{K}xf32>"
    w = f"tensor<{K}x{K}xf32>"
    blocks = max(1, n // 4)   # each block: empty, fill, matmul, add  (4 ops)
    if kred:
        sx, sw = sh([["a"], ["b"]]), sh([["b"], []])
    else:
        sx, sw = sh([["a"], []]), sh([[], []])
    if style == "attr":
        args = [f"%arg0: {t} {{mesh.sharding = {sx}}}"] + \
               [f"%w{i}: {w} {{mesh.sharding = {sw}}}" for i in range(blocks)]
    else:
        args = [f"%arg0: {t}"] + [f"%w{i}: {w}" for i in range(blocks)]
    out = [MESH, f"func.func @main({', '.join(args)}) -> {t} {{",
           "  %cst = arith.constant 0.0 : f32"]
    if style == "attr":
        prev = "%arg0"
    else:
        out.append(f"  %x0 = mesh.shard %arg0 : {t} to {sx}")
        prev = "%x0"
    for i in range(blocks):
        if style == "attr":
            wi = f"%w{i}"
        else:
            out.append(f"  %ws{i} = mesh.shard %w{i} : {w} to {sw}")
            wi = f"%ws{i}"
        if kred and i > 0:
            # re-annotate the running value so every matmul sees a K-split lhs
            out.append(f"  %xr{i} = mesh.shard {prev} : {t} to {sx}")
            prev = f"%xr{i}"
        out.append(f"  %e{i} = tensor.empty() : {t}")
        out.append(f"  %f{i} = linalg.fill ins(%cst : f32) outs(%e{i} : {t}) -> {t}")
        out.append(f"  %m{i} = linalg.matmul ins({prev}, {wi} : {t}, {w}) "
                   f"outs(%f{i} : {t}) -> {t}")
        out.append(f"  %a{i} = arith.addf %m{i}, %m{i} : {t}")
        prev = f"%a{i}"
    out.append(f"  return {prev} : {t}")
    out.append("}")
    return "\n".join(out)


if __name__ == "__main__":
    argv = sys.argv[1:]
    style = "op"
    if argv and argv[0].startswith("--style="):
        style = argv.pop(0).split("=", 1)[1]
        if style not in ("op", "attr"):
            sys.exit("--style must be op or attr")
    if len(argv) != 2:
        sys.exit(__doc__)
    kind, n = argv[0], int(argv[1])
    if kind == "ew":
        print(ew(n, style=style))
    elif kind == "ew1":
        print(ew(n, shared_operand=False, style=style))
    elif kind == "mm":
        print(mm(n, style=style))
    elif kind == "kred":
        print(mm(n, kred=True, style=style))
    else:
        sys.exit("unknown kind")

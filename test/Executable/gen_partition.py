#!/usr/bin/env python3
"""Generates the executable equivalence tests of propagation + partitioning.

Each case is a function @fN on global shapes, with random shardings on its
arguments, its result and sometimes a mesh.shard constraint inside, and a copy
@fN_ref without any annotation. @main feeds both the same constant inputs and
asserts that the results are equal, exactly (i32 arithmetic on small values).
The whole module goes through mesh-propagate-sharding, mesh-partition and
mesh-compile, and runs on 8 ranks: the annotated copy runs partitioned, the
reference runs replicated, on every rank.

Cases: a fixed suite (a matmul with every sharding of its three dims on the
(2, 4) mesh, the examples' models, stencils and convolutions with halos, and
on meshes with a `?` axis, sized at start-up from the 8 ranks: the matmuls
again on (2, ?), each matmul dim over (?), reductions leaving a partial sum
or max, reshapes, values gathered back to whole whose static types return, a
loop and a Jacobi stencil) followed by random programs on the meshes (8),
(2, 4), (2, 2, 2), (?), (2, ?) and (?, 4), about 3 in 10 on the last three:
elementwise chains, matmuls, transposes (of any rank), reductions,
concatenations, loops (scf.for, scf.while), branches, pads, stencils (a pad,
zero or circular, and shifted windows of it), tensor.generate (a region op
with no rule), constraints; collapse_shape / expand_shape in both
directions (groups of 2 or 3 dims, up to rank 4, leading size-1 dims, rank-3
arguments, and reshapes whose group's major dim a constraint splits whole so
that the narrow dim carries that dim's axes and the next one's); and
extract_slice / insert_slice with static offsets, sizes and strides (dims
taken whole, windows, stride 2, rank-reducing ones dropping a dim).
Reshape and slice results feed the ops after them. main prints how many
random cases have each of these.

--without leaves out the random reshapes, slices or `?` meshes (each kind
then as before it was added).

Usage: gen_partition.py OUT.mlir [--cases N] [--seed S] [--only REGEX]
                        [--without KIND] [--corrupt] [--no-check]
"""
import argparse
import itertools
import random
import re

# A size None is `?`: the runtime resolves it at start-up as the world size
# (WORLD ranks) over the product of the other sizes.
MESHES = {"m8": [("x", 8)], "m24": [("a", 2), ("b", 4)],
          "m222": [("p", 2), ("q", 2), ("r", 2)],
          "mq8": [("x", None)], "mq2q": [("a", 2), ("b", None)],
          "mqq4": [("a", None), ("b", 4)]}
DYNAMIC_MESHES = [m for m, axes in MESHES.items()
                  if any(size is None for _, size in axes)]
WORLD = 8
# The kinds of random program that a flag may leave out (--without).
KINDS = ["reshape", "slice", "dynamic"]


def prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def mesh_axes(mesh):
    """(name, size) of each axis, a `?` resolved as on WORLD ranks."""
    known = prod(size for _, size in MESHES[mesh] if size is not None)
    return [(name, WORLD // known if size is None else size)
            for name, size in MESHES[mesh]]


def sharding(mesh, dims, partial=None):
    # dims: one list of axis names per tensor dim.
    body = ", ".join("[" + ", ".join(f'"{a}"' for a in d) + "]" for d in dims)
    return f"#mesh.sharding<@{mesh}, [{body}]>"


def random_sharding(rng, mesh, shape):
    """Each axis goes to a random dim (or none) if the dim still divides."""
    dims = [[] for _ in shape]
    local = list(shape)
    axes = mesh_axes(mesh)
    rng.shuffle(axes)
    for name, size in axes:
        d = rng.randrange(len(shape) + 1)
        if d < len(shape) and local[d] % size == 0:
            dims[d].append(name)
            local[d] //= size
    return dims


def ttype(shape):
    return "tensor<" + "x".join(map(str, shape)) + "xi32>"


class Case:
    def __init__(self, name, mesh):
        self.name, self.mesh = name, mesh
        self.args = []      # (shape, dims or None)
        self.body = []      # lines, with {S:...} markers for constraints
        self.result = None  # (value, shape)
        self.result_dims = None
        self.counter = 0
        self.tags = set()   # what a random case covers (counted by main)

    def fresh(self):
        self.counter += 1
        return f"%v{self.counter}"

    def emit(self, ref):
        out = []
        params = []
        for i, (shape, dims) in enumerate(self.args):
            ann = "" if ref or dims is None else \
                f" {{mesh.sharding = {sharding(self.mesh, dims)}}}"
            params.append(f"%arg{i}: {ttype(shape)}{ann}")
        value, shape = self.result
        res = ttype(shape)
        if not ref and self.result_dims is not None:
            res = f"({res} {{mesh.sharding = {sharding(self.mesh, self.result_dims)}}})"
        fn = self.name + ("_ref" if ref else "")
        out.append(f"func.func @{fn}({', '.join(params)}) -> {res} {{")
        for line in self.body:
            # Lines for one copy only: the reference computes some values
            # its own way, independently of the compiler's rewrites.
            for prefix, mine in (("REFONLY ", ref), ("ANNONLY ", not ref)):
                if line.startswith(prefix):
                    line = line[len(prefix):] if mine else None
                    break
            if line is None:
                continue
            if line.startswith("SHARD "):
                _, dst, src, typ, dims = line.split(" ", 4)
                if ref:  # The reference has no constraint: an identity.
                    out.append(f"  {dst} = arith.maxsi {src}, {src} : {typ}")
                else:
                    out.append(f"  {dst} = mesh.shard {src} : {typ} to {sharding(self.mesh, eval(dims))}")
            else:
                # `{ANN:dims}` annotates an op in the annotated copy only.
                out.append("  " + re.sub(
                    r"\{ANN:(.*?)\}",
                    lambda m: "" if ref else
                    f" {{mesh.sharding = {sharding(self.mesh, eval(m.group(1)))}}}",
                    line))
        out.append(f"  return {value} : {ttype(shape)}")
        out.append("}")
        return out


def matmul(case, lhs, rhs, m, k, n):
    e, f, r = case.fresh(), case.fresh(), case.fresh()
    case.body += [
        f"{e} = tensor.empty() : {ttype([m, n])}",
        f"{f} = linalg.fill ins(%c0_i32 : i32) outs({e} : {ttype([m, n])}) -> {ttype([m, n])}",
        f"{r} = linalg.matmul ins({lhs}, {rhs} : {ttype([m, k])}, {ttype([k, n])}) outs({f} : {ttype([m, n])}) -> {ttype([m, n])}",
    ]
    return r


def matmul_suite(mesh="m24", prefix="mm"):
    """Every sharding of (m, k, n) by the axes "a" and "b" of (2, 4) (or of
    (2, ?), which is (2, 4) on 8 ranks)."""
    cases = []
    places = ["m", "k", "n", None]
    for pa, pb in itertools.product(places, places):
        orders = [("a", "b"), ("b", "a")] if pa == pb and pa else [("a", "b")]
        for order in orders:
            dims = {"m": [], "k": [], "n": []}
            for axis in order:
                p = pa if axis == "a" else pb
                if p:
                    dims[p].append(axis)
            c = Case(f"{prefix}_{pa}_{pb}_{''.join(order)}", mesh)
            m, k, n = 16, 16, 8
            c.args = [([m, k], [dims["m"], dims["k"]]),
                      ([k, n], [dims["k"], dims["n"]])]
            r = matmul(c, "%arg0", "%arg1", m, k, n)
            c.result = (r, [m, n])
            c.result_dims = [dims["m"], dims["n"]]
            cases.append(c)
    return cases


def model_suite():
    """The examples' MLP and attention, on global shapes, with the
    shardings Megatron and Ulysses use (integers: exact)."""
    cases = []
    # Megatron MLP: W1 split by columns, W2 by rows over "b"; relu = max(x, 0).
    for name, x_dims in [("mlp_tp", [[], []]), ("mlp_dp_tp", [["a"], []])]:
        c = Case(name, "m24")
        b_, d, h = 8, 8, 32
        c.args = [([b_, d], x_dims), ([d, h], [[], ["b"]]), ([h, d], [["b"], []])]
        hid = matmul(c, "%arg0", "%arg1", b_, d, h)
        e, z, r = c.fresh(), c.fresh(), c.fresh()
        c.body += [f"{e} = tensor.empty() : {ttype([b_, h])}",
                   f"{z} = linalg.fill ins(%c0_i32 : i32) outs({e} : {ttype([b_, h])}) -> {ttype([b_, h])}",
                   f"{r} = arith.maxsi {hid}, {z} : {ttype([b_, h])}"]
        out = matmul(c, r, "%arg2", b_, h, d)
        c.result = (out, [b_, d])
        c.result_dims = [x_dims[0], []]
        cases.append(c)
    # Megatron-SP MLP (issue 11): activations split on the sequence over the
    # tensor-parallel axis outside the matmuls; a constraint gathers them
    # before W1 (columns split), relu, W2 (rows split), a broadcast bias
    # add, optionally an expand back to [B, S, H], and a residual add. The
    # optimiser moves the slice of W2's reduced result up through the bias
    # add (and the expand) to the reduction: one reduce_scatter; with two
    # rows of batch per device (sp_mlp_expand_b2) through a [B, S, H] view
    # of the reduction, scattered along S.
    # (name, mesh, tp axis, dp axis, B, S, H): B = 0 is the [S, H] form.
    for name, mesh, tp, dp, bb, sq, hd in [
            ("sp_mlp", "m24", "b", None, 0, 16, 8),
            ("sp_mlp_expand", "m24", "b", "a", 2, 8, 8),
            ("sp_mlp_expand_tp8", "m8", "x", None, 1, 16, 8),
            ("sp_mlp_expand_b2", "m8", "x", None, 2, 16, 8)]:
        c = Case(name, mesh)
        ff = 4 * hd
        rows = max(bb, 1) * sq
        dpl = [dp] if dp else []
        seq_dims = [dpl, [tp], []] if bb else [[tp], []]
        x_shape = [bb, sq, hd] if bb else [sq, hd]
        c.args = [(x_shape, seq_dims), ([hd, ff], [[], [tp]]), ([ff], [[tp]]),
                  ([ff, hd], [[tp], []]), ([hd], [[]])]
        x2 = "%arg0"
        if bb:
            x2 = c.fresh()
            c.body.append(f"{x2} = tensor.collapse_shape %arg0 [[0, 1], [2]] : "
                          f"{ttype(x_shape)} into {ttype([rows, hd])}")
        xg = c.fresh()
        c.body.append(f"SHARD {xg} {x2} {ttype([rows, hd])} [{dpl}, []]")

        def bias_add(val, bias, n):
            e, r = c.fresh(), c.fresh()
            t = ttype([rows, n])
            c.body.extend([
                f"{e} = tensor.empty() : {t}",
                f"{r} = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = [\"parallel\", \"parallel\"]}} ins({val}, {bias} : {t}, {ttype([n])}) outs({e} : {t}) {{",
                "^bb0(%in: i32, %b: i32, %out: i32):",
                "  %s = arith.addi %in, %b : i32",
                "  linalg.yield %s : i32",
                f"}} -> {t}"])
            return r
        h = bias_add(matmul(c, xg, "%arg1", rows, hd, ff), "%arg2", ff)
        z, g = c.fresh(), c.fresh()
        c.body += [f"{z} = arith.constant dense<0> : {ttype([rows, ff])}",
                   f"{g} = arith.maxsi {h}, {z} : {ttype([rows, ff])}"]
        y = bias_add(matmul(c, g, "%arg3", rows, ff, hd), "%arg4", hd)
        if bb:
            y3 = c.fresh()
            c.body.append(f"{y3} = tensor.expand_shape {y} [[0, 1], [2]] output_shape "
                          f"[{bb}, {sq}, {hd}] : {ttype([rows, hd])} into {ttype(x_shape)}")
            y = y3
        r = c.fresh()
        c.body.append(f"{r} = arith.addi {y}, %arg0 : {ttype(x_shape)}")
        c.result, c.result_dims = (r, x_shape), seq_dims
        cases.append(c)
    # Elementwise ops linear in operands that are pending sums (matmuls
    # whose K dim is split over "b"): partitioning runs them on the partial
    # values and reduces the result once. p - q; torch-mlir's a - alpha * b
    # (a generic) times a value that is not partial plus a third partial
    # value, the result split; a partial row sum broadcast onto a partial
    # matrix; and p + c (not linear: c must be added once, after the
    # reduction) and p - q used in a loop, for their numbers.
    for name in ["partial_sub", "partial_chain", "partial_broadcast",
                 "partial_plus_fixed", "partial_in_loop"]:
        c = Case(name, "m24")
        m, k, n = 8, 16, 8
        t = ttype([m, n])
        x_dims = [["a"], ["b"]] if name == "partial_chain" else [[], ["b"]]
        c.args = [([m, k], x_dims), ([k, n], [["b"], []]), ([k, n], [["b"], []]),
                  ([m, n], None)]
        p = matmul(c, "%arg0", "%arg1", m, k, n)
        q = matmul(c, "%arg0", "%arg2", m, k, n)
        r = c.fresh()
        result_dims = [[], []]
        if name in ("partial_sub", "partial_in_loop"):
            c.body.append(f"{r} = arith.subi {p}, {q} : {t}")
        elif name == "partial_chain":
            s3, e, d, mm = matmul(c, "%arg0", "%arg1", m, k, n), c.fresh(), c.fresh(), c.fresh()
            c.body += [
                f"{e} = tensor.empty() : {t}",
                f"{d} = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = [\"parallel\", \"parallel\"]}} ins({p}, {q} : {t}, {t}) outs({e} : {t}) {{",
                "^bb0(%a: i32, %b: i32, %o: i32):",
                "  %alpha = arith.constant 2 : i32",
                "  %ab = arith.muli %b, %alpha : i32",
                "  %s = arith.subi %a, %ab : i32",
                "  linalg.yield %s : i32",
                f"}} -> {t}",
                f"{mm} = arith.muli {d}, %arg3 : {t}",
                f"{r} = arith.addi {mm}, {s3} : {t}"]
            result_dims = [["a"], ["b"]]
        elif name == "partial_broadcast":
            e1, z1, rs, e = c.fresh(), c.fresh(), c.fresh(), c.fresh()
            c.body += [
                f"{e1} = tensor.empty() : {ttype([m])}",
                f"{z1} = linalg.fill ins(%c0_i32 : i32) outs({e1} : {ttype([m])}) -> {ttype([m])}",
                f"{rs} = linalg.reduce ins(%arg0 : {ttype([m, k])}) outs({z1} : {ttype([m])}) dimensions = [1]",
                "  (%in: i32, %acc: i32) {",
                "    %s = arith.addi %in, %acc : i32",
                "    linalg.yield %s : i32",
                "  }",
                f"{e} = tensor.empty() : {t}",
                f"{r} = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = [\"parallel\", \"parallel\"]}} ins({rs}, {p} : {ttype([m])}, {t}) outs({e} : {t}) {{",
                "^bb0(%a: i32, %b: i32, %o: i32):",
                "  %s = arith.addi %a, %b : i32",
                "  linalg.yield %s : i32",
                f"}} -> {t}"]
        else:
            c.body.append(f"{r} = arith.addi {p}, %arg3 : {t}")
        if name == "partial_in_loop":
            loop = c.fresh()
            c.body += [f"{loop} = scf.for %it = %c0 to %c3 step %c1 iter_args(%acc = %arg3) -> ({t}) {{",
                       f"  %nxt = arith.addi %acc, {r} : {t}",
                       f"  scf.yield %nxt : {t}",
                       "}"]
            r = loop
        c.result, c.result_dims = (r, [m, n]), result_dims
        cases.append(c)
    # Bodies that read loop indices, with the loops split (axes in either
    # order): the partitioner adds each device's block start to its local
    # indices. The first two read the column index only, the others both.
    column = ["  %j = linalg.index 1 : index",
              "  %ji = arith.index_cast %j : index to i32",
              "  %s = arith.addi %in, %ji : i32"]
    both = ["  %i = linalg.index 0 : index",
            "  %j = linalg.index 1 : index",
            "  %ii = arith.index_cast %i : index to i32",
            "  %ji = arith.index_cast %j : index to i32",
            "  %c100 = arith.constant 100 : i32",
            "  %ih = arith.muli %ii, %c100 : i32",
            "  %s0 = arith.addi %in, %ih : i32",
            "  %s = arith.addi %s0, %ji : i32"]
    for name, dims, body in [("index_rows", [["a", "b"], []], column),
                             ("index_both", [["a"], ["b"]], column),
                             ("index_parallel", [["b"], ["a"]], both),
                             ("index_parallel_rows", [["b", "a"], []], both)]:
        c = Case(name, "m24")
        m, n = 16, 8
        t = ttype([m, n])
        c.args = [([m, n], dims)]
        e, r = c.fresh(), c.fresh()
        c.body += [
            f"{e} = tensor.empty() : {t}",
            f"{r} = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = [\"parallel\", \"parallel\"]}} ins(%arg0 : {t}) outs({e} : {t}) {{",
            "^bb0(%in: i32, %out: i32):"] + body + [
            "  linalg.yield %s : i32",
            f"}} -> {t}"]
        c.result = (r, [m, n])
        c.result_dims = dims
        cases.append(c)
    # torch-mlir's aten.max.dim: one generic gives the maximum and its index
    # (linalg.index of the reduced loop). Unused, the index is dropped before
    # propagation and the maximum is a plain max reduction: rows split (no
    # collective) or the reduced dim split too (a partial max, reduced).
    # Used, the reduced loop stays whole (an argmax of a block is wrong).
    for name, dims, used in [("max_argmax_unused", [["a", "b"], []], False),
                             ("max_argmax_unused_split", [["a"], ["b"]], False),
                             ("max_argmax_used", [["a"], ["b"]], True)]:
        c = Case(name, "m24")
        m, n = 16, 16
        c.args = [([m, n], dims)]
        e, f, ei, fi, r, out = (c.fresh() for _ in range(6))
        c.body += [
            "%lowest = arith.constant -2147483648 : i32",
            f"{e} = tensor.empty() : {ttype([m])}",
            f"{f} = linalg.fill ins(%lowest : i32) outs({e} : {ttype([m])}) -> {ttype([m])}",
            f"{ei} = tensor.empty() : tensor<{m}xi64>",
            "%zero64 = arith.constant 0 : i64",
            f"{fi} = linalg.fill ins(%zero64 : i64) outs({ei} : tensor<{m}xi64>) -> tensor<{m}xi64>",
            f"{r}:2 = linalg.generic {{indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>, affine_map<(i, k) -> (i)>], iterator_types = [\"parallel\", \"reduction\"]}} ins(%arg0 : {ttype([m, n])}) outs({f}, {fi} : {ttype([m])}, tensor<{m}xi64>) {{",
            "^bb0(%in: i32, %acc: i32, %idx: i64):",
            "  %k = linalg.index 1 : index",
            "  %ki = arith.index_cast %k : index to i64",
            "  %mx = arith.maxsi %in, %acc : i32",
            "  %gt = arith.cmpi sgt, %in, %acc : i32",
            "  %sel = arith.select %gt, %ki, %idx : i64",
            "  linalg.yield %mx, %sel : i32, i64",
            f"}} -> ({ttype([m])}, tensor<{m}xi64>)"]
        if used:
            a = c.fresh()
            c.body += [f"{a} = arith.trunci {r}#1 : tensor<{m}xi64> to {ttype([m])}",
                       f"{out} = arith.addi {r}#0, {a} : {ttype([m])}"]
        else:
            c.body += [f"{out} = arith.addi {r}#0, {r}#0 : {ttype([m])}"]
        c.result = (out, [m])
        c.result_dims = [dims[0]]
        cases.append(c)
    # Reshapes whose group's major dim does not divide by the devices of the
    # axes of the narrow dim (6 by 2 * 4): the dim is not split, and the
    # narrow side is sliced or gathered.
    c = Case("collapse_not_divisible", "m24")
    c.args = [([6, 8], [["a"], []])]
    r = c.fresh()
    c.body.append(f"{r} = tensor.collapse_shape %arg0 [[0, 1]] : {ttype([6, 8])} into {ttype([48])}")
    c.result, c.result_dims = (r, [48]), [["a", "b"]]
    cases.append(c)
    c = Case("expand_not_divisible", "m24")
    c.args = [([48], [["a", "b"]])]
    r = c.fresh()
    c.body.append(f"{r} = tensor.expand_shape %arg0 [[0, 1]] output_shape [6, 8] : {ttype([48])} into {ttype([6, 8])}")
    c.result, c.result_dims = (r, [6, 8]), [["a"], []]
    cases.append(c)
    # An scf.if whose branches yield different layouts, the function's
    # result wanting the else branch's (the result takes it: the then path
    # moves once), taken each way; and a loop whose body yields another
    # layout than its initial value's (moved once, before the loop).
    for name, cond in [("if_layouts_then", "%true"), ("if_layouts_else", "%false")]:
        c = Case(name, "m24")
        c.args = [([8, 8], [["b"], []]), ([8, 8], [[], ["b"]])]
        r, y, z = c.fresh(), c.fresh(), c.fresh()
        t = ttype([8, 8])
        c.body += [f"{r} = scf.if {cond} -> ({t}) {{",
                   f"  {y} = arith.addi %arg0, %arg0 : {t}",
                   f"  scf.yield {y} : {t}",
                   "} else {",
                   f"  {z} = arith.muli %arg1, %arg1 : {t}",
                   f"  scf.yield {z} : {t}",
                   "}"]
        c.result, c.result_dims = (r, [8, 8]), [[], ["b"]]
        cases.append(c)
    c = Case("loop_body_layout", "m24")
    c.args = [([8, 8], [["b"], []]), ([8, 8], [[], ["b"]])]
    r, acc, y, w = c.fresh(), c.fresh(), c.fresh(), c.fresh()
    t = ttype([8, 8])
    c.body += [f"{r} = scf.for %iv = %c0 to %c3 step %c1 iter_args({acc} = %arg0) -> ({t}) {{",
               f"  {w} = arith.muli %arg1, %arg1 : {t}",
               f"  {y} = arith.addi {acc}, {w} : {t}",
               f"  scf.yield {y} : {t}",
               "}"]
    c.result, c.result_dims = (r, [8, 8]), [[], []]
    cases.append(c)
    # Attention without softmax: (Q K^T) V per head, heads over "b" (Megatron)
    # or sequence over "b" (context parallel: K and V gathered by the partitioner).
    for name, q_dims, kv_dims in [("attn_heads", [["b"], [], []], [["b"], [], []]),
                                  ("attn_seq", [["a"], ["b"], []], [["a"], [], []])]:
        c = Case(name, "m24")
        hh, sq, dd = 4, 8, 4
        c.args = [([hh, sq, dd], q_dims), ([hh, dd, sq], kv_dims), ([hh, sq, dd], kv_dims)]
        def bmm(lhs, rhs, m, k, n):
            e, f, r = c.fresh(), c.fresh(), c.fresh()
            t = ttype([hh, m, n])
            c.body.extend([f"{e} = tensor.empty() : {t}",
                           f"{f} = linalg.fill ins(%c0_i32 : i32) outs({e} : {t}) -> {t}",
                           f"{r} = linalg.batch_matmul ins({lhs}, {rhs} : {ttype([hh, m, k])}, {ttype([hh, k, n])}) outs({f} : {t}) -> {t}"])
            return r
        scores = bmm("%arg0", "%arg1", sq, dd, sq)
        out = bmm(scores, "%arg2", sq, sq, dd)
        c.result = (out, [hh, sq, dd])
        c.result_dims = q_dims
        cases.append(c)
    # Attention as torch-mlir writes it: (batch, heads) collapsed into one
    # dim for linalg.batch_matmul and expanded back. With one batch row per
    # device the collapsed dim carries both axes and the heads stay split;
    # with two rows (batch 4 over "a") or three (6, with the scores scaled
    # by an arith op on the merged dims between the products) it cannot,
    # and propagation computes the chain on (batch, heads) unmerged.
    for name, bb in [("attn_reshape_heads", 2), ("attn_reshape_two_rows", 4),
                     ("attn_reshape_scaled", 6)]:
        c = Case(name, "m24")
        hh, sq, dd = 4, 4, 4
        dims = [["a"], ["b"], [], []]
        c.args = [([bb, hh, sq, dd], dims), ([bb, hh, dd, sq], dims), ([bb, hh, sq, dd], dims)]
        flat = []
        for i, (shape, _) in enumerate(c.args):
            r = c.fresh()
            c.body.append(f"{r} = tensor.collapse_shape %arg{i} [[0, 1], [2], [3]] : {ttype(shape)} into {ttype([bb * hh] + shape[2:])}")
            flat.append(r)
        def bmm3(lhs, rhs, m, k, n):
            e, f, r = c.fresh(), c.fresh(), c.fresh()
            t = ttype([bb * hh, m, n])
            c.body.extend([f"{e} = tensor.empty() : {t}",
                           f"{f} = linalg.fill ins(%c0_i32 : i32) outs({e} : {t}) -> {t}",
                           f"{r} = linalg.batch_matmul ins({lhs}, {rhs} : {ttype([bb * hh, m, k])}, {ttype([bb * hh, k, n])}) outs({f} : {t}) -> {t}"])
            return r
        scores = bmm3(flat[0], flat[1], sq, dd, sq)
        if name == "attn_reshape_scaled":
            three, scaled = c.fresh(), c.fresh()
            t = ttype([bb * hh, sq, sq])
            c.body.extend([f"{three} = arith.constant dense<3> : {t}",
                           f"{scaled} = arith.muli {scores}, {three} : {t}"])
            scores = scaled
        out = bmm3(scores, flat[2], sq, sq, dd)
        r = c.fresh()
        c.body.append(f"{r} = tensor.expand_shape {out} [[0, 1], [2], [3]] output_shape [{bb}, {hh}, {sq}, {dd}] : {ttype([bb * hh, sq, dd])} into {ttype([bb, hh, sq, dd])}")
        c.result, c.result_dims = (r, [bb, hh, sq, dd]), dims
        cases.append(c)
    # A dim split over two axes expanded into two dims: into [2, 8] the
    # first takes "a" and the second "b"; into [4, 4] "a" cannot split the
    # first down to one row, so the value is resharded.
    for name, shape in [("expand_two_axes", [2, 8]), ("expand_two_axes_uneven", [4, 4])]:
        c = Case(name, "m24")
        c.args = [([16], [["a", "b"]])]
        r = c.fresh()
        c.body.append(f"{r} = tensor.expand_shape %arg0 [[0, 1]] output_shape {shape} : {ttype([16])} into {ttype(shape)}")
        c.result, c.result_dims = (r, shape), [["a"], ["b"]] if shape == [2, 8] else [["a"], []]
        cases.append(c)
    # Masks (i1) that need collectives: gathered whole, and or-, and- or
    # xor-reduced over a split dim (a pending "or", "and" or "xor" on i1,
    # all_reduced as i8, as a min, a max or a sum). The mask is x > low,
    # with inputs in [-3, 3]: "all" of 16 > -3 holds on some rows.
    masks = [("mask_gather", [["a"], ["b"]], None, None, 0),
             ("mask_any", [[], ["a", "b"]], "ori", "false", 0),
             ("mask_all", [[], ["a", "b"]], "andi", "true", -3),
             ("mask_parity", [[], ["b"]], "xori", "false", 0)]
    for name, dims, combine, init, low in masks:
        c = Case(name, "m24")
        t, t1 = ttype([16, 16]), "tensor<16x16xi1>"
        c.args = [([16, 16], dims)]
        z, m = c.fresh(), c.fresh()
        c.body += [f"{z} = arith.constant dense<{low}> : {t}",
                   f"{m} = arith.cmpi sgt, %arg0, {z} : {t}"]
        if name == "mask_gather":
            w, r = c.fresh(), c.fresh()
            c.body += [f"SHARD {w} {m} {t1} [[], []]",
                       f"{r} = arith.extui {w} : {t1} to {t}"]
            c.result, c.result_dims = (r, [16, 16]), [[], []]
        else:
            e, f, a, r = c.fresh(), c.fresh(), c.fresh(), c.fresh()
            c.body += [f"{e} = tensor.empty() : tensor<16xi1>",
                       f"{f} = linalg.fill ins(%{init} : i1) outs({e} : tensor<16xi1>) -> tensor<16xi1>",
                       f"{a} = linalg.reduce ins({m} : {t1}) outs({f} : tensor<16xi1>) dimensions = [1]",
                       "  (%x: i1, %acc: i1) {",
                       f"    %o = arith.{combine} %x, %acc : i1",
                       "    linalg.yield %o : i1",
                       "  }",
                       f"{r} = arith.extui {a} : tensor<16xi1> to {ttype([16])}"]
            c.result, c.result_dims = (r, [16]), [[]]
        cases.append(c)
    # Rank-reducing slices: a row taken out of a tensor split both ways
    # (its columns stay split), and a row put into one split by columns.
    c = Case("row_extract", "m24")
    c.args = [([16, 16], [["a"], ["b"]])]
    r = c.fresh()
    c.body.append(f"{r} = tensor.extract_slice %arg0[3, 0] [1, 16] [1, 1] : {ttype([16, 16])} to {ttype([16])}")
    c.result, c.result_dims = (r, [16]), [["b"]]
    cases.append(c)
    c = Case("row_insert", "m24")
    c.args = [([16, 16], [[], ["a", "b"]]), ([16], [["a", "b"]])]
    r = c.fresh()
    c.body.append(f"{r} = tensor.insert_slice %arg1 into %arg0[5, 0] [1, 16] [1, 1] : {ttype([16])} into {ttype([16, 16])}")
    c.result, c.result_dims = (r, [16, 16]), [[], ["a", "b"]]
    cases.append(c)
    # linalg.softmax along the columns with the rows split (its rule keeps
    # the normalised dim whole); compared as round(1000 * p).
    c = Case("softmax_rows", "m24")
    t, tf = ttype([8, 16]), "tensor<8x16xf32>"
    c.args = [([8, 16], [["a", "b"], []])]
    x, e, p, k, q, r = (c.fresh() for _ in range(6))
    c.body += [f"{x} = arith.sitofp %arg0 : {t} to {tf}",
               f"{e} = tensor.empty() : {tf}",
               f"{p} = linalg.softmax dimension(1) ins({x} : {tf}) outs({e} : {tf}) -> {tf}",
               f"{k} = arith.constant dense<1000.0> : {tf}",
               f"{q} = arith.mulf {p}, {k} : {tf}",
               f"{r} = arith.fptosi {q} : {tf} to {t}"]
    c.result, c.result_dims = (r, [8, 16]), [["a", "b"], []]
    cases.append(c)
    return cases


def transpose(case, v, shape):
    e, t = case.fresh(), case.fresh()
    out = [shape[1], shape[0]]
    case.body += [
        f"{e} = tensor.empty() : {ttype(out)}",
        f"{t} = linalg.transpose ins({v} : {ttype(shape)}) outs({e} : {ttype(out)}) permutation = [1, 0]"]
    return t


def training_suite(seed):
    """A training loop written once on global shapes (issue 30): an MLP's
    forward (x @ W1 plus a bias broadcast over the batch, ReLU, @ W2), the
    error against a target, the backward written out (W2 used plain forward
    and transposed for the input's gradient; the bias's gradient a sum over
    the batch), an SGD step (with momentum in some cases), 3 steps in an
    `scf.for` (or an `scf.while`) carrying the parameters; only the
    arguments are annotated: the plans of DDP, FSDP, HSDP and Megatron TP,
    then random shardings of every argument. Integers: the sums are exact
    in any order, wrapping included."""
    B, H, F = 16, 8, 16
    plans = [
        # plan: (x and target, w1, bias, w2) on (a = 2, b = 4)
        ("ddp", "for", ([["a", "b"], []], [[], []], [[]], [[], []])),
        ("fsdp", "for", ([["a", "b"], []], [["a", "b"], []], [["a", "b"]],
                         [["a", "b"], []])),
        ("tp_only", "for", ([[], []], [[], ["b"]], [["b"]], [["b"], []])),
    ]
    for form in ("for", "while", "momentum"):
        plans.append(("hsdp", form, ([["a", "b"], []], [["b"], []], [["b"]],
                                     [["b"], []])))
        plans.append(("tp", form, ([["a"], []], [[], ["b"]], [["b"]],
                                   [["b"], []])))
    rng = random.Random(seed)
    for i in range(6):
        xd = random_sharding(rng, "m24", [B, H])
        plans.append((f"random{i}", rng.choice(["for", "while", "momentum"]),
                      (xd, random_sharding(rng, "m24", [H, F]),
                       random_sharding(rng, "m24", [F]),
                       random_sharding(rng, "m24", [F, H]))))
    plans = [(p, f, sh, (B, H, F, H)) for p, f, sh in plans]
    # The DeviceMesh tutorial's ToyModel (Linear(10, 10), ReLU,
    # Linear(10, 5)): its dims do not divide by 4 or 8 devices and are
    # padded (a batch of 12 over 8 too).
    for plan, form, sh, sizes in [
            ("toy_hsdp", "for", ([["a", "b"], []], [["b"], []], [["b"]],
                                 [["b"], []]), (8, 10, 10, 5)),
            ("toy_fsdp", "momentum", ([["a", "b"], []], [["a", "b"], []],
                                      [["a", "b"]], [["a", "b"], []]),
             (8, 10, 10, 5)),
            ("toy_tp", "while", ([["a"], []], [[], ["b"]], [["b"]],
                                 [["b"], []]), (8, 10, 10, 5)),
            ("toy_ddp", "for", ([["a", "b"], []], [[], []], [[]], [[], []]),
             (12, 10, 10, 5))]:
        plans.append((plan, form, sh, sizes))
    # Random sizes that 2, 4 or 8 devices may not divide, and random
    # shardings of every argument that need not divide either.
    def uneven_sharding(shape):
        dims = [[] for _ in shape]
        axes = ["a", "b"]
        rng.shuffle(axes)
        for name in axes:
            d = rng.randrange(len(shape) + 1)
            if d < len(shape):
                dims[d].append(name)
        return dims
    for i in range(4):
        B_, H_, F_, O_ = (rng.choice([6, 10, 12, 16]) for _ in range(4))
        xd = uneven_sharding([B_, H_])
        plans.append((f"uneven{i}", rng.choice(["for", "while", "momentum"]),
                      (xd, uneven_sharding([H_, F_]), uneven_sharding([F_]),
                       uneven_sharding([F_, O_])), (B_, H_, F_, O_)))
    cases = []
    for plan, form, (xd, w1d, bd, w2d), (B, H, F, O) in plans:
        c = Case(f"train_{plan}_{form}", "m24")
        c.tags.add("training")
        if B % 8 or H % 8 or F % 8 or O % 8:
            c.tags.add("training, padded")
        c.args = [([B, H], xd), ([B, O], xd), ([H, F], w1d), ([F, O], w2d),
                  ([F], bd)]
        tw1, tw2, tb = ttype([H, F]), ttype([F, O]), ttype([F])
        loop, w1, w2, b1 = (c.fresh() for _ in range(4))
        carried = [(w1, "%arg2", tw1), (w2, "%arg3", tw2), (b1, "%arg4", tb)]
        if form == "momentum":
            for t in (tw1, tw2, tb):
                m, e, z = c.fresh(), c.fresh(), c.fresh()
                c.body += [f"{e} = tensor.empty() : {t}",
                           f"{z} = linalg.fill ins(%c0_i32 : i32) outs({e} : {t}) -> {t}"]
                carried.append((m, z, t))
        types = ", ".join(t for _, _, t in carried)
        if form == "while":
            k = c.fresh()
            c.body += [
                f"{loop}:{len(carried) + 1} = scf.while ({k}_0 = %c0, " +
                ", ".join(f"{n}_0 = {v}" for n, v, _ in carried) +
                f") : (index, {types}) -> (index, {types}) {{",
                f"  {k}_c = arith.cmpi slt, {k}_0, %c3 : index",
                f"  scf.condition({k}_c) {k}_0, " +
                ", ".join(f"{n}_0" for n, _, _ in carried) + f" : index, {types}",
                "} do {",
                f"^bb0({k}: index, " +
                ", ".join(f"{n}: {t}" for n, _, t in carried) + "):"]
        else:
            c.body.append(
                f"{loop}:{len(carried)} = scf.for %it = %c0 to %c3 step %c1 iter_args(" +
                ", ".join(f"{n} = {v}" for n, v, _ in carried) +
                f") -> ({types}) {{")
        xw = matmul(c, "%arg0", w1, B, H, F)
        eb, bb, h = c.fresh(), c.fresh(), c.fresh()
        c.body += [f"{eb} = tensor.empty() : {ttype([B, F])}",
                   f"{bb} = linalg.broadcast ins({b1} : {tb}) outs({eb} : {ttype([B, F])}) dimensions = [0]",
                   f"{h} = arith.addi {xw}, {bb} : {ttype([B, F])}"]
        e, z, a = c.fresh(), c.fresh(), c.fresh()
        c.body += [f"{e} = tensor.empty() : {ttype([B, F])}",
                   f"{z} = linalg.fill ins(%c0_i32 : i32) outs({e} : {ttype([B, F])}) -> {ttype([B, F])}",
                   f"{a} = arith.maxsi {h}, {z} : {ttype([B, F])}"]
        y = matmul(c, a, w2, B, F, O)
        dy = c.fresh()
        c.body.append(f"{dy} = arith.subi {y}, %arg1 : {ttype([B, O])}")
        dw2 = matmul(c, transpose(c, a, [B, F]), dy, F, B, O)
        da = matmul(c, dy, transpose(c, w2, [F, O]), B, O, F)
        pos, dh = c.fresh(), c.fresh()
        c.body += [f"{pos} = arith.cmpi sgt, {h}, {z} : {ttype([B, F])}",
                   f"{dh} = arith.select {pos}, {da}, {z} : tensor<{B}x{F}xi1>, {ttype([B, F])}"]
        dw1 = matmul(c, transpose(c, "%arg0", [B, H]), dh, H, B, F)
        e0, z0, db = c.fresh(), c.fresh(), c.fresh()
        c.body += [f"{e0} = tensor.empty() : {tb}",
                   f"{z0} = linalg.fill ins(%c0_i32 : i32) outs({e0} : {tb}) -> {tb}",
                   f"{db} = linalg.reduce ins({dh} : {ttype([B, F])}) outs({z0} : {tb}) dimensions = [0]",
                   "  (%in: i32, %acc: i32) {",
                   "    %s = arith.addi %in, %acc : i32",
                   "    linalg.yield %s : i32",
                   "  }"]
        updated, moments = [], []
        for i, (w, g, t) in enumerate([(w1, dw1, tw1), (w2, dw2, tw2),
                                       (b1, db, tb)]):
            if form == "momentum":
                mn = c.fresh()
                c.body.append(f"{mn} = arith.addi {carried[3 + i][0]}, {g} : {t}")
                moments.append(mn)
                g = mn
            nw = c.fresh()
            c.body.append(f"{nw} = arith.subi {w}, {g} : {t}")
            updated.append(nw)
        yields = ", ".join(updated + moments)
        off = 0
        if form == "while":
            k1 = c.fresh()
            c.body += [f"{k1} = arith.addi {k}, %c1 : index",
                       f"scf.yield {k1}, {yields} : index, {types}", "}"]
            off = 1
        else:
            c.body += [f"scf.yield {yields} : {types}", "}"]
        # One result: the trained weights' product plus the bias's sum,
        # replicated.
        r = matmul(c, f"{loop}#{off}", f"{loop}#{off + 1}", H, F, O)
        e1, z1, bs, bsb, out = (c.fresh() for _ in range(5))
        c.body += [f"{e1} = tensor.empty() : tensor<i32>",
                   f"{z1} = linalg.fill ins(%c0_i32 : i32) outs({e1} : tensor<i32>) -> tensor<i32>",
                   f"{bs} = linalg.reduce ins({loop}#{off + 2} : {tb}) outs({z1} : tensor<i32>) dimensions = [0]",
                   "  (%in: i32, %acc: i32) {",
                   "    %s = arith.addi %in, %acc : i32",
                   "    linalg.yield %s : i32",
                   "  }",
                   f"{bsb} = linalg.broadcast ins({bs} : tensor<i32>) outs({e1}b : {ttype([H, O])}) dimensions = [0, 1]",
                   f"{out} = arith.addi {r}, {bsb} : {ttype([H, O])}"]
        c.body.insert(len(c.body) - 2, f"{e1}b = tensor.empty() : {ttype([H, O])}")
        c.result = (out, [H, O])
        c.result_dims = [[], []]
        cases.append(c)
    # A flat gradient (FSDP's flat parameter): two pieces' pending sums over
    # the batch inserted into zeros, the buffer split over the devices: one
    # reduce_scatter; with pieces that leave half of the buffer empty, the
    # pieces reduced; a buffer of 12 over 8 devices, padded.
    for name, flat, dims in [("flat_gradient", 12, [["b"]]),
                             ("flat_gradient_sparse", 24, [["a"]]),
                             ("flat_gradient_uneven", 12, [["a", "b"]])]:
        c = Case(name, "m24")
        c.tags.add("training")
        c.args = [([16, 8], [["a", "b"], []]), ([16, 4], [["a", "b"], []])]
        e1, z1, e2, z2, ef, zf, g1, g2, f1, f2 = (c.fresh() for _ in range(10))
        c.body += [f"{e1} = tensor.empty() : {ttype([8])}",
                   f"{z1} = linalg.fill ins(%c0_i32 : i32) outs({e1} : {ttype([8])}) -> {ttype([8])}",
                   f"{e2} = tensor.empty() : {ttype([4])}",
                   f"{z2} = linalg.fill ins(%c0_i32 : i32) outs({e2} : {ttype([4])}) -> {ttype([4])}",
                   f"{g1} = linalg.reduce ins(%arg0 : {ttype([16, 8])}) outs({z1} : {ttype([8])}) dimensions = [0]",
                   "  (%in: i32, %acc: i32) {",
                   "    %s = arith.addi %in, %acc : i32",
                   "    linalg.yield %s : i32",
                   "  }",
                   f"{g2} = linalg.reduce ins(%arg1 : {ttype([16, 4])}) outs({z2} : {ttype([4])}) dimensions = [0]",
                   "  (%in: i32, %acc: i32) {",
                   "    %s = arith.muli %in, %in : i32",
                   "    %t = arith.addi %s, %acc : i32",
                   "    linalg.yield %t : i32",
                   "  }",
                   f"{ef} = tensor.empty() : {ttype([flat])}",
                   f"{zf} = linalg.fill ins(%c0_i32 : i32) outs({ef} : {ttype([flat])}) -> {ttype([flat])}",
                   f"{f1} = tensor.insert_slice {g1} into {zf}[0] [8] [1] : {ttype([8])} into {ttype([flat])}",
                   f"{f2} = tensor.insert_slice {g2} into {f1}[{flat - 4}] [4] [1] : {ttype([4])} into {ttype([flat])}"]
        c.result = (f2, [flat])
        c.result_dims = dims
        cases.append(c)
    # all_to_alls of a dim padded to divide (10 rows over the 4 of "b"): the
    # rows gathered along the concat dim (the last member sends its one row
    # of data), then split again (the blocks for the last member carry one);
    # beside it, 3 features padded to 4 because the bias's are split over
    # "a" (cut before the all_to_all, put back after).
    for name, feat, bias in [("a2a_padded", 4, None), ("a2a_padded_beside", 3, [["a"]])]:
        c = Case(name, "m24")
        c.tags.add("training")
        shape = [10, 8, feat]
        c.args = [(shape, [["b"], [], []])]
        t, sq, out = c.fresh(), c.fresh(), c.fresh()
        c.body += [f"SHARD {t} %arg0 {ttype(shape)} [[], ['b'], []]",
                   f"{sq} = arith.muli {t}, {t} : {ttype(shape)}"]
        if bias:
            c.args.append(([feat], bias))
            e, bb = c.fresh(), c.fresh()
            c.body += [f"{e} = tensor.empty() : {ttype(shape)}",
                       f"{bb} = linalg.broadcast ins(%arg1 : {ttype([feat])}) outs({e} : {ttype(shape)}) dimensions = [0, 1]",
                       f"{out} = arith.addi {sq}, {bb} : {ttype(shape)}"]
        else:
            c.body.append(f"{out} = arith.addi {sq}, %arg0 : {ttype(shape)}")
        c.result = (out, shape)
        c.result_dims = [["b"], [], []]
        cases.append(c)
    return cases


def einsum(case, spec, a, b, sizes):
    """An integer contraction as a linalg.generic, written like einsum:
    "bshd,bthd->bhst" over the loops of the result's letters (parallel) and
    then the others (reductions), `sizes` giving each letter's extent."""
    ins, out = spec.split("->")
    ia, ib = ins.split(",")
    loops = list(out) + [x for x in dict.fromkeys(ia + ib) if x not in out]
    dims = ", ".join(f"d{i}" for i in range(len(loops)))
    def amap(letters):
        return "affine_map<(" + dims + ") -> (" + \
            ", ".join(f"d{loops.index(x)}" for x in letters) + ")>"
    iters = ", ".join('"parallel"' if x in out else '"reduction"' for x in loops)
    ta, tb, to = (ttype([sizes[x] for x in t]) for t in (ia, ib, out))
    e, f, r = case.fresh(), case.fresh(), case.fresh()
    case.body += [
        f"{e} = tensor.empty() : {to}",
        f"{f} = linalg.fill ins(%c0_i32 : i32) outs({e} : {to}) -> {to}",
        f"{r} = linalg.generic {{indexing_maps = [{amap(ia)}, {amap(ib)}, {amap(out)}], "
        f"iterator_types = [{iters}]}} ins({a}, {b} : {ta}, {tb}) outs({f} : {to}) {{",
        "^bb0(%x: i32, %y: i32, %acc: i32):",
        "  %p = arith.muli %x, %y : i32",
        "  %s = arith.addi %acc, %p : i32",
        "  linalg.yield %s : i32",
        f"}} -> {to}"]
    return r


def ulysses_training():
    """DeepSpeed-Ulysses attention trained, written once on global shapes
    (the seed scenario 04 as a training loop): x [B, S, E] split by batch
    over "a" (dp) and by sequence over "b" (sp); q, k, v = x Wq, x Wk, x Wv
    (each [E, heads, d], replicated), constrained to the heads split over
    "b" (the constraint Ulysses is); scores = q k^T per (batch, head), o =
    scores v, constrained back to the sequence split; y = o Wo; the error
    against a target; the backward written out through the attention (the
    gradients of o, v, the scores, q and k, each constrained as its forward
    value is); an SGD step of the four weights; 3 steps in an scf.for. The
    attention is linear (no softmax) so that integers keep the check exact;
    a softmax changes no layout. The expert's plan per step: 8 all_to_alls
    over "b" (q, k, v, o forward; o's gradient, then q's, k's and v's
    backward) and the four weights' gradients all_reduced over both axes,
    in one bucket."""
    B, S, E, H, D = 2, 16, 8, 4, 4
    sizes = {"b": B, "s": S, "t": S, "e": E, "h": H, "d": D, "f": E}
    c = Case("train_ulysses_for", "m24")
    c.tags.add("training")
    seq = [["a"], ["b"], [], []]
    heads = [["a"], [], ["b"], []]
    tx, tw, to = ttype([B, S, E]), ttype([E, H, D]), ttype([H, D, E])
    t4 = ttype([B, S, H, D])
    c.args = [([B, S, E], [["a"], ["b"], []]), ([B, S, E], [["a"], ["b"], []]),
              ([E, H, D], [[], [], []]), ([E, H, D], [[], [], []]),
              ([E, H, D], [[], [], []]), ([H, D, E], [[], [], []])]
    loop = c.fresh()
    names = [c.fresh() for _ in range(4)]
    types = ", ".join([tw, tw, tw, to])
    c.body.append(
        f"{loop}:4 = scf.for %it = %c0 to %c3 step %c1 iter_args(" +
        ", ".join(f"{n} = %arg{2 + i}" for i, n in enumerate(names)) +
        f") -> ({types}) {{")
    wq, wk, wv, wo = names
    def constrain(v, dims):
        r = c.fresh()
        c.body.append(f"SHARD {r} {v} {t4} {dims}")
        return r
    q, k, v = (constrain(einsum(c, "bse,ehd->bshd", "%arg0", w, sizes), heads)
               for w in (wq, wk, wv))
    sc = einsum(c, "bshd,bthd->bhst", q, k, sizes)
    o = constrain(einsum(c, "bhst,bthd->bshd", sc, v, sizes), seq)
    y = einsum(c, "bshd,hdf->bsf", o, wo, sizes)
    dy = c.fresh()
    c.body.append(f"{dy} = arith.subi {y}, %arg1 : {tx}")
    dwo = einsum(c, "bshd,bsf->hdf", o, dy, sizes)
    do = constrain(einsum(c, "bsf,hdf->bshd", dy, wo, sizes), heads)
    dsc = einsum(c, "bshd,bthd->bhst", do, v, sizes)
    dv = constrain(einsum(c, "bhst,bshd->bthd", sc, do, sizes), seq)
    dq = constrain(einsum(c, "bhst,bthd->bshd", dsc, k, sizes), seq)
    dk = constrain(einsum(c, "bhst,bshd->bthd", dsc, q, sizes), seq)
    grads = [einsum(c, "bse,bshd->ehd", "%arg0", g, sizes) for g in (dq, dk, dv)]
    updated = []
    for w, g, t in zip(names, grads + [dwo], [tw, tw, tw, to]):
        nw = c.fresh()
        c.body.append(f"{nw} = arith.subi {w}, {g} : {t}")
        updated.append(nw)
    c.body += [f"scf.yield {', '.join(updated)} : {types}", "}"]
    # One result: the trained weights, contracted to one replicated value.
    r = einsum(c, "ehd,hdf->ef", f"{loop}#0", f"{loop}#3", sizes)
    r2 = einsum(c, "ehd,ehd->e", f"{loop}#1", f"{loop}#2", sizes)
    e, out = c.fresh(), c.fresh()
    te = ttype([E, E])
    c.body += [f"{e} = tensor.empty() : {te}",
               f"{out} = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, "
               f"affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], "
               f"iterator_types = [\"parallel\", \"parallel\"]}} ins({r}, {r2} : {te}, {ttype([E])}) "
               f"outs({e} : {te}) {{",
               "^bb0(%x: i32, %y: i32, %o: i32):",
               "  %s = arith.addi %x, %y : i32",
               "  linalg.yield %s : i32",
               f"}} -> {te}"]
    c.result, c.result_dims = (out, [E, E]), [[], []]
    return [c]


def sp_training():
    """A Megatron-SP MLP trained, written once on global shapes: x [B, S, H]
    split by batch over "a" (dp) and by sequence over "b" (tp); the
    sequence gathered for the MLP by a constraint (Megatron-SP's
    all_gather), h = x W1 (W1 split by columns over "b"), ReLU, y = h W2
    (W2 by rows), constrained back to the sequence split (its
    reduce_scatter); the error against a target; the backward written out
    (the error gathered again, as the reduce_scatter's backward is; the
    weights' gradients); an SGD step; 3 steps in an scf.for. The expert's
    plan per step: 2 all_gathers and 1 reduce_scatter over "b", the two
    weight shards' gradients all_reduced over "a" in one bucket."""
    B, S, H, F = 2, 16, 8, 16
    sizes = {"b": B, "s": S, "h": H, "f": F}
    c = Case("train_sp_for", "m24")
    c.tags.add("training")
    tx, tw1, tw2, th = ttype([B, S, H]), ttype([H, F]), ttype([F, H]), ttype([B, S, F])
    c.args = [([B, S, H], [["a"], ["b"], []]), ([B, S, H], [["a"], ["b"], []]),
              ([H, F], [[], ["b"]]), ([F, H], [["b"], []])]
    loop, w1, w2 = c.fresh(), c.fresh(), c.fresh()
    types = f"{tw1}, {tw2}"
    c.body.append(f"{loop}:2 = scf.for %it = %c0 to %c3 step %c1 iter_args("
                  f"{w1} = %arg2, {w2} = %arg3) -> ({types}) {{")
    xg = c.fresh()
    c.body.append(f"SHARD {xg} %arg0 {tx} {[['a'], [], []]}")
    h = einsum(c, "bsh,hf->bsf", xg, w1, sizes)
    e, z, act = c.fresh(), c.fresh(), c.fresh()
    c.body += [f"{e} = tensor.empty() : {th}",
               f"{z} = linalg.fill ins(%c0_i32 : i32) outs({e} : {th}) -> {th}",
               f"{act} = arith.maxsi {h}, {z} : {th}"]
    y0 = einsum(c, "bsf,fh->bsh", act, w2, sizes)
    y, dy, dyg = c.fresh(), c.fresh(), c.fresh()
    c.body += [f"SHARD {y} {y0} {tx} {[['a'], ['b'], []]}",
               f"{dy} = arith.subi {y}, %arg1 : {tx}",
               f"SHARD {dyg} {dy} {tx} {[['a'], [], []]}"]
    dw2 = einsum(c, "bsf,bsh->fh", act, dyg, sizes)
    da = einsum(c, "bsh,fh->bsf", dyg, w2, sizes)
    pos, dh = c.fresh(), c.fresh()
    c.body += [f"{pos} = arith.cmpi sgt, {h}, {z} : {th}",
               f"{dh} = arith.select {pos}, {da}, {z} : tensor<{B}x{S}x{F}xi1>, {th}"]
    dw1 = einsum(c, "bsh,bsf->hf", xg, dh, sizes)
    n1, n2 = c.fresh(), c.fresh()
    c.body += [f"{n1} = arith.subi {w1}, {dw1} : {tw1}",
               f"{n2} = arith.subi {w2}, {dw2} : {tw2}",
               f"scf.yield {n1}, {n2} : {types}", "}"]
    r = matmul(c, f"{loop}#0", f"{loop}#1", H, F, H)
    c.result, c.result_dims = (r, [H, H]), [[], []]
    return [c]


def pad(case, src, shape, lo, hi, circular=False):
    """tensor.pad of `src` by `lo`/`hi` per dim with zeros; or, `circular`,
    padded with the other end of each dim (a torus): as mesh.circular_pad,
    or, with circular="torch", as torch-mlir writes pad(mode="circular"),
    slices and a tensor.concat per dim. The reference computes a circular
    pad with tensor.generate and modular indices instead."""
    out = case.fresh()
    padded = [d + a + b for d, a, b in zip(shape, lo, hi)]
    if circular:
        rank = len(shape)
        idx = [f"%i{k}_{case.counter}" for k in range(rank)]
        case.body += [f"REFONLY {out} = tensor.generate {{",
                      f"REFONLY ^bb0({', '.join(i + ': index' for i in idx)}):"]
        srcs = []
        for k in range(rank):
            # (i - lo + n) mod n
            case.body += [
                f"REFONLY   %sh{k}_{case.counter} = arith.constant {shape[k] - lo[k]} : index",
                f"REFONLY   %n{k}_{case.counter} = arith.constant {shape[k]} : index",
                f"REFONLY   %t{k}_{case.counter} = arith.addi {idx[k]}, %sh{k}_{case.counter} : index",
                f"REFONLY   %s{k}_{case.counter} = arith.remui %t{k}_{case.counter}, %n{k}_{case.counter} : index"]
            srcs.append(f"%s{k}_{case.counter}")
        case.body += [
            f"REFONLY   %e_{case.counter} = tensor.extract {src}[{', '.join(srcs)}] : {ttype(shape)}",
            f"REFONLY   tensor.yield %e_{case.counter} : i32",
            f"REFONLY }} : {ttype(padded)}"]
        if circular != "torch":
            case.body.append(
                f"ANNONLY {out} = mesh.circular_pad {src} low = {lo} high = {hi} : "
                f"{ttype(shape)} -> {ttype(padded)}")
            return out, padded
        cur, cur_shape = src, list(shape)
        for k in range(rank):
            if not lo[k] and not hi[k]:
                continue
            parts, types = [], []
            for offset, size in ((cur_shape[k] - lo[k], lo[k]), (None, None), (0, hi[k])):
                if offset is None:
                    parts.append(cur)
                    types.append(ttype(cur_shape))
                    continue
                if not size:
                    continue
                part, part_shape = case.fresh(), list(cur_shape)
                part_shape[k] = size
                offsets = [offset if d == k else 0 for d in range(rank)]
                case.body.append(
                    f"ANNONLY {part} = tensor.extract_slice {cur}[{', '.join(map(str, offsets))}] "
                    f"[{', '.join(map(str, part_shape))}] [{', '.join('1' for _ in shape)}] : "
                    f"{ttype(cur_shape)} to {ttype(part_shape)}")
                parts.append(part)
                types.append(ttype(part_shape))
            nxt = out if all(not lo[d] and not hi[d] for d in range(k + 1, rank)) else case.fresh()
            cur_shape[k] += lo[k] + hi[k]
            case.body.append(
                f"ANNONLY {nxt} = tensor.concat dim({k}) {', '.join(parts)} : "
                f"({', '.join(types)}) -> {ttype(cur_shape)}")
            cur = nxt
        return out, padded
    idx = ", ".join(f"%i{k}: index" for k in range(len(shape)))
    case.body += [
        f"{out} = tensor.pad {src} low[{', '.join(map(str, lo))}] high[{', '.join(map(str, hi))}] {{",
        f"^bb0({idx}):",
        "  tensor.yield %c0_i32 : i32",
        f"}} : {ttype(shape)} to {ttype(padded)}"]
    return out, padded


def shifted(case, src, padded, offsets, shape):
    """The slice of `src` at `offsets` with the shape `shape`."""
    out = case.fresh()
    case.body.append(
        f"{out} = tensor.extract_slice {src}[{', '.join(map(str, offsets))}] "
        f"[{', '.join(map(str, shape))}] [{', '.join('1' for _ in shape)}] : "
        f"{ttype(padded)} to {ttype(shape)}")
    return out


def stencil(case, shape, steps, periodic=False):
    """`steps` Jacobi steps in an scf.for: each point becomes the mean of
    its 2 * rank neighbours (zero outside the grid, or, `periodic`, those
    across the other end: a torus) plus a source term (%arg1), on a tensor
    padded by one on every side."""
    rank = len(shape)
    t = ttype(shape)
    loop, u, steps_c, n_c = case.fresh(), case.fresh(), case.fresh(), case.fresh()
    case.body += [f"{steps_c} = arith.constant {steps} : index",
                  f"{n_c} = arith.constant dense<{2 * rank}> : {t}",
                  f"{loop} = scf.for %it = %c0 to {steps_c} step %c1 iter_args({u} = %arg0) -> ({t}) {{"]
    p, padded = pad(case, u, shape, [1] * rank, [1] * rank, periodic)
    total = None
    for d in range(rank):
        for off in (0, 2):
            offsets = [1] * rank
            offsets[d] = off
            v = shifted(case, p, padded, offsets, shape)
            if total is None:
                total = v
            else:
                nxt = case.fresh()
                case.body.append(f"{nxt} = arith.addi {total}, {v} : {t}")
                total = nxt
    mean, new = case.fresh(), case.fresh()
    case.body += [f"{mean} = arith.divsi {total}, {n_c} : {t}",
                  f"{new} = arith.addi {mean}, %arg1 : {t}",
                  f"scf.yield {new} : {t}",
                  "}"]
    return loop


def conv(case, src, in_shape, kernel, out_shape, strides, dilations):
    e, f, r = case.fresh(), case.fresh(), case.fresh()
    ot = ttype(out_shape)
    case.body += [
        f"{e} = tensor.empty() : {ot}",
        f"{f} = linalg.fill ins(%c0_i32 : i32) outs({e} : {ot}) -> {ot}",
        f"{r} = linalg.conv_2d_nhwc_hwcf {{dilations = dense<{dilations}> : tensor<2xi64>, "
        f"strides = dense<{strides}> : tensor<2xi64>}} ins({src}, %arg1 : {ttype(in_shape)}, "
        f"{ttype(kernel)}) outs({f} : {ot}) -> {ot}"]
    return r


def halo_suite():
    """Stencils and convolutions sharded on spatial dims: halos exchanged
    with the neighbours (issue 13), and the general path that gathers and
    slices when a layout with halos meets one without."""
    cases = []
    # Jacobi, 100 steps: 2-D on (2, 4), 3-D on (2, 2, 2), 1-D on (8); with
    # walls (zero padding) and on a torus (periodic: mesh.circular_pad).
    for name, mesh, shape, dims, periodic in [
            ("jacobi2d", "m24", [16, 16], [["a"], ["b"]], False),
            ("jacobi2d_ab", "m24", [16, 8], [["a", "b"], []], False),
            ("heat3d", "m222", [8, 8, 8], [["p"], ["q"], ["r"]], False),
            ("jacobi1d", "m8", [32], [["x"]], False),
            ("torus2d", "m24", [16, 16], [["a"], ["b"]], True),
            ("torus2d_ba", "m24", [16, 8], [["b", "a"], []], True),
            ("torus3d", "m222", [8, 8, 8], [["p"], ["q"], ["r"]], True),
            ("ring1d", "m8", [32], [["x"]], True),
            # One device per block row along "a" and the whole of dim 1:
            # dim 1 wraps on each device, dim 0 across two.
            ("torus2d_rows", "m24", [16, 16], [["a"], []], True),
            # As torch-mlir writes pad(mode="circular"): raised to one
            # mesh.circular_pad by propagation.
            ("torus2d_torch", "m24", [16, 16], [["a"], ["b"]], "torch")]:
        c = Case(name, mesh)
        c.args = [(shape, dims), (shape, dims)]
        c.result = (stencil(c, shape, 100, periodic), shape)
        c.result_dims = dims
        cases.append(c)
    # conv_2d_nhwc_hwcf on a zero-padded input: H (and W) sharded, strides
    # 1 and 2, dilation 2.
    n, h, w, ci, co = 2, 16, 16, 3, 4
    for name, in_dims, pads, stride, dil in [
            ("conv_h", [[], ["b"], [], []], (1, 0), 1, 1),
            ("conv_hw", [[], ["a"], ["b"], []], (1, 1), 1, 1),
            ("conv_hw_s2", [[], ["a"], ["b"], []], (1, 1), 2, 1),
            ("conv_hw_d2", [[], ["a"], ["b"], []], (2, 2), 1, 2)]:
        c = Case(name, "m24")
        k = 3
        c.args = [([n, h, w, ci], in_dims), ([k, k, ci, co], None)]
        ph, pw = pads
        p, padded = pad(c, "%arg0", [n, h, w, ci], [0, ph, pw, 0], [0, ph, pw, 0])
        reach = dil * (k - 1) + 1
        out = [n, (padded[1] - reach) // stride + 1, (padded[2] - reach) // stride + 1, co]
        c.result = (conv(c, p, padded, [k, k, ci, co], out, stride, dil), out)
        c.result_dims = in_dims
        cases.append(c)
    # A convolution without padding whose input blocks do not line up with
    # its output blocks (18 rows over 2, 16 outputs, both annotated): the
    # input is gathered and each device slices its block and halo.
    c = Case("conv_valid", "m24")
    c.args = [([n, 18, w, ci], [[], ["a"], [], []]), ([3, 3, ci, co], None)]
    out = [n, 16, w - 2, co]
    c.result = (conv(c, "%arg0", [n, 18, w, ci], [3, 3, ci, co], out, 1, 1), out)
    c.result_dims = [[], ["a"], [], []]
    cases.append(c)
    # Valid convolutions (no padding) on an input split into blocks along
    # H: the output rows are padded to the blocks the input's blocks give
    # (16 rows over 4: 14 outputs in blocks of 4), each device exchanging a
    # halo with its neighbour instead of gathering. The result's own
    # annotation does not divide (padded signature); stride 2; two in a
    # row; and a sum over the output, whose padded rows are masked.
    for name, stride, in_dims, out_dims in [
            ("conv_valid_h14", 1, [[], ["b"], [], []], [[], ["b"], [], []]),
            ("conv_valid_s2", 2, [[], ["b"], [], []], [[], [], [], []]),
            ("conv_valid_ab", 1, [[], ["a", "b"], [], []], [[], [], [], []]),
            # H over 2 (its 14 outputs divide: the input's rows shifted to
            # their blocks), W over 4 (6 outputs of 8: padded, a halo).
            ("conv_valid_hw", 1, [[], ["a"], ["b"], []], [[], ["a"], ["b"], []])]:
        c = Case(name, "m24")
        c.args = [([n, h, 8, ci], in_dims), ([3, 3, ci, co], None)]
        out = [n, (h - 3) // stride + 1, (8 - 3) // stride + 1, co]
        c.result = (conv(c, "%arg0", [n, h, 8, ci], [3, 3, ci, co], out, stride, 1), out)
        c.result_dims = out_dims
        cases.append(c)
    # Valid convolutions whose output rows divide but whose blocks do not
    # line up with the input's (16 rows over 2, 14 outputs in blocks of 7;
    # a 5x5 kernel, or 3x3 with dilation 2, on 16 rows over 4: 12 outputs
    # in blocks of 3): each device takes the rows its window reaches from
    # its neighbours' blocks (two permutes), nothing gathered.
    for name, k, dil, in_dims in [
            ("conv_valid_h2", 3, 1, [[], ["a"], [], []]),
            ("conv_valid_k5", 5, 1, [[], ["b"], [], []]),
            ("conv_valid_dil2", 3, 2, [[], ["b"], [], []])]:
        c = Case(name, "m24")
        reach = dil * (k - 1) + 1
        c.args = [([n, h, 8, ci], in_dims), ([k, k, ci, co], None)]
        out = [n, h - reach + 1, 8 - reach + 1, co]
        c.result = (conv(c, "%arg0", [n, h, 8, ci], [k, k, ci, co], out, 1, dil), out)
        c.result_dims = in_dims
        cases.append(c)
    # The user's own zero padding after a valid convolution keeps its zeros
    # (not the padded loop's rows).
    c = Case("conv_valid_user_pad", "m24")
    c.args = [([n, h, 8, ci], [[], ["b"], [], []]), ([3, 3, ci, co], None)]
    o = conv(c, "%arg0", [n, h, 8, ci], [3, 3, ci, co], [n, h - 2, 6, co], 1, 1)
    p, padded = pad(c, o, [n, h - 2, 6, co], [0, 0, 0, 0], [0, 2, 0, 0])
    c.result, c.result_dims = (p, padded), [[], ["b"], [], []]
    cases.append(c)
    c = Case("conv_valid_stack_sum", "m24")
    c.args = [([n, h, 8, ci], [[], ["b"], [], []]), ([3, 3, ci, ci], None)]
    o1 = conv(c, "%arg0", [n, h, 8, ci], [3, 3, ci, ci], [n, h - 2, 6, ci], 1, 1)
    o2 = conv(c, o1, [n, h - 2, 6, ci], [3, 3, ci, ci], [n, h - 4, 4, ci], 1, 1)
    e, f, r = c.fresh(), c.fresh(), c.fresh()
    c.body += [
        f"{e} = tensor.empty() : {ttype([n, ci])}",
        f"{f} = linalg.fill ins(%c0_i32 : i32) outs({e} : {ttype([n, ci])}) -> {ttype([n, ci])}",
        f"{r} = linalg.reduce ins({o2} : {ttype([n, h - 4, 4, ci])}) outs({f} : {ttype([n, ci])}) dimensions = [1, 2]",
        "  (%in: i32, %acc: i32) {",
        "    %s = arith.addi %in, %acc : i32",
        "    linalg.yield %s : i32",
        "  }"]
    c.result, c.result_dims = (r, [n, ci]), [[], []]
    cases.append(c)
    # A periodic window of 4 (reach 2 left, 1 right) on a ring of 8 blocks
    # of 4: the halos are as wide as asked, not one.
    c = Case("ring_wide", "m8")
    c.args = [([32, 4], [["x"], []])]
    p, padded = pad(c, "%arg0", [32, 4], [2, 0], [1, 0], circular=True)
    total = None
    for off in (0, 1, 3):
        w = shifted(c, p, padded, [off, 0], [32, 4])
        if total is not None:
            nxt = c.fresh()
            c.body.append(f"{nxt} = arith.addi {total}, {w} : {ttype([32, 4])}")
            w = nxt
        total = w
    c.result, c.result_dims = (total, [32, 4]), [["x"], []]
    cases.append(c)
    # Shifted slices of a padded tensor, one of them wanted whole.
    c = Case("halo_gathered", "m24")
    shape = [16, 16]
    c.args = [(shape, [["a"], ["b"]])]
    p, padded = pad(c, "%arg0", shape, [1, 1], [1, 1])
    v1 = shifted(c, p, padded, [0, 1], shape)
    # This slice is asked for whole: the padded tensor's halos are dropped
    # (each device's block gathered, the last one's halo broadcast).
    c.body[-1] = c.body[-1].replace(" : ", " {ANN:[[], []]} : ", 1)
    v2 = shifted(c, p, padded, [2, 2], shape)
    s = c.fresh()
    c.body.append(f"{s} = arith.subi {v1}, {v2} : {ttype(shape)}")
    c.result = (s, shape)
    c.result_dims = [[], []]
    cases.append(c)
    return cases


def factorizations(n, parts):
    """The ordered ways to write n as a product of `parts` factors (factors
    of 1 included: a reshape may add size-1 dims)."""
    if parts == 1:
        return [[n]]
    return [[f] + rest for f in range(1, n + 1) if n % f == 0
            for rest in factorizations(n // f, parts - 1)]


def collapse(case, v, s, groups):
    r, t = case.fresh(), [prod(s[d] for d in g) for g in groups]
    case.tags.add("collapse_shape")
    case.body.append(f"{r} = tensor.collapse_shape {v} {groups} : {ttype(s)} into {ttype(t)}")
    return r, t


def expand(case, v, s, d, sizes):
    """Dim d of v (shape s) expanded into `sizes`."""
    groups, k = [], 0
    for i in range(len(s)):
        n = len(sizes) if i == d else 1
        groups.append(list(range(k, k + n)))
        k += n
    t = s[:d] + list(sizes) + s[d + 1:]
    r = case.fresh()
    case.tags.add("expand_shape")
    if sizes[0] == 1:
        case.tags.add("a size-1 major dim")
    case.body.append(
        f"{r} = tensor.expand_shape {v} {groups} output_shape "
        f"[{', '.join(map(str, t))}] : {ttype(s)} into {ttype(t)}")
    return r, t


def reshape_choices(s):
    """The reshapes of a value of shape s, as ("collapse", groups) or
    ("expand", dim, sizes): collapses of 2 or 3 adjacent dims, expansions of
    one dim into 2 or 3 (up to rank 4)."""
    rank, out = len(s), []
    for n in (2, 3):
        for start in range(rank - n + 1):
            out.append(("collapse", [[d] for d in range(start)] +
                        [list(range(start, start + n))] +
                        [[d] for d in range(start + n, rank)]))
    for d in range(rank):
        for parts in (2, 3):
            if rank + parts - 1 <= 4:
                out += [("expand", d, f) for f in factorizations(s[d], parts)]
    return out


def apply_reshape(case, v, s, choice):
    if choice[0] == "collapse":
        return collapse(case, v, s, choice[1])
    return expand(case, v, s, choice[1], choice[2])


def random_reshape(rng, case, v, s):
    """A random reshape of v (shape s), half of them collapses; None if
    there is none."""
    choices = reshape_choices(s)
    collapses = [c for c in choices if c[0] == "collapse"]
    expands = [c for c in choices if c[0] == "expand"]
    if not choices:
        return None
    kind = collapses if collapses and (not expands or rng.random() < 0.5) else expands
    # Now and then a leading size-1 dim (a batch of one).
    ones = [c for c in kind if c[0] == "expand" and c[2][0] == 1]
    if ones and rng.random() < 0.25:
        kind = ones
    return apply_reshape(case, v, s, rng.choice(kind))


def as_2d(rng, case, v, s):
    """v reshaped to rank 2 (for the ops written for matrices); None if
    there is no such reshape."""
    if len(s) == 2:
        return v, s
    rank = len(s)
    choices = [("collapse", [list(range(cut)), list(range(cut, rank))])
               for cut in range(1, rank)]
    if rank == 1:
        choices = [("expand", 0, f) for f in factorizations(s[0], 2)]
    return apply_reshape(case, v, s, rng.choice(choices)) if choices else None


def axis_subsets(axes, n):
    """Ordered non-empty lists of distinct axes whose devices divide n."""
    out = []
    for k in range(1, len(axes) + 1):
        for sub in itertools.permutations(axes, k):
            if n % prod(size for _, size in sub) == 0:
                out.append(list(sub))
    return out


def split_reshape(rng, case, mesh, v, s):
    """A reshape whose group's major dim is split whole by some axes, so
    that the narrow dim carries those axes and the next dim's: either
    dim d expanded into [g, n / g], constrained so that g is split by
    axes of g devices and n / g by others, and collapsed back; or dim d
    constrained to carry several axes and then expanded into [g, n / g]
    with g the devices of the major ones. None if there is none."""
    d = rng.randrange(len(s))
    n = s[d]
    subs = axis_subsets(mesh_axes(mesh), n)
    if not subs:
        return random_reshape(rng, case, v, s)
    # Mostly a major dim that leaves axes for the next dim.
    partial = [sub for sub in subs if len(sub) < len(mesh_axes(mesh))]
    major = rng.choice(partial if partial and rng.random() < 0.75 else subs)
    g = prod(size for _, size in major)
    rest = [a for a in mesh_axes(mesh) if a not in major]
    minors = axis_subsets(rest, n // g)
    minor = rng.choice(minors) if minors and rng.random() < 0.85 else []
    case.tags.add("a reshape's major dim split whole" +
                  (", the narrow dim over several axes" if minor else ""))
    if rng.random() < 0.5:
        w, t = expand(case, v, s, d, [g, n // g])
        dims = [[] for _ in t]
        dims[d] = [a for a, _ in major]
        dims[d + 1] = [a for a, _ in minor]
        c = case.fresh()
        case.body.append(f"SHARD {c} {w} {ttype(t)} {dims!r}")
        groups = [[i] for i in range(d)] + [[d, d + 1]] + \
            [[i] for i in range(d + 2, len(t))]
        return collapse(case, c, t, groups)
    dims = [[] for _ in s]
    dims[d] = [a for a, _ in major + minor]
    c = case.fresh()
    case.body.append(f"SHARD {c} {v} {ttype(s)} {dims!r}")
    return expand(case, c, s, d, [g, n // g])


def random_window(rng, n, whole=0.5):
    """(offset, size, stride) of a dim of n: the whole dim, or a window (a
    power of two or a few less than n, stride 1 or 2)."""
    if n == 1 or rng.random() < whole:
        return 0, n, 1
    stride = 2 if rng.random() < 0.25 else 1
    sizes = [k for k in (1, 2, 4, 8, 16, n - 1, n - 2, n - 3)
             if 1 <= k < n and (k - 1) * stride + 1 <= n]
    if not sizes:
        return 0, n, 1
    size = rng.choice(sizes)
    offset = rng.randint(0, n - ((size - 1) * stride + 1))
    return offset, size, stride


def slice_text(offsets, sizes, strides):
    return (f"[{', '.join(map(str, offsets))}] [{', '.join(map(str, sizes))}] "
            f"[{', '.join(map(str, strides))}]")


def random_extract(rng, case, v, s, drop="random"):
    """A random extract_slice of v: each dim whole or a window, and dim
    `drop` (by default, by chance, a random one) taken at a single index and
    dropped. Returns the slice, its shape and the dim dropped (or None)."""
    rank = len(s)
    windows = [random_window(rng, n) for n in s]
    if drop == "random":
        drop = None
        if rank >= 2 and rng.random() < 0.3:
            ones = [d for d in range(rank) if s[d] == 1]
            drop = rng.choice(ones) if ones and rng.random() < 0.6 else rng.randrange(rank)
    if drop is not None:
        windows[drop] = (rng.randrange(s[drop]), 1, 1)
    if drop is None and all(w == (0, n, 1) for w, n in zip(windows, s)):
        d = rng.randrange(rank)
        if s[d] > 1:
            windows[d] = random_window(rng, s[d], whole=0)
    offsets, sizes, strides = zip(*windows)
    t = [k for d, k in enumerate(sizes) if d != drop]
    r = case.fresh()
    case.tags.add("extract_slice")
    if drop is not None:
        case.tags.add("a rank-reducing slice")
    if any(w[1] < n for w, n in zip(windows, s)):
        case.tags.add("a window")
    if 2 in strides:
        case.tags.add("a slice with stride 2")
    case.body.append(f"{r} = tensor.extract_slice {v}{slice_text(offsets, sizes, strides)} : "
                     f"{ttype(s)} to {ttype(t)}")
    return r, t, drop


def random_insert(rng, case, v, w, s):
    """A window of w (shape s, some dims whole, maybe one dim dropped)
    inserted into v (shape s) at other offsets, with stride 1 or 2."""
    rank = len(s)
    drop = rng.randrange(rank) if rank >= 2 and rng.random() < 0.3 else None
    part, pshape, drop = random_extract(rng, case, w, s, drop)
    sizes = list(pshape)
    if drop is not None:
        sizes.insert(drop, 1)
    offsets, strides = [], []
    for n, k in zip(s, sizes):
        stride = 2 if k < n and (k - 1) * 2 + 1 <= n and rng.random() < 0.3 else 1
        offsets.append(rng.randint(0, n - ((k - 1) * stride + 1)))
        strides.append(stride)
    r = case.fresh()
    case.tags.add("insert_slice")
    if 2 in strides:
        case.tags.add("a slice with stride 2")
    case.body.append(f"{r} = tensor.insert_slice {part} into {v}{slice_text(offsets, sizes, strides)} : "
                     f"{ttype(pshape)} into {ttype(s)}")
    return r, s


def reduce_case(name, mesh, shape, dims, result_dims, combiner="addi",
                init="%c0_i32"):
    """A reduction of the last dim of %arg0."""
    c = Case(name, mesh)
    c.args = [(shape, dims)]
    t = shape[:-1]
    e, f, r = c.fresh(), c.fresh(), c.fresh()
    if init != "%c0_i32":
        c.body.append(f"%init = arith.constant {init} : i32")
        init = "%init"
    c.body += [
        f"{e} = tensor.empty() : {ttype(t)}",
        f"{f} = linalg.fill ins({init} : i32) outs({e} : {ttype(t)}) -> {ttype(t)}",
        f"{r} = linalg.reduce ins(%arg0 : {ttype(shape)}) outs({f} : {ttype(t)}) dimensions = [{len(shape) - 1}]",
        "  (%in: i32, %acc: i32) {",
        f"    %s = arith.{combiner} %in, %acc : i32",
        "    linalg.yield %s : i32",
        "  }"]
    c.result, c.result_dims = (r, t), result_dims
    return c


def dynamic_suite():
    """Meshes with a `?` axis, sized when the program starts: per-device
    types are dynamic where a dim is split over it, and values gathered
    back to whole get their static types again."""
    # Every matmul sharding on (2, ?), and each of m, k, n over (?).
    cases = matmul_suite("mq2q", "mmq")
    for dim in "mkn":
        c = Case(f"mmq8_{dim}", "mq8")
        dims = {d: (["x"] if d == dim else []) for d in "mkn"}
        c.args = [([16, 16], [dims["m"], dims["k"]]), ([16, 8], [dims["k"], dims["n"]])]
        c.result = (matmul(c, "%arg0", "%arg1", 16, 16, 8), [16, 8])
        c.result_dims = [dims["m"], dims["n"]]
        cases.append(c)
    # Reductions over a dim split by the `?` axis: a partial sum (or max)
    # reduced whole, or scattered.
    cases += [
        reduce_case("sumq_whole", "mq2q", [16, 16], [[], ["b"]], [[]]),
        reduce_case("sumq_scatter", "mq2q", [16, 16], [[], ["b"]], [["b"]]),
        reduce_case("sumq8_whole", "mq8", [16, 16], [[], ["x"]], [[]]),
        reduce_case("sumqq4", "mqq4", [8, 16], [["a"], ["b"]], [[]]),
        reduce_case("maxq_whole", "mq2q", [8, 16], [["a"], ["b"]], [["a"]],
                    "maxsi", "-2147483648")]
    # Reshapes: a collapse whose group's major dim is split whole by "a" and
    # the next by "b" (the narrow dim then carries both), an expand whose
    # major dim takes both axes, and through 1-D and back over (?).
    c = Case("collapseq", "mq2q")
    c.args = [([2, 8, 4], [["a"], ["b"], []])]
    c.result = (collapse(c, "%arg0", [2, 8, 4], [[0, 1], [2]])[0], [16, 4])
    c.result_dims = [["a", "b"], []]
    cases.append(c)
    c = Case("expandq", "mq2q")
    c.args = [([16, 4], [["a", "b"], []])]
    c.result = (expand(c, "%arg0", [16, 4], 0, [8, 2])[0], [8, 2, 4])
    c.result_dims = [["a", "b"], [], []]
    cases.append(c)
    # The expand the other way: the major dim (2) is smaller than "a" x "b",
    # which propagation must not give it.
    c = Case("expandq_small", "mq2q")
    c.args = [([16, 4], [["a", "b"], []])]
    c.result = (expand(c, "%arg0", [16, 4], 0, [2, 8])[0], [2, 8, 4])
    c.result_dims = [["a"], ["b"], []]
    cases.append(c)
    c = Case("reshapeq8", "mq8")
    c.args = [([16, 8], [["x"], []])]
    f, _ = collapse(c, "%arg0", [16, 8], [[0, 1]])
    c.result = (expand(c, f, [128], 0, [8, 16])[0], [8, 16])
    c.result_dims = [["x"], []]
    cases.append(c)
    # Gathered back to whole: the static type is restored for a static
    # consumer (an unannotated argument, a matmul), and for the result.
    c = Case("gatherq_add", "mq2q")
    c.args = [([16, 8], [["b"], []]), ([16, 8], None)]
    sq, w, r = c.fresh(), c.fresh(), c.fresh()
    c.body += [f"{sq} = arith.muli %arg0, %arg0 : {ttype([16, 8])}",
               f"SHARD {w} {sq} {ttype([16, 8])} [[], []]",
               f"{r} = arith.addi {w}, %arg1 : {ttype([16, 8])}"]
    c.result, c.result_dims = (r, [16, 8]), [[], []]
    cases.append(c)
    c = Case("gatherq_matmul", "mq8")
    c.args = [([16, 16], [["x"], []]), ([16, 8], None)]
    w = c.fresh()
    c.body.append(f"SHARD {w} %arg0 {ttype([16, 16])} [[], []]")
    c.result, c.result_dims = (matmul(c, w, "%arg1", 16, 16, 8), [16, 8]), None
    cases.append(c)
    c = Case("gatherq_result", "mqq4")
    c.args = [([8, 16], [["a"], ["b"]])]
    r = c.fresh()
    c.body.append(f"{r} = arith.addi %arg0, %arg0 : {ttype([8, 16])}")
    c.result, c.result_dims = (r, [8, 16]), [[], []]
    cases.append(c)
    # A loop carrying a value split over the `?` axis, and a Jacobi stencil
    # on (2, ?): halos on "a", dim 1 whole (no halos over a `?` axis).
    c = Case("loopq", "mq2q")
    c.args = [([16, 8], [["b"], []]), ([16, 8], [["b"], []])]
    r, acc, y = c.fresh(), c.fresh(), c.fresh()
    c.body += [
        f"{r} = scf.for %it = %c0 to %c3 step %c1 iter_args({acc} = %arg0) -> ({ttype([16, 8])}) {{",
        f"  {y} = arith.addi {acc}, %arg1 : {ttype([16, 8])}",
        f"  scf.yield {y} : {ttype([16, 8])}",
        "}"]
    c.result, c.result_dims = (r, [16, 8]), [["b"], []]
    cases.append(c)
    c = Case("jacobiq", "mq2q")
    c.args = [([16, 16], [["a"], ["b"]]), ([16, 16], [["a"], ["b"]])]
    c.result = (stencil(c, [16, 16], 10), [16, 16])
    c.result_dims = [["a"], ["b"]]
    cases.append(c)
    return cases


def random_case(rng, index, kinds):
    """A random program on a random mesh; `kinds` are the optional kinds
    of op it may use (KINDS)."""
    static = [m for m in MESHES if m not in DYNAMIC_MESHES]
    if "dynamic" in kinds and rng.random() < 0.3:
        mesh = rng.choice(DYNAMIC_MESHES)
    else:
        mesh = rng.choice(static)
    c = Case(f"rand{index}", mesh)
    if mesh in DYNAMIC_MESHES:
        c.tags.add("a `?` mesh")
    sizes = [8, 16]
    if "reshape" in kinds and rng.random() < 0.15:
        # A rank-3 start, e.g. [2, 8, 4]: its random sharding may split
        # a group's major dim whole before a collapse.
        shape = rng.choice([[2, 8, 4], [4, 4, 8], [1, 8, 16], [2, 4, 16],
                            [8, 2, 8], [2, 2, 16]])
    else:
        shape = [rng.choice(sizes), rng.choice(sizes)]
    nargs = rng.randint(1, 3)
    pool = []
    for i in range(nargs):
        s = list(shape) if i == 0 or rng.random() < 0.7 else list(reversed(shape))
        dims = random_sharding(rng, mesh, s) if rng.random() < 0.85 else None
        c.args.append((s, dims))
        pool.append((f"%arg{i}", s))

    def matrix(v, s):
        """A rank-2 value of the pool, or v reshaped to one (None if there
        is no such reshape)."""
        two = [p for p in pool if len(p[1]) == 2]
        if len(s) == 2:
            return v, s
        if two and rng.random() < 0.7:
            return rng.choice(two)
        return as_2d(rng, c, v, s) or (rng.choice(two) if two else None)

    for _ in range(rng.randint(1, 6)):
        kind = rng.random()
        # Mostly the latest value: chains of ops whose results reach the
        # result (which is the last value).
        v, s = pool[-1] if rng.random() < 0.5 else rng.choice(pool)
        same = [p for p in pool if p[1] == s]
        if kind < 0.36:
            w, _ = rng.choice(same)
            op = rng.choice(["addi", "subi", "muli", "maxsi"])
            r = c.fresh()
            c.body.append(f"{r} = arith.{op} {v}, {w} : {ttype(s)}")
            pool.append((r, s))
        elif kind < 0.52:
            m = matrix(v, s)
            if m is None:
                continue
            v, s = m
            n = rng.choice(sizes)
            w = f"%arg{len(c.args)}"
            wdims = random_sharding(rng, mesh, [s[1], n]) if rng.random() < 0.5 else None
            c.args.append(([s[1], n], wdims))
            r = matmul(c, v, w, s[0], s[1], n)
            pool.append((r, [s[0], n]))
        elif kind < 0.62:
            if "reshape" not in kinds:
                # As before reshapes were random: through 1-D and back.
                m = matrix(v, s)
                if m is None:
                    continue
                v, s = m
                f, _ = collapse(c, v, s, [[0, 1]])
                pool.append(expand(c, f, [s[0] * s[1]], 0, [s[0] * 2, s[1] // 2]))
            elif rng.random() < 0.45:
                r = split_reshape(rng, c, mesh, v, s)
                if r:
                    pool.append(r)
            else:
                r = random_reshape(rng, c, v, s)
                if r:
                    pool.append(r)
        elif kind < 0.72:
            if "slice" not in kinds and s[-1] >= 2:
                # As before: the right half of the last dim.
                t = s[:-1] + [s[-1] // 2]
                r = c.fresh()
                c.body.append(f"{r} = tensor.extract_slice {v}"
                              f"{slice_text([0] * (len(s) - 1) + [t[-1]], t, [1] * len(s))} : "
                              f"{ttype(s)} to {ttype(t)}")
                pool.append((r, t))
            elif "slice" not in kinds:
                continue
            elif rng.random() < 0.6:
                pool.append(random_extract(rng, c, v, s)[:2])
            else:
                w, _ = rng.choice(same)
                pool.append(random_insert(rng, c, v, w, s))
        elif kind < 0.75:
            # A concatenation of two values along a random dim.
            w, _ = rng.choice(same)
            d = rng.randrange(len(s))
            t = list(s)
            t[d] *= 2
            r = c.fresh()
            c.body.append(f"{r} = tensor.concat dim({d}) {v}, {w} : ({ttype(s)}, {ttype(s)}) -> {ttype(t)}")
            pool.append((r, t))
        elif kind < 0.80:
            # A loop carrying a value, or a branch (scf.for / scf.while /
            # scf.if).
            w, _ = rng.choice(same)
            r, y = c.fresh(), c.fresh()
            roll = rng.random()
            if 0.45 <= roll < 0.6:
                # A while loop: the value and a counter through both regions.
                acc, k, go, acc2, k2, k3 = (c.fresh() for _ in range(6))
                trips = rng.randint(1, 3)
                t = ttype(s)
                c.body += [
                    f"{r}:2 = scf.while ({acc} = {v}, {k} = %c0) : ({t}, index) -> ({t}, index) {{",
                    f"  {go} = arith.cmpi slt, {k}, %c{trips} : index",
                    f"  scf.condition({go}) {acc}, {k} : {t}, index",
                    "} do {",
                    f"^bb0({acc2}: {t}, {k2}: index):",
                    f"  {y} = arith.addi {acc2}, {w} : {t}",
                    f"  {k3} = arith.addi {k2}, %c1 : index",
                    f"  scf.yield {y}, {k3} : {t}, index",
                    "}"]
                pool.append((r + "#0", s))
                continue
            if 0.6 <= roll < 0.7:
                # A pad of the last dim (tensor.pad's rule keeps the
                # others' factors).
                t = s[:-1] + [s[-1] + 2]
                idx = ", ".join(f"%i{d}_{c.counter}: index" for d in range(len(s)))
                c.body += [
                    f"{r} = tensor.pad {v} low[{', '.join(['0'] * (len(s) - 1) + ['1'])}] "
                    f"high[{', '.join(['0'] * (len(s) - 1) + ['1'])}] {{",
                    f"^bb0({idx}):",
                    "  tensor.yield %c0_i32 : i32",
                    f"}} : {ttype(s)} to {ttype(t)}"]
                pool.append((r, t))
                continue
            if 0.7 <= roll < 0.8:
                # A region op with no rule: it runs replicated on whole values
                # (here a transposed copy of v, read from above).
                m = matrix(v, s)
                if m is None:
                    continue
                v, s = m
                i, j, e = c.fresh(), c.fresh(), c.fresh()
                t = [s[1], s[0]]
                c.body += [
                    f"{r} = tensor.generate {{",
                    f"^bb0({i}: index, {j}: index):",
                    f"  {e} = tensor.extract {v}[{j}, {i}] : {ttype(s)}",
                    f"  tensor.yield {e} : i32",
                    f"}} : {ttype(t)}"]
                pool.append((r, t))
                continue
            if roll < 0.45:
                acc = c.fresh()
                trips = rng.randint(1, 3)
                c.body += [
                    f"{r} = scf.for %i{c.counter} = %c0 to %c{trips} step %c1 iter_args({acc} = {v}) -> ({ttype(s)}) {{",
                    f"  {y} = arith.addi {acc}, {w} : {ttype(s)}",
                    f"  scf.yield {y} : {ttype(s)}",
                    "}"]
            else:
                z = c.fresh()
                cond = "%true" if rng.random() < 0.5 else "%false"
                c.body += [
                    f"{r} = scf.if {cond} -> ({ttype(s)}) {{",
                    f"  {y} = arith.subi {v}, {w} : {ttype(s)}",
                    f"  scf.yield {y} : {ttype(s)}",
                    "} else {",
                    f"  {z} = arith.muli {v}, {w} : {ttype(s)}",
                    f"  scf.yield {z} : {ttype(s)}",
                    "}"]
            pool.append((r, s))
        elif kind < 0.83:
            # A stencil: v padded on one or two dims by random widths (a
            # halo where the dim is split), then a sum of shifted windows of
            # v's shape (halo exchange, or gather and slice).
            m = matrix(v, s)
            if m is None:
                continue
            v, s = m
            # (A circular pad is at most as wide as the dim it pads.)
            choices = [p for p in ([0], [1], [0, 1]) if all(s[d] >= 2 for d in p)]
            if not choices:
                continue
            padded_dims = rng.choice(choices)
            lo = [rng.randint(1, 2) if d in padded_dims else 0 for d in range(2)]
            hi = [rng.randint(0, 2) if d in padded_dims else 0 for d in range(2)]
            p, padded = pad(c, v, s, lo, hi,
                            circular=rng.choice([False, False, False, True, "torch"]))
            total = None
            for _ in range(rng.randint(1, 3)):
                offsets = [rng.randint(0, lo[d] + hi[d]) for d in range(2)]
                w = shifted(c, p, padded, offsets, s)
                if total is not None:
                    nxt = c.fresh()
                    c.body.append(f"{nxt} = arith.addi {total}, {w} : {ttype(s)}")
                    w = nxt
                total = w
            pool.append((total, s))
        elif kind < 0.87:
            if len(s) < 2:
                m = matrix(v, s)
                if m is None:
                    continue
                v, s = m
            perm = list(range(len(s)))
            while perm == sorted(perm):
                rng.shuffle(perm)
            e, r = c.fresh(), c.fresh()
            t = [s[d] for d in perm]
            c.body += [f"{e} = tensor.empty() : {ttype(t)}",
                       f"{r} = linalg.transpose ins({v} : {ttype(s)}) outs({e} : {ttype(t)}) permutation = {perm}"]
            pool.append((r, t))
        else:
            r = c.fresh()
            dims = random_sharding(rng, mesh, s)
            c.body.append(f"SHARD {r} {v} {ttype(s)} {dims!r}")
            pool.append((r, s))
    v, s = pool[-1]
    if len(s) >= 2 and rng.random() < 0.25:
        e, f, r = c.fresh(), c.fresh(), c.fresh()
        t = s[:1] + s[2:]
        c.body += [
            f"{e} = tensor.empty() : {ttype(t)}",
            f"{f} = linalg.fill ins(%c0_i32 : i32) outs({e} : {ttype(t)}) -> {ttype(t)}",
            f"{r} = linalg.reduce ins({v} : {ttype(s)}) outs({f} : {ttype(t)}) dimensions = [1]",
            "  (%in: i32, %acc: i32) {",
            "    %s = arith.addi %in, %acc : i32",
            "    linalg.yield %s : i32",
            "  }",
        ]
        v, s = r, t
    c.result = (v, s)
    c.result_dims = random_sharding(rng, mesh, s) if rng.random() < 0.8 else None
    for op in ("scf.while", "scf.for", "scf.if", "tensor.pad", "linalg.matmul"):
        if any(op in line for line in c.body):
            c.tags.add(op)
    if any(re.search(r"tensor<\d+x\d+x\d+", line) for line in c.body):
        c.tags.add("a value of rank 3 or 4")
    return c


def constant(rng, shape):
    n = 1
    for d in shape:
        n *= d
    vals = [rng.randint(-3, 3) for _ in range(n)]
    # Nested dense literal.
    def nest(vals, shape):
        if len(shape) == 1:
            return "[" + ", ".join(map(str, vals)) + "]"
        step = len(vals) // shape[0]
        return "[" + ", ".join(nest(vals[i * step:(i + 1) * step], shape[1:])
                               for i in range(shape[0])) + "]"
    return f"arith.constant dense<{nest(vals, shape)}> : {ttype(shape)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cases", type=int, default=200,
                    help="random cases after the fixed suite")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--without", action="append", default=[], choices=KINDS,
                    help="leave a kind out of the random programs: reshape "
                         "(reshapes are then one through 1-D and back, as "
                         "before), slice (a slice is then the right half of "
                         "the last dim, as before), dynamic (no `?` meshes, "
                         "random or fixed)")
    ap.add_argument("--only", metavar="REGEX",
                    help="keep the cases whose name matches (to minimise a "
                         "failure: the same programs and inputs as in the "
                         "whole file)")
    ap.add_argument("--corrupt", action="store_true",
                    help="a negative control: every check adds 1 to the "
                         "difference, so a run whose kernels really compute "
                         "fails at the first case")
    ap.add_argument("--no-check", action="store_true",
                    help="each case runs both copies on its inputs and "
                         "compares nothing: for the emulated GPU, where "
                         "kernels do not run and only the collectives, "
                         "streams and memory are checked (in the traces); "
                         "writes OUT.syncs, the host synchronisations a "
                         "--target=cuda build makes (one at the end of each "
                         "public function's call: each case, its two "
                         "copies, and @main)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    kinds = [k for k in KINDS if k not in args.without]
    cases = matmul_suite() + model_suite() + training_suite(args.seed) + \
        ulysses_training() + sp_training() + \
        halo_suite() + \
        (dynamic_suite() if "dynamic" in kinds else []) + \
        [random_case(rng, i, kinds) for i in range(args.cases)]
    lines = ["// Generated by gen_partition.py; do not edit."]
    for name, axes in MESHES.items():
        lines.append(f"mesh.mesh @{name}([" + ", ".join(
            f'"{a}" = {"?" if s is None else s}' for a, s in axes) + "])")
    keep = [args.only is None or re.fullmatch(args.only, c.name) is not None
            for c in cases]
    for c in (c for c, k in zip(cases, keep) if k):
        for ref in (False, True):
            body = c.emit(ref)
            # Every function gets the constants its fills, loops and
            # branches need.
            body[1:1] = ["  %c0_i32 = arith.constant 0 : i32",
                         "  %c0 = arith.constant 0 : index",
                         "  %c1 = arith.constant 1 : index",
                         "  %c2 = arith.constant 2 : index",
                         "  %c3 = arith.constant 3 : index",
                         "  %true = arith.constant true",
                         "  %false = arith.constant false"]
            lines += body
    # One small check function per case keeps every function small (the
    # lowering and clang are much faster on many small functions).
    all_lines = lines
    for i, c in enumerate(cases):
        # The inputs are drawn for every case, kept or not.
        lines = all_lines if keep[i] else []
        lines.append(f"func.func @check{i}() {{")
        lines.append("  %c0_i32 = arith.constant 0 : i32")
        ins = []
        for j, (shape, _) in enumerate(c.args):
            name = f"%in{j}"
            lines.append(f"  {name} = {constant(rng, shape)}")
            ins.append(name)
        types = ", ".join(ttype(s) for s, _ in c.args)
        _, rshape = c.result
        rt = ttype(rshape)
        lines.append(f"  %got = call @{c.name}({', '.join(ins)}) : ({types}) -> {rt}")
        lines.append(f"  %want = call @{c.name}_ref({', '.join(ins)}) : ({types}) -> {rt}")
        if args.no_check:
            lines.append("  return")
            lines.append("}")
            continue
        if args.corrupt:
            lines.append(f"  %one = arith.constant dense<1> : {rt}")
            lines.append(f"  %diff0 = arith.subi %got, %want : {rt}")
            lines.append(f"  %diff = arith.addi %diff0, %one : {rt}")
        else:
            lines.append(f"  %diff = arith.subi %got, %want : {rt}")
        lines.append(f"  %abs = math.absi %diff : {rt}")
        lines.append("  %e = tensor.empty() : tensor<i32>")
        lines.append("  %z = linalg.fill ins(%c0_i32 : i32) outs(%e : tensor<i32>) -> tensor<i32>")
        dims = ", ".join(str(d) for d in range(len(rshape)))
        lines.append(f"  %sum = linalg.reduce ins(%abs : {rt}) outs(%z : tensor<i32>) dimensions = [{dims}]")
        lines.append("    (%in: i32, %acc: i32) {")
        lines.append("      %s = arith.addi %in, %acc : i32")
        lines.append("      linalg.yield %s : i32")
        lines.append("    }")
        lines.append("  %total = tensor.extract %sum[] : tensor<i32>")
        lines.append("  %ok = arith.cmpi eq, %total, %c0_i32 : i32")
        lines.append(f'  cf.assert %ok, "case {c.name}: the partitioned program differs from the unpartitioned one"')
        lines.append("  return")
        lines.append("}")
    lines = all_lines
    lines.append("func.func @main() -> i32 {")
    for i in range(len(cases)):
        if keep[i]:
            lines.append(f"  call @check{i}() : () -> ()")
    lines.append("  %c0_i32 = arith.constant 0 : i32")
    lines.append("  return %c0_i32 : i32")
    lines.append("}")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if args.no_check:
        with open(args.out + ".syncs", "w") as f:
            f.write(f"{3 * sum(keep) + 1}\n")
    tags = {}
    for c in cases:
        for t in c.tags:
            tags[t] = tags.get(t, 0) + 1
    print(f"{sum(keep)} cases; of the {args.cases} random ones, with " +
          ", ".join(f"{t}: {n}" for t, n in sorted(tags.items())))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A GPT-style transformer stack in f32, spelled the way torch-mlir lowers a
PyTorch model to linalg, with the shardings of one parallelism plan on the
function's arguments.

Each layer is x + attn(ln_1(x)), then h + mlp(ln_2(h)), as nanoGPT's Block:
  - layernorm as torch-mlir decomposes it: a sum over the hidden dim, the
    mean, x - mean, a sum of squares, rsqrt(var + eps), times the weight
    plus the bias (linalg.generic ops with broadcasts);
  - linear layers as aten.linear: the weight ([out, in], torch's layout)
    transposed, the input collapsed to [B*S, H], linalg.matmul, expanded
    back to [B, S, out], and a broadcast bias add;
  - attention: q, k, v projections, expand_shape to [B, S, heads, d],
    transposes to [B, heads, S, d], collapse_shape of (batch, heads) into
    one dim, linalg.batch_matmul for the scores, expand back, a scale, a
    causal mask (linalg.index), softmax as aten._softmax decomposes
    (aten.max.dim's maximum and argmax in one generic, the argmax unused,
    sub, exp, sum, div), batch_matmul with v, and back to [B, S, H];
  - the MLP: linear, GELU (tanh form), linear.
Every tensor.empty of a shape is one value, as after CSE.

Plans on mesh.mesh @m(["dp" = 2, "tp" = 4]):
  none : no annotation at all (the reference);
  dp   : data parallel: x and the result on "dp" by batch, weights replicated;
  tp   : Megatron tensor parallel: also q/k/v/fc1 weights (and biases) split
         by output features over "tp", out-proj/fc2 weights by input
         features; the optimum is 2 all_reduces over "tp" per layer;
  sp   : Megatron-SP: as tp, with x and the result also split by sequence
         over "tp", and each layernorm's output gathered by a constraint
         (mesh.shard to batch on "dp" only) before the matmuls; the optimum
         is 2 all_gathers and 2 reduce_scatters over "tp" per layer.

--check writes a program for mesh-compile that runs the stack with the plan
and the stack with no annotation on the same inputs and asserts that they
agree (max |difference| <= 1e-3; --corrupt adds 1, a negative control).

  batch: only x annotated (by batch on "dp"), the rest left to
         mesh-auto-shard.

Usage: gpt.py [--plan none|dp|tp|sp|batch|fsdp|hsdp] [--layers L] [--batch B] [--seq S]
              [--hidden H] [--heads N] [--check [--corrupt]]
"""
import argparse

MESH = 'mesh.mesh @m(["dp" = 2, "tp" = 4])'
UPSTREAM_GRID = "shard.grid @m(shape = 2x4)"


def tt(shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def sh(dims):
    return "#mesh.sharding<@m, [" + ", ".join(
        "[" + ", ".join(f'"{a}"' for a in d) + "]" for d in dims) + "]>"


def amap(n, dims):
    ds = ", ".join(f"d{i}" for i in range(n))
    return f"affine_map<({ds}) -> ({', '.join(f'd{i}' for i in dims)})>"


class Writer:
    def __init__(self, B, S, H, N, F):
        self.B, self.S, self.H, self.N, self.F = B, S, H, N, F
        self.D = H // N
        self.lines = []
        self.count = 0
        self.empties = {}

    def fresh(self, stem="v"):
        self.count += 1
        return f"%{stem}{self.count}"

    def emit(self, line):
        self.lines.append("  " + line)

    def empty(self, shape):
        """One tensor.empty per shape, as CSE leaves them."""
        key = tuple(shape)
        if key not in self.empties:
            e = f"%empty_{'x'.join(map(str, shape))}"
            self.empties[key] = e
            self.emit(f"{e} = tensor.empty() : {tt(shape)}")
        return self.empties[key]

    def filled(self, shape, value="%zero"):
        e = self.empty(shape)
        r = self.fresh("fill")
        self.emit(f"{r} = linalg.fill ins({value} : f32) outs({e} : {tt(shape)}) -> {tt(shape)}")
        return r

    def generic(self, ins, out_shape, maps, iters, body, init=None):
        """A linalg.generic; `ins` are (value, shape), `maps` the input
        maps then the output's (as dim lists), `body` lines over %a0.. (the
        inputs) and %acc (the init), ending in the yielded %y."""
        n = len(iters)
        out = init or self.empty(out_shape)
        r = self.fresh()
        m = ", ".join(amap(n, d) for d in maps)
        it = ", ".join(f'"{i}"' for i in iters)
        ins_v = ", ".join(v for v, _ in ins)
        ins_t = ", ".join(tt(s) for _, s in ins)
        args = ", ".join(f"%a{i}: f32" for i in range(len(ins)))
        self.emit(f"{r} = linalg.generic {{indexing_maps = [{m}], iterator_types = [{it}]}} "
                  f"ins({ins_v} : {ins_t}) outs({out} : {tt(out_shape)}) {{")
        self.emit(f"^bb0({args}, %acc: f32):")
        for b in body:
            self.emit("  " + b)
        self.emit("  linalg.yield %y : f32")
        self.emit(f"}} -> {tt(out_shape)}")
        return r

    def binary(self, a, b, shape, b_dims, op):
        """a (shape) op b, b broadcast along the dims not in b_dims."""
        n = len(shape)
        return self.generic([(a, shape), (b, [shape[d] for d in b_dims])], shape,
                            [list(range(n)), b_dims, list(range(n))], ["parallel"] * n,
                            [f"%y = arith.{op} %a0, %a1 : f32"])

    def reduce_last(self, x, shape, body):
        """Sum over the last dim of body(%a0) (a [B, S] result)."""
        n = len(shape)
        init = self.filled(shape[:-1])
        return self.generic([(x, shape)], shape[:-1],
                            [list(range(n)), list(range(n - 1))],
                            ["parallel"] * (n - 1) + ["reduction"],
                            body + ["%y = arith.addf %t, %acc : f32"], init=init)

    def layernorm(self, x, w, b):
        B, S, H = self.B, self.S, self.H
        shape = [B, S, H]
        s = self.reduce_last(x, shape, ["%t = arith.addf %a0, %zero : f32"])
        mean = self.generic([(s, [B, S])], [B, S], [[0, 1], [0, 1]], ["parallel"] * 2,
                            ["%y = arith.divf %a0, %hidden : f32"])
        xc = self.binary(x, mean, shape, [0, 1], "subf")
        sq = self.reduce_last(xc, shape, ["%t = arith.mulf %a0, %a0 : f32"])
        rstd = self.generic([(sq, [B, S])], [B, S], [[0, 1], [0, 1]], ["parallel"] * 2,
                            ["%var = arith.divf %a0, %hidden : f32",
                             "%ve = arith.addf %var, %eps : f32",
                             "%y = math.rsqrt %ve : f32"])
        xn = self.binary(xc, rstd, shape, [0, 1], "mulf")
        xw = self.binary(xn, w, shape, [2], "mulf")
        return self.binary(xw, b, shape, [2], "addf")

    def linear(self, x, in_f, w, b, out_f):
        """aten.linear on [B, S, in_f] with a [out_f, in_f] weight."""
        B, S = self.B, self.S
        wt = self.fresh("wt")
        e = self.empty([in_f, out_f])
        self.emit(f"{wt} = linalg.transpose ins({w} : {tt([out_f, in_f])}) "
                  f"outs({e} : {tt([in_f, out_f])}) permutation = [1, 0]")
        x2 = self.collapse(x, [B, S, in_f], [[0, 1], [2]], [B * S, in_f])
        init = self.filled([B * S, out_f])
        m = self.fresh("mm")
        self.emit(f"{m} = linalg.matmul ins({x2}, {wt} : {tt([B * S, in_f])}, "
                  f"{tt([in_f, out_f])}) outs({init} : {tt([B * S, out_f])}) -> {tt([B * S, out_f])}")
        y = self.expand(m, [B * S, out_f], [[0, 1], [2]], [B, S, out_f])
        return self.binary(y, b, [B, S, out_f], [2], "addf")

    def collapse(self, x, shape, groups, out):
        r = self.fresh("c")
        self.emit(f"{r} = tensor.collapse_shape {x} {groups} : {tt(shape)} into {tt(out)}")
        return r

    def expand(self, x, shape, groups, out):
        r = self.fresh("e")
        self.emit(f"{r} = tensor.expand_shape {x} {groups} output_shape "
                  f"[{', '.join(map(str, out))}] : {tt(shape)} into {tt(out)}")
        return r

    def transpose(self, x, shape, perm):
        out = [shape[p] for p in perm]
        r = self.fresh("t")
        self.emit(f"{r} = linalg.transpose ins({x} : {tt(shape)}) outs({self.empty(out)} : "
                  f"{tt(out)}) permutation = [{', '.join(map(str, perm))}]")
        return r, out

    def batch_matmul(self, a, b, G, M, K, N):
        init = self.filled([G, M, N])
        r = self.fresh("bmm")
        self.emit(f"{r} = linalg.batch_matmul ins({a}, {b} : {tt([G, M, K])}, {tt([G, K, N])}) "
                  f"outs({init} : {tt([G, M, N])}) -> {tt([G, M, N])}")
        return r

    def heads(self, x, perm):
        """[B, S, H] to [B * heads, ...] through [B, S, heads, d] and `perm`."""
        B, S, N, D = self.B, self.S, self.N, self.D
        e = self.expand(x, [B, S, self.H], [[0], [1], [2, 3]], [B, S, N, D])
        t, shape = self.transpose(e, [B, S, N, D], perm)
        return self.collapse(t, shape, [[0, 1], [2], [3]], [B * N] + shape[2:])

    def softmax(self, s, shape):
        """aten._softmax over the last dim, as torch-mlir decomposes it."""
        n = len(shape)
        rows = shape[:-1]
        mx_init = self.filled(rows, "%lowest")
        idx_e = self.fresh("idxe")
        idx_f = self.fresh("idxf")
        row_t = "tensor<" + "x".join(map(str, rows)) + "xi64>"
        self.emit(f"{idx_e} = tensor.empty() : {row_t}")
        self.emit(f"{idx_f} = linalg.fill ins(%zero64 : i64) outs({idx_e} : {row_t}) -> {row_t}")
        mx = self.fresh("max")
        maps = ", ".join([amap(n, range(n)), amap(n, range(n - 1)), amap(n, range(n - 1))])
        it = ", ".join(['"parallel"'] * (n - 1) + ['"reduction"'])
        self.emit(f"{mx}:2 = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{it}]}} "
                  f"ins({s} : {tt(shape)}) outs({mx_init}, {idx_f} : {tt(rows)}, {row_t}) {{")
        self.emit("^bb0(%in: f32, %acc: f32, %idx: i64):")
        self.emit(f"  %k = linalg.index {n - 1} : index")
        self.emit("  %ki = arith.index_cast %k : index to i64")
        self.emit("  %m = arith.maximumf %in, %acc : f32")
        self.emit("  %gt = arith.cmpf ogt, %in, %acc : f32")
        self.emit("  %sel = arith.select %gt, %ki, %idx : i64")
        self.emit("  linalg.yield %m, %sel : f32, i64")
        self.emit(f"}} -> ({tt(rows)}, {row_t})")
        d = self.binary(s, f"{mx}#0", shape, list(range(n - 1)), "subf")
        ex = self.generic([(d, shape)], shape, [list(range(n)), list(range(n))],
                          ["parallel"] * n, ["%y = math.exp %a0 : f32"])
        total = self.reduce_last(ex, shape, ["%t = arith.addf %a0, %zero : f32"])
        return self.binary(ex, total, shape, list(range(n - 1)), "divf")

    def attention(self, x, p):
        B, S, H, N, D = self.B, self.S, self.H, self.N, self.D
        q = self.linear(x, H, p["wq"], p["bq"], H)
        k = self.linear(x, H, p["wk"], p["bk"], H)
        v = self.linear(x, H, p["wv"], p["bv"], H)
        qh = self.heads(q, [0, 2, 1, 3])          # [B*N, S, D]
        kh = self.heads(k, [0, 2, 3, 1])          # [B*N, D, S]
        vh = self.heads(v, [0, 2, 1, 3])          # [B*N, S, D]
        s = self.batch_matmul(qh, kh, B * N, S, D, S)
        s4 = self.expand(s, [B * N, S, S], [[0, 1], [2], [3]], [B, N, S, S])
        shape = [B, N, S, S]
        scaled = self.generic([(s4, shape)], shape, [list(range(4))] * 2, ["parallel"] * 4,
                              ["%y = arith.mulf %a0, %scale : f32"])
        masked = self.generic([(scaled, shape)], shape, [list(range(4))] * 2, ["parallel"] * 4,
                              ["%i = linalg.index 2 : index",
                               "%j = linalg.index 3 : index",
                               "%future = arith.cmpi ugt, %j, %i : index",
                               "%y = arith.select %future, %masked, %a0 : f32"])
        pr = self.softmax(masked, shape)
        p3 = self.collapse(pr, shape, [[0, 1], [2], [3]], [B * N, S, S])
        o = self.batch_matmul(p3, vh, B * N, S, S, D)
        o4 = self.expand(o, [B * N, S, D], [[0, 1], [2], [3]], [B, N, S, D])
        ot, _ = self.transpose(o4, [B, N, S, D], [0, 2, 1, 3])
        o3 = self.collapse(ot, [B, S, N, D], [[0], [1], [2, 3]], [B, S, H])
        return self.linear(o3, H, p["wo"], p["bo"], H)

    def mlp(self, x, p):
        B, S, H, F = self.B, self.S, self.H, self.F
        h = self.linear(x, H, p["w1"], p["b1"], F)
        shape = [B, S, F]
        g = self.generic([(h, shape)], shape, [list(range(3))] * 2, ["parallel"] * 3,
                         ["%x2 = arith.mulf %a0, %a0 : f32",
                          "%x3 = arith.mulf %x2, %a0 : f32",
                          "%t0 = arith.mulf %x3, %gelu_c : f32",
                          "%t1 = arith.addf %a0, %t0 : f32",
                          "%t2 = arith.mulf %t1, %gelu_k : f32",
                          "%t3 = math.tanh %t2 : f32",
                          "%t4 = arith.addf %t3, %one : f32",
                          "%t5 = arith.mulf %a0, %half : f32",
                          "%y = arith.mulf %t5, %t4 : f32"])
        return self.linear(g, F, p["w2"], p["b2"], H)


PARAMS = ["ln1_w", "ln1_b", "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo",
          "ln2_w", "ln2_b", "w1", "b1", "w2", "b2"]


def param_shapes(H, F):
    return {"ln1_w": [H], "ln1_b": [H], "wq": [H, H], "bq": [H], "wk": [H, H],
            "bk": [H], "wv": [H, H], "bv": [H], "wo": [H, H], "bo": [H],
            "ln2_w": [H], "ln2_b": [H], "w1": [F, H], "b1": [F], "w2": [H, F],
            "b2": [H]}


def param_sharding(plan, name, shape):
    if plan in ("none", "batch"):
        return None
    if plan in ("fsdp", "hsdp"):
        # ZeRO-3 / FSDP: every parameter's first dim split over all devices
        # (hsdp: within each replica group, over "tp"; replicated over
        # "dp"), gathered where it is used.
        return [["dp", "tp"] if plan == "fsdp" else ["tp"]] + \
            [[] for _ in shape[1:]]
    if plan in ("tp", "sp"):
        if name in ("wq", "wk", "wv", "w1"):
            return [["tp"], []]
        if name in ("bq", "bk", "bv", "b1"):
            return [["tp"]]
        if name in ("wo", "w2"):
            return [[], ["tp"]]
    return [[] for _ in shape]


def upstream_sharding(dims):
    """Our dims ([["dp"], [], []]) as upstream's split_axes (grid axis
    0 is "dp", 1 is "tp")."""
    axis = {"dp": 0, "tp": 1}
    return "[" + ", ".join("[" + ", ".join(str(axis[a]) for a in d) + "]"
                           for d in dims) + "]"


def stack(plan, layers, B, S, H, N, name="gpt", dialect="mesh"):
    """func.func @name: `layers` blocks with the plan's annotations, as
    function argument attributes and mesh.shard (dialect "mesh"), or as
    upstream's shard.sharding / shard.shard ops (dialect "shard", MLIR 22's
    peer: each annotated argument is shard.shard ... annotate_for_users
    at the top, the result shard.shard before the return)."""
    F = 4 * H
    w = Writer(B, S, H, N, F)
    shapes = param_shapes(H, F)
    xs = {"none": None, "dp": [["dp"], [], []], "tp": [["dp"], [], []],
          "sp": [["dp"], ["tp"], []], "batch": [["dp"], [], []],
          "fsdp": [["dp"], [], []], "hsdp": [["dp"], [], []]}[plan]
    upstream = dialect == "shard"
    annotations = []

    def arg(v, shape, dims):
        if not dims:
            return f"{v}: {tt(shape)}"
        if not upstream:
            return f"{v}: {tt(shape)} {{mesh.sharding = {sh(dims)}}}"
        k = len(annotations)
        annotations.append(f"  %s{k} = shard.sharding @m split_axes = {upstream_sharding(dims)} : !shard.sharding")
        annotations.append(f"  {v}_s = shard.shard {v} to %s{k} annotate_for_users : {tt(shape)}")
        return f"{v}: {tt(shape)}"

    args = [arg("%x", [B, S, H], xs)]
    params = []
    for layer in range(layers):
        p = {}
        for pn in PARAMS:
            v = f"%l{layer}_{pn}"
            s = param_sharding(plan, pn, shapes[pn])
            args.append(arg(v, shapes[pn], s))
            p[pn] = f"{v}_s" if upstream and s else v
        params.append(p)
    res = tt([B, S, H]) if not xs or upstream or plan == "batch" else \
        f"({tt([B, S, H])} {{mesh.sharding = {sh(xs)}}})"
    head = [f"func.func @{name}({', '.join(args)}) -> {res} {{"] + annotations + [
            "  %zero = arith.constant 0.0 : f32",
            "  %one = arith.constant 1.0 : f32",
            "  %half = arith.constant 0.5 : f32",
            f"  %hidden = arith.constant {float(H)} : f32",
            "  %eps = arith.constant 1.0e-05 : f32",
            f"  %scale = arith.constant {1.0 / (H // N) ** 0.5!r} : f32",
            "  %masked = arith.constant -1.0e+09 : f32",
            "  %lowest = arith.constant -3.40282347e+38 : f32",
            "  %zero64 = arith.constant 0 : i64",
            "  %gelu_k = arith.constant 0.797884583 : f32",
            "  %gelu_c = arith.constant 4.471500e-02 : f32"]
    x = "%x_s" if upstream and xs else "%x"

    def constrain(v, dims):
        """v constrained to `dims` (Megatron-SP's gather points)."""
        g = w.fresh("sp")
        if upstream:
            k = w.fresh("spsh")
            w.emit(f"{k} = shard.sharding @m split_axes = {upstream_sharding(dims)} : !shard.sharding")
            w.emit(f"{g} = shard.shard {v} to {k} annotate_for_users : {tt([B, S, H])}")
        else:
            w.emit(f"{g} = mesh.shard {v} : {tt([B, S, H])} to {sh(dims)}")
        return g

    for p in params:
        a = w.layernorm(x, p["ln1_w"], p["ln1_b"])
        if plan == "sp":
            a = constrain(a, [["dp"], [], []])
        h = w.binary(x, w.attention(a, p), [B, S, H], [0, 1, 2], "addf")
        m = w.layernorm(h, p["ln2_w"], p["ln2_b"])
        if plan == "sp":
            m = constrain(m, [["dp"], [], []])
        x = w.binary(h, w.mlp(m, p), [B, S, H], [0, 1, 2], "addf")
    if upstream and xs:
        w.emit(f"%rs = shard.sharding @m split_axes = {upstream_sharding(xs)} : !shard.sharding")
        w.emit(f"%result = shard.shard {x} to %rs : {tt([B, S, H])}")
        x = "%result"
    return head + w.lines + [f"  return {x} : {tt([B, S, H])}", "}"], shapes


def values(n, salt):
    """n small exact binary fractions, deterministic."""
    out, s = [], 12345 + 7919 * salt
    for _ in range(n):
        s = (s * 1103515245 + 12345) % (1 << 31)
        out.append(((s >> 16) % 33 - 16) / 64.0)
    return out


def numel(shape):
    n = 1
    for k in shape:
        n *= k
    return n


def dense(shape, salt):
    vals = values(numel(shape), salt)
    return f"dense<[{', '.join(repr(v) for v in vals)}]> : tensor<{len(vals)}xf32>"


def check_program(plan, layers, B, S, H, N, corrupt, sums=False):
    ours, shapes = stack(plan, layers, B, S, H, N, "gpt")
    ref, _ = stack("none", layers, B, S, H, N, "gpt_ref")
    lines = [MESH] + ours + ref
    if sums:
        lines += ['llvm.mlir.global internal constant @sums("gpt sums %.6e %.6e %.6e\\0A\\00") {addr_space = 0 : i32}',
                  "llvm.func @printf(!llvm.ptr, ...) -> i32"]
    body = ["func.func @main() -> i32 {"]
    operands, types = [], []
    specs = [("x", [B, S, H])] + [(f"l{i}_{pn}", shapes[pn])
                                   for i in range(layers) for pn in PARAMS]
    for salt, (name, shape) in enumerate(specs):
        flat = f"%{name}_flat"
        body.append(f"  {flat} = arith.constant {dense(shape, salt)}")
        if len(shape) == 1:
            operands.append(flat)
        else:
            groups = f"[[{', '.join(str(i) for i in range(len(shape)))}]]"
            body.append(f"  %{name} = tensor.expand_shape {flat} {groups} output_shape "
                        f"[{', '.join(map(str, shape))}] : {tt([numel(shape)])} into {tt(shape)}")
            operands.append(f"%{name}")
        types.append(tt(shape))
    sig = f"({', '.join(types)}) -> {tt([B, S, H])}"
    body.append(f"  %out = call @gpt({', '.join(operands)}) : {sig}")
    body.append(f"  %want = call @gpt_ref({', '.join(operands)}) : {sig}")
    # main is partitioned too: the call's result keeps the plan's layout,
    # and the comparison and its maximum are partitioned with it.
    want, t = "%want", tt([B, S, H])
    body += [f"  %e = tensor.empty() : {t}",
             f"  %diff = linalg.generic {{indexing_maps = [{amap(3, range(3))}, {amap(3, range(3))}, {amap(3, range(3))}], "
             f"iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}} ins(%out, {want} : {t}, {t}) outs(%e : {t}) {{",
             "  ^bb0(%a: f32, %b: f32, %o: f32):",
             "    %d = arith.subf %a, %b : f32",
             "    %ad = math.absf %d : f32",
             "    linalg.yield %ad : f32",
             f"  }} -> {t}",
             "  %zero = arith.constant 0.0 : f32",
             "  %e0 = tensor.empty() : tensor<f32>",
             "  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>",
             f"  %mx = linalg.reduce ins(%diff : {t}) outs(%f0 : tensor<f32>) dimensions = [0, 1, 2]",
             "    (%in: f32, %acc: f32) {",
             "      %m = arith.maximumf %in, %acc : f32",
             "      linalg.yield %m : f32",
             "    }",
             "  %worst = tensor.extract %mx[] : tensor<f32>"]
    if corrupt:
        body += ["  %one = arith.constant 1.0 : f32",
                 "  %bad = arith.addf %worst, %one : f32"]
        worst = "%bad"
    else:
        worst = "%worst"
    if sums:
        # Three sums of the output (plain, squares, and weighted by a
        # pattern of its indices), printed so that two compilations of the
        # same program (another target) can be compared.
        body += [f"  %se = tensor.empty() : {t}",
                 f"  %sq = linalg.generic {{indexing_maps = [{amap(3, range(3))}, {amap(3, range(3))}], "
                 f"iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}} ins(%out : {t}) outs(%se : {t}) {{",
                 "  ^bb0(%a: f32, %o: f32):",
                 "    %i = linalg.index 0 : index",
                 "    %j = linalg.index 1 : index",
                 "    %k = linalg.index 2 : index",
                 "    %w0 = arith.addi %i, %j : index",
                 "    %w1 = arith.addi %w0, %k : index",
                 "    %c7 = arith.constant 7 : index",
                 "    %w2 = arith.remui %w1, %c7 : index",
                 "    %w3 = arith.index_cast %w2 : index to i32",
                 "    %w4 = arith.sitofp %w3 : i32 to f32",
                 "    %y = arith.mulf %a, %w4 : f32",
                 "    linalg.yield %y : f32",
                 f"  }} -> {t}"]
        names = []
        for n, (src, expr) in enumerate([("%out", None), ("%out", "sq"), ("%sq", None)]):
            body += [f"  %s{n}e = tensor.empty() : tensor<f32>",
                     f"  %s{n}f = linalg.fill ins(%zero : f32) outs(%s{n}e : tensor<f32>) -> tensor<f32>",
                     f"  %s{n} = linalg.reduce ins({src} : {t}) outs(%s{n}f : tensor<f32>) dimensions = [0, 1, 2]",
                     "    (%in: f32, %acc: f32) {"]
            if expr == "sq":
                body += ["      %in2 = arith.mulf %in, %in : f32",
                         "      %m = arith.addf %in2, %acc : f32"]
            else:
                body += ["      %m = arith.addf %in, %acc : f32"]
            body += ["      linalg.yield %m : f32",
                     "    }",
                     f"  %s{n}x = tensor.extract %s{n}[] : tensor<f32>",
                     f"  %s{n}d = arith.extf %s{n}x : f32 to f64"]
            names.append(f"%s{n}d")
        body += ["  %sfmt = llvm.mlir.addressof @sums : !llvm.ptr",
                 f"  %spr = llvm.call @printf(%sfmt, {', '.join(names)}) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, f64, f64, f64) -> i32"]
    body += ["  %tol = arith.constant 1.0e-03 : f32",
             f"  %ok = arith.cmpf ole, {worst}, %tol : f32",
             f"  cf.assert %ok, \"gpt ({plan}, {layers} layers): the partitioned stack differs from the unannotated one by more than 1e-3\"",
             "  %rc = arith.constant 0 : i32",
             "  return %rc : i32",
             "}"]
    return "\n".join(lines + body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan",
                    choices=["none", "dp", "tp", "sp", "batch", "fsdp", "hsdp"],
                    default="tp")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dialect", choices=["mesh", "shard"], default="mesh",
                    help="shard: upstream MLIR 22's dialect, for the peer")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--corrupt", action="store_true")
    ap.add_argument("--sums", action="store_true",
                    help="with --check, each rank also prints three sums of "
                         "the output (`gpt sums A B C`), to compare two "
                         "compilations")
    a = ap.parse_args()
    if a.check:
        print(check_program(a.plan, a.layers, a.batch, a.seq, a.hidden, a.heads, a.corrupt,
                            a.sums))
    else:
        lines, _ = stack(a.plan, a.layers, a.batch, a.seq, a.hidden, a.heads,
                         dialect=a.dialect)
        print("\n".join([UPSTREAM_GRID if a.dialect == "shard" else MESH] + lines))


if __name__ == "__main__":
    main()

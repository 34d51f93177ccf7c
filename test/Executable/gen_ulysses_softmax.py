#!/usr/bin/env python3
"""DeepSpeed-Ulysses softmax attention trained, written once on global
shapes, for mesh-compile (issue 30's seed scenario 04 as a training loop).

x [B, S, E] is split by batch over "a" (dp) and by sequence over "b" (sp) of
(a = 2, b = 4); q, k, v = x Wq, x Wk, x Wv (each [E, heads, d], replicated)
are constrained to the heads split over "b" (the constraint Ulysses is);
scores = q k^T / sqrt(d) per (batch, head); p = softmax over the keys; o =
p v, constrained back to the sequence split; y = o Wo; the loss
0.5 * |y - target|^2. The backward is written out: through the output
projection, the attention (dp = do v^T, ds = p * (dp - sum(dp * p)), the
gradients of q, k, v) and the projections; each gradient of q, k, v, o is
constrained as its forward value is; an SGD step of the four weights; 3
steps in an scf.for carrying them.

With --check the program also runs the same loop unannotated and compares
the four trained weights on every rank (f32; the largest difference must
stay within 1e-4); --corrupt adds 1 to the difference (a negative control).
Without it, the annotated function alone (for --mesh-report-communication).

With --scenario04, the hand-written scenario 04's forward and Wo gradient on
global shapes instead, for comparing its plan with the hand-written one.

  gen_ulysses_softmax.py [--check [--corrupt] | --scenario04] > out.mlir
"""

import argparse

B, S, E, H, D = 2, 16, 8, 4, 4
SIZES = {"b": B, "s": S, "t": S, "e": E, "h": H, "d": D, "f": E}
SEQ = '[["a"], ["b"], [], []]'
HEADS = '[["a"], [], ["b"], []]'


def tt(shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def shape_of(letters):
    return [SIZES[x] for x in letters]


class Emitter:
    def __init__(self, annotated):
        self.annotated = annotated
        self.lines = []
        self.n = 0

    def fresh(self):
        self.n += 1
        return f"%v{self.n}"

    def emit(self, line):
        self.lines.append("    " + line)

    def empty(self, letters, fill=None):
        e = self.fresh()
        t = tt(shape_of(letters))
        self.emit(f"{e} = tensor.empty() : {t}")
        if fill is None:
            return e
        f = self.fresh()
        self.emit(f"{f} = linalg.fill ins({fill} : f32) outs({e} : {t}) -> {t}")
        return f

    def amap(self, loops, letters):
        dims = ", ".join(f"d{i}" for i in range(len(loops)))
        return ("affine_map<(" + dims + ") -> (" +
                ", ".join(f"d{loops.index(x)}" for x in letters) + ")>")

    def einsum(self, spec, a, b):
        """A contraction, written like einsum: "bshd,bthd->bhst"."""
        ins, out = spec.split("->")
        ia, ib = ins.split(",")
        loops = list(out) + [x for x in dict.fromkeys(ia + ib) if x not in out]
        iters = ", ".join('"parallel"' if x in out else '"reduction"'
                          for x in loops)
        init = self.empty(out, "%zero")
        r = self.fresh()
        self.emit(
            f"{r} = linalg.generic {{indexing_maps = [{self.amap(loops, ia)}, "
            f"{self.amap(loops, ib)}, {self.amap(loops, out)}], iterator_types = "
            f"[{iters}]}} ins({a}, {b} : {tt(shape_of(ia))}, {tt(shape_of(ib))}) "
            f"outs({init} : {tt(shape_of(out))}) {{")
        self.emit("^bb0(%ex: f32, %ey: f32, %acc: f32):")
        self.emit("  %p = arith.mulf %ex, %ey : f32")
        self.emit("  %s = arith.addf %acc, %p : f32")
        self.emit("  linalg.yield %s : f32")
        self.emit(f"}} -> {tt(shape_of(out))}")
        return r

    def elementwise(self, letters, operands, body, bcast=None):
        """out[letters] = body(operands...), each operand read at `letters`
        or, where `bcast` names its letters, broadcast along the others."""
        loops = list(letters)
        bcast = bcast or {}
        maps = [self.amap(loops, bcast.get(i, letters))
                for i in range(len(operands))] + [self.amap(loops, letters)]
        types = [tt(shape_of(bcast.get(i, letters))) for i in range(len(operands))]
        init = self.empty(letters)
        r = self.fresh()
        args = ", ".join(f"%a{i}: f32" for i in range(len(operands)))
        iters = ", ".join(['"parallel"'] * len(loops))
        self.emit(
            f"{r} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
            f"iterator_types = [{iters}]}} "
            f"ins({', '.join(operands)} : {', '.join(types)}) "
            f"outs({init} : {tt(shape_of(letters))}) {{")
        self.emit(f"^bb0({args}, %o: f32):")
        for line in body:
            self.emit("  " + line)
        self.emit(f"}} -> {tt(shape_of(letters))}")
        return r

    def reduce(self, letters, dim, operand, combiner, start):
        """operand[letters] reduced over letter `dim`."""
        out = letters.replace(dim, "")
        init = self.empty(out, start)
        r = self.fresh()
        self.emit(f"{r} = linalg.reduce ins({operand} : {tt(shape_of(letters))}) "
                  f"outs({init} : {tt(shape_of(out))}) dimensions = "
                  f"[{letters.index(dim)}]")
        self.emit("  (%in: f32, %acc: f32) {")
        self.emit(f"    %c = {combiner} %in, %acc : f32")
        self.emit("    linalg.yield %c : f32")
        self.emit("  }")
        return r

    def constrain(self, v, letters, dims):
        if not self.annotated:
            return v
        r = self.fresh()
        self.emit(f"{r} = mesh.shard {v} : {tt(shape_of(letters))} to "
                  f"#mesh.sharding<@m24, {dims}>")
        return r


def attention(em, q, k, v):
    """Softmax attention of q, k, v (on the heads split): the probabilities
    (scores scaled by %scale, their maximum over the keys subtracted) and o,
    constrained back to the sequence split."""
    s = em.einsum("bshd,bthd->bhst", q, k)
    s = em.elementwise("bhst", [s], ["%r = arith.mulf %a0, %scale : f32",
                                     "linalg.yield %r : f32"])
    m = em.reduce("bhst", "t", s, "arith.maximumf", "%ninf")
    ex = em.elementwise("bhst", [s, m], ["%d = arith.subf %a0, %a1 : f32",
                                         "%e = math.exp %d : f32",
                                         "linalg.yield %e : f32"],
                        bcast={1: "bhs"})
    z = em.reduce("bhst", "t", ex, "arith.addf", "%zero")
    p = em.elementwise("bhst", [ex, z], ["%r = arith.divf %a0, %a1 : f32",
                                         "linalg.yield %r : f32"],
                       bcast={1: "bhs"})
    return p, em.constrain(em.einsum("bhst,bthd->bshd", p, v), "bshd", SEQ)


def step(em, x, target, wq, wk, wv, wo):
    """One training step; returns the four updated weights."""
    q, k, v = (em.constrain(em.einsum("bse,ehd->bshd", x, w), "bshd", HEADS)
               for w in (wq, wk, wv))
    p, o = attention(em, q, k, v)
    y = em.einsum("bshd,hdf->bsf", o, wo)
    dy = em.elementwise("bsf", [y, target], ["%r = arith.subf %a0, %a1 : f32",
                                             "linalg.yield %r : f32"])
    dwo = em.einsum("bshd,bsf->hdf", o, dy)
    do = em.constrain(em.einsum("bsf,hdf->bshd", dy, wo), "bshd", HEADS)
    dp = em.einsum("bshd,bthd->bhst", do, v)
    dv = em.constrain(em.einsum("bhst,bshd->bthd", p, do), "bshd", SEQ)
    # Softmax's backward: ds = p * (dp - sum_t(dp * p)), then the scale.
    pdp = em.elementwise("bhst", [dp, p], ["%r = arith.mulf %a0, %a1 : f32",
                                           "linalg.yield %r : f32"])
    rowsum = em.reduce("bhst", "t", pdp, "arith.addf", "%zero")
    ds = em.elementwise("bhst", [dp, rowsum, p],
                        ["%d = arith.subf %a0, %a1 : f32",
                         "%m = arith.mulf %a2, %d : f32",
                         "%r = arith.mulf %m, %scale : f32",
                         "linalg.yield %r : f32"], bcast={1: "bhs"})
    dq = em.constrain(em.einsum("bhst,bthd->bshd", ds, k), "bshd", SEQ)
    dk = em.constrain(em.einsum("bhst,bshd->bthd", ds, q), "bshd", SEQ)
    grads = [em.einsum("bse,bshd->ehd", x, g) for g in (dq, dk, dv)] + [dwo]
    updated = []
    for w, g, letters in zip((wq, wk, wv, wo), grads,
                             ("ehd", "ehd", "ehd", "hdf")):
        updated.append(em.elementwise(letters, [w, g],
                                      ["%u = arith.mulf %a1, %lr : f32",
                                       "%r = arith.subf %a0, %u : f32",
                                       "linalg.yield %r : f32"]))
    return updated


def function(name, annotated):
    em = Emitter(annotated)
    tx, tw, to = tt([B, S, E]), tt([E, H, D]), tt([H, D, E])
    def ann(dims):
        return (f" {{mesh.sharding = #mesh.sharding<@m24, {dims}>}}"
                if annotated else "")
    xs = '[["a"], ["b"], []]'
    rep3 = "[[], [], []]"
    head = (f"func.func @{name}(%x: {tx}{ann(xs)}, %target: {tx}{ann(xs)}, "
            f"%wq: {tw}{ann(rep3)}, %wk: {tw}{ann(rep3)}, %wv: {tw}{ann(rep3)}, "
            f"%wo: {to}{ann(rep3)}) -> ({tw}, {tw}, {tw}, {to}) {{")
    em.emit("%zero = arith.constant 0.0 : f32")
    em.emit("%ninf = arith.constant 0xFF800000 : f32")
    em.emit("%scale = arith.constant 0.5 : f32")
    em.emit("%lr = arith.constant 0.05 : f32")
    em.emit("%c0 = arith.constant 0 : index")
    em.emit("%c1 = arith.constant 1 : index")
    em.emit("%c3 = arith.constant 3 : index")
    types = f"{tw}, {tw}, {tw}, {to}"
    em.emit("%w:4 = scf.for %it = %c0 to %c3 step %c1 iter_args(%q0 = %wq, "
            f"%k0 = %wk, %v0 = %wv, %o0 = %wo) -> ({types}) {{")
    updated = step(em, "%x", "%target", "%q0", "%k0", "%v0", "%o0")
    em.emit(f"  scf.yield {', '.join(updated)} : {types}")
    em.emit("}")
    em.emit(f"return %w#0, %w#1, %w#2, %w#3 : {types}")
    return "\n".join([head] + em.lines + ["}"])


def scenario04():
    """The hand-written scenario 04 (examples/scenarios/04_ulysses) on global
    shapes: q, k, v [B, S, H, D] split by replica over "a" and by sequence
    over "b"; softmax attention with the heads split (the constraint Ulysses
    is), o back to the sequence split, y = o Wo, loss = 0.5 * sum(y^2)
    averaged over the replicas, and Wo's gradient o^T y averaged likewise
    (DeepSpeed's averaging of non-attention gradients)."""
    SIZES.update({"b": 2, "s": 16, "t": 16, "h": 4, "d": 8, "f": 8})
    em = Emitter(True)
    t4, to = tt(shape_of("bshd")), tt(shape_of("hdf"))
    seq = '[["a"], ["b"], [], []]'
    head = (f"func.func @ulysses(%q: {t4} {{mesh.sharding = #mesh.sharding<@m24, {seq}>}}, "
            f"%k: {t4} {{mesh.sharding = #mesh.sharding<@m24, {seq}>}}, "
            f"%v: {t4} {{mesh.sharding = #mesh.sharding<@m24, {seq}>}}, "
            f"%wo: {to}) -> ({t4} {{mesh.sharding = #mesh.sharding<@m24, {seq}>}}, "
            f"{to}, tensor<f32>) {{")
    for line in ("%zero = arith.constant 0.0 : f32",
                 "%ninf = arith.constant 0xFF800000 : f32",
                 "%scale = arith.constant 0.35355339 : f32",
                 "%half = arith.constant 0.25 : f32"):
        em.emit(line)
    q, k, v = (em.constrain(x, "bshd", HEADS) for x in ("%q", "%k", "%v"))
    _, o = attention(em, q, k, v)
    y = em.einsum("bshd,hdf->bsf", o, "%wo")
    # Averaged over the 2 replicas: the gradient of mean_replicas(0.5 y^2).
    dwo = em.einsum("bshd,bsf->hdf", o, y)
    dwo = em.elementwise("hdf", [dwo], ["%r = arith.mulf %a0, %half : f32",
                                        "%r2 = arith.addf %r, %r : f32",
                                        "linalg.yield %r2 : f32"])
    sq = em.elementwise("bsf", [y], ["%r = arith.mulf %a0, %a0 : f32",
                                     "%r2 = arith.mulf %r, %half : f32",
                                     "linalg.yield %r2 : f32"])
    e0 = em.fresh()
    f0 = em.fresh()
    loss = em.fresh()
    em.emit(f"{e0} = tensor.empty() : tensor<f32>")
    em.emit(f"{f0} = linalg.fill ins(%zero : f32) outs({e0} : tensor<f32>) -> tensor<f32>")
    em.emit(f"{loss} = linalg.reduce ins({sq} : {tt(shape_of('bsf'))}) outs({f0} : tensor<f32>) dimensions = [0, 1, 2]")
    em.emit("  (%in: f32, %acc: f32) {")
    em.emit("    %c = arith.addf %in, %acc : f32")
    em.emit("    linalg.yield %c : f32")
    em.emit("  }")
    em.emit(f"return {o}, {dwo}, {loss} : {t4}, {to}, tensor<f32>")
    return "\n".join([head] + em.lines + ["}"])


def dense(shape, salt):
    n = 1
    for d in shape:
        n *= d
    vals = [((i * 37 + salt * 11) % 17 - 8) / 16.0 for i in range(n)]
    return (f"dense<[{', '.join(repr(v) for v in vals)}]> : "
            f"{tt([n])}")


def check_main(corrupt):
    tx, tw, to = tt([B, S, E]), tt([E, H, D]), tt([H, D, E])
    lines = ["func.func @main() -> i32 {"]
    args = []
    for salt, (name, shape) in enumerate([("x", [B, S, E]), ("t", [B, S, E]),
                                          ("wq", [E, H, D]), ("wk", [E, H, D]),
                                          ("wv", [E, H, D]), ("wo", [H, D, E])]):
        n = 1
        for d in shape:
            n *= d
        lines.append(f"  %{name}_flat = arith.constant {dense(shape, salt)}")
        groups = "[[" + ", ".join(str(i) for i in range(len(shape))) + "]]"
        lines.append(f"  %{name} = tensor.expand_shape %{name}_flat {groups} "
                     f"output_shape [{', '.join(map(str, shape))}] : "
                     f"{tt([n])} into {tt(shape)}")
        args.append(f"%{name}")
    sig = f"({tx}, {tx}, {tw}, {tw}, {tw}, {to}) -> ({tw}, {tw}, {tw}, {to})"
    lines.append(f"  %got:4 = call @ulysses_train({', '.join(args)}) : {sig}")
    lines.append(f"  %want:4 = call @ulysses_train_ref({', '.join(args)}) : {sig}")
    lines += ["  %zero = arith.constant 0.0 : f32",
              "  %es = tensor.empty() : tensor<f32>",
              "  %f0 = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>"]
    worst = "%zero"
    for i, t in enumerate((tw, tw, tw, to)):
        ident = "affine_map<(d0, d1, d2) -> (d0, d1, d2)>"
        lines += [f"  %em{i} = tensor.empty() : {t}",
                  f"  %d{i} = linalg.generic {{indexing_maps = [{ident}, {ident}, {ident}], "
                  f"iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}} "
                  f"ins(%got#{i}, %want#{i} : {t}, {t}) outs(%em{i} : {t}) {{",
                  "  ^bb0(%a: f32, %b: f32, %o: f32):",
                  "    %d = arith.subf %a, %b : f32",
                  "    %ad = math.absf %d : f32",
                  "    linalg.yield %ad : f32",
                  f"  }} -> {t}",
                  f"  %m{i} = linalg.reduce ins(%d{i} : {t}) outs(%f0 : tensor<f32>) dimensions = [0, 1, 2]",
                  "    (%in: f32, %acc: f32) {",
                  "      %m = arith.maximumf %in, %acc : f32",
                  "      linalg.yield %m : f32",
                  "    }",
                  f"  %x{i} = tensor.extract %m{i}[] : tensor<f32>",
                  f"  %w{i} = arith.maximumf {worst}, %x{i} : f32"]
        worst = f"%w{i}"
    if corrupt:
        lines += ["  %one = arith.constant 1.0 : f32",
                  f"  %bad = arith.addf {worst}, %one : f32"]
        worst = "%bad"
    lines += ["  %tol = arith.constant 1.0e-04 : f32",
              f"  %ok = arith.cmpf ole, {worst}, %tol : f32",
              "  cf.assert %ok, \"ulysses softmax training: the partitioned "
              "weights differ from the unannotated ones by more than 1e-4\"",
              "  %rc = arith.constant 0 : i32",
              "  return %rc : i32",
              "}"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--corrupt", action="store_true")
    ap.add_argument("--scenario04", action="store_true",
                    help="the hand-written scenario 04's program on global "
                         "shapes instead (for comparing their plans)")
    a = ap.parse_args()
    if a.scenario04:
        print('mesh.mesh @m24(["a" = 2, "b" = 4])\n' + scenario04())
        return
    out = ['mesh.mesh @m24(["a" = 2, "b" = 4])',
           function("ulysses_train", True)]
    if a.check:
        out += [function("ulysses_train_ref", False), check_main(a.corrupt)]
    print("\n".join(out))


if __name__ == "__main__":
    main()

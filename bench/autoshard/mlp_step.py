#!/usr/bin/env python3
"""One training step of an L-layer MLP on global shapes, for mesh-auto-shard
and for the hand plans it is compared with.

Layer i: z_i = a_{i-1} @ W_i, a_i = relu(z_i) (the last layer has no relu);
the loss gradient is a_L - t; the backward is written out (dW_i =
a_{i-1}^T @ dz_i, da_{i-1} = dz_i @ W_i^T, the relu's mask); SGD updates
every W_i, returned as result i. Weights alternate [H, F] and [F, H].

Plans (--plan), on the mesh --mesh gives ("d=8" or "dp=2,tp=4"):
  auto : only x and t annotated (batch over --batch-axes, default every
         axis); each W_i carries to result i (mesh.carried), so a plan is a
         steady state of a training loop;
  ddp  : batch over every axis, weights replicated;
  fsdp : batch over every axis, weights split by their first dim over
         every axis;
  hsdp : batch over every axis, weights split by their first dim over the
         last axis;
  tp   : Megatron TP on (dp, tp): batch over the first axis, W_i split by
         output features (i even) or input features (i odd) over the last;
  none : no annotation (the reference).

--steps N (N > 0) writes the step as the body of an scf.for of N steps
that carries the weights (a training loop); the results are the weights
after the last step. With --plan auto, the batch is constrained to its
layout in each step (mesh.shard), as each device keeps its part.

--calls writes each product as a call to a private function (one per
shape), as frontends that keep functions write it.

--check writes a program for mesh-compile: @main runs the step with the
plan and without annotations on the same inputs and asserts that every
updated weight agrees within 1e-4.

Usage: mlp_step.py [--plan P] [--layers L] [--batch B] [--hidden H]
                   [--ffn F] [--mesh SPEC] [--batch-axes a,b] [--steps N]
                   [--calls] [--check]
"""
import argparse
import os
import sys

# The inputs' values: the GPT stack's (small exact binary fractions).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "partition"))
from gpt import values  # noqa: E402


def tt(shape, et="f32"):
    return "tensor<" + "x".join(map(str, shape)) + "x" + et + ">"


def sh(dims):
    return "#mesh.sharding<@m, [" + ", ".join(
        "[" + ", ".join(f'"{a}"' for a in d) + "]" for d in dims) + "]>"


def program(plan, L, B, H, F, mesh, batch_axes, name="step", with_mesh=True,
            steps=0, calls=False):
    axes = [a for a, _ in mesh]
    batch = batch_axes or axes
    if plan == "tp":
        batch = [axes[0]]
    dims = [H] + [F if i % 2 == 0 else H for i in range(L)]
    wshape = [[dims[i], dims[i + 1]] for i in range(L)]

    def wsh(i):
        if plan in ("auto", "none"):
            return None
        if plan == "ddp":
            return [[], []]
        if plan == "fsdp":
            return [axes, []]
        if plan == "hsdp":
            return [[axes[-1]], []]
        if plan == "tp":
            return [[], [axes[-1]]] if i % 2 == 0 else [[axes[-1]], []]
        raise ValueError(plan)

    bs = "" if plan == "none" else f" {{mesh.sharding = {sh([batch, []])}}}"
    args = [f"%x: {tt([B, H])}{bs}", f"%t: {tt([B, dims[L]])}{bs}"]
    results = []
    for i in range(L):
        s = wsh(i)
        if plan == "none":
            args.append(f"%w{i}{'_in' if steps else ''}: {tt(wshape[i])}")
            results.append(tt(wshape[i]))
            continue
        attrs = [f"mesh.carried = {i} : i64"] if plan == "auto" else \
            [f"mesh.sharding = {sh(s)}"]
        args.append(f"%w{i}{'_in' if steps else ''}: {tt(wshape[i])} "
                    f"{{{', '.join(attrs)}}}")
        results.append(tt(wshape[i]) if plan == "auto" else
                       f"{tt(wshape[i])} {{mesh.sharding = {sh(s)}}}")
    out = [f"mesh.mesh @m([{', '.join(f'{chr(34)}{a}{chr(34)} = {n}' for a, n in mesh)}])"] if with_mesh else []
    out += [f"func.func @{name}({', '.join(args)}) -> ({', '.join(results)}) {{",
           "  %c0 = arith.constant 0.0 : f32",
           "  %lr = arith.constant 0.01 : f32"]
    wtypes = ", ".join(tt(w) for w in wshape)
    if steps:
        # The step as the body of a training loop carrying the weights.
        out += ["  %lb = arith.constant 0 : index",
                f"  %ub = arith.constant {steps} : index",
                "  %one = arith.constant 1 : index",
                f"  %loop:{L} = scf.for %it = %lb to %ub step %one iter_args("
                + ", ".join(f"%w{i} = %w{i}_in" for i in range(L))
                + f") -> ({wtypes}) {{"]
    n = [0]

    def fresh():
        n[0] += 1
        return f"%v{n[0]}"

    def emit(s):
        out.append("    " + s if steps else "  " + s)

    def filled(shape):
        e, f = fresh(), fresh()
        emit(f"{e} = tensor.empty() : {tt(shape)}")
        emit(f"{f} = linalg.fill ins(%c0 : f32) outs({e} : {tt(shape)}) -> {tt(shape)}")
        return f

    callees = {}

    def matmul(a, b, m, k, nn):
        r = fresh()
        if calls:
            # A private function per shape, called at each product.
            callee = f"@{name}_mm_{m}x{k}x{nn}"
            if callee not in callees:
                callees[callee] = "\n".join([
                    f"func.func private {callee}(%a: {tt([m, k])}, %b: {tt([k, nn])}) -> {tt([m, nn])} {{",
                    "  %z = arith.constant 0.0 : f32",
                    f"  %e = tensor.empty() : {tt([m, nn])}",
                    f"  %f = linalg.fill ins(%z : f32) outs(%e : {tt([m, nn])}) -> {tt([m, nn])}",
                    f"  %r = linalg.matmul ins(%a, %b : {tt([m, k])}, {tt([k, nn])}) outs(%f : {tt([m, nn])}) -> {tt([m, nn])}",
                    f"  return %r : {tt([m, nn])}",
                    "}"])
            emit(f"{r} = func.call {callee}({a}, {b}) : ({tt([m, k])}, {tt([k, nn])}) -> {tt([m, nn])}")
            return r
        emit(f"{r} = linalg.matmul ins({a}, {b} : {tt([m, k])}, {tt([k, nn])}) "
             f"outs({filled([m, nn])} : {tt([m, nn])}) -> {tt([m, nn])}")
        return r

    def transpose(a, shape):
        e, r = fresh(), fresh()
        emit(f"{e} = tensor.empty() : {tt(shape[::-1])}")
        emit(f"{r} = linalg.transpose ins({a} : {tt(shape)}) outs({e} : {tt(shape[::-1])}) permutation = [1, 0]")
        return r

    def zeros(shape):
        z = fresh()
        emit(f"{z} = arith.constant dense<0.0> : {tt(shape)}")
        return z

    x, t = "%x", "%t"
    if steps and plan == "auto":
        # Each device keeps its part of the batch in every step (the same
        # batch could otherwise be gathered once, before the loop).
        x, t = "%xs", "%ts"
        emit(f"%xs = mesh.shard %x : {tt([B, H])} to {sh([batch, []])}")
        emit(f"%ts = mesh.shard %t : {tt([B, dims[L]])} to {sh([batch, []])}")
    acts, pre = [x], []
    for i in range(L):
        z = matmul(acts[-1], f"%w{i}", B, dims[i], dims[i + 1])
        pre.append(z)
        if i < L - 1:
            a = fresh()
            emit(f"{a} = arith.maximumf {z}, {zeros([B, dims[i + 1]])} : {tt([B, dims[i + 1]])}")
            acts.append(a)
        else:
            acts.append(z)
    dz = fresh()
    emit(f"{dz} = arith.subf {acts[-1]}, {t} : {tt([B, dims[L]])}")
    grads = [None] * L
    for i in reversed(range(L)):
        at = transpose(acts[i], [B, dims[i]])
        grads[i] = matmul(at, dz, dims[i], B, dims[i + 1])
        if i > 0:
            wt = transpose(f"%w{i}", wshape[i])
            da = matmul(dz, wt, B, dims[i + 1], dims[i])
            zero = zeros([B, dims[i]])
            pos, d = fresh(), fresh()
            emit(f"{pos} = arith.cmpf ogt, {pre[i - 1]}, {zero} : {tt([B, dims[i]])}")
            emit(f"{d} = arith.select {pos}, {da}, {zero} : {tt([B, dims[i]], 'i1')}, {tt([B, dims[i]])}")
            dz = d
    new = []
    for i in range(L):
        lr, s, nw = fresh(), fresh(), fresh()
        emit(f"{lr} = tensor.splat %lr : {tt(wshape[i])}")
        emit(f"{s} = arith.mulf {grads[i]}, {lr} : {tt(wshape[i])}")
        emit(f"{nw} = arith.subf %w{i}, {s} : {tt(wshape[i])}")
        new.append(nw)
    if steps:
        emit(f"scf.yield {', '.join(new)} : {wtypes}")
        out.append("  }")
        new = [f"%loop#{i}" for i in range(L)]
    out.append(f"  return {', '.join(new)} : {wtypes}")
    out.append("}")
    out += callees.values()
    return "\n".join(out)


def check_program(plan, L, B, H, F, mesh, batch_axes, steps=0, calls=False):
    dims = [H] + [F if i % 2 == 0 else H for i in range(L)]
    wshape = [[dims[i], dims[i + 1]] for i in range(L)]
    lines = [program(plan, L, B, H, F, mesh, batch_axes, "step", True, steps,
                     calls),
             program("none", L, B, H, F, mesh, batch_axes, "step_ref", False,
                     steps, calls),
             "func.func @main() -> i32 {",
             "  %zero = arith.constant 0.0 : f32",
             "  %tol = arith.constant 1.0e-04 : f32"]
    specs = [("x", [B, H]), ("t", [B, dims[L]])] + \
        [(f"w{i}", wshape[i]) for i in range(L)]
    for salt, (name, shape) in enumerate(specs):
        vals = values(shape[0] * shape[1], salt)
        lines.append(f"  %{name} = arith.constant dense<[{', '.join('[' + ', '.join(repr(v) for v in vals[r * shape[1]:(r + 1) * shape[1]]) + ']' for r in range(shape[0]))}]> : {tt(shape)}")
    sig = f"({', '.join(tt(s) for _, s in specs)}) -> ({', '.join(tt(w) for w in wshape)})"
    ops = ", ".join(f"%{n}" for n, _ in specs)
    lines.append(f"  %got:{L} = call @step({ops}) : {sig}")
    lines.append(f"  %want:{L} = call @step_ref({ops}) : {sig}")
    for i in range(L):
        t = tt(wshape[i])
        lines += [
            f"  %e{i} = tensor.empty() : {t}",
            f"  %d{i} = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], "
            f"iterator_types = [\"parallel\", \"parallel\"]}} ins(%got#{i}, %want#{i} : {t}, {t}) outs(%e{i} : {t}) {{",
            "  ^bb0(%a: f32, %b: f32, %o: f32):",
            "    %d = arith.subf %a, %b : f32",
            "    %ad = math.absf %d : f32",
            "    linalg.yield %ad : f32",
            f"  }} -> {t}",
            f"  %r{i}e = tensor.empty() : tensor<f32>",
            f"  %r{i}f = linalg.fill ins(%zero : f32) outs(%r{i}e : tensor<f32>) -> tensor<f32>",
            f"  %r{i} = linalg.reduce ins(%d{i} : {t}) outs(%r{i}f : tensor<f32>) dimensions = [0, 1]",
            "    (%in: f32, %acc: f32) {",
            "      %m = arith.maximumf %in, %acc : f32",
            "      linalg.yield %m : f32",
            "    }",
            f"  %m{i} = tensor.extract %r{i}[] : tensor<f32>",
            f"  %ok{i} = arith.cmpf ole, %m{i}, %tol : f32",
            f"  cf.assert %ok{i}, \"mlp step ({plan}): weight {i} differs from the unannotated step by more than 1e-4\""]
    lines += ["  %rc = arith.constant 0 : i32", "  return %rc : i32", "}"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", choices=["auto", "ddp", "fsdp", "hsdp", "tp",
                                       "none"],
                    default="auto")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--ffn", type=int, default=64)
    ap.add_argument("--mesh", default="d=8")
    ap.add_argument("--batch-axes", default="")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--calls", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    mesh = [(k, int(v)) for k, v in (e.split("=") for e in a.mesh.split(","))]
    batch_axes = [x for x in a.batch_axes.split(",") if x]
    if a.check:
        print(check_program(a.plan, a.layers, a.batch, a.hidden, a.ffn, mesh,
                            batch_axes, a.steps, a.calls))
    else:
        print(program(a.plan, a.layers, a.batch, a.hidden, a.ffn, mesh,
                      batch_axes, steps=a.steps, calls=a.calls))


if __name__ == "__main__":
    main()

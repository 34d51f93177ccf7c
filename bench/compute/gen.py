#!/usr/bin/env python3
"""Writes bench/compute's kernels (kernels.mlir) and the table the driver
and the peers share (kernels.json): each kernel's name, its inputs' shapes,
its output's shape and its FLOP or byte count.

Every kernel is a func.func on tensors with llvm.emit_c_interface, written
the way a frontend writes it (torch-mlir's spelling: a fill of zero and a
named contraction, broadcast bias adds as linalg.generic, softmax as max,
sub, exp, sum, div).

COMPUTE_SIZES=gpu (bench/compute/gpu_pack.sh) writes the same kernels at
sizes for one GPU, plus a larger GPT block, gpt_xl; unset (or cpu), the sizes
of bench/compute/run.sh."""
import json
import os
import sys

def tt(shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"

def amap(n, dims):
    ds = ", ".join(f"d{i}" for i in range(n))
    return f"affine_map<({ds}) -> ({', '.join(f'd{i}' for i in dims)})>"

K = []  # (name, mlir, inputs, output, work, unit)
HEADS = {}  # GPT block name -> its number of heads (kernels.json "heads")

def matmul(n, epilogue=False):
    name = f"matmul{n}" + ("_bias_relu" if epilogue else "")
    a, b, c = (n, n), (n, n), (n, n)
    ins = [a, b] + ([(n,)] if epilogue else [])
    args = ", ".join(f"%a{i}: {tt(s)}" for i, s in enumerate(ins))
    s = [f"func.func @{name}({args}) -> {tt(c)} attributes {{llvm.emit_c_interface}} {{",
         "  %zero = arith.constant 0.0 : f32",
         f"  %e = tensor.empty() : {tt(c)}",
         f"  %f = linalg.fill ins(%zero : f32) outs(%e : {tt(c)}) -> {tt(c)}",
         f"  %m = linalg.matmul ins(%a0, %a1 : {tt(a)}, {tt(b)}) outs(%f : {tt(c)}) -> {tt(c)}"]
    out = "%m"
    if epilogue:
        s += [f"  %r = linalg.generic {{indexing_maps = [{amap(2, [0, 1])}, {amap(2, [1])}, {amap(2, [0, 1])}], iterator_types = [\"parallel\", \"parallel\"]}} ins(%m, %a2 : {tt(c)}, {tt((n,))}) outs(%e : {tt(c)}) {{",
              "  ^bb0(%x: f32, %bias: f32, %o: f32):",
              "    %y = arith.addf %x, %bias : f32",
              "    %z = arith.maximumf %y, %zero : f32",
              "    linalg.yield %z : f32",
              f"  }} -> {tt(c)}"]
        out = "%r"
    s += [f"  return {out} : {tt(c)}", "}"]
    K.append((name, "\n".join(s), ins, c, 2 * n ** 3, "GFLOP/s"))

def bmm(bh, s_, d, which):
    # scores = q @ k^T-ish as batch_matmul [bh, s, d] x [bh, d, s]; pv = p @ v.
    if which == "scores":
        a, b, c = (bh, s_, d), (bh, d, s_), (bh, s_, s_)
        kdim = d
    else:
        a, b, c = (bh, s_, s_), (bh, s_, d), (bh, s_, d)
        kdim = s_
    name = f"bmm_{which}"
    s = [f"func.func @{name}(%a0: {tt(a)}, %a1: {tt(b)}) -> {tt(c)} attributes {{llvm.emit_c_interface}} {{",
         "  %zero = arith.constant 0.0 : f32",
         f"  %e = tensor.empty() : {tt(c)}",
         f"  %f = linalg.fill ins(%zero : f32) outs(%e : {tt(c)}) -> {tt(c)}",
         f"  %m = linalg.batch_matmul ins(%a0, %a1 : {tt(a)}, {tt(b)}) outs(%f : {tt(c)}) -> {tt(c)}",
         f"  return %m : {tt(c)}", "}"]
    K.append((name, "\n".join(s), [a, b], c, 2 * c[0] * c[1] * c[2] * kdim, "GFLOP/s"))

def elementwise_chain(n):
    # 8 ops: ((((x * y + x) - y) * 0.5 + 1) max 0) * x   (x, y in; one out)
    shp = (n,)
    m = amap(1, [0])
    s = [f"func.func @ew_chain(%a0: {tt(shp)}, %a1: {tt(shp)}) -> {tt(shp)} attributes {{llvm.emit_c_interface}} {{",
         "  %half = arith.constant 0.5 : f32", "  %one = arith.constant 1.0 : f32",
         "  %zero = arith.constant 0.0 : f32",
         f"  %e = tensor.empty() : {tt(shp)}"]
    body = [("%a0, %a1", "arith.mulf %x0, %x1"), ("%v0, %a0", "arith.addf %x0, %x1"),
            ("%v1, %a1", "arith.subf %x0, %x1"), ("%v2, %a0", "arith.mulf %x0, %half"),
            ("%v3, %a0", "arith.addf %x0, %one"), ("%v4, %a0", "arith.maximumf %x0, %zero"),
            ("%v5, %a0", "arith.mulf %x0, %x1"), ("%v6, %a1", "arith.addf %x0, %x1")]
    for i, (ins, op) in enumerate(body):
        s += [f"  %v{i} = linalg.generic {{indexing_maps = [{m}, {m}, {m}], iterator_types = [\"parallel\"]}} ins({ins} : {tt(shp)}, {tt(shp)}) outs(%e : {tt(shp)}) {{",
              "  ^bb0(%x0: f32, %x1: f32, %o: f32):",
              f"    %y = {op} : f32", "    linalg.yield %y : f32", f"  }} -> {tt(shp)}"]
    s += [f"  return %v7 : {tt(shp)}", "}"]
    K.append(("ew_chain", "\n".join(s), [shp, shp], shp, 3 * 4 * n, "GB/s"))

def reduce_row(rows, cols, init, op_lines, name_in, out, src):
    """A row reduction of `src` into a new [rows] tensor."""
    r2, r1 = (rows, cols), (rows,)
    return [f"  %{out}_i = linalg.fill ins({init} : f32) outs(%er : {tt(r1)}) -> {tt(r1)}",
            f"  %{out} = linalg.generic {{indexing_maps = [{amap(2, [0, 1])}, {amap(2, [0])}], iterator_types = [\"parallel\", \"reduction\"]}} ins({src} : {tt(r2)}) outs(%{out}_i : {tt(r1)}) {{",
            "  ^bb0(%x: f32, %acc: f32):"] + [f"    {l}" for l in op_lines] + [
            "    linalg.yield %y : f32", f"  }} -> {tt(r1)}"]

def rowwise(rows, cols, out, ins, body):
    """An elementwise op over [rows, cols] whose second input may be a row vector."""
    r2 = (rows, cols)
    maps = [amap(2, [0, 1]) if shp == r2 else amap(2, [0]) for _, shp in ins]
    names = ", ".join(n for n, _ in ins)
    types = ", ".join(tt(shp) for _, shp in ins)
    args = ", ".join(f"%x{i}: f32" for i in range(len(ins)))
    return [f"  %{out} = linalg.generic {{indexing_maps = [{', '.join(maps)}, {amap(2, [0, 1])}], iterator_types = [\"parallel\", \"parallel\"]}} ins({names} : {types}) outs(%e : {tt(r2)}) {{",
            f"  ^bb0({args}, %o: f32):"] + [f"    {l}" for l in body] + [
            "    linalg.yield %y : f32", f"  }} -> {tt(r2)}"]

def softmax(rows, cols):
    r2, r1 = (rows, cols), (rows,)
    s = [f"func.func @softmax(%a0: {tt(r2)}) -> {tt(r2)} attributes {{llvm.emit_c_interface}} {{",
         "  %lowest = arith.constant -3.40282347e+38 : f32", "  %zero = arith.constant 0.0 : f32",
         f"  %e = tensor.empty() : {tt(r2)}", f"  %er = tensor.empty() : {tt(r1)}"]
    s += reduce_row(rows, cols, "%lowest", ["%y = arith.maximumf %x, %acc : f32"], "", "mx", "%a0")
    s += rowwise(rows, cols, "sub", [("%a0", r2), ("%mx", r1)], ["%y = arith.subf %x0, %x1 : f32"])
    s += rowwise(rows, cols, "ex", [("%sub", r2)], ["%y = math.exp %x0 : f32"])
    s += reduce_row(rows, cols, "%zero", ["%y = arith.addf %x, %acc : f32"], "", "sm", "%ex")
    s += rowwise(rows, cols, "dv", [("%ex", r2), ("%sm", r1)], ["%y = arith.divf %x0, %x1 : f32"])
    s += [f"  return %dv : {tt(r2)}", "}"]
    K.append(("softmax", "\n".join(s), [r2], r2, 2 * 4 * rows * cols, "GB/s"))

def layernorm(rows, cols):
    r2, r1 = (rows, cols), (rows,)
    s = [f"func.func @layernorm(%a0: {tt(r2)}, %a1: {tt((cols,))}, %a2: {tt((cols,))}) -> {tt(r2)} attributes {{llvm.emit_c_interface}} {{",
         "  %zero = arith.constant 0.0 : f32", f"  %n = arith.constant {float(cols)} : f32",
         "  %eps = arith.constant 1.0e-05 : f32",
         f"  %e = tensor.empty() : {tt(r2)}", f"  %er = tensor.empty() : {tt(r1)}"]
    s += reduce_row(rows, cols, "%zero", ["%y = arith.addf %x, %acc : f32"], "", "sum", "%a0")
    s += rowwise(rows, cols, "xc", [("%a0", r2), ("%sum", r1)],
                 ["%mean = arith.divf %x1, %n : f32", "%y = arith.subf %x0, %mean : f32"])
    s += reduce_row(rows, cols, "%zero", ["%sq = arith.mulf %x, %x : f32", "%y = arith.addf %sq, %acc : f32"], "", "ss", "%xc")
    s += [f"  %rs = linalg.generic {{indexing_maps = [{amap(1, [0])}, {amap(1, [0])}], iterator_types = [\"parallel\"]}} ins(%ss : {tt(r1)}) outs(%er : {tt(r1)}) {{",
          "  ^bb0(%x: f32, %o: f32):", "    %v = arith.divf %x, %n : f32", "    %ve = arith.addf %v, %eps : f32",
          "    %y = math.rsqrt %ve : f32", "    linalg.yield %y : f32", f"  }} -> {tt(r1)}"]
    s += [f"  %out = linalg.generic {{indexing_maps = [{amap(2, [0, 1])}, {amap(2, [0])}, {amap(2, [1])}, {amap(2, [1])}, {amap(2, [0, 1])}], iterator_types = [\"parallel\", \"parallel\"]}} ins(%xc, %rs, %a1, %a2 : {tt(r2)}, {tt(r1)}, {tt((cols,))}, {tt((cols,))}) outs(%e : {tt(r2)}) {{",
          "  ^bb0(%x: f32, %r: f32, %w: f32, %b: f32, %o: f32):", "    %t = arith.mulf %x, %r : f32",
          "    %u = arith.mulf %t, %w : f32", "    %y = arith.addf %u, %b : f32", "    linalg.yield %y : f32",
          f"  }} -> {tt(r2)}", f"  return %out : {tt(r2)}", "}"]
    K.append(("layernorm", "\n".join(s), [r2, (cols,), (cols,)], r2, 2 * 4 * rows * cols, "GB/s"))

def sum_all(rows, cols):
    """A reduction to one value (a loss's sum): no parallel dimension."""
    r2 = (rows, cols)
    s = [f"func.func @sum_all(%a0: {tt(r2)}) -> tensor<f32> attributes {{llvm.emit_c_interface}} {{",
         "  %zero = arith.constant 0.0 : f32", "  %e = tensor.empty() : tensor<f32>",
         "  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>",
         f"  %r = linalg.reduce ins(%a0 : {tt(r2)}) outs(%f : tensor<f32>) dimensions = [0, 1]",
         "    (%x: f32, %acc: f32) {", "      %y = arith.addf %x, %acc : f32",
         "      linalg.yield %y : f32", "    }", "  return %r : tensor<f32>", "}"]
    K.append(("sum_all", "\n".join(s), [r2], (), 4 * rows * cols, "GB/s"))

def gelu(n):
    shp = (n,)
    m = amap(1, [0])
    s = [f"func.func @gelu(%a0: {tt(shp)}) -> {tt(shp)} attributes {{llvm.emit_c_interface}} {{",
         "  %half = arith.constant 0.5 : f32", "  %one = arith.constant 1.0 : f32",
         "  %k = arith.constant 0.797884583 : f32", "  %c = arith.constant 4.471500e-02 : f32",
         f"  %e = tensor.empty() : {tt(shp)}",
         f"  %g = linalg.generic {{indexing_maps = [{m}, {m}], iterator_types = [\"parallel\"]}} ins(%a0 : {tt(shp)}) outs(%e : {tt(shp)}) {{",
         "  ^bb0(%x: f32, %o: f32):", "    %x3 = arith.mulf %x, %x : f32", "    %x3b = arith.mulf %x3, %x : f32",
         "    %t0 = arith.mulf %x3b, %c : f32", "    %t1 = arith.addf %x, %t0 : f32", "    %t2 = arith.mulf %t1, %k : f32",
         "    %t3 = math.tanh %t2 : f32", "    %t4 = arith.addf %t3, %one : f32", "    %t5 = arith.mulf %x, %t4 : f32",
         "    %y = arith.mulf %t5, %half : f32", "    linalg.yield %y : f32", f"  }} -> {tt(shp)}",
         f"  return %g : {tt(shp)}", "}"]
    K.append(("gelu", "\n".join(s), [shp], shp, 2 * 4 * n, "GB/s"))

def gpt_block(tag, B, S, H, N):
    """One block of bench/partition/gpt.py (torch-mlir's spelling), no plan."""
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "partition"))
    import gpt
    lines, _ = gpt.stack("none", 1, B, S, H, N, name=f"gpt_{tag}")
    i = next(i for i, l in enumerate(lines) if l.startswith(f"func.func @gpt_{tag}("))
    lines[i] = lines[i][:-2] + " attributes {llvm.emit_c_interface} {"
    body = "\n".join(l for l in lines if not l.startswith("mesh.mesh"))
    shapes = gpt.param_shapes(H, 4 * H)
    ins = [(B, S, H)] + [tuple(shapes[p]) for p in gpt.PARAMS]
    flops = 24 * B * S * H * H + 4 * B * S * S * H
    K.append((f"gpt_{tag}", body, ins, (B, S, H), flops, "GFLOP/s"))
    HEADS[f"gpt_{tag}"] = N

def jacobi(n):
    """One 5-point Jacobi step on an n x n grid with a zero boundary: pad by
    one, the four shifted slices, their mean (the spelling of bench/halo)."""
    g, pd = (n, n), (n + 2, n + 2)
    m = amap(2, [0, 1])
    s = [f"func.func @jacobi(%a0: {tt(g)}) -> {tt(g)} attributes {{llvm.emit_c_interface}} {{",
         "  %zero = arith.constant 0.0 : f32", "  %q = arith.constant 0.25 : f32",
         f"  %p = tensor.pad %a0 low[1, 1] high[1, 1] {{",
         "  ^bb0(%i: index, %j: index):", "    tensor.yield %zero : f32",
         f"  }} : {tt(g)} to {tt(pd)}"]
    for name, (r, c) in (("n", (0, 1)), ("s", (2, 1)), ("w", (1, 0)), ("e", (1, 2))):
        s.append(f"  %{name} = tensor.extract_slice %p[{r}, {c}] [{n}, {n}] [1, 1] : {tt(pd)} to {tt(g)}")
    s += [f"  %e0 = tensor.empty() : {tt(g)}",
          f"  %y = linalg.generic {{indexing_maps = [{m}, {m}, {m}, {m}, {m}], iterator_types = [\"parallel\", \"parallel\"]}} ins(%n, %s, %w, %e : {tt(g)}, {tt(g)}, {tt(g)}, {tt(g)}) outs(%e0 : {tt(g)}) {{",
          "  ^bb0(%x0: f32, %x1: f32, %x2: f32, %x3: f32, %o: f32):",
          "    %t0 = arith.addf %x0, %x1 : f32", "    %t1 = arith.addf %t0, %x2 : f32",
          "    %t2 = arith.addf %t1, %x3 : f32", "    %y = arith.mulf %t2, %q : f32",
          "    linalg.yield %y : f32", f"  }} -> {tt(g)}", f"  return %y : {tt(g)}", "}"]
    K.append(("jacobi", "\n".join(s), [g], g, 2 * 4 * n * n, "GB/s"))

def conv(tag, n, hw, c, f, k, stride, layout):
    """A 2-D convolution with no padding, as torch-mlir spells one: a fill
    of zero and linalg.conv_2d_nhwc_hwcf (NHWC input, HWCF filter) or
    conv_2d_nchw_fchw (NCHW, FCHW)."""
    o = (hw - k) // stride + 1
    if layout == "nhwc":
        x, w, y, op = (n, hw, hw, c), (k, k, c, f), (n, o, o, f), "conv_2d_nhwc_hwcf"
    else:
        x, w, y, op = (n, c, hw, hw), (f, c, k, k), (n, f, o, o), "conv_2d_nchw_fchw"
    name = f"conv_{tag}"
    s = [f"func.func @{name}(%a0: {tt(x)}, %a1: {tt(w)}) -> {tt(y)} attributes {{llvm.emit_c_interface}} {{",
         "  %zero = arith.constant 0.0 : f32",
         f"  %e = tensor.empty() : {tt(y)}",
         f"  %f = linalg.fill ins(%zero : f32) outs(%e : {tt(y)}) -> {tt(y)}",
         f"  %y = linalg.{op} {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}} "
         f"ins(%a0, %a1 : {tt(x)}, {tt(w)}) outs(%f : {tt(y)}) -> {tt(y)}",
         f"  return %y : {tt(y)}", "}"]
    K.append((name, "\n".join(s), [x, w], y, 2 * n * o * o * f * k * k * c, "GFLOP/s"))

# Each kernel's sizes, per target: "cpu" for one CPU thread, "gpu" for one
# H200 (products large enough to fill it, the memory-bound kernels on 2^25
# floats, 128 MiB per tensor, and a larger GPT block, gpt_xl).
SIZE_TABLE = [
    # generator, cpu sizes, gpu sizes
    (matmul, [(256,), (512,), (1024,)], [(1024,), (2048,), (4096,)]),
    (lambda n: matmul(n, epilogue=True), [(512,)], [(2048,)]),
    (bmm, [(32, 128, 64, "scores")], [(8 * 16, 512, 64, "scores")]),
    (bmm, [(32, 128, 64, "pv")], [(8 * 16, 512, 64, "pv")]),
    (elementwise_chain, [(1 << 22,)], [(1 << 25,)]),
    (softmax, [(4096, 1024)], [(8192, 4096)]),
    (layernorm, [(4096, 1024)], [(8192, 4096)]),
    (sum_all, [(4096, 1024)], [(8192, 4096)]),
    (gelu, [(1 << 22,)], [(1 << 25,)]),
    (jacobi, [(4096,)], [(8192,)]),
    # A ResNet 3x3 layer (NHWC) and an ImageNet stem, 7x7 stride 2 (NCHW).
    (conv, [("3x3", 8, 34, 64, 64, 3, 1, "nhwc")],
     [("3x3", 64, 58, 128, 128, 3, 1, "nhwc")]),
    (conv, [("stem", 2, 229, 3, 64, 7, 2, "nchw")],
     [("stem", 32, 229, 3, 64, 7, 2, "nchw")]),
    (gpt_block, [("small", 2, 128, 256, 4), ("large", 2, 128, 1024, 16)],
     [("small", 2, 128, 256, 4), ("large", 2, 128, 1024, 16),
      ("xl", 8, 512, 1024, 16)]),
]
TARGETS = ("cpu", "gpu")
SIZES = os.environ.get("COMPUTE_SIZES", "cpu")
if SIZES not in TARGETS:
    sys.exit(f"gen.py: COMPUTE_SIZES must be cpu or gpu, not '{SIZES}'")
for generator, *per_target in SIZE_TABLE:
    for args in per_target[TARGETS.index(SIZES)]:
        generator(*args)

with open(sys.argv[1], "w") as f:
    f.write("\n\n".join(k[1] for k in K) + "\n")
with open(sys.argv[2], "w") as f:
    json.dump([dict({"name": k[0], "inputs": k[2], "output": k[3], "work": k[4], "unit": k[5]},
                    **({"heads": HEADS[k[0]]} if k[0] in HEADS else {})) for k in K], f, indent=1)

# The driver's table: one entry per kernel, its C interface declared with
# the exact number of descriptor arguments.
if len(sys.argv) > 3:
    with open(sys.argv[3], "w") as f:
        f.write("// Generated by bench/compute/gen.py.\n")
        for k in K:
            params = ", ".join(["void *"] * (len(k[2]) + 1))
            f.write(f'extern "C" void _mlir_ciface_{k[0]}({params});\n')
        f.write("static const KernelInfo kKernels[] = {\n")
        for k in K:
            ins = ", ".join("{" + ", ".join(map(str, s)) + "}" for s in k[2])
            call = ", ".join(f"in[{i}]" for i in range(len(k[2])))
            f.write(f'  {{"{k[0]}", {{{ins}}}, {{{", ".join(map(str, k[3]))}}}, {k[4]}.0, "{k[5]}",\n'
                    f'   [](void *out, void **in) {{ _mlir_ciface_{k[0]}(out, {call}); }}}},\n')
        f.write("};\n")

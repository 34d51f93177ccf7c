#!/usr/bin/env python3
"""Checks the emulated driver's traces (MESHRT_EMU_TRACE) of meshrt-gpu-tests'
"gemm" mode on N ranks: what meshrt_gpu_gemm asked of the emulated cuBLASLt.

  check-gemm-trace.py DIR N

The program marks its steps ("mark case <name>", "mark repeat", ...); for
every rank r (file DIR/trace.r), section by section:
  * each case made exactly the cuBLASLt product its layouts call for: "gemm"
    line fields m, n, k (cuBLASLt's: D = C^T is n x m when C is row-major),
    batch, transa, transb, epilogue, compute type and the types of A and D
    (f16 or bf16 into f32 for the mixed products), and one plan (one
    "gemm plan-heuristic" line) per case, none for the products that need no
    cuBLASLt call (k = 0, m = 0; k = 0 zeroes C with one memset per row);
  * the plan cache: the same call five times through one slot is one plan
    and five products with no host synchronisation in between; another
    shape through the slot one more plan; the first shape again (same slot,
    another slot, other buffers) no plan; no slot, a plan per call; after
    meshrt_finalize and a new meshrt_init, the slot's plan is made once
    more, then reused;
  * a product, an all_reduce and a product chained on the stream with no
    host synchronisation between them;
  * every product on the shared stream with the 32 MiB workspace, except the
    case run on another stream (no workspace);
  * no "cublaslt-error" line outside the error section, exactly one inside
    (the operand that ends past its buffer; every other error is the
    runtime's, before cuBLASLt is called), and no product there;
  * one cuBLASLt handle per process, one workspace per runtime (two: the
    program starts the runtime twice), every allocation freed.
"""
import sys

from emutrace import fail, fields, read_trace

WORKSPACE = 32 << 20

# cuBLASLt's values (cublasLt.h, cublas_api.h).
DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS = 1, 2, 4, 6, 32, 36
C32F, C32F_TF32, C32F_16BF, C64F = 68, 77, 75, 70
R32F, R64F, R16F, R16BF = 0, 1, 2, 14


def product(m, n, k, batch=1, ta=0, tb=0, epilogue=DEFAULT, compute=C32F,
            atype=R32F, dtype=None):
    return {"m": m, "n": n, "k": k, "batch": batch, "transa": ta,
            "transb": tb, "epilogue": epilogue, "compute": compute,
            "atype": atype, "dtype": atype if dtype is None else dtype}


# Our row-major C (m x n) is cuBLASLt's D = C^T (n x m): the 5 x 7 x 3
# product of most cases is m=7 n=5 there. transa is our B read by columns,
# transb our A read by columns; a column-major C keeps m, n and transposes
# the row-major operands.
ROW = dict(m=7, n=5, k=3)
CASES = {
    "f32_rowmajor": product(**ROW),
    "f32_transposed_a": product(**ROW, tb=1),
    "f32_transposed_b": product(**ROW, ta=1),
    "f32_transposed_both": product(**ROW, ta=1, tb=1),
    "f32_padded_ld": product(**ROW),
    "f32_colmajor_c": product(5, 7, 3, ta=1, tb=1),
    "f32_colmajor_all": product(5, 7, 3),
    "f32_batched": product(6, 4, 5, batch=3),
    "f32_batched_colmajor_a": product(4, 3, 2, batch=2, tb=1),
    "f32_accumulate": product(**ROW),
    "f32_bias": product(**ROW, epilogue=BIAS),
    "f32_bias_relu": product(**ROW, epilogue=RELU_BIAS),
    "f32_bias_gelu": product(**ROW, epilogue=GELU_BIAS),
    "f32_relu": product(**ROW, epilogue=RELU),
    "f32_gelu_accumulate": product(**ROW, epilogue=GELU),
    "f32_11x13x9": product(13, 11, 9),
    "f64": product(**ROW, compute=C64F, atype=R64F),
    "f64_bias_relu": product(**ROW, epilogue=RELU_BIAS, compute=C64F,
                             atype=R64F),
    "f16": product(**ROW, atype=R16F),
    "f16_bias_gelu": product(**ROW, epilogue=GELU_BIAS, atype=R16F),
    "bf16": product(**ROW, atype=R16BF),
    "f16_into_f32": product(**ROW, atype=R16F, dtype=R32F),
    "bf16_into_f32_bias_relu": product(**ROW, ta=1, epilogue=RELU_BIAS,
                                       atype=R16BF, dtype=R32F),
    "f16_into_f32_batched_accumulate": product(6, 4, 5, batch=2, tb=1,
                                               atype=R16F, dtype=R32F),
    "bf16_into_f32_tf32_asked": product(**ROW, atype=R16BF, dtype=R32F),
    "tf32": product(**ROW, compute=C32F_TF32),
    "bf16_precision": product(**ROW, compute=C32F_16BF),
    "misaligned_views": product(**ROW),
    "other_stream": product(**ROW),
    "k0_zero": None,
    "k0_accumulate": None,
    "empty_m0": None,
}
PLAIN = product(4, 6, 5)  # The plan-cache product: 6 x 4 x 5, row-major.
# Sections after the cases: (plans, products, host syncs allowed).
SECTIONS = {
    "repeat": (1, [PLAIN] * 5, "after"),
    "reshape": (1, [product(4, 3, 5)], "after"),
    "back": (0, [PLAIN] * 3, "after"),
    "null-slot": (2, [PLAIN] * 2, "after"),
    "chain": (2, [product(6, 4, 3), product(5, 4, 6, epilogue=RELU)], "none"),
    "chain-end": (0, [], "any"),
    "errors": (1, [], "any"),
    "errors-end": (0, [], "any"),
    "reinit": (1, [PLAIN] * 2, "after"),
    "end": (0, [], "any"),
}


def sections(lines):
    """[(name, [lines])] split at the "mark" lines; "start" before the
    first."""
    out = [("start", [])]
    for l in lines:
        if l.startswith("mark "):
            out.append((l[len("mark "):], []))
        else:
            out[-1][1].append(l)
    return out


def check_rank(d, r):
    path, lines, s = read_trace(d, r)
    where = "rank %d (%s)" % (r, path)
    seen = []
    for name, body in sections(lines):
        w = "%s, section %r" % (where, name)
        plans = [l for l in body if l.startswith("gemm plan-heuristic ")]
        gemms = [fields(l) for l in body
                 if l.startswith("gemm ") and not l.startswith("gemm plan")]
        errors = [l for l in body if l.startswith("cublaslt-error ")]
        if name == "start":
            if plans or gemms:
                fail("%s: cuBLASLt used before the first case" % w)
            continue
        seen.append(name)
        if name.startswith("case "):
            case = name[len("case "):]
            if case not in CASES:
                fail("%s: unknown case" % w)
            want = CASES[case]
            want_gemms = [want] if want else []
            want_plans = 1 if want else 0
            syncs = "after"
        elif name in SECTIONS:
            want_plans, want_gemms, syncs = SECTIONS[name]
        else:
            fail("%s: unknown section" % w)
        if len(plans) != want_plans:
            fail("%s: %d plans made (heuristic queries), expected %d:\n  %s"
                 % (w, len(plans), want_plans, "\n  ".join(plans)))
        if len(gemms) != len(want_gemms):
            fail("%s: %d products, expected %d" % (w, len(gemms),
                                                  len(want_gemms)))
        for got, want in zip(gemms, want_gemms):
            for key, value in want.items():
                if got.get(key) != str(value):
                    fail("%s: product %s, expected %s=%s" %
                         (w, got, key, value))
            other = name == "case other_stream"
            if other == (got["stream"] == s):
                fail("%s: product on stream %s; the shared stream is %s" %
                     (w, got["stream"], s))
            if got["workspace"] != str(0 if other else WORKSPACE):
                fail("%s: workspace %s" % (w, got["workspace"]))
        if name == "errors":
            if len(errors) != 1 or "is not in one live device allocation" \
                    not in errors[0]:
                fail("%s: cuBLASLt refused %r; expected one operand past "
                     "its buffer" % (w, errors))
        elif errors:
            fail("%s: cuBLASLt refused a product: %s" % (w, errors))
        # No host synchronisation between the products of a section, nor,
        # in the chain, at all.
        if syncs != "any" and gemms:
            first = next(i for i, l in enumerate(body) if l.startswith("gemm ")
                         and not l.startswith("gemm plan"))
            last = max(i for i, l in enumerate(body) if l.startswith("gemm ")
                       and not l.startswith("gemm plan"))
            span = body[first:last + 1] if syncs == "after" else body
            if any(l.startswith("sync ") for l in span):
                fail("%s: a host synchronisation between products:\n  %s" %
                     (w, "\n  ".join(span)))
        if name == "chain":
            kinds = [l.split()[0] + (" " + l.split()[1] if l.startswith(
                "collective") else "") for l in body
                     if l.startswith(("gemm m=", "collective "))]
            if kinds != ["gemm", "collective all_reduce", "gemm"]:
                fail("%s: %s, expected a product, an all_reduce and a product"
                     " on the stream" % (w, kinds))
        if name == "case k0_zero":
            sets = [l for l in body if l.startswith("memset")]
            if len(sets) != 4 or any(f"stream={s}" not in l for l in sets):
                fail("%s: C zeroed by %s, expected 4 row memsets on %s" %
                     (w, sets, s))
    want_seen = ["case " + c for c in CASES] + list(SECTIONS)
    if seen != want_seen:
        fail("%s: sections %s, expected %s" % (where, seen, want_seen))
    handles = sum(1 for l in lines if l == "cublaslt-create")
    if handles != 1:
        fail("%s: %d cuBLASLt handles, expected one per process" %
             (where, handles))
    workspaces = [l for l in lines if l.startswith("alloc ")
                  and "bytes=%d " % WORKSPACE in l]
    if len(workspaces) != 2 or any(f"stream={s}" not in l
                                   for l in workspaces):
        fail("%s: workspaces %s, expected one on the shared stream per "
             "runtime (two)" % (where, workspaces))
    allocs = sum(1 for l in lines if l.startswith("alloc "))
    frees = sum(1 for l in lines if l.startswith("free "))
    if lines[-1] != "exit live_allocations=0 live_bytes=0" or allocs != frees:
        fail("%s: leaks: %d allocations, %d frees, last line %r" %
             (where, allocs, frees, lines[-1]))


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    for r in range(n):
        check_rank(d, r)
    print("PASS: %d traces checked, %d cases and the plan cache each" %
          (n, len(CASES)))


if __name__ == "__main__":
    main()

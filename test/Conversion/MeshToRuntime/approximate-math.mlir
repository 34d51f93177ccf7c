// RUN: mesh-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(mesh-approximate-math))" | FileCheck %s
// RUN: mesh-opt %s --split-input-file --mesh-math-to-libm | FileCheck %s --check-prefix=CHECK-LIBM
// RUN: %mesh_obj_root/bin/mesh-compile %S/Inputs/math-accuracy.mlir -o %t.bin && %t.bin

// exp, tanh and log on f32 become arithmetic (no call left); exp and log
// are wrapped so that subnormal results and arguments stay right: exp of
// x < -87 is exp(x / 2) squared, log of x < 2^-126 is log(x * 2^23) - 23 ln 2.
// CHECK-LABEL: func.func @hot
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.log
// CHECK-DAG: arith.constant -8.700000e+01 : f32
// CHECK-DAG: arith.constant 5.000000e-01 : f32
// CHECK-DAG: arith.constant 1.17549435E-38 : f32
// CHECK-DAG: arith.constant 0x4B000000 : f32
// CHECK-DAG: arith.constant 15.9423847 : f32
// CHECK: return
func.func @hot(%x: f32) -> (f32, f32, f32) {
  %e = math.exp %x : f32
  %t = math.tanh %x : f32
  %l = math.log %x : f32
  return %e, %t, %l : f32, f32, f32
}

// -----

// Functions whose approximations fail somewhere in the f32 range keep
// their library call; f64 is never approximated.
// CHECK-LABEL: func.func @kept
// CHECK: math.sin %{{.*}} : f32
// CHECK: math.cos %{{.*}} : f32
// CHECK: math.cbrt %{{.*}} : f32
// CHECK: math.atan2 %{{.*}} : f32
// CHECK: math.erfc %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f64
func.func @kept(%x: f32, %d: f64) -> (f32, f32, f32, f32, f32, f64) {
  %s = math.sin %x : f32
  %c = math.cos %x : f32
  %r = math.cbrt %x : f32
  %a = math.atan2 %x, %x : f32
  %e = math.erfc %x : f32
  %d2 = math.exp %d : f64
  return %s, %c, %r, %a, %e, %d2 : f32, f32, f32, f32, f32, f64
}

// -----

// bf16 is widened to f32 first, so its subnormals (f32's) are kept too.
// CHECK-LABEL: func.func @bf16
// CHECK-DAG: arith.extf %{{.*}} : bf16 to f32
// CHECK-DAG: arith.constant -8.700000e+01 : f32
// CHECK-NOT: math.exp
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @bf16(%x: bf16) -> bf16 {
  %e = math.exp %x : bf16
  return %e : bf16
}

// -----

// mesh-math-to-libm: the functions MathToLLVM cannot lower, and expm1 and
// log1p (which it would lower as exp(x) - 1 and log(1 + x)), become libm
// calls, elementwise for vectors; the others are left to MathToLLVM.
// CHECK-LIBM-LABEL: func.func @libm
// CHECK-LIBM: call @asinhf(%{{.*}}) : (f32) -> f32
// CHECK-LIBM: call @erf(%{{.*}}) : (f64) -> f64
// CHECK-LIBM: call @expm1(%{{.*}}) : (f64) -> f64
// CHECK-LIBM: call @log1p(%{{.*}}) : (f64) -> f64
// CHECK-LIBM: call @cbrtf(%{{.*}}) : (f32) -> f32
// CHECK-LIBM-COUNT-4: call @acoshf
// CHECK-LIBM: math.sqrt %{{.*}} : f32
// CHECK-LIBM: math.sin %{{.*}} : f32
func.func @libm(%x: f32, %d: f64, %v: vector<4xf32>) -> (f32, f64, f64, f64, f32, vector<4xf32>, f32, f32) {
  %a = math.asinh %x : f32
  %e = math.erf %d : f64
  %m = math.expm1 %d : f64
  %l = math.log1p %d : f64
  %c = math.cbrt %x : f32
  %h = math.acosh %v : vector<4xf32>
  %q = math.sqrt %x : f32
  %s = math.sin %x : f32
  return %a, %e, %m, %l, %c, %h, %q, %s : f32, f64, f64, f64, f32, vector<4xf32>, f32, f32
}

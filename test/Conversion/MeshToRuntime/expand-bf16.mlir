// RUN: mesh-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(mesh-expand-bf16))" | FileCheck %s
// RUN: %mesh_obj_root/bin/mesh-compile %S/Inputs/bf16-round.mlir -o %t.bin && %t.bin
// RUN: mesh-opt %S/Inputs/bf16-round.mlir --mesh-to-llvm | FileCheck %s --check-prefix=CHECK-LLVM

// --mesh-to-llvm leaves no arithmetic on bf16 for LLVM to widen (and round
// back with __truncsfbf2), and no arith fast-math attribute on the
// conversions' LLVM ops.
// CHECK-LLVM-NOT: {{(fadd|fsub|fmul|fdiv|sqrt|fcmp).*bf16}}
// CHECK-LLVM-NOT: #arith.fastmath

// Conversions to and from bf16 become integer arithmetic: no fptrunc is
// left for LLVM to lower to a call of __truncsfbf2 (which Debian 12's
// libgcc lacks).
// CHECK-LABEL: func.func @trunc
// CHECK-NOT: arith.truncf
// CHECK: arith.bitcast {{.*}} : f32 to i32
// CHECK: arith.bitcast {{.*}} : i16 to bf16
func.func @trunc(%a: f32) -> bf16 {
  %b = arith.truncf %a : f32 to bf16
  return %b : bf16
}

// -----

// CHECK-LABEL: func.func @extend
// CHECK-NOT: arith.extf
// CHECK: arith.shli
// CHECK: arith.bitcast {{.*}} : i32 to f32
func.func @extend(%a: bf16) -> f32 {
  %b = arith.extf %a : bf16 to f32
  return %b : f32
}

// -----

// Other conversions are left as they are.
// CHECK-LABEL: func.func @half
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @half(%a: f32) -> f16 {
  %b = arith.truncf %a : f32 to f16
  return %b : f16
}

// -----

// A bf16 math.fma (math-extend-to-supported-types leaves it; LLVM widened
// it itself and called __truncsfbf2) is computed in f32 between the
// conversions.
// CHECK-LABEL: func.func @fma
// CHECK-NOT: math.fma {{.*}} : bf16
// CHECK: math.fma {{.*}} : f32
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @fma(%a: bf16, %b: bf16, %c: bf16) -> bf16 {
  %r = math.fma %a, %b, %c : bf16
  return %r : bf16
}

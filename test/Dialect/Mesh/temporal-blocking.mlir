// RUN: mesh-opt %s --mesh-temporal-blocking=report=true --split-input-file --verify-diagnostics | FileCheck %s
// RUN: mesh-opt %s --mesh-temporal-blocking --split-input-file | mesh-opt --mesh-propagate-sharding --mesh-partition --split-input-file | FileCheck %s --check-prefix=PART
// RUN: mesh-opt %s --split-input-file --mesh-temporal-blocking="report=true max-ops=20" 2>&1 | FileCheck %s --check-prefix=BUDGET

// A Jacobi step written as a call, 5 steps: two pairs in the new loop, then
// the old loop once. The invariant source term is padded before the loop;
// the step's annotations become constraints.
mesh.mesh @m(["a" = 2, "b" = 4])
func.func private @step(%u: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>},
                        %f: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>})
    -> (tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) {
  %zero = arith.constant 0.0 : f32
  %q = arith.constant 0.25 : f32
  %qe = tensor.empty() : tensor<64x64xf32>
  %quarter = linalg.fill ins(%q : f32) outs(%qe : tensor<64x64xf32>) -> tensor<64x64xf32>
  %p = tensor.pad %u low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<64x64xf32> to tensor<66x66xf32>
  %ns = tensor.extract_slice %p[0, 1] [64, 64] [1, 1] : tensor<66x66xf32> to tensor<64x64xf32>
  %ss = tensor.extract_slice %p[2, 1] [64, 64] [1, 1] : tensor<66x66xf32> to tensor<64x64xf32>
  %ws = tensor.extract_slice %p[1, 0] [64, 64] [1, 1] : tensor<66x66xf32> to tensor<64x64xf32>
  %es = tensor.extract_slice %p[1, 2] [64, 64] [1, 1] : tensor<66x66xf32> to tensor<64x64xf32>
  %a1 = arith.addf %ns, %ss : tensor<64x64xf32>
  %a2 = arith.addf %ws, %es : tensor<64x64xf32>
  %a3 = arith.addf %a1, %a2 : tensor<64x64xf32>
  %m = arith.mulf %a3, %quarter : tensor<64x64xf32>
  %next = arith.addf %m, %f : tensor<64x64xf32>
  return %next : tensor<64x64xf32>
}
// CHECK-LABEL: func.func @jacobi(
//  CHECK-SAME: %[[U0:.*]]: tensor<64x64xf32> {{.*}}, %[[F:.*]]: tensor<64x64xf32>
//   CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
//   CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
//       CHECK: %[[FS:.*]] = mesh.shard %[[F]] : tensor<64x64xf32> to #mesh.sharding<@m, {{\[\["a"\], \["b"\]\]}}>
//       CHECK: %[[FP:.*]] = tensor.pad %[[FS]] low[1, 1] high[1, 1]
//       CHECK: %[[PAIRS:.*]] = scf.for %{{.*}} = %{{.*}} to %[[C4]] step %[[C2]] iter_args(%[[U:.*]] = %[[U0]])
//       CHECK:   %[[US:.*]] = mesh.shard %[[U]]
//       CHECK:   %[[P:.*]] = tensor.pad %[[US]] low[2, 2] high[2, 2]
//       CHECK:   tensor.extract_slice %[[P]][0, 2] [64, 64] [1, 1]
//       CHECK:   tensor.extract_slice %[[FP]][0, 1] [64, 64] [1, 1]
//       CHECK:   %[[G:.*]] = linalg.generic
//  CHECK-SAME:       iterator_types = ["parallel", "parallel"]
// The north neighbour of step 1 is the pad's zero on the first row.
//       CHECK:     %[[ROW:.*]] = linalg.index 0 : index
//       CHECK:     %[[TOP:.*]] = arith.cmpi ult, %[[ROW]], %{{.*}} : index
//       CHECK:     arith.select %[[TOP]]
//       CHECK:     arith.cmpi uge
//       CHECK:     linalg.index 1 : index
//       CHECK:     linalg.yield
//       CHECK:   %[[GS:.*]] = mesh.shard %[[G]]
//       CHECK:   scf.yield %[[GS]]
//       CHECK: %[[REST:.*]] = scf.for %{{.*}} = %[[C4]] to %{{.*}} step %{{.*}} iter_args(%[[V:.*]] = %[[PAIRS]])
//       CHECK:   func.call @step(%[[V]], %[[F]])
//       CHECK: return %[[REST]]
func.func @jacobi(%u0: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>},
                  %f: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>})
    -> (tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  // expected-remark @below {{two steps per iteration}}
  %r = scf.for %it = %c0 to %c5 step %c1 iter_args(%u = %u0) -> (tensor<64x64xf32>) {
    %next = func.call @step(%u, %f) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %next : tensor<64x64xf32>
  }
  return %r : tensor<64x64xf32>
}
// Partitioned: the source term's halo moves once, before the loop, one
// deep; the field's moves once per iteration, two deep.
// PART-LABEL: func.func @jacobi(
//       PART: mesh.permute %{{.*}} on @m axes = ["a"] offset = 1 : tensor<1x18xf32>
//       PART: scf.for
//       PART:   mesh.permute %{{.*}} on @m axes = ["a"] offset = 1 : tensor<2x20xf32>
//       PART:   mesh.permute %{{.*}} on @m axes = ["a"] offset = -1 : tensor<2x20xf32>
//       PART:   mesh.permute %{{.*}} on @m axes = ["b"] offset = 1 : tensor<36x2xf32>
//       PART:   mesh.permute %{{.*}} on @m axes = ["b"] offset = -1 : tensor<36x2xf32>
//       PART:   linalg.generic
//   PART-NOT:   mesh.
//       PART:   scf.yield
// BUDGET: remark: one step per iteration: two steps would take 25 operations per element, more than max-ops = 20

// -----

// Written in the loop, a trip count known at run time, a one-sided pad of
// 1.0 and a generic that reads the field itself and its index: the split
// is computed, the index shifted, the mask compares with the pad's value.
// CHECK-LABEL: func.func @upwind(
//  CHECK-SAME: %[[U0:.*]]: tensor<48xf32>, %[[N:.*]]: index
//       CHECK: %[[SPAN:.*]] = arith.maxsi
//       CHECK: %[[TRIPS:.*]] = arith.ceildivsi %[[SPAN]]
//       CHECK: %[[HALF:.*]] = arith.divsi %[[TRIPS]]
//       CHECK: %[[MID:.*]] = arith.addi
//       CHECK: %[[PAIRS:.*]] = scf.for %{{.*}} = %{{.*}} to %[[MID]] step %{{.*}} iter_args(%[[U:.*]] = %[[U0]])
//       CHECK:   %[[P:.*]] = tensor.pad %[[U]] low[4] high[0]
//       CHECK:     tensor.yield %[[ONE:.*]] : f32
//       CHECK:   linalg.generic
// The second step's own value, then the first step's one to the left,
// masked with the pad's value on the first element.
// (The position is read once.)
//       CHECK:     %[[I:.*]] = linalg.index 0 : index
//       CHECK:     arith.remui %[[I]]
//   CHECK-NOT:     linalg.index
//       CHECK:     %[[JS:.*]] = arith.addi %[[I]], %c-1 : index
//       CHECK:     arith.remui %[[JS]]
//       CHECK:     %[[LEFT:.*]] = arith.select
//       CHECK:     %[[FIRST:.*]] = arith.cmpi ult, %[[I]], %{{.*}} : index
//       CHECK:     arith.select %[[FIRST]], %[[ONE]], %[[LEFT]] : f32
//       CHECK: scf.for %{{.*}} = %[[MID]] to %[[N]]
func.func @upwind(%u0: tensor<48xf32>, %n: index) -> tensor<48xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  // expected-remark @below {{two steps per iteration}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<48xf32>) {
    %p = tensor.pad %u low[2] high[0] {
    ^bb0(%a: index):
      tensor.yield %one : f32
    } : tensor<48xf32> to tensor<50xf32>
    %m1 = tensor.extract_slice %p[1] [48] [1] : tensor<50xf32> to tensor<48xf32>
    %e = tensor.empty() : tensor<48xf32>
    %v = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                          affine_map<(i) -> (i)>],
                         iterator_types = ["parallel"]}
        ins(%u, %m1 : tensor<48xf32>, tensor<48xf32>) outs(%e : tensor<48xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %ix = linalg.index 0 : index
      %c3 = arith.constant 3 : index
      %rm = arith.remui %ix, %c3 : index
      %z = arith.cmpi eq, %rm, %c0 : index
      %d = arith.subf %a, %b : f32
      %s = arith.select %z, %d, %a : f32
      linalg.yield %s : f32
    } -> tensor<48xf32>
    scf.yield %v : tensor<48xf32>
  }
  return %r : tensor<48xf32>
}

// -----

// Six steps: three pairs, nothing left over.
// CHECK-LABEL: func.func @even(
//       CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
//       CHECK:   tensor.pad %{{.*}} low[2] high[2]
//   CHECK-NOT: scf.for
//       CHECK: return
func.func @even(%u0: tensor<16xf32>) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{two steps per iteration}}
  %r = scf.for %i = %c0 to %c6 step %c1 iter_args(%u = %u0) -> (tensor<16xf32>) {
    %p = tensor.pad %u low[1] high[1] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<16xf32> to tensor<18xf32>
    %l = tensor.extract_slice %p[0] [16] [1] : tensor<18xf32> to tensor<16xf32>
    %h = tensor.extract_slice %p[2] [16] [1] : tensor<18xf32> to tensor<16xf32>
    %v = arith.maximumf %l, %h : tensor<16xf32>
    scf.yield %v : tensor<16xf32>
  }
  return %r : tensor<16xf32>
}

// -----

// Loops left as they are, and why.
func.func private @note()
func.func @kept(%u0: tensor<16xf32>, %w: tensor<16x16xf32>, %n: index) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{one step per iteration: the step reads the loop's index}}
  %r0 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<16xf32>) {
    %p = tensor.pad %u low[1] high[1] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<16xf32> to tensor<18xf32>
    %l = tensor.extract_slice %p[0] [16] [1] : tensor<18xf32> to tensor<16xf32>
    %x = tensor.insert %zero into %l[%i] : tensor<16xf32>
    scf.yield %x : tensor<16xf32>
  }
  // expected-remark @below {{one step per iteration: the step computes with 'linalg.matvec', which is not elementwise}}
  %r1 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %r0) -> (tensor<16xf32>) {
    %p = tensor.pad %u low[1] high[1] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<16xf32> to tensor<18xf32>
    %l = tensor.extract_slice %p[0] [16] [1] : tensor<18xf32> to tensor<16xf32>
    %y = linalg.matvec ins(%w, %l : tensor<16x16xf32>, tensor<16xf32>) outs(%u : tensor<16xf32>) -> tensor<16xf32>
    scf.yield %y : tensor<16xf32>
  }
  // expected-remark @below {{one step per iteration: the step does not pad the field (no stencil)}}
  %r2 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %r1) -> (tensor<16xf32>) {
    %y = arith.addf %u, %u : tensor<16xf32>
    scf.yield %y : tensor<16xf32>
  }
  // expected-remark @below {{one step per iteration: the loop runs fewer than two steps}}
  %r3 = scf.for %i = %c0 to %c1 step %c1 iter_args(%u = %r2) -> (tensor<16xf32>) {
    %p = tensor.pad %u low[1] high[1] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<16xf32> to tensor<18xf32>
    %l = tensor.extract_slice %p[0] [16] [1] : tensor<18xf32> to tensor<16xf32>
    scf.yield %l : tensor<16xf32>
  }
  // expected-remark @below {{one step per iteration: the padded field has a user that is not a window}}
  %r4 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %r3) -> (tensor<16xf32>) {
    %p = tensor.pad %u low[1] high[1] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<16xf32> to tensor<18xf32>
    %l = tensor.extract_slice %p[0] [16] [1] : tensor<18xf32> to tensor<16xf32>
    %d = tensor.dim %p, %c0 : tensor<18xf32>
    %x = tensor.insert %zero into %l[%d] : tensor<16xf32>
    scf.yield %x : tensor<16xf32>
  }
  // expected-remark @below {{one step per iteration: the step has side effects}}
  %r5 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %r4) -> (tensor<16xf32>) {
    %p = tensor.pad %u low[1] high[1] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<16xf32> to tensor<18xf32>
    %l = tensor.extract_slice %p[0] [16] [1] : tensor<18xf32> to tensor<16xf32>
    func.call @note() : () -> ()
    scf.yield %l : tensor<16xf32>
  }
  // expected-remark @below {{one step per iteration: the step reads the field at 6 shifts: two steps would compute the first step 6 times per element (max-shifts = 4)}}
  %r6 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %r5) -> (tensor<16xf32>) {
    %p = tensor.pad %u low[3] high[3] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<16xf32> to tensor<22xf32>
    %w0 = tensor.extract_slice %p[0] [16] [1] : tensor<22xf32> to tensor<16xf32>
    %w1 = tensor.extract_slice %p[1] [16] [1] : tensor<22xf32> to tensor<16xf32>
    %w2 = tensor.extract_slice %p[2] [16] [1] : tensor<22xf32> to tensor<16xf32>
    %w4 = tensor.extract_slice %p[4] [16] [1] : tensor<22xf32> to tensor<16xf32>
    %w5 = tensor.extract_slice %p[5] [16] [1] : tensor<22xf32> to tensor<16xf32>
    %w6 = tensor.extract_slice %p[6] [16] [1] : tensor<22xf32> to tensor<16xf32>
    %s0 = arith.addf %w0, %w1 : tensor<16xf32>
    %s1 = arith.addf %w2, %w4 : tensor<16xf32>
    %s2 = arith.addf %w5, %w6 : tensor<16xf32>
    %s3 = arith.addf %s0, %s1 : tensor<16xf32>
    %s4 = arith.addf %s3, %s2 : tensor<16xf32>
    scf.yield %s4 : tensor<16xf32>
  }
  return %r6 : tensor<16xf32>
}

// RUN: mesh-opt %s --split-input-file --mesh-inline-loop-calls | FileCheck %s --check-prefix=CHECK-INLINE
// RUN: mesh-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(mesh-pad-in-place))' | FileCheck %s --check-prefix=CHECK-PAD
// RUN: mesh-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(mesh-double-buffer-loops))' | FileCheck %s --check-prefix=CHECK-DOUBLE
// RUN: mesh-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(mesh-hoist-loop-buffers))' | FileCheck %s --check-prefix=CHECK-HOIST

// mesh-inline-loop-calls: a call in a loop is inlined (and a call that
// inlining brings into a loop too); calls outside loops, of a declaration
// and of the function itself stay; the callees stay.
// CHECK-INLINE-LABEL: func.func @step
// CHECK-INLINE: func.func @outer
// CHECK-INLINE: scf.for
// CHECK-INLINE-NEXT: arith.addf
// CHECK-INLINE-NEXT: scf.yield
// CHECK-INLINE-LABEL: func.func @loops
// CHECK-INLINE: call @step(
// CHECK-INLINE: scf.for
// CHECK-INLINE: scf.for
// CHECK-INLINE-NEXT: arith.addf
// CHECK-INLINE: func.call @external(
// CHECK-INLINE: func.call @loops(
// CHECK-INLINE-NOT: @outer
// CHECK-INLINE: return
func.func @step(%u: tensor<8xf32>) -> tensor<8xf32> {
  %v = arith.addf %u, %u : tensor<8xf32>
  return %v : tensor<8xf32>
}
func.func private @external(%u: tensor<8xf32>) -> tensor<8xf32>
func.func @outer(%u: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %u) -> (tensor<8xf32>) {
    %v = func.call @step(%a) : (tensor<8xf32>) -> tensor<8xf32>
    scf.yield %v : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}
func.func @loops(%u0: tensor<8xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = func.call @step(%u0) : (tensor<8xf32>) -> tensor<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %s) -> (tensor<8xf32>) {
    %v = func.call @outer(%u) : (tensor<8xf32>) -> tensor<8xf32>
    %w = func.call @external(%v) : (tensor<8xf32>) -> tensor<8xf32>
    %x = func.call @loops(%w, %n) : (tensor<8xf32>, index) -> tensor<8xf32>
    scf.yield %x : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// mesh-pad-in-place: the loop carries the padded block; the initial value is
// padded before the loop, each iteration's result is inserted into the
// interior of a block whose border strips alone are filled (dim 0: rows 0
// and 5-6 whole; dim 1: columns 6-8 of the interior rows; dim 1's low pad is
// 0: no strip), and the loop's user gets the interior.
// CHECK-PAD-LABEL: func.func @carry
// CHECK-PAD-SAME: (%[[U0:[^:]*]]: tensor<4x6xf32>
// CHECK-PAD: %[[E:.*]] = tensor.empty() : tensor<7x9xf32>
// CHECK-PAD: %[[S0:.*]] = tensor.extract_slice %[[E]][0, 0] [1, 9] [1, 1]
// CHECK-PAD: %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[S0]] : tensor<1x9xf32>)
// CHECK-PAD: %[[B0:.*]] = tensor.insert_slice %[[F0]] into %[[E]][0, 0] [1, 9] [1, 1]
// CHECK-PAD: tensor.extract_slice %[[B0]][5, 0] [2, 9] [1, 1]
// CHECK-PAD: %[[B1:.*]] = tensor.insert_slice %{{.*}} into %[[B0]][5, 0] [2, 9] [1, 1]
// CHECK-PAD: tensor.extract_slice %[[B1]][1, 6] [4, 3] [1, 1]
// CHECK-PAD: %[[B2:.*]] = tensor.insert_slice %{{.*}} into %[[B1]][1, 6] [4, 3] [1, 1]
// CHECK-PAD: %[[P0:.*]] = tensor.insert_slice %[[U0]] into %[[B2]][1, 0] [4, 6] [1, 1]
// CHECK-PAD-NOT: tensor.pad
// CHECK-PAD: %[[R:.*]] = scf.for {{.*}} iter_args(%[[P:.*]] = %[[P0]]) -> (tensor<7x9xf32>)
// CHECK-PAD-NEXT: tensor.extract_slice %[[P]][2, 1] [4, 6] [1, 1]
// CHECK-PAD-NEXT: %[[V:.*]] = arith.addf
// CHECK-PAD: tensor.empty() : tensor<7x9xf32>
// CHECK-PAD: %[[NEXT:.*]] = tensor.insert_slice %[[V]] into %{{.*}}[1, 0] [4, 6] [1, 1]
// CHECK-PAD-NEXT: scf.yield %[[NEXT]] : tensor<7x9xf32>
// CHECK-PAD: %[[OUT:.*]] = tensor.extract_slice %[[R]][1, 0] [4, 6] [1, 1]
// CHECK-PAD-NEXT: return %[[OUT]] : tensor<4x6xf32>

// A carried value also read unpadded is not carried padded; its pad is still
// decomposed. A pad whose value depends on the position, or with dynamic
// sizes, stays.
// CHECK-PAD-LABEL: func.func @used_twice
// CHECK-PAD: scf.for {{.*}} -> (tensor<4xf32>)
// CHECK-PAD-NOT: tensor.pad
// CHECK-PAD: tensor.insert_slice %{{.*}} into %{{.*}}[1] [4] [1] : tensor<4xf32> into tensor<6xf32>
// CHECK-PAD-LABEL: func.func @by_position
// CHECK-PAD: tensor.pad
// CHECK-PAD-LABEL: func.func @dynamic
// CHECK-PAD: tensor.pad
// A pad of width 0 (nofold) changes no type: the loop is left as it is.
// CHECK-PAD-LABEL: func.func @zero_width
// CHECK-PAD: scf.for {{.*}} -> (tensor<4xf32>)
func.func @carry(%u0: tensor<4x6xf32>, %f: tensor<4x6xf32>, %n: index) -> tensor<4x6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<4x6xf32>) {
    %p = tensor.pad %u low[1, 0] high[2, 3] {
    ^bb0(%a: index, %b: index):
      tensor.yield %zero : f32
    } : tensor<4x6xf32> to tensor<7x9xf32>
    %s = tensor.extract_slice %p[2, 1] [4, 6] [1, 1] : tensor<7x9xf32> to tensor<4x6xf32>
    %v = arith.addf %s, %f : tensor<4x6xf32>
    scf.yield %v : tensor<4x6xf32>
  }
  return %r : tensor<4x6xf32>
}
func.func @used_twice(%u0: tensor<4xf32>, %n: index, %zero: f32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<4xf32>) {
    %p = tensor.pad %u low[1] high[1] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<4xf32> to tensor<6xf32>
    %s = tensor.extract_slice %p[0] [4] [1] : tensor<6xf32> to tensor<4xf32>
    %v = arith.addf %s, %u : tensor<4xf32>
    scf.yield %v : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
func.func @by_position(%u: tensor<4xf32>) -> tensor<6xf32> {
  %p = tensor.pad %u low[1] high[1] {
  ^bb0(%a: index):
    %i = arith.index_cast %a : index to i32
    %x = arith.sitofp %i : i32 to f32
    tensor.yield %x : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %p : tensor<6xf32>
}
func.func @dynamic(%u: tensor<?xf32>, %zero: f32) -> tensor<?xf32> {
  %p = tensor.pad %u low[1] high[1] {
  ^bb0(%a: index):
    tensor.yield %zero : f32
  } : tensor<?xf32> to tensor<?xf32>
  return %p : tensor<?xf32>
}
func.func @zero_width(%u0: tensor<4xf32>, %n: index, %zero: f32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<4xf32>) {
    %p = tensor.pad %u nofold low[0] high[0] {
    ^bb0(%a: index):
      tensor.yield %zero : f32
    } : tensor<4xf32> to tensor<4xf32>
    scf.yield %p : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// A halo exchange's shape: each step writes the whole border of the block
// it carries (rows 0 and 5 whole, then columns 0 and 5 whole) before the
// stencil reads it, reading on the way only the rows and columns next to
// the border, which cross the column strips at four elements. Each
// iteration's pad fills just those four (rows 1 and 4 of columns 0 and
// 5), not the strips; the pad before the loop fills every strip.
// CHECK-PAD-LABEL: func.func @border_overwritten
// CHECK-PAD-COUNT-2: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x6xf32>)
// CHECK-PAD-COUNT-2: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x1xf32>)
// CHECK-PAD: scf.for
// CHECK-PAD-NOT: tensor<1x6xf32>) -> tensor<1x6xf32>
// CHECK-PAD-COUNT-4: tensor.insert_slice %{{.*}} into %{{.*}}{{\[}}{{[14]}}, {{[05]}}] [1, 1] [1, 1] : tensor<1x1xf32> into tensor<6x6xf32>
// CHECK-PAD-NOT: linalg.fill
// CHECK-PAD: scf.yield
func.func @border_overwritten(%u0: tensor<4x4xf32>, %n: index, %r0: tensor<1x6xf32>, %c0v: tensor<6x1xf32>) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<4x4xf32>) {
    %p = tensor.pad %u low[1, 1] high[1, 1] {
    ^bb0(%a: index, %b: index):
      tensor.yield %zero : f32
    } : tensor<4x4xf32> to tensor<6x6xf32>
    %s0 = tensor.extract_slice %p[4, 0] [1, 6] [1, 1] : tensor<6x6xf32> to tensor<1x6xf32>
    %h0 = arith.addf %s0, %r0 : tensor<1x6xf32>
    %p1 = tensor.insert_slice %h0 into %p[0, 0] [1, 6] [1, 1] : tensor<1x6xf32> into tensor<6x6xf32>
    %s1 = tensor.extract_slice %p1[1, 0] [1, 6] [1, 1] : tensor<6x6xf32> to tensor<1x6xf32>
    %p2 = tensor.insert_slice %s1 into %p1[5, 0] [1, 6] [1, 1] : tensor<1x6xf32> into tensor<6x6xf32>
    %s2 = tensor.extract_slice %p2[0, 4] [6, 1] [1, 1] : tensor<6x6xf32> to tensor<6x1xf32>
    %h2 = arith.addf %s2, %c0v : tensor<6x1xf32>
    %p3 = tensor.insert_slice %h2 into %p2[0, 0] [6, 1] [1, 1] : tensor<6x1xf32> into tensor<6x6xf32>
    %s3 = tensor.extract_slice %p3[0, 1] [6, 1] [1, 1] : tensor<6x6xf32> to tensor<6x1xf32>
    %p4 = tensor.insert_slice %s3 into %p3[0, 5] [6, 1] [1, 1] : tensor<6x1xf32> into tensor<6x6xf32>
    %n0 = tensor.extract_slice %p4[0, 1] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
    %n1 = tensor.extract_slice %p4[2, 1] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
    %v = arith.addf %n0, %n1 : tensor<4x4xf32>
    scf.yield %v : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

// mesh-double-buffer-loops: the buffer allocated per iteration is replaced by
// a spare carried by the loop, the buffer read is handed over as the next
// spare. The initial value's buffer is the second buffer when the function
// made it and nothing uses it after the loop; else it is copied once.
// CHECK-DOUBLE-LABEL: func.func @made_for_loop
// CHECK-DOUBLE: %[[INIT:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DOUBLE-NEXT: linalg.fill
// CHECK-DOUBLE-NEXT: %[[SPARE:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DOUBLE-NEXT: %[[R:.*]]:2 = scf.for {{.*}} iter_args(%[[U:.*]] = %[[INIT]], %[[S:.*]] = %[[SPARE]])
// CHECK-DOUBLE-NOT: memref.alloc
// CHECK-DOUBLE: memref.subview %[[S]][0] [4] [1]
// CHECK-DOUBLE: linalg.add ins(%[[U]], %{{.*}} : memref<8xf32>, memref<8xf32>) outs(%[[S]] : memref<8xf32>)
// CHECK-DOUBLE-NEXT: scf.yield %[[S]], %[[U]] : memref<8xf32>, memref<8xf32>
// CHECK-DOUBLE: return %[[R]]#0
// CHECK-DOUBLE-LABEL: func.func @argument
// CHECK-DOUBLE-SAME: (%[[A:[^:]*]]: memref<8xf32>
// CHECK-DOUBLE: %[[COPY:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DOUBLE-NEXT: memref.copy %[[A]], %[[COPY]]
// CHECK-DOUBLE-NEXT: %[[SPARE2:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DOUBLE-NEXT: scf.for {{.*}} iter_args(%{{.*}} = %[[COPY]], %{{.*}} = %[[SPARE2]])
// CHECK-DOUBLE-NOT: memref.alloc
// CHECK-DOUBLE: return
// CHECK-DOUBLE-LABEL: func.func @used_after
// CHECK-DOUBLE: %[[KEPT:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DOUBLE: memref.copy %[[KEPT]], %{{.*}}
// CHECK-DOUBLE: scf.for
// CHECK-DOUBLE-NOT: memref.alloc
// CHECK-DOUBLE: return %{{.*}}, %[[KEPT]]

// The buffer read is yielded in another position (it outlives the
// iteration), or the size is dynamic: unchanged.
// CHECK-DOUBLE-LABEL: func.func @escapes
// CHECK-DOUBLE: scf.for
// CHECK-DOUBLE-NEXT: memref.alloc() : memref<8xf32>

// The initial buffer is also another iteration argument's initial value, or
// aliased by a select used after the loop: copied before the loop, never
// overwritten.
// (The first argument gets a copy; the buffer is then the second one's
// alone, which may take it as its second buffer.)
// CHECK-DOUBLE-LABEL: func.func @same_init
// CHECK-DOUBLE: %[[I:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DOUBLE: %[[C:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DOUBLE-NEXT: memref.copy %[[I]], %[[C]]
// CHECK-DOUBLE: scf.for {{.*}} iter_args(%{{.*}} = %[[C]], %{{.*}} = %[[I]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK-DOUBLE-NOT: memref.alloc
// CHECK-DOUBLE: return
// CHECK-DOUBLE-LABEL: func.func @selected
// CHECK-DOUBLE: %[[I2:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DOUBLE: %[[X:.*]] = arith.select %{{.*}}, %[[I2]], %{{.*}} : memref<8xf32>
// CHECK-DOUBLE: memref.copy %[[I2]], %{{.*}}
// CHECK-DOUBLE: scf.for
// CHECK-DOUBLE: return %{{.*}}, %[[X]]
// CHECK-DOUBLE-LABEL: func.func @dynamic
// CHECK-DOUBLE: scf.for
// CHECK-DOUBLE-NEXT: memref.alloc(%{{.*}}) : memref<?xf32>
func.func @made_for_loop(%f: memref<8xf32>, %n: index) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %init = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%init : memref<8xf32>)
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %init) -> (memref<8xf32>) {
    %v = memref.alloc() : memref<8xf32>
    %h = memref.subview %v[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
    linalg.add ins(%u, %f : memref<8xf32>, memref<8xf32>) outs(%v : memref<8xf32>)
    scf.yield %v : memref<8xf32>
  }
  return %r : memref<8xf32>
}
func.func @argument(%u0: memref<8xf32>, %f: memref<8xf32>, %n: index) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (memref<8xf32>) {
    %v = memref.alloc() : memref<8xf32>
    linalg.add ins(%u, %f : memref<8xf32>, memref<8xf32>) outs(%v : memref<8xf32>)
    scf.yield %v : memref<8xf32>
  }
  return %r : memref<8xf32>
}
func.func @used_after(%f: memref<8xf32>, %n: index) -> (memref<8xf32>, memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = memref.alloc() : memref<8xf32>
  linalg.copy ins(%f : memref<8xf32>) outs(%init : memref<8xf32>)
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %init) -> (memref<8xf32>) {
    %v = memref.alloc() : memref<8xf32>
    linalg.add ins(%u, %f : memref<8xf32>, memref<8xf32>) outs(%v : memref<8xf32>)
    scf.yield %v : memref<8xf32>
  }
  return %r, %init : memref<8xf32>, memref<8xf32>
}
func.func @escapes(%u0: memref<8xf32>, %f: memref<8xf32>, %n: index) -> (memref<8xf32>, memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0, %old = %u0) -> (memref<8xf32>, memref<8xf32>) {
    %v = memref.alloc() : memref<8xf32>
    linalg.add ins(%u, %f : memref<8xf32>, memref<8xf32>) outs(%v : memref<8xf32>)
    scf.yield %v, %u : memref<8xf32>, memref<8xf32>
  }
  return %r#0, %r#1 : memref<8xf32>, memref<8xf32>
}
func.func @same_init(%f: memref<8xf32>, %n: index) -> (memref<8xf32>, memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = memref.alloc() : memref<8xf32>
  linalg.copy ins(%f : memref<8xf32>) outs(%init : memref<8xf32>)
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %init, %b = %init) -> (memref<8xf32>, memref<8xf32>) {
    %x = memref.alloc() : memref<8xf32>
    linalg.add ins(%a, %f : memref<8xf32>, memref<8xf32>) outs(%x : memref<8xf32>)
    %y = memref.alloc() : memref<8xf32>
    linalg.mul ins(%b, %f : memref<8xf32>, memref<8xf32>) outs(%y : memref<8xf32>)
    scf.yield %x, %y : memref<8xf32>, memref<8xf32>
  }
  return %r#0, %r#1 : memref<8xf32>, memref<8xf32>
}
func.func @selected(%f: memref<8xf32>, %g: memref<8xf32>, %c: i1, %n: index) -> (memref<8xf32>, memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = memref.alloc() : memref<8xf32>
  linalg.copy ins(%f : memref<8xf32>) outs(%init : memref<8xf32>)
  %x = arith.select %c, %init, %g : memref<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %init) -> (memref<8xf32>) {
    %v = memref.alloc() : memref<8xf32>
    linalg.add ins(%u, %f : memref<8xf32>, memref<8xf32>) outs(%v : memref<8xf32>)
    scf.yield %v : memref<8xf32>
  }
  return %r, %x : memref<8xf32>, memref<8xf32>
}
func.func @dynamic(%u0: memref<?xf32>, %n: index) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (memref<?xf32>) {
    %v = memref.alloc(%n) : memref<?xf32>
    linalg.copy ins(%u : memref<?xf32>) outs(%v : memref<?xf32>)
    scf.yield %v : memref<?xf32>
  }
  return %r : memref<?xf32>
}

// -----

// mesh-hoist-loop-buffers: a buffer freed in the block that allocated it
// leaves every loop around it (static, or with sizes from before the loop);
// one freed conditionally stays.
// CHECK-HOIST-LABEL: func.func @nested
// CHECK-HOIST-SAME: (%{{[^:]*}}: memref<8xf32>, %[[N:[^:]*]]: index
// CHECK-HOIST: %[[T:.*]] = memref.alloc() : memref<8xf32>
// CHECK-HOIST-NEXT: %[[D:.*]] = memref.alloc(%[[N]]) : memref<?xf32>
// CHECK-HOIST-NEXT: scf.for
// CHECK-HOIST-NEXT: scf.for
// CHECK-HOIST-NEXT: linalg.copy
// CHECK-HOIST-NEXT: linalg.copy
// CHECK-HOIST-NEXT: }
// CHECK-HOIST-NEXT: %[[K:.*]] = memref.alloc() : memref<4xf32>
// CHECK-HOIST-NEXT: scf.if
// CHECK-HOIST-NEXT: memref.dealloc %[[K]]
// CHECK-HOIST: }
// CHECK-HOIST-NEXT: }
// CHECK-HOIST-NEXT: memref.dealloc %[[D]]
// CHECK-HOIST-NEXT: memref.dealloc %[[T]]
// CHECK-HOIST-NEXT: return
func.func @nested(%x: memref<8xf32>, %n: index, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %t = memref.alloc() : memref<8xf32>
      linalg.copy ins(%x : memref<8xf32>) outs(%t : memref<8xf32>)
      linalg.copy ins(%t : memref<8xf32>) outs(%x : memref<8xf32>)
      memref.dealloc %t : memref<8xf32>
    }
    %d = memref.alloc(%n) : memref<?xf32>
    memref.dealloc %d : memref<?xf32>
    %k = memref.alloc() : memref<4xf32>
    scf.if %c {
      memref.dealloc %k : memref<4xf32>
    }
  }
  return
}

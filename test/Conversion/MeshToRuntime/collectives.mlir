// RUN: mesh-opt %s --convert-mesh-to-runtime -split-input-file | FileCheck %s '-D$MAJOR=%mesh_version_major' '-D$MINOR=%mesh_version_minor'

// Every collective becomes a runtime call on a communicator handle loaded
// from a global; the globals are filled once by the start-up function.

mesh.mesh @world(["replicate" = 2, "shard" = 4])

// CHECK-DAG: llvm.func @meshrt_all_reduce(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i32) -> i32
// CHECK-DAG: llvm.mlir.global internal @[[MESH:__mesh_mesh_world_[0-9]+]]() {{.*}} : !llvm.ptr
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}("replicate\00")
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}("world\00")

// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>)
func.func @all_reduce(%x: memref<8x16xf32>) -> memref<8x16xf32> {
  // CHECK: %[[G:.*]] = llvm.mlir.addressof @[[COMM:__mesh_comm_[0-9]+]]
  // CHECK: %[[C:.*]] = llvm.load %[[G]] : !llvm.ptr -> !llvm.ptr
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<8x16xf32>
  // CHECK: memref.extract_aligned_pointer_as_index %[[X]]
  // CHECK: %[[SEND:.*]] = llvm.inttoptr
  // CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
  // CHECK: %[[RECV:.*]] = llvm.inttoptr
  // CHECK: %[[N:.*]] = arith.index_cast %{{.*}} : index to i64
  // CHECK: %[[F32:.*]] = llvm.mlir.constant(2 : i32)
  // CHECK: %[[SUM:.*]] = llvm.mlir.constant(0 : i32)
  // CHECK: llvm.call @meshrt_all_reduce(%[[C]], %[[SEND]], %[[RECV]], %[[N]], %[[F32]], %[[SUM]])
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum : memref<8x16xf32> -> memref<8x16xf32>
  // The same (mesh, axes) reuses the same communicator global.
  // CHECK: llvm.mlir.addressof @[[COMM]]
  // CHECK: %[[MAX:.*]] = llvm.mlir.constant(3 : i32)
  // CHECK: llvm.call @meshrt_all_reduce({{.*}}, %[[MAX]])
  %1 = mesh.all_reduce %0 on @world axes = ["shard"] reduction = max : memref<8x16xf32> -> memref<8x16xf32>
  // CHECK: return
  return %1 : memref<8x16xf32>
}

// The start-up function initialises the runtime once, declares the mesh and
// creates one communicator per distinct (mesh, axes).
// CHECK-LABEL: llvm.func @mesh_module_init()
// CHECK: llvm.cond_br
// First, the runtime loaded must be of the compiler's major.minor.
// CHECK-NEXT: ^bb1:
// CHECK-NEXT: %[[MAJOR:.*]] = llvm.mlir.constant([[$MAJOR]] : i32) : i32
// CHECK-NEXT: %[[MINOR:.*]] = llvm.mlir.constant([[$MINOR]] : i32) : i32
// CHECK-NEXT: %[[VERSION:.*]] = llvm.call @meshrt_check_version(%[[MAJOR]], %[[MINOR]]) : (i32, i32) -> i32
// CHECK: llvm.icmp "eq" %[[VERSION]]
// CHECK-NEXT: cf.assert {{.*}}"mesh runtime: meshrt_check_version failed
// A host program asks for the job's CPU backend (MESHRT_BACKEND_HOST).
// CHECK: %[[HOST:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: llvm.call @meshrt_init(%[[HOST]])
// CHECK: llvm.call @meshrt_mesh_declare
// CHECK: llvm.call @meshrt_comm_get
// CHECK-NOT: llvm.call @meshrt_comm_get
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @mesh_module_fini()
// CHECK: llvm.call @meshrt_finalize

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])

// Different axis orders are different groups: two communicators.
// CHECK-LABEL: func.func @orders
func.func @orders(%x: memref<8xf32>) -> (memref<8xf32>, memref<8xf32>) {
  // CHECK: llvm.mlir.addressof @[[A:__mesh_comm_[0-9]+]]
  // CHECK: llvm.mlir.addressof @[[B:__mesh_comm_[0-9]+]]
  %0 = mesh.all_reduce %x on @world axes = ["replicate", "shard"] reduction = sum : memref<8xf32> -> memref<8xf32>
  %1 = mesh.all_reduce %x on @world axes = ["shard", "replicate"] reduction = sum : memref<8xf32> -> memref<8xf32>
  return %0, %1 : memref<8xf32>, memref<8xf32>
}
// CHECK-LABEL: llvm.func @mesh_module_init()
// CHECK-COUNT-2: llvm.call @meshrt_comm_get
// CHECK-NOT: llvm.call @meshrt_comm_get

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])

// Gathering on the leading dim writes straight into the result; on another
// dim through a staging buffer whose blocks are copied into place.
// CHECK-LABEL: func.func @all_gather
func.func @all_gather(%x: memref<2x3xf32>) -> (memref<8x3xf32>, memref<2x12xf32>) {
  // CHECK: %[[R0:.*]] = memref.alloc() : memref<8x3xf32>
  // CHECK-NOT: scf.for
  // CHECK: llvm.call @meshrt_all_gather
  %0 = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 0 : memref<2x3xf32> -> memref<8x3xf32>
  // CHECK: %[[R1:.*]] = memref.alloc() : memref<2x12xf32>
  // CHECK: %[[ST:.*]] = memref.alloc() : memref<4x2x3xf32>
  // CHECK: llvm.call @meshrt_all_gather
  // CHECK: scf.for %[[G:.*]] =
  // CHECK:   %[[DST:.*]] = memref.subview %[[R1]][0, %{{.*}}] [2, 3] [1, 1]
  // CHECK:   %[[SRC:.*]] = memref.subview %[[ST]][%[[G]], 0, 0] [1, 2, 3] [1, 1, 1]
  // CHECK:   linalg.copy ins(%[[SRC]] : {{.*}}) outs(%[[DST]] : {{.*}})
  // CHECK: memref.dealloc %[[ST]]
  %1 = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 1 : memref<2x3xf32> -> memref<2x12xf32>
  return %0, %1 : memref<8x3xf32>, memref<2x12xf32>
}

// Padded: only the data goes to the runtime's count, 10 rows of 5 (a
// leading dim of size 1 keeps the data a prefix of each block).
// CHECK-LABEL: func.func @padded
func.func @padded(%x: memref<3x5xf32>, %y: memref<1x12x5xf32>) -> (memref<12x5xf32>, memref<1x3x5xf32>) {
  // CHECK: %[[VALID:.*]] = arith.constant 50 : i64
  // CHECK: llvm.call @meshrt_all_gather_padded({{.*}}, %[[VALID]], %{{.*}})
  %0 = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 0 valid = 10 : memref<3x5xf32> -> memref<12x5xf32>
  // CHECK: %[[VALID2:.*]] = arith.constant 45 : i64
  // CHECK: llvm.call @meshrt_reduce_scatter_padded({{.*}}, %[[VALID2]], %{{.*}}, %{{.*}})
  %1 = mesh.reduce_scatter %y on @world axes = ["shard"] scatter_dim = 1 reduction = sum valid = 9 : memref<1x12x5xf32> -> memref<1x3x5xf32>
  return %0, %1 : memref<12x5xf32>, memref<1x3x5xf32>
}

// Padded all_to_all: the data of the result's concat dim (10 rows of 2)
// or of the input's split dim (9 rows of 1x2, a unit dim before it), and
// the side (MESHRT_PADDED_CONCAT = 1, MESHRT_PADDED_SPLIT = 0).
// CHECK-LABEL: func.func @padded_all_to_all
func.func @padded_all_to_all(%x: memref<3x8xf32>, %y: memref<1x12x2xf32>) -> (memref<12x2xf32>, memref<1x3x8xf32>) {
  // CHECK: %[[V1:.*]] = arith.constant 20 : i64
  // CHECK: %[[CONCAT:.*]] = llvm.mlir.constant(1 : i32)
  // CHECK: llvm.call @meshrt_all_to_all_padded({{.*}}, %[[V1]], %{{.*}}, %[[CONCAT]])
  %0 = mesh.all_to_all %x on @world axes = ["shard"] split_dim = 1 concat_dim = 0 concat_valid = 10 : memref<3x8xf32> -> memref<12x2xf32>
  // CHECK: %[[V2:.*]] = arith.constant 18 : i64
  // CHECK: %[[SPLIT:.*]] = llvm.mlir.constant(0 : i32)
  // CHECK: llvm.call @meshrt_all_to_all_padded({{.*}}, %[[V2]], %{{.*}}, %[[SPLIT]])
  %1 = mesh.all_to_all %y on @world axes = ["shard"] split_dim = 1 concat_dim = 2 split_valid = 9 : memref<1x12x2xf32> -> memref<1x3x8xf32>
  return %0, %1 : memref<12x2xf32>, memref<1x3x8xf32>
}

// CHECK-LABEL: func.func @reduce_scatter
func.func @reduce_scatter(%x: memref<8x8xi32>) -> (memref<2x8xi32>, memref<8x2xi32>) {
  // CHECK: memref.alloc() : memref<2x8xi32>
  // CHECK-NOT: scf.for
  // CHECK: %[[I32:.*]] = llvm.mlir.constant(5 : i32)
  // CHECK: %[[XOR:.*]] = llvm.mlir.constant(7 : i32)
  // CHECK: llvm.call @meshrt_reduce_scatter({{.*}}, %[[I32]], %[[XOR]])
  %0 = mesh.reduce_scatter %x on @world axes = ["shard"] scatter_dim = 0 reduction = xor : memref<8x8xi32> -> memref<2x8xi32>
  // Packing on dim 1: blocks go to a staging buffer before the call.
  // CHECK: %[[ST:.*]] = memref.alloc() : memref<4x8x2xi32>
  // CHECK: scf.for
  // CHECK:   linalg.copy
  // CHECK: llvm.call @meshrt_reduce_scatter
  // CHECK: memref.dealloc %[[ST]]
  %1 = mesh.reduce_scatter %x on @world axes = ["shard"] scatter_dim = 1 reduction = sum : memref<8x8xi32> -> memref<8x2xi32>
  return %0, %1 : memref<2x8xi32>, memref<8x2xi32>
}

// all_to_all: pack along split_dim if needed, unpack along concat_dim if needed.
// CHECK-LABEL: func.func @all_to_all
func.func @all_to_all(%x: memref<8x8xf64>) -> (memref<32x2xf64>, memref<2x32xf64>) {
  // split 1 (pack), concat 0 (direct)
  // CHECK: %[[R0:.*]] = memref.alloc() : memref<32x2xf64>
  // CHECK: %[[S0:.*]] = memref.alloc() : memref<4x8x2xf64>
  // CHECK: scf.for
  // CHECK: %[[N:.*]] = arith.index_cast %c16{{.*}} : index to i64
  // CHECK: %[[F64:.*]] = llvm.mlir.constant(3 : i32)
  // CHECK: llvm.call @meshrt_all_to_all({{.*}}, %[[N]], %[[F64]])
  // CHECK: memref.dealloc %[[S0]]
  %0 = mesh.all_to_all %x on @world axes = ["shard"] split_dim = 1 concat_dim = 0 : memref<8x8xf64> -> memref<32x2xf64>
  // split 0 (direct), concat 1 (unpack)
  // CHECK: %[[R1:.*]] = memref.alloc() : memref<2x32xf64>
  // CHECK: %[[S1:.*]] = memref.alloc() : memref<4x2x8xf64>
  // CHECK: llvm.call @meshrt_all_to_all
  // CHECK: scf.for
  // CHECK: memref.dealloc %[[S1]]
  %1 = mesh.all_to_all %x on @world axes = ["shard"] split_dim = 0 concat_dim = 1 : memref<8x8xf64> -> memref<2x32xf64>
  return %0, %1 : memref<32x2xf64>, memref<2x32xf64>
}

// all_slice needs no communication: this member's block, found from its
// rank in the group.
// CHECK-LABEL: func.func @all_slice
// CHECK-SAME: (%[[X:.*]]: memref<4x8xbf16>)
func.func @all_slice(%x: memref<4x8xbf16>) -> memref<4x2xbf16> {
  // CHECK: %[[SLOT:.*]] = llvm.alloca
  // CHECK: llvm.call @meshrt_comm_rank(%{{.*}}, %[[SLOT]])
  // CHECK: %[[ME:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> i64
  // CHECK: %[[IDX:.*]] = arith.index_cast %[[ME]] : i64 to index
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<4x2xbf16>
  // CHECK: %[[OFF:.*]] = arith.muli %[[IDX]], %{{.*}} : index
  // CHECK: %[[V:.*]] = memref.subview %[[X]][0, %[[OFF]]] [4, 2] [1, 1]
  // CHECK: linalg.copy ins(%[[V]] : {{.*}}) outs(%[[OUT]] : memref<4x2xbf16>)
  // CHECK-NOT: llvm.call @meshrt_all
  %0 = mesh.all_slice %x on @world axes = ["shard"] slice_dim = 1 : memref<4x8xbf16> -> memref<4x2xbf16>
  return %0 : memref<4x2xbf16>
}

// broadcast copies into the result, then broadcasts in place from the root.
// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%x: memref<16xi8>) -> memref<16xi8> {
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<16xi8>
  // CHECK: memref.copy %{{.*}}, %[[OUT]]
  // CHECK: %[[I8:.*]] = llvm.mlir.constant(4 : i32)
  // CHECK: %[[ROOT:.*]] = llvm.mlir.constant(3 : i64)
  // CHECK: llvm.call @meshrt_broadcast({{.*}}, %[[I8]], %[[ROOT]])
  %0 = mesh.broadcast %x on @world axes = ["shard"] root = 3 : memref<16xi8> -> memref<16xi8>
  return %0 : memref<16xi8>
}

// in_place: one buffer is both send and receive; nothing is allocated and
// a broadcast copies nothing. The result is the input buffer.
// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[X:.*]]: memref<16xf32>, %[[Y:.*]]: memref<?xi8>)
func.func @in_place(%x: memref<16xf32>, %y: memref<?xi8>) -> (memref<16xf32>, memref<?xi8>) {
  // CHECK-NOT: memref.alloc
  // CHECK: memref.extract_aligned_pointer_as_index %[[X]]
  // CHECK: %[[P:.*]] = llvm.inttoptr
  // CHECK: memref.extract_aligned_pointer_as_index %[[X]]
  // CHECK: %[[Q:.*]] = llvm.inttoptr
  // CHECK: llvm.call @meshrt_all_reduce(%{{.*}}, %[[P]], %[[Q]],
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum in_place : memref<16xf32> -> memref<16xf32>
  // CHECK-NOT: memref.alloc
  // CHECK-NOT: memref.copy
  // CHECK: memref.extract_aligned_pointer_as_index %[[Y]]
  // CHECK: llvm.call @meshrt_broadcast(
  %1 = mesh.broadcast %y on @world axes = ["shard"] root = 1 in_place : memref<?xi8> -> memref<?xi8>
  // CHECK: return %[[X]], %[[Y]]
  return %0, %1 : memref<16xf32>, memref<?xi8>
}

// Zero-size buffers: nothing to communicate, so no call and no staging; the
// result is an empty buffer.
// CHECK-LABEL: func.func @zero_size
func.func @zero_size(%x: memref<2x0xf32>, %y: memref<0xi32>) -> (memref<8x0xf32>, memref<0xi32>) {
  // CHECK-NOT: llvm.call
  // CHECK-NOT: memref.subview
  // CHECK: %[[G:.*]] = memref.alloc() : memref<8x0xf32>
  %0 = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 0 : memref<2x0xf32> -> memref<8x0xf32>
  // CHECK-NOT: llvm.call
  // CHECK: %[[R:.*]] = memref.alloc() : memref<0xi32>
  %1 = mesh.all_reduce %y on @world axes = ["shard"] reduction = sum : memref<0xi32> -> memref<0xi32>
  // CHECK: return %[[G]], %[[R]]
  return %0, %1 : memref<8x0xf32>, memref<0xi32>
}

// permute: a ring (wrap + zero fill = 3) or an open shift (zero fill = 2).
// CHECK-LABEL: func.func @permute
func.func @permute(%x: memref<16xui8>) -> (memref<16xui8>, memref<16xui8>) {
  // CHECK: %[[U8:.*]] = llvm.mlir.constant(7 : i32)
  // CHECK: %[[OFF:.*]] = llvm.mlir.constant(1 : i64)
  // CHECK: %[[RING:.*]] = llvm.mlir.constant(3 : i32)
  // CHECK: llvm.call @meshrt_permute({{.*}}, %[[U8]], %[[OFF]], %[[RING]])
  %0 = mesh.permute %x on @world axes = ["replicate"] offset = 1 rotate : memref<16xui8> -> memref<16xui8>
  // CHECK: %[[BACK:.*]] = llvm.mlir.constant(-2 : i64)
  // CHECK: %[[OPEN:.*]] = llvm.mlir.constant(2 : i32)
  // CHECK: llvm.call @meshrt_permute({{.*}}, %[[BACK]], %[[OPEN]])
  %1 = mesh.permute %x on @world axes = ["shard"] offset = -2 : memref<16xui8> -> memref<16xui8>
  return %0, %1 : memref<16xui8>, memref<16xui8>
}

// -----

mesh.mesh @dpsp(["data_parallel" = ?, "sequence_parallel" = 4])

// A `?` axis: the group size comes from the communicator at run time, and
// axis_size from the runtime; barrier and axis_index are calls too.
// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%x: memref<4xi64>) -> (memref<?xi64>, index, index) {
  // CHECK: llvm.call @meshrt_comm_size
  // CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?xi64>
  // CHECK: %[[I64:.*]] = llvm.mlir.constant(6 : i32)
  // CHECK: llvm.call @meshrt_all_gather({{.*}}, %[[I64]])
  %0 = mesh.all_gather %x on @dpsp axes = ["data_parallel"] gather_dim = 0 : memref<4xi64> -> memref<?xi64>
  // CHECK: llvm.call @meshrt_barrier
  mesh.barrier on @dpsp axes = ["data_parallel", "sequence_parallel"]
  // CHECK: %[[AX:.*]] = llvm.mlir.constant(1 : i64)
  // CHECK: llvm.call @meshrt_mesh_coordinate(%{{.*}}, %[[AX]], %{{.*}})
  %1 = mesh.axis_index @dpsp "sequence_parallel" : index
  // CHECK: %[[AX0:.*]] = llvm.mlir.constant(0 : i64)
  // CHECK: llvm.call @meshrt_mesh_axis_size(%{{.*}}, %[[AX0]], %{{.*}})
  %2 = mesh.axis_size @dpsp "data_parallel" : index
  return %0, %1, %2 : memref<?xi64>, index, index
}
// The `?` size is declared as -1.
// CHECK-LABEL: llvm.func @mesh_module_init()
// CHECK: llvm.mlir.constant(-1 : i64)
// CHECK: llvm.call @meshrt_mesh_declare
// CHECK-NOT: llvm.call @meshrt_comm_expect_size
// CHECK: llvm.return

// -----

mesh.mesh @d(["x" = ?, "y" = 2])

// Static types on a `?` axis assume a group size: 2 -> 16 gathered is a group
// of 8, 12 -> 3 scattered or sliced a group of 4. The collectives use those
// sizes (no meshrt_comm_size call), and start-up checks each (communicator,
// size) once against the mesh the run resolves, naming the first op that
// assumed it. Splitting and concatenating the same dim assumes nothing.
// CHECK-DAG: llvm.mlir.global internal constant @[[$GATHER:__mesh_str_[0-9]+]]("'mesh.all_gather' at {{.*}}collectives.mlir:{{[0-9]+}}:{{[0-9]+}}\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[$SCATTER:__mesh_str_[0-9]+]]("'mesh.reduce_scatter' at {{.*}}collectives.mlir:{{[0-9]+}}:{{[0-9]+}}\00")
// CHECK-LABEL: func.func @static_on_dynamic
func.func @static_on_dynamic(%x: memref<2xf32>, %y: memref<12xf32>, %z: memref<4x6xf32>)
    -> (memref<16xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<4x6xf32>) {
  // CHECK-NOT: meshrt_comm_size
  // CHECK: %[[C8:.*]] = arith.constant 8 : index
  // CHECK: memref.alloc() : memref<16xf32>
  // CHECK: llvm.call @meshrt_all_gather
  // CHECK: llvm.call @meshrt_reduce_scatter
  // CHECK: llvm.call @meshrt_comm_rank
  // CHECK: llvm.call @meshrt_all_to_all
  // CHECK: llvm.call @meshrt_comm_size
  // CHECK: llvm.call @meshrt_all_to_all
  %0 = mesh.all_gather %x on @d axes = ["x"] gather_dim = 0 : memref<2xf32> -> memref<16xf32>
  %1 = mesh.reduce_scatter %y on @d axes = ["x", "y"] scatter_dim = 0 reduction = sum : memref<12xf32> -> memref<3xf32>
  %2 = mesh.all_slice %y on @d axes = ["x", "y"] slice_dim = 0 : memref<12xf32> -> memref<3xf32>
  %3 = mesh.all_to_all %y on @d axes = ["x", "y"] split_dim = 0 concat_dim = 0 : memref<12xf32> -> memref<3xf32>
  %4 = mesh.all_to_all %z on @d axes = ["x"] split_dim = 1 concat_dim = 1 : memref<4x6xf32> -> memref<4x6xf32>
  return %0, %1, %2, %3, %4 : memref<16xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<4x6xf32>
}
// CHECK-LABEL: llvm.func @mesh_module_init()
// CHECK: llvm.call @meshrt_comm_get
// CHECK: %[[EIGHT:.*]] = llvm.mlir.constant(8 : i64)
// CHECK: %[[WHAT8:.*]] = llvm.mlir.addressof @[[$GATHER]]
// CHECK: llvm.call @meshrt_comm_expect_size(%{{.*}}, %[[EIGHT]], %[[WHAT8]])
// CHECK: %[[FOUR:.*]] = llvm.mlir.constant(4 : i64)
// CHECK: %[[WHAT4:.*]] = llvm.mlir.addressof @[[$SCATTER]]
// CHECK: llvm.call @meshrt_comm_expect_size(%{{.*}}, %[[FOUR]], %[[WHAT4]])
// CHECK-NOT: llvm.call @meshrt_comm_expect_size
// CHECK: llvm.return

// -----

mesh.mesh @m(["x" = 8])

// With a main, start-up and shut-down are called from it. Making stdout
// line-buffered there is mesh-line-buffer-stdout's business, not this pass's.
// CHECK-NOT: setvbuf
// CHECK-LABEL: func.func @main
func.func @main() -> i32 {
  // CHECK-NEXT: llvm.call @mesh_module_init()
  // CHECK: llvm.call @meshrt_barrier
  // CHECK: llvm.call @mesh_module_fini()
  // CHECK-NEXT: return
  mesh.barrier on @m axes = ["x"]
  %c0 = arith.constant 0 : i32
  return %c0 : i32
}

// -----

// Non-contiguous inputs are copied to a contiguous buffer first.
mesh.mesh @m(["x" = 8])
// CHECK-LABEL: func.func @strided
func.func @strided(%x: memref<4x8xf32>) -> memref<2x8xf32> {
  %v = memref.subview %x[1, 0] [2, 8] [2, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[16, 1], offset: 8>>
  // CHECK: %[[TMP:.*]] = memref.alloc() : memref<2x8xf32>
  // CHECK: linalg.copy ins(%{{.*}} : memref<2x8xf32, strided<[16, 1], offset: 8>>) outs(%[[TMP]] : memref<2x8xf32>)
  // CHECK: llvm.call @meshrt_all_reduce
  // CHECK: memref.dealloc %[[TMP]]
  %0 = mesh.all_reduce %v on @m axes = ["x"] reduction = min : memref<2x8xf32, strided<[16, 1], offset: 8>> -> memref<2x8xf32>
  return %0 : memref<2x8xf32>
}

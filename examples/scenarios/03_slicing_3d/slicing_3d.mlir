// Scenario 3: 3-D slicing, communicators created once and reused.
//
// The DeviceMesh tutorial's 3-D mesh: HSDP on a ("replicate", "shard")
// sub-mesh and tensor parallelism on "tp",
//
//   mesh_3d = init_device_mesh("cuda", (2, 2, 2),
//                              mesh_dim_names=("replicate", "shard", "tp"))
//   hsdp_mesh = mesh_3d["replicate", "shard"]
//   tp_mesh = mesh_3d["tp"]
//
// Each of three steps runs, per device with coordinate (a, b, c) and world
// rank r = 4a + 2b + c, on exactly representable values (every comparison is
// exact):
//   - all_reduce sum over ["tp"] of x_i = (c+1)(i+1)(k+1)      -> 3(i+1)(k+1)
//   - all_gather over ["shard"] of p_j = 10b + j + k           -> 10(i/2) + i%2 + k
//   - reduce_scatter sum over ["shard"] of g_i = r + k + 10i, then all_reduce
//     avg over ["replicate"]                                    -> 6 + 2c + 2k + 20i
//     (i = 2b + j: the block this device keeps)
//   - all_reduce sum over ["replicate", "shard"] (the whole sub-mesh, a
//     group of 4) of l = r(k+1)                                 -> (12 + 4c)(k+1)
// That is four distinct (mesh, ordered axes), none of them the whole world,
// used 15 times. The compiled module creates each communicator once at
// start-up, so the runtime reports exactly 4 splits (and 5 communicators
// with the world), however many steps run. The program checks that itself
// through meshrt_get_stats; run with MESHRT_STATS=1 and the runtime prints
// the same counters at shut-down ("meshrt: stats: ... splits=4 ...").
//
// No host code: @main is the program (mesh-compile inserts the runtime's
// start-up and shut-down), printf prints, cf.assert aborts on a mismatch.
//
//   build/bin/mesh-compile examples/scenarios/03_slicing_3d/slicing_3d.mlir \
//       -o mesh-scenario-slicing-3d
//   MESHRT_STATS=1 mpirun -n 8 ./mesh-scenario-slicing-3d

llvm.func @printf(!llvm.ptr, ...) -> i32
llvm.func @fflush(!llvm.ptr) -> i32
llvm.func @dprintf(i32, !llvm.ptr, ...) -> i32
// The runtime's counters (meshrt.h): six int64_t, splits first.
llvm.func @meshrt_get_stats(!llvm.ptr) -> i32

llvm.mlir.global internal constant @step_line("rank %lld (replicate=%lld, shard=%lld, tp=%lld) step %lld: all_reduce[tp] = [%g %g %g %g], all_gather[shard] = [%g %g %g %g], reduce_scatter[shard]+avg[replicate] = [%g %g], all_reduce[replicate, shard] = [%g]\0A\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @failure_line("scenario 3: rank %lld: FAILED: %s\0A\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @msg_stats("meshrt_get_stats returned an error\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @msg_values("a collective returned a wrong value\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @msg_splits("expected 4 communicator splits, one per distinct (mesh, ordered axes)\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @msg_colls("expected 5 collectives per step\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @stats_line("rank %lld: %lld steps, max |error| %g; runtime: splits=%lld (expected 4), communicators=%lld, comm_requests=%lld, collectives=%lld (expected %lld)\0A\00") {addr_space = 0 : i32}

mesh.mesh @mesh_3d(["replicate" = 2, "shard" = 2, "tp" = 2])

// One step (k) of the collectives above on this device's values.
func.func private @step(%k: index)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1xf32>) {
  %a = mesh.axis_index @mesh_3d "replicate" : index
  %b = mesh.axis_index @mesh_3d "shard" : index
  %c = mesh.axis_index @mesh_3d "tp" : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  %a4 = arith.muli %a, %c4 : index
  %b2 = arith.muli %b, %c2 : index
  %ab = arith.addi %a4, %b2 : index
  %r = arith.addi %ab, %c : index
  %k1 = arith.addi %k, %c1 : index

  // Tensor parallelism: partial sums completed over "tp".
  %x = tensor.generate {
  ^bb0(%i: index):
    %c_1 = arith.addi %c, %c1 : index
    %i_1 = arith.addi %i, %c1 : index
    %t = arith.muli %c_1, %i_1 : index
    %v = arith.muli %t, %k1 : index
    %f = func.call @to_f32(%v) : (index) -> f32
    tensor.yield %f : f32
  } : tensor<4xf32>
  %tp = mesh.all_reduce %x on @mesh_3d axes = ["tp"] reduction = sum
      : tensor<4xf32> -> tensor<4xf32>

  // HSDP, FSDP part: parameters sharded over "shard" are gathered ...
  %p = tensor.generate {
  ^bb0(%j: index):
    %t = arith.muli %b, %c10 : index
    %t2 = arith.addi %t, %j : index
    %v = arith.addi %t2, %k : index
    %f = func.call @to_f32(%v) : (index) -> f32
    tensor.yield %f : f32
  } : tensor<2xf32>
  %params = mesh.all_gather %p on @mesh_3d axes = ["shard"] gather_dim = 0
      : tensor<2xf32> -> tensor<4xf32>

  // ... gradients reduce-scattered over "shard", DDP part: averaged over
  // "replicate".
  %g = tensor.generate {
  ^bb0(%i: index):
    %t = arith.muli %i, %c10 : index
    %t2 = arith.addi %r, %k : index
    %v = arith.addi %t2, %t : index
    %f = func.call @to_f32(%v) : (index) -> f32
    tensor.yield %f : f32
  } : tensor<4xf32>
  %g_shard = mesh.reduce_scatter %g on @mesh_3d axes = ["shard"]
      scatter_dim = 0 reduction = sum : tensor<4xf32> -> tensor<2xf32>
  %g_avg = mesh.all_reduce %g_shard on @mesh_3d axes = ["replicate"]
      reduction = avg : tensor<2xf32> -> tensor<2xf32>

  // A loss summed over the whole ("replicate", "shard") sub-mesh.
  %rk = arith.muli %r, %k1 : index
  %lf = func.call @to_f32(%rk) : (index) -> f32
  %l = tensor.splat %lf : tensor<1xf32>
  %loss = mesh.all_reduce %l on @mesh_3d axes = ["replicate", "shard"]
      reduction = sum : tensor<1xf32> -> tensor<1xf32>
  return %tp, %params, %g_avg, %loss
      : tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1xf32>
}

// What @step must return, from the formulas in the header.
func.func private @expected(%k: index)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1xf32>) {
  %b = mesh.axis_index @mesh_3d "shard" : index
  %c = mesh.axis_index @mesh_3d "tp" : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c10 = arith.constant 10 : index
  %c12 = arith.constant 12 : index
  %c20 = arith.constant 20 : index
  %k1 = arith.addi %k, %c1 : index
  %tp = tensor.generate {
  ^bb0(%i: index):
    %i_1 = arith.addi %i, %c1 : index
    %t = arith.muli %i_1, %k1 : index
    %v = arith.muli %t, %c3 : index
    %f = func.call @to_f32(%v) : (index) -> f32
    tensor.yield %f : f32
  } : tensor<4xf32>
  %params = tensor.generate {
  ^bb0(%i: index):
    %q = arith.divui %i, %c2 : index
    %m = arith.remui %i, %c2 : index
    %t = arith.muli %q, %c10 : index
    %t2 = arith.addi %t, %m : index
    %v = arith.addi %t2, %k : index
    %f = func.call @to_f32(%v) : (index) -> f32
    tensor.yield %f : f32
  } : tensor<4xf32>
  %grad = tensor.generate {
  ^bb0(%j: index):
    %b2 = arith.muli %b, %c2 : index
    %i = arith.addi %b2, %j : index
    %i20 = arith.muli %i, %c20 : index
    %cc = arith.muli %c, %c2 : index
    %kk = arith.muli %k, %c2 : index
    %t = arith.addi %c6, %cc : index
    %t2 = arith.addi %t, %kk : index
    %v = arith.addi %t2, %i20 : index
    %f = func.call @to_f32(%v) : (index) -> f32
    tensor.yield %f : f32
  } : tensor<2xf32>
  %c4c = arith.muli %c, %c4 : index
  %t = arith.addi %c12, %c4c : index
  %lv = arith.muli %t, %k1 : index
  %lf = func.call @to_f32(%lv) : (index) -> f32
  %loss = tensor.splat %lf : tensor<1xf32>
  return %tp, %params, %grad, %loss
      : tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1xf32>
}

// Aborts the job when %ok is false, after saying why on stderr (written
// straight to the file descriptor: cf.assert's own message goes through
// buffered stdout, which abort() does not flush).
func.func private @require(%ok: i1, %rank: i64, %what: !llvm.ptr) {
  %failed = arith.constant false
  %bad = arith.cmpi eq, %ok, %failed : i1
  scf.if %bad {
    %fd = arith.constant 2 : i32
    %fmt = llvm.mlir.addressof @failure_line : !llvm.ptr
    %n = llvm.call @dprintf(%fd, %fmt, %rank, %what)
        vararg(!llvm.func<i32 (i32, ptr, ...)>) : (i32, !llvm.ptr, i64, !llvm.ptr) -> i32
  }
  cf.assert %ok, "scenario 3 failed"
  return
}

func.func private @to_f32(%v: index) -> f32 {
  %i = arith.index_cast %v : index to i64
  %f = arith.sitofp %i : i64 to f32
  return %f : f32
}

func.func private @to_f64(%t: tensor<?xf32>, %i: index) -> f64 {
  %v = tensor.extract %t[%i] : tensor<?xf32>
  %d = arith.extf %v : f32 to f64
  return %d : f64
}

func.func private @to_i64(%v: index) -> i64 {
  %i = arith.index_cast %v : index to i64
  return %i : i64
}

// max_i |got_i - want_i|
func.func private @max_error(%got: tensor<?xf32>, %want: tensor<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %got, %c0 : tensor<?xf32>
  %m = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = tensor.extract %got[%i] : tensor<?xf32>
    %y = tensor.extract %want[%i] : tensor<?xf32>
    %d = arith.subf %x, %y : f32
    %e = math.absf %d : f32
    %m = arith.maximumf %acc, %e : f32
    scf.yield %m : f32
  }
  return %m : f32
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %steps = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %a = mesh.axis_index @mesh_3d "replicate" : index
  %b = mesh.axis_index @mesh_3d "shard" : index
  %c = mesh.axis_index @mesh_3d "tp" : index
  %a4 = arith.muli %a, %c4 : index
  %b2 = arith.muli %b, %c2 : index
  %ab = arith.addi %a4, %b2 : index
  %r = arith.addi %ab, %c : index
  %ri = func.call @to_i64(%r) : (index) -> i64
  %ai = func.call @to_i64(%a) : (index) -> i64
  %bi = func.call @to_i64(%b) : (index) -> i64
  %ci = func.call @to_i64(%c) : (index) -> i64

  %err = scf.for %k = %c0 to %steps step %c1 iter_args(%acc = %zero) -> (f32) {
    %tp, %params, %grad, %loss = func.call @step(%k)
        : (index) -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1xf32>)
    %etp, %eparams, %egrad, %eloss = func.call @expected(%k)
        : (index) -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1xf32>)
    %tp_d = tensor.cast %tp : tensor<4xf32> to tensor<?xf32>
    %params_d = tensor.cast %params : tensor<4xf32> to tensor<?xf32>
    %grad_d = tensor.cast %grad : tensor<2xf32> to tensor<?xf32>
    %loss_d = tensor.cast %loss : tensor<1xf32> to tensor<?xf32>
    %etp_d = tensor.cast %etp : tensor<4xf32> to tensor<?xf32>
    %eparams_d = tensor.cast %eparams : tensor<4xf32> to tensor<?xf32>
    %egrad_d = tensor.cast %egrad : tensor<2xf32> to tensor<?xf32>
    %eloss_d = tensor.cast %eloss : tensor<1xf32> to tensor<?xf32>
    %e1 = func.call @max_error(%tp_d, %etp_d) : (tensor<?xf32>, tensor<?xf32>) -> f32
    %e2 = func.call @max_error(%params_d, %eparams_d) : (tensor<?xf32>, tensor<?xf32>) -> f32
    %e3 = func.call @max_error(%grad_d, %egrad_d) : (tensor<?xf32>, tensor<?xf32>) -> f32
    %e4 = func.call @max_error(%loss_d, %eloss_d) : (tensor<?xf32>, tensor<?xf32>) -> f32
    %m1 = arith.maximumf %acc, %e1 : f32
    %m2 = arith.maximumf %m1, %e2 : f32
    %m3 = arith.maximumf %m2, %e3 : f32
    %m4 = arith.maximumf %m3, %e4 : f32

    // Print the last step.
    %last = arith.subi %steps, %c1 : index
    %is_last = arith.cmpi eq, %k, %last : index
    scf.if %is_last {
      %fmt = llvm.mlir.addressof @step_line : !llvm.ptr
      %ki = func.call @to_i64(%steps) : (index) -> i64
      %t0 = func.call @to_f64(%tp_d, %c0) : (tensor<?xf32>, index) -> f64
      %t1 = func.call @to_f64(%tp_d, %c1) : (tensor<?xf32>, index) -> f64
      %t2 = func.call @to_f64(%tp_d, %c2) : (tensor<?xf32>, index) -> f64
      %t3 = func.call @to_f64(%tp_d, %c3) : (tensor<?xf32>, index) -> f64
      %p0 = func.call @to_f64(%params_d, %c0) : (tensor<?xf32>, index) -> f64
      %p1 = func.call @to_f64(%params_d, %c1) : (tensor<?xf32>, index) -> f64
      %p2 = func.call @to_f64(%params_d, %c2) : (tensor<?xf32>, index) -> f64
      %p3 = func.call @to_f64(%params_d, %c3) : (tensor<?xf32>, index) -> f64
      %g0 = func.call @to_f64(%grad_d, %c0) : (tensor<?xf32>, index) -> f64
      %g1 = func.call @to_f64(%grad_d, %c1) : (tensor<?xf32>, index) -> f64
      %l0 = func.call @to_f64(%loss_d, %c0) : (tensor<?xf32>, index) -> f64
      %n = llvm.call @printf(%fmt, %ri, %ai, %bi, %ci, %ki, %t0, %t1, %t2, %t3,
                             %p0, %p1, %p2, %p3, %g0, %g1, %l0)
          vararg(!llvm.func<i32 (ptr, ...)>)
          : (!llvm.ptr, i64, i64, i64, i64, i64, f64, f64, f64, f64, f64, f64,
             f64, f64, f64, f64, f64) -> i32
    }
    scf.yield %m4 : f32
  }

  // The runtime's counters: splits, communicators, comm_requests,
  // comm_reuses, meshes, collectives.
  %one = llvm.mlir.constant(1 : i64) : i64
  %stats = llvm.alloca %one x !llvm.array<6 x i64> : (i64) -> !llvm.ptr
  %st = llvm.call @meshrt_get_stats(%stats) : (!llvm.ptr) -> i32
  %splits = llvm.load %stats : !llvm.ptr -> i64
  %p_comms = llvm.getelementptr %stats[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i64>
  %comms = llvm.load %p_comms : !llvm.ptr -> i64
  %p_reqs = llvm.getelementptr %stats[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i64>
  %reqs = llvm.load %p_reqs : !llvm.ptr -> i64
  %p_colls = llvm.getelementptr %stats[0, 5] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<6 x i64>
  %colls = llvm.load %p_colls : !llvm.ptr -> i64
  %per_step = arith.constant 5 : i64
  %steps_i = func.call @to_i64(%steps) : (index) -> i64
  %want_colls = arith.muli %per_step, %steps_i : i64

  %fmt = llvm.mlir.addressof @stats_line : !llvm.ptr
  %err_d = arith.extf %err : f32 to f64
  %n = llvm.call @printf(%fmt, %ri, %steps_i, %err_d, %splits, %comms, %reqs,
                         %colls, %want_colls)
      vararg(!llvm.func<i32 (ptr, ...)>)
      : (!llvm.ptr, i64, i64, f64, i64, i64, i64, i64, i64) -> i32
  %null = llvm.mlir.zero : !llvm.ptr
  %f = llvm.call @fflush(%null) : (!llvm.ptr) -> i32

  %st_zero = arith.constant 0 : i32
  %st_ok = arith.cmpi eq, %st, %st_zero : i32
  %m_stats = llvm.mlir.addressof @msg_stats : !llvm.ptr
  func.call @require(%st_ok, %ri, %m_stats) : (i1, i64, !llvm.ptr) -> ()
  %exact = arith.cmpf oeq, %err, %zero : f32
  %m_values = llvm.mlir.addressof @msg_values : !llvm.ptr
  func.call @require(%exact, %ri, %m_values) : (i1, i64, !llvm.ptr) -> ()
  %four = arith.constant 4 : i64
  %splits_ok = arith.cmpi eq, %splits, %four : i64
  %m_splits = llvm.mlir.addressof @msg_splits : !llvm.ptr
  func.call @require(%splits_ok, %ri, %m_splits) : (i1, i64, !llvm.ptr) -> ()
  %colls_ok = arith.cmpi eq, %colls, %want_colls : i64
  %m_colls = llvm.mlir.addressof @msg_colls : !llvm.ptr
  func.call @require(%colls_ok, %ri, %m_colls) : (i1, i64, !llvm.ptr) -> ()
  %ret = arith.constant 0 : i32
  return %ret : i32
}

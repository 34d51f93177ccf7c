//===- LaunchToHostLoops.cpp - gpu.launch as host loops -------------------===//
//
// A test lowering for the device stage of --mesh-to-nvvm: each gpu.launch
// becomes nested scf.for loops over its blocks and threads, so the rewrites
// that made the launches (copy kernels, fusion, tiling, the mapping to
// blocks and threads, one-thread kernels) are checked on numbers on a CPU.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPULAUNCHTOHOSTLOOPS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

/// Fails with a message naming the op when `launch` cannot run as
/// independent loop iterations: its threads must not communicate or share
/// memory.
static LogicalResult checkRunsAsLoops(gpu::LaunchOp launch) {
  const char *pass = "mesh-gpu-launch-to-host-loops: ";
  if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty())
    return launch.emitOpError() << pass << "asynchronous launches are not "
                                << "supported";
  if (launch.hasClusterSize())
    return launch.emitOpError() << pass << "thread block clusters are not "
                                << "supported";
  if (!launch.getWorkgroupAttributions().empty() ||
      !launch.getPrivateAttributions().empty() ||
      launch.getDynamicSharedMemorySize())
    return launch.emitOpError()
           << pass << "workgroup, private or dynamic shared memory cannot "
           << "be emulated by host loops";
  if (!launch.getBody().hasOneBlock())
    return launch.emitOpError() << pass << "a body of several blocks is not "
                                << "supported";
  WalkResult result = launch.getBody().walk([&](Operation *op) {
    if (!isa<gpu::GPUDialect>(op->getDialect()) ||
        isa<gpu::TerminatorOp, gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp,
            gpu::GridDimOp>(op))
      return WalkResult::advance();
    op->emitOpError() << pass << "threads of a kernel that run this op "
                      << "cannot be emulated by independent host loops";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

/// The value a gpu id or size query `op` takes inside the loops.
static Value queryValue(Operation *op, const gpu::KernelDim3 &blockIds,
                        const gpu::KernelDim3 &threadIds,
                        const gpu::KernelDim3 &gridSize,
                        const gpu::KernelDim3 &blockSize) {
  auto pick = [](const gpu::KernelDim3 &dims, gpu::Dimension dim) {
    return dim == gpu::Dimension::x   ? dims.x
           : dim == gpu::Dimension::y ? dims.y
                                      : dims.z;
  };
  if (auto id = dyn_cast<gpu::ThreadIdOp>(op))
    return pick(threadIds, id.getDimension());
  if (auto id = dyn_cast<gpu::BlockIdOp>(op))
    return pick(blockIds, id.getDimension());
  if (auto dim = dyn_cast<gpu::BlockDimOp>(op))
    return pick(blockSize, dim.getDimension());
  if (auto dim = dyn_cast<gpu::GridDimOp>(op))
    return pick(gridSize, dim.getDimension());
  return {};
}

/// Replaces `launch` with six nested loops (blocks z, y, x, threads z, y, x)
/// around a copy of its body.
static void lowerToLoops(gpu::LaunchOp launch) {
  OpBuilder b(launch);
  Location loc = launch.getLoc();
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> upper = {grid.z,  grid.y,  grid.x,
                              block.z, block.y, block.x};
  SmallVector<Value> lower(upper.size(), zero), steps(upper.size(), one);
  Block &body = launch.getBody().front();
  scf::buildLoopNest(
      b, loc, lower, upper, steps,
      [&](OpBuilder &nested, Location, ValueRange ivs) {
        gpu::KernelDim3 blockIds{ivs[2], ivs[1], ivs[0]};
        gpu::KernelDim3 threadIds{ivs[5], ivs[4], ivs[3]};
        IRMapping mapping;
        auto mapDims = [&](gpu::KernelDim3 from, gpu::KernelDim3 to) {
          mapping.map(from.x, to.x);
          mapping.map(from.y, to.y);
          mapping.map(from.z, to.z);
        };
        mapDims(launch.getBlockIds(), blockIds);
        mapDims(launch.getThreadIds(), threadIds);
        mapDims(launch.getGridSize(), grid);
        mapDims(launch.getBlockSize(), block);
        for (Operation &op : body.without_terminator()) {
          Operation *copy = nested.clone(op, mapping);
          // Queries nested anywhere in the copy take the loops' values.
          copy->walk([&](Operation *query) {
            if (Value v = queryValue(query, blockIds, threadIds, grid, block)) {
              query->getResult(0).replaceAllUsesWith(v);
              query->erase();
            }
          });
        }
      });
  launch.erase();
}

namespace {

struct MeshGpuLaunchToHostLoopsPass
    : public mesh::impl::MeshGpuLaunchToHostLoopsBase<
          MeshGpuLaunchToHostLoopsPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk(
        [&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches)
      if (failed(checkRunsAsLoops(launch)))
        return signalPassFailure();
    for (gpu::LaunchOp launch : launches)
      lowerToLoops(launch);
  }
};

} // namespace

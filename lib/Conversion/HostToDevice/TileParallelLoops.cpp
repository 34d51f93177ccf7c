//===- TileParallelLoops.cpp - scf.parallel nests to blocks of threads ----===//
//
// The device stage's choice of blocks and threads for the parallel loops
// that linalg ops become, made per loop nest from its own shape (MLIR's
// parallel-loop-tiling applies one list of sizes to every nest, and
// gpu-map-parallel-loops maps the outermost dimension to threadIdx.x, which
// makes neighbouring threads read addresses a row apart).
//
//===----------------------------------------------------------------------===//

#include "BlockSize.h"
#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUTILEPARALLELLOOPS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using mlir::mesh::kMaxThreadsPerBlock;
using mlir::mesh::verifyThreadsPerBlock;

namespace {

/// The static trip count of dimension `d`, if it has one.
std::optional<int64_t> tripCount(scf::ParallelOp loop, unsigned d) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()[d]);
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound()[d]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[d]);
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return llvm::divideCeil(std::max<int64_t>(*ub - *lb, 0), *step);
}

/// Threads per block along each dimension: the innermost dimension (the one
/// whose consecutive iterations touch consecutive elements of a row-major
/// buffer) takes as many of `threads` as its extent can use, rounded up to
/// a power of two, then the next one out takes what is left, and so on.
SmallVector<int64_t> automaticTiles(ArrayRef<std::optional<int64_t>> trips,
                                    int64_t threads) {
  unsigned n = trips.size();
  SmallVector<int64_t> tiles(n, 1);
  int64_t left = threads;
  for (unsigned d = n; d-- > 0 && left > 1;) {
    int64_t take = left;
    if (trips[d] && *trips[d] >= 1)
      take = std::min<int64_t>(left, llvm::PowerOf2Ceil(uint64_t(*trips[d])));
    tiles[d] = take;
    left /= take;
  }
  return tiles;
}

/// Grid dimensions outermost first (blockIdx.x has no 65535 limit, and the
/// outer dimensions are the long ones: rows, batches); threads innermost
/// first, so that threadIdx.x walks along rows.
void mapBlocksAndThreads(scf::ParallelOp blocks, scf::ParallelOp threads) {
  auto map = [](scf::ParallelOp loop, ArrayRef<gpu::Processor> order,
                bool innermostFirst) {
    Builder b(loop.getContext());
    unsigned n = loop.getNumLoops();
    SmallVector<gpu::ParallelLoopDimMappingAttr> attrs;
    for (unsigned d = 0; d < n; ++d) {
      unsigned rank = innermostFirst ? n - 1 - d : d;
      gpu::Processor p =
          rank < order.size() ? order[rank] : gpu::Processor::Sequential;
      attrs.push_back(b.getAttr<gpu::ParallelLoopDimMappingAttr>(
          p, b.getDimIdentityMap(), b.getDimIdentityMap()));
    }
    (void)gpu::setMappingAttr(loop, attrs);
  };
  map(blocks,
      {gpu::Processor::BlockX, gpu::Processor::BlockY, gpu::Processor::BlockZ},
      /*innermostFirst=*/false);
  map(threads,
      {gpu::Processor::ThreadX, gpu::Processor::ThreadY,
       gpu::Processor::ThreadZ},
      /*innermostFirst=*/true);
}

struct TileParallelLoops
    : public mesh::impl::MeshGpuTileParallelLoopsBase<TileParallelLoops> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyThreadsPerBlock(getOperation(), getArgument(),
                                     threadsPerBlock, /*min=*/1)))
      return signalPassFailure();
    int64_t product = 1;
    for (int64_t t : tileSizes) {
      if (t < 1) {
        getOperation().emitError()
            << "mesh-gpu-tile-parallel-loops: tile sizes must be positive, "
               "not "
            << t;
        return signalPassFailure();
      }
      product *= t;
    }
    if (product > kMaxThreadsPerBlock) {
      getOperation().emitError()
          << "mesh-gpu-tile-parallel-loops: tile sizes of " << product
          << " threads per block (a GPU block has at most "
          << kMaxThreadsPerBlock << ")";
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> roots;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          !loop->getParentOfType<gpu::LaunchOp>())
        roots.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : roots) {
      // At most three dimensions map to hardware ids: fold the outer ones
      // into one, keeping the two innermost (the coalesced ones) apart.
      unsigned n = loop.getNumLoops();
      SmallVector<std::optional<int64_t>> trips;
      for (unsigned d = 0; d < n; ++d)
        trips.push_back(tripCount(loop, d));
      if (n > 3 && tileSizes.empty()) {
        // The collapsed dimension's extent is the product of its parts'
        // (the rewrite computes it with ops that are not folded yet).
        std::optional<int64_t> outerTrips = 1;
        for (unsigned d = 0; d + 2 < n; ++d)
          outerTrips = outerTrips && trips[d]
                           ? std::optional<int64_t>(*outerTrips * *trips[d])
                           : std::nullopt;
        trips = {outerTrips, trips[n - 2], trips[n - 1]};
        std::vector<unsigned> outer;
        for (unsigned d = 0; d + 2 < n; ++d)
          outer.push_back(d);
        SmallVector<std::vector<unsigned>> groups = {outer, {n - 2}, {n - 1}};
        // The rewrite erases the loop and puts the new one just before it.
        Operation *next = loop->getNextNode();
        collapseParallelLoops(rewriter, loop, groups);
        loop = cast<scf::ParallelOp>(next->getPrevNode());
      }
      SmallVector<int64_t> tiles =
          tileSizes.empty()
              ? automaticTiles(trips, threadsPerBlock)
              : SmallVector<int64_t>(tileSizes.begin(), tileSizes.end());
      tiles.resize(loop.getNumLoops(), 1);
      auto [blocks, threads] =
          scf::tileParallelLoop(loop, tiles, /*noMinMaxBounds=*/true);
      mapBlocksAndThreads(blocks, threads);
      // Parallel loops nested in a thread's work run in that thread.
      threads.getBody()->walk([](scf::ParallelOp nested) {
        if (nested->getAttr(gpu::getMappingAttrName()))
          return;
        Builder b(nested.getContext());
        SmallVector<gpu::ParallelLoopDimMappingAttr> seq(
            nested.getNumLoops(),
            b.getAttr<gpu::ParallelLoopDimMappingAttr>(
                gpu::Processor::Sequential, b.getDimIdentityMap(),
                b.getDimIdentityMap()));
        (void)gpu::setMappingAttr(nested, seq);
      });
    }
  }
};

} // namespace

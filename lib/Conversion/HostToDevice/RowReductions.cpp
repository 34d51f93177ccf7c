//===- RowReductions.cpp - row reductions as one block per row ------------===//
//
// A linalg reduction along the last dimension (softmax's max and sum, layer
// norm's sums, a loss per row) becomes, after convert-linalg-to-parallel-
// loops, an scf.parallel over the rows whose body holds an scf.for over the
// row that loads the accumulator, combines, and stores it back. Tiled as it
// is, each thread walks one row, and neighbouring threads read addresses a
// row apart. This pass makes such a nest one gpu.launch with a block per row:
// the threads of the block stride over the row (neighbours read neighbours),
// each folds its share, gpu.all_reduce combines the block's partial values
// (shuffles and shared memory, by convert-gpu-to-nvvm), and thread 0 applies
// the result to the accumulator. What the row's body does besides (a fill
// before, a division after, a second reduction that reads the first's
// result) runs once per row in thread 0, each store followed by a barrier.
//
//===----------------------------------------------------------------------===//

#include "BlockSize.h"
#include "Reductions.h"
#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUROWREDUCTIONS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

struct RowReductions
    : public mesh::impl::MeshGpuRowReductionsBase<RowReductions> {
  using Base::Base;

  /// Threads for a row of `trips` elements (if static).
  int64_t threadsFor(std::optional<int64_t> trips) const {
    if (!trips)
      return threadsPerBlock;
    return std::clamp<int64_t>(llvm::PowerOf2Ceil(uint64_t(*trips)), 32,
                               threadsPerBlock);
  }

  /// The nest's reductions, in order, if every op of its body is one of
  /// them, a region-free op, or a store/load; else nothing.
  static std::optional<SmallVector<Reduction>> matchNest(scf::ParallelOp nest) {
    if (nest.getNumReductions() != 0 || nest.getNumLoops() > 3)
      return std::nullopt;
    SmallVector<Reduction> found;
    for (Operation &op : nest.getBody()->without_terminator()) {
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        std::optional<Reduction> r =
            matchReduction(loop, loop, /*alongRows=*/true);
        if (!r)
          return std::nullopt;
        found.push_back(*r);
        continue;
      }
      if (op.getNumRegions() != 0)
        return std::nullopt;
    }
    if (found.empty())
      return std::nullopt;
    return found;
  }

  /// Threads per block: enough for the longest static row, at least 32.
  int64_t blockThreads(ArrayRef<Reduction> reductions) const {
    int64_t threads = 32;
    for (Reduction r : reductions) {
      std::optional<int64_t> trips;
      if (std::optional<APInt> t = r.loop.getStaticTripCount())
        trips = t->getSExtValue();
      threads = std::max(threads, threadsFor(trips));
    }
    return threads;
  }

  /// The launch of one block per row of `nest`, `threads` threads each
  /// (`blockSize`): all on blockIdx.x (up to 2^31 - 1; y and z stop at
  /// 65535), row-major over the nest's dimensions. Leaves `b` at the start
  /// of its body, with `map` taking the nest's induction variables to the
  /// block's row.
  static gpu::LaunchOp launchPerRow(OpBuilder &b, scf::ParallelOp nest,
                                    int64_t threads, Value &blockSize,
                                    IRMapping &map) {
    Location loc = nest.getLoc();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    unsigned rank = nest.getNumLoops();
    SmallVector<Value, 3> trips;
    Value rows;
    for (unsigned d = 0; d < rank; ++d) {
      Value span = arith::SubIOp::create(b, loc, nest.getUpperBound()[d],
                                         nest.getLowerBound()[d]);
      trips.push_back(
          arith::CeilDivSIOp::create(b, loc, span, nest.getStep()[d]));
      rows = d == 0 ? trips.back()
                    : arith::MulIOp::create(b, loc, rows, trips.back());
    }
    blockSize = arith::ConstantIndexOp::create(b, loc, threads);
    auto launch =
        gpu::LaunchOp::create(b, loc, rows, one, one, blockSize, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    // The row's position along each dimension, innermost fastest.
    Value rest = launch.getBlockIds().x;
    for (unsigned d = rank; d-- > 0;) {
      Value coord = rest;
      if (d > 0) {
        coord = arith::RemUIOp::create(b, loc, rest, trips[d]);
        rest = arith::DivUIOp::create(b, loc, rest, trips[d]);
      }
      Value off = arith::MulIOp::create(b, loc, coord, nest.getStep()[d]);
      map.map(nest.getInductionVars()[d],
              arith::AddIOp::create(b, loc, nest.getLowerBound()[d], off));
    }
    return launch;
  }

  /// Emits `body` for thread 0 only, then a barrier of the block.
  static void inFirstThread(OpBuilder &b, Location loc, Value isFirst,
                            function_ref<void(OpBuilder &)> body) {
    auto ifOp = scf::IfOp::create(b, loc, isFirst, /*withElse=*/false);
    OpBuilder inner = ifOp.getThenBodyBuilder();
    body(inner);
    gpu::BarrierOp::create(b, loc);
  }

  /// Reduction `r` of the row across the block: each thread folds
  /// iterations tid, tid + threads, ... from the neutral element,
  /// gpu.all_reduce combines them, and thread 0 applies the total to the
  /// accumulator.
  static void reduceRow(OpBuilder &b, Reduction r, IRMapping &map, Value tid,
                        Value blockSize, Value isFirst) {
    scf::ForOp loop = r.loop;
    Location loc = loop.getLoc();
    Type type = r.combiner->getResult(0).getType();
    Value neutral = arith::ConstantOp::create(b, loc, type,
                                              reductionIdentity(r.kind, type));
    Value lb = map.lookupOrDefault(loop.getLowerBound());
    Value ub = map.lookupOrDefault(loop.getUpperBound());
    Value step = map.lookupOrDefault(loop.getStep());
    Value start = arith::AddIOp::create(
        b, loc, lb, arith::MulIOp::create(b, loc, tid, step));
    Value stride = arith::MulIOp::create(b, loc, step, blockSize);
    auto partial = scf::ForOp::create(
        b, loc, start, ub, stride, ValueRange{neutral},
        [&](OpBuilder &lb2, Location, Value iv, ValueRange acc) {
          IRMapping inner = map;
          inner.map(loop.getInductionVar(), iv);
          for (Operation &x : loop.getBody()->without_terminator()) {
            if (&x == r.accLoad.getOperation() || &x == r.combiner ||
                &x == r.accStore.getOperation())
              continue;
            lb2.clone(x, inner);
          }
          Value elt = inner.lookupOrDefault(r.element);
          Operation *c = lb2.clone(*r.combiner, inner);
          c->setOperands({elt, acc[0]});
          scf::YieldOp::create(lb2, loc, c->getResult(0));
        });
    Value total = allReduceInBlock(b, loc, partial.getResult(0), r.kind);
    inFirstThread(b, loc, isFirst, [&](OpBuilder &inner) {
      IRMapping m = map;
      Operation *acc = inner.clone(*r.accLoad, m);
      Operation *c = inner.clone(*r.combiner, m);
      unsigned accPos =
          r.combiner->getOperand(0) == r.accLoad.getResult() ? 0 : 1;
      c->setOperand(accPos, acc->getResult(0));
      c->setOperand(1 - accPos, total);
      m.map(r.combiner->getResult(0), c->getResult(0));
      inner.clone(*r.accStore, m);
    });
  }

  void rewrite(scf::ParallelOp nest, SmallVector<Reduction> &reductions) {
    OpBuilder b(nest);
    Location loc = nest.getLoc();
    IRMapping map;
    Value blockSize;
    gpu::LaunchOp launch =
        launchPerRow(b, nest, blockThreads(reductions), blockSize, map);
    Value tid = launch.getThreadIds().x;
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value isFirst =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero);
    for (Operation &op : nest.getBody()->without_terminator()) {
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        reduceRow(
            b,
            *llvm::find_if(reductions,
                           [&](const Reduction &x) { return x.loop == loop; }),
            map, tid, blockSize, isFirst);
      } else if (isMemoryEffectFree(&op) || isa<memref::LoadOp>(op)) {
        b.clone(op, map);
      } else {
        // A store (or another effect) of the row: once, by thread 0.
        inFirstThread(b, loc, isFirst,
                      [&](OpBuilder &inner) { inner.clone(op, map); });
      }
    }
    gpu::TerminatorOp::create(b, loc);
    nest.erase();
  }

  void runOnOperation() override {
    if (failed(verifyThreadsPerBlock(getOperation(), getArgument(),
                                     threadsPerBlock, /*min=*/32)))
      return signalPassFailure();
    SmallVector<std::pair<scf::ParallelOp, SmallVector<Reduction>>> work;
    getOperation().walk([&](scf::ParallelOp nest) {
      if (nest->getParentOfType<scf::ParallelOp>() ||
          nest->getParentOfType<gpu::LaunchOp>())
        return;
      if (std::optional<SmallVector<Reduction>> r = matchNest(nest))
        work.push_back({nest, std::move(*r)});
    });
    for (auto &[nest, reductions] : work)
      rewrite(nest, reductions);
  }
};

} // namespace

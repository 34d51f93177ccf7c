//===- FullReductions.cpp - reductions to one value as two parallel steps -===//
//
// A linalg reduction over every dimension (a loss's sum or mean, a norm, a
// count) has no parallel dimension: convert-linalg-to-parallel-loops makes
// it a nest of scf.for loops that load an accumulator, combine and store
// it back, and the device stage would run it as a kernel of one thread.
// This pass makes it two parallel steps: a parallel loop over P partial
// slots, slot g folding the elements g, g + P, g + 2P, ... of the nest's
// iteration space (neighbouring slots read neighbouring elements), each
// into its own slot of a buffer of P partial values; then a reduction of
// that buffer into the accumulator, written as a one-row reduction, which
// mesh-gpu-row-reductions makes one block with a tree across its threads.
//
//===----------------------------------------------------------------------===//

#include "Reductions.h"
#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUFULLREDUCTIONS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// A perfect nest of scf.for loops, outermost first, whose innermost loop
/// accumulates into a place that none of them moves.
struct FullReduction {
  SmallVector<scf::ForOp> loops;
  Reduction reduction;
};

/// The full reduction `outer` starts, if it is one: each loop's bounds are
/// defined outside the nest, each body but the innermost is the next loop
/// alone, and the innermost is a reduction whose accumulator is indexed by
/// values from outside the nest.
std::optional<FullReduction> matchFull(scf::ForOp outer) {
  SmallVector<scf::ForOp> loops = {outer};
  while (true) {
    scf::ForOp loop = loops.back();
    if (loop.getNumRegionIterArgs() != 0)
      return std::nullopt;
    for (Value v : {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
      if (!definedOutside(v, outer))
        return std::nullopt;
    Block *body = loop.getBody();
    auto inner = dyn_cast<scf::ForOp>(body->front());
    if (!inner || &body->front() != &*std::prev(body->end(), 2))
      break;
    loops.push_back(inner);
  }
  std::optional<Reduction> r =
      matchReduction(loops.back(), outer, /*alongRows=*/false);
  if (!r)
    return std::nullopt;
  return FullReduction{loops, *r};
}

struct FullReductions
    : public mesh::impl::MeshGpuFullReductionsBase<FullReductions> {
  using Base::Base;

  /// The first step: slot g of `partials` (P of them) folds the elements
  /// g, g + P, ... of the `total` iterations, each iteration's loop
  /// variables taken back from its position (innermost fastest).
  static void foldIntoSlots(OpBuilder &b, FullReduction f,
                            ArrayRef<Value> trips, Value total, Value slots,
                            Value partials) {
    Reduction r = f.reduction;
    Location loc = r.loop.getLoc();
    Type type = r.combiner->getResult(0).getType();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value neutral = arith::ConstantOp::create(b, loc, type,
                                              reductionIdentity(r.kind, type));
    auto slotLoop = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                            ValueRange{slots}, ValueRange{one});
    OpBuilder body = OpBuilder::atBlockBegin(slotLoop.getBody());
    Value slot = slotLoop.getInductionVars()[0];
    auto fold = scf::ForOp::create(
        body, loc, slot, total, slots, ValueRange{neutral},
        [&](OpBuilder &in, Location, Value k, ValueRange acc) {
          IRMapping map;
          Value rest = k;
          for (unsigned d = f.loops.size(); d-- > 0;) {
            scf::ForOp loop = f.loops[d];
            Value coord = rest;
            if (d > 0) {
              coord = arith::RemUIOp::create(in, loc, rest, trips[d]);
              rest = arith::DivUIOp::create(in, loc, rest, trips[d]);
            }
            Value off = arith::MulIOp::create(in, loc, coord, loop.getStep());
            map.map(loop.getInductionVar(),
                    arith::AddIOp::create(in, loc, loop.getLowerBound(), off));
          }
          for (Operation &x : r.loop.getBody()->without_terminator()) {
            if (&x == r.accLoad.getOperation() || &x == r.combiner ||
                &x == r.accStore.getOperation())
              continue;
            in.clone(x, map);
          }
          Operation *c = in.clone(*r.combiner, map);
          c->setOperands({map.lookupOrDefault(r.element), acc[0]});
          scf::YieldOp::create(in, loc, c->getResult(0));
        });
    memref::StoreOp::create(body, loc, fold.getResult(0), partials,
                            ValueRange{slot});
  }

  /// The second step: the slots combined into the accumulator, as a
  /// reduction over the one row of `partials`.
  static void combineSlots(OpBuilder &b, Reduction r, Value slots,
                           Value partials) {
    Location loc = r.loop.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto row = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                       ValueRange{one}, ValueRange{one});
    OpBuilder body = OpBuilder::atBlockBegin(row.getBody());
    scf::ForOp::create(
        body, loc, zero, slots, one, ValueRange{},
        [&](OpBuilder &in, Location, Value k, ValueRange) {
          Value part = memref::LoadOp::create(in, loc, partials, ValueRange{k});
          Operation *acc = in.clone(*r.accLoad);
          Operation *c = in.clone(*r.combiner);
          unsigned accPos =
              r.combiner->getOperand(0) == r.accLoad.getResult() ? 0 : 1;
          c->setOperand(accPos, acc->getResult(0));
          c->setOperand(1 - accPos, part);
          IRMapping map;
          map.map(r.combiner->getResult(0), c->getResult(0));
          in.clone(*r.accStore, map);
          scf::YieldOp::create(in, loc);
        });
  }

  void rewrite(FullReduction f) {
    scf::ForOp outer = f.loops.front();
    OpBuilder b(outer);
    Location loc = outer.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> trips;
    Value total = one;
    for (scf::ForOp loop : f.loops) {
      Value span = arith::SubIOp::create(b, loc, loop.getUpperBound(),
                                         loop.getLowerBound());
      Value t = arith::CeilDivSIOp::create(b, loc, span, loop.getStep());
      trips.push_back(arith::MaxSIOp::create(b, loc, t, zero));
      total = arith::MulIOp::create(b, loc, total, trips.back());
    }
    // P = total / elements-per-thread, from 1 to max-partials.
    Value perThread = arith::ConstantIndexOp::create(b, loc, elementsPerThread);
    Value most = arith::ConstantIndexOp::create(b, loc, maxPartials);
    Value slots = arith::CeilDivUIOp::create(b, loc, total, perThread);
    slots = arith::MinUIOp::create(b, loc, slots, most);
    slots = arith::MaxUIOp::create(b, loc, slots, one);
    Type type = f.reduction.combiner->getResult(0).getType();
    Value partials = memref::AllocOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, type),
        ValueRange{slots});
    foldIntoSlots(b, f, trips, total, slots, partials);
    combineSlots(b, f.reduction, slots, partials);
    memref::DeallocOp::create(b, loc, partials);
    outer.erase();
  }

  void runOnOperation() override {
    if (elementsPerThread < 1 || maxPartials < 1) {
      getOperation().emitError()
          << "mesh-gpu-full-reductions: elements-per-thread and "
             "max-partials must be positive, not "
          << int64_t(elementsPerThread) << " and " << int64_t(maxPartials);
      return signalPassFailure();
    }
    // Outermost loops first: a nest that matches is taken whole; a loop
    // around it (a training loop) is looked into.
    SmallVector<FullReduction> work;
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<scf::ParallelOp, gpu::LaunchOp>(op))
        return WalkResult::skip();
      auto outer = dyn_cast<scf::ForOp>(op);
      if (!outer)
        return WalkResult::advance();
      std::optional<FullReduction> f = matchFull(outer);
      if (!f)
        return WalkResult::advance();
      work.push_back(std::move(*f));
      return WalkResult::skip();
    });
    for (FullReduction &f : work)
      rewrite(f);
  }
};

} // namespace

//===- ReductionLoops.cpp - reductions with the accumulator in a register -===//
//
// convert-linalg-to-loops writes a row reduction as
//   for i: for j: out[i] = f(x[i, j], out[i])
// with a load and a store of out[i] in every iteration. LLVM cannot keep
// out[i] in a register (it cannot prove out and x apart when both come from
// outside the function) and does not reorder a float sum, so the loop stays
// scalar: layer norm ran at a quarter of torch's speed.
//
// This pass lowers a linalg op on buffers whose reduction loops are its
// innermost ones itself: the parallel loops outside, then the output's
// values loaded once, the reduction loops carrying them as iteration
// arguments, and one store at the end. The body's float operations get the
// `reassoc` flag, so LLVM may vectorise the reduction (partial sums in
// vector lanes, added at the end): the result differs from the sequential
// sum by rounding only, as a BLAS's does. Integer reductions are exact in
// any order.
//
// Ops whose innermost loop is parallel (a column sum: out[j] += x[i, j])
// stay for convert-linalg-to-loops: their inner loop is elementwise and
// vectorises as it is.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/BufferRoots.h"
#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHREDUCTIONLOOPS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// Whether `op` is lowered here: on buffers, every indexing map a projected
/// permutation, at least one reduction loop, all reduction loops after all
/// parallel ones, outputs indexed by parallel loops only, and each output a
/// buffer this function allocates that no input is a view of (the
/// accumulator lives in a register until the final store, so an input that
/// aliased the output would read stale values).
bool lowersHere(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() == 0 ||
      op->getNumRegions() != 1 || op->getNumResults() != 0)
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  bool seenReduction = false;
  for (utils::IteratorType it : iterators) {
    if (it == utils::IteratorType::reduction)
      seenReduction = true;
    else if (seenReduction)
      return false;
  }
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return false;
  for (OpOperand &operand : op->getOpOperands())
    if (!isa<MemRefType>(operand.get().getType()))
      return false;
  unsigned numParallel = op.getNumParallelLoops();
  for (OpOperand &init : op.getDpsInitsMutable()) {
    for (AffineExpr e : op.getMatchingIndexingMap(&init).getResults())
      if (cast<AffineDimExpr>(e).getPosition() >= numParallel)
        return false;
    Value root = getViewRoot(init.get());
    if (!isAllocation(root))
      return false;
    for (OpOperand *input : op.getDpsInputOperands())
      if (getViewRoot(input->get()) == root)
        return false;
  }
  return true;
}

/// The indices of `map` (a projected permutation) at the loop ivs.
SmallVector<Value> indicesAt(AffineMap map, ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults())
    indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
  return indices;
}

/// Adds `reassoc` to the fast-math flags of a float arith op.
void allowReassociation(Operation *op) {
  auto fm = dyn_cast<arith::ArithFastMathInterface>(op);
  // Conversions are not reassociated: their flags stay as they are (and
  // ArithToLLVM would copy them onto llvm.fpext, which takes none).
  if (!fm || isa<arith::ExtFOp, arith::TruncFOp>(op))
    return;
  // Optional on some ops: absent means none.
  arith::FastMathFlagsAttr attr = fm.getFastMathFlagsAttr();
  arith::FastMathFlags flags =
      attr ? attr.getValue() : arith::FastMathFlags::none;
  op->setAttr(fm.getFastMathAttrName(),
              arith::FastMathFlagsAttr::get(
                  op->getContext(), flags | arith::FastMathFlags::reassoc));
}

void lower(linalg::LinalgOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Range, 4> ranges = op.createLoopRanges(b, loc);
  unsigned numLoops = ranges.size();
  unsigned numParallel = op.getNumParallelLoops();
  SmallVector<Value> ivs(numLoops);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto value = [&](OpFoldResult r) {
    return getValueOrCreateConstantIndexOp(b, loc, r);
  };

  // The parallel loops, outermost first.
  for (unsigned d = 0; d < numParallel; ++d) {
    auto loop =
        scf::ForOp::create(b, loc, value(ranges[d].offset),
                           value(ranges[d].size), value(ranges[d].stride));
    ivs[d] = loop.getInductionVar();
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  // The outputs' current values, loaded once per output element.
  SmallVector<Value> accs;
  for (OpOperand &init : op.getDpsInitsMutable())
    accs.push_back(memref::LoadOp::create(
        b, loc, init.get(), indicesAt(maps[init.getOperandNumber()], ivs)));
  // The reduction loops, carrying them.
  SmallVector<scf::ForOp> reductions;
  OpBuilder::InsertPoint afterReductions;
  for (unsigned d = numParallel; d < numLoops; ++d) {
    auto loop = scf::ForOp::create(b, loc, value(ranges[d].offset),
                                   value(ranges[d].size),
                                   value(ranges[d].stride), accs);
    if (reductions.empty())
      afterReductions = b.saveInsertionPoint();
    else
      scf::YieldOp::create(b, loc, loop.getResults());
    reductions.push_back(loop);
    ivs[d] = loop.getInductionVar();
    accs.assign(loop.getRegionIterArgs().begin(),
                loop.getRegionIterArgs().end());
    b.setInsertionPointToStart(loop.getBody());
  }
  // The body: inputs loaded, outputs from the iteration arguments.
  Block &body = *op.getBlock();
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands())
    mapping.map(body.getArgument(input->getOperandNumber()),
                memref::LoadOp::create(
                    b, loc, input->get(),
                    indicesAt(maps[input->getOperandNumber()], ivs)));
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    mapping.map(body.getArgument(init.getOperandNumber()), accs[i]);
  for (Operation &inner : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    Operation *clone = b.clone(inner, mapping);
    allowReassociation(clone);
  }
  SmallVector<Value> yielded;
  for (Value v : body.getTerminator()->getOperands())
    yielded.push_back(mapping.lookupOrDefault(v));
  scf::YieldOp::create(b, loc, yielded);
  // The final values stored once.
  b.restoreInsertionPoint(afterReductions);
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    memref::StoreOp::create(b, loc, reductions.front().getResult(i), init.get(),
                            indicesAt(maps[init.getOperandNumber()], ivs));
  op->erase();
}

struct MeshReductionLoopsPass
    : public mesh::impl::MeshReductionLoopsBase<MeshReductionLoopsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (lowersHere(op))
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops)
      lower(op);
  }
};

} // namespace

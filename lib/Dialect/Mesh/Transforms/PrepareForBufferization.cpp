//===- PrepareForBufferization.cpp - ready a partitioned program ----------===//
//
// Refuses a program that still carries sharding annotations (it was not
// partitioned) and makes public functions' tensor arguments read-only for
// bufferization, so that compiled kernels do not overwrite their callers'
// buffers. In the compile pipelines, also refuses memref.dealloc, which
// their buffer deallocation cannot take. Collectives of i1 tensors move i8;
// aggregates of linalg ops (linalg.softmax) are decomposed; rank-reducing
// slices keep their rank and reshape (MLIR 22 crashes on some rank-reducing
// subviews).
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshDialect.h"
#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/FunctionAttrs.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_PREPAREFORBUFFERIZATION
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {
struct PrepareForBufferizationPass
    : public mesh::impl::PrepareForBufferizationBase<
          PrepareForBufferizationPass> {
  using PrepareForBufferizationBase::PrepareForBufferizationBase;

  void runOnOperation() override {
    // A global program compiled as it is would run whole on every device.
    bool annotated = mesh::findShardingAnnotation(
        getOperation(), [](Operation *op, StringRef what) {
          InFlightDiagnostic diag = op->emitOpError();
          if (auto symbol = dyn_cast<SymbolOpInterface>(op))
            diag << "@" << symbol.getName() << " ";
          diag << what
               << ": the program is not partitioned; run "
                  "--mesh-propagate-sharding --mesh-partition first "
                  "(--mesh-to-llvm and --mesh-to-nvvm do unless given "
                  "partition=false, mesh-compile unless given --no-partition)";
        });
    if (annotated)
      return signalPassFailure();
    if (freesBuffers) {
      WalkResult freed = getOperation().walk([](memref::DeallocOp op) {
        op.emitOpError()
            << "in the input: the compile pipeline frees every buffer itself "
               "(ownership-based buffer deallocation) and takes programs "
               "that free none; remove the deallocations, or run "
               "one-shot-bufferize and the conversions yourself";
        return WalkResult::interrupt();
      });
      if (freed.wasInterrupted())
        return signalPassFailure();
    }
    widenMasks();
    if (failed(decomposeAggregates()))
      return signalPassFailure();
    keepSliceRanks();
    if (writableArguments)
      return;
    getOperation().walk([&](FunctionOpInterface fn) {
      if (!fn.isPublic())
        return;
      mesh::editArgAttrs(fn, [&](unsigned i, NamedAttrList &attrs) {
        if (isa<TensorType>(fn.getArgumentTypes()[i]))
          attrs.set(bufferization::BufferizationDialect::kWritableAttrName,
                    BoolAttr::get(fn.getContext(), false));
      });
    });
  }

  /// Ops that are aggregates of linalg ops (linalg.softmax) become those
  /// ops: bufferization and the lowering to loops take them.
  LogicalResult decomposeAggregates() {
    SmallVector<linalg::AggregatedOpInterface> aggregates;
    getOperation().walk([&](linalg::AggregatedOpInterface op) {
      if (llvm::all_of(op->getOperandTypes(),
                       [](Type t) { return isa<RankedTensorType>(t); }))
        aggregates.push_back(op);
    });
    for (linalg::AggregatedOpInterface op : aggregates) {
      OpBuilder b(op);
      FailureOr<SmallVector<Value>> parts = op.decomposeOperation(b);
      if (failed(parts))
        return op->emitOpError() << "cannot be decomposed into linalg ops "
                                    "for the lowering";
      op->replaceAllUsesWith(*parts);
      op->erase();
    }
    return success();
  }

  /// A rank-reducing slice becomes a slice that keeps every dim and a
  /// collapse_shape dropping its unit dims (an insert: an expand_shape of
  /// the source and a slice that keeps every dim). MLIR 22's
  /// expand-strided-metadata crashes (memref::SubViewOp::getDroppedDims) on
  /// some rank-reducing subviews, those where the dims it could drop have
  /// equal strides or a stride other than 1 (`[0, 0, 0, 0] [4, 1, 1, 16]
  /// [2, 1, 1, 1] : tensor<8x1x1x16xi32> to tensor<4x1x16xi32>`, found by
  /// gen_partition.py's random slices); subviews that keep their rank and
  /// reshapes of unit dims bufferize without it.
  void keepSliceRanks() {
    SmallVector<Operation *> slices;
    getOperation().walk([&](Operation *op) {
      if (isa<tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
        slices.push_back(op);
    });
    for (Operation *op : slices) {
      auto slice = cast<OffsetSizeAndStrideOpInterface>(op);
      auto extract = dyn_cast<tensor::ExtractSliceOp>(op);
      auto insert = dyn_cast<tensor::InsertSliceOp>(op);
      RankedTensorType reduced =
          extract ? extract.getType() : insert.getSourceType();
      ArrayRef<int64_t> sizes = slice.getStaticSizes();
      if (reduced.getRank() == static_cast<int64_t>(sizes.size()))
        continue;
      std::optional<SmallVector<ReassociationIndices>> groups =
          getUnitDimGroups(sizes, reduced.getShape());
      if (!groups)
        continue;
      RankedTensorType full = reduced.clone(sizes);
      OpBuilder b(op);
      if (extract) {
        Value whole = tensor::ExtractSliceOp::create(
            b, op->getLoc(), full, extract.getSource(),
            extract.getMixedOffsets(), extract.getMixedSizes(),
            extract.getMixedStrides());
        Value collapsed = tensor::CollapseShapeOp::create(
            b, op->getLoc(), reduced, whole, *groups);
        extract.replaceAllUsesWith(collapsed);
      } else {
        Value expanded = tensor::ExpandShapeOp::create(
            b, op->getLoc(), full, insert.getSource(), *groups);
        insert.getSourceMutable().assign(expanded);
      }
      if (extract)
        extract.erase();
    }
  }

  /// The groups of a collapse from `sizes` (a slice's static sizes) to
  /// `reduced`: each dim it drops (of size 1) joins the next kept dim's
  /// group, or the last group (none to rank 0). None when `reduced` is not
  /// `sizes` without some of their 1s, or a size is dynamic.
  static std::optional<SmallVector<ReassociationIndices>>
  getUnitDimGroups(ArrayRef<int64_t> sizes, ArrayRef<int64_t> reduced) {
    if (llvm::any_of(sizes, ShapedType::isDynamic))
      return std::nullopt;
    std::optional<llvm::SmallDenseSet<unsigned>> dropped =
        computeRankReductionMask(sizes, reduced);
    if (!dropped)
      return std::nullopt;
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices pending;
    for (int64_t d = 0, e = sizes.size(); d < e; ++d) {
      pending.push_back(d);
      if (!dropped->contains(d)) {
        groups.push_back(pending);
        pending.clear();
      }
    }
    if (!groups.empty())
      llvm::append_range(groups.back(), pending);
    return groups;
  }

  /// A collective of an i1 tensor moves it as i8: sign-extended, so that
  /// true is all ones (-1) and false 0, and truncated back after (the low
  /// bit). On those two values the bitwise reductions are ones every
  /// collective library has (NCCL has no bitwise reductions): "or" is the
  /// signed min, "and" the signed max, and "xor" the sum, whose low bit is
  /// the parity; the other kinds keep their meaning as they are.
  static mesh::ReductionKind onSignExtendedMasks(mesh::ReductionKind kind) {
    switch (kind) {
    case mesh::ReductionKind::Or:
      return mesh::ReductionKind::Min;
    case mesh::ReductionKind::And:
      return mesh::ReductionKind::Max;
    case mesh::ReductionKind::Xor:
      return mesh::ReductionKind::Sum;
    default:
      return kind;
    }
  }

  void widenMasks() {
    getOperation().walk([](mesh::CollectiveOpInterface op) {
      Operation *raw = op.getOperation();
      if (raw->getNumOperands() != 1 || raw->getNumResults() != 1)
        return;
      auto type = dyn_cast<RankedTensorType>(raw->getOperand(0).getType());
      auto resultType = dyn_cast<RankedTensorType>(raw->getResult(0).getType());
      if (!type || !resultType || !type.getElementType().isInteger(1))
        return;
      OpBuilder b(raw);
      Type i8 = b.getI8Type();
      Value wide = arith::ExtSIOp::create(b, raw->getLoc(), type.clone(i8),
                                          raw->getOperand(0));
      raw->setOperand(0, wide);
      raw->getResult(0).setType(resultType.clone(i8));
      if (auto reduce = dyn_cast<mesh::AllReduceOp>(raw))
        reduce.setReduction(onSignExtendedMasks(reduce.getReduction()));
      else if (auto scatter = dyn_cast<mesh::ReduceScatterOp>(raw))
        scatter.setReduction(onSignExtendedMasks(scatter.getReduction()));
      b.setInsertionPointAfter(raw);
      auto narrow = arith::TruncIOp::create(b, raw->getLoc(), resultType,
                                            raw->getResult(0));
      raw->getResult(0).replaceAllUsesExcept(narrow, narrow);
    });
  }
};
} // namespace

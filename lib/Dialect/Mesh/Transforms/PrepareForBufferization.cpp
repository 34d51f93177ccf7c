//===- PrepareForBufferization.cpp - ready a partitioned program ----------===//
//
// Refuses a program that still carries sharding annotations (it was not
// partitioned) and makes public functions' tensor arguments read-only for
// bufferization, so that compiled kernels do not overwrite their callers'
// buffers. In the compile pipelines, also refuses memref.dealloc, which
// their buffer deallocation cannot take. Collectives of i1 tensors move i8;
// aggregates of linalg ops (linalg.softmax) are decomposed; slices take
// their size-1 dims with stride 1 (MLIR 22 crashes on some rank-reducing
// subviews with other strides there).
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
    unitStrides();
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

  /// A slice's dim of static size 1 takes one element, whatever its stride:
  /// the stride becomes 1. A rank-reducing slice of size-1 dims with another
  /// stride (`[1, 3] [1, 1] [2, 1] : tensor<4x8xi32> to tensor<1xi32>`,
  /// which random slices and partitioned windows make) bufferizes to a
  /// subview whose result layout keeps the other dim than the tensor op
  /// drops, and MLIR 22's expand-strided-metadata crashes on it
  /// (memref::SubViewOp::getDroppedDims).
  void unitStrides() {
    getOperation().walk([](OffsetSizeAndStrideOpInterface op) {
      if (!isa<tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
        return;
      SmallVector<int64_t> strides(op.getStaticStrides());
      bool changed = false;
      for (auto [d, stride] : llvm::enumerate(strides)) {
        if (stride == 1 || ShapedType::isDynamic(stride) ||
            op.isDynamicSize(d) || op.getStaticSize(d) != 1)
          continue;
        stride = 1;
        changed = true;
      }
      if (!changed)
        return;
      if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op.getOperation()))
        extract.setStaticStrides(strides);
      else
        cast<tensor::InsertSliceOp>(op.getOperation())
            .setStaticStrides(strides);
    });
  }

  /// A collective of an i1 tensor moves it as i8: sign-extended, so that
  /// true is all ones and each reduction, done bitwise or on signed bytes,
  /// keeps its meaning on i1; truncated back after.
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
      b.setInsertionPointAfter(raw);
      auto narrow = arith::TruncIOp::create(b, raw->getLoc(), resultType,
                                            raw->getResult(0));
      raw->getResult(0).replaceAllUsesExcept(narrow, narrow);
    });
  }
};
} // namespace

//===- LoopBuffers.cpp - no allocation per loop iteration -----------------===//
//
// A time-stepping loop (a stencil, a training step) written on tensors
// produces a fresh tensor per iteration, and a pad, a halo or a collective's
// staging a few more; bufferized as they are, every iteration allocates and
// frees them, and a pad fills its whole buffer before the interior is copied
// over it. Four rewrites remove that, each semantics-preserving on its own:
//
//   mesh-inline-loop-calls    a call in a loop body is inlined, so the
//                             rewrites below see the step's buffers;
//   mesh-pad-in-place         a loop whose carried tensor is only padded
//                             carries the padded tensor instead (the step's
//                             result is written into the next padded
//                             block), and a pad fills its border only;
//   mesh-double-buffer-loops  a carried buffer allocated per iteration
//                             alternates between two buffers made before
//                             the loop;
//   mesh-hoist-loop-buffers   a buffer allocated and freed in the same
//                             iteration is allocated once, around the loop.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/BufferRoots.h"
#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHINLINELOOPCALLS
#define GEN_PASS_DEF_MESHPADINPLACE
#define GEN_PASS_DEF_MESHDOUBLEBUFFERLOOPS
#define GEN_PASS_DEF_MESHHOISTLOOPBUFFERS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

//===----------------------------------------------------------------------===//
// mesh-inline-loop-calls
//===----------------------------------------------------------------------===//

namespace {

struct MeshInlineLoopCallsPass
    : public mesh::impl::MeshInlineLoopCallsBase<MeshInlineLoopCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    InlinerInterface interface(&getContext());
    auto clone = [](OpBuilder &, Region *src, Block *inlineBlock,
                    Block *postBlock, IRMapping &mapper, bool) {
      src->cloneInto(inlineBlock->getParent(), postBlock->getIterator(),
                     mapper);
    };
    // A callee's own loops with calls in them are inlined in the next
    // round; the bounds (rounds, and the module growing past 4 times its
    // size) stop recursion through loops.
    auto countOps = [&] {
      int64_t ops = 0;
      module.walk([&](Operation *) { ++ops; });
      return ops;
    };
    const int64_t budget = 4 * countOps() + 10000;
    for (int round = 0; round < 16 && countOps() < budget; ++round) {
      SmallVector<func::CallOp> calls;
      module.walk([&](func::CallOp call) {
        if (call->getParentOfType<LoopLikeOpInterface>())
          calls.push_back(call);
      });
      bool inlined = false;
      for (func::CallOp call : calls) {
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock() ||
            callee == call->getParentOfType<func::FuncOp>())
          continue;
        if (failed(
                inlineCall(interface, clone, call, callee, &callee.getBody())))
          continue;
        call.erase();
        inlined = true;
      }
      if (!inlined)
        return;
    }
  }
};

//===----------------------------------------------------------------------===//
// mesh-pad-in-place
//===----------------------------------------------------------------------===//

/// The value a pad fills its border with, when it does not depend on the
/// position (defined outside the pad's body).
static Value getUniformPaddingValue(tensor::PadOp pad) {
  auto yield = cast<tensor::YieldOp>(pad.getBody()->getTerminator());
  Value value = yield.getValue();
  if (value.getParentRegion() == &pad.getRegion())
    return {};
  return value;
}

/// Whether `pad` has static pads and static shapes.
static bool isStaticPad(tensor::PadOp pad) {
  return pad.getLow().empty() && pad.getHigh().empty() &&
         pad.getSourceType().hasStaticShape() &&
         pad.getResultType().hasStaticShape();
}

/// A box of a static tensor: offsets and sizes per dim.
struct Box {
  SmallVector<int64_t> offsets, sizes;
};

/// The strips of a pad's border (`decomposePad` fills them): strip d has the
/// dims before d at their interior, dim d in its low or high border, the
/// dims after d whole, so the strips cover the border once.
static SmallVector<Box> borderStrips(ArrayRef<int64_t> low,
                                     ArrayRef<int64_t> high,
                                     ArrayRef<int64_t> inner,
                                     ArrayRef<int64_t> shape) {
  SmallVector<Box> strips;
  int64_t rank = shape.size();
  for (int64_t d = 0; d < rank; ++d) {
    for (bool isLow : {true, false}) {
      int64_t width = isLow ? low[d] : high[d];
      if (width == 0)
        continue;
      Box box;
      for (int64_t j = 0; j < rank; ++j) {
        if (j < d) {
          box.offsets.push_back(low[j]);
          box.sizes.push_back(inner[j]);
        } else if (j == d) {
          box.offsets.push_back(isLow ? 0 : low[j] + inner[j]);
          box.sizes.push_back(width);
        } else {
          box.offsets.push_back(0);
          box.sizes.push_back(shape[j]);
        }
      }
      if (!llvm::is_contained(box.sizes, 0))
        strips.push_back(std::move(box));
    }
  }
  return strips;
}

/// The part of `a` inside `b`, if any.
static std::optional<Box> intersect(const Box &a, const Box &b) {
  Box out;
  for (size_t j = 0; j < a.offsets.size(); ++j) {
    int64_t lo = std::max(a.offsets[j], b.offsets[j]);
    int64_t hi = std::min(a.offsets[j] + a.sizes[j], b.offsets[j] + b.sizes[j]);
    if (hi <= lo)
      return std::nullopt;
    out.offsets.push_back(lo);
    out.sizes.push_back(hi - lo);
  }
  return out;
}

/// The box a static, unit-stride slice op touches, if it is one.
static std::optional<Box> staticBox(OffsetSizeAndStrideOpInterface op) {
  if (!op.hasUnitStride() || !ShapedType::isStaticShape(op.getStaticSizes()) ||
      !ShapedType::isStaticShape(op.getStaticOffsets()) ||
      op.getStaticSizes().size() != op.getStaticOffsets().size())
    return std::nullopt;
  return Box{SmallVector<int64_t>(op.getStaticOffsets()),
             SmallVector<int64_t>(op.getStaticSizes())};
}

/// The parts of the border strips of the block `arg` carries that an
/// iteration reads before it overwrites them: the halo exchange of a
/// stencil writes each strip whole (insert_slice) before the step reads
/// it, so its fill is dead but for what the exchange's sends read on the
/// way (a row's two corner elements in the column strips). Follows `arg`
/// through the insert_slice ops that write into it: an extract_slice reads
/// its box, any other use reads everything still unwritten. A strip counts
/// as written once one insert covers it whole.
static SmallVector<Box> borderReadBeforeWritten(Value arg,
                                                SmallVector<Box> pending) {
  SmallVector<Box> read;
  auto readAll = [&] {
    read.append(pending.begin(), pending.end());
    pending.clear();
  };
  Value v = arg;
  while (v && !pending.empty()) {
    Value next;
    for (Operation *user : v.getUsers()) {
      auto extract = dyn_cast<tensor::ExtractSliceOp>(user);
      auto insert = dyn_cast<tensor::InsertSliceOp>(user);
      std::optional<Box> box =
          extract ? staticBox(extract)
          : insert && insert.getDest() == v && insert.getSource() != v
              ? staticBox(insert)
              : std::nullopt;
      if (!box || (insert && next)) {
        readAll();
        return read;
      }
      if (extract) {
        for (const Box &strip : pending)
          if (std::optional<Box> part = intersect(*box, strip))
            read.push_back(*part);
        continue;
      }
      next = insert.getResult();
      llvm::erase_if(pending, [&](const Box &strip) {
        std::optional<Box> part = intersect(strip, *box);
        return part && part->sizes == strip.sizes;
      });
    }
    v = next;
  }
  return read;
}

/// The attribute on a pad that carryPadded made, listing the parts of its
/// border to fill (flattened offsets then sizes per box); without it the
/// whole border is filled.
static constexpr const char kFillBoxes[] = "mesh_fill_boxes";

/// A loop whose iteration argument is only padded (the step reads the padded
/// block) carries the padded tensor: the initial value is padded once before
/// the loop, each iteration yields the pad of its result (which the pad
/// rewrite below turns into the result written into the interior of a
/// block whose border is filled), and the loop's result is the interior.
static bool carryPadded(scf::ForOp loop, RewriterBase &rewriter) {
  Block *body = loop.getBody();
  for (auto [index, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
    if (!arg.hasOneUse())
      continue;
    auto pad = dyn_cast<tensor::PadOp>(*arg.getUsers().begin());
    if (!pad || pad->getBlock() != body || !isStaticPad(pad) ||
        pad.getResultType() == pad.getSourceType())
      continue;
    Value padding = getUniformPaddingValue(pad);
    if (!padding || !loop.isDefinedOutsideOfLoop(padding))
      continue;
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    if (yield.getOperand(index) == arg)
      continue;
    auto paddedType = pad.getResultType();
    SmallVector<int64_t> low(pad.getStaticLow());
    Location loc = pad.getLoc();

    // The initial value, padded before the loop.
    rewriter.setInsertionPoint(loop);
    IRMapping initMap;
    initMap.map(arg, loop.getInitArgs()[index]);
    Value init = rewriter.clone(*pad, initMap)->getResult(0);

    // Each iteration yields its result padded.
    rewriter.setInsertionPoint(yield);
    IRMapping yieldMap;
    yieldMap.map(arg, yield.getOperand(index));
    Value next = rewriter.clone(*pad, yieldMap)->getResult(0);
    rewriter.modifyOpInPlace(
        yield, [&, index = index] { yield->setOperand(index, next); });

    // The step reads the carried block.
    rewriter.replaceAllUsesWith(pad.getResult(), arg);
    rewriter.eraseOp(pad);
    arg.setType(paddedType);

    // Each iteration's pad fills only what the next one reads of the border
    // before overwriting it (the initial pad, before the loop, fills all).
    auto nextPad = next.getDefiningOp<tensor::PadOp>();
    SmallVector<Box> fill = borderReadBeforeWritten(
        arg, borderStrips(nextPad.getStaticLow(), nextPad.getStaticHigh(),
                          nextPad.getSourceType().getShape(),
                          paddedType.getShape()));
    SmallVector<Attribute> boxes;
    for (const Box &box : fill) {
      SmallVector<int64_t> flat(box.offsets);
      flat.append(box.sizes.begin(), box.sizes.end());
      boxes.push_back(rewriter.getDenseI64ArrayAttr(flat));
    }
    nextPad->setAttr(kFillBoxes, rewriter.getArrayAttr(boxes));
    rewriter.modifyOpInPlace(loop, [&, index = index] {
      loop.getInitArgsMutable()[index].set(init);
    });

    // Users after the loop see the interior.
    Value result = loop.getResult(index);
    auto unpadded = cast<RankedTensorType>(result.getType());
    result.setType(paddedType);
    rewriter.setInsertionPointAfter(loop);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (auto [lowPad, size] : llvm::zip(low, unpadded.getShape())) {
      offsets.push_back(rewriter.getIndexAttr(lowPad));
      sizes.push_back(rewriter.getIndexAttr(size));
      strides.push_back(rewriter.getIndexAttr(1));
    }
    auto interior = tensor::ExtractSliceOp::create(
        rewriter, loc, unpadded, result, offsets, sizes, strides);
    rewriter.replaceAllUsesExcept(result, interior.getResult(), interior);
    return true;
  }
  return false;
}

/// A pad with a uniform value becomes a fill of each border strip and the
/// source inserted into the interior: nothing is written twice, and a
/// producer of the source can write straight into the interior
/// (eliminate-empty-tensors).
static void decomposePad(tensor::PadOp pad, RewriterBase &rewriter) {
  Value padding = getUniformPaddingValue(pad);
  Location loc = pad.getLoc();
  rewriter.setInsertionPoint(pad);
  RankedTensorType type = pad.getResultType();
  ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
  ArrayRef<int64_t> inner = pad.getSourceType().getShape();
  Value block = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                        type.getElementType());
  int64_t rank = type.getRank();
  // The border strips, or the parts of them carryPadded found read.
  SmallVector<Box> boxes;
  if (auto listed = pad->getAttrOfType<ArrayAttr>(kFillBoxes)) {
    for (Attribute a : listed) {
      ArrayRef<int64_t> flat = cast<DenseI64ArrayAttr>(a).asArrayRef();
      boxes.push_back(Box{SmallVector<int64_t>(flat.take_front(rank)),
                          SmallVector<int64_t>(flat.drop_front(rank))});
    }
  } else {
    boxes = borderStrips(low, high, inner, type.getShape());
  }
  for (const Box &box : boxes) {
    SmallVector<OpFoldResult> o = getAsIndexOpFoldResult(rewriter.getContext(),
                                                         box.offsets),
                              s = getAsIndexOpFoldResult(rewriter.getContext(),
                                                         box.sizes),
                              one(rank, rewriter.getIndexAttr(1));
    Value strip =
        tensor::ExtractSliceOp::create(rewriter, loc, block, o, s, one);
    Value filled =
        linalg::FillOp::create(rewriter, loc, padding, strip).getResult(0);
    block =
        tensor::InsertSliceOp::create(rewriter, loc, filled, block, o, s, one);
  }
  SmallVector<OpFoldResult> o = getAsIndexOpFoldResult(rewriter.getContext(),
                                                       low),
                            s = getAsIndexOpFoldResult(rewriter.getContext(),
                                                       inner),
                            one(rank, rewriter.getIndexAttr(1));
  rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(pad, pad.getSource(),
                                                     block, o, s, one);
}

struct MeshPadInPlacePass
    : public mesh::impl::MeshPadInPlaceBase<MeshPadInPlacePass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      while (carryPadded(loop, rewriter)) {
      }
    SmallVector<tensor::PadOp> pads;
    getOperation().walk([&](tensor::PadOp pad) {
      if (isStaticPad(pad) && getUniformPaddingValue(pad))
        pads.push_back(pad);
    });
    for (tensor::PadOp pad : pads)
      decomposePad(pad, rewriter);
  }
};

//===----------------------------------------------------------------------===//
// Buffer escape analysis shared by the two buffer rewrites.
//===----------------------------------------------------------------------===//

/// Whether `result` is a fresh allocation of its op (a collective's result,
/// memref.alloc): it aliases none of the op's operands.
static bool isFreshAllocation(OpResult result) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(result.getOwner());
  return effects &&
         effects.getEffectOnValue<MemoryEffects::Allocate>(result).has_value();
}

/// Whether `user` may pass its buffer operand on in a way the alias walks
/// below cannot follow: a terminator or a call hands it over, a free, a raw
/// pointer or a tensor view, or a result that may alias it (not a view, not
/// a fresh allocation such as a collective's result).
static bool hidesAlias(Operation *user) {
  if (isa<RegionBranchTerminatorOpInterface, CallOpInterface, memref::DeallocOp,
          memref::ExtractAlignedPointerAsIndexOp,
          memref::ExtractStridedMetadataOp, bufferization::ToTensorOp>(user))
    return true;
  return llvm::any_of(user->getResults(), [](OpResult result) {
    return isa<BaseMemRefType>(result.getType()) && !isFreshAllocation(result);
  });
}

/// Walks the uses of `buffer` and of its views, transitively. `decide` rules
/// on a use first (true: allowed, false: the walk fails, nothing: the
/// default); by default a view is followed, a use that hides an alias fails
/// and any other use (a read or a write) is allowed. Regions of a user (a
/// linalg op's body, a nested loop) see the buffer only through its
/// operands, which the walk covers.
static bool allAliasUsesAllowed(
    Value buffer,
    function_ref<std::optional<bool>(Value, OpOperand &)> decide) {
  SmallVector<Value> worklist{buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      if (std::optional<bool> allowed = decide(value, use)) {
        if (!*allowed)
          return false;
        continue;
      }
      Operation *user = use.getOwner();
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == value) {
          worklist.push_back(view->getResult(0));
          continue;
        }
      }
      if (hidesAlias(user))
        return false;
    }
  }
  return true;
}

/// Whether every alias of `buffer` is used inside `loop`'s body only, and
/// reaches the loop's yield only as `buffer` itself at position `yieldIndex`
/// (or not at all when it is -1). Then nothing refers to the buffer once the
/// iteration is over, except through that yield.
static bool staysInIteration(Value buffer, scf::ForOp loop,
                             int64_t yieldIndex) {
  Operation *yield = loop.getBody()->getTerminator();
  return allAliasUsesAllowed(
      buffer, [&](Value value, OpOperand &use) -> std::optional<bool> {
        Operation *user = use.getOwner();
        if (!loop->isProperAncestor(user))
          return false;
        if (user == yield)
          return value == buffer &&
                 static_cast<int64_t>(use.getOperandNumber()) == yieldIndex;
        return std::nullopt;
      });
}

//===----------------------------------------------------------------------===//
// mesh-double-buffer-loops
//===----------------------------------------------------------------------===//

/// A static memref.alloc (no sizes, no symbols) with an identity layout.
static memref::AllocOp getStaticAlloc(Value value) {
  auto alloc = value.getDefiningOp<memref::AllocOp>();
  if (!alloc || !alloc.getDynamicSizes().empty() ||
      !alloc.getSymbolOperands().empty() ||
      !alloc.getType().getLayout().isIdentity())
    return {};
  return alloc;
}

/// Whether the buffer of `init` (a loop's initial value) is an allocation
/// of the function that nothing uses after the loop: it is the loop's
/// initial value only through `init`, and every other use of it and of its
/// views comes before the loop and makes no alias the walk cannot follow.
static bool isDeadAfter(OpOperand &init, scf::ForOp loop) {
  Value buffer = init.get();
  if (!mesh::isAllocation(buffer) ||
      buffer.getDefiningOp()->getBlock() != loop->getBlock())
    return false;
  return allAliasUsesAllowed(
      buffer, [&](Value, OpOperand &use) -> std::optional<bool> {
        if (&use == &init)
          return true;
        Operation *ancestor =
            loop->getBlock()->findAncestorOpInBlock(*use.getOwner());
        if (!ancestor || !ancestor->isBeforeInBlock(loop))
          return false;
        return std::nullopt;
      });
}

static scf::ForOp doubleBuffer(scf::ForOp loop, RewriterBase &rewriter) {
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  for (auto [index, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
    memref::AllocOp alloc = getStaticAlloc(yield.getOperand(index));
    if (!alloc || alloc->getBlock() != body || arg.getType() != alloc.getType())
      continue;
    // The new buffer leaves the iteration only as the carried value, and the
    // carried buffer is dead once the iteration ends: the next iteration may
    // write its result over the previous one's argument.
    if (!staysInIteration(alloc, loop, index) ||
        !staysInIteration(arg, loop, -1))
      continue;

    // The buffer of the loop's initial value is the second one when the
    // function allocated it and nothing uses it after the loop (a padded
    // block made for the loop); else the initial value is copied, once,
    // into a second buffer. Each iteration then writes into the spare and
    // hands over the buffer it read as the next spare.
    rewriter.setInsertionPoint(loop);
    OpOperand &initOperand = loop.getInitArgsMutable()[index];
    if (!isDeadAfter(initOperand, loop)) {
      Value copy = rewriter.clone(*alloc)->getResult(0);
      memref::CopyOp::create(rewriter, loop.getLoc(), initOperand.get(), copy);
      rewriter.modifyOpInPlace(loop, [&] { initOperand.set(copy); });
    }
    Value spareBuffer = rewriter.clone(*alloc)->getResult(0);
    Value carried = arg;
    auto newLoop = loop.replaceWithAdditionalYields(
        rewriter, ValueRange{spareBuffer},
        /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
          return SmallVector<Value>{carried};
        });
    if (failed(newLoop))
      return {};
    auto forOp = cast<scf::ForOp>(newLoop->getOperation());
    BlockArgument spare = forOp.getRegionIterArgs().back();
    rewriter.replaceOp(alloc, spare);
    return forOp;
  }
  return {};
}

struct MeshDoubleBufferLoopsPass
    : public mesh::impl::MeshDoubleBufferLoopsBase<MeshDoubleBufferLoopsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<scf::ForOp> loops;
    // Inner loops first: their buffers then sit in the outer loop's body.
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    // Each rewrite makes a new loop, which may carry more such buffers.
    for (scf::ForOp loop : loops)
      while (loop)
        loop = doubleBuffer(loop, rewriter);
  }
};

//===----------------------------------------------------------------------===//
// mesh-hoist-loop-buffers
//===----------------------------------------------------------------------===//

static void hoistLoopBuffers(scf::ForOp loop) {
  Block *body = loop.getBody();
  SmallVector<std::pair<memref::AllocOp, memref::DeallocOp>> pairs;
  for (auto alloc : body->getOps<memref::AllocOp>()) {
    // Its sizes must be known before the loop.
    if (!llvm::all_of(alloc->getOperands(), [&](Value size) {
          return loop.isDefinedOutsideOfLoop(size);
        }))
      continue;
    // Freed in the iteration that allocated it, on every path (the same
    // block): nothing uses it after that, and its contents were undefined at
    // each allocation, so one buffer serves every iteration.
    for (Operation *user : alloc->getUsers())
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user))
        if (dealloc->getBlock() == body)
          pairs.push_back({alloc, dealloc});
  }
  for (auto [alloc, dealloc] : pairs) {
    alloc->moveBefore(loop);
    dealloc->moveAfter(loop);
  }
}

struct MeshHoistLoopBuffersPass
    : public mesh::impl::MeshHoistLoopBuffersBase<MeshHoistLoopBuffersPass> {
  void runOnOperation() override {
    // Post-order: an inner loop's buffers land in the outer loop's body,
    // which comes after in the list, and go out of it too.
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      hoistLoopBuffers(loop);
  }
};

} // namespace

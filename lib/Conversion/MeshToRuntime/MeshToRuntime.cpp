//===- MeshToRuntime.cpp - mesh collectives to mesh runtime calls ---------===//
//
// Lowers memref collectives, barriers and axis queries to calls into the C ABI
// of the mesh runtime (runtime/include/meshrt/meshrt.h), one conversion
// pattern per op. The point of the design: communicators are looked up once.
// Every mesh is declared and every distinct (mesh, ordered axes) gets its
// communicator in a global, filled by one start-up function (RuntimeModule);
// a collective loads the handle and calls the runtime. Upstream's MPI
// lowering splits a communicator at every call instead.
//
// The runtime works on contiguous buffers with blocks along the leading
// dimension; collectives on other dimensions pack and unpack blocks with
// linalg.copy around the call. With `on-stream`, the same patterns call the
// stream-ordered twin of each collective on the runtime's shared stream.
//
// Meshes over part of the world (`devices`) are declared with their world
// ranks; start-up stores whether this process is in each one, and the peer
// rank of each pair of meshes that mesh.send/mesh.recv connect. Every op on
// such a mesh runs under an scf.if on membership, so a process outside it
// never calls the runtime for it: collectives give zeros there, axis_index
// 0, recv zeros, and send and barrier do nothing.
//
//===----------------------------------------------------------------------===//

#include "RuntimeModule.h"

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_CONVERTMESHTORUNTIME
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

// The reduction kinds are numbered as meshrt_reduce_op.
static_assert(int(ReductionKind::Sum) == MESHRT_SUM &&
                  int(ReductionKind::Prod) == MESHRT_PROD &&
                  int(ReductionKind::Min) == MESHRT_MIN &&
                  int(ReductionKind::Max) == MESHRT_MAX &&
                  int(ReductionKind::Avg) == MESHRT_AVG &&
                  int(ReductionKind::And) == MESHRT_BAND &&
                  int(ReductionKind::Or) == MESHRT_BOR &&
                  int(ReductionKind::Xor) == MESHRT_BXOR,
              "ReductionKind must match meshrt_reduce_op");

/// Fails, after an error on the op, when the runtime cannot take the element
/// type of the collective `op` or the layout of its result.
LogicalResult checkSupported(CollectiveOpInterface op) {
  Operation *raw = op.getOperation();
  auto outType = cast<MemRefType>(raw->getResult(0).getType());
  Type elementType = outType.getElementType();
  if (!getRuntimeDtype(elementType))
    return raw->emitOpError()
           << "has element type " << elementType
           << ", which the runtime does not support; supported: f16, bf16, "
              "f32, f64, i8, ui8, i32, i64, index";
  if (!outType.getLayout().isIdentity())
    return raw->emitOpError() << "result " << outType
                              << " must have an identity layout to be lowered";
  return success();
}

/// What lowering one op needs: the rewriter, placed before the op, and
/// helpers for values, buffers and runtime calls.
class OpLowering {
public:
  OpLowering(RuntimeModule &rt, ConversionPatternRewriter &b, Operation *op)
      : rt(rt), b(b), op(op), loc(op->getLoc()) {}

  RuntimeModule &rt;
  ConversionPatternRewriter &b;
  Operation *op;
  Location loc;
  /// Memory space of the buffers this op allocates (its input's).
  Attribute memorySpace;

  // ---- Values and buffers ------------------------------------------------

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  Value toI64(Value indexValue) {
    return arith::IndexCastOp::create(b, loc, rt.i64Type, indexValue);
  }

  /// The aligned base pointer of an identity-layout buffer.
  Value pointer(Value memref) {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    return LLVM::IntToPtrOp::create(b, loc, rt.ptrType, toI64(base));
  }

  /// The sizes of `memref`, static ones as attributes.
  SmallVector<OpFoldResult> sizes(Value memref) {
    return memref::getMixedSizes(b, loc, memref);
  }

  /// a * b, or a / b, folded when both are constants.
  OpFoldResult combine(OpFoldResult lhs, OpFoldResult rhs, bool multiply) {
    std::optional<int64_t> l = getConstantIntValue(lhs);
    std::optional<int64_t> r = getConstantIntValue(rhs);
    if (l && r)
      return b.getIndexAttr(multiply ? *l * *r : *l / *r);
    Value lv = getValueOrCreateConstantIndexOp(b, loc, lhs);
    Value rv = getValueOrCreateConstantIndexOp(b, loc, rhs);
    if (multiply)
      return arith::MulIOp::create(b, loc, lv, rv).getResult();
    // Only known at run time: check that the dim divides by the group.
    Value rem = arith::RemUIOp::create(b, loc, lv, rv);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value divides =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem, zero);
    cf::AssertOp::create(b, loc, divides,
                         (op->getName().getStringRef() +
                          ": a dim does not divide by the group size")
                             .str());
    return arith::DivUIOp::create(b, loc, lv, rv).getResult();
  }

  /// The product of `shape`, as an i64 value.
  Value product(ArrayRef<OpFoldResult> shape) {
    OpFoldResult n = b.getIndexAttr(1);
    for (OpFoldResult s : shape)
      n = combine(n, s, /*multiply=*/true);
    return toI64(getValueOrCreateConstantIndexOp(b, loc, n));
  }

  Value numElements(Value memref) { return product(sizes(memref)); }

  /// A new identity-layout buffer of `sizes`.
  Value alloc(Type elementType, ArrayRef<OpFoldResult> shape) {
    SmallVector<int64_t> staticShape;
    SmallVector<Value> dynamic;
    dispatchIndexOpFoldResults(shape, dynamic, staticShape);
    auto type = MemRefType::get(staticShape, elementType,
                                MemRefLayoutAttrInterface(), memorySpace);
    return memref::AllocOp::create(b, loc, type, dynamic);
  }

  /// `memref` itself if its layout is the identity, else a contiguous copy.
  Value contiguous(Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    if (type.getLayout().isIdentity())
      return memref;
    Value copy = alloc(type.getElementType(), sizes(memref));
    linalg::CopyOp::create(b, loc, ValueRange{memref}, ValueRange{copy});
    return copy;
  }

  /// True when every dimension before `dim` has static size 1, so blocks
  /// along `dim` are contiguous and in order.
  static bool blocksAreContiguous(MemRefType type, int64_t dim) {
    for (int64_t d = 0; d < dim; ++d)
      if (type.getDimSize(d) != 1)
        return false;
    return true;
  }

  /// `shape` with `dim` multiplied or divided by `factor` (an index value).
  SmallVector<OpFoldResult> scaleDim(ArrayRef<OpFoldResult> shape, int64_t dim,
                                     Value factor, bool multiply) {
    SmallVector<OpFoldResult> out(shape.begin(), shape.end());
    out[dim] = combine(shape[dim], getAsOpFoldResult(factor), multiply);
    return out;
  }

  /// A view of `memref` with `blockShape` starting at block `g` along `dim`.
  Value blockView(Value memref, ArrayRef<OpFoldResult> blockShape, int64_t dim,
                  Value g) {
    unsigned rank = blockShape.size();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    offsets[dim] = combine(getAsOpFoldResult(g), blockShape[dim], true);
    return memref::SubViewOp::create(b, loc, memref, offsets, blockShape,
                                     strides);
  }

  /// A view of slot `g` of a [G, blockShape] staging buffer, rank-reduced to
  /// blockShape.
  Value stagingView(Value staging, ArrayRef<OpFoldResult> blockShape, Value g) {
    unsigned rank = blockShape.size() + 1;
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
    sizes.append(blockShape.begin(), blockShape.end());
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    offsets[0] = g;
    SmallVector<int64_t> staticBlock;
    SmallVector<Value> dynamicBlock;
    dispatchIndexOpFoldResults(blockShape, dynamicBlock, staticBlock);
    auto viewType = memref::SubViewOp::inferRankReducedResultType(
        staticBlock, cast<MemRefType>(staging.getType()), offsets, sizes,
        strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType),
                                     staging, offsets, sizes, strides);
  }

  /// A [G, blockShape] staging buffer.
  Value allocStaging(Type elementType, ArrayRef<OpFoldResult> blockShape,
                     Value groupSize) {
    SmallVector<OpFoldResult> shape{getAsOpFoldResult(groupSize)};
    shape.append(blockShape.begin(), blockShape.end());
    return alloc(elementType, shape);
  }

  /// For g in [0, G): copies block g of `memref` along `dim` to slot g of
  /// `staging` (pack = true) or back (pack = false).
  void copyBlocks(Value memref, Value staging,
                  ArrayRef<OpFoldResult> blockShape, int64_t dim,
                  Value groupSize, bool pack) {
    auto loop = scf::ForOp::create(b, loc, index(0), groupSize, index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value g = loop.getInductionVar();
    Value block = blockView(memref, blockShape, dim, g);
    Value slot = stagingView(staging, blockShape, g);
    if (pack)
      linalg::CopyOp::create(b, loc, ValueRange{block}, ValueRange{slot});
    else
      linalg::CopyOp::create(b, loc, ValueRange{slot}, ValueRange{block});
  }

  /// The buffer a collective sends from (`pack`) or receives into, as G
  /// blocks of `blockShape` along `dim` of `buffer` (of type `type`):
  /// `buffer` itself when the blocks are contiguous, else a staging buffer,
  /// also set in `staging`, that `buffer`'s blocks are packed into before
  /// a send, or that unpackReceived copies out after a receive.
  Value blocksBuffer(Value buffer, MemRefType type,
                     ArrayRef<OpFoldResult> blockShape, int64_t dim,
                     Value groupSize, Value &staging, bool pack) {
    if (blocksAreContiguous(type, dim))
      return buffer;
    staging = allocStaging(type.getElementType(), blockShape, groupSize);
    if (pack)
      copyBlocks(buffer, staging, blockShape, dim, groupSize, /*pack=*/true);
    return staging;
  }

  /// After the call: the blocks of a receive `staging` buffer (if any) to
  /// `result`, and the staging buffer freed.
  void unpackReceived(Value result, Value staging,
                      ArrayRef<OpFoldResult> blockShape, int64_t dim,
                      Value groupSize) {
    if (!staging)
      return;
    copyBlocks(result, staging, blockShape, dim, groupSize, /*pack=*/false);
    memref::DeallocOp::create(b, loc, staging);
  }

  // ---- Runtime calls -----------------------------------------------------

  /// Calls `entry` with `args`, a braced list of as many values as meshrt.h
  /// declares parameters.
  template <RuntimeEntry entry, size_t numArgs>
  void call(const Value (&args)[numArgs]) {
    checkRuntimeCall<entry, numArgs>();
    emitCall(entry, ArrayRef<Value>(args));
  }

  /// Calls the collective `entry`; with `on-stream`, its stream-ordered twin
  /// with the same arguments plus the shared stream.
  template <RuntimeEntry entry, size_t numArgs>
  void callCollective(const Value (&args)[numArgs]) {
    checkRuntimeCall<entry, numArgs>();
    static_assert(getStreamOrderedTwin(entry).has_value(),
                  "a collective has a stream-ordered twin");
    if (!rt.onStream) {
      emitCall(entry, ArrayRef<Value>(args));
      return;
    }
    SmallVector<Value, 8> withStream(std::begin(args), std::end(args));
    withStream.push_back(sharedStream());
    emitCall(*getStreamOrderedTwin(entry), withStream);
  }

  /// Calls `entry(args..., &out)` and returns `out` as an index.
  template <RuntimeEntry entry, size_t numArgs>
  Value callForIndex(const Value (&args)[numArgs]) {
    checkRuntimeCall<entry, numArgs + 1>();
    SmallVector<Value, 4> withSlot(std::begin(args), std::end(args));
    Value slot = entryAlloca();
    withSlot.push_back(slot);
    emitCall(entry, withSlot);
    Value v = LLVM::LoadOp::create(b, loc, rt.i64Type, slot);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }

  Value dtype(Type elementType) {
    return rt.constI32(b, loc, *getRuntimeDtype(elementType));
  }

private:
  /// Calls `entry` and checks its status; a failure names the op.
  void emitCall(RuntimeEntry entry, ValueRange args) {
    rt.functions.callChecked(b, loc, entry, args,
                             getRuntimeEntryName(entry) + " for '" +
                                 op->getName().getStringRef() + "'");
  }

  /// The runtime's shared GPU stream, fetched with meshrt_gpu_stream once,
  /// at the entry of the enclosing function (the stream never changes).
  Value sharedStream() {
    Operation *fn = op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
    Value &stream = rt.streams[fn];
    if (stream)
      return stream;
    Value slot = entryAlloca();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(slot);
    rt.functions.callChecked<RuntimeEntry::meshrt_gpu_stream>(b, loc, {slot});
    stream = LLVM::LoadOp::create(b, loc, rt.ptrType, slot);
    return stream;
  }

  /// An i64 stack slot in the entry block of the enclosing function, so that
  /// loops do not grow the stack.
  Value entryAlloca() {
    Operation *fn = op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
    Block &entry = fn->getRegion(0).front();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&entry);
    Value one =
        LLVM::ConstantOp::create(b, loc, rt.i64Type, b.getI64IntegerAttr(1));
    return LLVM::AllocaOp::create(b, loc, rt.ptrType, rt.i64Type, one);
  }
};

/// Lowers one collective in place. What every collective shares lives here:
/// the group's communicator, a contiguous input, and replacing the op; the
/// per-kind functions below allocate the result and marshal the arguments
/// of the runtime call.
class CollectiveLowering : public OpLowering {
public:
  CollectiveLowering(RuntimeModule &rt, ConversionPatternRewriter &b,
                     CollectiveOpInterface coll, Value input)
      : OpLowering(rt, b, coll.getOperation()),
        mesh(rt.lookupMesh(op, coll.getMeshAttr())), axes(coll.getAxisNames()),
        input(input), inType(cast<MemRefType>(input.getType())),
        outType(cast<MemRefType>(op->getResult(0).getType())),
        elementType(inType.getElementType()) {}

  /// Loads the group's communicator and makes the input contiguous; sets
  /// `comm`, `in` and `inShape`.
  void prepareOperands() {
    commGlobal = rt.getCommGlobal(mesh, axes);
    comm = rt.loadHandle(b, loc, commGlobal);
    memorySpace = inType.getMemorySpace();
    in = contiguous(input);
    inShape = sizes(in);
  }

  /// The number of members of the group, as an index value. On `?` axes,
  /// the size that the op's static types assume (`dim` of the larger type
  /// over `dim` of the smaller; start-up checks it against the mesh the run
  /// resolves), else the communicator's size at run time.
  /// A negative `dim` assumes nothing.
  Value groupSize(MemRefType larger, MemRefType smaller, int64_t dim) {
    int64_t staticGroup = mesh.getGroupSize(axes);
    if (!ShapedType::isDynamic(staticGroup))
      return index(staticGroup);
    int64_t big = dim < 0 ? ShapedType::kDynamic : larger.getDimSize(dim);
    int64_t small = dim < 0 ? ShapedType::kDynamic : smaller.getDimSize(dim);
    if (!ShapedType::isDynamic(big) && !ShapedType::isDynamic(small) &&
        small > 0 && big % small == 0) {
      std::string what;
      llvm::raw_string_ostream os(what);
      os << "'" << op->getName() << "'";
      if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
        os << " at " << fileLoc.getFilename().getValue() << ":"
           << fileLoc.getLine() << ":" << fileLoc.getColumn();
      rt.requireGroupSize(commGlobal, big / small, what);
      return index(big / small);
    }
    return callForIndex<RuntimeEntry::meshrt_comm_size>({comm});
  }

  /// The runtime's code of reduction `kind`, as an i32 value.
  Value reduction(ReductionKind kind) {
    return rt.constI32(b, loc, static_cast<int32_t>(kind));
  }

  /// Frees the contiguous copy of the input, if any, and returns `result`
  /// cast to the op's result type.
  Value finish(Value result) {
    if (in != input)
      memref::DeallocOp::create(b, loc, in);
    return castToResult(result);
  }

  /// `result` cast to the op's result type.
  Value castToResult(Value result) {
    if (result.getType() != outType)
      result = memref::CastOp::create(b, loc, outType, result);
    return result;
  }

  MeshOp mesh;
  /// The group's axes, in group order.
  SmallVector<StringRef> axes;
  /// The op's input buffer, and the types of its input and result.
  Value input;
  MemRefType inType, outType;
  Type elementType;

  /// The global of the group's communicator, and its handle.
  LLVM::GlobalOp commGlobal;
  Value comm;
  /// `input`, or a contiguous copy of it.
  Value in;
  /// The sizes of `in`.
  SmallVector<OpFoldResult> inShape;
};

//===----------------------------------------------------------------------===//
// Processes outside a mesh
//===----------------------------------------------------------------------===//

/// Fills `buffer` with zeros.
void fillZero(OpBuilder &b, Location loc, Value buffer) {
  Type elementType = cast<MemRefType>(buffer.getType()).getElementType();
  Value zero = arith::ConstantOp::create(
      b, loc, cast<TypedAttr>(b.getZeroAttr(elementType)));
  linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{buffer});
}

/// The shape of the result of collective `op` with input sizes `inShape` in
/// groups of `groupSize` (static: a mesh with devices has static sizes).
SmallVector<OpFoldResult> resultShape(OpLowering &l, Operation *op,
                                      ArrayRef<OpFoldResult> inShape,
                                      int64_t groupSize) {
  Value g = l.index(groupSize);
  auto scale = [&](ArrayRef<OpFoldResult> shape, int64_t dim, bool multiply) {
    return l.scaleDim(shape, dim, g, multiply);
  };
  if (auto gather = dyn_cast<AllGatherOp>(op))
    return scale(inShape, gather.getGatherDim(), true);
  if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    return scale(inShape, scatter.getScatterDim(), false);
  if (auto slice = dyn_cast<AllSliceOp>(op))
    return scale(inShape, slice.getSliceDim(), false);
  if (auto allToAll = dyn_cast<AllToAllOp>(op))
    return scale(scale(inShape, allToAll.getSplitDim(), false),
                 allToAll.getConcatDim(), true);
  return SmallVector<OpFoldResult>(inShape);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// all_reduce: from the input straight into a new buffer of its shape, or
/// into the input itself when `in_place`.
Value lowerAllReduce(CollectiveLowering &l, AllReduceOp op) {
  Value result = op.getInPlace() ? l.in : l.alloc(l.elementType, l.inShape);
  l.callCollective<RuntimeEntry::meshrt_all_reduce>(
      {l.comm, l.pointer(l.in), l.pointer(result), l.numElements(l.in),
       l.dtype(l.elementType), l.reduction(op.getReduction())});
  return result;
}

/// The data elements of a padded collective: `valid` rows of `dim` of
/// `whole` (static, the dims before `dim` of size 1), so a prefix of the
/// blocks.
Value validElements(CollectiveLowering &l, int64_t valid, MemRefType whole,
                    int64_t dim) {
  int64_t row = 1;
  for (int64_t d = dim + 1; d < whole.getRank(); ++d)
    row *= whole.getDimSize(d);
  return arith::ConstantIntOp::create(l.b, l.loc, l.rt.i64Type, valid * row);
}

/// all_gather: the runtime concatenates along the leading dim; on another
/// dim the blocks land in a staging buffer and are unpacked. With `valid`,
/// only the data is gathered (meshrt_all_gather_padded).
Value lowerAllGather(CollectiveLowering &l, AllGatherOp op) {
  int64_t dim = op.getGatherDim();
  Value g = l.groupSize(l.outType, l.inType, dim);
  Value result =
      l.alloc(l.elementType, l.scaleDim(l.inShape, dim, g, /*multiply=*/true));
  Value staging;
  Value recv = l.blocksBuffer(result, l.inType, l.inShape, dim, g, staging,
                              /*pack=*/false);
  if (std::optional<int64_t> valid = op.getValid())
    l.callCollective<RuntimeEntry::meshrt_all_gather_padded>(
        {l.comm, l.pointer(l.in), l.pointer(recv), l.numElements(l.in),
         validElements(l, *valid, l.outType, dim), l.dtype(l.elementType)});
  else
    l.callCollective<RuntimeEntry::meshrt_all_gather>(
        {l.comm, l.pointer(l.in), l.pointer(recv), l.numElements(l.in),
         l.dtype(l.elementType)});
  l.unpackReceived(result, staging, l.inShape, dim, g);
  return result;
}

/// reduce_scatter: the runtime scatters blocks along the leading dim; on
/// another dim the blocks are packed into a staging buffer first.
Value lowerReduceScatter(CollectiveLowering &l, ReduceScatterOp op) {
  int64_t dim = op.getScatterDim();
  Value g = l.groupSize(l.inType, l.outType, dim);
  SmallVector<OpFoldResult> blockShape =
      l.scaleDim(l.inShape, dim, g, /*multiply=*/false);
  Value result = l.alloc(l.elementType, blockShape);
  Value staging;
  Value send = l.blocksBuffer(l.in, l.inType, blockShape, dim, g, staging,
                              /*pack=*/true);
  if (std::optional<int64_t> valid = op.getValid())
    l.callCollective<RuntimeEntry::meshrt_reduce_scatter_padded>(
        {l.comm, l.pointer(send), l.pointer(result), l.numElements(result),
         validElements(l, *valid, l.inType, dim), l.dtype(l.elementType),
         l.reduction(op.getReduction())});
  else
    l.callCollective<RuntimeEntry::meshrt_reduce_scatter>(
        {l.comm, l.pointer(send), l.pointer(result), l.numElements(result),
         l.dtype(l.elementType), l.reduction(op.getReduction())});
  if (staging)
    memref::DeallocOp::create(l.b, l.loc, staging);
  return result;
}

/// all_to_all: blocks along split_dim are sent, and blocks received land
/// along concat_dim, each through a staging buffer unless it is the leading
/// dim.
Value lowerAllToAll(CollectiveLowering &l, AllToAllOp op) {
  int64_t split = op.getSplitDim(), concat = op.getConcatDim();
  // Splitting and concatenating one dim keeps its size: nothing to infer.
  Value g = l.groupSize(l.inType, l.outType, split == concat ? -1 : split);
  SmallVector<OpFoldResult> blockShape =
      l.scaleDim(l.inShape, split, g, /*multiply=*/false);
  Value result = l.alloc(l.elementType,
                         l.scaleDim(blockShape, concat, g, /*multiply=*/true));
  // Send: block j along split_dim goes to member j. Receive: the block from
  // member j lands at block j along concat_dim.
  Value sendStaging, recvStaging;
  Value send = l.blocksBuffer(l.in, l.inType, blockShape, split, g, sendStaging,
                              /*pack=*/true);
  Value recv = l.blocksBuffer(result, l.outType, blockShape, concat, g,
                              recvStaging, /*pack=*/false);
  // A padded dim moves its data only (meshrt_all_to_all_padded): the data
  // of the input's split dim, or of the result's concat dim, a prefix of
  // the blocks end to end (C12).
  if (std::optional<int64_t> valid = op.getSplitValid())
    l.callCollective<RuntimeEntry::meshrt_all_to_all_padded>(
        {l.comm, l.pointer(send), l.pointer(recv), l.product(blockShape),
         validElements(l, *valid, l.inType, split), l.dtype(l.elementType),
         l.rt.constI32(l.b, l.loc, MESHRT_PADDED_SPLIT)});
  else if (std::optional<int64_t> valid = op.getConcatValid())
    l.callCollective<RuntimeEntry::meshrt_all_to_all_padded>(
        {l.comm, l.pointer(send), l.pointer(recv), l.product(blockShape),
         validElements(l, *valid, l.outType, concat), l.dtype(l.elementType),
         l.rt.constI32(l.b, l.loc, MESHRT_PADDED_CONCAT)});
  else
    l.callCollective<RuntimeEntry::meshrt_all_to_all>(
        {l.comm, l.pointer(send), l.pointer(recv), l.product(blockShape),
         l.dtype(l.elementType)});
  l.unpackReceived(result, recvStaging, blockShape, concat, g);
  if (sendStaging)
    memref::DeallocOp::create(l.b, l.loc, sendStaging);
  return result;
}

/// all_slice: no communication; this member's block is copied out.
Value lowerAllSlice(CollectiveLowering &l, AllSliceOp op) {
  int64_t dim = op.getSliceDim();
  Value g = l.groupSize(l.inType, l.outType, dim);
  SmallVector<OpFoldResult> blockShape =
      l.scaleDim(l.inShape, dim, g, /*multiply=*/false);
  Value me = l.callForIndex<RuntimeEntry::meshrt_comm_rank>({l.comm});
  Value result = l.alloc(l.elementType, blockShape);
  Value block = l.blockView(l.in, blockShape, dim, me);
  linalg::CopyOp::create(l.b, l.loc, ValueRange{block}, ValueRange{result});
  return result;
}

/// broadcast: the runtime works in place, on a copy of the input unless the
/// op is `in_place`.
Value lowerBroadcast(CollectiveLowering &l, BroadcastOp op) {
  Value result = l.in;
  if (!op.getInPlace()) {
    result = l.alloc(l.elementType, l.inShape);
    memref::CopyOp::create(l.b, l.loc, l.in, result);
  }
  l.callCollective<RuntimeEntry::meshrt_broadcast>(
      {l.comm, l.pointer(result), l.numElements(result), l.dtype(l.elementType),
       l.rt.constI64(l.b, l.loc, static_cast<int64_t>(op.getRoot()))});
  return result;
}

/// permute: members outside the group's range receive zeros unless the
/// permutation rotates.
Value lowerPermute(CollectiveLowering &l, PermuteOp op) {
  Value result = l.alloc(l.elementType, l.inShape);
  int32_t flags =
      MESHRT_PERMUTE_ZERO_FILL | (op.getRotate() ? MESHRT_PERMUTE_WRAP : 0);
  l.callCollective<RuntimeEntry::meshrt_permute>(
      {l.comm, l.pointer(l.in), l.pointer(result), l.numElements(l.in),
       l.dtype(l.elementType),
       l.rt.constI64(l.b, l.loc, static_cast<int64_t>(op.getOffset())),
       l.rt.constI32(l.b, l.loc, flags)});
  return result;
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// A pattern of this lowering: an OpConversionPattern with the shared state.
template <typename OpTy>
class RuntimePattern : public OpConversionPattern<OpTy> {
public:
  RuntimePattern(MLIRContext *ctx, RuntimeModule &rt)
      : OpConversionPattern<OpTy>(ctx), rt(rt) {}

protected:
  RuntimeModule &rt;
};

/// Lowers the collective OpTy: the shared parts (CollectiveLowering) around
/// `lowerKind`, which allocates the result and calls the runtime.
template <typename OpTy, Value (*lowerKind)(CollectiveLowering &, OpTy)>
class CollectivePattern : public RuntimePattern<OpTy> {
public:
  using RuntimePattern<OpTy>::RuntimePattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    // Nothing to send or receive (a static zero-size buffer on either
    // side): every member skips the call alike, and the result is an empty
    // buffer (views of zero-size blocks would not even verify).
    auto inType = cast<MemRefType>(adaptor.getInput().getType());
    auto outType = cast<MemRefType>(op.getResult().getType());
    if (inType.hasStaticShape() && outType.hasStaticShape() &&
        (inType.getNumElements() == 0 || outType.getNumElements() == 0)) {
      if (isInPlace(op))
        rewriter.replaceOp(op, adaptor.getInput());
      else
        rewriter.replaceOpWithNewOp<memref::AllocOp>(op, outType);
      return success();
    }
    // On a mesh over part of the world only its devices run the collective.
    // Elsewhere the result is zeros (or, in place, the input as it was), so
    // that code around it still runs on defined values.
    MeshOp mesh = this->rt.lookupMesh(op, op.getMeshAttr());
    Location loc = op.getLoc();
    auto run = [&]() -> SmallVector<Value> {
      CollectiveLowering l(this->rt, rewriter, op, adaptor.getInput());
      l.prepareOperands();
      return {l.finish(lowerKind(l, op))};
    };
    auto skip = [&]() -> SmallVector<Value> {
      CollectiveLowering none(this->rt, rewriter, op, adaptor.getInput());
      none.memorySpace = inType.getMemorySpace();
      Value result = adaptor.getInput();
      if (!isInPlace(op)) {
        result =
            none.alloc(outType.getElementType(),
                       resultShape(none, op, none.sizes(adaptor.getInput()),
                                   mesh.getGroupSize(none.axes)));
        fillZero(rewriter, loc, result);
      }
      return {none.castToResult(result)};
    };
    rewriter.replaceOp(op, this->rt.ifMember(rewriter, loc, mesh,
                                             TypeRange{outType}, run, skip));
    return success();
  }
};

/// Lowers `barrier` to meshrt_barrier on the communicator of its axes.
class BarrierPattern : public RuntimePattern<BarrierOp> {
public:
  using RuntimePattern::RuntimePattern;

  LogicalResult
  matchAndRewrite(BarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    OpLowering l(rt, rewriter, op);
    MeshOp mesh = rt.lookupMesh(op, op.getMeshAttr());
    SmallVector<StringRef> axes =
        llvm::to_vector(op.getAxes().getAsValueRange<StringAttr>());
    // Outside a mesh over part of the world, there is no group to wait for.
    rt.ifMember(
        rewriter, l.loc, mesh, TypeRange(), [&]() -> SmallVector<Value> {
          Value comm =
              rt.loadHandle(rewriter, l.loc, rt.getCommGlobal(mesh, axes));
          l.call<RuntimeEntry::meshrt_barrier>({comm});
          return {};
        });
    rewriter.eraseOp(op);
    return success();
  }
};

/// Lowers the axis query OpTy (axis_index, axis_size) to the runtime query
/// `query` on the mesh handle and the axis's index.
template <typename OpTy, RuntimeEntry query>
class AxisQueryPattern : public RuntimePattern<OpTy> {
public:
  using RuntimePattern<OpTy>::RuntimePattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    RuntimeModule &rt = this->rt;
    OpLowering l(rt, rewriter, op);
    MeshOp mesh = rt.lookupMesh(op, op.getMeshAttr());
    auto queryValue = [&]() -> SmallVector<Value> {
      Value meshHandle = rt.loadHandle(rewriter, l.loc, rt.getMeshGlobal(mesh));
      Value axisIndex =
          rt.constI64(rewriter, l.loc, *mesh.getAxisIndex(op.getAxis()));
      return {l.callForIndex<query>({meshHandle, axisIndex})};
    };
    // A process outside a mesh over part of the world has no coordinate:
    // its axis_index is 0 (sizes are known everywhere).
    if (!std::is_same_v<OpTy, AxisIndexOp>) {
      rewriter.replaceOp(op, queryValue());
      return success();
    }
    rewriter.replaceOp(
        op, rt.ifMember(rewriter, l.loc, mesh,
                        TypeRange{rewriter.getIndexType()}, queryValue,
                        [&]() -> SmallVector<Value> { return {l.index(0)}; }));
    return success();
  }
};

/// Lowers `is_member` to the membership flag start-up computed.
class IsMemberPattern : public RuntimePattern<IsMemberOp> {
public:
  using RuntimePattern::RuntimePattern;

  LogicalResult
  matchAndRewrite(IsMemberOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    MeshOp mesh = rt.lookupMesh(op, op.getMeshAttr());
    rewriter.replaceOp(op, rt.isMember(rewriter, op.getLoc(), mesh));
    return success();
  }
};

/// Lowers `send` to meshrt_send to the peer rank start-up computed, on the
/// processes of the sending mesh.
class SendPattern : public RuntimePattern<SendOp> {
public:
  using RuntimePattern::RuntimePattern;

  LogicalResult
  matchAndRewrite(SendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    OpLowering l(rt, rewriter, op);
    MeshOp own = rt.lookupMesh(op, op.getMeshAttr());
    MeshOp peer = rt.lookupMesh(op, op.getToAttr());
    Value peerRank = loadPeer(l, own, peer);
    auto inType = cast<MemRefType>(adaptor.getInput().getType());
    l.memorySpace = inType.getMemorySpace();
    rt.ifMember(rewriter, l.loc, own, TypeRange(), [&]() -> SmallVector<Value> {
      Value in = l.contiguous(adaptor.getInput());
      l.call<RuntimeEntry::meshrt_send>(
          {l.pointer(in), l.numElements(in), l.dtype(inType.getElementType()),
           peerRank, rt.constI64(rewriter, l.loc, op.getTag())});
      if (in != adaptor.getInput())
        memref::DeallocOp::create(rewriter, l.loc, in);
      return {};
    });
    rewriter.eraseOp(op);
    return success();
  }

  static Value loadPeer(OpLowering &l, MeshOp own, MeshOp peer) {
    Value addr =
        LLVM::AddressOfOp::create(l.b, l.loc, l.rt.getPeerGlobal(own, peer));
    return LLVM::LoadOp::create(l.b, l.loc, l.rt.i64Type, addr);
  }
};

/// Lowers `recv` to meshrt_recv from the peer rank start-up computed into a
/// new buffer, on the processes of the receiving mesh; elsewhere the buffer
/// is zeros.
class RecvPattern : public RuntimePattern<RecvOp> {
public:
  using RuntimePattern::RuntimePattern;

  LogicalResult
  matchAndRewrite(RecvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    OpLowering l(rt, rewriter, op);
    MeshOp own = rt.lookupMesh(op, op.getMeshAttr());
    MeshOp peer = rt.lookupMesh(op, op.getFromAttr());
    auto outType = cast<MemRefType>(op.getResult().getType());
    Value result = memref::AllocOp::create(rewriter, l.loc, outType);
    Value peerRank = SendPattern::loadPeer(l, own, peer);
    rt.ifMember(
        rewriter, l.loc, own, TypeRange(),
        [&]() -> SmallVector<Value> {
          l.call<RuntimeEntry::meshrt_recv>(
              {l.pointer(result), l.numElements(result),
               l.dtype(outType.getElementType()), peerRank,
               rt.constI64(rewriter, l.loc, op.getTag())});
          return {};
        },
        [&]() -> SmallVector<Value> {
          fillZero(rewriter, l.loc, result);
          return {};
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::mesh::populateMeshToRuntimePatterns(RewritePatternSet &patterns,
                                               RuntimeModule &rt) {
  patterns
      .add<CollectivePattern<AllReduceOp, lowerAllReduce>,
           CollectivePattern<AllGatherOp, lowerAllGather>,
           CollectivePattern<ReduceScatterOp, lowerReduceScatter>,
           CollectivePattern<AllToAllOp, lowerAllToAll>,
           CollectivePattern<AllSliceOp, lowerAllSlice>,
           CollectivePattern<BroadcastOp, lowerBroadcast>,
           CollectivePattern<PermuteOp, lowerPermute>, BarrierPattern,
           IsMemberPattern, SendPattern, RecvPattern,
           AxisQueryPattern<AxisIndexOp, RuntimeEntry::meshrt_mesh_coordinate>,
           AxisQueryPattern<AxisSizeOp, RuntimeEntry::meshrt_mesh_axis_size>>(
          patterns.getContext(), rt);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

struct ConvertMeshToRuntimePass
    : public mesh::impl::ConvertMeshToRuntimeBase<ConvertMeshToRuntimePass> {
  using ConvertMeshToRuntimeBase::ConvertMeshToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    RuntimeModule rt(module, onStream);
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());

    if (failed(checkInput(rt)) ||
        failed(rt.checkSymbols(initSymbol, finiSymbol, !meshes.empty())))
      return signalPassFailure();

    // Declare every mesh, used or not: declaring checks it against the world.
    for (MeshOp mesh : meshes)
      rt.getMeshGlobal(mesh);
    // Every communicator, in the order of first use.
    module.walk([&](Operation *op) {
      if (auto coll = dyn_cast<CollectiveOpInterface>(op))
        rt.getCommGlobal(rt.lookupMesh(op, coll.getMeshAttr()),
                         coll.getAxisNames());
      else if (auto barrier = dyn_cast<BarrierOp>(op))
        rt.getCommGlobal(
            rt.lookupMesh(op, barrier.getMeshAttr()),
            llvm::to_vector(barrier.getAxes().getAsValueRange<StringAttr>()));
      else if (auto send = dyn_cast<SendOp>(op))
        rt.getPeerGlobal(rt.lookupMesh(op, send.getMeshAttr()),
                         rt.lookupMesh(op, send.getToAttr()));
      else if (auto recv = dyn_cast<RecvOp>(op))
        rt.getPeerGlobal(rt.lookupMesh(op, recv.getMeshAttr()),
                         rt.lookupMesh(op, recv.getFromAttr()));
    });

    // Each op lowers on its own; folding is the canonicalizer's business
    // (a static axis_size stays a runtime query, as before).
    ConversionTarget target(getContext());
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalDialect<MeshDialect>();
    target.addLegalOp<MeshOp>();
    RewritePatternSet patterns(&getContext());
    populateMeshToRuntimePatterns(patterns, rt);
    ConversionConfig config;
    config.foldingMode = DialectConversionFoldingMode::Never;
    if (failed(applyPartialConversion(module, target, std::move(patterns),
                                      config)))
      return signalPassFailure();

    if (!meshes.empty()) {
      rt.emitInitAndFini(initSymbol, finiSymbol);
      if (initInMain)
        rt.callFromMain(initSymbol, finiSymbol);
    }
    for (MeshOp mesh : meshes)
      mesh.erase();
  }

  /// Fails, after an error on each offending op, when something is left
  /// that the runtime cannot take: a mesh.shard, a tensor collective, an
  /// element type or result layout the runtime has no form for, or a
  /// reference to a mesh the module lacks.
  LogicalResult checkInput(RuntimeModule &rt) {
    bool failedCheck = false;
    getOperation().walk([&](Operation *op) {
      if (isa<ShardOp>(op)) {
        op->emitOpError("must be partitioned away (mesh-partition) before "
                        "convert-mesh-to-runtime");
        failedCheck = true;
        return;
      }
      if (!isa<CollectiveOpInterface, BarrierOp, AxisIndexOp, AxisSizeOp,
               IsMemberOp, SendOp, RecvOp>(op))
        return;
      SmallVector<FlatSymbolRefAttr, 2> meshRefs{
          op->getAttrOfType<FlatSymbolRefAttr>("mesh")};
      if (auto send = dyn_cast<SendOp>(op))
        meshRefs.push_back(send.getToAttr());
      if (auto recv = dyn_cast<RecvOp>(op))
        meshRefs.push_back(recv.getFromAttr());
      for (FlatSymbolRefAttr meshRef : meshRefs) {
        if (rt.lookupMesh(op, meshRef))
          continue;
        op->emitOpError() << "refers to " << meshRef
                          << ", which is not a mesh of this module";
        failedCheck = true;
        return;
      }
      if (isa<SendOp, RecvOp>(op)) {
        if (failed(checkPointToPoint(op)))
          failedCheck = true;
        return;
      }
      auto coll = dyn_cast<CollectiveOpInterface>(op);
      if (!coll)
        return;
      if (isa<TensorType>(op->getResult(0).getType())) {
        op->emitOpError("works on tensors; bufferize the program "
                        "(one-shot-bufferize) before convert-mesh-to-runtime");
        failedCheck = true;
      } else if (failed(checkSupported(coll))) {
        failedCheck = true;
      }
    });
    return failure(failedCheck);
  }

  /// Fails, after an error on `op`, when the runtime cannot take the
  /// transfer `op` as it is.
  LogicalResult checkPointToPoint(Operation *op) {
    Value data = isa<SendOp>(op) ? op->getOperand(0) : op->getResult(0);
    auto type = dyn_cast<MemRefType>(data.getType());
    if (!type)
      return op->emitOpError(
          "works on tensors; bufferize the program (one-shot-bufferize) "
          "before convert-mesh-to-runtime");
    if (!getRuntimeDtype(type.getElementType()))
      return op->emitOpError()
             << "has element type " << type.getElementType()
             << ", which the runtime does not support; supported: f16, "
                "bf16, f32, f64, i8, ui8, i32, i64, index";
    if (isa<RecvOp>(op) && !type.getLayout().isIdentity())
      return op->emitOpError() << "result " << type
                               << " must have an identity layout to be lowered";
    if (onStream)
      return op->emitOpError(
          "is not lowered with on-stream yet: meshrt_send and meshrt_recv "
          "have no stream-ordered form (the GPU targets)");
    return success();
  }
};

} // namespace

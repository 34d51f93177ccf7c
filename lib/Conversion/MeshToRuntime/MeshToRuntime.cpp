//===- MeshToRuntime.cpp - mesh collectives to mesh runtime calls ---------===//
//
// Lowers memref collectives, barriers and axis queries to calls into the C ABI
// of the mesh runtime (runtime/include/meshrt/meshrt.h). The point of the
// design: communicators are looked up once. Every mesh is declared and every
// distinct (mesh, ordered axes) gets its communicator in a global, filled by
// one start-up function; a collective loads the handle and calls the runtime.
// Upstream's MPI lowering splits a communicator at every call instead.
//
// The runtime works on contiguous buffers with blocks along the leading
// dimension; collectives on other dimensions pack and unpack blocks with
// linalg.copy around the call.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"
#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "meshrt/meshrt.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_CONVERTMESHTORUNTIME
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// meshrt_mesh_declare's size of an axis it sizes from the world.
constexpr int64_t kDynamicAxisSize = -1;

/// The runtime's dtype for `type`, if it has one.
std::optional<int32_t> getRuntimeDtype(Type type) {
  if (type.isF16())
    return MESHRT_F16;
  if (type.isBF16())
    return MESHRT_BF16;
  if (type.isF32())
    return MESHRT_F32;
  if (type.isF64())
    return MESHRT_F64;
  if (type.isIndex())
    return MESHRT_I64; // index buffers lower to 64-bit elements.
  if (auto i = dyn_cast<IntegerType>(type)) {
    if (i.getWidth() == 8)
      return i.isUnsigned() ? MESHRT_U8 : MESHRT_I8;
    if (i.getWidth() == 32 && !i.isUnsigned())
      return MESHRT_I32;
    if (i.getWidth() == 64 && !i.isUnsigned())
      return MESHRT_I64;
  }
  return std::nullopt;
}

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

int32_t getRuntimeReduction(ReductionKind kind) {
  return static_cast<int32_t>(kind);
}

/// Builds the module-level parts: runtime declarations, globals, strings,
/// and the start-up and shut-down functions.
class RuntimeModule {
public:
  RuntimeModule(ModuleOp module)
      : module(module), ctx(module.getContext()),
        ptrType(LLVM::LLVMPointerType::get(ctx)),
        i32Type(IntegerType::get(ctx, 32)), i64Type(IntegerType::get(ctx, 64)),
        i8Type(IntegerType::get(ctx, 8)) {}

  /// Declares (once) the runtime function `name`; every one returns a status.
  LLVM::LLVMFuncOp getFunc(StringRef name, ArrayRef<Type> args) {
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
      return fn; // checkReservedSymbols made sure it is the runtime's.
    OpBuilder b = atModuleStart();
    auto fn = LLVM::LLVMFuncOp::create(
        b, module.getLoc(), name, LLVM::LLVMFunctionType::get(i32Type, args));
    fn.setPrivate();
    return fn;
  }

  /// A NUL-terminated string constant.
  LLVM::GlobalOp getString(StringRef text) {
    auto it = strings.find(text);
    if (it != strings.end())
      return it->second;
    std::string value = text.str();
    value.push_back('\0');
    OpBuilder b = atModuleStart();
    auto type = LLVM::LLVMArrayType::get(i8Type, value.size());
    auto global = LLVM::GlobalOp::create(
        b, module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::Internal,
        uniqueName("__mesh_str"), b.getStringAttr(value));
    strings[text] = global;
    return global;
  }

  /// A pointer-sized global initialised to null.
  LLVM::GlobalOp makePointerGlobal(StringRef prefix) {
    OpBuilder b = atModuleStart();
    auto global = LLVM::GlobalOp::create(
        b, module.getLoc(), ptrType, /*isConstant=*/false,
        LLVM::Linkage::Internal, uniqueName(prefix), Attribute());
    Block *init = b.createBlock(&global.getInitializerRegion());
    b.setInsertionPointToStart(init);
    Value zero = LLVM::ZeroOp::create(b, module.getLoc(), ptrType);
    LLVM::ReturnOp::create(b, module.getLoc(), zero);
    return global;
  }

  /// The global holding the handle of mesh `mesh`.
  LLVM::GlobalOp getMeshGlobal(MeshOp mesh) {
    auto it = meshGlobals.find(mesh.getSymName());
    if (it != meshGlobals.end())
      return it->second;
    LLVM::GlobalOp global =
        makePointerGlobal(("__mesh_mesh_" + mesh.getSymName()).str());
    meshGlobals[mesh.getSymName()] = global;
    meshOrder.push_back(mesh);
    return global;
  }

  /// The global holding the communicator of (mesh, ordered axes).
  LLVM::GlobalOp getCommGlobal(MeshOp mesh, ArrayRef<StringRef> axes) {
    getMeshGlobal(mesh);
    CommKey key{mesh.getSymNameAttr(), {}};
    for (StringRef axis : axes)
      key.second.push_back(*mesh.getAxisIndex(axis));
    auto it = commGlobals.find(key);
    if (it != commGlobals.end())
      return it->second;
    LLVM::GlobalOp global = makePointerGlobal("__mesh_comm");
    commGlobals.insert({std::move(key), global});
    return global;
  }

  /// Loads the handle stored in `global`.
  Value loadHandle(OpBuilder &b, Location loc, LLVM::GlobalOp global) {
    Value addr = LLVM::AddressOfOp::create(b, loc, global);
    return LLVM::LoadOp::create(b, loc, ptrType, addr);
  }

  /// Emits the start-up and shut-down functions. Start-up initialises the
  /// runtime once, declares every mesh and creates every communicator.
  LogicalResult emitInitAndFini(StringRef initName, StringRef finiName);

  /// Aborts with a message when a runtime call returns a non-zero status
  /// (the runtime's own policy aborts first unless the program asked it to
  /// return errors; compiled code cannot go on without the result).
  void checkStatus(OpBuilder &b, Location loc, Value status, StringRef what) {
    Value zero = constI32(b, loc, 0);
    Value ok =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, status, zero);
    std::string message;
    llvm::raw_string_ostream os(message);
    os << "mesh runtime: " << what << " failed (meshrt_last_error() says why)";
    if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
      os << " at " << fileLoc.getFilename().getValue() << ":"
         << fileLoc.getLine() << ":" << fileLoc.getColumn();
    cf::AssertOp::create(b, loc, ok, os.str());
  }

  /// Fails when a symbol the lowering defines or calls exists with another
  /// meaning, or when the start-up names are unusable.
  LogicalResult checkReservedSymbols(StringRef initName, StringRef finiName) {
    if (initName.empty() || finiName.empty() || initName == finiName ||
        initName.starts_with("meshrt_") || finiName.starts_with("meshrt_"))
      return module.emitError()
             << "convert-mesh-to-runtime: init-symbol '" << initName
             << "' and fini-symbol '" << finiName
             << "' must be non-empty, distinct, and not start with meshrt_";
    for (Operation &op : module.getBody()->getOperations()) {
      auto sym = dyn_cast<SymbolOpInterface>(op);
      if (!sym)
        continue;
      StringRef name = sym.getName();
      if (name.starts_with("meshrt_") && !isa<LLVM::LLVMFuncOp>(op))
        return op.emitError() << "convert-mesh-to-runtime: the symbol '" << name
                              << "' is reserved for the mesh runtime";
    }
    return success();
  }

  Value constI32(OpBuilder &b, Location loc, int32_t v) {
    return LLVM::ConstantOp::create(b, loc, i32Type, b.getI32IntegerAttr(v));
  }
  Value constI64(OpBuilder &b, Location loc, int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i64Type, b.getI64IntegerAttr(v));
  }

  /// An array of `values` on the stack; returns its address.
  Value stackArray(OpBuilder &b, Location loc, Type elementType,
                   ArrayRef<Value> values) {
    auto arrayType = LLVM::LLVMArrayType::get(elementType, values.size());
    Value array =
        LLVM::AllocaOp::create(b, loc, ptrType, arrayType, constI64(b, loc, 1));
    for (auto [i, v] : llvm::enumerate(values)) {
      Value slot = LLVM::GEPOp::create(
          b, loc, ptrType, arrayType, array,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      LLVM::StoreOp::create(b, loc, v, slot);
    }
    return array;
  }

  ModuleOp module;
  MLIRContext *ctx;
  Type ptrType, i32Type, i64Type, i8Type;
  /// Collectives on the runtime's GPU stream (the `on-stream` option).
  bool onStream = false;
  /// The shared stream of each function that has stream-ordered
  /// collectives, fetched once at its entry.
  DenseMap<Operation *, Value> streams;

private:
  /// A communicator: the name of its mesh and the indices of its ordered
  /// axes.
  using CommKey = std::pair<StringAttr, SmallVector<int64_t>>;
  /// The runtime functions that start-up and shut-down call.
  struct LifecycleFuncs {
    LLVM::LLVMFuncOp init, declareMesh, getComm, finalize;
  };

  /// Fails when the module already has a symbol named `initName` or
  /// `finiName`.
  LogicalResult checkInitAndFiniNamesFree(StringRef initName,
                                          StringRef finiName);
  /// The i8 global that records whether start-up has run.
  LLVM::GlobalOp createInitializedFlag();
  /// Declares the runtime functions that start-up and shut-down call.
  LifecycleFuncs declareLifecycleFuncs();
  /// Emits `void name()`, which runs `body` once per start-up: when
  /// `initialises`, only while `guard` is clear, and sets it; otherwise only
  /// while it is set, and clears it.
  void emitGuardedFunction(StringRef name, LLVM::GlobalOp guard,
                           bool initialises,
                           function_ref<void(OpBuilder &, Location)> body);
  /// Picks this process's GPU (meshrt_gpu_select_device), before any
  /// communicator or kernel needs it.
  void emitDeviceSelection(OpBuilder &b, Location loc) {
    Value slot =
        LLVM::AllocaOp::create(b, loc, ptrType, i64Type, constI64(b, loc, 1));
    Value status = LLVM::CallOp::create(
                       b, loc, getFunc("meshrt_gpu_select_device", {ptrType}),
                       ValueRange{slot})
                       .getResult();
    checkStatus(b, loc, status, "meshrt_gpu_select_device");
  }
  /// Declares `mesh` to the runtime and stores its handle in its global.
  void emitMeshDeclaration(OpBuilder &b, Location loc,
                           LLVM::LLVMFuncOp declareFn, MeshOp mesh);
  /// Creates the communicator of `key` and stores it in `global`.
  void emitCommCreation(OpBuilder &b, Location loc, LLVM::LLVMFuncOp commFn,
                        const CommKey &key, LLVM::GlobalOp global);

  OpBuilder atModuleStart() {
    OpBuilder b(ctx);
    b.setInsertionPointToStart(module.getBody());
    return b;
  }
  OpBuilder atModuleEnd() {
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    return b;
  }
  std::string uniqueName(StringRef prefix) {
    std::string name;
    do {
      name = (prefix + "_" + Twine(counter++)).str();
    } while (module.lookupSymbol(name));
    return name;
  }
  Value isInitialised(OpBuilder &b, Location loc, LLVM::GlobalOp guard) {
    Value addr = LLVM::AddressOfOp::create(b, loc, guard);
    Value flag = LLVM::LoadOp::create(b, loc, i8Type, addr);
    Value zero =
        LLVM::ConstantOp::create(b, loc, i8Type, b.getI8IntegerAttr(0));
    return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, flag, zero);
  }
  void setGuard(OpBuilder &b, Location loc, LLVM::GlobalOp guard, int8_t v) {
    Value addr = LLVM::AddressOfOp::create(b, loc, guard);
    Value value =
        LLVM::ConstantOp::create(b, loc, i8Type, b.getI8IntegerAttr(v));
    LLVM::StoreOp::create(b, loc, value, addr);
  }

  unsigned counter = 0;
  llvm::StringMap<LLVM::GlobalOp> strings;
  llvm::StringMap<LLVM::GlobalOp> meshGlobals;
  SmallVector<MeshOp> meshOrder;
  /// The communicators' globals, in the order start-up creates them.
  llvm::MapVector<CommKey, LLVM::GlobalOp> commGlobals;
};

/// Lowers one op at a time, in place.
class OpLowering {
public:
  OpLowering(RuntimeModule &rt, Operation *op)
      : rt(rt), op(op), b(op), loc(op->getLoc()) {}

  RuntimeModule &rt;
  Operation *op;
  OpBuilder b;
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

  /// What a collective sends as G blocks of `blockShape` along `dim` of
  /// `in` (of type `type`): `in` itself when the blocks are contiguous, else
  /// a staging buffer they are packed into, also set in `staging`.
  Value blocksToSend(Value in, MemRefType type,
                     ArrayRef<OpFoldResult> blockShape, int64_t dim,
                     Value groupSize, Value &staging) {
    if (blocksAreContiguous(type, dim))
      return in;
    staging = allocStaging(type.getElementType(), blockShape, groupSize);
    copyBlocks(in, staging, blockShape, dim, groupSize, /*pack=*/true);
    return staging;
  }

  /// Where a collective receives G blocks of `blockShape` that land along
  /// `dim` of `result` (of type `type`): `result` itself when they are
  /// contiguous, else a staging buffer, also set in `staging`, that
  /// unpackReceived copies out.
  Value blocksToReceive(Value result, MemRefType type,
                        ArrayRef<OpFoldResult> blockShape, int64_t dim,
                        Value groupSize, Value &staging) {
    if (blocksAreContiguous(type, dim))
      return result;
    staging = allocStaging(type.getElementType(), blockShape, groupSize);
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

  Value call(StringRef name, ArrayRef<Value> args) {
    SmallVector<Value> withStream;
    std::string streamName;
    if (rt.onStream && isCollectiveEntry(name)) {
      // Same arguments, plus the shared stream: stream-ordered on the GPU.
      withStream.assign(args.begin(), args.end());
      withStream.push_back(sharedStream());
      streamName = (name + "_on_stream").str();
      name = streamName;
      args = withStream;
    }
    SmallVector<Type> types;
    for (Value a : args)
      types.push_back(a.getType());
    Value status =
        LLVM::CallOp::create(b, loc, rt.getFunc(name, types), args).getResult();
    rt.checkStatus(
        b, loc, status,
        (name + " for '" + op->getName().getStringRef() + "'").str());
    return status;
  }

  /// True for the runtime entries that move buffer contents.
  static bool isCollectiveEntry(StringRef name) {
    return llvm::is_contained({"meshrt_all_reduce", "meshrt_all_gather",
                               "meshrt_reduce_scatter", "meshrt_all_to_all",
                               "meshrt_broadcast", "meshrt_permute"},
                              name);
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
    Value status = LLVM::CallOp::create(
                       b, loc, rt.getFunc("meshrt_gpu_stream", {rt.ptrType}),
                       ValueRange{slot})
                       .getResult();
    rt.checkStatus(b, loc, status, "meshrt_gpu_stream");
    stream = LLVM::LoadOp::create(b, loc, rt.ptrType, slot);
    return stream;
  }

  /// Calls `name(handle, ..., &out)` and returns `out` as an index.
  Value callForIndex(StringRef name, SmallVector<Value> args) {
    Value slot = entryAlloca();
    args.push_back(slot);
    call(name, args);
    Value v = LLVM::LoadOp::create(b, loc, rt.i64Type, slot);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
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

  Value dtype(Type elementType) {
    return rt.constI32(b, loc, *getRuntimeDtype(elementType));
  }
};

/// Lowers one collective in place. What every collective shares lives here:
/// the checks, the group's communicator, a contiguous input, and replacing
/// the op; the per-kind functions below allocate the result and marshal the
/// arguments of the runtime call.
class CollectiveLowering : public OpLowering {
public:
  CollectiveLowering(RuntimeModule &rt, CollectiveOpInterface coll,
                     MeshOp mesh);

  /// Fails, after an error on the op, when the runtime cannot take its
  /// element type or its result's layout.
  LogicalResult checkSupported();
  /// Loads the group's communicator and makes the input contiguous; sets
  /// `comm`, `in` and `inShape`.
  void prepareOperands();
  /// The number of members of the group, as an index value.
  Value groupSize();
  /// The runtime's code of reduction `kind`, as an i32 value.
  Value reduction(ReductionKind kind);
  /// Frees the contiguous copy of the input, if any, and replaces the op
  /// with `result`, cast to the op's result type.
  void replaceOp(Value result);

  MeshOp mesh;
  /// The group's axes, in group order.
  SmallVector<StringRef> axes;
  /// The op's input buffer, and the types of its input and result.
  Value input;
  MemRefType inType, outType;
  Type elementType;

  /// The group's communicator handle.
  Value comm;
  /// `input`, or a contiguous copy of it.
  Value in;
  /// The sizes of `in`.
  SmallVector<OpFoldResult> inShape;
};

} // namespace

//===----------------------------------------------------------------------===//
// RuntimeModule: start-up and shut-down
//===----------------------------------------------------------------------===//

LogicalResult RuntimeModule::emitInitAndFini(StringRef initName,
                                             StringRef finiName) {
  if (failed(checkInitAndFiniNamesFree(initName, finiName)))
    return failure();
  LLVM::GlobalOp guard = createInitializedFlag();
  LifecycleFuncs funcs = declareLifecycleFuncs();

  emitGuardedFunction(
      initName, guard, /*initialises=*/true, [&](OpBuilder &b, Location loc) {
        Value status = LLVM::CallOp::create(b, loc, funcs.init,
                                            ValueRange{constI32(b, loc, 0)})
                           .getResult();
        checkStatus(b, loc, status, "meshrt_init");
        if (onStream)
          emitDeviceSelection(b, loc);
        for (MeshOp mesh : meshOrder)
          emitMeshDeclaration(b, loc, funcs.declareMesh, mesh);
        for (const auto &[key, global] : commGlobals)
          emitCommCreation(b, loc, funcs.getComm, key, global);
      });
  // Shut-down frees every communicator (the runtime owns them).
  emitGuardedFunction(
      finiName, guard, /*initialises=*/false, [&](OpBuilder &b, Location loc) {
        LLVM::CallOp::create(b, loc, funcs.finalize, ValueRange());
      });
  return success();
}

LogicalResult RuntimeModule::checkInitAndFiniNamesFree(StringRef initName,
                                                       StringRef finiName) {
  for (StringRef name : {initName, finiName})
    if (module.lookupSymbol(name))
      return module.emitError() << "convert-mesh-to-runtime: the module "
                                   "already has a symbol named '"
                                << name << "'";
  return success();
}

LLVM::GlobalOp RuntimeModule::createInitializedFlag() {
  OpBuilder b = atModuleEnd();
  return LLVM::GlobalOp::create(b, module.getLoc(), i8Type,
                                /*isConstant=*/false, LLVM::Linkage::Internal,
                                uniqueName("__mesh_initialized"),
                                b.getI8IntegerAttr(0));
}

RuntimeModule::LifecycleFuncs RuntimeModule::declareLifecycleFuncs() {
  LifecycleFuncs funcs;
  funcs.init = getFunc("meshrt_init", {i32Type});
  funcs.declareMesh = getFunc("meshrt_mesh_declare",
                              {ptrType, i64Type, ptrType, ptrType, ptrType});
  funcs.getComm =
      getFunc("meshrt_comm_get", {ptrType, i64Type, ptrType, ptrType});
  funcs.finalize = getFunc("meshrt_finalize", {});
  return funcs;
}

void RuntimeModule::emitGuardedFunction(
    StringRef name, LLVM::GlobalOp guard, bool initialises,
    function_ref<void(OpBuilder &, Location)> body) {
  Location loc = module.getLoc();
  OpBuilder b = atModuleEnd();
  auto voidFn = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {});
  auto fn = LLVM::LLVMFuncOp::create(b, loc, name, voidFn);
  Block *entry = fn.addEntryBlock(b);
  Block *work = b.createBlock(&fn.getBody());
  Block *done = b.createBlock(&fn.getBody());
  b.setInsertionPointToEnd(entry);
  Value initialised = isInitialised(b, loc, guard);
  if (initialises)
    LLVM::CondBrOp::create(b, loc, initialised, done, work);
  else
    LLVM::CondBrOp::create(b, loc, initialised, work, done);

  b.setInsertionPointToEnd(work);
  body(b, loc);
  setGuard(b, loc, guard, initialises ? 1 : 0);
  LLVM::BrOp::create(b, loc, ValueRange(), done);
  b.setInsertionPointToEnd(done);
  LLVM::ReturnOp::create(b, loc, ValueRange());
}

void RuntimeModule::emitMeshDeclaration(OpBuilder &b, Location loc,
                                        LLVM::LLVMFuncOp declareFn,
                                        MeshOp mesh) {
  ArrayRef<int64_t> shape = mesh.getShape();
  SmallVector<Value> sizes, names;
  for (int64_t size : shape)
    sizes.push_back(constI64(
        b, loc, ShapedType::isDynamic(size) ? kDynamicAxisSize : size));
  for (StringRef name : mesh.getAxisNames().getAsValueRange<StringAttr>())
    names.push_back(LLVM::AddressOfOp::create(b, loc, getString(name)));
  Value sizeArray = stackArray(b, loc, i64Type, sizes);
  Value nameArray = stackArray(b, loc, ptrType, names);
  Value meshName =
      LLVM::AddressOfOp::create(b, loc, getString(mesh.getSymName()));
  Value out = LLVM::AddressOfOp::create(b, loc, meshGlobals[mesh.getSymName()]);
  Value status =
      LLVM::CallOp::create(b, loc, declareFn,
                           ValueRange{meshName, constI64(b, loc, shape.size()),
                                      sizeArray, nameArray, out})
          .getResult();
  checkStatus(b, loc, status,
              ("meshrt_mesh_declare of @" + mesh.getSymName()).str());
}

void RuntimeModule::emitCommCreation(OpBuilder &b, Location loc,
                                     LLVM::LLVMFuncOp commFn,
                                     const CommKey &key,
                                     LLVM::GlobalOp global) {
  StringRef meshName = key.first.getValue();
  Value meshHandle = loadHandle(b, loc, meshGlobals[meshName]);
  SmallVector<Value> axes;
  for (int64_t axis : key.second)
    axes.push_back(constI64(b, loc, axis));
  Value axisArray = axes.empty()
                        ? LLVM::ZeroOp::create(b, loc, ptrType).getResult()
                        : stackArray(b, loc, i64Type, axes);
  Value out = LLVM::AddressOfOp::create(b, loc, global);
  Value status =
      LLVM::CallOp::create(
          b, loc, commFn,
          ValueRange{meshHandle, constI64(b, loc, axes.size()), axisArray, out})
          .getResult();
  checkStatus(b, loc, status, ("meshrt_comm_get on @" + meshName).str());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

CollectiveLowering::CollectiveLowering(RuntimeModule &rt,
                                       CollectiveOpInterface coll, MeshOp mesh)
    : OpLowering(rt, coll.getOperation()), mesh(mesh),
      axes(coll.getAxisNames()), input(op->getOperand(0)),
      inType(cast<MemRefType>(input.getType())),
      outType(cast<MemRefType>(op->getResult(0).getType())),
      elementType(inType.getElementType()) {}

LogicalResult CollectiveLowering::checkSupported() {
  if (!getRuntimeDtype(elementType))
    return op->emitOpError()
           << "has element type " << elementType
           << ", which the runtime does not support; supported: f16, bf16, "
              "f32, f64, i8, ui8, i32, i64, index";
  if (!outType.getLayout().isIdentity())
    return op->emitOpError() << "result " << outType
                             << " must have an identity layout to be lowered";
  return success();
}

void CollectiveLowering::prepareOperands() {
  comm = rt.loadHandle(b, loc, rt.getCommGlobal(mesh, axes));
  memorySpace = inType.getMemorySpace();
  in = contiguous(input);
  inShape = sizes(in);
}

Value CollectiveLowering::groupSize() {
  int64_t staticGroup = mesh.getGroupSize(axes);
  if (!ShapedType::isDynamic(staticGroup))
    return index(staticGroup);
  return callForIndex("meshrt_comm_size", {comm});
}

Value CollectiveLowering::reduction(ReductionKind kind) {
  return rt.constI32(b, loc, getRuntimeReduction(kind));
}

void CollectiveLowering::replaceOp(Value result) {
  if (in != input)
    memref::DeallocOp::create(b, loc, in);
  if (result.getType() != outType)
    result = memref::CastOp::create(b, loc, outType, result);
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
}

/// all_reduce: from the input straight into a new buffer of its shape.
static Value lowerAllReduce(CollectiveLowering &l, AllReduceOp op) {
  Value result = l.alloc(l.elementType, l.inShape);
  l.call("meshrt_all_reduce",
         {l.comm, l.pointer(l.in), l.pointer(result), l.numElements(l.in),
          l.dtype(l.elementType), l.reduction(op.getReduction())});
  return result;
}

/// all_gather: the runtime concatenates along the leading dim; on another
/// dim the blocks land in a staging buffer and are unpacked.
static Value lowerAllGather(CollectiveLowering &l, AllGatherOp op) {
  int64_t dim = op.getGatherDim();
  Value g = l.groupSize();
  Value result =
      l.alloc(l.elementType, l.scaleDim(l.inShape, dim, g, /*multiply=*/true));
  Value staging;
  Value recv = l.blocksToReceive(result, l.inType, l.inShape, dim, g, staging);
  l.call("meshrt_all_gather", {l.comm, l.pointer(l.in), l.pointer(recv),
                               l.numElements(l.in), l.dtype(l.elementType)});
  l.unpackReceived(result, staging, l.inShape, dim, g);
  return result;
}

/// reduce_scatter: the runtime scatters blocks along the leading dim; on
/// another dim the blocks are packed into a staging buffer first.
static Value lowerReduceScatter(CollectiveLowering &l, ReduceScatterOp op) {
  int64_t dim = op.getScatterDim();
  Value g = l.groupSize();
  SmallVector<OpFoldResult> blockShape =
      l.scaleDim(l.inShape, dim, g, /*multiply=*/false);
  Value result = l.alloc(l.elementType, blockShape);
  Value staging;
  Value send = l.blocksToSend(l.in, l.inType, blockShape, dim, g, staging);
  l.call("meshrt_reduce_scatter",
         {l.comm, l.pointer(send), l.pointer(result), l.numElements(result),
          l.dtype(l.elementType), l.reduction(op.getReduction())});
  if (staging)
    memref::DeallocOp::create(l.b, l.loc, staging);
  return result;
}

/// all_to_all: blocks along split_dim are sent, and blocks received land
/// along concat_dim, each through a staging buffer unless it is the leading
/// dim.
static Value lowerAllToAll(CollectiveLowering &l, AllToAllOp op) {
  int64_t split = op.getSplitDim(), concat = op.getConcatDim();
  Value g = l.groupSize();
  SmallVector<OpFoldResult> blockShape =
      l.scaleDim(l.inShape, split, g, /*multiply=*/false);
  Value result = l.alloc(l.elementType,
                         l.scaleDim(blockShape, concat, g, /*multiply=*/true));
  // Send: block j along split_dim goes to member j. Receive: the block from
  // member j lands at block j along concat_dim.
  Value sendStaging, recvStaging;
  Value send =
      l.blocksToSend(l.in, l.inType, blockShape, split, g, sendStaging);
  Value recv =
      l.blocksToReceive(result, l.outType, blockShape, concat, g, recvStaging);
  l.call("meshrt_all_to_all", {l.comm, l.pointer(send), l.pointer(recv),
                               l.product(blockShape), l.dtype(l.elementType)});
  l.unpackReceived(result, recvStaging, blockShape, concat, g);
  if (sendStaging)
    memref::DeallocOp::create(l.b, l.loc, sendStaging);
  return result;
}

/// all_slice: no communication; this member's block is copied out.
static Value lowerAllSlice(CollectiveLowering &l, AllSliceOp op) {
  int64_t dim = op.getSliceDim();
  Value g = l.groupSize();
  SmallVector<OpFoldResult> blockShape =
      l.scaleDim(l.inShape, dim, g, /*multiply=*/false);
  Value me = l.callForIndex("meshrt_comm_rank", {l.comm});
  Value result = l.alloc(l.elementType, blockShape);
  Value block = l.blockView(l.in, blockShape, dim, me);
  linalg::CopyOp::create(l.b, l.loc, ValueRange{block}, ValueRange{result});
  return result;
}

/// broadcast: the runtime works in place, on a copy of the input.
static Value lowerBroadcast(CollectiveLowering &l, BroadcastOp op) {
  Value result = l.alloc(l.elementType, l.inShape);
  memref::CopyOp::create(l.b, l.loc, l.in, result);
  l.call("meshrt_broadcast",
         {l.comm, l.pointer(result), l.numElements(result),
          l.dtype(l.elementType),
          l.rt.constI64(l.b, l.loc, static_cast<int64_t>(op.getRoot()))});
  return result;
}

/// permute: members outside the group's range receive zeros unless the
/// permutation rotates.
static Value lowerPermute(CollectiveLowering &l, PermuteOp op) {
  Value result = l.alloc(l.elementType, l.inShape);
  int32_t flags =
      MESHRT_PERMUTE_ZERO_FILL | (op.getRotate() ? MESHRT_PERMUTE_WRAP : 0);
  l.call("meshrt_permute",
         {l.comm, l.pointer(l.in), l.pointer(result), l.numElements(l.in),
          l.dtype(l.elementType),
          l.rt.constI64(l.b, l.loc, static_cast<int64_t>(op.getOffset())),
          l.rt.constI32(l.b, l.loc, flags)});
  return result;
}

/// Lowers the collective `coll` whose group is on `mesh`; replaces its
/// result. Returns failure after emitting an error.
static LogicalResult lowerCollective(RuntimeModule &rt,
                                     CollectiveOpInterface coll, MeshOp mesh) {
  CollectiveLowering l(rt, coll, mesh);
  if (failed(l.checkSupported()))
    return failure();
  l.prepareOperands();
  Value result =
      llvm::TypeSwitch<Operation *, Value>(coll.getOperation())
          .Case([&](AllReduceOp op) { return lowerAllReduce(l, op); })
          .Case([&](AllGatherOp op) { return lowerAllGather(l, op); })
          .Case([&](ReduceScatterOp op) { return lowerReduceScatter(l, op); })
          .Case([&](AllToAllOp op) { return lowerAllToAll(l, op); })
          .Case([&](AllSliceOp op) { return lowerAllSlice(l, op); })
          .Case([&](BroadcastOp op) { return lowerBroadcast(l, op); })
          .Case([&](PermuteOp op) { return lowerPermute(l, op); })
          .Default([](Operation *) { return Value(); });
  if (!result)
    return coll->emitOpError("has no lowering to the runtime");
  l.replaceOp(result);
  return success();
}

//===----------------------------------------------------------------------===//
// Barriers and axis queries
//===----------------------------------------------------------------------===//

/// Lowers `barrier` to meshrt_barrier on the communicator of its axes.
static void lowerBarrier(RuntimeModule &rt, BarrierOp barrier, MeshOp mesh) {
  OpLowering l(rt, barrier);
  SmallVector<StringRef> axes =
      llvm::to_vector(barrier.getAxes().getAsValueRange<StringAttr>());
  Value comm = rt.loadHandle(l.b, l.loc, rt.getCommGlobal(mesh, axes));
  l.call("meshrt_barrier", {comm});
  barrier->erase();
}

/// Lowers `op`, an axis_index or axis_size of `axis`, to the runtime query
/// `entry` on the handle of `mesh`.
static void lowerAxisQuery(RuntimeModule &rt, Operation *op, MeshOp mesh,
                           StringRef axis, StringRef entry) {
  OpLowering l(rt, op);
  Value meshHandle = rt.loadHandle(l.b, l.loc, rt.getMeshGlobal(mesh));
  Value axisIndex = rt.constI64(l.b, l.loc, *mesh.getAxisIndex(axis));
  Value v = l.callForIndex(entry, {meshHandle, axisIndex});
  op->getResult(0).replaceAllUsesWith(v);
  op->erase();
}

namespace {

struct ConvertMeshToRuntimePass
    : public mesh::impl::ConvertMeshToRuntimeBase<ConvertMeshToRuntimePass> {
  using ConvertMeshToRuntimeBase::ConvertMeshToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    RuntimeModule rt(module);
    rt.onStream = onStream;

    // Everything left for the runtime must be memref-form and partitioned.
    SmallVector<Operation *> work;
    bool failedCheck = false;
    module.walk([&](Operation *op) {
      if (isa<ShardOp>(op)) {
        op->emitOpError("must be partitioned away (mesh-partition) before "
                        "convert-mesh-to-runtime");
        failedCheck = true;
      } else if (isa<CollectiveOpInterface>(op)) {
        if (isa<TensorType>(op->getResult(0).getType())) {
          op->emitOpError(
              "works on tensors; bufferize the program "
              "(one-shot-bufferize) before convert-mesh-to-runtime");
          failedCheck = true;
        } else {
          work.push_back(op);
        }
      } else if (isa<BarrierOp, AxisIndexOp, AxisSizeOp>(op)) {
        work.push_back(op);
      }
    });
    if (failedCheck)
      return signalPassFailure();

    if (failed(rt.checkReservedSymbols(initSymbol, finiSymbol)))
      return signalPassFailure();

    // Declare every mesh, used or not: declaring checks it against the world.
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    for (MeshOp mesh : meshes)
      rt.getMeshGlobal(mesh);

    for (Operation *op : work) {
      auto meshRef = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
      MeshOp mesh = lookupMesh(op, meshRef, &symbols);
      if (!mesh) {
        op->emitOpError() << "refers to " << meshRef
                          << ", which is not a mesh of this module";
        return signalPassFailure();
      }
      if (auto coll = dyn_cast<CollectiveOpInterface>(op)) {
        if (failed(lowerCollective(rt, coll, mesh)))
          return signalPassFailure();
        continue;
      }
      if (auto barrier = dyn_cast<BarrierOp>(op))
        lowerBarrier(rt, barrier, mesh);
      else if (auto index = dyn_cast<AxisIndexOp>(op))
        lowerAxisQuery(rt, op, mesh, index.getAxis(), "meshrt_mesh_coordinate");
      else
        lowerAxisQuery(rt, op, mesh, cast<AxisSizeOp>(op).getAxis(),
                       "meshrt_mesh_axis_size");
    }

    if (!meshes.empty()) {
      if (failed(rt.emitInitAndFini(initSymbol, finiSymbol)))
        return signalPassFailure();
      if (initInMain)
        callFromMain(rt);
    }
    for (MeshOp mesh : meshes)
      mesh.erase();
  }

  /// Calls the start-up function at the entry of `main` and the shut-down
  /// function before each of its returns.
  void callFromMain(RuntimeModule &rt) {
    auto main = dyn_cast_or_null<FunctionOpInterface>(
        SymbolTable::lookupSymbolIn(rt.module, "main"));
    if (!main || main.isExternal())
      return;
    auto init = rt.module.lookupSymbol<LLVM::LLVMFuncOp>(initSymbol);
    auto fini = rt.module.lookupSymbol<LLVM::LLVMFuncOp>(finiSymbol);
    OpBuilder b(main.getContext());
    b.setInsertionPointToStart(&main.getFunctionBody().front());
    LLVM::CallOp::create(b, main.getLoc(), init, ValueRange());
    main.walk([&](Operation *op) {
      if (op->hasTrait<OpTrait::ReturnLike>() &&
          op->getParentOp() == main.getOperation()) {
        b.setInsertionPoint(op);
        LLVM::CallOp::create(b, op->getLoc(), fini, ValueRange());
      }
    });
  }
};

} // namespace

//===- DeviceMemory.cpp - buffers to device memory, stream-ordered --------===//
//
// The host-to-device rewrite of --mesh-to-nvvm, after kernel outlining:
// allocations, frees, copies and kernel launches become asynchronous GPU ops
// on the runtime's shared stream (constants already have their device copies,
// mesh-gpu-device-constants), and each function synchronises the stream once
// before it returns.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/HostBuffers.h"
#include "mesh/Conversion/Passes.h"
#include "mesh/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUDEVICEMEMORY
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// Rewrites one host function; the stream is fetched on first need.
class DeviceFunction {
public:
  DeviceFunction(ModuleOp module, mesh::RuntimeFunctions &runtime,
                 func::FuncOp func)
      : module(module), runtime(runtime), func(func), ctx(func.getContext()),
        ptrType(LLVM::LLVMPointerType::get(ctx)),
        i64Type(IntegerType::get(ctx, 64)) {}

  LogicalResult run();

private:
  /// True when the function has anything to run on the device.
  bool needsDevice();
  /// Sets `stream` and `token`: the stream that convert-mesh-to-runtime
  /// already fetched at function entry when it comes before every op in
  /// `ops`, else a fetch of its own at function entry (one runtime call per
  /// function call, not two).
  void fetchStream(ArrayRef<Operation *> ops);
  /// Declares (once) mgpuMemcpy, of MLIR's GPU runtime interface (which
  /// libmeshrt implements; it is not part of meshrt.h).
  LLVM::LLVMFuncOp getMemcpy();
  /// Replaces a host read of one element of a device buffer by a copy of the
  /// element to a host slot on the stream, a synchronisation, and a read of
  /// the slot.
  LogicalResult readToHost(memref::LoadOp load);

  ModuleOp module;
  mesh::RuntimeFunctions &runtime;
  func::FuncOp func;
  MLIRContext *ctx;
  Type ptrType, i64Type;
  Value stream, token;
};

} // namespace

/// True for a host op that touches device memory once buffers are on the
/// device (host buffers stay where they are), a stream-ordered runtime call,
/// or a call of a compiled function (which may leave work on the stream
/// for this function's synchronisation).
static bool isDeviceWork(Operation *op) {
  if (auto alloc = dyn_cast<memref::AllocOp>(op))
    return !mesh::isHostBuffer(alloc.getResult());
  if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
    return !mesh::isHostBuffer(dealloc.getMemref());
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return !mesh::isHostBuffer(load.getMemref());
  if (isa<memref::CopyOp, memref::GetGlobalOp, gpu::LaunchFuncOp>(op))
    return true;
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    return callee && !callee.isExternal();
  }
  if (auto call = dyn_cast<LLVM::CallOp>(op))
    if (std::optional<StringRef> callee = call.getCallee())
      return callee->ends_with("_on_stream");
  return false;
}

bool DeviceFunction::needsDevice() {
  return func
      .walk([](Operation *op) {
        return isDeviceWork(op) ? WalkResult::interrupt()
                                : WalkResult::advance();
      })
      .wasInterrupted();
}

LLVM::LLVMFuncOp DeviceFunction::getMemcpy() {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>("mgpuMemcpy"))
    return fn;
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  auto fn = LLVM::LLVMFuncOp::create(
      b, module.getLoc(), "mgpuMemcpy",
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {ptrType, ptrType, i64Type, ptrType}));
  fn.setPrivate();
  return fn;
}

void DeviceFunction::fetchStream(ArrayRef<Operation *> ops) {
  Block &entry = func.getBody().front();
  Location loc = func.getLoc();
  // The conversion's fetch: meshrt_gpu_stream(slot), then a load of the slot.
  for (Operation &op : entry) {
    auto call = dyn_cast<LLVM::CallOp>(op);
    if (!call || call.getCallee() != "meshrt_gpu_stream")
      continue;
    Value slot = call.getOperand(0);
    for (Operation *next = call->getNextNode(); next && !stream;
         next = next->getNextNode()) {
      auto load = dyn_cast<LLVM::LoadOp>(next);
      if (load && load.getAddr() == slot && load.getType() == ptrType &&
          llvm::all_of(ops, [&](Operation *user) {
            Operation *at = entry.findAncestorOpInBlock(*user);
            return at && load->isBeforeInBlock(at);
          }))
        stream = load.getResult();
    }
    break;
  }
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  if (stream) {
    b.setInsertionPointAfterValue(stream);
  } else {
    Value one =
        LLVM::ConstantOp::create(b, loc, i64Type, b.getI64IntegerAttr(1));
    Value slot = LLVM::AllocaOp::create(b, loc, ptrType, ptrType, one);
    runtime.callChecked<mesh::RuntimeEntry::meshrt_gpu_stream>(b, loc, {slot});
    stream = LLVM::LoadOp::create(b, loc, ptrType, slot);
  }
  token = UnrealizedConversionCastOp::create(
              b, loc, gpu::AsyncTokenType::get(ctx), stream)
              .getResult(0);
}

LogicalResult DeviceFunction::readToHost(memref::LoadOp load) {
  Location loc = load.getLoc();
  Type elem = load.getMemRefType().getElementType();
  Type stored = elem.isIndex() ? i64Type : elem;
  if (!stored.isIntOrFloat())
    return load.emitOpError()
           << "reads a device buffer of " << elem
           << " on the host, which has no device-to-host lowering";
  // The slot lives in the entry block, so a read inside a loop reuses it.
  OpBuilder entry(stream.getContext());
  entry.setInsertionPointAfterValue(stream);
  Value one =
      LLVM::ConstantOp::create(entry, loc, i64Type, entry.getI64IntegerAttr(1));
  Value slot = LLVM::AllocaOp::create(entry, loc, ptrType, stored, one);

  // The element's address: aligned pointer + offset + sum(index * stride).
  OpBuilder b(load);
  auto meta =
      memref::ExtractStridedMetadataOp::create(b, loc, load.getMemref());
  Value linear = meta.getOffset();
  for (auto [index, stride] : llvm::zip(load.getIndices(), meta.getStrides()))
    linear = arith::AddIOp::create(
        b, loc, linear, arith::MulIOp::create(b, loc, index, stride));
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, load.getMemref());
  Value baseInt = arith::IndexCastOp::create(b, loc, i64Type, base);
  Value basePtr = LLVM::IntToPtrOp::create(b, loc, ptrType, baseInt);
  LLVM::GEPArg offset(
      arith::IndexCastOp::create(b, loc, i64Type, linear).getResult());
  Value source = LLVM::GEPOp::create(b, loc, ptrType, stored, basePtr,
                                     ArrayRef<LLVM::GEPArg>(offset));
  Value bytes = LLVM::ConstantOp::create(
      b, loc, i64Type,
      b.getI64IntegerAttr((stored.getIntOrFloatBitWidth() + 7) / 8));

  LLVM::CallOp::create(b, loc, getMemcpy(),
                       ValueRange{slot, source, bytes, stream});
  runtime.callChecked<mesh::RuntimeEntry::meshrt_stream_synchronize>(b, loc,
                                                                     {stream});
  Value value = LLVM::LoadOp::create(b, loc, stored, slot);
  if (elem.isIndex())
    value = arith::IndexCastOp::create(b, loc, elem, value);
  load.replaceAllUsesWith(value);
  load.erase();
  return success();
}

LogicalResult DeviceFunction::run() {
  if (func.isExternal() || !needsDevice())
    return success();
  // A private function's callers are compiled functions, which
  // synchronise before they return: the function itself need not.
  bool syncAtReturn = func.isPublic();
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if ((isDeviceWork(op) && !isa<func::CallOp>(op)) ||
        (syncAtReturn && isa<func::ReturnOp>(op)))
      ops.push_back(op);
  });
  fetchStream(ops);
  Type tokenType = token.getType();
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      auto device = gpu::AllocOp::create(
          b, loc, alloc.getType(), tokenType, ValueRange{token},
          alloc.getDynamicSizes(), alloc.getSymbolOperands());
      alloc.replaceAllUsesWith(device.getMemref());
      alloc.erase();
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      gpu::DeallocOp::create(b, loc, tokenType, ValueRange{token},
                             dealloc.getMemref());
      dealloc.erase();
    } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      auto source = cast<MemRefType>(copy.getSource().getType());
      auto target = cast<MemRefType>(copy.getTarget().getType());
      if (!source.getLayout().isIdentity() || !target.getLayout().isIdentity())
        return copy.emitOpError()
               << "copies a strided buffer, which has no device lowering; "
                  "only contiguous copies become gpu.memcpy";
      gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{token},
                            copy.getTarget(), copy.getSource());
      copy.erase();
    } else if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
      // A host global is only the source of a copy to the device.
      for (Operation *user : get->getUsers())
        if (!isa<memref::CopyOp, gpu::MemcpyOp>(user))
          return get.emitOpError()
                 << "is used on the device by '" << user->getName()
                 << "'; mesh-gpu-device-constants must give it a device "
                    "copy first";
    } else if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      if (launch.getAsyncToken())
        continue;
      std::optional<gpu::KernelDim3> cluster;
      if (launch.hasClusterSize())
        cluster = launch.getClusterSizeOperandValues();
      gpu::LaunchFuncOp::create(
          b, loc, launch.getKernel(), launch.getGridSizeOperandValues(),
          launch.getBlockSizeOperandValues(),
          launch.getDynamicSharedMemorySize(), launch.getKernelOperands(),
          tokenType, ValueRange{token}, cluster);
      launch.erase();
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (failed(readToHost(load)))
        return failure();
    } else if (isa<func::ReturnOp>(op)) {
      runtime.callChecked<mesh::RuntimeEntry::meshrt_stream_synchronize>(
          b, loc, {stream});
    }
  }
  return success();
}

namespace {

struct MeshGpuDeviceMemoryPass
    : public mesh::impl::MeshGpuDeviceMemoryBase<MeshGpuDeviceMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    mesh::RuntimeFunctions runtime(module);
    if (failed(runtime.verifyDeclarations(getArgument())))
      return signalPassFailure();
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs)
      if (failed(DeviceFunction(module, runtime, func).run()))
        return signalPassFailure();
  }
};

} // namespace

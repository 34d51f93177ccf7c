//===- DeviceConstants.cpp - a device copy of each constant, made once ----===//
//
// Part of the device stage of --mesh-to-nvvm, after the kernels are formed:
// every host memref.get_global of a constant is replaced by a copy of it,
// allocated and filled the first time the function runs and kept in a
// pointer global, and freed by the module's shut-down. The copy is a plain
// memref.alloc + memref.copy, so that mesh-gpu-device-memory puts it on the
// device like any buffer, and --mesh-to-nvvm{host-kernels} runs the same
// logic on the CPU.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUDEVICECONSTANTS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// The pointer global that holds the copy of the constant `name` (null until
/// the first use), shared by every function that uses the constant.
LLVM::GlobalOp getPointerGlobal(ModuleOp module, Location loc, StringRef name) {
  std::string symbol = ("__mesh_device_" + name).str();
  if (auto global = module.lookupSymbol<LLVM::GlobalOp>(symbol))
    return global;
  MLIRContext *ctx = module.getContext();
  Type ptrType = LLVM::LLVMPointerType::get(ctx);
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  auto global =
      LLVM::GlobalOp::create(b, loc, ptrType, /*isConstant=*/false,
                             LLVM::Linkage::Internal, symbol, Attribute());
  b.setInsertionPointToStart(b.createBlock(&global.getInitializerRegion()));
  LLVM::ReturnOp::create(b, loc,
                         LLVM::ZeroOp::create(b, loc, ptrType).getResult());
  return global;
}

/// Replaces the uses of the constant `get` by its copy: allocated and filled
/// on the first use, then a descriptor of the remembered copy. Returns the
/// pointer global that remembers it.
LLVM::GlobalOp replaceByCopy(ModuleOp module,
                             const LLVMTypeConverter &typeConverter,
                             memref::GetGlobalOp get) {
  MLIRContext *ctx = get.getContext();
  Location loc = get.getLoc();
  auto type = cast<MemRefType>(get.getType());
  Type ptrType = LLVM::LLVMPointerType::get(ctx);
  Type i64Type = IntegerType::get(ctx, 64);
  LLVM::GlobalOp global = getPointerGlobal(module, loc, get.getName());

  SmallVector<OpOperand *> uses;
  for (OpOperand &use : get->getUses())
    uses.push_back(&use);
  OpBuilder b(ctx);
  b.setInsertionPointAfter(get);
  Value addr = LLVM::AddressOfOp::create(b, loc, global);
  Value current = LLVM::LoadOp::create(b, loc, ptrType, addr);
  Value null = LLVM::ZeroOp::create(b, loc, ptrType);
  Value missing =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, current, null);
  auto ifOp = scf::IfOp::create(b, loc, missing, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    Value copy = memref::AllocOp::create(b, loc, type);
    memref::CopyOp::create(b, loc, get.getResult(), copy);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, copy);
    Value asInt = arith::IndexCastOp::create(b, loc, i64Type, base);
    Value ptr = LLVM::IntToPtrOp::create(b, loc, ptrType, asInt);
    LLVM::StoreOp::create(b, loc, ptr, addr);
  }
  // A descriptor of the copy, as the memref lowering lays it out.
  Value pointer = LLVM::LoadOp::create(b, loc, ptrType, addr);
  Value desc =
      MemRefDescriptor::fromStaticShape(b, loc, typeConverter, type, pointer);
  Value replacement =
      UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0);
  for (OpOperand *use : uses)
    use->set(replacement);
  return global;
}

/// Frees every copy at the start of `fini` (before it finalizes the
/// runtime) and clears its pointer: with `mgpuMemFree` on the shared stream,
/// or `free` for copies in host memory. Both take null.
void freeAtShutDown(LLVM::LLVMFuncOp fini, ArrayRef<LLVM::GlobalOp> globals,
                    bool hostMemory) {
  ModuleOp module = fini->getParentOfType<ModuleOp>();
  MLIRContext *ctx = module.getContext();
  Location loc = fini.getLoc();
  Type ptrType = LLVM::LLVMPointerType::get(ctx);
  OpBuilder b(ctx);
  StringRef freeName = hostMemory ? "free" : "mgpuMemFree";
  auto freeFn = module.lookupSymbol<LLVM::LLVMFuncOp>(freeName);
  if (!freeFn) {
    b.setInsertionPointToStart(module.getBody());
    SmallVector<Type> params(hostMemory ? 1 : 2, ptrType);
    freeFn = LLVM::LLVMFuncOp::create(
        b, loc, freeName,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params));
  }
  b.setInsertionPointToStart(&fini.getBody().front());
  Value null = LLVM::ZeroOp::create(b, loc, ptrType);
  for (LLVM::GlobalOp global : globals) {
    Value addr = LLVM::AddressOfOp::create(b, loc, global);
    Value ptr = LLVM::LoadOp::create(b, loc, ptrType, addr);
    SmallVector<Value> args{ptr};
    if (!hostMemory)
      args.push_back(null); // The shared stream.
    LLVM::CallOp::create(b, loc, freeFn, args);
    LLVM::StoreOp::create(b, loc, null, addr);
  }
}

struct MeshGpuDeviceConstantsPass
    : public mesh::impl::MeshGpuDeviceConstantsBase<
          MeshGpuDeviceConstantsPass> {
  using MeshGpuDeviceConstantsBase::MeshGpuDeviceConstantsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<memref::GetGlobalOp> gets;
    WalkResult result =
        module.walk([&](memref::GetGlobalOp get) {
          // Host code only: kernels are not outlined yet.
          if (!get->getParentOfType<func::FuncOp>() ||
              get->getParentOfType<gpu::LaunchOp>())
            return WalkResult::advance();
          auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
              get, get.getNameAttr());
          if (!global || !global.getConstant()) {
            get.emitOpError()
                << "refers to a mutable host global, which kernels cannot use";
            return WalkResult::interrupt();
          }
          MemRefType type = get.getType();
          if (!type.hasStaticShape() || !type.getLayout().isIdentity()) {
            get.emitOpError() << "has the type " << type
                              << "; a device copy needs a static shape and an "
                                 "identity layout";
            return WalkResult::interrupt();
          }
          gets.push_back(get);
          return WalkResult::advance();
        });
    if (result.wasInterrupted())
      return signalPassFailure();
    LLVMTypeConverter typeConverter(module.getContext());
    SetVector<LLVM::GlobalOp> globals;
    for (memref::GetGlobalOp get : gets)
      globals.insert(replaceByCopy(module, typeConverter, get));
    auto fini = module.lookupSymbol<LLVM::LLVMFuncOp>(finiSymbol);
    if (fini && !fini.isExternal() && !globals.empty())
      freeAtShutDown(fini, globals.getArrayRef(), hostMemory);
  }
};

} // namespace

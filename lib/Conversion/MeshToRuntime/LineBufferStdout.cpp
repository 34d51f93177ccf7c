//===- LineBufferStdout.cpp - setvbuf(stdout) at the entry of main --------===//
//
// Makes stdout line-buffered at the entry of main. Under mpirun stdout is a
// pipe, and a message printed just before an abort (a failed cf.assert, such
// as a runtime call's status check) would otherwise be lost in the buffer.
// This is the C library's business, not the runtime's, so it is a pass of
// its own rather than part of convert-mesh-to-runtime.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cstdio>

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHLINEBUFFERSTDOUT
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

struct MeshLineBufferStdoutPass
    : public mesh::impl::MeshLineBufferStdoutBase<MeshLineBufferStdoutPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = dyn_cast_or_null<FunctionOpInterface>(
        SymbolTable::lookupSymbolIn(module, "main"));
    if (!main || main.isExternal())
      return;

    FailureOr<LLVM::GlobalOp> stdoutGlobal = getStdout(module);
    FailureOr<LLVM::LLVMFuncOp> setvbuf = getSetvbuf(module);
    if (failed(stdoutGlobal) || failed(setvbuf))
      return signalPassFailure();

    Location loc = main.getLoc();
    auto b = OpBuilder::atBlockBegin(&main.getFunctionBody().front());
    Type ptrType = LLVM::LLVMPointerType::get(&getContext());
    Value addr = LLVM::AddressOfOp::create(b, loc, *stdoutGlobal);
    Value stream = LLVM::LoadOp::create(b, loc, ptrType, addr);
    Value null = LLVM::ZeroOp::create(b, loc, ptrType);
    Value mode = LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                          b.getI32IntegerAttr(_IOLBF));
    Value size = LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                          b.getI64IntegerAttr(0));
    LLVM::CallOp::create(b, loc, *setvbuf,
                         ValueRange{stream, null, mode, size});
  }

  /// The C library's `stdout`, declared as an external global unless the
  /// module has it.
  static FailureOr<LLVM::GlobalOp> getStdout(ModuleOp module) {
    Operation *existing = module.lookupSymbol("stdout");
    if (auto global = dyn_cast_or_null<LLVM::GlobalOp>(existing))
      return global;
    if (existing)
      return existing->emitError() << "mesh-line-buffer-stdout: the symbol "
                                      "'stdout' is reserved for the C library";
    auto b = OpBuilder::atBlockBegin(module.getBody());
    return LLVM::GlobalOp::create(
        b, module.getLoc(), LLVM::LLVMPointerType::get(module.getContext()),
        /*isConstant=*/false, LLVM::Linkage::External, "stdout", Attribute());
  }

  /// `int setvbuf(FILE *, char *, int, size_t)`, declared unless the module
  /// has it.
  static FailureOr<LLVM::LLVMFuncOp> getSetvbuf(ModuleOp module) {
    auto b = OpBuilder::atBlockBegin(module.getBody());
    Type ptrType = LLVM::LLVMPointerType::get(module.getContext());
    auto type = LLVM::LLVMFunctionType::get(
        b.getI32Type(), {ptrType, ptrType, b.getI32Type(), b.getI64Type()});
    Operation *existing = module.lookupSymbol("setvbuf");
    auto fn = dyn_cast_or_null<LLVM::LLVMFuncOp>(existing);
    if (fn && fn.getFunctionType() == type)
      return fn;
    if (existing)
      return existing->emitError()
             << "mesh-line-buffer-stdout: the symbol 'setvbuf' is reserved "
                "for the C library's setvbuf, of type "
             << type;
    fn = LLVM::LLVMFuncOp::create(b, module.getLoc(), "setvbuf", type);
    fn.setPrivate();
    return fn;
  }
};

} // namespace

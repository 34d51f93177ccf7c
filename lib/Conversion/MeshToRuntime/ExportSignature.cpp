//===- ExportSignature.cpp - Per-device signatures for loaders ------------===//
//
// Records, as a JSON string in a global of the module, what a loader needs
// to call the exported functions through their C interface: each argument's
// and result's element type and per-device shape. The Python package reads
// it from a library made by `mesh-compile --shared`.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/Support/JSON.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHEXPORTSIGNATURE
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// The name of a scalar or element type the C interface carries, or "".
std::string elementName(Type t) {
  if (t.isIndex())
    return "index";
  if (auto i = dyn_cast<IntegerType>(t))
    return (i.isUnsigned() ? "u" : "i") + std::to_string(i.getWidth());
  if (t.isBF16())
    return "bf16";
  if (auto f = dyn_cast<FloatType>(t))
    if (f.getWidth() == 16 || f.getWidth() == 32 || f.getWidth() == 64)
      return "f" + std::to_string(f.getWidth());
  return "";
}

/// One argument or result: {"dtype", "shape"} (shape null for a scalar), or
/// why the C interface cannot carry it.
FailureOr<llvm::json::Value> describe(Type t, std::string &why) {
  Type element = t;
  std::optional<ArrayRef<int64_t>> shape;
  if (auto shaped = dyn_cast<ShapedType>(t)) {
    if (!isa<RankedTensorType, MemRefType>(t) || !shaped.hasRank()) {
      why = "a value of type other than a ranked tensor, a memref or a scalar";
      return failure();
    }
    if (auto memref = dyn_cast<MemRefType>(t);
        memref && !memref.getLayout().isIdentity()) {
      why = "a memref with a non-identity layout";
      return failure();
    }
    element = shaped.getElementType();
    shape = shaped.getShape();
  }
  std::string name = elementName(element);
  if (name.empty()) {
    std::string s;
    llvm::raw_string_ostream os(s);
    element.print(os);
    why = "element type " + s + " has no C interface type";
    return failure();
  }
  llvm::json::Object o{{"dtype", name}};
  if (shape) {
    llvm::json::Array dims;
    for (int64_t d : *shape)
      dims.push_back(ShapedType::isDynamic(d) ? int64_t(-1) : d);
    o["shape"] = std::move(dims);
  } else {
    o["shape"] = nullptr;
  }
  return llvm::json::Value(std::move(o));
}

struct MeshExportSignaturePass
    : public mesh::impl::MeshExportSignatureBase<MeshExportSignaturePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (Operation *existing = SymbolTable::lookupSymbolIn(module, symbol)) {
      existing->emitError() << "mesh-export-signature: the module already "
                               "has a symbol '"
                            << symbol << "'";
      return signalPassFailure();
    }
    llvm::json::Array functions;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn.isPublic() ||
          !fn->hasAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName()))
        continue;
      llvm::json::Object entry{{"name", fn.getSymName().str()}};
      std::string why;
      auto list = [&](TypeRange types,
                      const char *what) -> std::optional<llvm::json::Array> {
        llvm::json::Array out;
        for (auto [i, t] : llvm::enumerate(types)) {
          FailureOr<llvm::json::Value> v = describe(t, why);
          if (failed(v)) {
            why = std::string(what) + " " + std::to_string(i) + " is " + why;
            return std::nullopt;
          }
          out.push_back(std::move(*v));
        }
        return out;
      };
      std::optional<llvm::json::Array> args =
          list(fn.getArgumentTypes(), "argument");
      std::optional<llvm::json::Array> results =
          args ? list(fn.getResultTypes(), "result") : std::nullopt;
      if (args && results) {
        entry["args"] = std::move(*args);
        entry["results"] = std::move(*results);
      } else {
        entry["unsupported"] = why;
      }
      functions.push_back(std::move(entry));
    }
    llvm::json::Object doc{{"version", 1},
                           {"init", initSymbol},
                           {"fini", finiSymbol},
                           {"memory", deviceBuffers ? "device" : "host"},
                           {"functions", std::move(functions)}};
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(std::move(doc));
    text.push_back('\0');

    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto type = LLVM::LLVMArrayType::get(IntegerType::get(&getContext(), 8),
                                         text.size());
    LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                           LLVM::Linkage::External, symbol,
                           b.getStringAttr(text));
  }
};

} // namespace

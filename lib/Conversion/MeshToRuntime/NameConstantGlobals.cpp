//===- NameConstantGlobals.cpp - constants' globals in a stable order -----===//
//
// one-shot-bufferize makes a private constant memref.global per constant
// tensor and numbers the names to keep them unique. It bufferizes the
// functions that call nothing in the iteration order of a DenseMap keyed by
// their operations' addresses, so the numbers and the globals' order in the
// module changed from one run of the compiler to the next. This pass, run
// right after it, renames those globals by their first use in the module and
// sorts them the same way: the same program always compiles to the same
// output.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHNAMECONSTANTGLOBALS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// `__constant_<shape>x<element>`, as bufferization spells the stem.
std::string constantStem(MemRefType type) {
  std::string stem = "__constant_";
  llvm::raw_string_ostream os(stem);
  for (int64_t size : type.getShape())
    os << size << 'x';
  os << type.getElementType();
  return stem;
}

struct MeshNameConstantGlobalsPass
    : public mesh::impl::MeshNameConstantGlobalsBase<
          MeshNameConstantGlobalsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The candidates: private constant globals directly in the module, with
    // bufferization's names (a global the program named keeps its name).
    llvm::StringMap<memref::GlobalOp> candidates;
    for (auto global : module.getOps<memref::GlobalOp>())
      if (global.getConstant() && global.isPrivate() &&
          global.getSymName().starts_with("__constant_"))
        candidates[global.getSymName()] = global;
    if (candidates.empty())
      return;

    // Every use of a symbol in one walk, in program order (which the names
    // follow; SymbolTable::getSymbolUses gives another order): a candidate
    // used other than by a memref.get_global keeps its name and place.
    llvm::MapVector<memref::GlobalOp, SmallVector<memref::GetGlobalOp>> used;
    llvm::DenseSet<Operation *> pinned;
    module.walk([&](Operation *op) {
      auto get = dyn_cast<memref::GetGlobalOp>(op);
      if (get && SymbolTable::getNearestSymbolTable(op) == module) {
        auto it = candidates.find(get.getName());
        if (it != candidates.end())
          used[it->second].push_back(get);
        return;
      }
      if (op == module.getOperation() || isa<memref::GlobalOp>(op))
        return;
      for (NamedAttribute attr : op->getAttrs())
        attr.getValue().walk([&](SymbolRefAttr ref) {
          auto it = candidates.find(ref.getRootReference().getValue());
          if (it != candidates.end())
            pinned.insert(it->second);
        });
    });

    // Names in first-use order, none taken by another symbol.
    llvm::StringSet<> taken;
    for (Operation &op : module.getBody()->getOperations())
      if (auto name =
              op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
        taken.insert(name.getValue());
    SmallVector<memref::GlobalOp> order;
    for (auto &entry : used)
      if (!pinned.contains(entry.first))
        order.push_back(entry.first);
    for (memref::GlobalOp global : order)
      taken.erase(global.getSymName());

    MLIRContext *ctx = module.getContext();
    Block *body = module.getBody();
    Operation *insertAt = &body->front();
    unsigned count = 0;
    for (memref::GlobalOp global : order) {
      std::string stem = constantStem(global.getType());
      std::string name;
      do
        name = stem + "_" + std::to_string(count++);
      while (taken.contains(name));
      taken.insert(name);
      auto attr = StringAttr::get(ctx, name);
      global.setSymNameAttr(attr);
      for (memref::GetGlobalOp get : used[global])
        get.setNameAttr(FlatSymbolRefAttr::get(attr));
      if (global.getOperation() != insertAt)
        global->moveBefore(insertAt);
      else
        insertAt = insertAt->getNextNode();
    }
  }
};

} // namespace

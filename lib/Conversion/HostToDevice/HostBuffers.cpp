//===- HostBuffers.cpp - buffers only host code touches -------------------===//
//
// The first step of the device stage of --mesh-to-nvvm: marks the buffers
// that stay in host memory because only scalar host code uses them (loads,
// stores, casts, frees, and calls that pass them to a private function
// using them the same way). The rest of the device stage leaves them alone.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/HostBuffers.h"
#include "mesh/Conversion/Passes.h"
#include "mesh/Dialect/Mesh/IR/MeshDialect.h"

#include "mesh/Conversion/BufferRoots.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUHOSTBUFFERS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

bool mlir::mesh::isHostBuffer(Value buffer) {
  while (Operation *def = buffer.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      buffer = view.getViewSource();
      continue;
    }
    if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(def)) {
      buffer = meta.getSource();
      continue;
    }
    return isa<memref::AllocOp>(def) &&
           def->hasAttr(MeshDialect::getHostBufferAttrName());
  }
  auto arg = cast<BlockArgument>(buffer);
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && arg.getOwner()->isEntryBlock() &&
         func.getArgAttr(arg.getArgNumber(),
                         MeshDialect::getHostBufferAttrName());
}

namespace {

/// A parameter of a private function: (function, argument number).
using Param = std::pair<Operation *, unsigned>;
/// What a candidate's uses depend on: the parameters it is passed to, and
/// the outermost ops around its uses that could become one-thread kernels,
/// which must touch candidates only: a nest that also touches a device
/// buffer becomes a kernel.
struct Uses {
  SmallVector<Param> passedTo;
  SmallVector<Operation *> nests;
};
using Candidates = DenseMap<Operation *, Uses>;
using ParamCandidates = DenseMap<Param, Uses>;

/// Finds the host-only buffers of a module.
class HostBufferAnalysis {
public:
  explicit HostBufferAnalysis(ModuleOp module)
      : module(module), symbols(module) {}

  /// Marks the buffers that stay on the host.
  void run();

private:
  /// True when every use of `buffer` (through views) is scalar host code;
  /// records in `uses` the parameters it is passed to and its nests.
  bool usedOnHostOnly(Value buffer, Uses &uses);
  /// True when the candidate's parameters are kept and its nests touch
  /// candidates only.
  bool stillHostOnly(const Uses &uses) const;
  /// True when `value` is (a view of) a candidate allocation or parameter.
  bool isCandidate(Value value) const;
  /// True when every call of `key`'s function passes a candidate there.
  bool everyCallPassesCandidate(Param key) const;

  ModuleOp module;
  SymbolTable symbols;
  Candidates allocs;
  ParamCandidates params;
};

} // namespace

bool HostBufferAnalysis::usedOnHostOnly(Value buffer, Uses &uses) {
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    Operation *nest = nullptr;
    for (Operation *a = user->getParentOp(); a && !isa<func::FuncOp>(a);
         a = a->getParentOp())
      if (mesh::canRunAsSerialKernel(a))
        nest = a;
    if (nest)
      uses.nests.push_back(nest);
    // Anything under an scf.parallel, in a linalg op or in a launch becomes
    // device code.
    if (user->getParentOfType<scf::ParallelOp>() ||
        user->getParentOfType<linalg::LinalgOp>() ||
        user->getParentOfType<gpu::LaunchOp>())
      return false;
    if (isa<memref::LoadOp, memref::DeallocOp, memref::DimOp>(user))
      continue;
    if (auto store = dyn_cast<memref::StoreOp>(user)) {
      if (store.getMemRef() != use.get())
        return false;
      continue;
    }
    if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
      if (view.getViewSource() != use.get() ||
          !usedOnHostOnly(view->getResult(0), uses))
        return false;
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(user)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal() || callee.isPublic())
        return false;
      uses.passedTo.push_back({callee, use.getOperandNumber()});
      continue;
    }
    return false;
  }
  return true;
}

bool HostBufferAnalysis::isCandidate(Value value) const {
  value = mesh::getViewRoot(value);
  if (Operation *def = value.getDefiningOp())
    return allocs.count(def);
  auto arg = cast<BlockArgument>(value);
  Operation *owner = arg.getOwner()->getParentOp();
  return isa<func::FuncOp>(owner) && arg.getOwner()->isEntryBlock() &&
         params.count({owner, arg.getArgNumber()});
}

bool HostBufferAnalysis::stillHostOnly(const Uses &uses) const {
  if (!llvm::all_of(uses.passedTo,
                    [&](Param p) { return params.count(p) != 0; }))
    return false;
  return llvm::all_of(uses.nests, [&](Operation *nest) {
    return !nest->walk([&](Operation *op) {
                  for (Value operand : op->getOperands())
                    if (isa<MemRefType>(operand.getType()) &&
                        !isCandidate(operand))
                      return WalkResult::interrupt();
                  return WalkResult::advance();
                })
                .wasInterrupted();
  });
}

bool HostBufferAnalysis::everyCallPassesCandidate(Param key) const {
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(key.first, module);
  if (!uses)
    return false;
  return llvm::all_of(*uses, [&](const SymbolTable::SymbolUse &use) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    return call && isCandidate(call.getOperand(key.second));
  });
}

void HostBufferAnalysis::run() {
  // Candidates: allocations whose uses are host code, and the private
  // parameters used the same way. Then drop, until nothing changes, a
  // parameter some call passes a non-candidate, a candidate passed to a
  // dropped parameter, and a candidate used in a nest that touches a
  // non-candidate.
  module.walk([&](memref::AllocOp alloc) {
    Uses uses;
    if (usedOnHostOnly(alloc.getResult(), uses))
      allocs[alloc] = std::move(uses);
  });
  module.walk([&](func::FuncOp func) {
    if (func.isExternal() || func.isPublic())
      return;
    for (BlockArgument arg : func.getArguments()) {
      Uses uses;
      if (isa<MemRefType>(arg.getType()) && usedOnHostOnly(arg, uses))
        params[{func, arg.getArgNumber()}] = std::move(uses);
    }
  });
  bool changed = true;
  while (changed) {
    SmallVector<Param> dropParams;
    for (auto &[key, uses] : params)
      if (!stillHostOnly(uses) || !everyCallPassesCandidate(key))
        dropParams.push_back(key);
    SmallVector<Operation *> dropAllocs;
    for (auto &[alloc, uses] : allocs)
      if (!stillHostOnly(uses))
        dropAllocs.push_back(alloc);
    for (Param key : dropParams)
      params.erase(key);
    for (Operation *alloc : dropAllocs)
      allocs.erase(alloc);
    changed = !dropParams.empty() || !dropAllocs.empty();
  }
  UnitAttr unit = UnitAttr::get(module.getContext());
  for (auto &entry : allocs)
    entry.first->setAttr(mesh::MeshDialect::getHostBufferAttrName(), unit);
  for (auto &entry : params)
    cast<func::FuncOp>(entry.first.first)
        .setArgAttr(entry.first.second,
                    mesh::MeshDialect::getHostBufferAttrName(), unit);
}

namespace {

struct MeshGpuHostBuffersPass
    : public mesh::impl::MeshGpuHostBuffersBase<MeshGpuHostBuffersPass> {
  void runOnOperation() override { HostBufferAnalysis(getOperation()).run(); }
};

} // namespace

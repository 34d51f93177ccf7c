//===- AutoShard.cpp - choosing every sharding by an exact minimum --------===//
//
// mesh-auto-shard: the pass. Reads the options (the cost model), finds each
// annotated function's mesh, and has a FunctionPlanner (AutoShardPlanner.h)
// choose and write its plan.
//
//===----------------------------------------------------------------------===//

#include "AutoShardPlanner.h"
#include "ShardingSupport.h"

#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <optional>

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_AUTOSHARD
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;
using namespace mlir::mesh::autoshard;

namespace {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// `text` as a number times its prefix's power (K, M, G, T: 10^3..; Ki, Mi,
/// Gi, Ti: 2^10..), followed by `unit` (optional). None when malformed.
std::optional<double> parseQuantity(StringRef text, StringRef unit) {
  text = text.trim();
  if (!unit.empty())
    text.consume_back(unit);
  static const std::pair<StringRef, double> prefixes[] = {
      {"Ki", 1024.0},       {"Mi", 1048576.0},
      {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"K", 1e3},           {"k", 1e3},
      {"M", 1e6},           {"G", 1e9},
      {"T", 1e12}};
  double scale = 1;
  for (auto [p, s] : prefixes)
    if (text.consume_back(p)) {
      scale = s;
      break;
    }
  std::string number = text.trim().str();
  if (number.empty())
    return std::nullopt;
  char *end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (*end != '\0' || !(value >= 0) || std::isinf(value))
    return std::nullopt;
  return value * scale;
}

/// A time (`10us`, `2ms`, `500ns`, `1s`) in picoseconds.
std::optional<int64_t> parseTimePs(StringRef text) {
  text = text.trim();
  static const std::pair<StringRef, double> units[] = {
      {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
  for (auto [u, ps] : units)
    if (text.consume_back(u)) {
      std::string number = text.trim().str();
      char *end = nullptr;
      double v = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !(v >= 0) || v * ps > 9e18)
        return std::nullopt;
      return static_cast<int64_t>(std::llround(v * ps));
    }
  return std::nullopt;
}

/// Parses `axis=latency:bandwidth,...` into `model`.
LogicalResult parseAxisCosts(StringRef text, CostModel &model,
                             std::string &error) {
  SmallVector<StringRef> entries;
  text.split(entries, ',', -1, false);
  llvm::StringSet<> seen;
  for (StringRef entry : entries) {
    auto [axis, cost] = entry.split('=');
    auto [latency, bandwidth] = cost.split(':');
    std::optional<int64_t> ps = parseTimePs(latency);
    std::optional<double> bw = parseQuantity(bandwidth, "B/s");
    axis = axis.trim();
    if (axis.empty() || !ps || !bw || *bw < 1 || *bw > 9e18) {
      error = "axis-cost: cannot read '" + entry.trim().str() +
              "' (expected axis=latency:bandwidth, as dp=20us:10GB/s)";
      return failure();
    }
    AxisCost c{*ps, static_cast<int64_t>(std::llround(*bw))};
    if (!seen.insert(axis).second) {
      error = "axis-cost: axis '" + axis.str() +
              "' is given twice (once per axis, '*' for the others)";
      return failure();
    }
    if (axis == "*")
      model.fallback = c;
    else
      model.axes[axis] = c;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// True when the user annotated something in `fn`: an argument or result
/// (mesh.sharding, mesh.carried), an op, or a constraint.
bool isAnnotatedFunction(FunctionOpInterface fn) {
  if (findShardingAnnotation(fn))
    return true;
  return llvm::any_of(llvm::seq(fn.getNumArguments()), [&](unsigned i) {
    return static_cast<bool>(fn.getArgAttr(i, "mesh.carried"));
  });
}

/// Fails at the first call in `f` (or what it calls) that closes a cycle.
LogicalResult findRecursion(FunctionOpInterface f,
                            SymbolTableCollection &tables,
                            llvm::SmallPtrSetImpl<Operation *> &onPath,
                            llvm::SmallPtrSetImpl<Operation *> &done) {
  onPath.insert(f);
  WalkResult walked = f->walk([&](CallOpInterface call) {
    FunctionOpInterface callee = getCallee(call, tables);
    if (!callee || callee.isExternal() || done.contains(callee))
      return WalkResult::advance();
    if (onPath.contains(callee)) {
      call->emitError("mesh-auto-shard: the call to @")
          << SymbolTable::getSymbolName(callee).getValue()
          << " recurses: not in the plan space";
      return WalkResult::interrupt();
    }
    return failed(findRecursion(callee, tables, onPath, done))
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  onPath.erase(f);
  done.insert(f);
  return failure(walked.wasInterrupted());
}

/// Inlines calls bottom-up: each callee is flattened once, into a clone
/// with its own calls inlined, and every call gets that clone's body. (One
/// call at a time top-down, each inlining splits the caller's block and
/// moves what follows the call: quadratic in the size of the result, 80 s
/// for 65,536 ops.)
class CallFlattener {
public:
  CallFlattener(ModuleOp module, SymbolTableCollection &tables,
                llvm::SetVector<Operation *> &inlined)
      : interface(module.getContext()), module(module), tables(tables),
        inlined(inlined) {}
  ~CallFlattener() {
    for (auto &entry : flat)
      entry.second->erase();
  }

  /// Inlines every call in `f` (a clone, or the planned function).
  LogicalResult inlineInto(FunctionOpInterface f) {
    SmallVector<CallOpInterface> calls;
    f->walk([&](CallOpInterface call) { calls.push_back(call); });
    for (CallOpInterface call : calls) {
      // (A clone is detached: its calls' symbols are the module's.)
      auto symbol = dyn_cast<SymbolRefAttr>(call.getCallableForCallee());
      FunctionOpInterface callee =
          symbol ? dyn_cast_or_null<FunctionOpInterface>(
                       tables.lookupSymbolIn(module, symbol))
                 : FunctionOpInterface();
      auto name = [&] {
        return symbol ? symbol.getLeafReference().str() : std::string("?");
      };
      if (!callee)
        return call->emitError("mesh-auto-shard: only direct calls to a "
                               "function of the module are in the plan space");
      if (callee.isExternal())
        return call->emitError("mesh-auto-shard: @")
               << name() << " is a declaration: its body is not in the plan "
               << "space (define it, or annotate its caller's values by hand)";
      if (isAnnotatedFunction(callee))
        return call->emitError("mesh-auto-shard: @")
               << name() << " is annotated: inlining it for the plan would "
               << "drop its annotations (annotate the call's operands with "
               << "mesh.shard instead)";
      FailureOr<FunctionOpInterface> body = flattened(callee);
      if (failed(body))
        return failure();
      auto callable = cast<CallableOpInterface>(body->getOperation());
      if (failed(inlineCall(interface, config.getCloneCallback(), call,
                            callable, callable.getCallableRegion())))
        return call->emitError("mesh-auto-shard: the call to @")
               << name() << " cannot be inlined, which the plan needs";
      call->erase();
      inlined.insert(callee);
      if ((ops += sizeOf(*body)) > kMaxOps)
        return f->emitError("mesh-auto-shard: inlining the calls for the "
                            "plan made more than ")
               << kMaxOps << " ops: not in the plan space";
    }
    return success();
  }

private:
  /// A call graph without cycles can still grow exponentially (f calls g
  /// twice, g calls h twice, ...): past this many ops inlined, stop.
  static constexpr size_t kMaxOps = 4'000'000;

  /// `callee` with its calls inlined: a detached clone, made once.
  FailureOr<FunctionOpInterface> flattened(FunctionOpInterface callee) {
    auto it = flat.find(callee);
    if (it != flat.end())
      return cast<FunctionOpInterface>(it->second);
    Operation *copy = callee->clone();
    flat[callee] = copy;
    auto f = cast<FunctionOpInterface>(copy);
    if (failed(inlineInto(f)))
      return failure();
    size_t n = 0;
    f->walk([&](Operation *) { ++n; });
    sizes[copy] = n;
    return f;
  }
  size_t sizeOf(FunctionOpInterface f) { return sizes.lookup(f); }

  InlinerInterface interface;
  InlinerConfig config;
  ModuleOp module;
  SymbolTableCollection &tables;
  llvm::SetVector<Operation *> &inlined;
  /// Callee -> its flattened clone; the clone's op count.
  DenseMap<Operation *, Operation *> flat;
  DenseMap<Operation *, size_t> sizes;
  size_t ops = 0;
};

/// Inlines the calls in `fn`, and the calls they bring in, whose callee has
/// a body: the partitioner gives a callee one layout for all its calls, and
/// inlined, each call is planned for its own place (as XLA inlines calls
/// before partitioning). The callees are collected in `inlined`. A call to
/// a declaration, to an annotated function (its annotations would be lost)
/// or a recursion is an error naming the call.
LogicalResult inlineCalls(FunctionOpInterface fn, SymbolTableCollection &tables,
                          llvm::SetVector<Operation *> &inlined) {
  llvm::SmallPtrSet<Operation *, 8> onPath, done;
  if (failed(findRecursion(fn, tables, onPath, done)))
    return failure();
  CallFlattener flattener(fn->getParentOfType<ModuleOp>(), tables, inlined);
  return flattener.inlineInto(fn);
}

/// The mesh of `fn`: the one its annotations name (all the same), else the
/// module's only mesh.
FailureOr<MeshOp> findMesh(FunctionOpInterface fn, ModuleOp module,
                           SymbolTableCollection &tables) {
  FlatSymbolRefAttr named;
  Operation *namedBy = nullptr;
  auto see = [&](Attribute a, Operation *where) -> LogicalResult {
    auto check = [&](ShardingAttr s) -> LogicalResult {
      if (!named) {
        named = s.getMesh();
        namedBy = where;
        return success();
      }
      if (s.getMesh() == named)
        return success();
      InFlightDiagnostic d = where->emitError(
          "mesh-auto-shard: annotations on two meshes in one function (");
      d << named << " and " << s.getMesh() << ")";
      d.attachNote(namedBy->getLoc()) << "the first here";
      return failure();
    };
    if (auto s = dyn_cast_or_null<ShardingAttr>(a))
      return check(s);
    if (auto array = dyn_cast_or_null<ArrayAttr>(a))
      for (Attribute e : array)
        if (auto s = dyn_cast<ShardingAttr>(e); s && failed(check(s)))
          return failure();
    return success();
  };
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (failed(see(fn.getArgAttr(i, "mesh.sharding"), fn)))
      return failure();
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (failed(see(fn.getResultAttr(i, "mesh.sharding"), fn)))
      return failure();
  WalkResult walked = fn->walk([&](Operation *op) {
    if (failed(see(op->getDiscardableAttr("mesh.sharding"), op)))
      return WalkResult::interrupt();
    if (auto shard = dyn_cast<ShardOp>(op))
      if (failed(see(shard.getSharding(), op)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  if (named) {
    auto mesh = tables.lookupNearestSymbolFrom<MeshOp>(fn, named);
    if (!mesh)
      return fn.emitError("mesh-auto-shard: no mesh ") << named;
    return mesh;
  }
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() != 1)
    return fn.emitError("mesh-auto-shard: no annotation names a mesh, and "
                        "the module has ")
           << meshes.size() << " meshes: annotate one value";
  return meshes.front();
}

struct AutoShardPass : public mesh::impl::AutoShardBase<AutoShardPass> {
  using AutoShardBase::AutoShardBase;

  void runOnOperation() override {
    std::optional<CostModel> model = readCostModel();
    if (!model)
      return signalPassFailure();
    SymbolTableCollection tables;
    SmallVector<FunctionOpInterface> functions;
    getOperation().walk([&](FunctionOpInterface fn) {
      if (!fn.isExternal())
        functions.push_back(fn);
    });
    // A function nothing annotates is left as it is (replicated), as a
    // caller comparing a plan with the whole program wants it.
    llvm::erase_if(functions, [&](FunctionOpInterface fn) {
      if (isAnnotatedFunction(fn))
        return false;
      if (explain)
        llvm::errs() << "auto-shard @"
                     << SymbolTable::getSymbolName(fn).getValue()
                     << ": nothing annotated, left as it is (every device "
                        "runs all of it)\n";
      return true;
    });
    // A dim the user's annotation splits unevenly is padded to divide, as
    // propagation pads it (with its remark), so that the plan's values
    // divide and the partitioner takes them.
    if (!functions.empty() &&
        failed(padNonDividingDims(getOperation(), tables)))
      return signalPassFailure();
    llvm::SetVector<Operation *> inlined;
    for (FunctionOpInterface fn : functions)
      if (failed(inlineCalls(fn, tables, inlined)) ||
          failed(planFunction(fn, *model, tables)))
        return signalPassFailure();
    // As the inliner does: private callees no call is left to are erased,
    // callers first (a callee's callees may then have none left): the
    // flattening adds a callee after those it calls.
    for (Operation *callee : llvm::reverse(inlined))
      if (SymbolTable::getSymbolVisibility(callee) ==
              SymbolTable::Visibility::Private &&
          SymbolTable::symbolKnownUseEmpty(callee, getOperation()))
        callee->erase();
  }

  /// The cost model the options give, or none after an error.
  std::optional<CostModel> readCostModel() {
    ModuleOp module = getOperation();
    CostModel model;
    // A quantity option: its value, or an error naming it and what it
    // expects.
    auto quantity = [&](StringRef option, StringRef text, StringRef unit,
                        StringRef expected) -> std::optional<double> {
      std::optional<double> v = parseQuantity(text, unit);
      if (!v) {
        mlir::emitError(module.getLoc(), "mesh-auto-shard: ")
            << option << ": cannot read '" << text << "' (expected " << expected
            << ")";
        return std::nullopt;
      }
      if (*v < 1 || *v > 9e18) {
        mlir::emitError(module.getLoc(), "mesh-auto-shard: ")
            << option << ": '" << text << "' is out of range (1 to 9e18)";
        return std::nullopt;
      }
      return v;
    };
    if (!memoryPerDevice.empty()) {
      std::optional<double> b = quantity("memory-per-device", memoryPerDevice,
                                         "B", "bytes, as 24GiB or 1e9");
      if (!b)
        return std::nullopt;
      // A fraction of a byte is a typo, not a budget ("1.5" for "1.5GiB").
      // (Within rounding: 0.3GB is 3e8 give or take the last bit.)
      if (std::abs(*b - std::round(*b)) > 1e-6 * std::max(1.0, *b)) {
        mlir::emitError(module.getLoc(),
                        "mesh-auto-shard: memory-per-device: '")
            << memoryPerDevice
            << "' is not a whole number of bytes (a unit is missing? as "
               "24GiB)";
        return std::nullopt;
      }
      model.memoryBudget = std::llround(*b);
    }
    std::optional<double> rate =
        quantity("flops", flops, "", "operations per second, as 1e11 or 50G");
    if (!rate)
      return std::nullopt;
    model.flopsPerSecond = std::llround(*rate);
    std::string error;
    if (failed(parseAxisCosts(axisCost, model, error))) {
      mlir::emitError(module.getLoc(), "mesh-auto-shard: ") << error;
      return std::nullopt;
    }
    return model;
  }

  /// Chooses and writes the plan of `fn`.
  LogicalResult planFunction(FunctionOpInterface fn, const CostModel &model,
                             SymbolTableCollection &tables) {
    // As propagation does: generics drop the results nobody uses (the
    // argmax beside a max), whose index would keep a loop whole.
    SmallVector<Operation *> generics;
    fn->walk([&](linalg::GenericOp g) {
      if (!isAnnotated(g))
        generics.push_back(g);
    });
    eraseUnusedLinalgResults(generics);
    FailureOr<MeshOp> mesh = findMesh(fn, getOperation(), tables);
    if (failed(mesh))
      return failure();
    // Bytes per device need every axis's size.
    for (auto [name, size] :
         llvm::zip(mesh->getAxisNames().getAsValueRange<StringAttr>(),
                   mesh->getShape()))
      if (ShapedType::isDynamic(size))
        return fn.emitError("mesh-auto-shard: axis '")
               << name << "' of @" << mesh->getSymName()
               << " has no static size: the plan prices bytes per device, "
                  "which need every size (declare it)";
    for (const auto &entry : model.axes)
      if (!mesh->getAxisIndex(entry.getKey()))
        return fn.emitError("mesh-auto-shard: axis-cost names axis '")
               << entry.getKey() << "', which @" << mesh->getSymName()
               << " does not have (" << mesh->getAxisListForDiagnostic() << ")";
    FunctionPlanner planner(fn, *mesh, model, tables);
    if (failed(planner.build()))
      return failure();
    return planner.run(explain, verifyExhaustive);
  }
};

} // namespace

//===- AutoShardReport.cpp - mesh-auto-shard's output ---------------------===//
//
// What mesh-auto-shard writes: the plan as mesh.sharding annotations, the
// `explain` report, and the `verify-exhaustive` enumeration.
//
//===----------------------------------------------------------------------===//

#include "AutoShardPlanner.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::mesh;
using namespace mlir::mesh::autoshard;

std::string autoshard::formatBytes(int64_t b) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (b >= (int64_t(1) << 30))
    os << llvm::format("%.2f GiB", b / 1073741824.0);
  else if (b >= (int64_t(1) << 20))
    os << llvm::format("%.2f MiB", b / 1048576.0);
  else if (b >= 1024)
    os << llvm::format("%.2f KiB", b / 1024.0);
  else
    os << b << " B";
  return s;
}

std::string autoshard::formatPs(Cost ps) {
  std::string s;
  llvm::raw_string_ostream os(s);
  double v = static_cast<double>(ps);
  if (v >= 1e9)
    os << llvm::format("%.3f ms", v / 1e9);
  else
    os << llvm::format("%.3f us", v / 1e6);
  return s;
}

std::string autoshard::layoutText(ShardingAttr s) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (!s) {
    os << "replicated";
    return text;
  }
  os << "[";
  llvm::interleaveComma(s.getDims(), os, [&](AxisListAttr axes) {
    os << "[";
    llvm::interleaveComma(
        axes, os, [&](StringAttr a) { os << '"' << a.getValue() << '"'; });
    os << "]";
  });
  os << "]";
  if (s.isPartial()) {
    os << " partial(";
    llvm::interleaveComma(s.getPartialAxisNames(), os);
    os << ")";
  }
  return text;
}

void FunctionPlanner::annotate(ArrayRef<unsigned> plan) {
  MLIRContext *ctx = fn->getContext();
  for (auto [v, var] : llvm::enumerate(vars)) {
    const Choice &c = var.choices[plan[v]];
    if (auto it = carriedTo.find(v); it != carriedTo.end())
      fn.setResultAttr(it->second, "mesh.sharding", c.results[0]);
    if (var.pinned)
      continue;
    switch (var.kind) {
    case Variable::Kind::Argument:
      fn.setArgAttr(var.number, "mesh.sharding", c.results[0]);
      break;
    case Variable::Kind::Result:
      fn.setResultAttr(var.number, "mesh.sharding", c.operands[0]);
      break;
    case Variable::Kind::Op:
      if (c.results.size() == 1) {
        var.op->setDiscardableAttr("mesh.sharding", c.results[0]);
        break;
      }
      // One entry per result; `unit` for one that is not a tensor.
      var.op->setDiscardableAttr(
          "mesh.sharding",
          ArrayAttr::get(ctx, llvm::map_to_vector(
                                  c.results, [&](ShardingAttr s) -> Attribute {
                                    return s ? Attribute(s)
                                             : UnitAttr::get(ctx);
                                  })));
      break;
    }
  }
}

void FunctionPlanner::describeVariable(raw_ostream &os, unsigned v) {
  const Variable &var = vars[v];
  switch (var.kind) {
  case Variable::Kind::Argument:
    os << "argument " << var.number << " ("
       << fn.getFunctionBody().getArgument(var.number).getType() << ")";
    return;
  case Variable::Kind::Result:
    os << "result " << var.number;
    return;
  case Variable::Kind::Op:
    os << "'" << var.op->getName() << "' at " << var.op->getLoc();
    return;
  }
}

void FunctionPlanner::describePeak(raw_ostream &os, ArrayRef<unsigned> plan,
                                   const Evaluation &e) {
  Operation *at = nullptr;
  for (Operation &op : fn.getFunctionBody().front())
    if (position[&op] == e.peakPoint)
      at = &op;
  os << "  peak memory: " << formatBytes(e.memory()) << " per device ("
     << e.memory() << " bytes; " << formatBytes(e.argumentBytes)
     << " of arguments, " << formatBytes(e.peakLive) << " live";
  if (at)
    os << " at '" << at->getName() << "' " << at->getLoc();
  os << ")\n";
  // The five largest values live there, then in program order.
  SmallVector<std::pair<int64_t, const LiveValue *>> here;
  for (const LiveValue &l : live)
    if (l.isLiveAt(e.peakPoint))
      here.push_back(
          {vars[l.var].choices[plan[l.var]].resultBytes[l.result], &l});
  llvm::sort(here, [](auto &a, auto &b) {
    return std::make_tuple(-a.first, a.second->def, a.second->result) <
           std::make_tuple(-b.first, b.second->def, b.second->result);
  });
  for (auto &[bytes, l] : ArrayRef(here).take_front(5)) {
    os << "    " << formatBytes(bytes) << ": ";
    describeVariable(os, l->var);
    os << " result " << l->result << ", "
       << layoutText(vars[l->var].choices[plan[l->var]].results[l->result])
       << "\n";
  }
}

void FunctionPlanner::explainPlan(ArrayRef<unsigned> plan, const Evaluation &e,
                                  uint64_t weight, Cost lowerBound,
                                  bool proven) {
  raw_ostream &os = llvm::errs();
  os << "auto-shard @" << SymbolTable::getSymbolName(fn).getValue() << " on @"
     << mesh.getSymName() << " (" << mesh.getAxisListForDiagnostic()
     << "): " << formatPs(e.total()) << " per call (communication "
     << formatPs(e.commPs) << ", " << e.commBytes
     << " bytes per device; arithmetic " << formatPs(e.computePs) << ")";
  if (proven)
    os << ", proven optimal\n";
  else
    os << ", not proven optimal: at most " << formatPs(e.total() - lowerBound)
       << " above the optimum\n";
  describePeak(os, plan, e);
  if (model.memoryBudget)
    os << "  budget: " << formatBytes(model.memoryBudget) << " per device\n";
  explainArguments(os, plan, e, weight);
  explainReshardings(os, plan);
}

/// Each argument's layout, with the best plan that lays it out otherwise
/// (for the first 64 that have a choice: each is a solve).
void FunctionPlanner::explainArguments(raw_ostream &os, ArrayRef<unsigned> plan,
                                       const Evaluation &e, uint64_t weight) {
  unsigned runnersUp = 0;
  for (auto [v, var] : llvm::enumerate(vars)) {
    if (var.kind != Variable::Kind::Argument)
      continue;
    os << "  ";
    describeVariable(os, v);
    os << ": " << layoutText(var.choices[plan[v]].results[0]);
    if (var.pinned) {
      os << " (annotated)\n";
      continue;
    }
    if (var.choices.size() < 2 || runnersUp == 64) {
      os << "\n";
      continue;
    }
    ++runnersUp;
    auto [cost, other] =
        solve(weight, {}, std::make_pair(unsigned(v), plan[v]));
    if (cost >= kForbidden) {
      os << "; no other layout is possible\n";
      continue;
    }
    Evaluation alt = evaluate(other);
    Cost delta = alt.total() - e.total();
    os << "; runner-up " << layoutText(var.choices[other[v]].results[0]) << ": "
       << formatPs(alt.total()) << " (" << (delta < 0 ? "-" : "+")
       << formatPs(delta < 0 ? -delta : delta) << "), "
       << formatBytes(alt.memory()) << " per device";
    if (model.memoryBudget && alt.memory() > model.memoryBudget)
      os << ", does not fit";
    os << "\n";
  }
}

/// Every resharding the plan makes that moves bytes.
void FunctionPlanner::explainReshardings(raw_ostream &os,
                                         ArrayRef<unsigned> plan) {
  for (const Use &u : uses) {
    ShardingAttr from =
        vars[u.producer].choices[plan[u.producer]].results[u.result];
    ShardingAttr to =
        vars[u.consumer].choices[plan[u.consumer]].operands[u.operand];
    const Reshard &r = reshard(from, to, u.type);
    if (r.steps.empty() || r.bytes == 0)
      continue;
    os << "  resharding for ";
    describeVariable(os, u.consumer);
    os << " operand " << u.operand << ": " << layoutText(from) << " -> "
       << layoutText(to) << ", " << r.bytes << " bytes per device, "
       << formatPs(r.ps) << " (";
    llvm::interleaveComma(r.steps, os, [&](const ReshardStep &s) {
      static const char *names[] = {"all_reduce", "reduce_scatter",
                                    "all_gather", "all_slice", "all_to_all"};
      os << names[static_cast<int>(s.kind)] << " [";
      llvm::interleaveComma(s.axes, os);
      os << "]";
    });
    os << ")\n";
  }
}

LogicalResult FunctionPlanner::checkExhaustively(ArrayRef<unsigned> plan,
                                                 bool proven) {
  uint64_t count = 1;
  for (const Variable &v : vars) {
    count *= v.choices.size();
    if (count > 5'000'000)
      return fn.emitError("mesh-auto-shard: verify-exhaustive: more than "
                          "5000000 plans to enumerate");
  }
  SmallVector<unsigned> current(vars.size(), 0);
  Cost best = kForbidden;
  uint64_t fitting = 0;
  for (uint64_t i = 0; i < count; ++i) {
    Evaluation e = evaluate(current);
    if (e.total() < kForbidden &&
        (!model.memoryBudget || e.memory() <= model.memoryBudget)) {
      ++fitting;
      best = std::min(best, e.total());
    }
    for (int v = vars.size() - 1; v >= 0; --v) {
      if (++current[v] < vars[v].choices.size())
        break;
      current[v] = 0;
    }
  }
  Cost chosen = evaluate(plan).total();
  fn.emitRemark() << "mesh-auto-shard: exhaustive check: " << count
                  << " plans, " << fitting << " fit; the least cost of "
                  << "one that fits is "
                  << static_cast<int64_t>(std::min(best, kForbidden))
                  << " ps; the plan costs " << static_cast<int64_t>(chosen)
                  << " ps";
  if (proven && best < chosen)
    return fn.emitError("mesh-auto-shard: the plan said to be optimal is "
                        "not: an enumerated plan costs less");
  return success();
}

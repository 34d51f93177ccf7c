//===- AutoShardReport.cpp - mesh-auto-shard's output ---------------------===//
//
// What mesh-auto-shard writes: the plan as mesh.sharding annotations, the
// `explain` report, and the `verify-exhaustive` enumeration.
//
//===----------------------------------------------------------------------===//

#include "AutoShardPlanner.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::mesh;
using namespace mlir::mesh::autoshard;

/// An op's variable or a loop's or branch's group: what a region holds.
static bool isOpLike(const Variable &var) {
  return var.kind == Variable::Kind::Op || var.kind == Variable::Kind::Tied;
}

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
  // A loop's or branch's results, from its groups (in program order), and
  // whether the plan chose any (else the user's annotation stays).
  llvm::MapVector<Operation *, std::pair<SmallVector<Attribute, 2>, bool>> tied;
  auto entry = [&](ShardingAttr s) -> Attribute {
    return s ? Attribute(s) : UnitAttr::get(ctx);
  };
  for (auto [v, var] : llvm::enumerate(vars)) {
    const Choice &c = var.choices[plan[v]];
    if (auto it = carriedTo.find(v); it != carriedTo.end())
      fn.setResultAttr(it->second, "mesh.sharding", c.results[0]);
    // A group no result carries has nothing to write.
    if (var.kind == Variable::Kind::Tied && !var.tiedResults.empty()) {
      auto [it, inserted] = tied.try_emplace(var.op);
      if (inserted)
        it->second.first.assign(var.op->getNumResults(), UnitAttr::get(ctx));
      for (unsigned r : var.tiedResults)
        it->second.first[r] = entry(c.results[0]);
      it->second.second |= !var.pinned;
      continue;
    }
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
          ArrayAttr::get(ctx, llvm::map_to_vector(c.results, entry)));
      break;
    case Variable::Kind::Copy:
    case Variable::Kind::Tied:
      break; // The partitioner makes the copy; groups are written below.
    }
  }
  for (auto &[op, entry] : tied) {
    auto &[results, chosen] = entry;
    if (!chosen)
      continue;
    op->setDiscardableAttr("mesh.sharding", results.size() == 1
                                                ? results[0]
                                                : ArrayAttr::get(ctx, results));
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
  case Variable::Kind::Tied:
    os << "'" << var.op->getName() << "' at " << var.op->getLoc()
       << " carried value " << var.number;
    return;
  case Variable::Kind::Copy:
    os << "the shared copy of ";
    describeVariable(os, copies[var.number].producer);
    os << " result " << copies[var.number].result;
    return;
  }
}

void FunctionPlanner::describePeak(raw_ostream &os, ArrayRef<unsigned> plan,
                                   const Evaluation &e) {
  Operation *at = nullptr;
  fn.getFunctionBody().walk([&](Operation *op) {
    auto it = position.find(op);
    if (it != position.end() && it->second == e.peakPoint)
      at = op;
  });
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
  if (narrowed)
    os << "  the program is too wide to solve exactly: " << narrowed->dropped
       << " layouts of its widest ops (the dearest in arithmetic) were set "
          "aside; the bound counts each op's least arithmetic and no "
          "communication\n";
  if (unsharedValues)
    os << "  " << unsharedValues << " value" << (unsharedValues == 1 ? "" : "s")
       << " whose uses could share a resharded copy priced use by use (the "
          "tables would be too wide): the bytes may be above the "
          "partitioned program's\n";
  describePeak(os, plan, e);
  if (model.memoryBudget)
    os << "  budget: " << formatBytes(model.memoryBudget) << " per device\n";
  DenseMap<unsigned, RunnerUp> runnersUp;
  explainArguments(os, plan, e, weight, runnersUp);
  explainRegions(os, plan, runnersUp);
  explainReshardings(os, plan);
}

/// Each argument's layout, with the best plan that lays it out otherwise
/// (for the first 64 that have a choice: each is a solve).
void FunctionPlanner::explainArguments(
    raw_ostream &os, ArrayRef<unsigned> plan, const Evaluation &e,
    uint64_t weight, DenseMap<unsigned, RunnerUp> &runnersUp) {
  unsigned solved = 0;
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
    if (var.choices.size() < 2 || solved == 64) {
      os << "\n";
      continue;
    }
    ++solved;
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
    bool fits = !model.memoryBudget || alt.memory() <= model.memoryBudget;
    if (!fits)
      os << ", does not fit";
    os << "\n";
    runnersUp[v] = {delta, other[v], fits};
  }
}

/// The name a location gives its op: a NameLoc's, also inside fused and
/// call-site locations ("" for none).
static StringRef locationName(Location loc) {
  if (auto named = dyn_cast<NameLoc>(loc))
    return named.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (StringRef name = locationName(inner); !name.empty())
        return name;
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return locationName(site.getCallee());
  return {};
}

/// The scope of an op's name: up to its last '/' (JAX, TensorFlow) or,
/// without one, its last '.' (PyTorch module paths); else the name.
static StringRef scopeOf(StringRef name) {
  size_t at = name.rfind('/');
  if (at == StringRef::npos || at == 0)
    at = name.rfind('.');
  return at == StringRef::npos || at == 0 ? name : name.take_front(at);
}

/// Regions of runs of ops whose location names share a scope (an op
/// without a name joins the run it is in).
std::vector<ProgramRegion>
FunctionPlanner::regionsByName(ArrayRef<unsigned> ops) {
  std::vector<ProgramRegion> regions;
  for (unsigned v : ops) {
    StringRef name = locationName(vars[v].op->getLoc());
    StringRef scope = name.empty() ? StringRef() : scopeOf(name);
    unsigned p = position[vars[v].op];
    if (regions.empty())
      regions.push_back({scope.str(), p, p, {}});
    else if (!scope.empty() && scope != regions.back().name) {
      if (regions.back().name.empty())
        regions.back().name = scope.str(); // Unnamed ops that led it.
      else
        regions.push_back({scope.str(), p, p, {}});
    }
    regions.back().last = p;
    regions.back().vars.push_back(v);
  }
  return regions;
}

/// Per program point p: how many values the plan lays out are defined at
/// or before p and used after it (arguments aside).
std::vector<int> FunctionPlanner::crossingCounts() const {
  std::vector<int> crossing(numPoints + 1, 0);
  for (const LiveValue &l : live)
    if (l.last > l.def) {
      ++crossing[l.def];
      --crossing[l.last];
    }
  for (unsigned p = 1; p <= numPoints; ++p)
    crossing[p] += crossing[p - 1];
  return crossing;
}

/// Regions cut after each op past which exactly one value is carried;
/// pieces join the next until a region has kFewestOps ops.
std::vector<ProgramRegion>
FunctionPlanner::regionsByCuts(ArrayRef<unsigned> ops, ArrayRef<int> crossing) {
  std::vector<ProgramRegion> pieces, regions;
  bool cut = true;
  for (unsigned v : ops) {
    unsigned p = position[vars[v].op];
    if (cut)
      pieces.push_back({"", p, p, {}});
    pieces.back().last = p;
    pieces.back().vars.push_back(v);
    cut = crossing[p] == 1;
  }
  for (ProgramRegion &piece : pieces) {
    if (!regions.empty() && regions.back().vars.size() < kFewestOps) {
      regions.back().last = piece.last;
      regions.back().vars.append(piece.vars);
      continue;
    }
    regions.push_back(std::move(piece));
  }
  if (regions.size() > 1 && regions.back().vars.size() < kFewestOps) {
    ProgramRegion tail = std::move(regions.back());
    regions.pop_back();
    regions.back().last = tail.last;
    regions.back().vars.append(tail.vars);
  }
  return regions;
}

/// Z-function of `s`: z[k] is the length of the longest common prefix of
/// `s` and its suffix from k (z[0] = 0).
static std::vector<size_t> zFunction(ArrayRef<unsigned> s) {
  size_t n = s.size();
  std::vector<size_t> z(n, 0);
  for (size_t k = 1, l = 0, r = 0; k < n; ++k) {
    if (k < r)
      z[k] = std::min(r - k, z[k - l]);
    while (k + z[k] < n && s[z[k]] == s[k + z[k]])
      ++z[k];
    if (k + z[k] > r) {
      l = k;
      r = k + z[k];
    }
  }
  return z;
}

/// What tells ops of the program apart: the name, the operand and result
/// types, the inherent attributes, and the regions' ops, in turn; not the
/// discardable attributes (mesh.sharding, which the plan just wrote) nor
/// the locations.
static llvm::hash_code programHash(Operation *op) {
  llvm::hash_code h =
      llvm::hash_combine(op->getName(), op->getPropertiesAsAttribute(),
                         llvm::hash_combine_range(op->getOperandTypes().begin(),
                                                  op->getOperandTypes().end()),
                         llvm::hash_combine_range(op->getResultTypes().begin(),
                                                  op->getResultTypes().end()));
  for (NamedAttribute a : op->getAttrs())
    if (!a.getName().getValue().contains('.'))
      h = llvm::hash_combine(h, a.getName(), a.getValue());
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &inner : block)
        h = llvm::hash_combine(h, programHash(&inner));
  return h;
}

/// Regions of the program's repetitions: ops alike (programHash) are one
/// letter, and from left to right the longest run
/// of a repeated block of at least two ops, at least kFewestOps in all,
/// is cut into one region per block; the ops between runs are a region
/// each. A block's cut points are shifted to where the fewest values
/// cross (a layer's boundary, not the middle of it). A training step of
/// unnamed ops is so cut into its forward layers and its backward layers.
std::vector<ProgramRegion>
FunctionPlanner::regionsByRepeats(ArrayRef<unsigned> ops,
                                  ArrayRef<int> crossing) {
  DenseMap<llvm::hash_code, unsigned> letterOf;
  SmallVector<unsigned> text;
  for (unsigned v : ops) {
    llvm::hash_code h = programHash(vars[v].op);
    text.push_back(letterOf.try_emplace(h, letterOf.size()).first->second);
  }
  auto crossingAfter = [&](size_t i) {
    return crossing[position[vars[ops[i]].op]];
  };
  std::vector<ProgramRegion> regions;
  auto add = [&](size_t from, size_t to) { // ops [from, to)
    if (from == to)
      return;
    ProgramRegion r{
        "", position[vars[ops[from]].op], position[vars[ops[to - 1]].op], {}};
    r.vars.assign(ops.begin() + from, ops.begin() + to);
    regions.push_back(std::move(r));
  };
  size_t n = ops.size(), other = 0;
  for (size_t i = 0; i < n;) {
    std::vector<size_t> z = zFunction(ArrayRef(text).drop_front(i));
    size_t block = 0, cover = 0;
    for (size_t k = 2; 2 * k <= n - i; ++k) {
      size_t reps = 1 + z[k] / k;
      if (reps >= 2 && reps * k > cover) {
        block = k;
        cover = reps * k;
      }
    }
    if (cover < kFewestOps) {
      ++i;
      continue;
    }
    // The periodic stretch [i, i + k + z[k]); a shift s keeps whole blocks
    // from i + s. Of the shifts that keep as many blocks as any, the one
    // whose inner cut points carry the fewest values.
    size_t length = block + z[block];
    size_t blocks = (length - (block - 1)) / block;
    size_t shift = 0;
    int64_t least = INT64_MAX;
    for (size_t s = 0; s < block && (length - s) / block >= blocks; ++s) {
      int64_t carried = 0;
      for (size_t b = 1; b < blocks; ++b)
        carried += crossingAfter(i + s + b * block - 1);
      if (carried < least) {
        least = carried;
        shift = s;
      }
    }
    add(other, i + shift);
    for (size_t b = 0; b < blocks; ++b)
      add(i + shift + b * block, i + shift + (b + 1) * block);
    i += shift + blocks * block;
    other = i;
  }
  add(other, n);
  return regions;
}

/// The regions explain reports, and what they were cut by:
/// - where most ops' locations carry names, by their scopes;
/// - else after each op past which exactly one value the plan lays out is
///   carried (arguments aside): in a stack of layers, each layer's
///   residual stream, so a region is a layer or a part of one; pieces join
///   the next until a region has 8 ops (a layer norm's reductions, an
///   attention's reshapes are cut off alone otherwise);
/// - a training step, whose forward values stay live for the backward, has
///   no such point: it is cut where it repeats (regionsByRepeats);
/// - else it is one region.
std::vector<ProgramRegion> FunctionPlanner::findRegions(RegionBasis &basis) {
  SmallVector<unsigned> ops;
  for (auto [v, var] : llvm::enumerate(vars))
    if (isOpLike(var))
      ops.push_back(v);
  llvm::sort(ops, [&](unsigned a, unsigned b) {
    return std::make_pair(position[vars[a].op], a) <
           std::make_pair(position[vars[b].op], b);
  });
  std::vector<ProgramRegion> regions;
  if (ops.empty())
    return regions;
  unsigned named = llvm::count_if(ops, [&](unsigned v) {
    return !locationName(vars[v].op->getLoc()).empty();
  });
  if (2 * named >= ops.size()) {
    basis = RegionBasis::Names;
    regions = regionsByName(ops);
  } else {
    std::vector<int> crossing = crossingCounts();
    basis = RegionBasis::Cuts;
    regions = regionsByCuts(ops, crossing);
    if (regions.size() == 1) {
      std::vector<ProgramRegion> repeats = regionsByRepeats(ops, crossing);
      if (repeats.size() > 1) {
        basis = RegionBasis::Repeats;
        regions = std::move(repeats);
      } else {
        basis = RegionBasis::Whole;
      }
    }
  }
  // Each argument joins the region of its first use.
  for (auto [v, var] : llvm::enumerate(vars)) {
    if (var.kind != Variable::Kind::Argument)
      continue;
    std::optional<unsigned> first;
    for (const Use &u : uses)
      if (u.producer == v && isOpLike(vars[u.consumer])) {
        unsigned p = position[vars[u.consumer].op];
        first = first ? std::min(*first, p) : p;
      }
    if (!first)
      continue;
    for (ProgramRegion &r : regions)
      if (r.first <= *first && *first <= r.last) {
        r.vars.push_back(v);
        break;
      }
  }
  return regions;
}

/// Each region's communication, arithmetic and most bytes live under
/// `plan`, and a signature that is equal for regions laid out and costing
/// alike.
std::vector<RegionTotals>
FunctionPlanner::totalRegions(ArrayRef<unsigned> plan,
                              ArrayRef<ProgramRegion> regions) {
  DenseMap<unsigned, unsigned> regionOf;
  for (auto [i, r] : llvm::enumerate(regions))
    for (unsigned v : r.vars)
      if (isOpLike(vars[v]))
        regionOf[v] = i;
  std::vector<RegionTotals> totals(regions.size());
  std::vector<bool> reusing = reusingUses(plan);
  for (auto [ui, u] : llvm::enumerate(uses)) {
    auto it = regionOf.find(u.consumer);
    if (it == regionOf.end())
      continue;
    if (const Reshard *r = movingReshard(ui, plan, reusing)) {
      totals[it->second].commPs += r->ps * u.times;
      totals[it->second].bytes += r->bytes * u.times;
      ++totals[it->second].reshardings;
    }
  }
  // Bytes live at each point under the plan (arguments aside).
  std::vector<int64_t> liveBytes = liveAt(plan);
  for (auto [i, r] : llvm::enumerate(regions)) {
    RegionTotals &t = totals[i];
    for (unsigned p = r.first; p <= r.last; ++p)
      t.mostLive = std::max(t.mostLive, liveBytes[p]);
    llvm::raw_string_ostream sig(t.signature);
    for (unsigned v : r.vars) {
      const Variable &var = vars[v];
      const Choice &c = var.choices[plan[v]];
      t.computePs += c.computePs;
      sig << var.op->getName().getStringRef();
      for (ShardingAttr s : c.results)
        sig << ' ' << layoutText(s);
      sig << ';';
    }
    sig << static_cast<int64_t>(t.commPs) << ' ' << t.bytes << ' ' << t.mostLive
        << ' ' << static_cast<int64_t>(t.computePs);
  }
  return totals;
}

/// The repetition that starts at region `i` and covers the most regions: a
/// block of `k` (up to 8: a layer's attention and MLP halves) repeated
/// `reps` times; (1, 1) when nothing repeats.
static std::pair<unsigned, unsigned> findRepeat(ArrayRef<RegionTotals> totals,
                                                unsigned i) {
  unsigned n = totals.size();
  auto same = [&](unsigned a, unsigned b, unsigned k) {
    for (unsigned d = 0; d < k; ++d)
      if (totals[a + d].signature != totals[b + d].signature)
        return false;
    return true;
  };
  unsigned bestK = 1, bestReps = 1;
  for (unsigned k = 1; k <= 8 && i + 2 * k <= n; ++k) {
    unsigned reps = 1;
    while (i + (reps + 1) * k <= n && same(i, i + reps * k, k))
      ++reps;
    if (reps >= 2 && reps * k > bestReps * bestK) {
      bestK = k;
      bestReps = reps;
    }
  }
  return {bestK, bestReps};
}

static std::string regionTitle(ArrayRef<ProgramRegion> regions, unsigned i) {
  std::string text = "region " + std::to_string(i + 1);
  if (!regions[i].name.empty())
    text += " '" + regions[i].name + "'";
  return text;
}

/// One region's lines: its totals, the layouts of the arguments it uses
/// first, and the cheapest other layout of one of them that fits.
void FunctionPlanner::describeRegion(
    raw_ostream &os, ArrayRef<unsigned> plan, ArrayRef<ProgramRegion> regions,
    unsigned i, const RegionTotals &t,
    const DenseMap<unsigned, RunnerUp> &runnersUp) {
  const ProgramRegion &r = regions[i];
  SmallVector<unsigned> arguments;
  unsigned opCount = 0;
  for (unsigned v : r.vars) {
    if (vars[v].kind == Variable::Kind::Argument)
      arguments.push_back(v);
    else
      ++opCount;
  }
  Operation *first = vars[r.vars.front()].op;
  os << "    " << regionTitle(regions, i) << ": " << opCount << " ops from '"
     << first->getName() << "' at " << first->getLoc() << "; communication "
     << formatPs(t.commPs) << " (" << t.bytes << " bytes per device, "
     << t.reshardings << " resharding" << (t.reshardings == 1 ? "" : "s")
     << "), arithmetic " << formatPs(t.computePs) << ", most live "
     << formatBytes(t.mostLive) << "\n";
  if (arguments.empty())
    return;
  os << "      arguments:";
  for (unsigned v : ArrayRef(arguments).take_front(8))
    os << " " << vars[v].number << " "
       << layoutText(vars[v].choices[plan[v]].results[0]) << ";";
  if (arguments.size() > 8)
    os << " and " << arguments.size() - 8 << " more";
  os << "\n";
  std::optional<std::pair<unsigned, RunnerUp>> best;
  for (unsigned v : arguments) {
    auto it = runnersUp.find(v);
    if (it != runnersUp.end() && it->second.fits &&
        (!best || it->second.delta < best->second.delta))
      best = {v, it->second};
  }
  if (!best)
    return;
  Cost d = best->second.delta;
  os << "      runner-up: argument " << vars[best->first].number << " as "
     << layoutText(vars[best->first].choices[best->second.choice].results[0])
     << ", " << (d < 0 ? "-" : "+") << formatPs(d < 0 ? -d : d) << "\n";
}

/// The plan region by region (findRegions); a run of regions that repeats
/// a block is printed once, then counted.
void FunctionPlanner::explainRegions(
    raw_ostream &os, ArrayRef<unsigned> plan,
    const DenseMap<unsigned, RunnerUp> &runnersUp) {
  RegionBasis basis;
  std::vector<ProgramRegion> regions = findRegions(basis);
  if (regions.empty())
    return;
  std::vector<RegionTotals> totals = totalRegions(plan, regions);
  os << "  " << regions.size() << " region" << (regions.size() == 1 ? "" : "s");
  switch (basis) {
  case RegionBasis::Names:
    os << " (the scopes of the ops' location names)";
    break;
  case RegionBasis::Cuts:
    os << " (cut where one value carries the program on)";
    break;
  case RegionBasis::Repeats:
    os << " (no point where one value carries the program on; cut where "
          "it repeats)";
    break;
  case RegionBasis::Whole:
    os << " (no point where one value carries the program on, and no "
          "repetition)";
    break;
  }
  os << ":\n";
  for (unsigned i = 0, n = regions.size(); i < n;) {
    auto [k, reps] = findRepeat(totals, i);
    for (unsigned d = 0; d < k; ++d)
      describeRegion(os, plan, regions, i + d, totals[i + d], runnersUp);
    if (reps == 2 && k == 1) {
      os << "    region " << i + 2 << ": as " << regionTitle(regions, i)
         << "\n";
    } else if (reps > 1) {
      os << "    regions " << i + k + 1 << "-" << i + k * reps << ": ";
      if (k == 1)
        os << "each as " << regionTitle(regions, i);
      else
        os << "regions " << i + 1 << "-" << i + k << " again";
      if (reps > 2)
        os << ", " << reps - 1 << " times more";
      os << "\n";
    }
    i += k * reps;
  }
}

/// The resharding use `ui` needs under `plan`, when it moves bytes (else
/// null: also when it reuses a copy, `reusing`); `from` and `to` receive
/// its layouts.
const Reshard *FunctionPlanner::movingReshard(unsigned ui,
                                              ArrayRef<unsigned> plan,
                                              const std::vector<bool> &reusing,
                                              ShardingAttr *from,
                                              ShardingAttr *to) {
  const Use &u = uses[ui];
  ShardingAttr source =
      vars[u.producer].choices[plan[u.producer]].results[u.result];
  ShardingAttr target =
      vars[u.consumer].choices[plan[u.consumer]].operands[u.operand];
  if (from)
    *from = source;
  if (to)
    *to = target;
  const Reshard &r = reshard(source, target, u.type);
  return r.steps.empty() || r.bytes == 0 || reusing[ui] ? nullptr : &r;
}

/// " operand N", or " captured value K" for a tensor from outside that an
/// op without a rule uses in its regions.
void FunctionPlanner::describeOperand(raw_ostream &os, const Use &u) {
  const Variable &var = vars[u.consumer];
  if (var.kind == Variable::Kind::Op && u.operand >= var.op->getNumOperands())
    os << " captured value " << u.operand - var.op->getNumOperands();
  else
    os << " operand " << u.operand;
}

/// Every resharding the plan makes that moves bytes.
void FunctionPlanner::explainReshardings(raw_ostream &os,
                                         ArrayRef<unsigned> plan) {
  std::vector<bool> reusing = reusingUses(plan);
  for (auto [ui, u] : llvm::enumerate(uses)) {
    ShardingAttr from, to;
    const Reshard *moving = movingReshard(ui, plan, reusing, &from, &to);
    if (reusing[ui]) {
      os << "  resharding for ";
      describeVariable(os, u.consumer);
      describeOperand(os, u);
      os << ": reuses the copy in " << layoutText(to)
         << " made for an earlier use\n";
      continue;
    }
    if (!moving)
      continue;
    const Reshard &r = *moving;
    os << "  resharding for ";
    describeVariable(os, u.consumer);
    describeOperand(os, u);
    os << ": " << layoutText(from) << " -> " << layoutText(to) << ", "
       << r.bytes << " bytes per device, " << formatPs(r.ps);
    if (u.times > 1)
      os << ", " << u.times << " times per call";
    os << " (";
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

LogicalResult
FunctionPlanner::forEachPlan(uint64_t &count,
                             function_ref<void(ArrayRef<unsigned>)> visit) {
  count = 1;
  // The copy variables are not enumerated: evaluate() takes each group's
  // best copy.
  auto enumerated = [](const Variable &v) {
    return v.kind != Variable::Kind::Copy;
  };
  for (const Variable &v : vars) {
    if (!enumerated(v))
      continue;
    count *= v.choices.size();
    if (count > 5'000'000)
      return fn.emitError("mesh-auto-shard: verify-exhaustive: more than "
                          "5000000 plans to enumerate");
  }
  SmallVector<unsigned> current(vars.size(), 0);
  for (uint64_t i = 0; i < count; ++i) {
    visit(current);
    for (int v = vars.size() - 1; v >= 0; --v) {
      if (!enumerated(vars[v]))
        continue;
      if (++current[v] < vars[v].choices.size())
        break;
      current[v] = 0;
    }
  }
  return success();
}

LogicalResult FunctionPlanner::checkExhaustively(ArrayRef<unsigned> plan,
                                                 bool proven) {
  uint64_t count;
  Cost best = kForbidden;
  uint64_t fitting = 0;
  if (failed(forEachPlan(count, [&](ArrayRef<unsigned> current) {
        Evaluation e = evaluate(current);
        if (e.total() < kForbidden &&
            (!model.memoryBudget || e.memory() <= model.memoryBudget)) {
          ++fitting;
          best = std::min(best, e.total());
        }
      })))
    return failure();
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

LogicalResult FunctionPlanner::checkSmallestBudget(int64_t atLeast,
                                                   int64_t atMost) {
  uint64_t count;
  int64_t least = INT64_MAX;
  if (failed(forEachPlan(count, [&](ArrayRef<unsigned> current) {
        Evaluation e = evaluate(current);
        if (e.total() < kForbidden)
          least = std::min(least, e.memory());
      })))
    return failure();
  fn.emitRemark() << "mesh-auto-shard: exhaustive check: " << count
                  << " plans; the least memory of one is " << least << " bytes";
  if (least < atLeast || least > atMost)
    return fn.emitError("mesh-auto-shard: the smallest budget said to fit "
                        "is not: an enumerated plan holds ")
           << least << " bytes";
  return success();
}

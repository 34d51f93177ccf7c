//===- AutoShardSearch.cpp - mesh-auto-shard's plan, under a budget -------===//
//
// FunctionPlanner::run: the exact minimum; when it does not fit the memory
// budget, BudgetSearch: a Lagrangian search on the memory at the peak
// point, then a branch and bound on the variables that hold memory at the
// constrained points.
//
//===----------------------------------------------------------------------===//

#include "AutoShardPlanner.h"

#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::mesh;
using namespace mlir::mesh::autoshard;

namespace mlir {
namespace mesh {
namespace autoshard {

/// The cheapest plan that fits the budget.
///
/// 1. A Lagrangian search on the memory at the peak point: each weight w,
///    in 2^-20 picoseconds per byte, gives a plan (kept if it fits) and a
///    lower bound on the optimum (the minimum less w times the budget);
///    then weights on every point (weighEveryPoint), whose best bounds the
///    nodes below.
/// 2. A branch and bound fixing, one at a time, the variables that hold
///    memory at the constrained points (the peak point, and each point
///    where a candidate that fits the others peaks), the largest first;
///    each node is bounded by the minima at weight 0 and at the best
///    weight, and ends where its cheapest plan fits. It visits at most a
///    number of nodes set by the minimizer's work (a count, not a time, so
///    that every machine stops at the same node).
///
/// The plan is proven optimal when the search ends; else the bound says by
/// how much at most it can be off, and each argument's runner-up is tried
/// (tryOtherArgumentLayouts).
class BudgetSearch {
public:
  BudgetSearch(FunctionPlanner &planner, SmallVectorImpl<unsigned> &best,
               Evaluation &bestEval)
      : p(planner), best(best), bestEval(bestEval),
        budget(planner.model.memoryBudget),
        maxNodes(static_cast<unsigned>(std::clamp<uint64_t>(
            400'000'000 / std::max<uint64_t>(1, planner.minimizer->getWork()),
            16, 2000))),
        fixed(planner.vars.size(), -1) {}

  /// Runs the search from `lowerBound` (the cost of the unconstrained
  /// minimum); returns whether the plan is proven optimal, with
  /// `lowerBound` the bound and `weight` the memory's best weight. Fails,
  /// with an error, when no plan fits.
  FailureOr<bool> run(Cost &lowerBound, uint64_t &weight);
  /// After a run that found no plan: the bounds the error gave on the
  /// smallest budget that fits (equal when it is exact).
  std::pair<int64_t, int64_t> smallestBudget() const {
    return {noFitAtLeast, noFitAtMost};
  }

private:
  Cost allowance(uint64_t w) const {
    return (Cost(w) * Cost(budget) + ((Cost(1) << 20) - 1)) >> 20;
  }
  /// Keeps `plan` if it fits and is the cheapest yet (and as the plan of
  /// least memory); returns whether it fits. `out` receives its
  /// evaluation.
  bool consider(ArrayRef<unsigned> plan, Evaluation *out = nullptr);
  bool tryWeight(uint64_t w, SmallVectorImpl<unsigned> *planOut = nullptr);
  void searchWeights();
  void blend(uint64_t lo, ArrayRef<unsigned> loPlan, ArrayRef<unsigned> hiPlan);
  void polish(ArrayRef<unsigned> plan);
  void tryOtherArgumentLayouts();
  void weighEveryPoint();
  int64_t bytesOf(unsigned v, unsigned c, unsigned r) const {
    return p.vars[v].choices[c].resultBytes[r];
  }
  int64_t minBytes(unsigned v, unsigned r) const;
  int64_t leastMemoryAt(ArrayRef<const LiveValue *> here) const;
  bool memoryMayFit() const;
  void addPoint(unsigned point);
  void visit(Cost parentBound);
  const unsigned *nextBranchVariable() const;
  LogicalResult reportNoFit();

  FunctionPlanner &p;
  SmallVectorImpl<unsigned> &best;
  Evaluation &bestEval;
  const int64_t budget;
  const unsigned maxNodes;
  bool found = false;
  /// The plan of least memory seen, for the message when none fits.
  SmallVector<unsigned> leastPlan;
  int64_t leastMemory = INT64_MAX;
  /// The best bound of the Lagrangian search and its weight.
  Cost rootBound = 0;
  uint64_t boundWeight = 0;
  /// Weights on every point that bound better than `boundWeight` alone:
  /// weighBytes' table and the budget's share (empty when none did).
  std::vector<SmallVector<Cost, 8>> pointWeights;
  Cost pointAllowance = 0;
  /// Per variable: the choice the current node fixes (-1: free).
  std::vector<int> fixed;
  /// The constrained points, and the values live at each.
  SmallVector<unsigned> points;
  SmallVector<SmallVector<const LiveValue *>> liveAt;
  /// The variables whose choice changes the memory at a constrained point,
  /// the largest change first.
  SmallVector<unsigned> branchOrder;
  unsigned nodes = 0;
  bool capped = false;
  /// The least bound of the nodes left unvisited.
  Cost openBound = kForbidden;
  int64_t noFitAtLeast = 0, noFitAtMost = INT64_MAX;
  /// The cheapest plan, which does not fit.
  SmallVector<unsigned> unconstrained;
};

} // namespace autoshard
} // namespace mesh
} // namespace mlir

bool BudgetSearch::consider(ArrayRef<unsigned> plan, Evaluation *out) {
  Evaluation e = p.evaluate(plan);
  if (out)
    *out = e;
  if (e.total() >= kForbidden)
    return false;
  if (e.memory() < leastMemory) {
    leastMemory = e.memory();
    leastPlan.assign(plan.begin(), plan.end());
  }
  bool fits = e.memory() <= budget;
  if (fits && (!found || e.total() < bestEval.total())) {
    found = true;
    best.assign(plan.begin(), plan.end());
    bestEval = e;
  }
  return fits;
}

bool BudgetSearch::tryWeight(uint64_t w, SmallVectorImpl<unsigned> *planOut) {
  auto [objective, plan] = p.solve(w);
  if (objective - allowance(w) > rootBound) {
    rootBound = objective - allowance(w);
    boundWeight = w;
  }
  bool fits = consider(plan);
  if (planOut)
    planOut->assign(plan.begin(), plan.end());
  return fits;
}

/// Weights from about the plan's time per byte of its memory, up by 4 to
/// the first whose plan fits, then bisected to within 1/64; then the two
/// plans either side are blended (blend()).
void BudgetSearch::searchWeights() {
  const Evaluation &e0 = bestEval;
  uint64_t scale = static_cast<uint64_t>(std::min<Cost>(
      Cost(1) << 40, (e0.total() << 20) / std::max<int64_t>(1, e0.memory())));
  uint64_t lo = 0, hi = std::max<uint64_t>(1, scale / 64);
  SmallVector<unsigned> loPlan(best.begin(), best.end()), hiPlan;
  unconstrained = loPlan;
  bool hiFits = false;
  // Up to 2^40 (2^20 ps a byte: memory above any time).
  for (; hi <= (uint64_t(1) << 40); lo = hi, hi *= 4) {
    SmallVector<unsigned> plan;
    if ((hiFits = tryWeight(hi, &plan))) {
      hiPlan = std::move(plan);
      break;
    }
    loPlan = std::move(plan);
  }
  // The plan that holds every value at its least (FSDP's choice for the
  // parameters), its activations solved again for time: a plan that fits
  // where the weight at the peak point does not find one (the memory moves
  // to other points) or finds a costly one.
  if (std::optional<SmallVector<unsigned>> least = p.leastMemoryPlan()) {
    consider(*least);
    polish(*least);
  }
  if (!hiFits)
    return;
  for (int i = 0; i < 24 && hi - lo > std::max<uint64_t>(1, hi / 64); ++i) {
    uint64_t mid = lo + (hi - lo) / 2;
    SmallVector<unsigned> plan;
    if (tryWeight(mid, &plan)) {
      hi = mid;
      hiPlan = std::move(plan);
    } else {
      lo = mid;
      loPlan = std::move(plan);
    }
  }
  blend(lo, loPlan, hiPlan);
  if (found)
    polish(SmallVector<unsigned>(best.begin(), best.end()));
  // The cheapest plan (which does not fit) joined with the best that
  // does: on a training step the weight's plans can hold far less than the
  // budget, and plans nearer the unconstrained one fit.
  if (found)
    blend(0, unconstrained, SmallVector<unsigned>(best.begin(), best.end()));
}

/// A plan `plan` that fits (or holds every value at its least) was found at
/// a weight that also made the values that hold little memory
/// (activations) trade time for bytes. Keeping `plan`'s choices for the
/// arguments, the rest is solved again for time alone; where that plan
/// does not fit, the values live where it is over the budget keep `plan`'s
/// choices too, and so on, a few rounds. Only plans: the bounds are unchanged.
void BudgetSearch::polish(ArrayRef<unsigned> plan) {
  std::fill(fixed.begin(), fixed.end(), -1);
  for (auto [v, var] : llvm::enumerate(p.vars))
    if (var.kind == Variable::Kind::Argument)
      fixed[v] = plan[v];
  for (int round = 0; round < 8; ++round) {
    std::pair<Cost, SmallVector<unsigned>> solved = p.solve(0, fixed);
    const SmallVector<unsigned> &polished = solved.second;
    Evaluation e;
    if (solved.first >= kForbidden || consider(polished, &e))
      break;
    // Every point over the budget, not only the peak: identical layers
    // peak alike, one after the other. over[q]: the points before q that
    // are over it.
    std::vector<int64_t> at = p.memoryAt(polished);
    std::vector<unsigned> over(at.size() + 1, 0);
    for (size_t q = 0; q < at.size(); ++q)
      over[q + 1] = over[q] + (at[q] > budget);
    bool more = false;
    for (const LiveValue &l : p.live) {
      unsigned end = std::min<size_t>(l.last + 1, at.size());
      if (fixed[l.var] < 0 && l.def < end && over[end] > over[l.def]) {
        fixed[l.var] = plan[l.var];
        more = true;
      }
    }
    if (!more)
      break;
  }
  std::fill(fixed.begin(), fixed.end(), -1);
}

/// Between the cheaper plan at weight `lo`, which does not fit, and the
/// one at the next weight, which does, memory often falls by a whole
/// stack's worth at once: identical layers change their layouts at the same
/// weight. A plan in between takes the fitting plan's choices on a part of
/// the variables where the two differ (the first k in the program's order,
/// or the last k), the rest as in the other plan or solved again at `lo`:
/// the least k that fits, by bisection, each way. Only plans: the bounds
/// are unchanged.
void BudgetSearch::blend(uint64_t lo, ArrayRef<unsigned> loPlan,
                         ArrayRef<unsigned> hiPlan) {
  SmallVector<unsigned> differ;
  for (unsigned v = 0; v < loPlan.size(); ++v)
    if (loPlan[v] != hiPlan[v] && p.vars[v].kind != Variable::Kind::Copy)
      differ.push_back(v);
  if (differ.size() < 2)
    return;
  for (bool fromEnd : {false, true}) {
    auto fits = [&](size_t k) {
      std::fill(fixed.begin(), fixed.end(), -1);
      SmallVector<unsigned> mix(loPlan.begin(), loPlan.end());
      for (size_t i = 0; i < k; ++i) {
        unsigned v = differ[fromEnd ? differ.size() - 1 - i : i];
        fixed[v] = hiPlan[v];
        mix[v] = hiPlan[v];
      }
      // The two plans joined as they are (part of the stack laid out one
      // way, the rest the other), and the rest solved again at `lo`.
      bool joined = consider(mix);
      auto [cost, plan] = p.solve(lo, fixed);
      return (cost < kForbidden && consider(plan)) || joined;
    };
    // The least k that fits, assuming more fixed choices fit no worse.
    size_t a = 0, b = differ.size();
    while (b - a > 1) {
      size_t mid = a + (b - a) / 2;
      (fits(mid) ? b : a) = mid;
    }
  }
  std::fill(fixed.begin(), fixed.end(), -1);
}

/// Where the branch and bound stopped short: for each argument, the best
/// plan at the bound's weight that lays it out otherwise than the best plan
/// does (what `explain` shows as its runner-up), kept when it fits and is
/// cheaper; then again around the better plan, a few rounds, at most as
/// many solves as the branch and bound's nodes. Only plans: the bounds are
/// unchanged.
void BudgetSearch::tryOtherArgumentLayouts() {
  unsigned solves = 0;
  for (int round = 0; round < 4; ++round) {
    SmallVector<unsigned> around(best.begin(), best.end());
    Cost before = bestEval.total();
    for (auto [v, var] : llvm::enumerate(p.vars)) {
      if (var.kind != Variable::Kind::Argument || var.pinned ||
          var.choices.size() < 2)
        continue;
      if (solves++ >= maxNodes)
        return;
      auto [cost, plan] =
          p.solve(boundWeight, {}, std::make_pair(unsigned(v), around[v]));
      if (cost < kForbidden)
        consider(plan);
    }
    if (bestEval.total() >= before)
      return;
  }
}

/// The weight on the peak point bounds only that point's memory: a plan
/// that moves its memory elsewhere escapes it. Weights on every point (a
/// subgradient ascent from that weight, Polyak's step towards the best plan
/// that fits) bound every point at once: each minimum less the weights
/// times the budget is a lower bound too, and each minimum a plan. A few
/// dozen solves, fewer than the branch and bound's nodes.
void BudgetSearch::weighEveryPoint() {
  if (!boundWeight || !found)
    return;
  // Integers throughout (2^-20 ps per byte), so that every machine takes
  // the same steps.
  constexpr Cost kMaxWeight = Cost(1) << 40, kMaxExcess = Cost(1) << 44;
  std::vector<Cost> w(p.numPoints, 0);
  w[p.peakPoint] = Cost(boundWeight);
  unsigned rounds = std::min<unsigned>(32, maxNodes);
  // Polyak's step, halved after 3 rounds without a better bound.
  unsigned halvings = 0, stale = 0;
  for (unsigned round = 0; round < rounds; ++round) {
    std::vector<uint64_t> at(p.numPoints);
    Cost total = 0;
    for (unsigned q = 0; q < p.numPoints; ++q) {
      at[q] = static_cast<uint64_t>(std::min(w[q], kMaxWeight));
      total += Cost(at[q]);
    }
    std::vector<SmallVector<Cost, 8>> weighted = p.weighBytes(at);
    auto [objective, plan] = p.solveWeighted(weighted);
    if (objective >= kForbidden)
      return;
    Cost share = (total * Cost(budget) + ((Cost(1) << 20) - 1)) >> 20;
    if (objective - share > rootBound) {
      rootBound = objective - share;
      pointWeights = std::move(weighted);
      pointAllowance = share;
      stale = 0;
    } else if (++stale == 3) {
      ++halvings;
      stale = 0;
    }
    consider(plan);
    // Step towards the best plan that fits: the bound's shortfall over the
    // squared excess of the points. (Points under the budget whose weight
    // is already 0 stay there.)
    std::vector<int64_t> memory = p.memoryAt(plan);
    std::vector<Cost> excess(p.numPoints);
    Cost norm = 0;
    for (unsigned q = 0; q < p.numPoints; ++q) {
      excess[q] = std::clamp(Cost(memory[q] - budget), -kMaxExcess, kMaxExcess);
      if (excess[q] > 0 || w[q] > 0)
        norm += excess[q] * excess[q];
    }
    Cost shortfall =
        std::min(bestEval.total() - (objective - share), Cost(1) << 60);
    if (norm == 0 || shortfall <= 0 || halvings > 40)
      return;
    for (unsigned q = 0; q < p.numPoints; ++q)
      w[q] = std::clamp(
          w[q] + (((shortfall << 20) * excess[q] / norm) >> halvings), Cost(0),
          kMaxWeight);
  }
}

int64_t BudgetSearch::minBytes(unsigned v, unsigned r) const {
  return fixed[v] >= 0 ? bytesOf(v, fixed[v], r) : p.leastBytes(v, r);
}

/// The least memory any plan below the node holds with `here` live: the
/// arguments' least blocks and those of the values.
int64_t BudgetSearch::leastMemoryAt(ArrayRef<const LiveValue *> here) const {
  int64_t total = 0;
  for (auto [v, var] : llvm::enumerate(p.vars))
    if (var.kind == Variable::Kind::Argument)
      total += minBytes(v, 0);
  for (const LiveValue *l : here)
    total += minBytes(l->var, l->result);
  return total;
}

bool BudgetSearch::memoryMayFit() const {
  return llvm::all_of(liveAt, [&](ArrayRef<const LiveValue *> here) {
    return leastMemoryAt(here) <= budget;
  });
}

/// Constrains `point` too, and orders the variables to branch on again.
void BudgetSearch::addPoint(unsigned point) {
  points.push_back(point);
  liveAt.emplace_back();
  for (const LiveValue &l : p.live)
    if (l.isLiveAt(point))
      liveAt.back().push_back(&l);
  SmallVector<std::pair<int64_t, unsigned>> keyed;
  llvm::SmallBitVector seen(p.vars.size());
  auto add = [&](unsigned v, unsigned r) {
    int64_t lo = INT64_MAX, hi = 0;
    for (unsigned c = 0; c < p.vars[v].choices.size(); ++c) {
      lo = std::min(lo, bytesOf(v, c, r));
      hi = std::max(hi, bytesOf(v, c, r));
    }
    if (hi > lo && !seen.test(v)) {
      seen.set(v);
      keyed.push_back({-(hi - lo), v});
    }
  };
  for (auto [v, var] : llvm::enumerate(p.vars))
    if (var.kind == Variable::Kind::Argument)
      add(v, 0);
  for (ArrayRef<const LiveValue *> here : liveAt)
    for (const LiveValue *l : here)
      add(l->var, l->result);
  llvm::sort(keyed);
  branchOrder.clear();
  for (auto &[key, v] : keyed)
    branchOrder.push_back(v);
}

const unsigned *BudgetSearch::nextBranchVariable() const {
  const unsigned *next =
      llvm::find_if(branchOrder, [&](unsigned v) { return fixed[v] < 0; });
  return next == branchOrder.end() ? nullptr : next;
}

void BudgetSearch::visit(Cost parentBound) {
  if (found && parentBound >= bestEval.total())
    return;
  if (nodes++ >= maxNodes) {
    capped = true;
    openBound = std::min(openBound, parentBound);
    return;
  }
  if (!memoryMayFit())
    return;
  auto [cost0, plan0] = p.solve(0, fixed);
  if (cost0 >= kForbidden)
    return;
  Cost bound = std::max(parentBound, cost0);
  bool fits0 = consider(plan0);
  SmallVector<unsigned> guide = plan0;
  if (!pointWeights.empty()) {
    auto [objective, plan1] = p.solveWeighted(pointWeights, fixed);
    bound = std::max(bound, objective - pointAllowance);
    consider(plan1);
    guide = std::move(plan1);
  } else if (boundWeight) {
    auto [objective, plan1] = p.solve(boundWeight, fixed);
    bound = std::max(bound, objective - allowance(boundWeight));
    consider(plan1);
    guide = std::move(plan1);
  }
  // The least cost here fits: nothing below this node is cheaper.
  if (fits0 || (found && bound >= bestEval.total()))
    return;
  const unsigned *next = nextBranchVariable();
  if (!next) {
    // Every variable that holds memory at the constrained points is fixed
    // and the cheapest plan peaks at another point: constrain it too.
    unsigned peak = p.evaluate(plan0).peakPoint;
    if (llvm::is_contained(points, peak))
      return;
    addPoint(peak);
    if (!(next = nextBranchVariable()))
      return;
  }
  unsigned v = *next;
  // The guide's choice first, then the others in order.
  SmallVector<unsigned> choices = {guide[v]};
  for (unsigned c = 0; c < p.vars[v].choices.size(); ++c)
    if (c != guide[v])
      choices.push_back(c);
  for (unsigned c : choices) {
    fixed[v] = c;
    visit(bound);
  }
  fixed[v] = -1;
}

/// The error when no plan fits: the smallest budget that does, exactly
/// where a plan holds every value at its least block (leastPeakBound), else
/// bounds on it. searchWeights() has considered that plan.
LogicalResult BudgetSearch::reportNoFit() {
  int64_t atLeast = p.leastPeakBound();
  noFitAtLeast = atLeast;
  if (!leastPlan.empty())
    noFitAtMost = std::max(atLeast, leastMemory);
  std::string text;
  llvm::raw_string_ostream os(text);
  if (!leastPlan.empty())
    p.describePeak(os, leastPlan, p.evaluate(leastPlan));
  InFlightDiagnostic d = p.fn.emitError("mesh-auto-shard: no plan fits ");
  d << formatBytes(budget) << " (" << budget << " bytes) per device";
  if (capped)
    d << " among the " << maxNodes << " nodes searched";
  if (!leastPlan.empty() && leastMemory <= atLeast)
    d << ": the smallest budget that fits is " << formatBytes(leastMemory)
      << " (" << leastMemory
      << " bytes: a plan that holds every value at its least; what is live "
         "at its peak follows)\n"
      << text;
  else if (!leastPlan.empty())
    d << ": the smallest budget that fits is at least " << formatBytes(atLeast)
      << " and at most " << formatBytes(leastMemory)
      << " (the plan of least memory found; what is live at its peak "
         "follows)\n"
      << text;
  else
    d << ": the smallest budget that fits is at least " << formatBytes(atLeast);
  return failure();
}

FailureOr<bool> BudgetSearch::run(Cost &lowerBound, uint64_t &weight) {
  rootBound = lowerBound;
  searchWeights();
  weighEveryPoint();
  addPoint(p.peakPoint);
  visit(rootBound);
  if (found && capped)
    tryOtherArgumentLayouts();
  weight = boundWeight;
  if (!found)
    return reportNoFit();
  lowerBound =
      capped ? std::min(openBound, bestEval.total()) : bestEval.total();
  return lowerBound >= bestEval.total();
}

LogicalResult FunctionPlanner::run(bool explain, bool exhaustive) {
  auto [cost0, plan0] = solve(0);
  if (cost0 >= kForbidden)
    return reportImpossible();
  SmallVector<unsigned> best = plan0;
  Evaluation bestEval = evaluate(plan0);
  Cost lowerBound = bestEval.total();
  uint64_t weight = 0;
  bool proven = true;
  if (model.memoryBudget && bestEval.memory() > model.memoryBudget) {
    BudgetSearch search(*this, best, bestEval);
    FailureOr<bool> exact = search.run(lowerBound, weight);
    if (failed(exact)) {
      if (exhaustive) {
        auto [atLeast, atMost] = search.smallestBudget();
        (void)checkSmallestBudget(atLeast, atMost);
      }
      return failure();
    }
    proven = *exact;
  }
  // A narrowed problem's minimum is not the whole problem's: its bound is
  // the one narrow() kept.
  if (narrowed) {
    lowerBound = std::min(lowerBound, narrowed->bound);
    proven = false;
  }
  annotate(best);
  if (explain)
    explainPlan(best, bestEval, weight, lowerBound, proven);
  if (exhaustive && failed(checkExhaustively(best, proven)))
    return failure();
  return success();
}

LogicalResult FunctionPlanner::reportImpossible() {
  // A use whose consumer has one layout (an annotation, a constraint, an op
  // without a rule) that no layout of its producer reaches.
  for (const Use &u : uses) {
    const Variable &consumer = vars[u.consumer];
    if (consumer.choices.size() != 1 || u.producer == u.consumer)
      continue;
    ShardingAttr to = consumer.choices.front().operands[u.operand];
    if (llvm::any_of(vars[u.producer].choices, [&](const Choice &c) {
          return useCost(u, c.results[u.result], to).first < kForbidden;
        }))
      continue;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "mesh-auto-shard: no plan is possible: ";
    describeVariable(os, u.consumer);
    describeOperand(os, u);
    os << " must be " << layoutText(to) << ", and no layout of ";
    describeVariable(os, u.producer);
    os << " result " << u.result << " reaches it";
    if (to && to.isPartial())
      os << " (a pending reduction comes from a contraction or a reduction "
            "over a split dim, not from resharding)";
    Operation *at =
        consumer.kind == Variable::Kind::Op ? consumer.op : fn.getOperation();
    return at->emitError(text);
  }
  return fn.emitError("mesh-auto-shard: no plan is possible (the "
                      "annotations cannot be reached from each other)");
}

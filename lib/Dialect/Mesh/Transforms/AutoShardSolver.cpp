//===- AutoShardSolver.cpp - exact minimum of a pairwise cost -------------===//
//
// Bucket elimination: variables are eliminated one at a time; the factors
// that name a variable are summed and minimised over its choices into one
// table over their other variables, which joins the bucket of whichever of
// those comes next in the order. The last table is a number: the minimum.
// Going back down the order, each variable takes the choice that reached
// the minimum given the ones after it.
//
//===----------------------------------------------------------------------===//

#include "AutoShardSolver.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <set>

using namespace mlir;
using namespace mlir::mesh;

PairwiseMinimizer::PairwiseMinimizer(ArrayRef<unsigned> domains,
                                     bool structureOnly)
    : domains(domains), structureOnly(structureOnly) {}

void PairwiseMinimizer::addPair(unsigned a, unsigned b,
                                ArrayRef<AutoShardCost> table) {
  assert(a != b && "a pair of one variable");
  unsigned da = domains[a], db = domains[b];
  bool swap = a > b;
  unsigned lo = swap ? b : a, hi = swap ? a : b;
  if (structureOnly) {
    if (pairs.try_emplace({lo, hi}, factors.size()).second)
      factors.push_back({{lo, hi}, {}});
    return;
  }
  assert(table.size() == size_t(da) * db && "a table of the wrong size");
  // A pair seen before adds to its table.
  auto [it, inserted] = pairs.try_emplace({lo, hi}, factors.size());
  if (inserted)
    factors.push_back({{lo, hi}, std::vector<AutoShardCost>(size_t(da) * db)});
  Factor *f = &factors[it->second];
  for (unsigned i = 0; i < da; ++i)
    for (unsigned j = 0; j < db; ++j) {
      AutoShardCost c = table[size_t(i) * db + j];
      AutoShardCost &slot =
          swap ? f->table[size_t(j) * da + i] : f->table[size_t(i) * db + j];
      slot = std::min(slot + c, kForbidden);
    }
}

void PairwiseMinimizer::addFactor(ArrayRef<unsigned> vars,
                                  ArrayRef<AutoShardCost> table) {
  unsigned n = vars.size();
  // The factor's scope is ascending: permute the table to it.
  SmallVector<unsigned, 4> order(n);
  for (unsigned i = 0; i < n; ++i)
    order[i] = i;
  llvm::sort(order, [&](unsigned a, unsigned b) { return vars[a] < vars[b]; });
  Factor f;
  for (unsigned i : order)
    f.scope.push_back(vars[i]);
  assert(llvm::adjacent_find(f.scope) == f.scope.end() && "a variable twice");
  if (structureOnly) {
    factors.push_back(std::move(f));
    return;
  }
  // Strides of the given order.
  SmallVector<uint64_t, 4> given(n);
  uint64_t size = 1;
  for (int i = n - 1; i >= 0; --i) {
    given[i] = size;
    size *= domains[vars[i]];
  }
  assert(table.size() == size && "a table of the wrong size");
  f.table.resize(size);
  SmallVector<unsigned, 4> digit(n, 0); // Over the scope's order.
  for (uint64_t e = 0; e < size; ++e) {
    uint64_t from = 0;
    for (unsigned j = 0; j < n; ++j)
      from += digit[j] * given[order[j]];
    f.table[e] = std::min(table[from], kForbidden);
    for (int j = n - 1; j >= 0; --j) {
      if (++digit[j] < domains[f.scope[j]])
        break;
      digit[j] = 0;
    }
  }
  factors.push_back(std::move(f));
}

void PairwiseMinimizer::reorderScope(
    Factor &factor, function_ref<bool(unsigned, unsigned)> before) const {
  unsigned n = factor.scope.size();
  SmallVector<unsigned, 4> scope(factor.scope);
  llvm::sort(scope, before);
  if (scope == factor.scope)
    return;
  if (structureOnly) {
    factor.scope = std::move(scope);
    return;
  }
  // The old table's stride of each variable, in the new scope's order.
  SmallVector<uint64_t, 4> stride(n);
  uint64_t size = 1;
  for (int i = n - 1; i >= 0; --i) {
    unsigned at = llvm::find(scope, factor.scope[i]) - scope.begin();
    stride[at] = size;
    size *= domains[factor.scope[i]];
  }
  std::vector<AutoShardCost> table(size);
  SmallVector<unsigned, 4> digit(n, 0);
  uint64_t from = 0;
  for (uint64_t e = 0; e < size; ++e) {
    table[e] = factor.table[from];
    for (int j = n - 1; j >= 0; --j) {
      from += stride[j];
      if (++digit[j] < domains[scope[j]])
        break;
      from -= stride[j] * domains[scope[j]];
      digit[j] = 0;
    }
  }
  factor.scope = std::move(scope);
  factor.table = std::move(table);
}

std::vector<unsigned> PairwiseMinimizer::eliminationOrder() const {
  unsigned n = domains.size();
  // The interaction graph.
  std::vector<std::set<unsigned>> adj(n);
  for (const Factor &f : factors)
    for (unsigned a : f.scope)
      for (unsigned b : f.scope)
        if (a != b)
          adj[a].insert(b);
  // A variable's weight: the product of its neighbours' domains (capped).
  auto weight = [&](unsigned v) {
    uint64_t w = 1;
    for (unsigned u : adj[v]) {
      w *= domains[u];
      if (w > (uint64_t(1) << 40))
        return uint64_t(1) << 40;
    }
    return w;
  };
  // Greedy: least weight first, ties by variable; eliminating one joins its
  // neighbours.
  std::set<std::pair<uint64_t, unsigned>> queue;
  std::vector<uint64_t> current(n);
  for (unsigned v = 0; v < n; ++v) {
    current[v] = weight(v);
    queue.insert({current[v], v});
  }
  std::vector<unsigned> order;
  while (!queue.empty()) {
    unsigned v = queue.begin()->second;
    queue.erase(queue.begin());
    order.push_back(v);
    SmallVector<unsigned, 8> nbrs(adj[v].begin(), adj[v].end());
    for (unsigned a : nbrs) {
      adj[a].erase(v);
      for (unsigned b : nbrs)
        if (a != b)
          adj[a].insert(b);
    }
    for (unsigned a : nbrs) {
      queue.erase({current[a], a});
      current[a] = weight(a);
      queue.insert({current[a], a});
    }
  }
  return order;
}

void PairwiseMinimizer::addStrides(Step &step, ArrayRef<unsigned> scope) const {
  for (unsigned f : step.inputs) {
    const Factor &factor = factors[f];
    // Row-major strides of the input over its own scope.
    SmallVector<uint64_t, 4> own(factor.scope.size());
    uint64_t s = 1;
    for (int i = factor.scope.size() - 1; i >= 0; --i) {
      own[i] = s;
      s *= domains[factor.scope[i]];
    }
    SmallVector<uint64_t, 4> strides(scope.size(), 0);
    for (auto [i, v] : llvm::enumerate(factor.scope)) {
      if (v == step.var)
        assert(own[i] == 1 && "the eliminated variable must move fastest");
      else
        strides[llvm::find(scope, v) - scope.begin()] = own[i];
    }
    step.strides.push_back(std::move(strides));
  }
}

LogicalResult PairwiseMinimizer::prepare(uint64_t maxEntries,
                                         std::string &whyNot) {
  if (llvm::any_of(domains, [](unsigned d) { return d > 65535; })) {
    whyNot = "a variable has more than 65535 choices";
    return failure();
  }
  numInputFactors = factors.size();
  std::vector<unsigned> order = eliminationOrder();
  std::vector<unsigned> pos(order.size());
  for (auto [i, v] : llvm::enumerate(order))
    pos[v] = i;
  // Every table's scope runs from the variable eliminated last to the one
  // eliminated first, so the variable a step eliminates moves fastest in
  // each table it reads: solve() sums contiguous rows.
  auto laterFirst = [&](unsigned a, unsigned b) { return pos[a] > pos[b]; };
  for (unsigned f = 0; f < numInputFactors; ++f)
    reorderScope(factors[f], laterFirst);
  // Buckets: each factor goes to its variable eliminated first.
  std::vector<SmallVector<unsigned, 4>> bucket(order.size());
  auto place = [&](unsigned f) {
    ArrayRef<unsigned> scope = factors[f].scope;
    if (scope.empty()) {
      constants.push_back(f);
      return;
    }
    bucket[*llvm::min_element(scope, [&](unsigned a, unsigned b) {
      return pos[a] < pos[b];
    })].push_back(f);
  };
  for (unsigned f = 0; f < factors.size(); ++f)
    place(f);
  steps.clear();
  work = 0;
  for (unsigned x : order) {
    Step step;
    step.var = x;
    step.inputs = bucket[x];
    // The made table's scope: every input's variables but x.
    SmallVector<unsigned, 4> scope;
    for (unsigned f : step.inputs)
      for (unsigned v : factors[f].scope)
        if (v != x && !llvm::is_contained(scope, v))
          scope.push_back(v);
    llvm::sort(scope, laterFirst);
    uint64_t entries = domains[x];
    for (unsigned v : scope)
      if ((entries *= domains[v]) > maxEntries) {
        whyNot = "eliminating a variable would make a table of more than " +
                 std::to_string(maxEntries) + " entries";
        return failure();
      }
    work += entries * std::max<size_t>(1, step.inputs.size());
    addStrides(step, scope);
    factors.push_back({scope, {}});
    step.output = factors.size() - 1;
    place(step.output);
    steps.push_back(std::move(step));
  }
  return success();
}

void PairwiseMinimizer::eliminate(Step &step, ArrayRef<AutoShardCost> own) {
  Factor &out = factors[step.output];
  unsigned dx = domains[step.var];
  uint64_t entries = 1;
  for (unsigned v : out.scope)
    entries *= domains[v];
  out.table.assign(entries, 0);
  step.argmin.assign(entries, 0);
  unsigned k = step.inputs.size(), r = out.scope.size();
  SmallVector<uint64_t, 4> base(k, 0);
  SmallVector<unsigned, 4> digit(r, 0);
  // The inputs' tables, looked up once (not through the deque per sum).
  // The eliminated variable moves fastest in each (prepare()), so each
  // entry sums k contiguous rows of dx costs.
  SmallVector<const AutoShardCost *, 4> in;
  for (unsigned f : step.inputs)
    in.push_back(factors[f].table.data());
  SmallVector<AutoShardCost, 64> sum(dx);
  for (uint64_t e = 0; e < entries; ++e) {
    std::copy(own.begin(), own.end(), sum.begin());
    for (unsigned i = 0; i < k; ++i) {
      const AutoShardCost *row = in[i] + base[i];
      for (unsigned xv = 0; xv < dx; ++xv)
        sum[xv] += row[xv];
    }
    AutoShardCost best = sum[0];
    unsigned arg = 0;
    for (unsigned xv = 1; xv < dx; ++xv)
      if (sum[xv] < best) {
        best = sum[xv];
        arg = xv;
      }
    out.table[e] = std::min(best, kForbidden);
    step.argmin[e] = static_cast<uint16_t>(arg);
    // The next entry: the last variable of the scope moves fastest.
    for (int j = r - 1; j >= 0; --j) {
      unsigned d = domains[out.scope[j]];
      for (unsigned i = 0; i < k; ++i)
        base[i] += step.strides[i][j];
      if (++digit[j] < d)
        break;
      for (unsigned i = 0; i < k; ++i)
        base[i] -= step.strides[i][j] * d;
      digit[j] = 0;
    }
  }
}

namespace {
/// The steps of one solve() kept to find equal ones: steps that read equal
/// tables make equal tables, so the identical layers of a stack are
/// eliminated once each and their copies take the result. Equality is
/// checked in full, not only by the hash; the steps kept are bounded by a
/// count of bytes, so that every machine reuses the same steps.
class EqualSteps {
public:
  /// What a step reads: its shape (the variable's domain, the made table's
  /// domains, each input's strides over them), its own costs, its inputs.
  struct Reads {
    SmallVector<unsigned, 12> shape;
    ArrayRef<AutoShardCost> own;
    SmallVector<const std::vector<AutoShardCost> *, 4> tables;
    uint64_t hash = 0;
  };
  explicit EqualSteps(uint64_t maxBytes) : maxBytes(maxBytes) {}

  /// Hashes `r`.
  static void hash(Reads &r) {
    uint64_t h = llvm::hash_combine_range(r.shape.begin(), r.shape.end());
    forEachPart(r, [&](const AutoShardCost *data, size_t n) {
      h = llvm::hash_combine(h, n,
                             llvm::xxh3_64bits(ArrayRef<uint8_t>(
                                 reinterpret_cast<const uint8_t *>(data),
                                 n * sizeof(AutoShardCost))));
    });
    r.hash = h;
  }
  /// A kept step that read what `r` reads: its table and choices.
  const std::pair<std::vector<AutoShardCost>, std::vector<uint16_t>> *
  find(const Reads &r) const {
    auto it = byHash.find(r.hash);
    if (it == byHash.end())
      return nullptr;
    for (unsigned k : it->second)
      if (same(kept[k], r))
        return &kept[k].made;
    return nullptr;
  }
  /// Keeps a step that read `r` and made `table` and `argmin`, if the
  /// bound allows.
  void add(const Reads &r, const std::vector<AutoShardCost> &table,
           const std::vector<uint16_t> &argmin) {
    uint64_t size = r.own.size();
    for (const std::vector<AutoShardCost> *t : r.tables)
      size += t->size();
    uint64_t bytes = (size + table.size()) * sizeof(AutoShardCost) +
                     argmin.size() * sizeof(uint16_t);
    if (bytes > maxBytes - used)
      return;
    used += bytes;
    Kept k;
    k.shape = r.shape;
    k.read.reserve(size);
    forEachPart(r, [&](const AutoShardCost *data, size_t n) {
      k.read.insert(k.read.end(), data, data + n);
    });
    k.made = {table, argmin};
    byHash[r.hash].push_back(kept.size());
    kept.push_back(std::move(k));
  }

private:
  struct Kept {
    SmallVector<unsigned, 12> shape;
    std::vector<AutoShardCost> read;
    std::pair<std::vector<AutoShardCost>, std::vector<uint16_t>> made;
  };
  /// The costs `r` reads, in order: its own, then each input's table.
  static void
  forEachPart(const Reads &r,
              function_ref<void(const AutoShardCost *, size_t)> part) {
    part(r.own.data(), r.own.size());
    for (const std::vector<AutoShardCost> *t : r.tables)
      part(t->data(), t->size());
  }
  static bool same(const Kept &k, const Reads &r) {
    if (ArrayRef<unsigned>(k.shape) != ArrayRef<unsigned>(r.shape))
      return false;
    size_t at = 0;
    bool equal = true;
    forEachPart(r, [&](const AutoShardCost *data, size_t n) {
      equal = equal && at + n <= k.read.size() &&
              std::equal(data, data + n, k.read.begin() + at);
      at += n;
    });
    return equal && at == k.read.size();
  }

  uint64_t maxBytes, used = 0;
  std::vector<Kept> kept;
  llvm::DenseMap<uint64_t, SmallVector<unsigned, 1>> byHash;
};
} // namespace

AutoShardCost
PairwiseMinimizer::solve(ArrayRef<SmallVector<AutoShardCost, 8>> unary,
                         SmallVectorImpl<unsigned> &choice) {
  assert(!structureOnly && "solving a structure without tables");
  EqualSteps equal(kMemoBytes);
  for (Step &step : steps) {
    ArrayRef<AutoShardCost> own = unary[step.var];
    Factor &out = factors[step.output];
    uint64_t entries = 1;
    for (unsigned v : out.scope)
      entries *= domains[v];
    // Small steps cost less than their comparison.
    if (entries * own.size() * std::max<size_t>(1, step.inputs.size()) <
        memoMinSums) {
      eliminate(step, own);
    } else {
      EqualSteps::Reads reads;
      reads.shape.push_back(domains[step.var]);
      for (unsigned v : out.scope)
        reads.shape.push_back(domains[v]);
      for (const SmallVector<uint64_t, 4> &strides : step.strides)
        for (uint64_t stride : strides)
          reads.shape.push_back(static_cast<unsigned>(stride));
      reads.own = own;
      for (unsigned f : step.inputs)
        reads.tables.push_back(&factors[f].table);
      EqualSteps::hash(reads);
      if (const auto *made = equal.find(reads)) {
        out.table = made->first;
        step.argmin = made->second;
      } else {
        eliminate(step, own);
        equal.add(reads, out.table, step.argmin);
      }
    }
    // Tables made by earlier steps are read once: free them.
    for (unsigned f : step.inputs)
      if (f >= numInputFactors)
        std::vector<AutoShardCost>().swap(factors[f].table);
  }
  AutoShardCost total = 0;
  for (unsigned f : constants)
    total += factors[f].table[0];
  total = std::min(total, kForbidden);
  choice.assign(domains.size(), 0);
  for (const Step &step : llvm::reverse(steps)) {
    const Factor &out = factors[step.output];
    uint64_t index = 0;
    for (unsigned v : out.scope)
      index = index * domains[v] + choice[v];
    choice[step.var] = step.argmin[index];
  }
  return total;
}

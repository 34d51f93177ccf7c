//===- Resharding.cpp - plans that move a tensor between shardings --------===//
//
// The planner searches the layouts a tensor can pass through (for each dim,
// its axes, major to minor, plus the axes of a pending reduction) for the
// plan that sends the fewest bytes per device. From a layout, the steps are:
//
//  - finish any subset of the pending reductions the target does not keep,
//    with one all_reduce, or with one reduce_scatter that appends the
//    reduced axes, in some order, to the minor end of a dim;
//  - move a group at the minor end of one dim to the minor end of another
//    with one all_to_all;
//  - gather a group at the minor end of a dim with one all_gather;
//  - append free axes that the target splits some dim over to a dim with one
//    all_slice (no communication).
//
// Each step is priced by getStepBytesPerDevice on the block it starts from;
// every layout on the way must divide the tensor. Dijkstra's algorithm finds
// the cheapest plan, fewest steps among equals, and the first found among
// those (the moves are listed in a fixed order), so output is stable. Plans
// are short and meshes small: three axes on a rank-2 tensor have a few
// hundred layouts, and the search stops at the target.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <queue>

using namespace mlir;
using namespace mlir::mesh;

ShardingLayout ShardingLayout::get(ShardingAttr sharding) {
  ShardingLayout layout;
  for (unsigned d = 0; d < sharding.getRank(); ++d) {
    SmallVector<std::string> axes;
    for (StringAttr a : sharding.getDimAxes(d))
      axes.push_back(a.getValue().str());
    layout.dims.push_back(std::move(axes));
  }
  for (StringRef a : sharding.getPartialAxisNames())
    layout.partial.push_back(a.str());
  layout.partialKind = sharding.getPartialKind();
  layout.halo.assign(sharding.getHalo().begin(), sharding.getHalo().end());
  return layout;
}

ShardingLayout ShardingLayout::replicated(unsigned rank) {
  ShardingLayout layout;
  layout.dims.resize(rank);
  return layout;
}

ShardingAttr ShardingLayout::toAttr(FlatSymbolRefAttr mesh) const {
  SmallVector<SmallVector<StringRef>> dimRefs;
  for (const auto &axes : dims)
    dimRefs.push_back(SmallVector<StringRef>(axes.begin(), axes.end()));
  SmallVector<StringRef> partialRefs(partial.begin(), partial.end());
  return ShardingAttr::get(mesh, dimRefs, partialRefs, partialKind, halo);
}

bool mlir::mesh::sameLayout(ShardingAttr a, ShardingAttr b) {
  if (a == b)
    return true;
  if (!a || !b)
    return (!a || a.isFullyReplicated()) && (!b || b.isFullyReplicated());
  if (a.getDims() != b.getDims() || a.getPartialAxes() != b.getPartialAxes())
    return false;
  if (a.hasHalo() || b.hasHalo())
    for (unsigned d = 0; d < a.getRank(); ++d) {
      auto [aLo, aHi] = a.getDimHalo(d);
      auto [bLo, bHi] = b.getDimHalo(d);
      if (aLo + aHi != bLo + bHi)
        return false;
    }
  return !a.isPartial() || a.getPartialKind() == b.getPartialKind();
}

ShardingAttr mlir::mesh::withoutPartial(ShardingAttr s) {
  if (!s || !s.isPartial())
    return s;
  MLIRContext *ctx = s.getContext();
  return ShardingAttr::get(ctx, s.getMesh(), s.getDims(), AxisListAttr(),
                           ReductionKind::Sum, s.getHalo());
}

ShardingAttr mlir::mesh::withoutHalo(ShardingAttr s) {
  return s && s.hasHalo() ? s.withHalo({}) : s;
}

ShardingLayout mlir::mesh::layoutOf(ShardingAttr s, unsigned rank) {
  return s ? ShardingLayout::get(s) : ShardingLayout::replicated(rank);
}

int64_t mlir::mesh::getElementBytes(Type element) {
  if (element.isIntOrFloat())
    return (element.getIntOrFloatBitWidth() + 7) / 8;
  // An index is lowered to the host's 64-bit integer, a complex number to
  // its two parts.
  if (isa<IndexType>(element))
    return IndexType::kInternalStorageBitWidth / 8;
  if (auto complex = dyn_cast<ComplexType>(element))
    return 2 * getElementBytes(complex.getElementType());
  return 1;
}

int64_t mlir::mesh::getStepBytesPerDevice(ReshardStep::Kind kind,
                                          int64_t inputBytes,
                                          int64_t groupSize) {
  // floor(k * inputBytes / groupSize), without forming k * inputBytes.
  auto share = [&](int64_t k) {
    return k * (inputBytes / groupSize) +
           k * (inputBytes % groupSize) / groupSize;
  };
  switch (kind) {
  case ReshardStep::Kind::AllReduce:
    return share(2 * (groupSize - 1));
  case ReshardStep::Kind::ReduceScatter:
  case ReshardStep::Kind::AllToAll:
    return share(groupSize - 1);
  case ReshardStep::Kind::AllGather:
    return (groupSize - 1) * inputBytes;
  case ReshardStep::Kind::AllSlice:
    return 0;
  }
  llvm_unreachable("unknown resharding step");
}

int64_t mlir::mesh::getPlanBytes(const ShardingLayout &src,
                                 ArrayRef<ReshardStep> steps,
                                 int64_t tensorBytes,
                                 function_ref<int64_t(StringRef)> axisSize) {
  int64_t split = 1;
  for (const auto &axes : src.dims)
    for (const std::string &axis : axes)
      split *= axisSize(axis);
  int64_t bytes = 0;
  for (const ReshardStep &step : steps) {
    int64_t n = 1;
    for (const std::string &axis : step.axes)
      n *= axisSize(axis);
    bytes += getStepBytesPerDevice(step.kind, tensorBytes / split, n);
    if (step.kind == ReshardStep::Kind::ReduceScatter ||
        step.kind == ReshardStep::Kind::AllSlice)
      split *= n;
    else if (step.kind == ReshardStep::Kind::AllGather)
      split /= n;
  }
  return bytes;
}

/// True when combining equal values with `kind` gives the value back: a
/// value held whole on every device of a group is then already a valid
/// pending reduction of that kind over the group.
static bool isIdempotent(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Avg:
  case ReductionKind::Max:
  case ReductionKind::Min:
  case ReductionKind::And:
  case ReductionKind::Or:
    return true;
  default:
    return false;
  }
}

/// Fails, with a reason in `whyNot`, when no plan takes `src` to `dst`: the
/// ranks differ, or the target has a pending reduction the source has not
/// and its kind would change a value held whole (sum, prod, xor). For the
/// other kinds no step is needed: once the plan has gathered whatever the
/// target does not split, every device of the group holds the same value.
static LogicalResult checkPlannable(const ShardingLayout &src,
                                    const ShardingLayout &dst,
                                    std::string &whyNot) {
  if (src.dims.size() != dst.dims.size()) {
    whyNot = "the shardings have different ranks";
    return failure();
  }
  for (const std::string &axis : dst.partial)
    if (!llvm::is_contained(src.partial, axis) &&
        !isIdempotent(dst.partialKind)) {
      whyNot = "the target has a pending reduction over \"" + axis +
               "\" that the source does not have";
      return failure();
    }
  if (!dst.partial.empty() && !src.partial.empty() &&
      src.partialKind != dst.partialKind) {
    whyNot = "the pending reductions are of different kinds";
    return failure();
  }
  return success();
}

namespace {
/// The size a `?` axis is priced at. Any fixed size keeps plans
/// deterministic; a large one makes steps over the axis dear, so plans run
/// them on small blocks.
constexpr int64_t kUnknownAxisPrice = 16;
/// The most devices the axes of one plan may span: prices are in units of
/// 1/D^2 of the tensor and must stay far below 2^63.
constexpr int64_t kMaxPricedDevices = int64_t(1) << 24;

/// A layout as the search sees it: each dim's axes, major to minor, as
/// indices into PlanSearch's axes, and the axes of pending reductions as a
/// mask.
struct Layout {
  SmallVector<SmallVector<uint8_t, 4>, 4> dims;
  uint64_t pending = 0;

  /// A string that tells layouts apart, to key the table of those reached
  /// (inline up to 32 bytes: the search makes one per move it tries).
  SmallString<32> getKey() const {
    SmallString<32> key;
    for (const auto &axes : dims) {
      key.append(axes.begin(), axes.end());
      key.push_back('\xff');
    }
    key.append(reinterpret_cast<const char *>(&pending),
               reinterpret_cast<const char *>(&pending) + sizeof(pending));
    return key;
  }
  /// The axes on some dim, as a mask.
  uint64_t getSplitMask() const {
    uint64_t mask = 0;
    for (const auto &axes : dims)
      for (uint8_t a : axes)
        mask |= uint64_t(1) << a;
    return mask;
  }
};

/// One step of a plan, with axis indices (see ReshardStep).
struct Move {
  ReshardStep::Kind kind = ReshardStep::Kind::AllSlice;
  SmallVector<uint8_t, 4> axes;
  int64_t dim = -1, concatDim = -1;
};

/// A layout the search reached, the move that reached it from `parent`, and
/// the plan's price so far.
struct Node {
  Layout layout;
  Move move;
  size_t parent;
  int64_t bytes;
  unsigned steps;
};

/// Dijkstra's search over layouts, from the source to the target, by bytes
/// per device, then steps. Prices are in units of 1/D^2 of the tensor's
/// bytes, D the product of the sizes of the axes either layout names: every
/// step's price is then a whole number (a block is D^2/P units, P the
/// devices along its dims, and every group size divides D).
class PlanSearch {
public:
  PlanSearch(const ShardingLayout &src, const ShardingLayout &dst,
             ArrayRef<int64_t> shape,
             function_ref<int64_t(StringRef)> axisSize);
  /// Fails, with a reason in `whyNot`, when the layouts name too many axes
  /// or devices to price.
  LogicalResult checkPriceable(std::string &whyNot) const;
  /// The cheapest plan, ties broken by fewer steps, then by the order in
  /// which forEachMove lists moves; failure (with `whyNot`) when no
  /// sequence of moves reaches the target (a layout that splits a dim over
  /// devices that do not divide it, found only here when some of them are
  /// `?`).
  FailureOr<SmallVector<ReshardStep>> findPlan(std::string &whyNot) const;

private:
  uint8_t getAxisIndex(StringRef name);
  Layout getLayout(const ShardingLayout &layout, uint64_t (&masks)[2],
                   SmallVectorImpl<uint64_t> &dimMasks);
  /// True when dim `dim` of a layout may be split over `axes`.
  bool fits(unsigned dim, ArrayRef<uint8_t> axes) const;
  /// The priced number of devices of a group over `axes`.
  int64_t getPricedSize(ArrayRef<uint8_t> axes) const;
  /// Calls `visit` with each move from `from` and the layout it reaches:
  /// reductions finished, all_to_all, all_gather, all_slice, in that order.
  void forEachMove(const Layout &from,
                   function_ref<void(Move &, Layout &)> visit) const;
  SmallVector<ReshardStep> getSteps(ArrayRef<Node> nodes, size_t last) const;

  ArrayRef<int64_t> shape;
  SmallVector<std::string> names;
  /// Each axis's size (kDynamic for `?`) and the size it is priced at.
  SmallVector<int64_t> sizes, pricedSizes;
  Layout source, target;
  /// Per dim, the axes the source and the target split it over.
  SmallVector<uint64_t> sourceDims, targetDims;
  /// The pending reductions to finish, the axes all_slice may add (those the
  /// target splits dims over), and the reduction kind.
  uint64_t finishable = 0, sliceable = 0;
  ReductionKind reduction;
  int64_t devices = 1;
};
} // namespace

PlanSearch::PlanSearch(const ShardingLayout &src, const ShardingLayout &dst,
                       ArrayRef<int64_t> shape,
                       function_ref<int64_t(StringRef)> axisSize)
    : shape(shape), reduction(src.partialKind) {
  uint64_t srcMasks[2], dstMasks[2];
  source = getLayout(src, srcMasks, sourceDims);
  target = getLayout(dst, dstMasks, targetDims);
  finishable = srcMasks[1] & ~dstMasks[1];
  sliceable = dstMasks[0];
  for (const std::string &name : names) {
    int64_t size = axisSize(name);
    int64_t priced = ShapedType::isDynamic(size) ? kUnknownAxisPrice : size;
    sizes.push_back(size);
    pricedSizes.push_back(priced);
    devices = priced > kMaxPricedDevices / devices ? kMaxPricedDevices + 1
                                                   : devices * priced;
  }
}

uint8_t PlanSearch::getAxisIndex(StringRef name) {
  auto *it = llvm::find(names, name);
  if (it == names.end())
    it = names.insert(names.end(), name.str());
  return it - names.begin();
}

/// `layout` with axis indices; `masks` receives its split and its pending
/// axes, `dimMasks` each dim's axes.
Layout PlanSearch::getLayout(const ShardingLayout &layout, uint64_t (&masks)[2],
                             SmallVectorImpl<uint64_t> &dimMasks) {
  Layout out;
  masks[0] = masks[1] = 0;
  for (const auto &axes : layout.dims) {
    uint64_t mask = 0;
    SmallVector<uint8_t, 4> &indices = out.dims.emplace_back();
    for (const std::string &axis : axes) {
      indices.push_back(getAxisIndex(axis));
      mask |= uint64_t(1) << (indices.back() & 63);
    }
    dimMasks.push_back(mask);
    masks[0] |= mask;
  }
  for (const std::string &axis : layout.partial)
    masks[1] |= uint64_t(1) << (getAxisIndex(axis) & 63);
  out.pending = masks[1];
  return out;
}

LogicalResult PlanSearch::checkPriceable(std::string &whyNot) const {
  if (names.size() <= 64 && devices <= kMaxPricedDevices)
    return success();
  whyNot = "the shardings name " + std::to_string(names.size()) +
           " axes; the planner prices at most 64 axes and 2^24 devices";
  return failure();
}

bool PlanSearch::fits(unsigned dim, ArrayRef<uint8_t> axes) const {
  int64_t n = 1;
  uint64_t mask = 0;
  for (uint8_t a : axes) {
    mask |= uint64_t(1) << a;
    n = ShapedType::isDynamic(sizes[a]) || ShapedType::isDynamic(n)
            ? ShapedType::kDynamic
            : n * sizes[a];
  }
  if (!ShapedType::isDynamic(shape[dim]) && !ShapedType::isDynamic(n))
    return shape[dim] % n == 0;
  return (mask & ~sourceDims[dim]) == 0 || (mask & ~targetDims[dim]) == 0;
}

int64_t PlanSearch::getPricedSize(ArrayRef<uint8_t> axes) const {
  int64_t n = 1;
  for (uint8_t a : axes)
    n *= pricedSizes[a];
  return n;
}

/// The axes of `mask`, in index order.
static SmallVector<uint8_t, 4> getAxes(uint64_t mask) {
  SmallVector<uint8_t, 4> axes;
  for (uint8_t a = 0; mask; ++a, mask >>= 1)
    if (mask & 1)
      axes.push_back(a);
  return axes;
}

void PlanSearch::forEachMove(const Layout &from,
                             function_ref<void(Move &, Layout &)> visit) const {
  unsigned rank = from.dims.size();
  auto appended = [&](unsigned dim, ArrayRef<uint8_t> axes) {
    SmallVector<uint8_t, 4> all(from.dims[dim]);
    llvm::append_range(all, axes);
    return all;
  };
  // Any subset of the pending reductions to finish: with an all_reduce, or
  // with a reduce_scatter that appends it, in some order, to a dim.
  uint64_t open = from.pending & finishable;
  for (uint64_t subset = open; subset; subset = (subset - 1) & open) {
    Layout reduced = from;
    reduced.pending &= ~subset;
    Move allReduce{ReshardStep::Kind::AllReduce, getAxes(subset)};
    Layout next = reduced;
    visit(allReduce, next);
    for (unsigned d = 0; d < rank; ++d) {
      SmallVector<uint8_t, 4> order = getAxes(subset);
      do {
        SmallVector<uint8_t, 4> all = appended(d, order);
        if (!fits(d, all))
          continue;
        Move move{ReshardStep::Kind::ReduceScatter, order, d};
        Layout scattered = reduced;
        scattered.dims[d] = std::move(all);
        visit(move, scattered);
      } while (std::next_permutation(order.begin(), order.end()));
    }
  }
  // A minor group of one dim moved to the minor end of another.
  for (unsigned i = 0; i < rank; ++i)
    for (size_t len = 1; len <= from.dims[i].size(); ++len) {
      ArrayRef<uint8_t> group = ArrayRef(from.dims[i]).take_back(len);
      for (unsigned j = 0; j < rank; ++j) {
        if (j == i || !fits(j, appended(j, group)))
          continue;
        Move move{ReshardStep::Kind::AllToAll, SmallVector<uint8_t, 4>(group),
                  j, i};
        Layout next = from;
        next.dims[i].truncate(next.dims[i].size() - len);
        llvm::append_range(next.dims[j], group);
        visit(move, next);
      }
    }
  // A minor group of a dim gathered.
  for (unsigned d = 0; d < rank; ++d)
    for (size_t len = 1; len <= from.dims[d].size(); ++len) {
      ArrayRef<uint8_t> group = ArrayRef(from.dims[d]).take_back(len);
      Move move{ReshardStep::Kind::AllGather, SmallVector<uint8_t, 4>(group),
                d};
      Layout next = from;
      next.dims[d].truncate(next.dims[d].size() - len);
      visit(move, next);
    }
  // Free axes the target splits some dim over, appended to a dim in any
  // order (an axis sliced only to be gathered again would buy bytes with
  // collectives: the planner does not do that).
  uint64_t free = sliceable & ~from.getSplitMask() & ~from.pending;
  for (unsigned d = 0; d < rank; ++d) {
    SmallVector<uint8_t, 4> group;
    std::function<void(uint64_t)> extend = [&](uint64_t left) {
      for (uint8_t a : getAxes(left)) {
        group.push_back(a);
        SmallVector<uint8_t, 4> all = appended(d, group);
        if (fits(d, all)) {
          Move move{ReshardStep::Kind::AllSlice, group, d};
          Layout next = from;
          next.dims[d] = std::move(all);
          visit(move, next);
          extend(left & ~(uint64_t(1) << a));
        }
        group.pop_back();
      }
    };
    extend(free);
  }
}

FailureOr<SmallVector<ReshardStep>>
PlanSearch::findPlan(std::string &whyNot) const {
  std::vector<Node> nodes{{source, Move(), 0, 0, 0}};
  llvm::StringMap<size_t> best;
  best[source.getKey()] = 0;
  // (bytes, steps, node): the node made first wins a tie.
  using Entry = std::tuple<int64_t, unsigned, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  queue.push({0, 0, 0});
  while (!queue.empty()) {
    int64_t bytes;
    unsigned steps;
    size_t index;
    std::tie(bytes, steps, index) = queue.top();
    queue.pop();
    Layout layout = nodes[index].layout;
    if (best.lookup(layout.getKey()) != index)
      continue; // Reached again, cheaper, after this entry was queued.
    if (layout.dims == target.dims && (layout.pending & finishable) == 0)
      return getSteps(nodes, index);
    int64_t split = 1;
    for (const auto &axes : layout.dims)
      split *= getPricedSize(axes);
    int64_t block = devices / split * devices;
    forEachMove(layout, [&](Move &move, Layout &next) {
      int64_t price = bytes + getStepBytesPerDevice(move.kind, block,
                                                    getPricedSize(move.axes));
      auto [it, isNew] = best.try_emplace(next.getKey(), nodes.size());
      if (!isNew) {
        const Node &known = nodes[it->second];
        if (std::make_pair(known.bytes, known.steps) <=
            std::make_pair(price, steps + 1))
          return;
        it->second = nodes.size();
      }
      nodes.push_back(
          {std::move(next), std::move(move), index, price, steps + 1});
      queue.push({price, steps + 1, nodes.size() - 1});
    });
  }
  // Finishing, gathering and slicing reach any layout whose dims divide:
  // the target splits a dim over devices that do not divide it.
  whyNot = "no sequence of collectives reaches the target layout: it splits "
           "a dim over devices that do not divide it";
  for (auto [d, axes] : llvm::enumerate(target.dims)) {
    // The axes of known size that the dim's size does not divide by.
    int64_t known = 1;
    for (uint8_t a : axes)
      if (!ShapedType::isDynamic(sizes[a]))
        known *= sizes[a];
    if (ShapedType::isDynamic(shape[d]) || shape[d] % known == 0)
      continue;
    std::string list;
    for (auto [k, a] : llvm::enumerate(axes))
      list += (k ? ", \"" : "\"") + names[a] + "\"";
    whyNot += " (dim " + std::to_string(d) + " of size " +
              std::to_string(shape[d]) + " over axes [" + list + "])";
    break;
  }
  return failure();
}

SmallVector<ReshardStep> PlanSearch::getSteps(ArrayRef<Node> nodes,
                                              size_t last) const {
  SmallVector<ReshardStep> steps;
  for (size_t i = last; i != 0; i = nodes[i].parent) {
    const Move &move = nodes[i].move;
    ReshardStep step{move.kind, {}};
    for (uint8_t a : move.axes)
      step.axes.push_back(names[a]);
    step.dim = move.dim;
    step.concatDim = move.concatDim;
    step.reduction = reduction;
    steps.push_back(std::move(step));
  }
  std::reverse(steps.begin(), steps.end());
  return steps;
}

FailureOr<SmallVector<ReshardStep>>
mlir::mesh::planResharding(const ShardingLayout &src, const ShardingLayout &dst,
                           ArrayRef<int64_t> shape,
                           function_ref<int64_t(StringRef)> axisSize,
                           std::string &whyNot) {
  if (failed(checkPlannable(src, dst, whyNot)))
    return failure();
  PlanSearch search(src, dst, shape, axisSize);
  if (failed(search.checkPriceable(whyNot)))
    return failure();
  return search.findPlan(whyNot);
}

FailureOr<RankedTensorType>
mlir::mesh::getLocalType(MeshOp mesh, RankedTensorType global,
                         const ShardingLayout &layout, std::string &whyNot) {
  if (static_cast<int64_t>(layout.dims.size()) != global.getRank()) {
    whyNot = "the sharding has " + std::to_string(layout.dims.size()) +
             " dims but the tensor has rank " +
             std::to_string(global.getRank());
    return failure();
  }
  SmallVector<int64_t> shape(global.getShape());
  for (auto [d, axes] : llvm::enumerate(layout.dims)) {
    if (axes.empty())
      continue;
    SmallVector<StringRef> refs(axes.begin(), axes.end());
    int64_t n = mesh.getGroupSize(refs);
    if (ShapedType::isDynamic(shape[d]) || ShapedType::isDynamic(n)) {
      shape[d] = ShapedType::kDynamic;
      continue;
    }
    int64_t lo = layout.halo.empty() ? 0 : layout.halo[2 * d];
    int64_t hi = layout.halo.empty() ? 0 : layout.halo[2 * d + 1];
    int64_t core = shape[d] - lo - hi;
    auto axisList = [&, &dimAxes = axes] {
      std::string list;
      for (auto [k, a] : llvm::enumerate(dimAxes))
        list += (k ? ", \"" : "\"") + a + "\"";
      return "the " + std::to_string(n) + " devices of axes [" + list + "]";
    };
    if (core < 0 || core % n != 0) {
      whyNot = "dim " + std::to_string(d) + " of size " +
               std::to_string(shape[d]) +
               (lo || hi ? " less its halo [" + std::to_string(lo) + ", " +
                               std::to_string(hi) + "]"
                         : std::string()) +
               " does not divide by " + axisList();
      return failure();
    }
    if (lo > core / n || hi > core / n) {
      whyNot = "the halo [" + std::to_string(lo) + ", " + std::to_string(hi) +
               "] of dim " + std::to_string(d) + " is wider than the " +
               std::to_string(core / n) + " elements each of " + axisList() +
               " owns";
      return failure();
    }
    shape[d] = core / n + lo + hi;
  }
  return RankedTensorType::get(shape, global.getElementType());
}

/// The `valid` of a gather that makes dim `dim` of `whole` (its static
/// per-device type, the gather's result or the scatter's input) whole, where
/// the dim holds padding; null otherwise, or where the data is not a prefix
/// of each device's block.
static IntegerAttr validOf(OpBuilder &b, RankedTensorType whole, int64_t dim,
                           ArrayRef<SmallVector<std::string>> axesAfter,
                           ArrayRef<int64_t> dataSizes) {
  if (dataSizes.empty() || !axesAfter[dim].empty() || !whole.hasStaticShape() ||
      dataSizes[dim] < 0 || dataSizes[dim] >= whole.getDimSize(dim))
    return {};
  for (int64_t d = 0; d < dim; ++d)
    if (whole.getDimSize(d) != 1)
      return {};
  return b.getI64IntegerAttr(dataSizes[dim]);
}

namespace {
/// Emits the steps of a plan one by one, following the axes of each dim (for
/// the padded collectives).
struct StepEmitter {
  OpBuilder &b;
  Location loc;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  SmallVector<SmallVector<std::string>> dimAxes;
  ArrayRef<int64_t> dataSizes;

  // (Followed only for a padded value: the common case builds no strings.)
  void drop(int64_t dim, ArrayRef<std::string> axes) {
    if (dataSizes.empty())
      return;
    SmallVector<std::string> &list = dimAxes[dim];
    list.resize(list.size() >= axes.size() ? list.size() - axes.size() : 0);
  }
  void append(int64_t dim, ArrayRef<std::string> axes) {
    if (!dataSizes.empty())
      dimAxes[dim].append(axes.begin(), axes.end());
  }

  /// The dims of `type` other than `except` that hold padding and are whole
  /// on every device: a collective need not move their padding.
  SmallVector<int64_t> paddedWholeDims(RankedTensorType type, int64_t except) {
    SmallVector<int64_t> dims;
    if (dataSizes.empty() || !type.hasStaticShape())
      return dims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != except && dimAxes[d].empty() && dataSizes[d] >= 0 &&
          dataSizes[d] < type.getDimSize(d))
        dims.push_back(d);
    return dims;
  }

  /// `v` without the padding of `dims`, or with it back (zeros) at the
  /// sizes of `full`.
  Value trim(Value v, ArrayRef<int64_t> dims) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    for (int64_t d : dims)
      shape[d] = dataSizes[d];
    SmallVector<OpFoldResult> zeros(shape.size(), b.getIndexAttr(0)),
        ones(shape.size(), b.getIndexAttr(1)),
        sizes = getAsIndexOpFoldResult(b.getContext(), shape);
    return tensor::ExtractSliceOp::create(b, loc, type.clone(shape), v, zeros,
                                          sizes, ones);
  }
  Value restore(Value v, ArrayRef<int64_t> dims, RankedTensorType full) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    SmallVector<OpFoldResult> low(shape.size(), b.getIndexAttr(0)),
        high(shape.size(), b.getIndexAttr(0));
    for (int64_t d : dims) {
      high[d] = b.getIndexAttr(full.getDimSize(d) - shape[d]);
      shape[d] = full.getDimSize(d);
    }
    Value zero =
        arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
    return tensor::PadOp::create(b, loc, type.clone(shape), v, low, high, zero);
  }

  Value emit(Value local, const ReshardStep &step) {
    // Padding of whole dims beside the collective's stays where it is.
    bool moves = step.kind == ReshardStep::Kind::AllReduce ||
                 step.kind == ReshardStep::Kind::ReduceScatter ||
                 step.kind == ReshardStep::Kind::AllGather ||
                 step.kind == ReshardStep::Kind::AllToAll;
    auto before = cast<RankedTensorType>(local.getType());
    SmallVector<int64_t> trimmed;
    if (moves)
      trimmed = paddedWholeDims(
          before, step.kind == ReshardStep::Kind::AllReduce ? -1 : step.dim);
    if (!trimmed.empty())
      local = trim(local, trimmed);
    local = emitCollective(local, step);
    if (trimmed.empty())
      return local;
    auto after = cast<RankedTensorType>(local.getType());
    SmallVector<int64_t> full(after.getShape());
    for (int64_t d : trimmed)
      full[d] = before.getDimSize(d);
    return restore(local, trimmed, after.clone(full));
  }

  Value emitCollective(Value local, const ReshardStep &step) {
    auto type = cast<RankedTensorType>(local.getType());
    SmallVector<StringRef> refs(step.axes.begin(), step.axes.end());
    ArrayAttr axes = b.getStrArrayAttr(refs);
    int64_t n = mesh.getGroupSize(refs);
    SmallVector<int64_t> shape(type.getShape());
    auto scale = [&](int64_t dim, bool multiply) {
      if (ShapedType::isDynamic(shape[dim]) || ShapedType::isDynamic(n))
        shape[dim] = ShapedType::kDynamic;
      else
        shape[dim] = multiply ? shape[dim] * n : shape[dim] / n;
    };
    auto reduction = ReductionKindAttr::get(b.getContext(), step.reduction);
    auto dimAttr = b.getI64IntegerAttr(step.dim);
    switch (step.kind) {
    case ReshardStep::Kind::AllReduce:
      return AllReduceOp::create(b, loc, type, local, meshRef, axes, reduction);
    case ReshardStep::Kind::ReduceScatter: {
      IntegerAttr valid = validOf(b, type, step.dim, dimAxes, dataSizes);
      scale(step.dim, false);
      append(step.dim, step.axes);
      return ReduceScatterOp::create(b, loc, type.clone(shape), local, meshRef,
                                     axes, dimAttr, reduction, valid);
    }
    case ReshardStep::Kind::AllGather: {
      scale(step.dim, true);
      drop(step.dim, step.axes);
      RankedTensorType result = type.clone(shape);
      return AllGatherOp::create(
          b, loc, result, local, meshRef, axes, dimAttr,
          validOf(b, result, step.dim, dimAxes, dataSizes));
    }
    case ReshardStep::Kind::AllSlice:
      append(step.dim, step.axes);
      scale(step.dim, false);
      return AllSliceOp::create(b, loc, type.clone(shape), local, meshRef, axes,
                                dimAttr);
    case ReshardStep::Kind::AllToAll: {
      // The split dim whole and padded before, or the concat dim after:
      // only the data moves.
      IntegerAttr splitValid = validOf(b, type, step.dim, dimAxes, dataSizes);
      drop(step.concatDim, step.axes);
      append(step.dim, step.axes);
      scale(step.dim, false);
      scale(step.concatDim, true);
      RankedTensorType result = type.clone(shape);
      IntegerAttr concatValid =
          splitValid ? IntegerAttr()
                     : validOf(b, result, step.concatDim, dimAxes, dataSizes);
      return AllToAllOp::create(b, loc, result, local, meshRef, axes, dimAttr,
                                b.getI64IntegerAttr(step.concatDim), splitValid,
                                concatValid);
    }
    }
    llvm_unreachable("unknown resharding step");
  }
};
} // namespace

Value mlir::mesh::emitResharding(OpBuilder &b, Location loc, MeshOp mesh,
                                 Value local, ArrayRef<ReshardStep> steps,
                                 ShardingAttr from,
                                 ArrayRef<int64_t> dataSizes) {
  unsigned rank = cast<RankedTensorType>(local.getType()).getRank();
  StepEmitter emitter{b,    loc,
                      mesh, FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
                      {},   dataSizes};
  if (!dataSizes.empty()) {
    emitter.dimAxes = from ? ShardingLayout::get(from).dims
                           : ShardingLayout::replicated(rank).dims;
    if (emitter.dimAxes.size() != rank)
      emitter.dataSizes = {};
  }
  for (const ReshardStep &step : steps)
    local = emitter.emit(local, step);
  return local;
}

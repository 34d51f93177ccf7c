//===- Resharding.cpp - plans that move a tensor between shardings --------===//
//
// The planner works on layouts (for each dim, its axes, major to minor, plus
// the axes of a pending reduction) and proceeds in a fixed order, each step
// taking the tensor closer to the target:
//
//  1. Pending reductions the target does not keep are finished: with a
//     reduce_scatter along a dim when the target splits that dim, right after
//     the axes it already has in common, over exactly those axes (this moves
//     1/n of the bytes of an all_reduce); otherwise with one all_reduce.
//  2. An axis group at the minor end of one dim that the target needs next on
//     another dim moves there with one all_to_all (split the target dim,
//     concatenate the source dim), instead of a gather and a slice.
//  3. What a dim still has beyond its common prefix with the target leaves
//     with one all_gather over those axes.
//  4. What a dim still lacks joins with one all_slice (no communication).
//
// Each step keeps the layout valid (an axis is on at most one dim), and the
// sequence ends at the target: after step 3 every dim is a prefix of its
// target, and step 4 appends the rest.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "llvm/ADT/STLExtras.h"

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

/// Length of the common prefix of `a` and `b`.
static size_t commonPrefix(ArrayRef<std::string> a, ArrayRef<std::string> b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

/// A step of `kind` over `axes` on dim `dim` (all_to_all's split dim); what
/// the kind does not use keeps ReshardStep's defaults.
static ReshardStep makeStep(ReshardStep::Kind kind, ArrayRef<std::string> axes,
                            unsigned dim) {
  ReshardStep step{kind, SmallVector<std::string>(axes)};
  step.dim = dim;
  return step;
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
/// Builds a plan in the order of the file comment's four steps, keeping the
/// layout the steps so far have reached.
class ReshardPlanner {
public:
  ReshardPlanner(const ShardingLayout &src, const ShardingLayout &dst)
      : cur(src), dst(dst) {}

  /// 1. Finishes the pending reductions the target does not keep.
  void finishReductions();
  /// 2. Moves axis groups between dims with all_to_all while one can move.
  void moveAxisGroups();
  /// 3. Gathers what each dim has beyond its common prefix with the target.
  void gatherExtraAxes();
  /// 4. Slices what each dim still lacks.
  void sliceMissingAxes();
  /// The plan; the steps must have reached the target.
  SmallVector<ReshardStep> takeSteps();

private:
  unsigned getRank() const { return cur.dims.size(); }
  /// The first dim that a reduce_scatter finishing `finish` can split: the
  /// dim is a prefix of its target, which continues with `finish` in some
  /// order.
  std::optional<unsigned> findScatterDim(ArrayRef<std::string> finish) const;
  /// Moves one axis group with an all_to_all; false when none can move.
  bool moveOneAxisGroup();
  /// The longest group at the minor end of what dim `from` must lose that
  /// starts `need`, in the same order; empty when there is none.
  ArrayRef<std::string> getMovableGroup(unsigned from,
                                        ArrayRef<std::string> need) const;

  ShardingLayout cur;
  const ShardingLayout &dst;
  SmallVector<ReshardStep> steps;
};
} // namespace

void ReshardPlanner::finishReductions() {
  SmallVector<std::string> finish;
  for (const std::string &axis : cur.partial)
    if (!llvm::is_contained(dst.partial, axis))
      finish.push_back(axis);
  if (finish.empty())
    return;
  if (std::optional<unsigned> dim = findScatterDim(finish)) {
    ArrayRef<std::string> want = dst.dims[*dim];
    SmallVector<std::string> axes(
        want.slice(cur.dims[*dim].size(), finish.size()));
    ReshardStep step = makeStep(ReshardStep::Kind::ReduceScatter, axes, *dim);
    step.reduction = cur.partialKind;
    steps.push_back(std::move(step));
    llvm::append_range(cur.dims[*dim], axes);
  } else {
    ReshardStep step{ReshardStep::Kind::AllReduce, finish};
    step.reduction = cur.partialKind;
    steps.push_back(std::move(step));
  }
  llvm::erase_if(cur.partial, [&](const std::string &axis) {
    return llvm::is_contained(finish, axis);
  });
}

std::optional<unsigned>
ReshardPlanner::findScatterDim(ArrayRef<std::string> finish) const {
  SmallVector<std::string> sortedFinish(finish);
  llvm::sort(sortedFinish);
  for (unsigned d = 0; d < getRank(); ++d) {
    ArrayRef<std::string> have = cur.dims[d];
    ArrayRef<std::string> want = dst.dims[d];
    if (commonPrefix(have, want) != have.size() ||
        want.size() < have.size() + finish.size())
      continue;
    SmallVector<std::string> next(want.slice(have.size(), finish.size()));
    llvm::sort(next);
    if (next == sortedFinish)
      return d;
  }
  return std::nullopt;
}

void ReshardPlanner::moveAxisGroups() {
  while (moveOneAxisGroup()) {
  }
}

bool ReshardPlanner::moveOneAxisGroup() {
  for (unsigned j = 0; j < getRank(); ++j) {
    // Dim j must already be a prefix of its target and need more axes.
    size_t pj = commonPrefix(cur.dims[j], dst.dims[j]);
    if (pj != cur.dims[j].size() || pj == dst.dims[j].size())
      continue;
    ArrayRef<std::string> need = ArrayRef(dst.dims[j]).drop_front(pj);
    for (unsigned i = 0; i < getRank(); ++i) {
      if (i == j)
        continue;
      SmallVector<std::string> axes(getMovableGroup(i, need));
      if (axes.empty())
        continue;
      ReshardStep step = makeStep(ReshardStep::Kind::AllToAll, axes, j);
      step.concatDim = i;
      steps.push_back(std::move(step));
      cur.dims[i].resize(cur.dims[i].size() - axes.size());
      llvm::append_range(cur.dims[j], axes);
      return true;
    }
  }
  return false;
}

ArrayRef<std::string>
ReshardPlanner::getMovableGroup(unsigned from,
                                ArrayRef<std::string> need) const {
  ArrayRef<std::string> have = cur.dims[from];
  size_t extra = have.size() - commonPrefix(have, dst.dims[from]);
  for (size_t len = std::min(extra, need.size()); len > 0; --len) {
    ArrayRef<std::string> tail = have.take_back(len);
    if (std::equal(tail.begin(), tail.end(), need.begin()))
      return tail;
  }
  return {};
}

void ReshardPlanner::gatherExtraAxes() {
  for (unsigned d = 0; d < getRank(); ++d) {
    size_t p = commonPrefix(cur.dims[d], dst.dims[d]);
    if (p == cur.dims[d].size())
      continue;
    SmallVector<std::string> axes(ArrayRef(cur.dims[d]).drop_front(p));
    steps.push_back(makeStep(ReshardStep::Kind::AllGather, axes, d));
    cur.dims[d].resize(p);
  }
}

void ReshardPlanner::sliceMissingAxes() {
  for (unsigned d = 0; d < getRank(); ++d) {
    size_t p = cur.dims[d].size();
    if (p == dst.dims[d].size())
      continue;
    SmallVector<std::string> axes(ArrayRef(dst.dims[d]).drop_front(p));
    steps.push_back(makeStep(ReshardStep::Kind::AllSlice, axes, d));
    llvm::append_range(cur.dims[d], axes);
  }
}

SmallVector<ReshardStep> ReshardPlanner::takeSteps() {
  assert(cur.dims == dst.dims && "resharding plan must end at the target");
  return std::move(steps);
}

FailureOr<SmallVector<ReshardStep>>
mlir::mesh::planResharding(const ShardingLayout &src, const ShardingLayout &dst,
                           std::string &whyNot) {
  if (failed(checkPlannable(src, dst, whyNot)))
    return failure();
  ReshardPlanner planner(src, dst);
  planner.finishReductions();
  planner.moveAxisGroups();
  planner.gatherExtraAxes();
  planner.sliceMissingAxes();
  return planner.takeSteps();
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
    auto axisList = [&] {
      std::string list;
      for (auto [k, a] : llvm::enumerate(axes))
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

Value mlir::mesh::emitResharding(OpBuilder &b, Location loc, MeshOp mesh,
                                 Value local, ArrayRef<ReshardStep> steps) {
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  for (const ReshardStep &step : steps) {
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
    switch (step.kind) {
    case ReshardStep::Kind::AllReduce:
      local =
          AllReduceOp::create(b, loc, type, local, meshRef, axes, reduction);
      break;
    case ReshardStep::Kind::ReduceScatter:
      scale(step.dim, false);
      local = ReduceScatterOp::create(
          b, loc, RankedTensorType::get(shape, type.getElementType()), local,
          meshRef, axes, b.getI64IntegerAttr(step.dim), reduction);
      break;
    case ReshardStep::Kind::AllGather:
      scale(step.dim, true);
      local = AllGatherOp::create(
          b, loc, RankedTensorType::get(shape, type.getElementType()), local,
          meshRef, axes, b.getI64IntegerAttr(step.dim));
      break;
    case ReshardStep::Kind::AllSlice:
      scale(step.dim, false);
      local = AllSliceOp::create(
          b, loc, RankedTensorType::get(shape, type.getElementType()), local,
          meshRef, axes, b.getI64IntegerAttr(step.dim));
      break;
    case ReshardStep::Kind::AllToAll:
      scale(step.dim, false);
      scale(step.concatDim, true);
      local = AllToAllOp::create(
          b, loc, RankedTensorType::get(shape, type.getElementType()), local,
          meshRef, axes, b.getI64IntegerAttr(step.dim),
          b.getI64IntegerAttr(step.concatDim));
      break;
    }
  }
  return local;
}

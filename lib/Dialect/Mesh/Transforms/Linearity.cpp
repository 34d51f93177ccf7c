//===- Linearity.cpp - ops linear in some of their operands ---------------===//
//
// Each value gets a degree in the marked operands: 0 (fixed: it does not
// depend on them), 1 (linear) or none (anything else). The rules are those
// of polynomials of degree at most one with no constant term: a sum needs
// both sides of one degree (x + c is affine, not linear), a product at most
// one linear side.
//
//===----------------------------------------------------------------------===//

#include "Linearity.h"
#include "ShardingSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

using namespace mlir;
using namespace mlir::mesh;

namespace {
/// A value's degree: 0 fixed, 1 linear, std::nullopt neither.
using Degree = std::optional<unsigned>;

/// The degree of the one result of `op`, from its operands' degrees.
Degree getDegree(Operation *op, ArrayRef<Degree> in) {
  if (llvm::any_of(in, [](Degree d) { return !d; }))
    return std::nullopt;
  auto same = [&]() -> Degree {
    return in.size() == 2 && *in[0] == *in[1] ? in[0] : std::nullopt;
  };
  if (isa<arith::AddFOp, arith::SubFOp, arith::AddIOp, arith::SubIOp>(op))
    return same();
  if (isa<arith::NegFOp>(op))
    return in[0];
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return *in[0] + *in[1] <= 1 ? Degree(*in[0] + *in[1]) : std::nullopt;
  if (isa<arith::DivFOp>(op))
    return *in[1] == 0 ? in[0] : std::nullopt;
  if (isa<arith::SelectOp>(op))
    return *in[0] == 0 && *in[1] == *in[2] ? in[1] : std::nullopt;
  // Any other op is fixed when all its operands are, and nothing otherwise.
  if (llvm::all_of(in, [](Degree d) { return *d == 0; }) &&
      op->getNumRegions() == 0)
    return 0u;
  return std::nullopt;
}

/// The degree of what the body of `op` yields, its inputs' degrees given.
Degree getBodyDegree(linalg::LinalgOp op, ArrayRef<Degree> inputs) {
  Block *body = op.getBlock();
  llvm::DenseMap<Value, Degree> degrees;
  for (auto [arg, d] : llvm::zip(body->getArguments(), inputs))
    degrees[arg] = d;
  auto degreeOf = [&](Value v) -> Degree {
    auto it = degrees.find(v);
    if (it != degrees.end())
      return it->second;
    // Defined above the body (or the init's argument, checked unused).
    return v.getParentBlock() == body ? std::nullopt : Degree(0);
  };
  for (Operation &inner : body->without_terminator()) {
    if (inner.getNumResults() != 1)
      return std::nullopt;
    SmallVector<Degree> in;
    for (Value v : inner.getOperands())
      in.push_back(degreeOf(v));
    degrees[inner.getResult(0)] = getDegree(&inner, in);
  }
  Operation *yield = body->getTerminator();
  if (yield->getNumOperands() != 1)
    return std::nullopt;
  return degreeOf(yield->getOperand(0));
}
} // namespace

/// Whether `v` is all zeros: a zero constant, or a fill of zero.
static bool isZero(Value v) {
  if (matchPattern(v, m_AnyZeroFloat()) || matchPattern(v, m_Zero()))
    return true;
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && fill.hasPureTensorSemantics() &&
         (matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
          matchPattern(fill.getInputs()[0], m_Zero()));
}

bool mlir::mesh::isInsertIntoZeros(Operation *op) {
  auto insert = dyn_cast<tensor::InsertSliceOp>(op);
  return insert && isZero(insert.getDest());
}

bool mlir::mesh::isLinearIn(Operation *op, ArrayRef<bool> linear) {
  if (op->getNumResults() != 1 || linear.size() != op->getNumOperands() ||
      llvm::none_of(linear, [](bool b) { return b; }))
    return false;
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    // insert(p + q, d + e) = insert(p, d) + insert(q, e); with the
    // destination fixed, only when it is zero (each partial value would
    // carry it otherwise). The offsets, sizes and strides are fixed.
    if (llvm::any_of(linear.drop_front(2), [](bool b) { return b; }) ||
        !linear[0])
      return false;
    return linear[1] || isZero(insert.getDest());
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (!linalgOp.hasPureTensorSemantics() || linalgOp.getNumDpsInits() != 1 ||
        linalgOp.getNumParallelLoops() != linalgOp.getNumLoops() ||
        linalgOp.hasIndexSemantics() ||
        !linalgOp.getMatchingBlockArgument(linalgOp.getDpsInitOperand(0))
             .use_empty() ||
        linear[linalgOp.getDpsInitOperand(0)->getOperandNumber()])
      return false;
    if (hasWindowedOperand(linalgOp))
      return false;
    SmallVector<Degree> inputs;
    for (OpOperand *input : linalgOp.getDpsInputOperands())
      inputs.push_back(linear[input->getOperandNumber()] ? 1u : 0u);
    Degree d = getBodyDegree(linalgOp, inputs);
    return d && *d == 1;
  }
  if (!OpTrait::hasElementwiseMappableTraits(op) || op->getNumRegions() != 0)
    return false;
  SmallVector<Degree> in;
  for (bool b : linear)
    in.push_back(b ? 1u : 0u);
  Degree d = getDegree(op, in);
  return d && *d == 1;
}

std::optional<mesh::LinearPartial> mlir::mesh::findLinearPartial(
    Operation *op, const ShardingRule &rule, ArrayRef<AxisListAttr> factors,
    FlatSymbolRefAttr mesh, function_ref<ShardingAttr(Value)> placed,
    function_ref<bool(Value)> asLargeAsResult) {
  if (op->getNumResults() != 1 || rule.resultDims.size() != 1)
    return std::nullopt;
  auto hasHalo = [](ArrayRef<DimHalo> halos) {
    return llvm::any_of(halos, [](DimHalo h) { return h != DimHalo(); });
  };
  if (hasHalo(rule.getResultHalos(0)))
    return std::nullopt;
  LinearPartial linear;
  bool asLarge = false;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (hasHalo(rule.getOperandHalos(i)))
      return std::nullopt;
    ShardingAttr s = isa<RankedTensorType>(operand.getType()) ? placed(operand)
                                                              : ShardingAttr();
    linear.partial.push_back(s && s.isPartial());
    if (!linear.partial.back())
      continue;
    AxisListAttr axes = s.getPartialAxes();
    auto sameAxes = [&] {
      return linear.axes.size() == axes.size() &&
             llvm::all_of(axes, [&](StringAttr a) {
               return llvm::is_contained(linear.axes.getAxes(), a);
             });
    };
    if (s.getMesh() != mesh || s.getPartialKind() != ReductionKind::Sum ||
        (linear.axes && !sameAxes()) ||
        llvm::any_of(operand.getUsers(),
                     [&](Operation *user) { return user != op; }))
      return std::nullopt;
    if (!linear.axes)
      linear.axes = axes;
    asLarge = asLarge || asLargeAsResult(operand);
  }
  if (!linear.axes || !asLarge || !isLinearIn(op, linear.partial))
    return std::nullopt;
  for (AxisListAttr axes : factors) {
    SmallVector<StringAttr> kept;
    if (axes)
      for (StringAttr a : axes)
        if (!llvm::is_contained(linear.axes.getAxes(), a))
          kept.push_back(a);
    linear.factors.push_back(kept.empty()
                                 ? AxisListAttr()
                                 : AxisListAttr::get(op->getContext(), kept));
  }
  return linear;
}

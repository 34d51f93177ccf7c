//===- TemporalBlocking.cpp - two steps of a stencil loop per sweep -------===//
//
// A time-stepping loop whose step reads its field through windows of a pad
// (a Jacobi or heat step: next = G(windows of pad(u), invariants), G
// elementwise) is bound by memory: each step streams the field in and the
// next one out. Two steps per iteration, composed into one elementwise op
// over windows of the field padded twice as wide, stream it once per two
// steps. The first step's value at each shift the second step reads is
// computed again where it is read, in registers, never stored; outside the
// grid it is the pad's constant, as the second step's pad would make it.
// Loop-invariant operands are padded once, before the loop. Once
// partitioned, the wider pad's halo moves every second step, twice as deep,
// in the same number of messages. Every element is computed by the same
// operations in the same order as before, so results are the same bit for
// bit. An odd last step runs the loop as it was, once.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <map>
#include <set>

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_TEMPORALBLOCKING
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {
using Shift = SmallVector<int64_t>;

/// One step of a loop that carries one tensor: the ops that compute the next
/// value of the field from the current one, either the loop's body or the
/// body of the one function it calls.
struct Step {
  Region *region = nullptr;
  Value field, result;
  /// The pad of `field` whose windows the step reads, its widths and value.
  tensor::PadOp pad;
  Shift lo, hi;
  Value padValue;
  RankedTensorType type;
  /// The step as a call: the callee, and its arguments -> the call's
  /// operands (values from outside the loop).
  func::FuncOp callee;
  IRMapping arguments;
  scf::ForOp loop;

  /// The value from outside the step (outside the loop) that `v` stands
  /// for, or null when `v` is the step's own.
  Value fromOutside(Value v) {
    if (callee)
      return arguments.lookupOrNull(v);
    return loop.isDefinedOutsideOfLoop(v) ? v : Value();
  }
  /// The annotation the callee gives its argument `v` (none for another
  /// value), or its result when `v` is null.
  ShardingAttr annotation(Value v) {
    if (!callee)
      return {};
    StringRef name = MeshDialect::getShardingAttrName();
    if (!v)
      return callee.getResultAttrOfType<ShardingAttr>(0, name);
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &callee.getBody().front())
      return {};
    return callee.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), name);
  }
};

/// Where the composed op's operands and body go.
struct Emitter {
  explicit Emitter(scf::ForOp loop)
      : beforeLoop(loop), inLoop(loop), body(loop.getContext()),
        block(new Block()) {
    body.setInsertionPointToStart(block);
  }
  OpBuilder beforeLoop, inLoop, body;
  Block *block;
  Value padded; // the field, padded twice as wide
  SmallVector<Value> inputs;
  std::map<std::pair<void *, Shift>, Value> windows;
  DenseMap<Value, Value> paddedInvariants;
  std::map<std::tuple<void *, Shift, int>, Value> done;
  /// The composed op's `linalg.index` of each dim, and the step's scalar
  /// constants copied into its body, each made once.
  DenseMap<unsigned, Value> indices;
  DenseMap<Value, Value> constants;
};

/// Walks the step's values from its result down to the field and the
/// values from outside. Checking (`e` null), it says whether the step is
/// made of ops it can compose, counts them and collects the shifts at which
/// the step reads the field. Emitting, it writes into `e->body` the scalar
/// value of `v` at `shift` from the current position, `depth` steps after
/// the field the composed op reads (2: the loop's new result).
class Composer {
public:
  explicit Composer(Step &step) : step(step) {}

  LogicalResult check(std::string &why) {
    this->why = &why;
    if (failed(scalar(step.padValue)))
      return failure();
    return visit(step.result, Shift(step.type.getRank(), 0), 1);
  }
  Value emit(Emitter &emitter) {
    e = &emitter;
    FailureOr<Value> v = visit(step.result, Shift(step.type.getRank(), 0), 2);
    assert(succeeded(v) && "emitting a step that was checked");
    return *v;
  }
  /// Ops in one step and the field's shifts it reads (after check).
  unsigned numOps = 0;
  std::set<Shift> shifts;

private:
  Step &step;
  Emitter *e = nullptr;
  std::string *why = nullptr;
  DenseSet<Operation *> checked;

  LogicalResult fail(const Twine &message) {
    if (why && why->empty())
      *why = message.str();
    return failure();
  }

  static Shift plus(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
    Shift s(a);
    for (auto [x, y] : llvm::zip(s, b))
      x += y;
    return s;
  }

  /// The shift from the current position of window `slice` of the field's
  /// pad, or none when `v` is not such a window.
  std::optional<Shift> windowShift(Value v) {
    auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice.getSource() != step.pad.getResult() ||
        slice.getType() != step.type || !slice.hasUnitStride() ||
        ShapedType::isDynamicShape(slice.getStaticOffsets()))
      return std::nullopt;
    Shift s;
    for (auto [offset, lo] : llvm::zip(slice.getStaticOffsets(), step.lo))
      s.push_back(offset - lo);
    return s;
  }

  /// The block argument of the composed op that reads `source` through the
  /// window at `offsets`.
  Value window(Value source, ArrayRef<int64_t> offsets) {
    Value &arg = e->windows[{source.getAsOpaquePointer(), Shift(offsets)}];
    if (arg)
      return arg;
    SmallVector<OpFoldResult> offs, sizes, strides;
    for (auto [o, n] : llvm::zip(offsets, step.type.getShape())) {
      offs.push_back(e->inLoop.getIndexAttr(o));
      sizes.push_back(e->inLoop.getIndexAttr(n));
      strides.push_back(e->inLoop.getIndexAttr(1));
    }
    Value slice = tensor::ExtractSliceOp::create(e->inLoop, source.getLoc(),
                                                 source, offs, sizes, strides);
    e->inputs.push_back(slice);
    arg = e->block->addArgument(getElementTypeOrSelf(source.getType()),
                                source.getLoc());
    return arg;
  }

  /// A loop-invariant tensor, padded before the loop as the field is (what
  /// lies outside the grid is never used: the steps there are masked).
  Value paddedInvariant(Value v, ShardingAttr annotation) {
    Value &padded = e->paddedInvariants[v];
    if (padded)
      return padded;
    OpBuilder &b = e->beforeLoop;
    Value source = v;
    if (annotation)
      source = ShardOp::create(b, v.getLoc(), source, annotation);
    auto type = cast<RankedTensorType>(v.getType());
    Value zero = arith::ConstantOp::create(
        b, v.getLoc(), b.getZeroAttr(type.getElementType()));
    padded = tensor::PadOp::create(
        b, v.getLoc(), Type(), source,
        getAsIndexOpFoldResult(b.getContext(), step.lo),
        getAsIndexOpFoldResult(b.getContext(), step.hi), zero);
    return padded;
  }

  /// A scalar the step uses: from outside, or a constant (copied once).
  FailureOr<Value> scalar(Value v) {
    if (Value outside = step.fromOutside(v))
      return outside;
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumOperands() != 0 || !matchPattern(v, m_Constant()))
      return fail("the step uses a scalar that is neither a constant nor "
                  "defined outside the loop");
    if (!e)
      return Value();
    Value &copy = e->constants[v];
    if (!copy)
      copy =
          e->body.clone(*def)->getResult(cast<OpResult>(v).getResultNumber());
    return copy;
  }

  /// The composed op's position along `dim`.
  Value index(unsigned dim, Location loc) {
    Value &at = e->indices[dim];
    if (!at)
      at = linalg::IndexOp::create(e->body, loc, dim);
    return at;
  }

  /// The field at `shift`, `depth` steps on.
  FailureOr<Value> field(ArrayRef<int64_t> shift, int depth) {
    if (!e) {
      shifts.insert(Shift(shift));
      return Value();
    }
    if (depth == 1) {
      Shift offsets = plus(shift, plus(step.lo, step.lo));
      return window(e->padded, offsets);
    }
    // The first step at `shift`, and outside the grid the pad's value.
    FailureOr<Value> inner = visit(step.result, shift, depth - 1);
    Value v = *inner;
    OpBuilder &b = e->body;
    Location loc = step.result.getLoc();
    Value outside;
    for (auto [d, s] : llvm::enumerate(shift)) {
      if (s == 0)
        continue;
      int64_t size = step.type.getDimSize(d);
      Value bound =
          arith::ConstantIndexOp::create(b, loc, s < 0 ? -s : size - s);
      Value out = arith::CmpIOp::create(
          b, loc, s < 0 ? arith::CmpIPredicate::ult : arith::CmpIPredicate::uge,
          index(d, loc), bound);
      outside = outside ? arith::OrIOp::create(b, loc, outside, out) : out;
    }
    if (!outside)
      return v;
    FailureOr<Value> padValue = scalar(step.padValue);
    return arith::SelectOp::create(b, loc, outside, *padValue, v).getResult();
  }

  FailureOr<Value> visit(Value v, ArrayRef<int64_t> shift, int depth) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getShape() != step.type.getShape())
      return fail("the step computes a value of another shape than the field");
    if (v == step.field)
      return field(shift, depth);
    if (std::optional<Shift> s = windowShift(v))
      return field(plus(shift, *s), depth);
    DenseElementsAttr splat;
    if (matchPattern(v, m_Constant(&splat)) && splat.isSplat()) {
      if (!e)
        return Value();
      Value &element = e->constants[v];
      if (!element)
        element = arith::ConstantOp::create(
            e->body, v.getLoc(),
            cast<TypedAttr>(splat.getSplatValue<Attribute>()));
      return element;
    }
    if (Value outside = step.fromOutside(v)) {
      if (!e)
        return Value();
      Value padded = paddedInvariant(outside, step.annotation(v));
      return window(padded, plus(shift, step.lo));
    }
    Operation *op = v.getDefiningOp();
    if (!op)
      return fail("the step reads a block argument that is not the field");
    std::tuple<void *, Shift, int> key{v.getAsOpaquePointer(), Shift(shift),
                                       depth};
    if (e) {
      if (Value known = e->done[key])
        return known;
    } else if (!checked.insert(op).second) {
      return Value();
    }
    FailureOr<Value> result = compute(op, cast<OpResult>(v), shift, depth);
    if (e && succeeded(result))
      e->done[key] = *result;
    return result;
  }

  /// The scalar value of `result` of `op`, an op of the step.
  FailureOr<Value> compute(Operation *op, OpResult result,
                           ArrayRef<int64_t> shift, int depth) {
    Location loc = op->getLoc();
    if (auto fill = dyn_cast<linalg::FillOp>(op))
      return scalar(fill.value());
    if (op->getNumRegions() == 0 && op->getNumResults() == 1 &&
        op->hasTrait<OpTrait::Elementwise>() && isPure(op)) {
      SmallVector<Value> operands;
      for (Value operand : op->getOperands()) {
        FailureOr<Value> s = isa<ShapedType>(operand.getType())
                                 ? visit(operand, shift, depth)
                                 : scalar(operand);
        if (failed(s))
          return failure();
        operands.push_back(*s);
      }
      ++numOps;
      if (!e)
        return Value();
      OperationState state(loc, op->getName(), operands,
                           {getElementTypeOrSelf(result.getType())},
                           op->getAttrs());
      return e->body.create(state)->getResult(0);
    }
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      return inlineGeneric(generic, result.getResultNumber(), shift, depth);
    return fail("the step computes with '" + op->getName().getStringRef() +
                "', which is not elementwise");
  }

  /// The body of an elementwise linalg.generic (parallel loops, identity
  /// maps), its block arguments the values of its operands at `shift`.
  FailureOr<Value> inlineGeneric(linalg::GenericOp generic, unsigned number,
                                 ArrayRef<int64_t> shift, int depth) {
    if (!generic.hasPureTensorSemantics() ||
        generic.getNumLoops() != generic.getNumParallelLoops() ||
        !llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }))
      return fail("the step has a linalg.generic that is not elementwise "
                  "with identity maps");
    Block &block = generic.getRegion().front();
    IRMapping mapping;
    for (OpOperand &operand : generic->getOpOperands()) {
      BlockArgument arg = generic.getMatchingBlockArgument(&operand);
      if (arg.use_empty())
        continue;
      FailureOr<Value> s = visit(operand.get(), shift, depth);
      if (failed(s))
        return failure();
      mapping.map(arg, *s);
    }
    for (Operation &inner : block.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        if (!e)
          continue;
        Location loc = inner.getLoc();
        Value at = this->index(index.getDim(), loc);
        int64_t s = shift[index.getDim()];
        if (s != 0)
          at = arith::AddIOp::create(
              e->body, loc, at,
              arith::ConstantIndexOp::create(e->body, loc, s));
        mapping.map(index.getResult(), at);
        continue;
      }
      if (inner.getNumRegions() != 0 || !isPure(&inner))
        return fail("the step's linalg.generic has '" +
                    inner.getName().getStringRef() +
                    "', which has regions or side effects");
      for (Value operand : inner.getOperands()) {
        if (operand.getParentBlock() == &block || mapping.contains(operand))
          continue;
        FailureOr<Value> s = scalar(operand);
        if (failed(s))
          return failure();
        if (e)
          mapping.map(operand, *s);
      }
      ++numOps;
      if (e)
        e->body.clone(inner, mapping);
    }
    Value yielded = block.getTerminator()->getOperand(number);
    if (yielded.getParentBlock() != &block && !mapping.contains(yielded))
      return scalar(yielded);
    return e ? mapping.lookup(yielded) : Value();
  }
};
} // namespace

/// The step of `loop`, when it has the form this pass composes; else null
/// and the reason in `why`.
static std::optional<Step>
matchStep(scf::ForOp loop, SymbolTableCollection &symbols, std::string &why) {
  Step step;
  step.loop = loop;
  if (loop.getNumRegionIterArgs() != 1 || loop.getUnsignedCmp())
    return why = "the loop does not carry exactly one value", std::nullopt;
  BlockArgument carried = loop.getRegionIterArgs()[0];
  step.type = dyn_cast<RankedTensorType>(carried.getType());
  if (!step.type || !step.type.hasStaticShape())
    return why = "the loop does not carry a tensor of static shape",
           std::nullopt;
  if (!loop.getInductionVar().use_empty())
    return why = "the step reads the loop's index", std::nullopt;
  Block *body = loop.getBody();
  Value yielded = body->getTerminator()->getOperand(0);
  auto call = yielded.getDefiningOp<func::CallOp>();
  if (call && body->getOperations().size() == 2) {
    step.callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!step.callee || step.callee.isExternal() ||
        !step.callee.getBody().hasOneBlock() || call.getNumResults() != 1)
      return why = "the step is a call of a function without one block",
             std::nullopt;
    step.region = &step.callee.getBody();
    for (auto [arg, operand] :
         llvm::zip(step.callee.getArguments(), call.getOperands())) {
      if (operand == carried) {
        if (step.field)
          return why = "the step takes the field twice", std::nullopt;
        step.field = arg;
      } else {
        step.arguments.map(arg, operand);
      }
    }
    step.result = step.callee.getBody().front().getTerminator()->getOperand(0);
  } else {
    step.region = &loop.getRegion();
    step.field = carried;
    step.result = yielded;
  }
  if (!step.field)
    return why = "the step does not read the field", std::nullopt;
  // The one pad of the field, by static widths with a uniform value.
  for (Operation *user : step.field.getUsers()) {
    auto pad = dyn_cast<tensor::PadOp>(user);
    if (!pad)
      continue;
    if (step.pad)
      return why = "the step pads the field twice", std::nullopt;
    step.pad = pad;
  }
  if (!step.pad)
    return why = "the step does not pad the field (no stencil)", std::nullopt;
  step.padValue = step.pad.getConstantPaddingValue();
  if (!step.padValue || ShapedType::isDynamicShape(step.pad.getStaticLow()) ||
      ShapedType::isDynamicShape(step.pad.getStaticHigh()))
    return why = "the field's pad is not by static widths with one value",
           std::nullopt;
  step.lo.assign(step.pad.getStaticLow().begin(),
                 step.pad.getStaticLow().end());
  step.hi.assign(step.pad.getStaticHigh().begin(),
                 step.pad.getStaticHigh().end());
  for (Operation *user : step.pad.getResult().getUsers())
    if (!isa<tensor::ExtractSliceOp>(user))
      return why = "the padded field has a user that is not a window",
             std::nullopt;
  return step;
}

/// Ops of the step that its result does not need must be free of effects:
/// they disappear.
static bool onlyPureLeftOver(Step &step) {
  for (Operation &op : step.region->front().without_terminator())
    if (!isMemoryEffectFree(&op))
      return false;
  return true;
}

/// Where the pairs of steps of `loop` end (`mid`), their stride, and
/// whether a step may be left over (always, as far as the IR can tell,
/// when the trip count is known only at run time). None, and nothing
/// made, when the loop surely runs fewer than two steps.
struct Split {
  Value mid, twice;
  bool odd = true;
};
static std::optional<Split> splitTrips(scf::ForOp loop, OpBuilder &b) {
  Location loc = loop.getLoc();
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(),
        stride = loop.getStep();
  auto constant = [&](int64_t c) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(lb.getType(), c));
  };
  std::optional<int64_t> clb = getConstantIntValue(lb),
                         cub = getConstantIntValue(ub),
                         cstep = getConstantIntValue(stride);
  Split split;
  if (clb && cub && cstep) {
    int64_t trips = *cub > *clb ? llvm::divideCeil(*cub - *clb, *cstep) : 0;
    if (trips < 2)
      return std::nullopt;
    split.odd = trips % 2;
    split.mid = constant(*clb + trips / 2 * 2 * *cstep);
    split.twice = constant(2 * *cstep);
    return split;
  }
  split.twice = arith::MulIOp::create(b, loc, stride, constant(2));
  Value span = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, ub, lb), constant(0));
  Value trips = arith::CeilDivSIOp::create(b, loc, span, stride);
  Value pairs = arith::DivSIOp::create(b, loc, trips, constant(2));
  split.mid = arith::AddIOp::create(
      b, loc, lb, arith::MulIOp::create(b, loc, pairs, split.twice));
  return split;
}

/// The body of the loop of pairs: the field padded twice as wide, and the
/// composed step over windows of it, written by `e` (whose builders point
/// into the body).
static Value buildPairOfSteps(Step &step, Emitter &e, Value field,
                              Location loc) {
  MLIRContext *ctx = loc.getContext();
  if (ShardingAttr s = step.annotation(step.field))
    field = ShardOp::create(e.inLoop, loc, field, s);
  SmallVector<int64_t> lo2, hi2;
  for (auto [lo, hi] : llvm::zip(step.lo, step.hi)) {
    lo2.push_back(2 * lo);
    hi2.push_back(2 * hi);
  }
  Value padValue = step.fromOutside(step.padValue);
  if (!padValue)
    padValue = e.inLoop.clone(*step.padValue.getDefiningOp())->getResult(0);
  e.padded = tensor::PadOp::create(e.inLoop, loc, Type(), field,
                                   getAsIndexOpFoldResult(ctx, lo2),
                                   getAsIndexOpFoldResult(ctx, hi2), padValue);
  Value scalar = Composer(step).emit(e);
  Type elementType = step.type.getElementType();
  e.block->addArgument(elementType, loc);
  linalg::YieldOp::create(e.body, loc, scalar);
  Value init =
      tensor::EmptyOp::create(e.inLoop, loc, step.type.getShape(), elementType);
  SmallVector<AffineMap> maps(
      e.inputs.size() + 1,
      AffineMap::getMultiDimIdentityMap(step.type.getRank(), ctx));
  SmallVector<utils::IteratorType> iterators(step.type.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(e.inLoop, loc, step.type, e.inputs,
                                           init, maps, iterators);
  generic.getRegion().push_back(e.block);
  Value next = generic.getResult(0);
  if (ShardingAttr s = step.annotation(Value()))
    next = ShardOp::create(e.inLoop, loc, next, s);
  return next;
}

/// `loop` as two steps per iteration, then the old loop for an odd last
/// step. Fails, leaving the IR as it was, when the step has another form
/// (`why` says how), reads the field at more than `maxShifts` shifts, or
/// composing would cost more than `maxOps` operations per element.
static LogicalResult blockLoop(scf::ForOp loop, unsigned maxOps,
                               unsigned maxShifts,
                               SymbolTableCollection &symbols,
                               std::string &why) {
  std::optional<Step> matched = matchStep(loop, symbols, why);
  if (!matched)
    return failure();
  Step &step = *matched;
  if (!onlyPureLeftOver(step))
    return why = "the step has side effects", failure();
  Composer checker(step);
  if (failed(checker.check(why)))
    return failure();
  size_t shifts = checker.shifts.size();
  if (shifts > maxShifts)
    return why = ("the step reads the field at " + Twine(shifts) +
                  " shifts: two steps would compute the first step " +
                  Twine(shifts) +
                  " times per element (max-shifts = " + Twine(maxShifts) + ")")
                     .str(),
           failure();
  unsigned cost = checker.numOps * (shifts + 1);
  if (cost > maxOps)
    return why =
               ("two steps would take " + Twine(cost) +
                " operations per element, more than max-ops = " + Twine(maxOps))
                   .str(),
           failure();

  // The new loop runs the pairs, the old one what is left.
  OpBuilder b(loop);
  std::optional<Split> split = splitTrips(loop, b);
  if (!split)
    return why = "the loop runs fewer than two steps", failure();
  Emitter e(loop);
  auto pairs = scf::ForOp::create(
      b, loop.getLoc(), loop.getLowerBound(), split->mid, split->twice,
      loop.getInitArgs(),
      [&](OpBuilder &nb, Location loc, Value, ValueRange args) {
        e.inLoop.setInsertionPoint(nb.getInsertionBlock(),
                                   nb.getInsertionPoint());
        scf::YieldOp::create(e.inLoop, loc,
                             buildPairOfSteps(step, e, args[0], loc));
      });
  ValueRange results = pairs.getResults();
  if (split->odd) {
    auto rest = cast<scf::ForOp>(b.clone(*loop));
    rest.setLowerBound(split->mid);
    rest.getInitArgsMutable().assign(pairs.getResults());
    results = rest.getResults();
  }
  loop->replaceAllUsesWith(results);
  loop.erase();
  return success();
}

namespace {
struct TemporalBlockingPass
    : public mesh::impl::TemporalBlockingBase<TemporalBlockingPass> {
  using TemporalBlockingBase::TemporalBlockingBase;

  void runOnOperation() override {
    SymbolTableCollection symbols;
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) {
      std::string why;
      Location loc = loop.getLoc();
      bool stencil = loop.getNumRegionIterArgs() == 1;
      if (succeeded(blockLoop(loop, maxOps, maxShifts, symbols, why))) {
        if (report)
          emitRemark(loc) << "two steps per iteration";
      } else if (report && stencil) {
        emitRemark(loc) << "one step per iteration: " << why;
      }
    }
  }
};
} // namespace

//===- GpuLinalgToCublas.cpp - contractions on the GPU to cuBLASLt --------===//
//
// The GPU counterpart of mesh-linalg-to-blas: every contraction on buffers
// that the runtime's cuBLASLt product can take becomes one call of
// meshrt_gpu_gemm, with what follows it folded into the library's epilogue:
//
//   * the accumulator: a linalg.fill of +0.0 (overwrite), or a
//     linalg.broadcast of a bias vector along the rows (the bias);
//   * one or two elementwise linalg.generics that read the product where it
//     dies there: a bias add (a vector along the output's columns, read
//     directly or through a linalg.broadcast), then ReLU or GELU in its tanh
//     form (cuBLASLt's), in one generic or two.
//
// Bodies are recognised by what they compute, not by how they are spelled:
// a bias add and ReLU are matched exactly (maximumf or maxnumf with 0, a
// compare with 0 and a select, in either order); the tanh GELU, which has
// many spellings, is recognised by evaluating the body (in double, by a
// small interpreter of arith and math ops) at sample points, only where the
// body has no comparison, select, min or max (a clamp min(max(x, 0), 9)
// agreed with ReLU at every sample and was folded as one). An erf GELU does
// not match (cuBLASLt has none: its generic stays a kernel).
//
// Mixed precision: f16 or bf16 inputs widened in the body into an f32
// accumulator (`out + extf(a) * extf(b)`, the named ops' form of mixed
// types) is cuBLASLt's f32-accumulating product of 16-bit inputs into f32
// (meshrt_gpu_gemm_mixed), with the same epilogues on the f32 result.
//
// The call goes where the last folded op was, writing that op's output
// buffer, so nothing it writes moves; the product's inputs must not be
// written in between. Everything the library cannot take keeps our kernels
// and, with `report`, says why in a remark: integer types, mixed types other
// than 16-bit floats into f32, a matrix with no unit stride (cuBLASLt's
// layouts need one), several k loops, a body that is more than a product.
//
// With `host`, the call is the host runtime's meshrt_gemm_epilogue (the
// gpu-on-host test target: the same matching and rewrite, checked on
// numbers by the BLAS on the CPU).
//
//===----------------------------------------------------------------------===//

#include "GemmMatch.h"

#include "mesh/Conversion/BufferRoots.h"
#include "mesh/Conversion/Passes.h"
#include "mesh/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

#define DEBUG_TYPE "mesh-gpu-linalg-to-cublas"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPULINALGTOCUBLAS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

//===----------------------------------------------------------------------===//
// What an elementwise body computes
//===----------------------------------------------------------------------===//

/// The value of `body`'s yielded scalar for the block arguments `args`
/// (doubles), or nullopt where an op is not one this interpreter knows.
std::optional<double> evaluate(Block &body, ArrayRef<double> args) {
  DenseMap<Value, double> values;
  for (auto [arg, v] : llvm::zip(body.getArguments(), args))
    values[arg] = v;
  auto get = [&](Value v) -> std::optional<double> {
    auto it = values.find(v);
    if (it != values.end())
      return it->second;
    // A float constant from outside the body.
    FloatAttr constant;
    if (matchPattern(v, m_Constant(&constant)))
      return constant.getValueAsDouble();
    return std::nullopt;
  };
  for (Operation &op : body) {
    if (auto yield = dyn_cast<linalg::YieldOp>(op))
      return yield.getNumOperands() == 1 ? get(yield.getOperand(0))
                                         : std::nullopt;
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto value = dyn_cast<FloatAttr>(constant.getValue());
      if (!value)
        return std::nullopt;
      values[constant] = value.getValueAsDouble();
      continue;
    }
    SmallVector<double, 3> in;
    for (Value operand : op.getOperands()) {
      std::optional<double> v = get(operand);
      // Booleans (a compare's result) are 0 or 1.
      if (!v)
        return std::nullopt;
      in.push_back(*v);
    }
    std::optional<double> out =
        llvm::TypeSwitch<Operation *, std::optional<double>>(&op)
            .Case([&](arith::AddFOp) { return in[0] + in[1]; })
            .Case([&](arith::SubFOp) { return in[0] - in[1]; })
            .Case([&](arith::MulFOp) { return in[0] * in[1]; })
            .Case([&](arith::DivFOp) { return in[0] / in[1]; })
            .Case([&](arith::NegFOp) { return -in[0]; })
            .Case<arith::MaximumFOp, arith::MaxNumFOp>(
                [&](Operation *) { return std::max(in[0], in[1]); })
            .Case<arith::MinimumFOp, arith::MinNumFOp>(
                [&](Operation *) { return std::min(in[0], in[1]); })
            .Case([&](arith::SelectOp) { return in[0] != 0 ? in[1] : in[2]; })
            .Case([&](arith::CmpFOp cmp) -> std::optional<double> {
              double a = in[0], b = in[1];
              switch (cmp.getPredicate()) {
              case arith::CmpFPredicate::OGT:
              case arith::CmpFPredicate::UGT:
                return a > b;
              case arith::CmpFPredicate::OGE:
              case arith::CmpFPredicate::UGE:
                return a >= b;
              case arith::CmpFPredicate::OLT:
              case arith::CmpFPredicate::ULT:
                return a < b;
              case arith::CmpFPredicate::OLE:
              case arith::CmpFPredicate::ULE:
                return a <= b;
              default:
                return std::nullopt;
              }
            })
            .Case([&](math::TanhOp) { return std::tanh(in[0]); })
            .Case([&](math::ErfOp) { return std::erf(in[0]); })
            .Case([&](math::ExpOp) { return std::exp(in[0]); })
            .Case([&](math::SqrtOp) { return std::sqrt(in[0]); })
            .Case([&](math::AbsFOp) { return std::fabs(in[0]); })
            .Case([&](math::PowFOp) { return std::pow(in[0], in[1]); })
            .Case([&](math::FmaOp) { return in[0] * in[1] + in[2]; })
            .Default([](Operation *) { return std::nullopt; });
    if (!out)
      return std::nullopt;
    values[op.getResult(0)] = *out;
  }
  return std::nullopt;
}

double gelu(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/// Whether `f` agrees with `want` at sample points, to `tolerance`
/// relative (the f32 constants of a GELU written in a program differ from
/// the exact ones in the eighth digit; an erf GELU differs by 1e-3).
bool agrees(function_ref<std::optional<double>(double, double)> f,
            function_ref<double(double, double)> want, bool twoArgs,
            double tolerance) {
  static const double xs[] = {-41.0, -3.7, -1.3, -0.45, -0.01, 0.0, 0.02,
                              0.5,   1.1,  2.9,  6.25,  13.5,  97.0};
  static const double bs[] = {0.0, -0.75, 0.3, 1.9};
  for (double x : xs)
    for (double b : bs) {
      if (!twoArgs && b != 0.0)
        continue;
      std::optional<double> got = f(x, b);
      double expected = want(x, b);
      if (!got || std::isnan(*got) ||
          std::fabs(*got - expected) >
              tolerance * std::max(1.0, std::fabs(expected)))
        return false;
    }
  return true;
}

/// The activations cuBLASLt applies (meshrt_epilogue).
enum class Activation { None = 0, Relu = 1, Gelu = 2 };

/// Whether `v` is x (the argument `xArg`) or, with `biasArg`, x + b.
bool isActivationInput(Value v, Block &body, unsigned xArg,
                       std::optional<unsigned> biasArg) {
  Value x = body.getArgument(xArg);
  if (!biasArg)
    return v == x;
  auto add = v.getDefiningOp<arith::AddFOp>();
  Value b = body.getArgument(*biasArg);
  return add && ((add.getLhs() == x && add.getRhs() == b) ||
                 (add.getLhs() == b && add.getRhs() == x));
}

/// A bias add alone or ReLU, matched exactly: the yielded value is v,
/// max(v, 0) (maximumf or maxnumf, either order), or a select of v and 0
/// on a comparison of v with 0 that picks v where it is positive, where v
/// is x or x + b. A clamp, a leaky ReLU or a threshold other than 0 does
/// not match.
std::optional<Activation> matchReluExactly(Block &body, unsigned xArg,
                                           std::optional<unsigned> biasArg) {
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return std::nullopt;
  Value y = yield.getOperand(0);
  auto isV = [&](Value v) { return isActivationInput(v, body, xArg, biasArg); };
  auto isZero = [](Value v) { return matchPattern(v, m_AnyZeroFloat()); };
  if (isV(y))
    return Activation::None;
  Operation *def = y.getDefiningOp();
  if (isa_and_nonnull<arith::MaximumFOp, arith::MaxNumFOp>(def)) {
    Value a = def->getOperand(0), b = def->getOperand(1);
    if ((isV(a) && isZero(b)) || (isZero(a) && isV(b)))
      return Activation::Relu;
    return std::nullopt;
  }
  auto select = dyn_cast_or_null<arith::SelectOp>(def);
  if (!select)
    return std::nullopt;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!cmp)
    return std::nullopt;
  // The comparison as "v > 0" or "v < 0" (v on either side).
  using P = arith::CmpFPredicate;
  P pred = cmp.getPredicate();
  bool greater = llvm::is_contained({P::OGT, P::OGE, P::UGT, P::UGE}, pred);
  bool less = llvm::is_contained({P::OLT, P::OLE, P::ULT, P::ULE}, pred);
  bool positive; // whether the condition holds where v is positive
  if (isV(cmp.getLhs()) && isZero(cmp.getRhs()))
    positive = greater;
  else if (isZero(cmp.getLhs()) && isV(cmp.getRhs()))
    positive = less;
  else
    return std::nullopt;
  if (!greater && !less)
    return std::nullopt;
  // Where v is positive the select must pick v, elsewhere 0.
  Value pickV = positive ? select.getTrueValue() : select.getFalseValue();
  Value pickZero = positive ? select.getFalseValue() : select.getTrueValue();
  if (isV(pickV) && isZero(pickZero))
    return Activation::Relu;
  return std::nullopt;
}

/// What `body` computes from its inputs, as a bias add and an activation:
/// with `biasArg`, f(x, b) = act(x + b) (either order of the inputs is the
/// caller's: `xArg` names x); without, f(x) = act(x). A bias add and ReLU
/// are matched exactly. The tanh GELU has too many spellings for that
/// (constants grouped otherwise, x^3 as a power or two products): it is
/// recognised by evaluation at sample points, and only in a body with no
/// comparison, select, min or max, so a body that agrees at the samples
/// but switches somewhere else (a clamp at 9 passed as ReLU) is refused.
std::optional<Activation> recognise(Block &body, unsigned xArg,
                                    std::optional<unsigned> biasArg) {
  if (std::optional<Activation> act = matchReluExactly(body, xArg, biasArg))
    return act;
  bool piecewise = llvm::any_of(body, [](Operation &op) {
    return isa<arith::CmpFOp, arith::SelectOp, arith::MaximumFOp,
               arith::MaxNumFOp, arith::MinimumFOp, arith::MinNumFOp>(op);
  });
  if (piecewise)
    return std::nullopt;
  unsigned n = body.getNumArguments();
  auto f = [&](double x, double b) -> std::optional<double> {
    SmallVector<double> args(n, 0.0);
    args[xArg] = x;
    if (biasArg)
      args[*biasArg] = b;
    return evaluate(body, args);
  };
  if (agrees(
          f, [&](double x, double b) { return gelu(biasArg ? x + b : x); },
          biasArg.has_value(), 1e-6))
    return Activation::Gelu;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The ops around a product
//===----------------------------------------------------------------------===//

/// Whether `op` may write the buffer `root`.
bool mayWrite(Operation *op, Value root) {
  if (isMemoryEffectFree(op))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (auto &effect : list) {
    if (!isa<MemoryEffects::Write, MemoryEffects::Free>(effect.getEffect()))
      continue;
    Value value = effect.getValue();
    if (!value)
      return true;
    // Another allocation of the function is known apart from anything
    // else; any other buffer may be `root` under another name.
    Value other = getViewRoot(value);
    if (other == root || !isAllocation(other))
      return true;
  }
  return false;
}

/// The users of the allocation `root` other than deallocations and `except`.
SmallVector<Operation *> usersBesides(Value root,
                                      ArrayRef<Operation *> except) {
  SmallVector<Operation *> users;
  for (Operation *user : root.getUsers())
    if (!isa<memref::DeallocOp>(user) && !llvm::is_contained(except, user))
      users.push_back(user);
  return users;
}

/// The linalg.broadcast of a 1-D buffer into exactly `out` along every dim
/// but `keep`, an earlier op of the product's block with nothing in between
/// that may touch `out`'s buffer (an allocation of the function).
linalg::BroadcastOp biasBroadcastInto(Operation *product, Value out,
                                      int64_t keep) {
  Value root = getViewRoot(out);
  if (!isAllocation(root))
    return nullptr;
  for (Operation *op = product->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto broadcast = dyn_cast<linalg::BroadcastOp>(op);
        broadcast && broadcast.hasPureBufferSemantics() &&
        broadcast.getInit() == out) {
      auto input = cast<MemRefType>(broadcast.getInput().getType());
      int64_t rank = cast<MemRefType>(out.getType()).getRank();
      ArrayRef<int64_t> dims = broadcast.getDimensions();
      if (input.getRank() != 1 || int64_t(dims.size()) != rank - 1 ||
          llvm::is_contained(dims, keep))
        return nullptr;
      return broadcast;
    }
    if (mayTouch(op, root))
      return nullptr;
  }
  return nullptr;
}

/// Whether the 1-D buffer `bias` has a static unit stride (cuBLASLt reads
/// a bias contiguous).
bool isContiguousVector(Value bias) {
  auto type = dyn_cast<MemRefType>(bias.getType());
  if (!type || type.getRank() != 1)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides[0] == 1;
}

/// An elementwise step folded after a product: the generic, the input that
/// reads the product (its operand index), the bias it adds (null: none) and
/// the activation.
struct Step {
  linalg::GenericOp op;
  Value bias;
  linalg::BroadcastOp biasBroadcast; // Made the bias operand; dies here.
  Activation act = Activation::None;
};

/// The epilogue folded into a product: its steps in order, and the buffer
/// the last one writes.
struct Epilogue {
  SmallVector<Step, 2> steps;
  Value out;
  Value bias;
  Activation act = Activation::None;
};

/// The value an epilogue step reads for `buffer`: the buffer, or the one
/// reshaping view of it that is its only user. `users` becomes the reader's
/// users; `biasDim` follows the view's dims (-1 when a reshape merges or
/// splits the biased dim, which must stay the last dim).
Value readThroughView(Value buffer, SmallVector<Operation *> &users,
                      int64_t &biasDim) {
  if (users.size() != 1 ||
      !isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(users[0]))
    return buffer;
  Value read = users[0]->getResult(0);
  if (biasDim >= 0) {
    auto type = cast<MemRefType>(buffer.getType());
    auto viewType = cast<MemRefType>(read.getType());
    if (biasDim != type.getRank() - 1 ||
        viewType.getShape().back() != type.getShape().back())
      biasDim = -1;
    else
      biasDim = viewType.getRank() - 1;
  }
  users.assign(read.getUsers().begin(), read.getUsers().end());
  return read;
}

/// `users`' one op as an elementwise generic on buffers, after `after` in
/// its block, that reads `read` (of the generic's rank) and writes a buffer
/// of the same element type by identity without reading it.
FailureOr<linalg::GenericOp> matchElementwiseReader(Operation *after,
                                                    Value read,
                                                    ArrayRef<Operation *> users,
                                                    std::string &why) {
  auto fail = [&](const Twine &reason) {
    why = reason.str();
    return failure();
  };
  if (users.size() != 1)
    return fail("the product's result has other users than one elementwise "
                "op");
  auto generic = dyn_cast<linalg::GenericOp>(users[0]);
  if (!generic || generic->getBlock() != after->getBlock() ||
      !after->isBeforeInBlock(generic))
    return fail("the product's result is not read by a later generic of its "
                "block");
  if (!generic.hasPureBufferSemantics() || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 || generic.getNumResults() != 0)
    return fail("the op reading the product is not elementwise on buffers");
  if (generic.getNumLoops() != cast<MemRefType>(read.getType()).getRank())
    return fail("the op reading the product has another rank");
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!generic.getMatchingIndexingMap(init).isIdentity() ||
      !generic.getMatchingBlockArgument(init).use_empty())
    return fail("the elementwise op reads its output or writes it permuted");
  if (cast<MemRefType>(init->get().getType()).getElementType() !=
      cast<MemRefType>(read.getType()).getElementType())
    return fail("the elementwise op changes the element type");
  return generic;
}

/// Sets `step`'s bias from `generic`'s input `in`: a contiguous vector along
/// dim `biasDim` read directly, or broadcast into a buffer that dies in
/// `generic`.
LogicalResult matchBias(linalg::GenericOp generic, OpOperand *in,
                        int64_t biasDim, Step &step, std::string &why) {
  auto fail = [&](const Twine &reason) {
    why = reason.str();
    return failure();
  };
  AffineMap map = generic.getMatchingIndexingMap(in);
  auto type = cast<MemRefType>(in->get().getType());
  if (type.getRank() == 1 && map.getNumResults() == 1 &&
      map.getResult(0) == getAffineDimExpr(biasDim, generic.getContext())) {
    step.bias = in->get();
  } else if (map.isIdentity()) {
    Value root = in->get();
    if (!isAllocation(root))
      return fail("the elementwise op's other input is not a bias");
    SmallVector<Operation *> writers = usersBesides(root, {generic});
    auto broadcast = writers.size() == 1
                         ? dyn_cast<linalg::BroadcastOp>(writers[0])
                         : nullptr;
    if (!broadcast || broadcast.getInit() != root ||
        cast<MemRefType>(broadcast.getInput().getType()).getRank() != 1 ||
        int64_t(broadcast.getDimensions().size()) !=
            int64_t(generic.getNumLoops()) - 1 ||
        llvm::is_contained(broadcast.getDimensions(), biasDim))
      return fail("the elementwise op's other input is not a vector "
                  "broadcast along the output's columns");
    step.bias = broadcast.getInput();
    step.biasBroadcast = broadcast;
  } else {
    return fail("the elementwise op's other input is not a bias along the "
                "output's columns");
  }
  if (!isContiguousVector(step.bias))
    return fail("the bias is not contiguous");
  return success();
}

/// The step that reads the allocation `buffer` (the product's output, or the
/// previous step's), where the buffer dies there: an all-parallel generic of
/// the buffer's rank (through a reshaping view of it, read by identity),
/// `biasDim` the dim a bias must follow (-1: no bias allowed). `why` says
/// why not.
FailureOr<Step> matchStep(Operation *after, Value buffer,
                          ArrayRef<Operation *> producers, int64_t biasDim,
                          std::string &why) {
  auto fail = [&](const Twine &reason) {
    why = reason.str();
    return failure();
  };
  if (!isAllocation(buffer))
    return fail("the product's output is not an allocation of the function");
  SmallVector<Operation *> users = usersBesides(buffer, producers);
  Value read = readThroughView(buffer, users, biasDim);
  FailureOr<linalg::GenericOp> generic =
      matchElementwiseReader(after, read, users, why);
  if (failed(generic))
    return failure();
  Step step;
  step.op = *generic;
  std::optional<unsigned> xArg, biasArg;
  for (OpOperand *in : generic->getDpsInputOperands()) {
    unsigned arg = generic->getMatchingBlockArgument(in).getArgNumber();
    if (in->get() == read && generic->getMatchingIndexingMap(in).isIdentity() &&
        !xArg) {
      xArg = arg;
      continue;
    }
    if (biasArg || biasDim < 0)
      return fail("the elementwise op has other inputs than the product and "
                  "one bias");
    if (failed(matchBias(*generic, in, biasDim, step, why)))
      return failure();
    biasArg = arg;
  }
  if (!xArg)
    return fail("the elementwise op does not read the product by identity");
  std::optional<Activation> act =
      recognise(*generic->getBlock(), *xArg, biasArg);
  if (!act)
    return fail("the elementwise op's body is not a bias add, ReLU or the "
                "tanh GELU (cuBLASLt's epilogues)");
  if (*act == Activation::None && !step.bias)
    return fail("the elementwise op is a copy");
  step.act = *act;
  return step;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// The static unit-stride check of one operand (A, B or C: rows and columns
/// of the call), or why cuBLASLt cannot read it.
std::optional<std::string> layoutProblem(linalg::LinalgOp op, unsigned operand,
                                         Value buffer,
                                         std::optional<unsigned> rows,
                                         std::optional<unsigned> cols) {
  StaticStride r = staticStrideOf(op, operand, buffer, rows);
  StaticStride c = staticStrideOf(op, operand, buffer, cols);
  auto unit = [](const StaticStride &s) {
    return !s.stride || s.unitExtent || *s.stride == 1;
  };
  if (unit(r) || unit(c))
    return std::nullopt;
  static const char *names[] = {"A", "B", "C"};
  return llvm::formatv("operand {0} has no unit stride along its rows or "
                       "columns (cuBLASLt's layouts need one)",
                       names[operand])
      .str();
}

struct MeshGpuLinalgToCublasPass
    : public mesh::impl::MeshGpuLinalgToCublasBase<MeshGpuLinalgToCublasPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int32_t precisionCode;
    if (precision == "highest")
      precisionCode = MESHRT_PRECISION_HIGHEST;
    else if (precision == "tf32")
      precisionCode = MESHRT_PRECISION_TF32;
    else if (precision == "bf16")
      precisionCode = MESHRT_PRECISION_BF16;
    else {
      module.emitError() << "mesh-gpu-linalg-to-cublas: unknown precision '"
                         << precision << "' (expected highest, tf32 or bf16)";
      return signalPassFailure();
    }
    // The choice is recorded in the module, next to the calls that use it.
    module->setAttr("mesh.matmul_precision",
                    StringAttr::get(&getContext(), precision));
    RuntimeFunctions functions(module);
    if (failed(functions.verifyDeclarations("mesh-gpu-linalg-to-cublas")))
      return signalPassFailure();
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::FillOp, linalg::CopyOp, linalg::TransposeOp,
               linalg::BroadcastOp>(op.getOperation()) &&
          op.getNumReductionLoops() != 0)
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates)
      if (failed(rewrite(functions, op, precisionCode)))
        return signalPassFailure();
  }

  void keep(linalg::LinalgOp op, const Twine &why) {
    LLVM_DEBUG(llvm::dbgs()
               << "kept as kernels: " << why << ": " << op << "\n");
    if (report)
      op->emitRemark() << "kept as kernels: " << why;
  }

  void noEpilogue(linalg::LinalgOp op, const Twine &why) {
    LLVM_DEBUG(llvm::dbgs() << "no epilogue folded: " << why << "\n");
    if (report)
      op->emitRemark() << "epilogue not folded: " << why;
  }

  /// A zero pointer-sized global: the call site's plan slot.
  LLVM::GlobalOp planSlot(ModuleOp module) {
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
    std::string name;
    do
      name = llvm::formatv("__mesh_gemm_plan_{0}", nextSlot++).str();
    while (module.lookupSymbol(name));
    auto global = LLVM::GlobalOp::create(
        b, module.getLoc(), ptrType,
        /*isConstant=*/false, LLVM::Linkage::Internal, name, Attribute());
    Block *init = b.createBlock(&global.getInitializerRegion());
    b.setInsertionPointToStart(init);
    LLVM::ReturnOp::create(
        b, module.getLoc(),
        LLVM::ZeroOp::create(b, module.getLoc(), ptrType).getResult());
    return global;
  }

  LogicalResult rewrite(RuntimeFunctions &functions, linalg::LinalgOp op,
                        int32_t precisionCode) {
    if (isIntegerProduct(op)) {
      keep(op, "integer element types (only float products go to cuBLASLt)");
      return success();
    }
    std::string why;
    FailureOr<GemmLoops> loops = matchGemm(op, why, /*allowWidening=*/true);
    if (failed(loops)) {
      keep(op, why);
      return success();
    }
    if (std::optional<std::string> problem = mixedTypesProblem(op, *loops)) {
      keep(op, *problem);
      return success();
    }
    if (std::optional<std::string> problem = operandLayoutProblem(op, *loops)) {
      keep(op, *problem);
      return success();
    }
    int64_t nDim = outputDimOf(op, loops->n);
    Accumulator acc = foldAccumulator(op, *loops, nDim);
    Epilogue epilogue = growEpilogue(op, *loops, acc, nDim);
    OpBuilder b(op);
    Value d = placeCallOutput(b, op, acc, epilogue);
    if (std::optional<std::string> problem =
            layoutProblem(op, 2, d, loops->m, loops->n)) {
      if (auto collapse = d.getDefiningOp<memref::CollapseShapeOp>();
          collapse && collapse->use_empty())
        collapse->erase();
      keep(op, *problem);
      return success();
    }
    emitCall(b, functions, op, *loops, d, epilogue, acc.accumulate,
             precisionCode);
    LLVM_DEBUG(llvm::dbgs() << "to a GEMM call (" << epilogue.steps.size()
                            << " epilogue steps): " << op << "\n");
    eraseReplaced(op, acc, epilogue);
    return success();
  }

  /// Whether `op` writes an integer buffer.
  static bool isIntegerProduct(linalg::LinalgOp op) {
    auto out = dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
    return out && isa<IntegerType>(out.getElementType());
  }

  /// Why cuBLASLt has no product of a widening match's float types, if it
  /// has none: it takes f16 or bf16 inputs into f32, not f32 into f64.
  static std::optional<std::string> mixedTypesProblem(linalg::LinalgOp op,
                                                      const GemmLoops &loops) {
    if (!loops.inputDtype)
      return std::nullopt;
    Type in = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
    Type out = cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType();
    if ((in.isF16() || in.isBF16()) && out.isF32())
      return std::nullopt;
    return llvm::formatv("mixed element types {0} into {1} (cuBLASLt takes f16 "
                         "or bf16 inputs into f32)",
                         in, out)
        .str();
  }

  /// Why cuBLASLt cannot read A, B or C as they are laid out, if it cannot.
  static std::optional<std::string>
  operandLayoutProblem(linalg::LinalgOp op, const GemmLoops &loops) {
    Value out = op.getDpsInits()[0];
    Value a = op.getDpsInputs()[0], bIn = op.getDpsInputs()[1];
    for (auto [i, buffer, rows, cols] :
         {std::make_tuple(0u, a, loops.m, std::optional<unsigned>(loops.k)),
          std::make_tuple(1u, bIn, std::optional<unsigned>(loops.k), loops.n),
          std::make_tuple(2u, out, loops.m, loops.n)})
      if (std::optional<std::string> problem =
              layoutProblem(op, i, buffer, rows, cols))
        return problem;
    return std::nullopt;
  }

  /// The position of `loop` among the output's dims, or -1.
  static int64_t outputDimOf(linalg::LinalgOp op,
                             std::optional<unsigned> loop) {
    if (!loop)
      return -1;
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    for (auto [pos, e] : llvm::enumerate(outMap.getResults()))
      if (cast<AffineDimExpr>(e).getPosition() == *loop)
        return pos;
    return -1;
  }

  /// What the product's accumulator starts from: zeros or a bias broadcast
  /// along the rows (both folded into the call), else what the output
  /// buffer holds (`accumulate`).
  struct Accumulator {
    SmallVector<Operation *> folded;
    Value bias;
    bool accumulate = true;
  };

  static Accumulator foldAccumulator(linalg::LinalgOp op,
                                     const GemmLoops &loops, int64_t nDim) {
    Value out = op.getDpsInits()[0];
    Accumulator acc;
    if (linalg::FillOp fill = foldableZeroFill(op, out)) {
      acc.folded.push_back(fill);
      acc.accumulate = false;
    } else if (linalg::BroadcastOp broadcast =
                   nDim >= 0 ? biasBroadcastInto(op, out, nDim) : nullptr;
               broadcast && isContiguousVector(broadcast.getInput()) &&
               isStaticUnitStride(op, out, loops.n)) {
      acc.folded.push_back(broadcast);
      acc.bias = broadcast.getInput();
      acc.accumulate = false;
    }
    return acc;
  }

  /// The elementwise steps after the product that cuBLASLt's epilogue can
  /// do (at most a bias and one activation), taken while the buffer each
  /// reads dies there.
  Epilogue growEpilogue(linalg::LinalgOp op, const GemmLoops &loops,
                        const Accumulator &acc, int64_t nDim) {
    Value out = op.getDpsInits()[0];
    Epilogue epilogue;
    epilogue.out = out;
    epilogue.bias = acc.bias;
    if (acc.accumulate) {
      noEpilogue(op, "the product accumulates into its output (cuBLASLt's "
                     "epilogue would need another output buffer)");
      return epilogue;
    }
    // A bias only along the output's columns when C's columns have a unit
    // stride.
    int64_t outRank = cast<MemRefType>(out.getType()).getRank();
    bool columnBias = nDim >= 0 && nDim == outRank - 1 &&
                      isStaticUnitStride(op, out, loops.n);
    Operation *last = op;
    SmallVector<Operation *> producers = {op};
    producers.append(acc.folded.begin(), acc.folded.end());
    std::string why;
    while (epilogue.steps.size() < 2) {
      int64_t biasDim = !epilogue.bias && columnBias ? nDim : -1;
      FailureOr<Step> step =
          matchStep(last, epilogue.out, producers, biasDim, why);
      if (failed(step)) {
        if (epilogue.steps.empty())
          noEpilogue(op, why);
        break;
      }
      // An activation after an activation is not cuBLASLt's.
      if (epilogue.act != Activation::None) {
        noEpilogue(op, "two activations");
        break;
      }
      if (inputWrittenBefore(op, *step)) {
        noEpilogue(op, "an input of the product is written before its "
                       "epilogue");
        break;
      }
      if (step->bias)
        epilogue.bias = step->bias;
      epilogue.act = step->act;
      epilogue.steps.push_back(*step);
      last = step->op;
      epilogue.out = step->op.getDpsInits()[0];
      producers = {step->op};
    }
    return epilogue;
  }

  /// Whether the product's inputs (or the step's bias) may be written
  /// between the product and `step`, where the call would go.
  static bool inputWrittenBefore(linalg::LinalgOp op, const Step &step) {
    Value a = getViewRoot(op.getDpsInputs()[0]);
    Value bIn = getViewRoot(op.getDpsInputs()[1]);
    Value bias = step.bias ? getViewRoot(step.bias) : Value();
    for (Operation *between = op->getNextNode(); between != step.op;
         between = between->getNextNode())
      if (mayWrite(between, a) || mayWrite(between, bIn) ||
          (bias && mayWrite(between, bias)))
        return true;
    return false;
  }

  /// Sets `b` where the call goes (the last step folded, else the product)
  /// and returns the buffer it writes, shaped as the product's output: the
  /// last step may write through a reshape of it, collapsed back where the
  /// output is contiguous; otherwise the steps stay and the call writes the
  /// product's own output.
  Value placeCallOutput(OpBuilder &b, linalg::LinalgOp op,
                        const Accumulator &acc, Epilogue &epilogue) {
    Value out = op.getDpsInits()[0];
    if (!epilogue.steps.empty())
      b.setInsertionPoint(epilogue.steps.back().op);
    Value d = epilogue.out;
    auto outType = cast<MemRefType>(out.getType());
    auto dType = cast<MemRefType>(d.getType());
    if (dType.getShape() == outType.getShape())
      return d;
    std::optional<SmallVector<ReassociationIndices>> groups =
        getReassociationIndicesForCollapse(dType.getShape(),
                                           outType.getShape());
    if (groups &&
        memref::CollapseShapeOp::isGuaranteedCollapsible(dType, *groups))
      return memref::CollapseShapeOp::create(b, op.getLoc(), d, *groups);
    noEpilogue(op, "the epilogue's output is not a contiguous reshape of "
                   "the product's");
    epilogue.steps.clear();
    epilogue.out = out;
    epilogue.act = Activation::None;
    epilogue.bias = acc.bias;
    b.setInsertionPoint(op);
    return out;
  }

  /// The address of the first element of the contiguous vector `vector`,
  /// or a null pointer for a null value.
  static Value vectorPointer(OpBuilder &b, Location loc, Value vector) {
    Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
    if (!vector)
      return LLVM::ZeroOp::create(b, loc, ptrType);
    Type element = cast<MemRefType>(vector.getType()).getElementType();
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, vector);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, vector);
    Value offsetBytes =
        arith::MulIOp::create(b, loc, meta.getOffset(),
                              arith::ConstantIndexOp::create(
                                  b, loc, element.getIntOrFloatBitWidth() / 8));
    Value address = arith::AddIOp::create(b, loc, base, offsetBytes);
    Value address64 =
        arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
    return LLVM::IntToPtrOp::create(b, loc, ptrType, address64);
  }

  /// Emits at `b` the runtime call that computes `op` with `epilogue` into
  /// `d`: meshrt_gemm_epilogue on the host target, else meshrt_gpu_gemm
  /// with a plan slot of its own on the shared stream (their _mixed forms,
  /// which take the inputs' dtype first, for a widening product).
  void emitCall(OpBuilder &b, RuntimeFunctions &functions, linalg::LinalgOp op,
                const GemmLoops &loops, Value d, const Epilogue &epilogue,
                bool accumulate, int32_t precisionCode) {
    Location loc = op.getLoc();
    GemmCallArgs args = buildGemmCallArgs(b, op, loops, d);
    Type i32 = b.getI32Type();
    Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
    Type element =
        cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType();
    auto i32Const = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i32, v);
    };
    bool mixed = loops.inputDtype.has_value();
    RuntimeEntry entry = host
                             ? (mixed ? RuntimeEntry::meshrt_gemm_epilogue_mixed
                                      : RuntimeEntry::meshrt_gemm_epilogue)
                             : (mixed ? RuntimeEntry::meshrt_gpu_gemm_mixed
                                      : RuntimeEntry::meshrt_gpu_gemm);
    checkRuntimeCall<RuntimeEntry::meshrt_gemm_epilogue, 20>();
    checkRuntimeCall<RuntimeEntry::meshrt_gemm_epilogue_mixed, 21>();
    checkRuntimeCall<RuntimeEntry::meshrt_gpu_gemm, 23>();
    checkRuntimeCall<RuntimeEntry::meshrt_gpu_gemm_mixed, 24>();
    Value biasPointer = vectorPointer(b, loc, epilogue.bias);
    Value inDtype = mixed ? i32Const(*loops.inputDtype) : Value();
    Value dtype = i32Const(*gemmDtype(element));
    Value acc = i32Const(accumulate ? 1 : 0);
    Value act = i32Const(static_cast<int32_t>(epilogue.act));
    Value slot, prec, stream;
    if (!host) {
      prec = i32Const(precisionCode);
      slot = LLVM::AddressOfOp::create(b, loc, planSlot(getOperation()));
      stream = LLVM::ZeroOp::create(b, loc, ptrType);
    }
    // In meshrt.h's order: the plan slot (GPU), the dtypes, the product,
    // its accumulation and its epilogue, then the precision and the stream
    // (GPU).
    SmallVector<Value, 24> operands;
    if (slot)
      operands.push_back(slot);
    if (mixed)
      operands.push_back(inDtype);
    operands.append({dtype,
                     args.batch,
                     args.m,
                     args.n,
                     args.k,
                     args.pointers[0],
                     args.strides[0][0],
                     args.strides[0][1],
                     args.strides[0][2],
                     args.pointers[1],
                     args.strides[1][0],
                     args.strides[1][1],
                     args.strides[1][2],
                     args.pointers[2],
                     args.strides[2][0],
                     args.strides[2][1],
                     args.strides[2][2],
                     acc,
                     biasPointer,
                     act});
    if (!host)
      operands.append({prec, stream});
    functions.callChecked(b, loc, entry, operands,
                          getRuntimeEntryName(entry) + " for '" +
                              op->getName().getStringRef() + "'");
  }

  /// Erases what the call replaces (the steps, their bias broadcasts, the
  /// folded initialisation, the product), then buffers left with no reader.
  static void eraseReplaced(linalg::LinalgOp op, const Accumulator &acc,
                            Epilogue &epilogue) {
    SmallVector<Value> buffers = {op.getDpsInits()[0]};
    for (Step &step : epilogue.steps) {
      buffers.push_back(step.op.getDpsInits()[0]);
      if (step.biasBroadcast)
        buffers.push_back(step.biasBroadcast.getInit());
    }
    for (Step &step : llvm::reverse(epilogue.steps)) {
      linalg::BroadcastOp broadcast = step.biasBroadcast;
      step.op->erase();
      if (broadcast)
        broadcast->erase();
    }
    for (Operation *f : acc.folded)
      f->erase();
    op->erase();
    for (Value buffer : buffers)
      eraseIfDead(buffer);
  }

  /// Whether `op`'s output `buffer` has a static unit stride along `loop`.
  static bool isStaticUnitStride(linalg::LinalgOp op, Value buffer,
                                 std::optional<unsigned> loop) {
    StaticStride s = staticStrideOf(op, op->getNumOperands() - 1, buffer, loop);
    return s.stride && (*s.stride == 1 || s.unitExtent);
  }

  /// Erases the allocation `buffer` (and its views and deallocations) when
  /// nothing reads or writes it any more.
  static void eraseIfDead(Value buffer) {
    auto alloc = buffer.getDefiningOp<memref::AllocOp>();
    if (!alloc)
      return;
    SmallVector<Operation *> users(alloc->getUsers());
    for (Operation *user : users) {
      if (isa<memref::DeallocOp>(user))
        continue;
      if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user) &&
          user->use_empty())
        continue;
      return;
    }
    for (Operation *user : users)
      user->erase();
    alloc->erase();
  }

  unsigned nextSlot = 0;
};

} // namespace

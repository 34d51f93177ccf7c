//===- ApproximateMath.cpp - math functions as vectorisable polynomials ---===//
//
// The host pipeline's math functions (exp, tanh, log, erf, sin, ...) on f32
// become MLIR's polynomial approximations: plain arithmetic that LLVM's loop
// vectoriser widens to the machine's vector width, where a call of expf or
// tanhf per element would stay scalar. f16 and bf16 are computed in f32;
// f64 keeps the library calls. bf16 conversions become integer arithmetic
// (MeshExpandBFloat16), not calls of __truncsfbf2; the host pipeline first
// computes every other bf16 op in f32 between such conversions.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHAPPROXIMATEMATH
#define GEN_PASS_DEF_MESHEXPANDBFLOAT16
#define GEN_PASS_DEF_MESHMATHTOLIBM
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// The functions approximated: those on the hot paths of models (softmax's
/// exp, GELU's tanh or erf, log-softmax's log) whose approximations hold
/// over the whole f32 range. MLIR's sin and cos lose their range reduction
/// for large arguments (sin(1e20) gave -inf), cbrt(inf) and atan2(0, 0)
/// gave NaN, and erfc flushes results below 2^-126 to 0: those keep the
/// library's function.
bool isApproximated(StringRef name) {
  return llvm::is_contained({"math.exp", "math.expm1", "math.log", "math.log2",
                             "math.log1p", "math.tanh", "math.erf"},
                            name);
}

/// The approximations build 2^k from the exponent field, so they know no
/// subnormals: exp(x) below 2^-126 came out 0 and log(x) of a subnormal as
/// log(2^-126). Around each f32 exp, log and log2 (after f16/bf16 were
/// widened: bf16 has f32's subnormals):
///   exp(x)  = exp(x / 2)^2 for x < -87 (one rounding into the subnormal,
///             both factors normal);
///   log(x)  = log(x * 2^23) - 23 ln 2 and log2(x) = log2(x * 2^23) - 23
///             for x < 2^-126 (the product is exact).
/// Each costs two selects and two multiplies or adds beside the function.
void keepSubnormals(Operation *op) {
  Type resultType = op->getResult(0).getType();
  if (!getElementTypeOrSelf(resultType).isF32())
    return;
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  Type type = x.getType();
  bool isExp = isa<math::ExpOp>(op);
  auto constant = [&](double value) {
    return createScalarOrSplatConstant(b, loc, type, APFloat(float(value)));
  };
  Value bound = constant(isExp ? -87.0 : 0x1p-126);
  Value small =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, bound);
  Value scaled =
      arith::MulFOp::create(b, loc, x, constant(isExp ? 0.5 : 0x1p23));
  op->setOperand(0, arith::SelectOp::create(b, loc, small, scaled, x));
  b.setInsertionPointAfter(op);
  Value r = op->getResult(0);
  Value fixed;
  if (isExp)
    fixed = arith::MulFOp::create(b, loc, r, r);
  else
    fixed = arith::SubFOp::create(
        b, loc, r, constant(isa<math::LogOp>(op) ? 23 * M_LN2 : 23.0));
  Value result = arith::SelectOp::create(b, loc, small, fixed, r);
  SmallPtrSet<Operation *, 2> readers = {fixed.getDefiningOp(),
                                         result.getDefiningOp()};
  r.replaceAllUsesExcept(result, readers);
}

struct MeshApproximateMathPass
    : public mesh::impl::MeshApproximateMathBase<MeshApproximateMathPass> {
  void runOnOperation() override {
    // MLIR's approximations build invalid IR for a math op on tensors (a
    // compare of a tensor with a scalar); the pipelines have made those
    // loops of scalars before this pass.
    WalkResult tensors = getOperation().walk([](Operation *op) {
      if (isa<math::MathDialect>(op->getDialect()) &&
          llvm::any_of(op->getOperandTypes(), llvm::IsaPred<TensorType>)) {
        op->emitOpError("is on tensors: mesh-approximate-math takes math on "
                        "scalars and vectors (run it after "
                        "convert-elementwise-to-linalg and bufferization, as "
                        "--mesh-to-llvm does)");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (tensors.wasInterrupted())
      return signalPassFailure();
    // f16/bf16 widened to f32, the subnormals kept, then the approximation
    // (rsqrt is left: it lowers to a vectorisable 1 / sqrt anyway).
    RewritePatternSet widen(&getContext());
    populateMathF32ExpansionPatterns(widen, isApproximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(widen))))
      return signalPassFailure();
    getOperation().walk([](Operation *op) {
      if (isa<math::ExpOp, math::LogOp, math::Log2Op>(op))
        keepSubnormals(op);
    });
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

/// A bf16 math.fma (which math-extend-to-supported-types leaves) computed
/// in f32 between conversions, as the other bf16 ops are: the f32 product
/// of two bf16 values is exact, so the one rounding is the truncation.
void widenBFloat16Fma(math::FmaOp fma) {
  Type type = fma.getType();
  if (!getElementTypeOrSelf(type).isBF16())
    return;
  OpBuilder b(fma);
  Location loc = fma.getLoc();
  Type wide = cast<FloatType>(b.getF32Type());
  if (auto shaped = dyn_cast<ShapedType>(type))
    wide = shaped.clone(wide);
  SmallVector<Value, 3> operands;
  for (Value v : fma->getOperands())
    operands.push_back(arith::ExtFOp::create(b, loc, wide, v));
  Value r = math::FmaOp::create(b, loc, operands[0], operands[1], operands[2]);
  fma.replaceAllUsesWith(arith::TruncFOp::create(b, loc, type, r).getResult());
  fma.erase();
}

struct MeshExpandBFloat16Pass
    : public mesh::impl::MeshExpandBFloat16Base<MeshExpandBFloat16Pass> {
  void runOnOperation() override {
    // Conversions are exact or correctly rounded: the `contract` flag that
    // MLIR's widening passes put on them means nothing, and ArithToLLVM
    // would copy it onto llvm.fpext / llvm.fptrunc as an arith attribute
    // that mlir-translate cannot read.
    getOperation().walk([](Operation *op) {
      if (auto ext = dyn_cast<arith::ExtFOp>(op))
        ext.removeFastmathAttr();
      else if (auto trunc = dyn_cast<arith::TruncFOp>(op))
        trunc.removeFastmathAttr();
      else if (auto fma = dyn_cast<math::FmaOp>(op))
        widenBFloat16Fma(fma);
    });
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

struct MeshMathToLibmPass
    : public mesh::impl::MeshMathToLibmBase<MeshMathToLibmPass> {
  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalOp<math::AcoshOp, math::AsinhOp, math::AtanhOp,
                        math::CbrtOp, math::ErfOp, math::ErfcOp, math::ExpM1Op,
                        math::Log1pOp>();
    RewritePatternSet patterns(&getContext());
    populateMathToLibmConversionPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

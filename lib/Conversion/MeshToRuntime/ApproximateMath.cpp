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

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHAPPROXIMATEMATH
#define GEN_PASS_DEF_MESHEXPANDBFLOAT16
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

struct MeshApproximateMathPass
    : public mesh::impl::MeshApproximateMathBase<MeshApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The default set: f16/bf16 widened to f32, then each function MLIR
    // approximates (rsqrt only with AVX2 intrinsics, not asked for: it
    // lowers to a vectorisable 1 / sqrt anyway).
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

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
    });
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

//===- LinalgToBlas.cpp - contractions on buffers to meshrt_gemm ----------===//
//
// Every linalg op on buffers that is a (batched) matrix product, vector
// product or dot product of one float type becomes one call of the
// runtime's meshrt_gemm, which hands it to a BLAS; one whose inputs are of
// a narrower float type, widened in the body (f16 into f32), becomes one
// call of meshrt_gemm_mixed; so does one of 8-bit integers into i32 or i64
// (exact sums through a float GEMM that holds them). The op form does not
// matter: a named op (matmul, batch_matmul, matvec, vecmat, dot, a matmul
// with transposed indexing maps) and a linalg.generic are matched alike, on
// their indexing maps and their body (a multiply of the two inputs added to
// the output, nothing else). The layout of each operand is read from its
// buffer at run time (strides), so a transposed or strided view needs no
// copy here; the runtime packs what the library cannot read.
//
// A linalg.fill of +0.0 into the output just before the product (nothing
// between them touches that buffer) is folded into the call (the library
// overwrites instead of accumulating).
//
//===----------------------------------------------------------------------===//

#include "GemmMatch.h"

#include "mesh/Conversion/BufferRoots.h"
#include "mesh/Conversion/Passes.h"
#include "mesh/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"

#define DEBUG_TYPE "mesh-linalg-to-blas"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHLINALGTOBLAS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

struct MeshLinalgToBlasPass
    : public mesh::impl::MeshLinalgToBlasBase<MeshLinalgToBlasPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    RuntimeFunctions functions(module);
    if (failed(functions.verifyDeclarations("mesh-linalg-to-blas")))
      return signalPassFailure();
    SmallVector<std::pair<linalg::LinalgOp, GemmLoops>> matched;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::FillOp, linalg::CopyOp, linalg::TransposeOp,
              linalg::BroadcastOp>(op.getOperation()) ||
          op.getNumReductionLoops() == 0)
        return;
      std::string why;
      FailureOr<GemmLoops> loops = matchGemm(op, why, /*allowWidening=*/true);
      if (failed(loops)) {
        LLVM_DEBUG(llvm::dbgs()
                   << "kept as loops: " << why << ": " << op << "\n");
        if (report)
          op->emitRemark() << "kept as loops: " << why;
        return;
      }
      matched.emplace_back(op, *loops);
    });
    for (auto &[op, loops] : matched)
      rewrite(functions, op, loops);
  }

  void rewrite(RuntimeFunctions &functions, linalg::LinalgOp op,
               const GemmLoops &loops) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Type i32 = b.getI32Type();
    Type element =
        cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType();
    linalg::FillOp fill = foldableZeroFill(op, op.getDpsInits()[0]);
    GemmCallArgs args = buildGemmCallArgs(b, op, loops);
    auto dtypeConst = [&](int32_t dtype) -> Value {
      return arith::ConstantIntOp::create(b, loc, i32, dtype);
    };
    Value accumulate = arith::ConstantIntOp::create(b, loc, i32, fill ? 0 : 1);
    // A product of a narrower type into C's (f16 into f32, i8 into i32,
    // ...): A and B widened by meshrt_gemm_mixed, which takes both dtypes.
    bool mixed = loops.inputDtype.has_value();
    RuntimeEntry entry =
        mixed ? RuntimeEntry::meshrt_gemm_mixed : RuntimeEntry::meshrt_gemm;
    checkRuntimeCall<RuntimeEntry::meshrt_gemm, 18>();
    checkRuntimeCall<RuntimeEntry::meshrt_gemm_mixed, 19>();
    SmallVector<Value> operands = {
        dtypeConst(mixed ? *loops.inputDtype : *gemmDtype(element))};
    if (mixed)
      operands.push_back(dtypeConst(*getRuntimeDtype(element)));
    operands.append({args.batch, args.m, args.n, args.k, args.pointers[0],
                     args.strides[0][0], args.strides[0][1], args.strides[0][2],
                     args.pointers[1], args.strides[1][0], args.strides[1][1],
                     args.strides[1][2], args.pointers[2], args.strides[2][0],
                     args.strides[2][1], args.strides[2][2], accumulate});
    functions.callChecked(b, loc, entry, operands,
                          getRuntimeEntryName(entry) + " for '" +
                              op->getName().getStringRef() + "'");
    LLVM_DEBUG(llvm::dbgs()
               << "to " << getRuntimeEntryName(entry)
               << (fill ? " (fill folded)" : "") << ": " << op << "\n");
    if (fill)
      fill->erase();
    op->erase();
  }
};

} // namespace

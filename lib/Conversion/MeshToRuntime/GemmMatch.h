//===- GemmMatch.h - contractions on buffers as GEMMs -----------*- C++ -*-===//
//
// What mesh-linalg-to-blas (host) and mesh-gpu-linalg-to-cublas (GPU) share:
// recognising a linalg op on buffers as a (batched) GEMM, the zero fill it
// may fold, and the pointers, extents and strides of its call.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_LIB_CONVERSION_MESHTORUNTIME_GEMMMATCH_H
#define MESH_LIB_CONVERSION_MESHTORUNTIME_GEMMMATCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

#include <optional>
#include <string>

namespace mlir {
namespace mesh {

/// The loops of a contraction C[b, m, n] += A[b, m, k] * B[b, k, n]; a loop
/// that is absent has no entry (a matvec has no n, a dot no m and no n).
/// Where the op has several batch, m or n loops (attention computed on
/// (batch, heads) both, a matmul on (batch, rows)), the innermost of each
/// kind is the call's and the others are `outer`: a loop nest around the
/// call, each iteration one GEMM on its part of the operands.
struct GemmLoops {
  std::optional<unsigned> batch, m, n;
  unsigned k;
  SmallVector<unsigned> outer;
  /// The runtime dtype of A and B where they are narrower than C and widened
  /// in the body (a meshrt_gemm_mixed product); none where all are C's type.
  std::optional<int32_t> inputDtype;
};

/// The runtime dtype of a float element type a GEMM takes (f16, bf16, f32,
/// f64: the float types the runtime has).
std::optional<int32_t> gemmDtype(Type t);

/// The loops of `op` as a GEMM, or why it is none (in `why`). With
/// `allowWidening`, A and B may have a narrower type than C, each widened in
/// the body (`out + ext(a) * ext(b)`: arith.extf of floats, exact; extsi or
/// extui of 8-bit integers into i32 or i64), where the runtime takes the
/// pair (meshrt_gemm_mixed).
FailureOr<GemmLoops> matchGemm(linalg::LinalgOp op, std::string &why,
                               bool allowWidening = false);

/// Whether `op` may touch the buffer `root` (an allocation of this
/// function): it has effects on a value that is not provably another
/// allocation or an argument of the function, or effects it does not say
/// on what.
bool mayTouch(Operation *op, Value root);

/// The linalg.fill of +0.0 into exactly `out` that the product may
/// replace: an earlier op of the same block, with nothing in between that
/// may touch `out`'s buffer, which this function allocates (an argument or
/// any other value may alias anything).
linalg::FillOp foldableZeroFill(Operation *product, Value out);

/// The arguments of one GEMM call: the extents of its batch, m, n and k
/// loops, and each operand's pointer and strides (batch, rows, columns; 0
/// for a loop the operand does not index), as i64 / !llvm.ptr values.
struct GemmCallArgs {
  Value batch, m, n, k;
  Value pointers[3];
  Value strides[3][3];
};

/// Emits at `b`'s insertion point the arguments of `op`'s product, its
/// output read from `out` (the op's own output buffer when null: another
/// buffer indexed like it), inside an scf.for nest over `loops.outer` whose
/// iterations move each operand's pointer; `b` is left in the innermost
/// loop.
GemmCallArgs buildGemmCallArgs(OpBuilder &b, linalg::LinalgOp op,
                               const GemmLoops &loops, Value out = {});

/// The static strides of `buffer` (a memref with a strided layout) along
/// the dims that `op`'s operand `operand` indexes by `loopA` and `loopB`,
/// where known: for each loop, its stride (kDynamic when unknown, nullopt
/// when the operand does not index that loop) and whether the dim's size is
/// statically 1.
struct StaticStride {
  std::optional<int64_t> stride;
  bool unitExtent = false;
};
StaticStride staticStrideOf(linalg::LinalgOp op, unsigned operand, Value buffer,
                            std::optional<unsigned> loop);

} // namespace mesh
} // namespace mlir

#endif // MESH_LIB_CONVERSION_MESHTORUNTIME_GEMMMATCH_H

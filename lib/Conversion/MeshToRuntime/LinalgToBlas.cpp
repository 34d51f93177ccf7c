//===- LinalgToBlas.cpp - contractions on buffers to meshrt_gemm ----------===//
//
// Every linalg op on buffers that is a (batched) matrix product, vector
// product or dot product of one float type becomes one call of the
// runtime's meshrt_gemm, which hands it to a BLAS. The op form does not
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
};

/// The runtime dtype of a float element type meshrt_gemm takes (f16, bf16,
/// f32, f64: the float types the runtime has).
std::optional<int32_t> gemmDtype(Type t) {
  return isa<FloatType>(t) ? getRuntimeDtype(t) : std::nullopt;
}

/// Whether `body` is `yield(out + a * b)` with a, b the two inputs (either
/// order of each operation), nothing else, on floats.
bool isMultiplyAdd(Block &body) {
  if (body.getNumArguments() != 3 || !llvm::hasNItems(body, 3))
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != &body)
    return false;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out   ? add.getRhs()
                  : add.getRhs() == out ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul || mul->getBlock() != &body)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// The loops of `op` as a GEMM, or why it is none.
FailureOr<GemmLoops> matchGemm(linalg::LinalgOp op, std::string &why) {
  auto fail = [&](const Twine &reason) {
    why = reason.str();
    return failure();
  };
  if (!op.hasPureBufferSemantics())
    return fail("not on buffers");
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return fail("not two inputs and one output");
  SmallVector<MemRefType, 3> types;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      return fail("an operand is not a buffer");
    if (type.getMemorySpace())
      return fail("a buffer in another memory space");
    if (!type.isStrided())
      return fail("a buffer whose layout is not strided");
    types.push_back(type);
  }
  Type element = types[2].getElementType();
  if (!gemmDtype(element))
    return fail("element type " + llvm::formatv("{0}", element).str() +
                " (the BLAS takes f16, bf16, f32 and f64)");
  if (types[0].getElementType() != element ||
      types[1].getElementType() != element)
    return fail("mixed element types");
  if (!isMultiplyAdd(*op.getBlock()))
    return fail("the body is not out + a * b");
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return fail("the indexing maps are not a contraction");
  if (dims->k.size() != 1)
    return fail(
        llvm::formatv("{0} k loops (a GEMM has one)", dims->k.size()).str());
  if (dims->batch.size() + dims->m.size() + dims->n.size() + 1 !=
      op.getNumLoops())
    return fail("a loop that is neither batch, m, n nor k");
  // A reduction loop that also indexes the output makes an elementwise
  // product, not a contraction.
  if (op.getMatchingIndexingMap(op.getDpsInitOperand(0))
          .isFunctionOfDim(dims->k[0]))
    return fail("the k loop indexes the output");
  // Each operand indexes each of its loops once, by a plain dim.
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return fail("an indexing map is not a projected permutation");
  GemmLoops loops;
  // The innermost loop of each kind is the call's; the others loop.
  auto take = [&](ArrayRef<unsigned> kind, std::optional<unsigned> &kept) {
    if (kind.empty())
      return;
    kept = *llvm::max_element(kind);
    for (unsigned l : kind)
      if (l != *kept)
        loops.outer.push_back(l);
  };
  take(dims->batch, loops.batch);
  take(dims->m, loops.m);
  take(dims->n, loops.n);
  llvm::sort(loops.outer);
  loops.k = dims->k[0];
  return loops;
}

/// Whether `op` may touch the buffer `root` (an allocation of this
/// function): it has effects on a value that is not provably another
/// allocation, or effects it does not say on what.
bool mayTouch(Operation *op, Value root) {
  if (isMemoryEffectFree(op))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (auto &effect : list) {
    Value value = effect.getValue();
    if (!value)
      return true;
    Value other = getViewRoot(value);
    // A select, a call result or a cast pointer may be `root` under
    // another name: only another allocation is known apart.
    if (other == root || !isAllocation(other))
      return true;
  }
  return false;
}

/// The linalg.fill of +0.0 into exactly `out` that the product may
/// replace: an earlier op of the same block, with nothing in between that
/// may touch `out`'s buffer, which this function allocates (an argument or
/// any other value may alias anything).
linalg::FillOp foldableZeroFill(Operation *product, Value out) {
  Value root = getViewRoot(out);
  if (!isAllocation(root))
    return nullptr;
  for (Operation *op = product->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      if (fill.hasPureBufferSemantics() && fill.getOutputs()[0] == out) {
        FloatAttr value;
        if (matchPattern(fill.getInputs()[0], m_Constant(&value)) &&
            value.getValue().isPosZero())
          return fill;
        return nullptr;
      }
    }
    if (mayTouch(op, root))
      return nullptr;
  }
  return nullptr;
}

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
      FailureOr<GemmLoops> loops = matchGemm(op, why);
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
    Type i64 = b.getI64Type(), i32 = b.getI32Type();
    Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
    auto i64Const = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i64, v);
    };
    auto toI64 = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, loc, i64, index);
    };
    Value operands[3] = {op.getDpsInputs()[0], op.getDpsInputs()[1],
                         op.getDpsInits()[0]};
    Type element = cast<MemRefType>(operands[2].getType()).getElementType();
    int64_t bytes = element.getIntOrFloatBitWidth() / 8;

    linalg::FillOp fill = foldableZeroFill(op, operands[2]);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    std::optional<unsigned> order[3][3] = {
        {loops.batch, loops.m, loops.k}, // A: batch, rows, cols
        {loops.batch, loops.k, loops.n}, // B
        {loops.batch, loops.m, loops.n}, // C
    };
    Value pointers[3];
    // The stride of each loop in each operand (null: the operand does not
    // index it, a broadcast) and the extent of each loop, from the first
    // operand that indexes it.
    SmallVector<DenseMap<unsigned, Value>, 3> loopStrides(3);
    DenseMap<unsigned, Value> extents;
    for (unsigned i = 0; i < 3; ++i) {
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, operands[i]);
      Value base =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, operands[i]);
      Value offsetBytes =
          arith::MulIOp::create(b, loc, meta.getOffset(),
                                arith::ConstantIndexOp::create(b, loc, bytes));
      Value address = arith::AddIOp::create(b, loc, base, offsetBytes);
      pointers[i] = LLVM::IntToPtrOp::create(b, loc, ptrType, toI64(address));
      for (auto [pos, e] : llvm::enumerate(maps[i].getResults())) {
        unsigned loop = cast<AffineDimExpr>(e).getPosition();
        loopStrides[i][loop] = toI64(meta.getStrides()[pos]);
        if (!extents.count(loop))
          extents[loop] = toI64(meta.getSizes()[pos]);
      }
    }
    auto extent = [&](std::optional<unsigned> loop) -> Value {
      return loop ? extents.lookup(*loop) : i64Const(1);
    };
    auto stride = [&](unsigned i, unsigned j) -> Value {
      Value s = order[i][j] ? loopStrides[i].lookup(*order[i][j]) : Value();
      return s ? s : i64Const(0);
    };
    // The outer loops, each iteration moving each operand's pointer by its
    // stride of that loop.
    for (unsigned loop : loops.outer) {
      Value zero = i64Const(0), one = i64Const(1);
      auto nest = scf::ForOp::create(b, loc, zero, extent(loop), one);
      b.setInsertionPointToStart(nest.getBody());
      Value iv = nest.getInductionVar();
      for (unsigned i = 0; i < 3; ++i) {
        Value s = loopStrides[i].lookup(loop);
        if (!s)
          continue;
        Value elements = arith::MulIOp::create(b, loc, iv, s);
        pointers[i] = LLVM::GEPOp::create(b, loc, ptrType, element, pointers[i],
                                          ValueRange{elements});
      }
    }
    Value dtype =
        arith::ConstantIntOp::create(b, loc, i32, *gemmDtype(element));
    Value accumulate = arith::ConstantIntOp::create(b, loc, i32, fill ? 0 : 1);
    std::string what =
        ("meshrt_gemm for '" + op->getName().getStringRef() + "'").str();
    functions.callChecked<RuntimeEntry::meshrt_gemm>(
        b, loc, what,
        {dtype, extent(loops.batch), extent(loops.m), extent(loops.n),
         extent(loops.k), pointers[0], stride(0, 0), stride(0, 1), stride(0, 2),
         pointers[1], stride(1, 0), stride(1, 1), stride(1, 2), pointers[2],
         stride(2, 0), stride(2, 1), stride(2, 2), accumulate});
    LLVM_DEBUG(llvm::dbgs()
               << "to meshrt_gemm" << (fill ? " (fill folded)" : "") << ": "
               << op << "\n");
    if (fill)
      fill->erase();
    op->erase();
  }
};

} // namespace

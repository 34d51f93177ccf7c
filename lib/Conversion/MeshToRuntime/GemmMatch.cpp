//===- GemmMatch.cpp - contractions on buffers as GEMMs -------------------===//
//
// See GemmMatch.h.
//
//===----------------------------------------------------------------------===//

#include "GemmMatch.h"

#include "mesh/Conversion/BufferRoots.h"
#include "mesh/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::mesh;

namespace {
/// How the inputs of a product's body reach the output's type.
enum class Widening { None, Float, Signed, Unsigned };

/// The widening of `v`, an operand of `body`'s multiply (an arith.extf,
/// extsi or extui of `body`, else None), and the value it widens.
std::pair<Widening, Value> widenedFrom(Value v, Block &body) {
  Operation *op = v.getDefiningOp();
  if (!op || op->getBlock() != &body)
    return {Widening::None, v};
  if (auto ext = dyn_cast<arith::ExtFOp>(op))
    return {Widening::Float, ext.getIn()};
  if (auto ext = dyn_cast<arith::ExtSIOp>(op))
    return {Widening::Signed, ext.getIn()};
  if (auto ext = dyn_cast<arith::ExtUIOp>(op))
    return {Widening::Unsigned, ext.getIn()};
  return {Widening::None, v};
}

/// How `body` widens its inputs, if it is `yield(out + a * b)` with a, b the
/// two inputs (either order of each operation) and nothing else: float or
/// integer arithmetic, each input either as it is or (both alike) widened to
/// the output's type by an arith.extf, extsi or extui.
std::optional<Widening> productWidening(Block &body) {
  if (body.getNumArguments() != 3 ||
      !(llvm::hasNItems(body, 3) || llvm::hasNItems(body, 5)))
    return std::nullopt;
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return std::nullopt;
  Operation *add = yield.getOperand(0).getDefiningOp();
  if (!add || add->getBlock() != &body ||
      !isa<arith::AddFOp, arith::AddIOp>(add))
    return std::nullopt;
  Value out = body.getArgument(2);
  Value lhs = add->getOperand(0), rhs = add->getOperand(1);
  Value product = lhs == out ? rhs : rhs == out ? lhs : Value();
  Operation *mul = product ? product.getDefiningOp() : nullptr;
  if (!mul || mul->getBlock() != &body ||
      !(isa<arith::AddFOp>(add) ? isa<arith::MulFOp>(mul)
                                : isa<arith::MulIOp>(mul)))
    return std::nullopt;
  auto [kindX, x] = widenedFrom(mul->getOperand(0), body);
  auto [kindY, y] = widenedFrom(mul->getOperand(1), body);
  Value a = body.getArgument(0), b = body.getArgument(1);
  if (kindX != kindY || !((x == a && y == b) || (x == b && y == a)))
    return std::nullopt;
  return kindX;
}

/// Whether the BLAS path widens float `in` to `out` exactly
/// (meshrt_gemm_mixed).
bool isExactWidening(Type in, Type out) {
  if (!gemmDtype(in) || !gemmDtype(out))
    return false;
  unsigned from = in.getIntOrFloatBitWidth(), to = out.getIntOrFloatBitWidth();
  return from < to && to >= 32;
}

/// Whether meshrt_gemm_mixed takes an integer product of `in` into `out`:
/// 8-bit inputs into i32 or i64.
bool isIntegerWidening(Type in, Type out) {
  return in.isInteger(8) && (out.isInteger(32) || out.isInteger(64));
}

} // namespace

std::optional<int32_t> mlir::mesh::gemmDtype(Type t) {
  return isa<FloatType>(t) ? getRuntimeDtype(t) : std::nullopt;
}

FailureOr<GemmLoops> mlir::mesh::matchGemm(linalg::LinalgOp op,
                                           std::string &why,
                                           bool allowWidening) {
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
  Type input = types[0].getElementType();
  bool widened = input != element;
  if (types[1].getElementType() != input ||
      (widened && (!allowWidening || !(isExactWidening(input, element) ||
                                       isIntegerWidening(input, element)))))
    return fail("mixed element types");
  if (!widened && !gemmDtype(element))
    return fail("element type " + llvm::formatv("{0}", element).str() +
                " (the BLAS takes f16, bf16, f32 and f64" +
                (allowWidening ? "; integers only as 8-bit inputs into i32 or "
                                 "i64)"
                               : ")"));
  std::optional<Widening> widening = productWidening(*op.getBlock());
  bool isFloat = isa<FloatType>(element);
  if (!widening || (widened ? *widening == Widening::None ||
                                  (*widening == Widening::Float) != isFloat
                            : *widening != Widening::None))
    return fail(widened ? "the body is not out + ext(a) * ext(b)"
                        : "the body is not out + a * b");
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
  if (widened)
    loops.inputDtype = *widening == Widening::Unsigned ? MESHRT_U8
                       : *widening == Widening::Signed ? MESHRT_I8
                                                       : *gemmDtype(input);
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

/// Whether `value` is an argument of its function's entry block.
static bool isFunctionArgument(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  return arg && isa<FunctionOpInterface>(arg.getOwner()->getParentOp()) &&
         arg.getOwner()->isEntryBlock();
}

bool mlir::mesh::mayTouch(Operation *op, Value root) {
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
    // another name: only another allocation, or an argument of the function
    // (a buffer that existed before `root` was allocated), is known apart.
    if (other == root || !(isAllocation(other) || isFunctionArgument(other)))
      return true;
  }
  return false;
}

linalg::FillOp mlir::mesh::foldableZeroFill(Operation *product, Value out) {
  Value root = getViewRoot(out);
  if (!isAllocation(root))
    return nullptr;
  for (Operation *op = product->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      if (fill.hasPureBufferSemantics() && fill.getOutputs()[0] == out) {
        // +0.0, or an integer 0 (an integer product's accumulator).
        Value init = fill.getInputs()[0];
        FloatAttr value;
        if ((matchPattern(init, m_Constant(&value)) &&
             value.getValue().isPosZero()) ||
            (isa<IntegerType>(init.getType()) && matchPattern(init, m_Zero())))
          return fill;
        return nullptr;
      }
    }
    if (mayTouch(op, root))
      return nullptr;
  }
  return nullptr;
}

GemmCallArgs mlir::mesh::buildGemmCallArgs(OpBuilder &b, linalg::LinalgOp op,
                                           const GemmLoops &loops, Value out) {
  Location loc = op.getLoc();
  Type i64 = b.getI64Type();
  Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
  auto i64Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  };
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, i64, index);
  };
  Value operands[3] = {op.getDpsInputs()[0], op.getDpsInputs()[1],
                       out ? out : op.getDpsInits()[0]};
  auto elementOf = [&](unsigned i) {
    return cast<MemRefType>(operands[i].getType()).getElementType();
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  std::optional<unsigned> order[3][3] = {
      {loops.batch, loops.m, loops.k}, // A: batch, rows, cols
      {loops.batch, loops.k, loops.n}, // B
      {loops.batch, loops.m, loops.n}, // C
  };
  GemmCallArgs args;
  // The stride of each loop in each operand (null: the operand does not
  // index it, a broadcast) and the extent of each loop, from the first
  // operand that indexes it.
  SmallVector<DenseMap<unsigned, Value>, 3> loopStrides(3);
  DenseMap<unsigned, Value> extents;
  for (unsigned i = 0; i < 3; ++i) {
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, operands[i]);
    Value base =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, operands[i]);
    int64_t bytes = elementOf(i).getIntOrFloatBitWidth() / 8;
    Value offsetBytes =
        arith::MulIOp::create(b, loc, meta.getOffset(),
                              arith::ConstantIndexOp::create(b, loc, bytes));
    Value address = arith::AddIOp::create(b, loc, base, offsetBytes);
    args.pointers[i] =
        LLVM::IntToPtrOp::create(b, loc, ptrType, toI64(address));
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
      args.pointers[i] =
          LLVM::GEPOp::create(b, loc, ptrType, elementOf(i), args.pointers[i],
                              ValueRange{elements});
    }
  }
  args.batch = extent(loops.batch);
  args.m = extent(loops.m);
  args.n = extent(loops.n);
  args.k = extent(loops.k);
  for (unsigned i = 0; i < 3; ++i)
    for (unsigned j = 0; j < 3; ++j) {
      Value s = order[i][j] ? loopStrides[i].lookup(*order[i][j]) : Value();
      args.strides[i][j] = s ? s : i64Const(0);
    }
  return args;
}

StaticStride mlir::mesh::staticStrideOf(linalg::LinalgOp op, unsigned operand,
                                        Value buffer,
                                        std::optional<unsigned> loop) {
  StaticStride result;
  if (!loop)
    return result;
  auto type = cast<MemRefType>(buffer.getType());
  AffineMap map = op.getIndexingMapsArray()[operand];
  for (auto [pos, e] : llvm::enumerate(map.getResults())) {
    if (cast<AffineDimExpr>(e).getPosition() != *loop)
      continue;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (succeeded(type.getStridesAndOffset(strides, offset)))
      result.stride = strides[pos];
    else
      result.stride = ShapedType::kDynamic;
    result.unitExtent = type.getDimSize(pos) == 1;
    return result;
  }
  return result;
}

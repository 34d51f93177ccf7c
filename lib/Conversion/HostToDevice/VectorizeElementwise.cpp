//===- VectorizeElementwise.cpp - 16-byte loads in elementwise kernels ----===//
//
// An elementwise linalg op becomes, after convert-linalg-to-parallel-loops,
// an scf.parallel whose body loads one element of each operand at the
// nest's indices, computes, and stores one element. Mapped to threads as it
// is, each thread moves 4 bytes of f32 per load instruction; a GPU moves
// memory fastest with 16-byte accesses (ld.global.v4.f32). This pass makes
// the innermost dimension step by V elements (16 bytes of the widest
// element the body moves) and its loads, computation and stores vectors of
// V elements, where the layout allows: the innermost index is the loop's
// variable itself, the buffers are contiguous along it, and every row
// starts on a multiple of V. Whether a buffer's start is 16-byte aligned
// is only known at run time for buffers the function did not allocate
// (arguments, views of them): the vector nest then runs under a test of
// their addresses, and the scalar nest stays as the other branch.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUVECTORIZEELEMENTWISE
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// What vectorising one nest takes: the width, and the buffers whose
/// alignment must be tested at run time.
struct Plan {
  int64_t width = 0;
  llvm::SetVector<Value> unaligned; // buffers to test, in order of use
  llvm::DenseMap<Value, int64_t> elementBytes;
};

bool isVectorElement(Type t) {
  return (isa<FloatType>(t) || t.isSignlessInteger()) &&
         t.getIntOrFloatBitWidth() % 8 == 0 && t.getIntOrFloatBitWidth() <= 64;
}

/// The buffer `mem` comes from an allocation of the function, through
/// views that keep its aligned pointer and put any offset in their type
/// (which rowsAligned checks): its start is aligned by the allocator
/// (malloc's 16 bytes on the host, 256 bytes from the device pools). Not
/// through memref.view, whose byte shift moves the aligned pointer itself.
bool allocatedHere(Value mem) {
  while (Operation *def = mem.getDefiningOp()) {
    if (isa<memref::AllocOp, memref::AllocaOp, gpu::AllocOp>(def))
      return true;
    if (!isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::CastOp>(def))
      return false;
    mem = cast<ViewLikeOpInterface>(def).getViewSource();
  }
  return false;
}

/// The innermost index of a load's or store's indices is `iv` itself and no
/// other index uses it: the access moves along a row.
bool alongRow(ValueRange indices, Value iv) {
  if (indices.empty() || indices.back() != iv)
    return false;
  return llvm::count(indices, iv) == 1;
}

/// The rows of `type` are contiguous along the last dimension and start on
/// a multiple of `width` elements (its static offset and outer strides are
/// multiples of it).
bool rowsAligned(MemRefType type, int64_t width) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      strides.back() != 1 || ShapedType::isDynamic(offset) ||
      offset % width != 0)
    return false;
  for (int64_t s : ArrayRef(strides).drop_back())
    if (ShapedType::isDynamic(s) || s % width != 0)
      return false;
  return true;
}

/// The plan for `nest`, if its innermost dimension can be vectorised.
std::optional<Plan> planNest(scf::ParallelOp nest, int64_t vectorBytes) {
  if (nest.getNumReductions() != 0)
    return std::nullopt;
  unsigned d = nest.getNumLoops() - 1;
  Value iv = nest.getInductionVars()[d];
  std::optional<int64_t> lb = getConstantIntValue(nest.getLowerBound()[d]);
  std::optional<int64_t> ub = getConstantIntValue(nest.getUpperBound()[d]);
  std::optional<int64_t> step = getConstantIntValue(nest.getStep()[d]);
  if (!lb || *lb != 0 || !ub || !step || *step != 1)
    return std::nullopt;

  llvm::DenseSet<Value> varying;
  SmallVector<std::pair<Value, MemRefType>> rows;
  int64_t widest = 0;
  for (Operation &op : nest.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return std::nullopt;
    auto access = [&](Value mem, ValueRange indices) -> std::optional<bool> {
      for (Value v : indices)
        if (varying.contains(v))
          return std::nullopt; // a gather
      if (!llvm::is_contained(indices, iv))
        return false;
      if (!alongRow(indices, iv))
        return std::nullopt;
      auto type = cast<MemRefType>(mem.getType());
      if (!isVectorElement(type.getElementType()))
        return std::nullopt;
      rows.push_back({mem, type});
      widest = std::max<int64_t>(
          widest, type.getElementType().getIntOrFloatBitWidth() / 8);
      return true;
    };
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      std::optional<bool> row = access(load.getMemRef(), load.getIndices());
      if (!row)
        return std::nullopt;
      if (*row)
        varying.insert(load.getResult());
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      // A store that does not move along the row would be made by every
      // element of a vector: not rewritten.
      std::optional<bool> row = access(store.getMemRef(), store.getIndices());
      if (!row || !*row)
        return std::nullopt;
      continue;
    }
    if (!isMemoryEffectFree(&op) || llvm::is_contained(op.getOperands(), iv))
      return std::nullopt;
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return varying.contains(v); }))
      continue; // the same for the whole vector: stays scalar
    if (!op.hasTrait<OpTrait::Elementwise>() ||
        !isa<arith::ArithDialect, math::MathDialect>(op.getDialect()))
      return std::nullopt;
    for (Value r : op.getResults()) {
      if (!r.getType().isIntOrFloat())
        return std::nullopt;
      varying.insert(r);
    }
  }
  if (rows.empty() || widest == 0 || vectorBytes / widest < 2)
    return std::nullopt;
  Plan plan;
  plan.width = vectorBytes / widest;
  if (*ub % plan.width != 0)
    return std::nullopt;
  for (auto [mem, type] : rows) {
    if (!rowsAligned(type, plan.width))
      return std::nullopt;
    plan.elementBytes[mem] = type.getElementType().getIntOrFloatBitWidth() / 8;
    if (!allocatedHere(mem))
      plan.unaligned.insert(mem);
  }
  return plan;
}

struct VectorizeElementwise
    : public mesh::impl::MeshGpuVectorizeElementwiseBase<VectorizeElementwise> {
  using Base::Base;

  /// `v` as a vector of `width` elements (a scalar the whole vector uses is
  /// broadcast).
  static Value asVector(OpBuilder &b, Location loc, Value v, int64_t width) {
    if (isa<VectorType>(v.getType()))
      return v;
    return vector::BroadcastOp::create(
        b, loc, VectorType::get({width}, v.getType()), v);
  }

  /// A copy of `nest` whose innermost dimension counts vectors of the
  /// plan's width (its row accesses vector loads and stores at the vector's
  /// first element), at `b`. The loop keeps step 1: parallel-loop tiling
  /// without min/max bounds guards a non-unit step wrongly (it multiplies
  /// the inner variable by the step a second time), which skipped vectors.
  static void buildVectorNest(OpBuilder &b, scf::ParallelOp nest,
                              const Plan &plan) {
    Location loc = nest.getLoc();
    unsigned d = nest.getNumLoops() - 1;
    Value iv = nest.getInductionVars()[d];
    int64_t rowLength = *getConstantIntValue(nest.getUpperBound()[d]);
    SmallVector<Value> upper(nest.getUpperBound());
    upper[d] = arith::ConstantIndexOp::create(b, loc, rowLength / plan.width);
    auto vec = scf::ParallelOp::create(b, loc, nest.getLowerBound(), upper,
                                       nest.getStep());
    OpBuilder body = OpBuilder::atBlockBegin(vec.getBody());
    IRMapping map;
    map.map(nest.getInductionVars(), vec.getInductionVars());
    Value width = arith::ConstantIndexOp::create(body, loc, plan.width);
    map.map(iv,
            arith::MulIOp::create(body, loc, vec.getInductionVars()[d], width));
    llvm::DenseSet<Value> varying;
    auto alignment = [&](Value mem) {
      return llvm::MaybeAlign(plan.width * plan.elementBytes.lookup(mem));
    };
    for (Operation &op : nest.getBody()->without_terminator()) {
      if (auto load = dyn_cast<memref::LoadOp>(op);
          load && llvm::is_contained(load.getIndices(), iv)) {
        auto type = VectorType::get({plan.width}, load.getType());
        Value v = vector::LoadOp::create(
            body, load.getLoc(), type, map.lookupOrDefault(load.getMemRef()),
            llvm::map_to_vector(
                load.getIndices(),
                [&](Value i) { return map.lookupOrDefault(i); }),
            /*nontemporal=*/false, alignment(load.getMemRef()));
        map.map(load.getResult(), v);
        varying.insert(load.getResult());
        continue;
      }
      if (auto store = dyn_cast<memref::StoreOp>(op)) {
        Value value =
            asVector(body, store.getLoc(),
                     map.lookupOrDefault(store.getValueToStore()), plan.width);
        vector::StoreOp::create(
            body, store.getLoc(), value, map.lookupOrDefault(store.getMemRef()),
            llvm::map_to_vector(
                store.getIndices(),
                [&](Value i) { return map.lookupOrDefault(i); }),
            /*nontemporal=*/false, alignment(store.getMemRef()));
        continue;
      }
      if (llvm::none_of(op.getOperands(),
                        [&](Value v) { return varying.contains(v); })) {
        body.clone(op, map);
        continue;
      }
      // The shared operands broadcast first, then the op on vectors.
      SmallVector<Value> operands =
          llvm::map_to_vector(op.getOperands(), [&](Value v) {
            return asVector(body, op.getLoc(), map.lookupOrDefault(v),
                            plan.width);
          });
      Operation *c = body.clone(op, map);
      c->setOperands(operands);
      for (auto [old, result] : llvm::zip(op.getResults(), c->getResults())) {
        result.setType(VectorType::get({plan.width}, result.getType()));
        varying.insert(old);
      }
    }
  }

  /// All of `plan`'s untested buffers start on a multiple of their vector's
  /// bytes (a test on the host, before the launch).
  static Value alignedAtRunTime(OpBuilder &b, Location loc, const Plan &plan) {
    Value all;
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    for (Value mem : plan.unaligned) {
      Value address =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, mem);
      Value bytes = arith::ConstantIndexOp::create(
          b, loc, plan.width * plan.elementBytes.lookup(mem));
      Value rest = arith::RemUIOp::create(b, loc, address, bytes);
      Value ok =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rest, zero);
      all = all ? Value(arith::AndIOp::create(b, loc, all, ok)) : ok;
    }
    return all;
  }

  void rewrite(scf::ParallelOp nest, const Plan &plan) {
    OpBuilder b(nest);
    Location loc = nest.getLoc();
    if (plan.unaligned.empty()) {
      buildVectorNest(b, nest, plan);
      nest.erase();
      return;
    }
    // The view ops and their sizes are defined before the nest: the test
    // and both nests go where the nest was.
    Value aligned = alignedAtRunTime(b, loc, plan);
    auto ifOp = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/true);
    OpBuilder thenB = ifOp.getThenBodyBuilder();
    buildVectorNest(thenB, nest, plan);
    nest->moveBefore(ifOp.elseBlock()->getTerminator());
  }

  void runOnOperation() override {
    if (vectorBytes != 1 && vectorBytes != 4 && vectorBytes != 8 &&
        vectorBytes != 16) {
      getOperation().emitError()
          << "mesh-gpu-vectorize-elementwise: vector-bytes must be 16, 8 or "
             "4 (bytes per access; a GPU's widest is 16), or 1 (scalar "
             "accesses), not "
          << int64_t(vectorBytes);
      return signalPassFailure();
    }
    if (vectorBytes == 1)
      return;
    SmallVector<std::pair<scf::ParallelOp, Plan>> work;
    getOperation().walk([&](scf::ParallelOp nest) {
      if (nest->getParentOfType<scf::ParallelOp>() ||
          nest->getParentOfType<gpu::LaunchOp>())
        return;
      if (std::optional<Plan> plan = planNest(nest, vectorBytes))
        work.push_back({nest, std::move(*plan)});
    });
    for (auto &[nest, plan] : work)
      rewrite(nest, plan);
  }
};

} // namespace

//===- Reductions.cpp - reductions the device passes recognise ------------===//
//
// Matching of accumulating loops and the block-wide combination shared by
// mesh-gpu-row-reductions and mesh-gpu-full-reductions.
//
//===----------------------------------------------------------------------===//

#include "Reductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mesh;

std::optional<gpu::AllReduceOperation>
mlir::mesh::reductionKind(Operation *op) {
  using K = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<K>>(op)
      .Case([](arith::AddFOp) { return K::ADD; })
      .Case([](arith::AddIOp) { return K::ADD; })
      .Case([](arith::MulFOp) { return K::MUL; })
      .Case([](arith::MulIOp) { return K::MUL; })
      .Case([](arith::MaximumFOp) { return K::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return K::MINIMUMF; })
      .Case([](arith::MaxNumFOp) { return K::MAXNUMF; })
      .Case([](arith::MinNumFOp) { return K::MINNUMF; })
      .Case([](arith::MaxSIOp) { return K::MAXSI; })
      .Case([](arith::MinSIOp) { return K::MINSI; })
      .Case([](arith::MaxUIOp) { return K::MAXUI; })
      .Case([](arith::MinUIOp) { return K::MINUI; })
      .Case([](arith::AndIOp) { return K::AND; })
      .Case([](arith::OrIOp) { return K::OR; })
      .Case([](arith::XOrIOp) { return K::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}

TypedAttr mlir::mesh::reductionIdentity(gpu::AllReduceOperation kind,
                                        Type type) {
  using K = gpu::AllReduceOperation;
  if (auto f = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = f.getFloatSemantics();
    switch (kind) {
    case K::ADD:
      return FloatAttr::get(f, llvm::APFloat::getZero(sem));
    case K::MUL:
      return FloatAttr::get(f, llvm::APFloat::getOne(sem));
    case K::MAXIMUMF:
    case K::MAXNUMF:
      return FloatAttr::get(f, llvm::APFloat::getInf(sem, /*Negative=*/true));
    case K::MINIMUMF:
    case K::MINNUMF:
      return FloatAttr::get(f, llvm::APFloat::getInf(sem, /*Negative=*/false));
    default:
      return {};
    }
  }
  auto i = dyn_cast<IntegerType>(type);
  if (!i)
    return {};
  unsigned w = i.getWidth();
  switch (kind) {
  case K::ADD:
  case K::OR:
  case K::XOR:
  case K::MAXUI:
    return IntegerAttr::get(i, llvm::APInt::getZero(w));
  case K::MUL:
    return IntegerAttr::get(i, llvm::APInt(w, 1));
  case K::AND:
  case K::MINUI:
    return IntegerAttr::get(i, llvm::APInt::getAllOnes(w));
  case K::MAXSI:
    return IntegerAttr::get(i, llvm::APInt::getSignedMinValue(w));
  case K::MINSI:
    return IntegerAttr::get(i, llvm::APInt::getSignedMaxValue(w));
  default:
    return {};
  }
}

bool mlir::mesh::definedOutside(Value v, Operation *op) {
  return !op->isAncestor(v.getParentBlock()->getParentOp()) &&
         v.getParentRegion() != &op->getRegion(0);
}

std::optional<Reduction>
mlir::mesh::matchReduction(scf::ForOp loop, Operation *scope, bool alongRows) {
  if (loop.getNumRegionIterArgs() != 0)
    return std::nullopt;
  Value iv = loop.getInductionVar();
  memref::StoreOp store;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return std::nullopt;
    if (auto s = dyn_cast<memref::StoreOp>(op)) {
      if (store)
        return std::nullopt;
      store = s;
      continue;
    }
    if (auto l = dyn_cast<memref::LoadOp>(op)) {
      auto idx = l.getIndices();
      for (auto [n, v] : llvm::enumerate(idx))
        if (alongRows && v == iv && n + 1 != idx.size())
          return std::nullopt;
      continue;
    }
    if (!isMemoryEffectFree(&op))
      return std::nullopt;
  }
  if (!store)
    return std::nullopt;
  for (Value v : store.getIndices())
    if (!definedOutside(v, scope))
      return std::nullopt;
  Operation *combiner = store.getValueToStore().getDefiningOp();
  if (!combiner || combiner->getBlock() != loop.getBody() ||
      combiner->getNumOperands() != 2 || combiner->getNumResults() != 1)
    return std::nullopt;
  std::optional<gpu::AllReduceOperation> kind = reductionKind(combiner);
  Type type = combiner->getResult(0).getType();
  // gpu.all_reduce becomes warp shuffles of 32-bit values (nvvm.shfl.sync;
  // a 64-bit value is shuffled as two halves): narrower values are widened
  // to 32 bits around it (reduceRow), wider ones keep a thread per row.
  bool shuffled =
      type.isF16() || type.isBF16() || type.isF32() || type.isF64() ||
      (type.isSignlessInteger() && type.getIntOrFloatBitWidth() <= 64);
  if (!kind || !shuffled || !reductionIdentity(*kind, type))
    return std::nullopt;
  for (unsigned k = 0; k < 2; ++k) {
    auto acc = combiner->getOperand(k).getDefiningOp<memref::LoadOp>();
    if (!acc || acc.getMemRef() != store.getMemRef() ||
        acc.getIndices() != store.getIndices() ||
        acc->getBlock() != loop.getBody() || !acc->hasOneUse())
      continue;
    Value element = combiner->getOperand(1 - k);
    // The element must not be computed from the accumulator.
    SmallVector<Value> work = {element};
    bool fromAcc = false;
    llvm::SmallPtrSet<Operation *, 16> seen;
    while (!work.empty() && !fromAcc) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != loop.getBody() || !seen.insert(def).second)
        continue;
      fromAcc = def == acc;
      llvm::append_range(work, def->getOperands());
    }
    if (fromAcc)
      continue;
    // No other load of the accumulator's buffer in the loop.
    for (Operation &op : loop.getBody()->without_terminator())
      if (auto l = dyn_cast<memref::LoadOp>(op);
          l && l != acc && l.getMemRef() == store.getMemRef())
        return std::nullopt;
    return Reduction{loop, acc, combiner, store, element, *kind};
  }
  return std::nullopt;
}

/// `value` combined across the block by `kind`. Values narrower than 32
/// bits (f16, bf16, i8, i16, i1), which nvvm.shfl.sync does not take, are
/// combined as 32-bit values and brought back: exactly for the integers
/// (the low bits of a wider sum or product are the narrow ones; signed
/// kinds sign-extend, the others zero-extend) and for a float's maximum or
/// minimum; a float sum or product of the block's partial values is
/// rounded to the narrow type once, at the end.
Value mlir::mesh::allReduceInBlock(OpBuilder &b, Location loc, Value value,
                                   gpu::AllReduceOperation kind) {
  using K = gpu::AllReduceOperation;
  auto attr = gpu::AllReduceOperationAttr::get(b.getContext(), kind);
  Type type = value.getType();
  if (type.getIntOrFloatBitWidth() >= 32)
    return gpu::AllReduceOp::create(b, loc, value, attr, /*uniform=*/true);
  if (isa<FloatType>(type)) {
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
    Value total =
        gpu::AllReduceOp::create(b, loc, wide, attr, /*uniform=*/true);
    return arith::TruncFOp::create(b, loc, type, total);
  }
  Type i32 = b.getI32Type();
  bool isSigned = kind == K::MAXSI || kind == K::MINSI;
  Value wide = isSigned ? Value(arith::ExtSIOp::create(b, loc, i32, value))
                        : Value(arith::ExtUIOp::create(b, loc, i32, value));
  Value total = gpu::AllReduceOp::create(b, loc, wide, attr, /*uniform=*/true);
  return arith::TruncIOp::create(b, loc, type, total);
}

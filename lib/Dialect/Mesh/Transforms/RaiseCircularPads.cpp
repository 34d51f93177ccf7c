//===- RaiseCircularPads.cpp - circular pads written as slices and concat -===//
//
// PyTorch's pad(mode="circular") reaches MLIR (torch-mlir's decomposition)
// as, for each padded dim, a tensor.concat of the source's last `low`
// elements, the source, and its first `high` elements, each end an
// extract_slice. Propagation would give the concat its rule (the dim it
// concatenates stays whole) and gather; as one mesh.circular_pad, a dim that
// windows read keeps its factor and its halos wrap around the devices.
// Raised pads of a pad (one dim, then another, as a 2-D circular pad is
// written) merge into one op when the inner one has no other user.
//
//===----------------------------------------------------------------------===//

#include "ShardingSupport.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::mesh;

/// `v` when it is `extract_slice(source)` taking `size` elements at `offset`
/// of dim `dim` and every other dim whole, unit strides, no rank reduction.
static bool isEndOf(Value v, Value source, unsigned dim, int64_t offset,
                    int64_t size) {
  auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getSource() != source ||
      slice.getSourceType().getRank() != slice.getResultType().getRank())
    return false;
  RankedTensorType type = slice.getSourceType();
  for (unsigned d = 0; d < type.getRank(); ++d) {
    bool here = d == dim;
    if (slice.isDynamicOffset(d) || slice.isDynamicSize(d) ||
        slice.isDynamicStride(d) || slice.getStaticStride(d) != 1 ||
        slice.getStaticOffset(d) != (here ? offset : 0) ||
        slice.getStaticSize(d) != (here ? size : type.getDimSize(d)))
      return false;
  }
  return true;
}

/// The circular pad `concat` spells, as (source, low, high) along its dim,
/// if it spells one.
static std::optional<std::tuple<Value, int64_t, int64_t>>
matchCircularPad(tensor::ConcatOp concat) {
  unsigned dim = concat.getDim();
  OperandRange parts = concat.getInputs();
  if (parts.size() < 2 || parts.size() > 3)
    return std::nullopt;
  auto sizeOf = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getDimSize(dim);
  };
  // The source is the middle part, or, with two parts, the one the other
  // is a slice of.
  for (unsigned s = 0; s < parts.size(); ++s) {
    Value source = parts[s];
    int64_t n = sizeOf(source);
    if (ShapedType::isDynamic(n) || (parts.size() == 3 && s != 1))
      continue;
    int64_t low = s == 1 ? sizeOf(parts[0]) : 0;
    int64_t high = s + 1 < parts.size() ? sizeOf(parts[s + 1]) : 0;
    if (ShapedType::isDynamic(low) || ShapedType::isDynamic(high))
      continue;
    if ((low && !isEndOf(parts[0], source, dim, n - low, low)) ||
        (high && !isEndOf(parts[s + 1], source, dim, 0, high)))
      continue;
    return std::make_tuple(source, low, high);
  }
  return std::nullopt;
}

void mlir::mesh::raiseCircularPads(ArrayRef<Operation *> concatOps) {
  for (Operation *op : concatOps) {
    auto concat = cast<tensor::ConcatOp>(op);
    auto match = matchCircularPad(concat);
    if (!match)
      continue;
    auto [source, lo, hi] = *match;
    unsigned rank = concat.getResultType().getRank();
    SmallVector<int64_t> low(rank, 0), high(rank, 0);
    low[concat.getDim()] = lo;
    high[concat.getDim()] = hi;
    // A pad of a pad on other dims is one pad of the inner one's source
    // (the wrap is separable); the inner pad stays only for other users.
    CircularPadOp inner = source.getDefiningOp<CircularPadOp>();
    if (inner && inner.getLow()[concat.getDim()] == 0 &&
        inner.getHigh()[concat.getDim()] == 0) {
      for (unsigned d = 0; d < rank; ++d) {
        low[d] += inner.getLow()[d];
        high[d] += inner.getHigh()[d];
      }
      source = inner.getSource();
    } else {
      inner = {};
    }
    OpBuilder b(concat);
    auto pad = CircularPadOp::create(b, concat.getLoc(), concat.getResultType(),
                                     source, low, high);
    pad->setDiscardableAttrs(concat->getDiscardableAttrDictionary());
    SmallVector<Value> parts(concat.getInputs());
    concat.replaceAllUsesWith(pad.getResult());
    concat->erase();
    for (Value part : parts)
      if (Operation *def = part.getDefiningOp();
          def && isa<tensor::ExtractSliceOp>(def) && def->use_empty())
        def->erase();
    if (inner && inner->use_empty())
      inner->erase();
  }
}

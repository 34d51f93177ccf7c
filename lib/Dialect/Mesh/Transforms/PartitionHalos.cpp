//===- PartitionHalos.cpp - halo exchanges of the partitioner -------------===//
//
// Values whose blocks carry halos (a stencil's padded input, a window's
// reach): resharding them, and filling a result's halo from the
// neighbouring devices with point-to-point exchanges.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::mesh;
using namespace mlir::mesh::partition_detail;

namespace {
/// The offsets, sizes and strides of the slab of a tensor shaped as `of`
/// that is [offset, offset + size) along dim `dim` and whole along the
/// others (a dynamic one, split over a `?` axis, sized by a tensor.dim).
struct Slab {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  Slab(OpBuilder &b, Location loc, Value of, unsigned dim, OpFoldResult offset,
       int64_t size)
      : offsets(cast<RankedTensorType>(of.getType()).getRank(),
                b.getIndexAttr(0)),
        sizes(tensor::getMixedSizes(b, loc, of)),
        strides(offsets.size(), b.getIndexAttr(1)) {
    sizes[dim] = b.getIndexAttr(size);
    offsets[dim] = offset;
  }
  Value extract(OpBuilder &b, Location loc, Value from) const {
    return tensor::ExtractSliceOp::create(b, loc, from, offsets, sizes,
                                          strides);
  }
  Value insert(OpBuilder &b, Location loc, Value part, Value into) const {
    return tensor::InsertSliceOp::create(b, loc, part, into, offsets, sizes,
                                         strides);
  }
};
} // namespace

/// The number of devices along dim `dim` of `local` (a per-device value
/// laid out as `s`, whose dim has a halo), or an error at `where` when it
/// or the dim's size is not static: halos move in blocks of known size.
static FailureOr<int64_t> haloGroupSize(MeshOp mesh, ShardingAttr s,
                                        unsigned dim, Value local,
                                        Operation *where, const Twine &what) {
  int64_t n = mesh.getGroupSize(s.getDimAxes(dim).getNames());
  if (ShapedType::isDynamic(n) ||
      cast<RankedTensorType>(local.getType()).isDynamicDim(dim))
    return where->emitError() << "cannot move " << what << " laid out as " << s
                              << ": dim " << dim << " has a halo and "
                              << (ShapedType::isDynamic(n)
                                      ? "is split over axes of unknown size"
                                      : "a dynamic size"),
           failure();
  return n;
}

/// `v`, split in plain blocks as `from`, moved to `target`, the same split
/// with halos on some dims (a window's reach past blocks that do not line up
/// with the window's: a valid convolution's 16 input rows over 2 devices in
/// blocks of 8, read by 14 output rows in blocks of 7, each device needing
/// rows [7k, 7k + 9)). Device k along such a dim holds [kB, kB + B) and needs
/// [kb, kb + W), W = b + lo + hi, where n (B - b) = lo + hi: its window
/// starts k (B - b) before its block and ends (n - 1 - k) (B - b) after it, so
/// it needs at most C = (n - 1)(B - b) rows of each neighbour. Each device
/// sends the last C rows of its block to the next device and the first C to
/// the previous (two permutes), puts them around its block and slices its
/// window at C - k (B - b). Null where the layouts differ otherwise, a size
/// is not static, or a window reaches past a neighbour (C > B).
Value FunctionPartitioner::shiftToHalos(OpBuilder &b, Location loc, MeshOp mesh,
                                        Value v, ShardingAttr from,
                                        ShardingAttr target) {
  if (!from || !target || from.getRank() != target.getRank() ||
      from.getPartialAxes() != target.getPartialAxes() ||
      from.getPartialKind() != target.getPartialKind())
    return {};
  auto type = cast<RankedTensorType>(v.getType());
  // The dims to shift: plain in `from`, with a halo in `target`; every
  // other dim is laid out alike in both (its halo, if any, kept: the slabs
  // moved are whole along it, so corners come along).
  auto shifts = [&](unsigned d) {
    return from.getDimHalo(d) == std::pair<int64_t, int64_t>{0, 0} &&
           target.getDimHalo(d) != std::pair<int64_t, int64_t>{0, 0};
  };
  bool any = false;
  for (unsigned d = 0; d < target.getRank(); ++d) {
    if (from.getDimAxes(d) != target.getDimAxes(d))
      return {};
    if (!shifts(d)) {
      // (Halos that differ only in how lo + hi is split hold the same
      // elements.)
      auto [flo, fhi] = from.getDimHalo(d);
      auto [tlo, thi] = target.getDimHalo(d);
      if (flo + fhi != tlo + thi)
        return {};
      continue;
    }
    any = true;
    auto [lo, hi] = target.getDimHalo(d);
    int64_t n = mesh.getGroupSize(target.getDimAxes(d).getNames());
    if (ShapedType::isDynamic(n) || n < 2 || type.isDynamicDim(d))
      return {};
    int64_t block = type.getDimSize(d), whole = block * n;
    if ((whole - lo - hi) % n != 0)
      return {};
    int64_t shift = block - (whole - lo - hi) / n;
    if (shift <= 0 || (n - 1) * shift > block)
      return {};
  }
  if (!any)
    return {};
  FlatSymbolRefAttr ref = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  Value cur = v;
  for (unsigned d = 0; d < target.getRank(); ++d) {
    if (!shifts(d))
      continue;
    auto [lo, hi] = target.getDimHalo(d);
    SmallVector<StringRef> axisNames = target.getDimAxes(d).getNames();
    int64_t n = mesh.getGroupSize(axisNames);
    int64_t block = type.getDimSize(d);
    int64_t shift = block - (block * n - lo - hi) / n;
    int64_t reach = (n - 1) * shift;
    ArrayAttr axes = b.getStrArrayAttr(axisNames);
    auto neighbours = [&](int64_t from, int64_t offset) {
      Value slab = Slab(b, loc, cur, d, b.getIndexAttr(from), reach)
                       .extract(b, loc, cur);
      return PermuteOp::create(b, loc, slab.getType(), slab, ref, axes,
                               b.getI64IntegerAttr(offset), UnitAttr())
          .getResult();
    };
    // The previous device's last rows, this block, the next one's first.
    Value before = neighbours(block - reach, 1);
    Value after = neighbours(0, -1);
    Value around =
        tensor::ConcatOp::create(b, loc, d, ValueRange{before, cur, after});
    Value index = groupIndex(b, loc, mesh, axisNames);
    Value start = arith::SubIOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, reach),
        arith::MulIOp::create(b, loc, index,
                              arith::ConstantIndexOp::create(b, loc, shift)));
    int64_t window = block - shift + lo + hi;
    cur = Slab(b, loc, around, d, start, window).extract(b, loc, around);
  }
  return cur;
}

/// `v` resharded from `from` to `target` when either has halos: the halos of
/// `from` are dropped by gathering their dims (each device's block, then the
/// last device's trailing halo), the plan takes the rest to `target` with
/// its halo dims whole, and each device then slices its block and halo out
/// of those dims. Moving a halo to a neighbour is what an op with a halo
/// result does (fillHalos); this is the general path, for layouts that
/// differ in more than that.
FailureOr<Value> FunctionPartitioner::reshardHalos(Value v, ShardingAttr from,
                                                   ShardingAttr target,
                                                   MeshOp mesh,
                                                   Operation *where,
                                                   const Twine &what) {
  OpBuilder b(where);
  Location loc = where->getLoc();
  if (Value shifted = shiftToHalos(b, loc, mesh, v, from, target))
    return shifted;
  FlatSymbolRefAttr ref = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  AxisListAttr none = AxisListAttr::get(b.getContext(), ArrayRef<StringAttr>());
  // `s` with its halo dims whole and no halos.
  auto wholeHaloDims = [&](ShardingAttr s) {
    SmallVector<AxisListAttr> dims(s.getDims());
    for (unsigned d = 0; d < s.getRank(); ++d)
      if (s.getDimHalo(d) != std::pair<int64_t, int64_t>(0, 0))
        dims[d] = none;
    return ShardingAttr::get(b.getContext(), s.getMesh(), dims,
                             s.getPartialAxes(), s.getPartialKind(), {});
  };
  Value cur = v;
  if (from && from.hasHalo()) {
    for (unsigned d = 0; d < from.getRank(); ++d) {
      auto [lo, hi] = from.getDimHalo(d);
      if (!lo && !hi)
        continue;
      FailureOr<int64_t> n = haloGroupSize(mesh, from, d, cur, where, what);
      if (failed(n))
        return failure();
      auto type = cast<RankedTensorType>(cur.getType());
      int64_t block = type.getDimSize(d) - lo - hi;
      ArrayAttr axes = b.getStrArrayAttr(from.getDimAxes(d).getNames());
      SmallVector<int64_t> shape(type.getShape());
      shape[d] = block * *n;
      Value blocks =
          Slab(b, loc, cur, d, b.getIndexAttr(0), block).extract(b, loc, cur);
      Value whole =
          AllGatherOp::create(b, loc, type.clone(shape), blocks, ref, axes,
                              b.getI64IntegerAttr(d), IntegerAttr());
      Value tail = Slab(b, loc, cur, d, b.getIndexAttr(block), lo + hi)
                       .extract(b, loc, cur);
      tail = BroadcastOp::create(b, loc, tail.getType(), tail, ref, axes,
                                 b.getI64IntegerAttr(*n - 1), UnitAttr());
      cur = tensor::ConcatOp::create(b, loc, d, ValueRange{whole, tail});
    }
  }
  ShardingAttr curS = from && from.hasHalo() ? wholeHaloDims(from) : from;
  ShardingAttr mid =
      target && target.hasHalo() ? wholeHaloDims(target) : target;
  unsigned rank = cast<RankedTensorType>(cur.getType()).getRank();
  FailureOr<ArrayRef<ReshardStep>> plan =
      getPlan(mesh, curS, mid, rank, where, what);
  if (failed(plan))
    return failure();
  cur = emitResharding(b, loc, mesh, cur, *plan);
  if (!target || !target.hasHalo())
    return cur;
  // Each device's block and halo, out of the dims now whole.
  for (unsigned d = 0; d < target.getRank(); ++d) {
    auto [lo, hi] = target.getDimHalo(d);
    if (!lo && !hi)
      continue;
    FailureOr<int64_t> n = haloGroupSize(mesh, target, d, cur, where, what);
    if (failed(n))
      return failure();
    auto type = cast<RankedTensorType>(cur.getType());
    int64_t block = (type.getDimSize(d) - lo - hi) / *n;
    Value index = groupIndex(b, loc, mesh, target.getDimAxes(d).getNames());
    Value offset = arith::MulIOp::create(
        b, loc, index, arith::ConstantIndexOp::create(b, loc, block));
    cur = Slab(b, loc, cur, d, offset, block + lo + hi).extract(b, loc, cur);
  }
  return cur;
}

/// Fills the halos of `local`, the per-device result of `op` laid out as
/// `s` (whose halos its rule gives): `op` made each halo as
/// at the ends of the tensor; each device but the first along a dim's axes
/// takes its low halo from the end of the previous device's block, each but
/// the last its high halo from the start of the next one's. A periodic pad
/// (mesh.circular_pad) wraps: the first and last devices are neighbours too,
/// and every device takes both halos. Dims go one after the other, each
/// moving whole slabs of the others (halos included), so corners arrive in
/// two steps.
FailureOr<Value> FunctionPartitioner::fillHalos(OpBuilder &b, Operation *op,
                                                Value local, ShardingAttr s,
                                                MeshOp mesh) {
  Location loc = op->getLoc();
  FlatSymbolRefAttr ref = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  auto type = cast<RankedTensorType>(local.getType());
  Value made = local; // Its sizes are the slabs' (halos do not change them).
  bool periodic = isa<CircularPadOp>(op);
  // A pad's constant padding value, if it has one.
  Attribute padding;
  if (auto pad = dyn_cast<tensor::PadOp>(op))
    if (Value value = pad.getConstantPaddingValue())
      matchPattern(value, m_Constant(&padding));
  for (unsigned d = 0; d < s.getRank(); ++d) {
    auto [lo, hi] = s.getDimHalo(d);
    if (!lo && !hi)
      continue;
    FailureOr<int64_t> n =
        haloGroupSize(mesh, s, d, local, op,
                      "the result of '" + op->getName().getStringRef() + "'");
    if (failed(n))
      return failure();
    SmallVector<StringRef> axisNames = s.getDimAxes(d).getNames();
    int64_t block = type.getDimSize(d) - lo - hi;
    ArrayAttr axes = b.getStrArrayAttr(axisNames);
    Value index = periodic ? Value() : groupIndex(b, loc, mesh, axisNames);
    // The halo at [at, at + size) comes from the neighbour `offset` away,
    // out of its block at [from, from + size); unless periodic, the device
    // at `edge` keeps what the op made.
    auto exchange = [&](int64_t at, int64_t from, int64_t size, int64_t offset,
                        int64_t edge) {
      Value slab = Slab(b, loc, made, d, b.getIndexAttr(from), size)
                       .extract(b, loc, local);
      Value got = PermuteOp::create(b, loc, slab.getType(), slab, ref, axes,
                                    b.getI64IntegerAttr(offset),
                                    periodic ? b.getUnitAttr() : UnitAttr());
      Slab dst(b, loc, made, d, b.getIndexAttr(at), size);
      if (periodic) {
        local = dst.insert(b, loc, got, local);
        return;
      }
      // At the edge the halo is what the op made there: a pad's constant
      // padding is that constant, taken as such rather than read back from
      // the border (which then need not be filled before the exchange
      // overwrites it; mesh-pad-in-place).
      Value own;
      auto slabType = cast<RankedTensorType>(slab.getType());
      if (padding && slabType.hasStaticShape())
        own = arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(slabType, padding));
      else
        own = dst.extract(b, loc, local);
      Value atEdge =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, index,
                                arith::ConstantIndexOp::create(b, loc, edge));
      Value halo = arith::SelectOp::create(b, loc, atEdge, own, got);
      local = dst.insert(b, loc, halo, local);
    };
    // The low halo: the last `lo` of the previous device's block.
    if (lo)
      exchange(0, block, lo, 1, 0);
    // The high halo: the first `hi` of the next device's block.
    if (hi)
      exchange(lo + block, lo, hi, -1, *n - 1);
  }
  return local;
}

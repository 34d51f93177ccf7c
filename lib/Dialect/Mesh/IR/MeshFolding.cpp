//===- MeshFolding.cpp - folders of the mesh ops --------------------------===//
//
// A collective whose group has one member (no axes, or only axes of size 1)
// is the identity on tensors; all_slice of an all_gather over the same axes
// and dim gives back the gathered operand; axis_size of a static axis is a
// constant and axis_index of a size-1 axis is 0.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

using namespace mlir;
using namespace mlir::mesh;

/// The input of `op` when its group has exactly one member and the op works
/// on tensors (a memref collective allocates its result, so it is no
/// identity on the buffer).
static OpFoldResult foldSingletonGroup(CollectiveOpInterface op) {
  Operation *raw = op.getOperation();
  Value input = raw->getOperand(0);
  if (!isa<TensorType>(input.getType()) ||
      input.getType() != raw->getResult(0).getType())
    return {};
  std::optional<int64_t> size = getStaticGroupSize(op);
  if (size && *size == 1)
    return input;
  return {};
}

OpFoldResult AllReduceOp::fold(FoldAdaptor) {
  return foldSingletonGroup(*this);
}
// With `valid`, the result's padding is zeros, which the input's need not
// be: no identity.
OpFoldResult AllGatherOp::fold(FoldAdaptor) {
  if (getValid())
    return {};
  return foldSingletonGroup(*this);
}
OpFoldResult ReduceScatterOp::fold(FoldAdaptor) {
  if (getValid())
    return {};
  return foldSingletonGroup(*this);
}
OpFoldResult AllToAllOp::fold(FoldAdaptor) {
  if (getSplitValid() || getConcatValid())
    return {};
  return foldSingletonGroup(*this);
}
OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  return foldSingletonGroup(*this);
}

OpFoldResult PermuteOp::fold(FoldAdaptor) {
  // A permute in a group of one sends to itself only with `rotate`; without
  // it nothing arrives and the result is zeros, which is no identity.
  if (!getRotate())
    return {};
  return foldSingletonGroup(*this);
}

OpFoldResult AllSliceOp::fold(FoldAdaptor) {
  if (OpFoldResult r = foldSingletonGroup(*this))
    return r;
  // all_slice(all_gather(x)) on the same mesh, axes and dim is x: member i
  // gathers every x_j and keeps block i, its own. Tensors only: a memref
  // collective allocates its result, which must not alias x.
  if (!isa<TensorType>(getType()))
    return {};
  auto gather = getInput().getDefiningOp<AllGatherOp>();
  if (!gather || gather.getValid() || gather.getMeshAttr() != getMeshAttr() ||
      gather.getAxes() != getAxes() || gather.getGatherDim() != getSliceDim() ||
      gather.getInput().getType() != getType())
    return {};
  return gather.getInput();
}

OpFoldResult ShardOp::fold(FoldAdaptor) {
  // Constraining a value twice to the same sharding is constraining it once.
  if (auto inner = getSrc().getDefiningOp<ShardOp>())
    if (inner.getSharding() == getSharding())
      return getSrc();
  return {};
}

OpFoldResult AxisSizeOp::fold(FoldAdaptor) {
  MeshOp mesh = lookupMesh(*this, getMeshAttr());
  if (!mesh || !mesh.getAxisIndex(getAxis()))
    return {};
  int64_t size = mesh.getAxisSize(getAxis());
  if (ShapedType::isDynamic(size))
    return {};
  return IntegerAttr::get(IndexType::get(getContext()), size);
}

OpFoldResult AxisIndexOp::fold(FoldAdaptor) {
  MeshOp mesh = lookupMesh(*this, getMeshAttr());
  if (!mesh || !mesh.getAxisIndex(getAxis()) ||
      mesh.getAxisSize(getAxis()) != 1)
    return {};
  return IntegerAttr::get(IndexType::get(getContext()), 0);
}

OpFoldResult IsMemberOp::fold(FoldAdaptor) {
  // Every process is a device of a mesh over the whole world.
  MeshOp mesh = lookupMesh(*this, getMeshAttr());
  if (!mesh || mesh.hasDevices())
    return {};
  return BoolAttr::get(getContext(), true);
}

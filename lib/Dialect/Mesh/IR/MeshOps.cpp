//===- MeshOps.cpp - verifiers and helpers of the mesh ops ----------------===//
//
// Custom assembly of mesh.mesh, the verifiers of every op (local checks in
// verify(), checks that need the mesh in verifySymbolUses()), and memory
// effects of the collectives. Folders live in MeshFolding.cpp. Constraint
// numbers refer to docs/MeshSpec.md.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::mesh;

#include "mesh/Dialect/Mesh/IR/MeshEnums.cpp.inc"
#include "mesh/Dialect/Mesh/IR/MeshInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The mesh named `ref` among the ops of the symbol table nearest to `from`,
/// found without a symbol table cache: only mesh ops are compared, so the
/// verifiers of thousands of ops do not read every function's name.
static MeshOp findMeshInNearestTable(Operation *from, FlatSymbolRefAttr ref) {
  Operation *table = SymbolTable::getNearestSymbolTable(from);
  if (!table || table->getNumRegions() != 1 || table->getRegion(0).empty())
    return {};
  StringAttr name = ref.getAttr();
  for (Operation &op : table->getRegion(0).front())
    if (auto mesh = dyn_cast<MeshOp>(op))
      if (mesh.getSymNameAttr() == name)
        return mesh;
  return {};
}

MeshOp mlir::mesh::lookupMesh(Operation *from, FlatSymbolRefAttr meshRef,
                              SymbolTableCollection *symbolTables) {
  if (!meshRef)
    return {};
  if (!symbolTables)
    if (MeshOp mesh = findMeshInNearestTable(from, meshRef))
      return mesh;
  Operation *found = symbolTables
                         ? symbolTables->lookupNearestSymbolFrom(from, meshRef)
                         : SymbolTable::lookupNearestSymbolFrom(from, meshRef);
  return dyn_cast_or_null<MeshOp>(found);
}

FailureOr<MeshOp>
mlir::mesh::getMeshOrEmitError(Operation *op, FlatSymbolRefAttr meshRef,
                               SymbolTableCollection *symbolTables) {
  if (!symbolTables)
    if (MeshOp mesh = findMeshInNearestTable(op, meshRef))
      return mesh;
  Operation *found = symbolTables
                         ? symbolTables->lookupNearestSymbolFrom(op, meshRef)
                         : SymbolTable::lookupNearestSymbolFrom(op, meshRef);
  if (!found)
    return op->emitError() << "'" << op->getName() << "' refers to mesh "
                           << meshRef << ", which is not defined (C0)";
  auto mesh = dyn_cast<MeshOp>(found);
  if (!mesh)
    return op->emitError() << "'" << op->getName() << "' refers to " << meshRef
                           << ", which is a '" << found->getName()
                           << "', not a 'mesh.mesh' (C0)";
  return mesh;
}

bool mlir::mesh::isReductionValidFor(ReductionKind kind, Type elementType) {
  bool isInt = elementType.isIntOrIndex();
  bool isFloat = isa<FloatType>(elementType);
  switch (kind) {
  case ReductionKind::And:
  case ReductionKind::Or:
  case ReductionKind::Xor:
    return isInt;
  default:
    return isInt || isFloat;
  }
}

std::optional<int64_t>
mlir::mesh::getStaticGroupSize(CollectiveOpInterface op) {
  MeshOp mesh = lookupMesh(op, op.getMeshAttr());
  if (!mesh)
    return std::nullopt;
  SmallVector<StringRef> axes = op.getAxisNames();
  for (StringRef axis : axes)
    if (!mesh.getAxisIndex(axis))
      return std::nullopt;
  int64_t size = mesh.getGroupSize(axes);
  if (ShapedType::isDynamic(size))
    return std::nullopt;
  return size;
}

//===----------------------------------------------------------------------===//
// mesh.mesh
//===----------------------------------------------------------------------===//

/// `["a" = 2, "b" = ?]`
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &names,
                                 DenseI64ArrayAttr &shape) {
  SmallVector<Attribute> nameAttrs;
  SmallVector<int64_t> sizes;
  if (parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
            std::string name;
            if (parser.parseString(&name) || parser.parseEqual())
              return failure();
            nameAttrs.push_back(parser.getBuilder().getStringAttr(name));
            if (succeeded(parser.parseOptionalQuestion())) {
              sizes.push_back(ShapedType::kDynamic);
              return success();
            }
            int64_t size;
            if (parser.parseInteger(size))
              return failure();
            sizes.push_back(size);
            return success();
          }))
    return failure();
  names = parser.getBuilder().getArrayAttr(nameAttrs);
  shape = parser.getBuilder().getDenseI64ArrayAttr(sizes);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, MeshOp, ArrayAttr names,
                          DenseI64ArrayAttr shape) {
  printer << '[';
  for (auto [i, name] : llvm::enumerate(names.getAsValueRange<StringAttr>())) {
    if (i)
      printer << ", ";
    printer.printString(name);
    printer << " = ";
    int64_t size =
        i < static_cast<size_t>(shape.size()) ? shape[i] : ShapedType::kDynamic;
    if (ShapedType::isDynamic(size))
      printer << '?';
    else
      printer << size;
  }
  printer << ']';
}

/// The sizes of `shape` as "2 x 4", for diagnostics.
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleave(
      shape, os,
      [&](int64_t size) {
        if (ShapedType::isDynamic(size))
          os << '?';
        else
          os << size;
      },
      " x ");
  return out;
}

/// M8-M10: `devices`, when given, lists one distinct world rank for each
/// device of a mesh whose sizes are all written.
static LogicalResult verifyMeshDevices(MeshOp mesh) {
  std::optional<ArrayRef<int64_t>> devices = mesh.getDevices();
  if (!devices)
    return success();
  ArrayRef<int64_t> shape = mesh.getShape();
  int64_t staticProduct = 1;
  for (int64_t size : shape)
    if (!ShapedType::isDynamic(size) && size > 0 &&
        llvm::MulOverflow(staticProduct, size, staticProduct))
      staticProduct = std::numeric_limits<int64_t>::max();
  for (auto [axis, size] :
       llvm::zip(mesh.getAxisNames().getAsValueRange<StringAttr>(), shape)) {
    if (!ShapedType::isDynamic(size))
      continue;
    InFlightDiagnostic diag =
        mesh.emitOpError()
        << "@" << mesh.getSymName() << " axis \"" << axis
        << "\" has size '?', but a mesh with 'devices' has every size "
           "written: its "
        << devices->size() << " devices fix it";
    if (staticProduct > 0 &&
        static_cast<int64_t>(devices->size()) % staticProduct == 0)
      diag << " to " << static_cast<int64_t>(devices->size()) / staticProduct;
    return diag << " (M9)";
  }
  if (static_cast<int64_t>(devices->size()) != staticProduct)
    return mesh.emitOpError()
           << "@" << mesh.getSymName() << " lists " << devices->size()
           << " devices, but its shape " << formatShape(shape) << " has "
           << staticProduct << "; 'devices' has one world rank per device (M8)";
  llvm::SmallDenseMap<int64_t, size_t> firstPosition;
  for (auto [position, rank] : llvm::enumerate(*devices)) {
    if (rank < 0 || rank > std::numeric_limits<int32_t>::max())
      return mesh.emitOpError()
             << "@" << mesh.getSymName() << " devices[" << position << "] is "
             << rank << "; world ranks are in [0, 2^31-1] (M10)";
    auto [it, inserted] = firstPosition.insert({rank, position});
    if (!inserted)
      return mesh.emitOpError()
             << "@" << mesh.getSymName() << " lists world rank " << rank
             << " twice in devices (positions " << it->second << " and "
             << position << "); a process is at most one device of a mesh "
             << "(M10)";
  }
  return success();
}

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  if (shape.size() != getAxisNames().size())
    return emitOpError() << "has " << getAxisNames().size()
                         << " axis names but " << shape.size() << " sizes (M7)";
  if (shape.empty())
    return emitOpError() << "@" << getSymName()
                         << " needs at least one axis (M1)";
  llvm::SmallSet<StringRef, 8> seen;
  int dynamicCount = 0;
  for (auto [axis, size] :
       llvm::zip(getAxisNames().getAsValueRange<StringAttr>(), shape)) {
    if (axis.empty())
      return emitOpError() << "@" << getSymName()
                           << " has an axis with an empty name (M3)";
    if (!seen.insert(axis).second)
      return emitOpError() << "@" << getSymName() << " has two axes named \""
                           << axis << "\"; axis names must be unique (M3)";
    if (ShapedType::isDynamic(size)) {
      if (++dynamicCount > 1)
        return emitOpError() << "@" << getSymName()
                             << " has more than one axis of size '?'; at "
                                "most one size can be left to run time (M4)";
      continue;
    }
    if (size < 1)
      return emitOpError() << "@" << getSymName() << " axis \"" << axis
                           << "\" has size " << size
                           << "; sizes must be at least 1 (M2)";
  }
  if (failed(verifyMeshDevices(*this)))
    return failure();
  // M6: the runtime describes a mesh with at most 16 axes.
  if (shape.size() > 16)
    return emitOpError() << "@" << getSymName() << " has " << shape.size()
                         << " axes; at most 16 are supported (M6)";
  // M5: ranks are 32-bit integers in MPI and NCCL.
  int64_t devices = 1;
  for (int64_t size : shape) {
    if (ShapedType::isDynamic(size))
      continue;
    if (llvm::MulOverflow(devices, size, devices) ||
        devices > std::numeric_limits<int32_t>::max())
      return emitOpError() << "@" << getSymName()
                           << " has more than 2^31-1 devices (M5)";
  }
  return success();
}

std::optional<unsigned> MeshOp::getAxisIndex(StringRef name) {
  for (auto [i, axis] :
       llvm::enumerate(getAxisNames().getAsValueRange<StringAttr>()))
    if (axis == name)
      return i;
  return std::nullopt;
}

int64_t MeshOp::getAxisSize(StringRef name) {
  std::optional<unsigned> index = getAxisIndex(name);
  assert(index && "axis must exist");
  return getShape()[*index];
}

int64_t MeshOp::getGroupSize(ArrayRef<StringRef> axes) {
  int64_t size = 1;
  for (StringRef axis : axes) {
    int64_t s = getAxisSize(axis);
    if (ShapedType::isDynamic(s))
      return ShapedType::kDynamic;
    size *= s;
  }
  return size;
}

int64_t MeshOp::getNumDevices() {
  int64_t devices = 1;
  for (int64_t size : getShape()) {
    if (ShapedType::isDynamic(size))
      return ShapedType::kDynamic;
    devices *= size;
  }
  return devices;
}

std::string MeshOp::getAxisListForDiagnostic() {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleaveComma(getAxisNames().getAsValueRange<StringAttr>(), os,
                        [&](StringRef axis) { os << '"' << axis << '"'; });
  return out;
}

//===----------------------------------------------------------------------===//
// Axis lists shared by collectives, barrier and the axis queries
//===----------------------------------------------------------------------===//

/// C2: an axis appears at most once in an op's axis list.
static LogicalResult verifyNoRepeatedAxes(Operation *op, ArrayAttr axes) {
  llvm::SmallSet<StringRef, 8> seen;
  for (StringRef name : axes.getAsValueRange<StringAttr>()) {
    if (!seen.insert(name).second)
      return op->emitOpError()
             << "axis \"" << name << "\" appears more than once in axes (C2)";
  }
  return success();
}

/// C0 and C1: the mesh exists and has every named axis. Returns the mesh.
static FailureOr<MeshOp> verifyMeshAndAxes(Operation *op,
                                           FlatSymbolRefAttr meshRef,
                                           ArrayRef<StringRef> axes,
                                           SymbolTableCollection &tables) {
  FailureOr<MeshOp> mesh = getMeshOrEmitError(op, meshRef, &tables);
  if (failed(mesh))
    return failure();
  for (StringRef axis : axes)
    if (!mesh->getAxisIndex(axis))
      return op->emitOpError()
             << "names axis \"" << axis << "\" which mesh @"
             << mesh->getSymName() << " does not have; its axes are "
             << mesh->getAxisListForDiagnostic() << " (C1)";
  return mesh;
}

static SmallVector<StringRef> toStrings(ArrayAttr axes) {
  return llvm::to_vector(axes.getAsValueRange<StringAttr>());
}

//===----------------------------------------------------------------------===//
// mesh.shard
//===----------------------------------------------------------------------===//

LogicalResult ShardOp::verify() {
  ShardingAttr sharding = getSharding();
  if (static_cast<int64_t>(sharding.getRank()) != getSrc().getType().getRank())
    return emitOpError() << "sharding has " << sharding.getRank()
                         << " dims but the tensor " << getSrc().getType()
                         << " has rank " << getSrc().getType().getRank()
                         << " (S2)";
  return success();
}

LogicalResult ShardOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifySharding(*this, getSharding(), getSrc().getType(), "operand",
                        &tables);
}

//===----------------------------------------------------------------------===//
// Collectives: local verification
//===----------------------------------------------------------------------===//

/// C4: input and result are both tensors or both memrefs, with the same
/// element type and rank. C6 when `reduction` is given. C3 for each dim.
static LogicalResult
verifyCollectiveLocal(Operation *op, ArrayAttr axes,
                      std::optional<ReductionKind> reduction,
                      ArrayRef<std::pair<StringRef, int64_t>> dims) {
  if (failed(verifyNoRepeatedAxes(op, axes)))
    return failure();
  auto in = cast<ShapedType>(op->getOperand(0).getType());
  auto out = cast<ShapedType>(op->getResult(0).getType());
  if (isa<TensorType>(in) != isa<TensorType>(out))
    return op->emitOpError() << "input " << in << " and result " << out
                             << " must both be tensors or both memrefs (C4)";
  if (in.getElementType() != out.getElementType())
    return op->emitOpError() << "result element type " << out.getElementType()
                             << " differs from input element type "
                             << in.getElementType() << " (C4)";
  if (in.getRank() != out.getRank())
    return op->emitOpError()
           << "result rank " << out.getRank() << " differs from input rank "
           << in.getRank() << " (C4)";
  for (auto [name, dim] : dims)
    if (dim < 0 || dim >= in.getRank())
      return op->emitOpError()
             << name << " " << dim << " is out of range for rank "
             << in.getRank() << " (C3)";
  if (reduction && !isReductionValidFor(*reduction, in.getElementType()))
    return op->emitOpError()
           << "reduction '" << stringifyReductionKind(*reduction)
           << "' is not valid for element type " << in.getElementType()
           << (isa<FloatType>(in.getElementType())
                   ? "; bitwise reductions need integers"
                   : "; reductions need integer or float elements")
           << " (C6)";
  return success();
}

/// C11: an `in_place` collective works on a buffer whose layout the runtime
/// can write as it is, and its result is that buffer.
static LogicalResult verifyInPlace(Operation *op, bool inPlace) {
  if (!inPlace)
    return success();
  auto in = dyn_cast<MemRefType>(op->getOperand(0).getType());
  auto out = dyn_cast<MemRefType>(op->getResult(0).getType());
  if (!in || !out)
    return op->emitOpError()
           << "is 'in_place', which applies to buffers only (C11)";
  if (!in.getLayout().isIdentity())
    return op->emitOpError() << "is 'in_place' on input " << in
                             << ", which must have an identity layout (C11)";
  if (in.getMemorySpace() != out.getMemorySpace() ||
      failed(verifyCompatibleShape(in, out)))
    return op->emitOpError() << "is 'in_place', so its result " << out
                             << " must be its input buffer " << in
                             << " (same shape and memory space) (C11)";
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyCollectiveLocal(*this, getAxes(), getReduction(), {})))
    return failure();
  return verifyInPlace(*this, getInPlace());
}
/// `valid` of a padded all_gather or reduce_scatter along `dim` of `whole`
/// (the gathered result, the scattered input) `(C12)`.
static LogicalResult verifyValid(Operation *op, std::optional<int64_t> valid,
                                 int64_t dim, Type whole,
                                 StringRef name = "valid") {
  if (!valid)
    return success();
  auto type = cast<ShapedType>(whole);
  if (!type.hasStaticShape())
    return op->emitOpError()
           << "with '" << name << "' needs static shapes (C12)";
  if (*valid < 0 || *valid > type.getDimSize(dim))
    return op->emitOpError()
           << "'" << name << "' " << *valid << " is outside [0, "
           << type.getDimSize(dim) << "], the size of dim " << dim << " (C12)";
  for (int64_t d = 0; d < dim; ++d)
    if (type.getDimSize(d) != 1)
      return op->emitOpError()
             << "with '" << name << "' needs dims of size 1 before dim " << dim
             << ", so that each member's data is a prefix of its block; dim "
             << d << " has size " << type.getDimSize(d) << " (C12)";
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyCollectiveLocal(*this, getAxes(), std::nullopt,
                                   {{"gather_dim", getGatherDim()}})))
    return failure();
  return verifyValid(*this, getValid(), getGatherDim(), getResult().getType());
}
LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyCollectiveLocal(*this, getAxes(), getReduction(),
                                   {{"scatter_dim", getScatterDim()}})))
    return failure();
  return verifyValid(*this, getValid(), getScatterDim(), getInput().getType());
}
LogicalResult AllToAllOp::verify() {
  if (failed(verifyCollectiveLocal(
          *this, getAxes(), std::nullopt,
          {{"split_dim", getSplitDim()}, {"concat_dim", getConcatDim()}})))
    return failure();
  if (!getSplitValid() && !getConcatValid())
    return success();
  if (getSplitValid() && getConcatValid())
    return emitOpError()
           << "takes 'split_valid' or 'concat_valid', not both (C12)";
  if (getSplitDim() == getConcatDim())
    return emitOpError() << "with '"
                         << (getSplitValid() ? "split_valid" : "concat_valid")
                         << "' needs split_dim and concat_dim distinct (C12)";
  if (getSplitValid())
    return verifyValid(*this, getSplitValid(), getSplitDim(),
                       getInput().getType(), "split_valid");
  return verifyValid(*this, getConcatValid(), getConcatDim(),
                     getResult().getType(), "concat_valid");
}
LogicalResult AllSliceOp::verify() {
  return verifyCollectiveLocal(*this, getAxes(), std::nullopt,
                               {{"slice_dim", getSliceDim()}});
}
LogicalResult BroadcastOp::verify() {
  // I64Attr getters are unsigned; the attribute holds a signed i64.
  int64_t root = static_cast<int64_t>(getRoot());
  if (root < 0)
    return emitOpError() << "root " << root << " must not be negative (C8)";
  if (failed(verifyCollectiveLocal(*this, getAxes(), std::nullopt, {})))
    return failure();
  return verifyInPlace(*this, getInPlace());
}
LogicalResult PermuteOp::verify() {
  if (getOffset() == 0)
    return emitOpError() << "offset must not be 0; a zero shift is a copy (C9)";
  return verifyCollectiveLocal(*this, getAxes(), std::nullopt, {});
}
LogicalResult BarrierOp::verify() {
  return verifyNoRepeatedAxes(*this, getAxes());
}

//===----------------------------------------------------------------------===//
// Collectives: verification against the mesh (C0, C1, C5, C7, C8)
//===----------------------------------------------------------------------===//

namespace {
/// How a collective changes one dimension of its input.
enum class DimChange { Multiply, Divide };
} // namespace

/// Checks the result shape against the input shape: `changes` lists the dims
/// that are multiplied or divided by the group size; every other dim is
/// unchanged. A dim is only compared where both sides are static.
static LogicalResult
verifyResultShape(Operation *op, int64_t groupSize,
                  ArrayRef<std::tuple<StringRef, int64_t, DimChange>> changes) {
  auto in = cast<ShapedType>(op->getOperand(0).getType());
  auto out = cast<ShapedType>(op->getResult(0).getType());
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t inSize = in.getDimSize(d);
    int64_t expected = inSize;
    StringRef why = "unchanged";
    for (auto [name, dim, change] : changes) {
      if (dim != d)
        continue;
      if (ShapedType::isDynamic(groupSize) || ShapedType::isDynamic(inSize)) {
        expected = ShapedType::kDynamic;
        continue;
      }
      if (change == DimChange::Multiply) {
        if (llvm::MulOverflow(expected, groupSize, expected))
          return op->emitOpError() << name << " " << d << " of size " << inSize
                                   << " times the group size " << groupSize
                                   << " overflows a 64-bit size (C5)";
        why = "multiplied by the group size";
        continue;
      }
      if (expected % groupSize != 0)
        return op->emitOpError() << name << " " << d << " has size " << expected
                                 << ", which does not divide by the group size "
                                 << groupSize << " (C7)";
      expected = expected / groupSize;
      why = "divided by the group size";
    }
    if (changes.size() == 2 && std::get<1>(changes[0]) == d &&
        std::get<1>(changes[1]) == d)
      why = "divided and multiplied by the group size";
    int64_t outSize = out.getDimSize(d);
    if (ShapedType::isDynamic(expected) || ShapedType::isDynamic(outSize))
      continue;
    if (expected == outSize)
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << "result dim " << d << " is " << outSize
                              << " but " << expected << " is expected: ";
    if (why == "unchanged")
      diag << "the op keeps input dim " << d << " (" << inSize << ")";
    else
      diag << "input dim " << d << " (" << inSize << ") " << why << " ("
           << groupSize << ")";
    return diag << " (C5)";
  }
  return success();
}

/// The part of verifySymbolUses every collective shares (C0, C1): returns the
/// group size, kDynamic when an axis is `?`.
static FailureOr<int64_t> verifyCollectiveMesh(CollectiveOpInterface op,
                                               SymbolTableCollection &tables) {
  SmallVector<StringRef> axes = op.getAxisNames();
  FailureOr<MeshOp> mesh =
      verifyMeshAndAxes(op, op.getMeshAttr(), axes, tables);
  if (failed(mesh))
    return failure();
  return mesh->getGroupSize(axes);
}

LogicalResult AllReduceOp::verifyGroupSize(int64_t groupSize) {
  return verifyResultShape(*this, groupSize, {});
}

LogicalResult AllGatherOp::verifyGroupSize(int64_t groupSize) {
  return verifyResultShape(
      *this, groupSize, {{"gather_dim", getGatherDim(), DimChange::Multiply}});
}

LogicalResult ReduceScatterOp::verifyGroupSize(int64_t groupSize) {
  return verifyResultShape(
      *this, groupSize, {{"scatter_dim", getScatterDim(), DimChange::Divide}});
}

LogicalResult AllToAllOp::verifyGroupSize(int64_t groupSize) {
  return verifyResultShape(
      *this, groupSize,
      {{"split_dim", getSplitDim(), DimChange::Divide},
       {"concat_dim", getConcatDim(), DimChange::Multiply}});
}

LogicalResult AllSliceOp::verifyGroupSize(int64_t groupSize) {
  return verifyResultShape(*this, groupSize,
                           {{"slice_dim", getSliceDim(), DimChange::Divide}});
}

LogicalResult BroadcastOp::verifyGroupSize(int64_t groupSize) {
  if (!ShapedType::isDynamic(groupSize) &&
      static_cast<int64_t>(getRoot()) >= groupSize)
    return emitOpError() << "root " << getRoot()
                         << " is not a member of a group of " << groupSize
                         << " (C8)";
  return verifyResultShape(*this, groupSize, {});
}

LogicalResult PermuteOp::verifyGroupSize(int64_t groupSize) {
  return verifyResultShape(*this, groupSize, {});
}

LogicalResult BarrierOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyMeshAndAxes(*this, getMeshAttr(), toStrings(getAxes()), tables);
}

LogicalResult AxisIndexOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyMeshAndAxes(*this, getMeshAttr(), {getAxis()}, tables);
}

LogicalResult AxisSizeOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyMeshAndAxes(*this, getMeshAttr(), {getAxis()}, tables);
}

//===----------------------------------------------------------------------===//
// Point to point (P1-P5)
//===----------------------------------------------------------------------===//

FlatSymbolRefAttr SendOp::getPeerMeshAttr() { return getToAttr(); }
Value SendOp::getData() { return getInput(); }
FlatSymbolRefAttr RecvOp::getPeerMeshAttr() { return getFromAttr(); }
Value RecvOp::getData() { return getResult(); }

/// Largest tag of meshrt_send/meshrt_recv (MPI guarantees at least 32767).
static constexpr int64_t kMaxTag = 32767;

/// P4 and P5: the checks that need no mesh.
static LogicalResult verifyPointToPointLocal(Operation *op, int64_t tag,
                                             bool isRecv) {
  if (tag < 0 || tag > kMaxTag)
    return op->emitOpError()
           << "tag " << tag << " is outside [0, " << kMaxTag << "] (P4)";
  auto type = cast<ShapedType>(isRecv ? op->getResult(0).getType()
                                      : op->getOperand(0).getType());
  if (isRecv && !type.hasStaticShape())
    return op->emitOpError()
           << "result " << type
           << " has a dynamic size; a receiver names the number of elements "
              "it expects, so its shape is static (P5)";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPointToPointLocal(*this, static_cast<int64_t>(getTag()),
                                 /*isRecv=*/false);
}
LogicalResult RecvOp::verify() {
  return verifyPointToPointLocal(*this, static_cast<int64_t>(getTag()),
                                 /*isRecv=*/true);
}

/// P1: `ref` names a mesh.mesh; `role` says which end of the transfer.
static FailureOr<MeshOp> getTransferMesh(Operation *op, FlatSymbolRefAttr ref,
                                         StringRef role,
                                         SymbolTableCollection &tables) {
  Operation *found = tables.lookupNearestSymbolFrom(op, ref);
  if (!found)
    return op->emitOpError() << "names " << ref << " as its " << role
                             << " mesh, which is not defined (P1)";
  auto mesh = dyn_cast<MeshOp>(found);
  if (!mesh)
    return op->emitOpError()
           << "names " << ref << " as its " << role << " mesh, but it is a '"
           << found->getName() << "', not a 'mesh.mesh' (P1)";
  return mesh;
}

/// P1-P3 for a transfer between `ownRef` (where the op runs) and `peerRef`.
static LogicalResult verifyPointToPointMeshes(Operation *op,
                                              FlatSymbolRefAttr ownRef,
                                              FlatSymbolRefAttr peerRef,
                                              StringRef peerRole,
                                              SymbolTableCollection &tables) {
  FailureOr<MeshOp> own = getTransferMesh(op, ownRef, "own", tables);
  if (failed(own))
    return failure();
  FailureOr<MeshOp> peer = getTransferMesh(op, peerRef, peerRole, tables);
  if (failed(peer))
    return failure();
  if (*own == *peer)
    return op->emitOpError()
           << "transfers between " << ownRef
           << " and itself; a transfer goes between two meshes (P2)";
  if (own->getShape() != peer->getShape())
    return op->emitOpError()
           << "transfers between " << ownRef << " of shape "
           << formatShape(own->getShape()) << " and " << peerRef << " of shape "
           << formatShape(peer->getShape())
           << "; each device talks to the same position of the other mesh, "
              "so their sizes must be equal axis by axis (P2)";
  if (!own->hasDevices() && !peer->hasDevices())
    return op->emitOpError()
           << "transfers between " << ownRef << " and " << peerRef
           << ", which both span the whole world in the same order, so every "
              "device would talk to itself; give one of them 'devices' (P3)";
  int64_t n = own->getNumDevices();
  if (ShapedType::isDynamic(n))
    return success();
  for (int64_t position = 0; position < n; ++position)
    if (own->getWorldRank(position) == peer->getWorldRank(position))
      return op->emitOpError()
             << "transfers between " << ownRef << " and " << peerRef
             << ", whose devices at position " << position
             << " are both world rank " << own->getWorldRank(position)
             << "; a process cannot send to itself (P3)";
  return success();
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyPointToPointMeshes(*this, getMeshAttr(), getToAttr(),
                                  "destination", tables);
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyPointToPointMeshes(*this, getMeshAttr(), getFromAttr(), "source",
                                  tables);
}

LogicalResult IsMemberOp::verifySymbolUses(SymbolTableCollection &tables) {
  return getMeshOrEmitError(*this, getMeshAttr(), &tables);
}

//===----------------------------------------------------------------------===//
// Memory effects: tensor collectives have none; memref collectives read the
// input and allocate and write the result.
//===----------------------------------------------------------------------===//

/// The effects of every collective (see Mesh_CollectiveOp in MeshOps.td).
bool mlir::mesh::isInPlace(Operation *op) {
  if (auto allReduce = dyn_cast<AllReduceOp>(op))
    return allReduce.getInPlace();
  if (auto broadcast = dyn_cast<BroadcastOp>(op))
    return broadcast.getInPlace();
  return false;
}

static void getCollectiveEffects(
    Operation *op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (!isa<BaseMemRefType>(op->getResult(0).getType()))
    return;
  effects.emplace_back(MemoryEffects::Read::get(), &op->getOpOperand(0),
                       SideEffects::DefaultResource::get());
  if (isInPlace(op)) {
    // The result is the input buffer: nothing is allocated.
    effects.emplace_back(MemoryEffects::Write::get(), &op->getOpOperand(0),
                         SideEffects::DefaultResource::get());
    return;
  }
  effects.emplace_back(MemoryEffects::Allocate::get(), op->getOpResult(0),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), op->getOpResult(0),
                       SideEffects::DefaultResource::get());
}

namespace {
/// What a barrier orders: communication, not any buffer. Declaring it keeps
/// the barrier in place (it writes the resource) while passes that reason
/// about buffers (deallocation) know it touches none.
struct CommunicationResource
    : public SideEffects::Resource::Base<CommunicationResource> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CommunicationResource)
  StringRef getName() final { return "mesh.communication"; }
};
} // namespace

void SendOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // A send is what it does to the peer: it always stays, in order.
  effects.emplace_back(MemoryEffects::Write::get(),
                       CommunicationResource::get());
  if (isa<BaseMemRefType>(getInput().getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &getInputMutable(),
                         SideEffects::DefaultResource::get());
}

void RecvOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // Even unused, a receive must match its peer's send.
  effects.emplace_back(MemoryEffects::Write::get(),
                       CommunicationResource::get());
  if (!isa<BaseMemRefType>(getResult().getType()))
    return;
  effects.emplace_back(MemoryEffects::Allocate::get(),
                       getOperation()->getOpResult(0),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       getOperation()->getOpResult(0),
                       SideEffects::DefaultResource::get());
}

void BarrierOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Write::get(),
                       CommunicationResource::get());
}

#define GET_OP_CLASSES
#include "mesh/Dialect/Mesh/IR/MeshOps.cpp.inc"

//===----------------------------------------------------------------------===//
// mesh.circular_pad
//===----------------------------------------------------------------------===//

LogicalResult CircularPadOp::verify() {
  RankedTensorType source = getSource().getType(),
                   result = getResult().getType();
  ArrayRef<int64_t> low = getLow(), high = getHigh();
  int64_t rank = source.getRank();
  if (static_cast<int64_t>(low.size()) != rank ||
      static_cast<int64_t>(high.size()) != rank)
    return emitOpError() << "has " << low.size() << " low and " << high.size()
                         << " high widths for a tensor of rank " << rank
                         << " (W1)";
  if (result.getRank() != rank ||
      result.getElementType() != source.getElementType())
    return emitOpError() << "result " << result
                         << " is not the source's rank and element type "
                         << source << " (W3)";
  for (int64_t d = 0; d < rank; ++d) {
    if (low[d] < 0 || high[d] < 0)
      return emitOpError() << "dim " << d << " has a negative width [" << low[d]
                           << ", " << high[d] << "] (W1)";
    int64_t n = source.getDimSize(d);
    if ((low[d] || high[d]) &&
        (ShapedType::isDynamic(n) || low[d] > n || high[d] > n))
      return emitOpError() << "dim " << d << " of size "
                           << (ShapedType::isDynamic(n) ? "?"
                                                        : std::to_string(n))
                           << " cannot wrap widths [" << low[d] << ", "
                           << high[d]
                           << "]: a padded dim is static and at least as "
                              "long as its widths (W2)";
    int64_t expected = ShapedType::isDynamic(n) ? n : n + low[d] + high[d];
    if (result.getDimSize(d) != expected)
      return emitOpError() << "result " << result << " has dim " << d
                           << " of size "
                           << (result.isDynamicDim(d)
                                   ? "?"
                                   : std::to_string(result.getDimSize(d)))
                           << ", expected "
                           << (ShapedType::isDynamic(expected)
                                   ? "?"
                                   : std::to_string(expected))
                           << " (W3)";
  }
  return success();
}

/// One concat per padded dim: the source's last `low` elements, the source,
/// its first `high` elements.
FailureOr<SmallVector<Value>> CircularPadOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  Value cur = getSource();
  for (int64_t d = 0, e = getLow().size(); d < e; ++d) {
    int64_t lo = getLow()[d], hi = getHigh()[d];
    if (!lo && !hi)
      continue;
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, cur);
    int64_t n = cast<RankedTensorType>(cur.getType()).getDimSize(d);
    auto slab = [&](int64_t offset, int64_t size) {
      SmallVector<OpFoldResult> offsets(sizes.size(), b.getIndexAttr(0)),
          slabSizes(sizes), strides(sizes.size(), b.getIndexAttr(1));
      offsets[d] = b.getIndexAttr(offset);
      slabSizes[d] = b.getIndexAttr(size);
      return tensor::ExtractSliceOp::create(b, loc, cur, offsets, slabSizes,
                                            strides)
          .getResult();
    };
    SmallVector<Value> parts;
    if (lo)
      parts.push_back(slab(n - lo, lo));
    parts.push_back(cur);
    if (hi)
      parts.push_back(slab(0, hi));
    cur = tensor::ConcatOp::create(b, loc, d, parts);
  }
  return SmallVector<Value>{cur};
}

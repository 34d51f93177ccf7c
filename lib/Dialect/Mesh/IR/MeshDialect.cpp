//===- MeshDialect.cpp - the mesh dialect ---------------------------------===//
//
// Registers ops and attributes, materializes folded constants, and verifies
// the discardable `mesh.sharding` attribute wherever it appears: on function
// arguments and results and on operations.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshDialect.h"
#include "mesh/Dialect/Mesh/IR/MeshOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mesh;

#include "mesh/Dialect/Mesh/IR/MeshOpsDialect.cpp.inc"

namespace {
/// Mesh ops inside a function body (collectives, axis indices, shardings)
/// depend on nothing but their operands and the module's meshes, which an
/// inlined body still sees: a call of a function that uses them may be
/// inlined.
struct MeshInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void MeshDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mesh/Dialect/Mesh/IR/MeshOps.cpp.inc"
      >();
  registerAttributes();
  addInterfaces<MeshInlinerInterface>();
}

Operation *MeshDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}

/// Checks one `mesh.sharding` value against the types it describes. `types`
/// are the values' types; a single sharding is allowed for a single type.
static LogicalResult verifyShardingAttrFor(Operation *op, Attribute attr,
                                           TypeRange types, StringRef what) {
  if (auto sharding = dyn_cast<ShardingAttr>(attr)) {
    if (types.size() != 1)
      return op->emitOpError()
             << "has " << types.size() << " " << what
             << "s, so 'mesh.sharding' must be an array with one "
                "#mesh.sharding for each (S6)";
    return verifySharding(op, sharding, types.front(), what);
  }
  auto array = dyn_cast<ArrayAttr>(attr);
  if (!array)
    return op->emitOpError()
           << "'mesh.sharding' must be a #mesh.sharding or an array of them "
              "(S6)";
  if (array.size() != types.size())
    return op->emitOpError() << "'mesh.sharding' has " << array.size()
                             << " entries but the op has " << types.size()
                             << " " << what << "s (S6)";
  for (auto [i, entry] : llvm::enumerate(array)) {
    // A value that is not a ranked tensor has no sharding: its entry is
    // `unit` (a loop's counter beside its tensors).
    if (isa<UnitAttr>(entry) && !isa<RankedTensorType>(types[i]))
      continue;
    auto sharding = dyn_cast<ShardingAttr>(entry);
    if (!sharding)
      return op->emitOpError()
             << "'mesh.sharding' entry " << i << " must be a #mesh.sharding"
             << (isa<RankedTensorType>(types[i])
                     ? ""
                     : ", or unit for a value that is not a ranked tensor")
             << " (S6)";
    if (failed(verifySharding(op, sharding, types[i],
                              (what + " " + std::to_string(i)).str())))
      return failure();
  }
  return success();
}

/// Checks `mesh.host_buffer` on `op` (the op, or its argument of `type`
/// when `type` is given): a unit attribute on a memref.alloc or a memref
/// function argument.
static LogicalResult verifyHostBufferAttr(Operation *op, NamedAttribute attr,
                                          Type type = {}) {
  bool onBuffer = type ? isa<MemRefType>(type) && isa<FunctionOpInterface>(op)
                       : op->getName().getStringRef() == "memref.alloc";
  if (!isa<UnitAttr>(attr.getValue()) || !onBuffer)
    return op->emitOpError()
           << "'mesh.host_buffer' is a unit attribute of memref.alloc ops "
              "and memref function arguments (S8)";
  return success();
}

LogicalResult MeshDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == getHostBufferAttrName())
    return verifyHostBufferAttr(op, attr);
  // The precision of the module's GPU products (mesh-gpu-linalg-to-cublas).
  if (attr.getName().getValue() == "mesh.matmul_precision") {
    auto value = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !value ||
        !llvm::is_contained({"highest", "tf32", "bf16"}, value.getValue()))
      return op->emitOpError()
             << "'mesh.matmul_precision' is a string attribute of modules: "
                "\"highest\", \"tf32\" or \"bf16\" (S8)";
    return success();
  }
  if (attr.getName() != getShardingAttrName())
    return op->emitOpError() << "has unknown mesh dialect attribute '"
                             << attr.getName().getValue()
                             << "'; the only one is 'mesh.sharding' (S8)";
  return verifyShardingAttrFor(op, attr.getValue(), op->getResultTypes(),
                               "result");
}

/// Shared by the argument and result verifiers: `type` is the argument's or
/// result's type, `what` names it in messages.
static LogicalResult verifyFunctionShardingAttr(Operation *op,
                                                NamedAttribute attr, Type type,
                                                const Twine &what) {
  if (attr.getName() != MeshDialect::getShardingAttrName())
    return op->emitOpError() << "has unknown mesh dialect attribute '"
                             << attr.getName().getValue() << "' on " << what
                             << "; the only one is 'mesh.sharding' (S8)";
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitOpError()
           << "'mesh.sharding' on " << what << " must be a #mesh.sharding (S6)";
  return verifySharding(op, sharding, type, what.str());
}

LogicalResult MeshDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  Type type;
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    type = fn.getArgumentTypes()[argIndex];
  else
    type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  if (attr.getName() == getHostBufferAttrName())
    return verifyHostBufferAttr(op, attr, type);
  // `mesh.carried = N` (mesh-auto-shard): result N is this argument's next
  // value, of the same type.
  if (attr.getName().getValue() == "mesh.carried") {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    auto number = dyn_cast<IntegerAttr>(attr.getValue());
    if (!fn || !number || number.getInt() < 0 ||
        number.getInt() >= static_cast<int64_t>(fn.getNumResults()) ||
        fn.getResultTypes()[number.getInt()] != type)
      return op->emitOpError()
             << "'mesh.carried' on argument " << argIndex
             << " must be the number of a function result of the argument's "
                "type (S8)";
    return success();
  }
  return verifyFunctionShardingAttr(op, attr, type,
                                    "argument " + Twine(argIndex));
}

LogicalResult MeshDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitOpError() << "'mesh.sharding' on a region result needs a "
                                "function-like op (S6)";
  return verifyFunctionShardingAttr(op, attr, fn.getResultTypes()[resultIndex],
                                    "result " + Twine(resultIndex));
}

//===- MeshAttrs.cpp - the #mesh.sharding attribute -----------------------===//
//
// Parsing, printing and structural verification of #mesh.sharding. Checks
// that need the mesh (axis names exist, S1) live in verifySharding, called by
// the ops and the dialect's attribute verifiers, which can see symbols.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mesh;

#define GET_ATTRDEF_CLASSES
#include "mesh/Dialect/Mesh/IR/MeshAttrs.cpp.inc"

void MeshDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mesh/Dialect/Mesh/IR/MeshAttrs.cpp.inc"
      >();
}

ShardingAttr ShardingAttr::get(FlatSymbolRefAttr mesh,
                               ArrayRef<SmallVector<StringRef>> dims,
                               ArrayRef<StringRef> partialAxes,
                               ReductionKind partialKind) {
  MLIRContext *ctx = mesh.getContext();
  Builder b(ctx);
  SmallVector<Attribute> dimAttrs;
  for (const SmallVector<StringRef> &axes : dims)
    dimAttrs.push_back(b.getStrArrayAttr(axes));
  return ShardingAttr::get(ctx, mesh, b.getArrayAttr(dimAttrs),
                           b.getStrArrayAttr(partialAxes), partialKind);
}

SmallVector<StringRef> ShardingAttr::getDimAxes(unsigned dim) const {
  SmallVector<StringRef> names;
  for (Attribute a : cast<ArrayAttr>(getDims()[dim]))
    names.push_back(cast<StringAttr>(a).getValue());
  return names;
}

SmallVector<StringRef> ShardingAttr::getPartialAxisNames() const {
  SmallVector<StringRef> names;
  for (Attribute a : getPartialAxes())
    names.push_back(cast<StringAttr>(a).getValue());
  return names;
}

bool ShardingAttr::isFullyReplicated() const {
  if (isPartial())
    return false;
  return llvm::all_of(getDims(), [](Attribute d) {
    return cast<ArrayAttr>(d).empty();
  });
}

/// Structural checks, without the mesh: every entry is a list of non-empty
/// strings and no axis appears twice in the whole sharding (S3).
LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, ArrayAttr dims,
                     ArrayAttr partialAxes, ReductionKind partialKind) {
  if (!mesh)
    return emitError() << "sharding needs a mesh symbol (S4)";
  if (!dims || !partialAxes)
    return emitError() << "sharding needs its dims and partial axes (S4)";
  // Axis names are uniqued StringAttrs: compare pointers.
  SmallVector<Attribute, 8> seen;
  auto checkAxis = [&](Attribute a, int64_t dim) -> LogicalResult {
    auto name = dyn_cast<StringAttr>(a);
    if (!name || name.getValue().empty()) {
      InFlightDiagnostic diag = emitError();
      diag << "sharding axes must be non-empty strings (in ";
      if (dim < 0)
        diag << "partial)";
      else
        diag << "dim " << dim << ")";
      return diag << " (S4)";
    }
    if (llvm::is_contained(seen, a))
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" appears more than once in the sharding (S3)";
    seen.push_back(a);
    return success();
  };
  for (auto [i, dim] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "sharding dim " << i
                         << " must be a list of axis names (S4)";
    for (Attribute a : axes)
      if (failed(checkAxis(a, static_cast<int64_t>(i))))
        return failure();
  }
  for (Attribute a : partialAxes)
    if (failed(checkAxis(a, -1)))
      return failure();
  return success();
}

/// Parses `[ "a", "b" ]` into a list of string attributes.
static ParseResult parseAxisList(AsmParser &parser,
                                 SmallVectorImpl<Attribute> &axes) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        std::string name;
        if (parser.parseString(&name))
          return failure();
        axes.push_back(parser.getBuilder().getStringAttr(name));
        return success();
      });
}

/// `<@mesh, [[axes], ...] (, partial = kind[axes])?>`
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  Builder b(ctx);
  FlatSymbolRefAttr mesh;
  SmallVector<Attribute> dims;
  SmallVector<Attribute> partial;
  ReductionKind kind = ReductionKind::Sum;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            SmallVector<Attribute> axes;
            if (parseAxisList(parser, axes))
              return failure();
            dims.push_back(b.getArrayAttr(axes));
            return success();
          }))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    StringRef keyword;
    SMLoc kindLoc;
    if (parser.parseKeyword("partial") || parser.parseEqual())
      return {};
    kindLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&keyword))
      return {};
    std::optional<ReductionKind> parsed = symbolizeReductionKind(keyword);
    if (!parsed) {
      parser.emitError(kindLoc, "unknown reduction kind '")
          << keyword << "'; expected one of sum, prod, min, max, avg, and, "
          << "or, xor (S5)";
      return {};
    }
    kind = *parsed;
    if (parseAxisList(parser, partial))
      return {};
    if (partial.empty()) {
      parser.emitError(kindLoc, "partial needs at least one axis (S5)");
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(ctx, mesh, b.getArrayAttr(dims),
                                         b.getArrayAttr(partial), kind);
}

static void printAxisList(AsmPrinter &printer, ArrayAttr axes) {
  printer << '[';
  llvm::interleaveComma(axes, printer, [&](Attribute a) {
    printer.printString(cast<StringAttr>(a).getValue());
  });
  printer << ']';
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printer.printAttributeWithoutType(getMesh());
  printer << ", [";
  llvm::interleaveComma(getDims(), printer, [&](Attribute d) {
    printAxisList(printer, cast<ArrayAttr>(d));
  });
  printer << ']';
  if (isPartial()) {
    printer << ", partial = " << stringifyReductionKind(getPartialKind());
    printAxisList(printer, getPartialAxes());
  }
  printer << '>';
}

LogicalResult mlir::mesh::verifySharding(Operation *op, ShardingAttr sharding,
                                         Type type, StringRef what,
                                         SymbolTableCollection *symbolTables) {
  // Attributes built in C++ without getChecked reach here unverified.
  if (failed(ShardingAttr::verify(
          [&] { return op->emitOpError() << what << ": "; },
          sharding.getMesh(), sharding.getDims(), sharding.getPartialAxes(),
          sharding.getPartialKind())))
    return failure();
  FailureOr<MeshOp> mesh =
      getMeshOrEmitError(op, sharding.getMesh(), symbolTables);
  if (failed(mesh))
    return failure();
  if (auto shaped = dyn_cast<RankedTensorType>(type)) {
    if (static_cast<int64_t>(sharding.getRank()) != shaped.getRank())
      return op->emitOpError()
             << what << ": sharding has " << sharding.getRank()
             << " dims but the type " << type << " has rank "
             << shaped.getRank() << " (S2)";
  } else {
    return op->emitOpError() << what << " of type " << type
                             << " cannot carry a sharding; it needs a ranked "
                                "tensor (S7)";
  }
  auto checkAxes = [&](ArrayAttr axes) -> LogicalResult {
    for (Attribute a : axes) {
      StringRef name = cast<StringAttr>(a).getValue();
      if (!mesh->getAxisIndex(name))
        return op->emitOpError()
               << what << ": sharding names axis \"" << name
               << "\" which mesh @" << mesh->getSymName()
               << " does not have; its axes are "
               << mesh->getAxisListForDiagnostic() << " (S1)";
    }
    return success();
  };
  for (Attribute d : sharding.getDims())
    if (failed(checkAxes(cast<ArrayAttr>(d))))
      return failure();
  if (failed(checkAxes(sharding.getPartialAxes())))
    return failure();
  if (sharding.isPartial() &&
      !isReductionValidFor(sharding.getPartialKind(),
                           cast<ShapedType>(type).getElementType()))
    return op->emitOpError()
           << what << ": partial reduction '"
           << stringifyReductionKind(sharding.getPartialKind())
           << "' is not valid for element type "
           << cast<ShapedType>(type).getElementType() << " (C6)";
  return success();
}

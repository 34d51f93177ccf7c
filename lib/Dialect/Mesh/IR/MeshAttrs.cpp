//===- MeshAttrs.cpp - the #mesh.sharding attribute -----------------------===//
//
// Parsing, printing and structural verification of #mesh.sharding. Checks
// that need the mesh (axis names exist, S1) live in verifySharding, called by
// the ops and the dialect's attribute verifiers, which can see symbols.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mesh;

// The custom directives of the generated #mesh.sharding parser and printer.
static ParseResult parseDimAxes(AsmParser &parser,
                                SmallVector<AxisListAttr> &dims);
static void printDimAxes(AsmPrinter &printer, ArrayRef<AxisListAttr> dims);
static ParseResult parseReductionKindKeyword(AsmParser &parser,
                                             ReductionKind &kind);
static void printReductionKindKeyword(AsmPrinter &printer, ReductionKind kind);
static ParseResult parsePartialKindKeyword(AsmParser &parser,
                                           ReductionKind &kind);
static void printPartialKindKeyword(AsmPrinter &printer, ReductionKind kind);

#define GET_ATTRDEF_CLASSES
#include "mesh/Dialect/Mesh/IR/MeshAttrs.cpp.inc"

void MeshDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mesh/Dialect/Mesh/IR/MeshAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Reduction kinds: a bare keyword, inside ops and shardings alike
//===----------------------------------------------------------------------===//

/// A reduction kind written as a bare keyword (`sum`), with a message that
/// lists the valid kinds when it is not one, citing `constraint`.
static ParseResult parseReductionKind(AsmParser &parser, ReductionKind &kind,
                                      StringRef constraint) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<ReductionKind> parsed = symbolizeReductionKind(keyword);
  if (!parsed)
    return parser.emitError(loc, "unknown reduction kind '")
           << keyword << "'; expected one of sum, prod, min, max, avg, and, "
           << "or, xor (" << constraint << ")";
  kind = *parsed;
  return success();
}

/// The reduction of a collective (C10).
static ParseResult parseReductionKindKeyword(AsmParser &parser,
                                             ReductionKind &kind) {
  return parseReductionKind(parser, kind, "C10");
}

/// The pending reduction of a sharding (S5).
static ParseResult parsePartialKindKeyword(AsmParser &parser,
                                           ReductionKind &kind) {
  return parseReductionKind(parser, kind, "S5");
}

static void printReductionKindKeyword(AsmPrinter &printer, ReductionKind kind) {
  printer << stringifyReductionKind(kind);
}

static void printPartialKindKeyword(AsmPrinter &printer, ReductionKind kind) {
  printReductionKindKeyword(printer, kind);
}

//===----------------------------------------------------------------------===//
// #mesh.axes
//===----------------------------------------------------------------------===//

AxisListAttr AxisListAttr::get(MLIRContext *context,
                               ArrayRef<StringRef> names) {
  SmallVector<StringAttr, 4> axes;
  for (StringRef name : names)
    axes.push_back(StringAttr::get(context, name));
  return get(context, axes);
}

SmallVector<StringRef> AxisListAttr::getNames() const {
  return llvm::map_to_vector(getAxes(),
                             [](StringAttr a) { return a.getValue(); });
}

/// `["a", "b"]`, possibly empty.
Attribute AxisListAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr, 4> axes;
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            std::string name;
            if (parser.parseString(&name))
              return failure();
            axes.push_back(parser.getBuilder().getStringAttr(name));
            return success();
          }))
    return {};
  return get(parser.getContext(), axes);
}

void AxisListAttr::print(AsmPrinter &printer) const {
  printer << '[';
  llvm::interleaveComma(getAxes(), printer, [&](StringAttr a) {
    printer.printString(a.getValue());
  });
  printer << ']';
}

//===----------------------------------------------------------------------===//
// #mesh.sharding
//===----------------------------------------------------------------------===//

/// `[[axes of dim 0], ...]`, possibly empty (a rank-0 tensor).
static ParseResult parseDimAxes(AsmParser &parser,
                                SmallVector<AxisListAttr> &dims) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        Attribute axes = AxisListAttr::parse(parser, Type());
        if (!axes)
          return failure();
        dims.push_back(cast<AxisListAttr>(axes));
        return success();
      });
}

static void printDimAxes(AsmPrinter &printer, ArrayRef<AxisListAttr> dims) {
  printer << '[';
  llvm::interleaveComma(dims, printer,
                        [&](AxisListAttr axes) { axes.print(printer); });
  printer << ']';
}

ShardingAttr ShardingAttr::get(FlatSymbolRefAttr mesh,
                               ArrayRef<SmallVector<StringRef>> dims,
                               ArrayRef<StringRef> partialAxes,
                               ReductionKind partialKind) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<AxisListAttr> dimAttrs;
  for (const SmallVector<StringRef> &axes : dims)
    dimAttrs.push_back(AxisListAttr::get(ctx, axes));
  if (partialAxes.empty())
    return get(ctx, mesh, dimAttrs, AxisListAttr(), ReductionKind::Sum);
  return get(ctx, mesh, dimAttrs, AxisListAttr::get(ctx, partialAxes),
             partialKind);
}

SmallVector<StringRef> ShardingAttr::getPartialAxisNames() const {
  if (!isPartial())
    return {};
  return getPartialAxes().getNames();
}

bool ShardingAttr::isFullyReplicated() const {
  return !isPartial() &&
         llvm::all_of(getDims(), [](AxisListAttr d) { return d.empty(); });
}

/// Structural checks, without the mesh: every dim has a list of non-empty
/// names, a partial list names at least one axis, and no axis appears twice
/// in the whole sharding (S3).
LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh,
                                   ArrayRef<AxisListAttr> dims,
                                   AxisListAttr partialAxes,
                                   ReductionKind partialKind) {
  if (!mesh)
    return emitError() << "sharding needs a mesh symbol (S4)";
  if (partialAxes && partialAxes.empty())
    return emitError() << "partial needs at least one axis (S5)";
  if (!partialAxes && partialKind != ReductionKind::Sum)
    return emitError() << "a partial reduction kind needs partial axes (S5)";
  // Axis names are uniqued StringAttrs: compare pointers.
  SmallVector<StringAttr, 8> seen;
  auto checkAxes = [&](AxisListAttr axes, int64_t dim) -> LogicalResult {
    for (StringAttr name : axes) {
      if (!name || name.getValue().empty()) {
        InFlightDiagnostic diag = emitError();
        diag << "sharding axes must be non-empty strings (in ";
        if (dim < 0)
          diag << "partial)";
        else
          diag << "dim " << dim << ")";
        return diag << " (S4)";
      }
      if (llvm::is_contained(seen, name))
        return emitError() << "mesh axis \"" << name.getValue()
                           << "\" appears more than once in the sharding (S3)";
      seen.push_back(name);
    }
    return success();
  };
  for (auto [i, axes] : llvm::enumerate(dims)) {
    if (!axes)
      return emitError() << "sharding dim " << i
                         << " must be a list of axis names (S4)";
    if (failed(checkAxes(axes, static_cast<int64_t>(i))))
      return failure();
  }
  if (partialAxes && failed(checkAxes(partialAxes, -1)))
    return failure();
  return success();
}

LogicalResult mlir::mesh::verifySharding(Operation *op, ShardingAttr sharding,
                                         Type type, StringRef what,
                                         SymbolTableCollection *symbolTables) {
  // Attributes built in C++ without getChecked reach here unverified.
  if (failed(ShardingAttr::verify(
          [&] { return op->emitOpError() << what << ": "; }, sharding.getMesh(),
          sharding.getDims(), sharding.getPartialAxes(),
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
  auto checkAxes = [&](AxisListAttr axes) -> LogicalResult {
    if (!axes)
      return success();
    for (StringAttr axis : axes) {
      StringRef name = axis.getValue();
      if (!mesh->getAxisIndex(name))
        return op->emitOpError() << what << ": sharding names axis \"" << name
                                 << "\" which mesh @" << mesh->getSymName()
                                 << " does not have; its axes are "
                                 << mesh->getAxisListForDiagnostic() << " (S1)";
    }
    return success();
  };
  for (AxisListAttr axes : sharding.getDims())
    if (failed(checkAxes(axes)))
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

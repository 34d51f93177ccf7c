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

/// `halo` without widths that are all zero: one spelling per layout.
static ArrayRef<int64_t> normalHalo(ArrayRef<int64_t> halo) {
  return llvm::all_of(halo, [](int64_t w) { return w == 0; })
             ? ArrayRef<int64_t>()
             : halo;
}

ShardingAttr ShardingAttr::get(FlatSymbolRefAttr mesh,
                               ArrayRef<SmallVector<StringRef>> dims,
                               ArrayRef<StringRef> partialAxes,
                               ReductionKind partialKind,
                               ArrayRef<int64_t> halo) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<AxisListAttr> dimAttrs;
  for (const SmallVector<StringRef> &axes : dims)
    dimAttrs.push_back(AxisListAttr::get(ctx, axes));
  if (partialAxes.empty())
    return get(ctx, mesh, dimAttrs, AxisListAttr(), ReductionKind::Sum,
               normalHalo(halo));
  return get(ctx, mesh, dimAttrs, AxisListAttr::get(ctx, partialAxes),
             partialKind, normalHalo(halo));
}

ShardingAttr ShardingAttr::withHalo(ArrayRef<int64_t> halo) const {
  return get(getContext(), getMesh(), getDims(), getPartialAxes(),
             getPartialKind(), normalHalo(halo));
}

/// `[[lo, hi], ...]`: one pair of widths per dim, flattened into `halo`.
static ParseResult parseHalo(AsmParser &parser, SmallVector<int64_t> &halo) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        int64_t lo, hi;
        if (parser.parseLSquare() || parser.parseInteger(lo) ||
            parser.parseComma() || parser.parseInteger(hi) ||
            parser.parseRSquare())
          return failure();
        halo.append({lo, hi});
        return success();
      });
}

/// `<@mesh, [[axes], ...]` then, each optional and in this order,
/// `, halo = [[lo, hi], ...]` and `, partial = kind[axes]`, then `>`.
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<AxisListAttr> dims;
  SmallVector<int64_t> halo;
  AxisListAttr partialAxes;
  ReductionKind partialKind = ReductionKind::Sum;
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() || parseDimAxes(parser, dims))
    return {};
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc loc = parser.getCurrentLocation();
    StringRef keyword;
    if (parser.parseKeyword(&keyword))
      return {};
    if (keyword == "halo" && halo.empty() && !partialAxes) {
      if (parser.parseEqual() || parseHalo(parser, halo))
        return {};
      if (halo.empty())
        return parser.emitError(loc, "halo needs one [lo, hi] pair for each "
                                     "dim (S9)"),
               Attribute();
      continue;
    }
    if (keyword == "partial" && !partialAxes) {
      Attribute axes;
      if (parser.parseEqual() || parsePartialKindKeyword(parser, partialKind) ||
          !(axes = AxisListAttr::parse(parser, Type())))
        return {};
      partialAxes = cast<AxisListAttr>(axes);
      continue;
    }
    return parser.emitError(loc, "expected 'halo = [[lo, hi], ...]' or "
                                 "'partial = kind[axes]' (in that order, "
                                 "each at most once), got '")
               << keyword << "'",
           Attribute();
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(parser.getContext(), mesh, dims,
                                         partialAxes, partialKind,
                                         normalHalo(halo));
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printer.printAttributeWithoutType(getMesh());
  printer << ", ";
  printDimAxes(printer, getDims());
  if (hasHalo()) {
    printer << ", halo = [";
    for (unsigned d = 0; d < getRank(); ++d) {
      auto [lo, hi] = getDimHalo(d);
      printer << (d ? ", [" : "[") << lo << ", " << hi << ']';
    }
    printer << ']';
  }
  if (isPartial()) {
    printer << ", partial = ";
    printPartialKindKeyword(printer, getPartialKind());
    getPartialAxes().print(printer);
  }
  printer << '>';
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
                                   ReductionKind partialKind,
                                   ArrayRef<int64_t> halo) {
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
  if (halo.empty())
    return success();
  if (halo.size() != 2 * dims.size())
    return emitError() << "halo has " << halo.size() / 2 << " [lo, hi] pairs "
                       << "but the sharding has " << dims.size()
                       << " dims; it needs one pair for each dim (S9)";
  for (auto [d, axes] : llvm::enumerate(dims)) {
    int64_t lo = halo[2 * d], hi = halo[2 * d + 1];
    if (lo < 0 || hi < 0)
      return emitError() << "halo widths of dim " << d
                         << " must be non-negative, got [" << lo << ", " << hi
                         << "] (S9)";
    if ((lo || hi) && axes && axes.empty())
      return emitError() << "dim " << d << " has a halo [" << lo << ", " << hi
                         << "] but no axis splits it (S9)";
  }
  return success();
}

LogicalResult mlir::mesh::verifySharding(Operation *op, ShardingAttr sharding,
                                         Type type, StringRef what,
                                         SymbolTableCollection *symbolTables) {
  // Attributes built in C++ without getChecked reach here unverified.
  if (failed(ShardingAttr::verify(
          [&] { return op->emitOpError() << what << ": "; }, sharding.getMesh(),
          sharding.getDims(), sharding.getPartialAxes(),
          sharding.getPartialKind(), sharding.getHalo())))
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
  for (unsigned d = 0; d < sharding.getRank() && sharding.hasHalo(); ++d) {
    auto [lo, hi] = sharding.getDimHalo(d);
    SmallVector<StringRef> axes = sharding.getDimAxes(d).getNames();
    int64_t size = cast<RankedTensorType>(type).getDimSize(d);
    int64_t n = mesh->getGroupSize(axes);
    if ((!lo && !hi) || ShapedType::isDynamic(size) || ShapedType::isDynamic(n))
      continue;
    if (size < lo + hi || (size - lo - hi) % n != 0)
      return op->emitOpError() << what << ": dim " << d << " of size " << size
                               << " less its halo [" << lo << ", " << hi
                               << "] does not divide by the " << n
                               << " devices of its axes (S10)";
    int64_t block = (size - lo - hi) / n;
    if (lo > block || hi > block)
      return op->emitOpError()
             << what << ": the halo [" << lo << ", " << hi << "] of dim " << d
             << " is wider than the " << block
             << " elements each device owns; a halo comes from the "
                "neighbouring devices only (S10)";
  }
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

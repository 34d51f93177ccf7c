//===- ReportCommunication.cpp - the collectives a program runs -----------===//
//
// Lists the collectives of each function of a per-device program with the
// bytes each device sends, so that plans can be compared (by a person or a
// test). Nothing is rewritten.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_REPORTCOMMUNICATION
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// What one collective moves; unknown counts are std::nullopt.
struct Traffic {
  std::optional<int64_t> elements, bytes, bytesPerDevice;
};

/// The bytes each device sends for `op` on an input of `bytes` bytes in a
/// group of `n` (see the pass description): the resharding planner's prices
/// for the collectives it plans.
int64_t bytesSentPerDevice(Operation *op, int64_t bytes, int64_t n) {
  using Kind = ReshardStep::Kind;
  if (isa<BroadcastOp, PermuteOp>(op))
    return n > 1 ? bytes : 0;
  Kind kind = TypeSwitch<Operation *, Kind>(op)
                  .Case([](AllReduceOp) { return Kind::AllReduce; })
                  .Case([](ReduceScatterOp) { return Kind::ReduceScatter; })
                  .Case([](AllGatherOp) { return Kind::AllGather; })
                  .Case([](AllToAllOp) { return Kind::AllToAll; })
                  .Default([](Operation *) { return Kind::AllSlice; });
  return getStepBytesPerDevice(kind, bytes, n);
}

/// The data rows of a padded all_gather, reduce_scatter or all_to_all and
/// the rows of the dim they are in (0, 0 for any other collective).
std::pair<int64_t, int64_t> paddedShare(Operation *op) {
  if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    if (std::optional<int64_t> v = a2a.getSplitValid())
      return {*v, cast<ShapedType>(a2a.getInput().getType())
                      .getDimSize(a2a.getSplitDim())};
    if (std::optional<int64_t> v = a2a.getConcatValid())
      return {*v, cast<ShapedType>(a2a.getResult().getType())
                      .getDimSize(a2a.getConcatDim())};
  }
  if (auto gather = dyn_cast<AllGatherOp>(op); gather && gather.getValid())
    return {*gather.getValid(), cast<ShapedType>(gather.getResult().getType())
                                    .getDimSize(gather.getGatherDim())};
  if (auto scatter = dyn_cast<ReduceScatterOp>(op);
      scatter && scatter.getValid())
    return {*scatter.getValid(), cast<ShapedType>(scatter.getInput().getType())
                                     .getDimSize(scatter.getScatterDim())};
  return {0, 0};
}

Traffic measure(CollectiveOpInterface op) {
  Traffic t;
  auto type = dyn_cast<ShapedType>(op->getOperand(0).getType());
  if (!type || !type.hasStaticShape())
    return t;
  t.elements = type.getNumElements();
  t.bytes = *t.elements * getElementBytes(type.getElementType());
  if (std::optional<int64_t> n = getStaticGroupSize(op))
    t.bytesPerDevice = bytesSentPerDevice(op, *t.bytes, *n);
  // A padded gather, scatter or all_to_all sends its data only: on average
  // over the group, that share of the blocks.
  if (auto [valid, size] = paddedShare(op); t.bytesPerDevice && size > 0)
    t.bytesPerDevice = *t.bytesPerDevice * valid / size;
  return t;
}

void printCount(raw_ostream &os, std::optional<int64_t> count) {
  if (count)
    os << *count;
  else
    os << '?';
}

void report(FunctionOpInterface fn, raw_ostream &os) {
  os << "communication of @" << fn.getName() << ":\n";
  int64_t count = 0, total = 0, unknown = 0;
  fn.walk([&](CollectiveOpInterface op) {
    Traffic t = measure(op);
    ++count;
    os << "  " << op->getName().stripDialect() << " on " << op.getMeshAttr()
       << " axes [";
    llvm::interleaveComma(op.getAxisNames(), os,
                          [&](StringRef a) { os << '"' << a << '"'; });
    os << "]: ";
    printCount(os, t.elements);
    os << " x "
       << cast<ShapedType>(op->getOperand(0).getType()).getElementType()
       << " (";
    printCount(os, t.bytes);
    os << " bytes), ";
    printCount(os, t.bytesPerDevice);
    os << " bytes per device";
    if (auto [valid, size] = paddedShare(op); size > 0)
      os << " (data in " << valid << " of " << size << " rows)";
    os << "\n";
    if (t.bytesPerDevice)
      total += *t.bytesPerDevice;
    else
      ++unknown;
  });
  os << "  total: " << count
     << (count == 1 ? " collective, " : " collectives, ") << total
     << " bytes per device";
  if (unknown)
    os << " (" << unknown << " of unknown size not counted)";
  os << "\n";
}

struct ReportCommunicationPass
    : public mesh::impl::ReportCommunicationBase<ReportCommunicationPass> {
  using ReportCommunicationBase::ReportCommunicationBase;
  void runOnOperation() override {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file;
    if (output != "-") {
      file = openOutputFile(output, &error);
      if (!file) {
        getOperation().emitError()
            << "cannot write the communication report: " << error;
        return signalPassFailure();
      }
    }
    raw_ostream &os = file ? file->os() : llvm::errs();
    getOperation().walk([&](FunctionOpInterface fn) {
      if (!fn.isExternal())
        report(fn, os);
    });
    if (file)
      file->keep();
    markAllAnalysesPreserved();
  }
};

} // namespace

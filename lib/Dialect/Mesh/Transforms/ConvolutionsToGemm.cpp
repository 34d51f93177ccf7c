//===- ConvolutionsToGemm.cpp - convolutions as an im2col copy and a GEMM -===//
//
// A 2-D convolution lowered as it is becomes seven nested scalar loops: on
// one CPU thread a 3x3, 64-channel layer ran 34x slower than PyTorch. The
// per-device program's convolutions (after partitioning, which needs them as
// convolutions to exchange halos) become MLIR's im2col form instead
// (linalg::rewriteInIm2Col): a copy of each output position's input window
// into a row of a matrix, then one contraction of that matrix with the
// filter, which mesh-linalg-to-blas (host) or mesh-gpu-linalg-to-cublas
// (GPU) makes a GEMM call. The copy itself is replaced by one whose loops
// are the input's indices plus the window's (windowCopy): upstream's
// divides a flat index per element and does not vectorise.
//
// The matrix holds every input element once per filter tap it meets
// (KH x KW times the input for a stride of 1), so the convolution is first
// tiled, when it would exceed `max-columns-bytes`, over its images and then
// its output rows (scf.for, tiles that divide the sizes), each tile with a
// matrix of its own within the bound.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_CONVOLUTIONSTOGEMM
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// Whether `op` is a convolution rewriteInIm2Col takes.
bool isIm2ColConvolution(Operation *op) {
  return isa<linalg::Conv2DNhwcHwcfOp, linalg::Conv2DNhwcFhwcOp,
             linalg::Conv2DNchwFchwOp>(op);
}

/// The rewrite of one convolution (one of isIm2ColConvolution's ops).
FailureOr<std::pair<Operation *, Operation *>>
rewriteConvolution(RewriterBase &rewriter, Operation *op) {
  if (auto conv = dyn_cast<linalg::Conv2DNhwcHwcfOp>(op))
    return linalg::rewriteInIm2Col(rewriter, conv);
  if (auto conv = dyn_cast<linalg::Conv2DNhwcFhwcOp>(op))
    return linalg::rewriteInIm2Col(rewriter, conv);
  return linalg::rewriteInIm2Col(rewriter, cast<linalg::Conv2DNchwFchwOp>(op));
}

/// What the im2col copy of a convolution reads: its input, strides and
/// window, and whether its layout is NCHW (else NHWC).
struct Window {
  Value input;
  int64_t strides[2];
  int64_t kh, kw;
  bool nchw;
};

Window windowOf(Operation *conv) {
  Window w;
  w.input = conv->getOperand(0);
  auto strides = conv->getAttrOfType<DenseIntElementsAttr>("strides");
  llvm::copy(strides.getValues<int64_t>(), w.strides);
  w.nchw = isa<linalg::Conv2DNchwFchwOp>(conv);
  // Filters: HWCF [KH, KW, C, F], FHWC [F, KH, KW, C], FCHW [F, C, KH, KW].
  ArrayRef<int64_t> f =
      cast<RankedTensorType>(conv->getOperand(1).getType()).getShape();
  unsigned at = isa<linalg::Conv2DNhwcHwcfOp>(conv) ? 0 : w.nchw ? 2 : 1;
  w.kh = f[at];
  w.kw = f[at + 1];
  return w;
}

/// The im2col matrix as upstream's `columns` op makes it, [N, OH*OW,
/// KH*KW*C] for NHWC input and [N, C*KH*KW, OH*OW] for NCHW, but copied by
/// a 6-D generic whose indices are the input's plus the window's offsets
/// (NHWC: (n, oh, ow, kh, kw, c) reads x[n, oh*sh + kh, ow*sw + kw, c]),
/// then collapsed. Upstream's copy decomposes a flat column index with a
/// division and a remainder per element, which keeps its loop scalar: it
/// took as long as the GEMM.
Value windowCopy(RewriterBase &rewriter, const Window &w, Operation *columns) {
  auto inType = cast<RankedTensorType>(w.input.getType());
  ArrayRef<int64_t> in = inType.getShape();
  const int64_t *s = w.strides;
  MLIRContext *ctx = columns->getContext();
  AffineExpr d[6];
  bindDims(ctx, d[0], d[1], d[2], d[3], d[4], d[5]);
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> read;
  SmallVector<ReassociationIndices> groups;
  if (w.nchw) {
    // (n, c, kh, kw, oh, ow) -> x[n, c, oh*sh + kh, ow*sw + kw].
    shape = {in[0],
             in[1],
             w.kh,
             w.kw,
             (in[2] - w.kh) / s[0] + 1,
             (in[3] - w.kw) / s[1] + 1};
    read = {d[0], d[1], d[4] * s[0] + d[2], d[5] * s[1] + d[3]};
    groups = {{0}, {1, 2, 3}, {4, 5}};
  } else {
    shape = {
        in[0], (in[1] - w.kh) / s[0] + 1, (in[2] - w.kw) / s[1] + 1, w.kh, w.kw,
        in[3]};
    read = {d[0], d[1] * s[0] + d[3], d[2] * s[1] + d[4], d[5]};
    groups = {{0}, {1, 2}, {3, 4, 5}};
  }
  Location loc = columns->getLoc();
  rewriter.setInsertionPoint(columns);
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, shape, inType.getElementType());
  auto copy = linalg::GenericOp::create(
      rewriter, loc, empty.getType(), ValueRange{w.input}, ValueRange{empty},
      ArrayRef<AffineMap>{AffineMap::get(6, 0, read, ctx),
                          AffineMap::getMultiDimIdentityMap(6, ctx)},
      SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, args[0]);
      });
  return tensor::CollapseShapeOp::create(
      rewriter, loc, cast<RankedTensorType>(columns->getResult(0).getType()),
      copy.getResult(0), groups);
}

/// ", in tiles of 1 image by 4 output rows".
std::string tileDescription(int64_t images, int64_t rows) {
  return llvm::formatv(", in tiles of {0} image{1} by {2} output row{3}",
                       images, images == 1 ? "" : "s", rows,
                       rows == 1 ? "" : "s")
      .str();
}

/// The largest divisor of `n` that is at most `limit` (at least 1).
int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, std::max<int64_t>(limit, 1)); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

struct ConvolutionsToGemmPass
    : public mesh::impl::ConvolutionsToGemmBase<ConvolutionsToGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> convs;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (isIm2ColConvolution(op))
        convs.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp conv : convs)
      if (std::optional<std::string> why = rewrite(rewriter, conv);
          why && report)
        conv->emitRemark() << "kept as a convolution: " << *why;
  }

  /// Rewrites `conv`, or says why not.
  std::optional<std::string> rewrite(RewriterBase &rewriter,
                                     linalg::LinalgOp conv) {
    if (!conv.hasPureTensorSemantics())
      return "not on tensors";
    Type element = getElementTypeOrSelf(conv->getResult(0).getType());
    for (Value operand : conv->getOperands())
      if (getElementTypeOrSelf(operand.getType()) != element)
        return std::string("mixed element types");
    if (!isa<Float16Type, BFloat16Type, Float32Type, Float64Type>(element))
      return llvm::formatv("element type {0} (the GEMM takes f16, bf16, f32 "
                           "and f64)",
                           element)
          .str();
    if (conv.hasDynamicShape())
      return std::string("a dynamic shape");
    FailureOr<linalg::ConvolutionDimensions> dims =
        linalg::inferConvolutionDims(conv);
    if (failed(dims) || dims->batch.size() != 1 ||
        dims->outputImage.size() != 2)
      return std::string("not one batch dim and two image dims");
    if (llvm::any_of(dims->dilations, [](int64_t d) { return d != 1; }))
      return std::string("a dilation other than 1 (MLIR's im2col takes "
                         "unit dilations)");
    SmallVector<int64_t> sizes = conv.getStaticLoopRanges();
    // The matrix's elements per output row of one image: its columns
    // (filter taps times input channels) times the row's positions.
    int64_t perRow = sizes[dims->outputImage[1]];
    for (unsigned d :
         llvm::concat<unsigned>(dims->filterLoop, dims->inputChannel))
      perRow *= sizes[d];
    int64_t bytes = element.getIntOrFloatBitWidth() / 8;
    int64_t rowsAllowed =
        maxColumnsBytes / std::max<int64_t>(perRow * bytes, 1);
    unsigned n = dims->batch[0], oh = dims->outputImage[0];
    int64_t perImage = sizes[oh];
    SmallVector<int64_t> tile(sizes.size(), 0);
    if (rowsAllowed < sizes[n] * perImage) {
      if (rowsAllowed >= perImage) {
        tile[n] = largestDivisorAtMost(sizes[n], rowsAllowed / perImage);
      } else {
        tile[n] = 1;
        tile[oh] = largestDivisorAtMost(perImage, rowsAllowed);
      }
    }
    Operation *target = conv;
    if (llvm::any_of(tile, [](int64_t t) { return t != 0; })) {
      FailureOr<Operation *> tiled = tileOver(rewriter, conv, tile);
      if (failed(tiled))
        return std::string("tiling failed");
      target = *tiled;
    }
    Location loc = target->getLoc();
    Window window = windowOf(target);
    rewriter.setInsertionPoint(target);
    FailureOr<std::pair<Operation *, Operation *>> rewritten =
        rewriteConvolution(rewriter, target);
    if (failed(rewritten))
      return std::string("the im2col rewrite failed");
    Operation *columns = rewritten->first;
    Value unused = columns->getOperand(columns->getNumOperands() - 1);
    rewriter.replaceOp(columns, windowCopy(rewriter, window, columns));
    if (unused.use_empty() && unused.getDefiningOp<tensor::EmptyOp>())
      rewriter.eraseOp(unused.getDefiningOp());
    if (report)
      emitRemark(loc) << "as an im2col copy and a contraction"
                      << (target == conv.getOperation()
                              ? std::string()
                              : tileDescription(tile[n], tile[oh] ? tile[oh]
                                                                  : perImage));
    return std::nullopt;
  }

  /// Tiles `conv` with scf.for over the loops `tile` gives a size (0: whole)
  /// and returns the tiled convolution.
  static FailureOr<Operation *> tileOver(RewriterBase &rewriter,
                                         linalg::LinalgOp conv,
                                         ArrayRef<int64_t> tile) {
    scf::SCFTilingOptions options;
    options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
    options.setTileSizes(getAsIndexOpFoldResult(conv->getContext(), tile));
    auto tileable = dyn_cast<TilingInterface>(conv.getOperation());
    if (!tileable)
      return failure(); // The tool did not register linalg's tiling.
    rewriter.setInsertionPoint(conv);
    FailureOr<scf::SCFTilingResult> result =
        scf::tileUsingSCF(rewriter, tileable, options);
    if (failed(result) || result->tiledOps.size() != 1 ||
        !isIm2ColConvolution(result->tiledOps.front()))
      return failure();
    rewriter.replaceOp(conv, result->replacements);
    return result->tiledOps.front();
  }
};

} // namespace

//===- RuntimeABI.cpp - the runtime's C ABI as compiled code calls it -----===//
//
// Derives the LLVM type of each runtime entry from its C declaration in
// meshrt.h, checks at compile time that each collective's stream-ordered
// twin takes its parameters plus the stream, and declares and calls the
// entries in a module.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/RuntimeABI.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

#include "llvm/ADT/SmallString.h"

using namespace mlir;
using namespace mlir::mesh;

namespace {

template <typename T> struct AlwaysFalse : std::false_type {};

/// The LLVM type of the C parameter or result type `T`.
template <typename T> Type getLLVMType(MLIRContext *ctx) {
  if constexpr (std::is_void_v<T>)
    return LLVM::LLVMVoidType::get(ctx);
  else if constexpr (std::is_pointer_v<T>)
    return LLVM::LLVMPointerType::get(ctx);
  else if constexpr ((std::is_integral_v<T> && !std::is_same_v<T, bool>) ||
                     std::is_enum_v<T>)
    return IntegerType::get(ctx, 8 * sizeof(T));
  else
    static_assert(AlwaysFalse<T>::value,
                  "a runtime entry takes or returns a type that this table "
                  "cannot map to LLVM; add the mapping here");
}

/// The LLVM function type of the C function type `Fn`.
template <typename Fn> struct LLVMFunctionTypeOf;
template <typename R, typename... Params>
struct LLVMFunctionTypeOf<R(Params...)> {
  static LLVM::LLVMFunctionType get(MLIRContext *ctx) {
    return LLVM::LLVMFunctionType::get(getLLVMType<R>(ctx),
                                       {getLLVMType<Params>(ctx)...});
  }
};

/// The LLVM function type of each entry, in RuntimeEntry order.
using TypeBuilder = LLVM::LLVMFunctionType (*)(MLIRContext *);
constexpr TypeBuilder kTypeBuilders[] = {
#define MESHRT_ENTRY(name)                                                     \
  &LLVMFunctionTypeOf<RuntimeEntryType<RuntimeEntry::name>>::get,
#include "mesh/Conversion/RuntimeEntryPoints.def"
};
static_assert(std::size(kTypeBuilders) == kNumRuntimeEntries);

/// `Fn` with one more parameter, `Extra`, at the end.
template <typename Fn, typename Extra> struct WithTrailingParam;
template <typename R, typename... Params, typename Extra>
struct WithTrailingParam<R(Params...), Extra> {
  using type = R(Params..., Extra);
};

// The lowering passes a stream-ordered collective the arguments of the
// blocking one, then the stream.
#define MESHRT_COLLECTIVE(name)                                                \
  static_assert(                                                               \
      std::is_same_v<decltype(::name##_on_stream),                             \
                     WithTrailingParam<decltype(::name), void *>::type>,       \
      #name "_on_stream must take the parameters of " #name                    \
            ", then the stream");
#include "mesh/Conversion/RuntimeEntryPoints.def"

/// The entry called `name`, if any.
std::optional<RuntimeEntry> lookupRuntimeEntry(StringRef name) {
  for (unsigned i = 0; i < kNumRuntimeEntries; ++i)
    if (name == abi_detail::kRuntimeEntryNames[i])
      return static_cast<RuntimeEntry>(i);
  return std::nullopt;
}

/// Aborts the program with a message when `status` is not success.
void emitStatusCheck(OpBuilder &b, Location loc, Value status,
                     const Twine &what) {
  Value zero = LLVM::ConstantOp::create(b, loc, status.getType(),
                                        b.getI32IntegerAttr(0));
  Value ok =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, status, zero);
  SmallString<128> message;
  llvm::raw_svector_ostream os(message);
  os << "mesh runtime: " << what << " failed (meshrt_last_error() says why)";
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    os << " at " << fileLoc.getFilename().getValue() << ":" << fileLoc.getLine()
       << ":" << fileLoc.getColumn();
  cf::AssertOp::create(b, loc, ok, message);
}

} // namespace

LLVM::LLVMFunctionType mlir::mesh::getRuntimeEntryType(MLIRContext *ctx,
                                                       RuntimeEntry entry) {
  return kTypeBuilders[static_cast<unsigned>(entry)](ctx);
}

LogicalResult RuntimeFunctions::verifyDeclarations(StringRef passName) {
  for (Operation &op : module.getBody()->getOperations()) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (!symbol || !symbol.getName().starts_with("meshrt_"))
      continue;
    auto fn = dyn_cast<LLVM::LLVMFuncOp>(op);
    if (!fn)
      return op.emitError() << passName << ": the symbol '" << symbol.getName()
                            << "' is reserved for the mesh runtime";
    std::optional<RuntimeEntry> entry = lookupRuntimeEntry(fn.getName());
    if (!entry)
      continue;
    LLVM::LLVMFunctionType expected =
        getRuntimeEntryType(module.getContext(), *entry);
    if (fn.getFunctionType() != expected)
      return fn.emitError() << passName << ": '" << fn.getName()
                            << "' is declared as " << fn.getFunctionType()
                            << ", but meshrt.h declares it as " << expected;
  }
  return success();
}

LLVM::LLVMFuncOp RuntimeFunctions::get(OpBuilder &b, RuntimeEntry entry) {
  LLVM::LLVMFuncOp &fn = declared[static_cast<unsigned>(entry)];
  if (fn)
    return fn;
  StringRef name = getRuntimeEntryName(entry);
  fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (fn)
    return fn;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  fn =
      LLVM::LLVMFuncOp::create(b, module.getLoc(), name,
                               getRuntimeEntryType(module.getContext(), entry));
  fn.setPrivate();
  return fn;
}

void RuntimeFunctions::callChecked(OpBuilder &b, Location loc,
                                   RuntimeEntry entry, ValueRange args,
                                   const Twine &what) {
  Value status = LLVM::CallOp::create(b, loc, get(b, entry), args).getResult();
  emitStatusCheck(b, loc, status, what);
}

std::optional<int32_t> mlir::mesh::getRuntimeDtype(Type type) {
  if (type.isF16())
    return MESHRT_F16;
  if (type.isBF16())
    return MESHRT_BF16;
  if (type.isF32())
    return MESHRT_F32;
  if (type.isF64())
    return MESHRT_F64;
  if (type.isIndex())
    return MESHRT_I64; // index buffers lower to 64-bit elements.
  if (auto i = dyn_cast<IntegerType>(type)) {
    if (i.getWidth() == 8)
      return i.isUnsigned() ? MESHRT_U8 : MESHRT_I8;
    if (i.getWidth() == 32 && !i.isUnsigned())
      return MESHRT_I32;
    if (i.getWidth() == 64 && !i.isUnsigned())
      return MESHRT_I64;
  }
  return std::nullopt;
}

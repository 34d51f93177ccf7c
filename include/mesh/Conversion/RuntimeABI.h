//===- RuntimeABI.h - the runtime's C ABI for compiled code -----*- C++ -*-===//
//
// The one table of runtime functions the conversions call
// (RuntimeEntryPoints.def), with their types taken from the C declarations in
// runtime/include/meshrt/meshrt.h, and the declaration and checked call of
// those functions in a module.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_CONVERSION_RUNTIMEABI_H
#define MESH_CONVERSION_RUNTIMEABI_H

#include "meshrt/meshrt.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include <array>
#include <iterator>
#include <optional>
#include <type_traits>

namespace mlir {
namespace mesh {

/// A function of the runtime's C ABI that compiled code calls, named as in C.
enum class RuntimeEntry : unsigned {
#define MESHRT_ENTRY(name) name,
#include "mesh/Conversion/RuntimeEntryPoints.def"
};

namespace abi_detail {
/// The C names of the entries, in RuntimeEntry order.
inline constexpr const char *kRuntimeEntryNames[] = {
#define MESHRT_ENTRY(name) #name,
#include "mesh/Conversion/RuntimeEntryPoints.def"
};

/// The result and the number of parameters of a C function type.
template <typename Fn> struct CFunction;
template <typename R, typename... Params> struct CFunction<R(Params...)> {
  using Result = R;
  static constexpr size_t arity = sizeof...(Params);
};

/// The C function type of an entry, as meshrt.h declares it.
template <RuntimeEntry entry> struct EntryDeclaration;
#define MESHRT_ENTRY(name)                                                     \
  template <> struct EntryDeclaration<RuntimeEntry::name> {                    \
    using type = decltype(::name);                                             \
  };
#include "mesh/Conversion/RuntimeEntryPoints.def"
} // namespace abi_detail

/// The number of runtime entries.
inline constexpr size_t kNumRuntimeEntries =
    std::size(abi_detail::kRuntimeEntryNames);

/// The C function type of `entry`, as meshrt.h declares it.
template <RuntimeEntry entry>
using RuntimeEntryType = typename abi_detail::EntryDeclaration<entry>::type;

/// Fails to compile unless a call of `entry` with `numArgs` arguments fits
/// its declaration in meshrt.h and returns a meshrt_status: every call the
/// conversions emit is checked so, and a parameter added to or removed from
/// the header breaks the build instead of the generated code.
template <RuntimeEntry entry, size_t numArgs>
constexpr void checkRuntimeCall() {
  using Fn = abi_detail::CFunction<RuntimeEntryType<entry>>;
  static_assert(Fn::arity == numArgs,
                "the arguments must be the parameters meshrt.h declares");
  static_assert(std::is_same_v<typename Fn::Result, meshrt_status>,
                "a checked runtime call needs a meshrt_status result");
}

/// The symbol name of `entry`.
constexpr StringRef getRuntimeEntryName(RuntimeEntry entry) {
  return abi_detail::kRuntimeEntryNames[static_cast<unsigned>(entry)];
}

/// The stream-ordered twin of the collective `entry` (meshrt_X_on_stream for
/// meshrt_X), if it has one.
constexpr std::optional<RuntimeEntry> getStreamOrderedTwin(RuntimeEntry entry) {
  switch (entry) {
#define MESHRT_COLLECTIVE(name)                                                \
  case RuntimeEntry::name:                                                     \
    return RuntimeEntry::name##_on_stream;
#include "mesh/Conversion/RuntimeEntryPoints.def"
  default:
    return std::nullopt;
  }
}

/// The runtime's dtype (meshrt_dtype) for the element type `type`, if it
/// has one.
std::optional<int32_t> getRuntimeDtype(Type type);

/// The LLVM function type of `entry`, derived from its C declaration
/// (pointers are !llvm.ptr, integers and enums iN of their size).
LLVM::LLVMFunctionType getRuntimeEntryType(MLIRContext *ctx,
                                           RuntimeEntry entry);

/// The declarations of the runtime entries in one module, each made once, on
/// first use, and the calls to them that check the returned status.
class RuntimeFunctions {
public:
  explicit RuntimeFunctions(ModuleOp module) : module(module) {}

  /// Fails, after an error that starts with `passName`, when a symbol of the
  /// module whose name starts with meshrt_ is no llvm.func, or declares a
  /// runtime entry with another type than meshrt.h's.
  LogicalResult verifyDeclarations(StringRef passName);

  /// The declaration of `entry` in the module: the existing one, or a new
  /// private llvm.func at the start of the module body.
  LLVM::LLVMFuncOp get(OpBuilder &b, RuntimeEntry entry);

  /// Calls `entry` with `args`. The program aborts (cf.assert) when the call
  /// returns a non-zero status, with the message "mesh runtime: `what`
  /// failed (...)" and the source location of `loc`.
  void callChecked(OpBuilder &b, Location loc, RuntimeEntry entry,
                   ValueRange args, const Twine &what);

  /// callChecked, with the number of arguments checked against meshrt.h at
  /// compile time. The arguments are a braced list, built in order.
  template <RuntimeEntry entry, size_t numArgs>
  void callChecked(OpBuilder &b, Location loc, const Twine &what,
                   const Value (&args)[numArgs]) {
    checkRuntimeCall<entry, numArgs>();
    callChecked(b, loc, entry, ArrayRef<Value>(args), what);
  }

  /// callChecked, its failure message naming the entry.
  template <RuntimeEntry entry, size_t numArgs>
  void callChecked(OpBuilder &b, Location loc, const Value (&args)[numArgs]) {
    callChecked<entry>(b, loc, getRuntimeEntryName(entry), args);
  }

private:
  ModuleOp module;
  std::array<LLVM::LLVMFuncOp, kNumRuntimeEntries> declared = {};
};

} // namespace mesh
} // namespace mlir

#endif // MESH_CONVERSION_RUNTIMEABI_H

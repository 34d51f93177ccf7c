//===- ShardingSupport.h - shared by propagation and partition --*- C++ -*-===//
//
// Private to the two passes: how they see an op (by interface, never by
// name), the tied values of region ops, the rules of many ops kept once,
// caches of meshes and projections, and the one derivation of an op's factor
// assignment from the shardings of its values.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_LIB_DIALECT_MESH_TRANSFORMS_SHARDINGSUPPORT_H
#define MESH_LIB_DIALECT_MESH_TRANSFORMS_SHARDINGSUPPORT_H

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/ShardingRuleModels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir {
namespace mesh {

/// Rewrites each circular pad written as slices and a tensor.concat (how
/// torch-mlir decomposes PyTorch's pad(mode="circular")) among `concats`
/// into one mesh.circular_pad, whose halos can wrap around the devices.
void raiseCircularPads(ArrayRef<Operation *> concats);

/// A linalg op's loop that an input reads through a window (a valid
/// convolution's output rows), whose input dim is split over `devices` in
/// blocks the loop's blocks do not match (16 rows over 4, 14 outputs): the
/// loop is padded to `size`, so that each device's block of the loop reads
/// its block of the input and a halo after it.
struct UnevenWindow {
  Operation *op;
  unsigned loop;
  int64_t size;
  int64_t devices;
  /// The axes that split the input's dim (for the remark).
  Attribute axes;
};

/// Whether some indexing map of `op` is not a projected permutation: an
/// operand read through a window (a convolution's `s * oh + kh`) or
/// otherwise than by plain loop dims.
bool hasWindowedOperand(linalg::LinalgOp op);

/// The coefficient of loop `loop` in `e`, a result of `map`, when `e` is an
/// affine sum of loops and a constant (none for a floordiv or a mod).
std::optional<int64_t> getLoopCoefficient(AffineMap map, AffineExpr e,
                                          unsigned loop);

/// Whether `slice` is one padding made to give an op a padded value's size
/// back: a prefix of a static source (offsets 0, strides 1, no dim
/// dropped), which holds the same elements and padding after them.
bool isPaddingSlice(tensor::ExtractSliceOp slice);

/// Removes the marks padding leaves on the slices and pads it makes (for
/// later rounds of propagation) once propagation is done.
void stripPaddingMarks(ModuleOp module);

/// The attribute with which padding tells partitioning the sizes of a padded
/// value's data: on an op, an array with one `array<i64>` for each result
/// (empty where the result holds no padding); on a function, the same for
/// its arguments (arguments take dialect attributes only). A dim of 10
/// padded to 12 has 10.
inline constexpr llvm::StringLiteral kDataSizesName = "mesh_data_sizes";

/// The sizes of `v`'s data without its padding (see kDataSizesName), for a
/// value padding made or retyped: an op's result, a function's argument, a
/// loop's region argument (its result's); empty where none is known.
SmallVector<int64_t> getDataSizes(Value v);

/// Removes kDataSizesName from `fn` and its ops (nothing to do unless `fn`
/// has it: padding marks the function whenever it records sizes in it).
void stripDataSizes(FunctionOpInterface fn);

/// `windows`, if padding them succeeds on a copy of `module` (no reduction
/// it cannot mask, no dims of other sizes, valid IR), else none.
SmallVector<UnevenWindow> paddableWindows(ModuleOp module,
                                          ArrayRef<UnevenWindow> windows);

/// Pads each static dim that an annotation of `module` splits over devices
/// that do not divide it to the next multiple (PadToDivide.cpp says how the
/// program is rewritten), with a remark for each; and so the results of
/// each op of `windows` along its loop, with the inputs it reads through
/// the window. Fails, with an error, when a padded dim reaches a reduction
/// it cannot mask.
LogicalResult padNonDividingDims(ModuleOp module, SymbolTableCollection &tables,
                                 ArrayRef<UnevenWindow> windows = {});

/// Rewrites the linalg ops on the merged side of each reshape among
/// `reshapes` (ones propagation found lossy: a merged group whose dims carry
/// more axes than the merged dim) on the unmerged dims, with what that
/// makes foldable (ExpandReshapes.cpp). Returns whether the program changed.
bool expandThroughReshapes(ArrayRef<Operation *> reshapes);

/// Drops the results nobody uses of each linalg.generic among `generics`
/// that carries no `mesh.sharding`, with the computation only they needed
/// (an argmax beside a max, and its linalg.index), by MLIR's own patterns.
void eraseUnusedLinalgResults(ArrayRef<Operation *> generics);

/// Answers computed once per key, for questions the passes ask per op (an
/// op name's role, a mesh by symbol, a group's size). The last answer for
/// each of N slots sits in front of the map: the questions come back in
/// short cycles (the names of a chain of ops, the axes of a value's dims),
/// and a hit costs a hash and a compare, where a DenseMap lookup costs
/// several times that.
template <typename K, typename V, unsigned N = 8> class MemoTable {
public:
  /// The answer for `key`, from `compute()` the first time it is asked.
  template <typename Compute> V get(const K &key, Compute &&compute) {
    Slot &slot = slots[llvm::DenseMapInfo<K>::getHashValue(key) % N];
    if (slot.full && slot.key == key)
      return slot.value;
    auto [it, inserted] = answers.try_emplace(key);
    if (inserted)
      it->second = compute();
    slot = {key, it->second, true};
    return it->second;
  }

private:
  DenseMap<K, V> answers;
  struct Slot {
    K key{};
    V value{};
    bool full = false;
  };
  Slot slots[N];
};

//===----------------------------------------------------------------------===//
// How the passes see an op
//===----------------------------------------------------------------------===//

/// The part an op plays for propagation and partitioning.
enum class OpRole : uint8_t {
  /// Has a sharding rule (ShardingRuleOpInterface or the Elementwise trait).
  Rule,
  /// Has none: its tensors are replicated.
  NoRule,
  /// `mesh.shard`: a constraint, resharded to.
  Shard,
  /// A call (CallOpInterface): its callee's signature is the contract.
  Call,
  /// The ReturnLike terminator of a function.
  FunctionReturn,
  /// A RegionBranchOpInterface op whose forwarded values all tie up.
  RegionBranch,
  /// A terminator that forwards values of a region-branch op: handled with
  /// its owner.
  RegionTerminator,
  /// A collective: already per device.
  PerDevice,
};

/// The warning for an op without a sharding rule that makes tensors: they
/// are replicated (propagation and mesh-auto-shard say it alike).
void warnNoShardingRule(Operation *op);

/// The role of each op. What depends on the op's name alone (its interfaces
/// and traits) is looked up once per name: the passes ask for every op of
/// programs of 50,000 ops, and an interface lookup per op and interface adds
/// up.
class OpClassifier {
public:
  /// The role of `op`; for OpRole::Rule, its rule is in a ShardingRuleTable.
  OpRole classify(Operation *op) {
    return getInfo(op).role == OpRole::Rule ? OpRole::Rule
                                            : classifySpecial(op);
  }
  /// True when `op` implements ShardingRuleOpInterface.
  bool hasRuleInterface(Operation *op) { return getInfo(op).ruleInterface; }

private:
  struct NameInfo {
    /// The role, unless the op's parent decides otherwise (below).
    OpRole role = OpRole::NoRule;
    /// ReturnLike: a FunctionReturn inside a function.
    bool returnLike = false;
    /// A RegionBranchTerminatorOpInterface: a RegionTerminator inside a
    /// region-branch op.
    bool branchTerminator = false;
    /// Implements ShardingRuleOpInterface.
    bool ruleInterface = false;
  };
  NameInfo getInfo(Operation *op);
  OpRole classifySpecial(Operation *op);
  /// Op name -> what it says of the op.
  MemoTable<const void *, NameInfo> byName;
};

/// Values of a region-branch op that must share one layout: an operand
/// passed in, the region arguments that receive it, the values terminators
/// pass on, and the results.
struct TiedGroup {
  /// Every member, in the order of the op's operands, then each region's
  /// arguments and terminator operands, then the results (an operand as its
  /// value; a value passed twice appears twice).
  SmallVector<Value> values;
  /// The forwarded operands: the op's own, then its terminators'.
  SmallVector<OpOperand *> operands;
  /// The region arguments and results that receive them.
  SmallVector<Value> inputs;
};

/// The tied groups of `op`, in the order of their first member. Fails when
/// a tensor region argument or result receives nothing the interface
/// describes.
FailureOr<SmallVector<TiedGroup>>
getTiedValueGroups(RegionBranchOpInterface op);

/// Where the partitioner puts a reshard of `v` that `where` needs: before
/// the outermost loop around `where` (directly, with no branch between)
/// that `v` is defined outside of, so that it runs once, not on every
/// iteration; else before `where`.
Operation *getReshardPoint(Value v, Operation *where);

/// The function `call` calls, if it can be found.
FunctionOpInterface getCallee(CallOpInterface call,
                              SymbolTableCollection &tables);

/// The annotation of result `result` of `op` (`mesh.sharding`: one
/// sharding, or an array with one per result), or null. `name` is
/// `mesh.sharding` as an attribute: looked up by it, the name is compared
/// by pointer, not spelling (in dictionaries of up to 16 attributes).
ShardingAttr getResultAnnotation(Operation *op, unsigned result,
                                 StringAttr name);

/// A hash of a short key of pointers and small numbers, for the passes'
/// caches: a few instructions an element, where llvm::hash_combine_range
/// costs a hundred or more for a key of four. The top bit is clear, so the
/// hash is never DenseMap's empty or tombstone key for `unsigned`.
inline unsigned hashPointerKey(ArrayRef<const void *> key) {
  uint64_t h = key.size();
  for (const void *p : key) {
    h = (h ^ reinterpret_cast<uintptr_t>(p)) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 32;
  }
  return static_cast<unsigned>(h) & 0x7fffffffu;
}

//===----------------------------------------------------------------------===//
// Factors and projections
//===----------------------------------------------------------------------===//

/// The axes each factor of a rule is sharded over (null: not sharded).
using FactorSharding = SmallVector<AxisListAttr, 8>;

/// The sharding on `mesh` of a value whose dims map to the factors `dims`
/// (-1: none), with the halos `halos` gives its sharded dims.
ShardingAttr projectFactors(FlatSymbolRefAttr mesh,
                            ArrayRef<AxisListAttr> factors,
                            ArrayRef<int64_t> dims,
                            ArrayRef<DimHalo> halos = {});

/// The sharding of an op result: the projection, partial over the axes of
/// the sharded reduction factors.
ShardingAttr projectResult(FlatSymbolRefAttr mesh, const ShardingRule &rule,
                           ArrayRef<AxisListAttr> factors,
                           ArrayRef<int64_t> dims,
                           ArrayRef<DimHalo> halos = {});

/// projectFactors and projectResult with a small cache in front: the ops of
/// a program tend to produce the same few shardings over and over, and a hit
/// costs a hash of a few pointers instead of two attribute uniquings.
class ShardingProjector {
public:
  /// projectFactors, cached.
  ShardingAttr project(FlatSymbolRefAttr mesh, ArrayRef<AxisListAttr> factors,
                       ArrayRef<int64_t> dims, ArrayRef<DimHalo> halos = {}) {
    return get(mesh, nullptr, factors, dims, halos);
  }
  /// projectResult, cached.
  ShardingAttr projectResult(FlatSymbolRefAttr mesh, const ShardingRule &rule,
                             ArrayRef<AxisListAttr> factors,
                             ArrayRef<int64_t> dims,
                             ArrayRef<DimHalo> halos = {}) {
    return get(mesh, &rule, factors, dims, halos);
  }

private:
  ShardingAttr get(FlatSymbolRefAttr mesh, const ShardingRule *rule,
                   ArrayRef<AxisListAttr> factors, ArrayRef<int64_t> dims,
                   ArrayRef<DimHalo> halos);
  struct Entry {
    SmallVector<const void *, 8> key;
    ShardingAttr value;
  };
  static constexpr unsigned kEntries = 64;
  Entry entries[kEntries];
};

//===----------------------------------------------------------------------===//
// Caches
//===----------------------------------------------------------------------===//

/// Hashes values by address, keeping their order: values made one after the
/// other land in nearby buckets, so the maps the passes fill and read in
/// program order stay in cache on programs of 50,000 ops (the default hash
/// scatters them over the whole table).
struct ValueAddressInfo : llvm::DenseMapInfo<Value> {
  static unsigned getHashValue(Value v) {
    return static_cast<unsigned>(
        reinterpret_cast<uintptr_t>(v.getAsOpaquePointer()) >> 4);
  }
};

/// Mesh lookups by symbol, cached per parent op (the passes ask once per
/// op), and group sizes per (mesh, axes).
class MeshCache {
public:
  explicit MeshCache(SymbolTableCollection &tables) : tables(tables) {}
  /// The mesh `ref` names, seen from `op` (null if there is none).
  MeshOp get(Operation *op, FlatSymbolRefAttr ref);
  /// The number of devices of `axes` on `mesh` (ShapedType::kDynamic when
  /// one is `?`), or std::nullopt when the mesh lacks one of them.
  std::optional<int64_t> getGroupSize(MeshOp mesh, AxisListAttr axes);

private:
  SymbolTableCollection &tables;
  /// (parent op, symbol) -> mesh; (mesh, axes) -> group size.
  MemoTable<std::pair<Operation *, Attribute>, MeshOp> meshes;
  MemoTable<std::pair<Operation *, Attribute>, std::optional<int64_t>>
      groupSizes;
};

/// For an annotation `s` of a value of type `type` (seen from `scope`): per
/// dim, the number of devices that split it when they do not divide its
/// static size, else 0; empty when every dim divides (or the sizes are not
/// known here).
SmallVector<int64_t> getUnevenSplits(MeshCache &meshes, Operation *scope,
                                     Type type, ShardingAttr s);

/// The rules of many ops, each distinct rule stored once: a chain of 50,000
/// elementwise ops on one shape has one rule. Ops whose rule is shared by
/// types (or by signature: types, properties and rule variant; see
/// RuleSharing) are looked up by those without deriving it again. The ops
/// given to add() must stay alive, their properties unchanged, while the
/// table is used.
class ShardingRuleTable {
public:
  /// The index of `op`'s rule, or std::nullopt when it has none.
  std::optional<unsigned> add(Operation *op);
  /// The rule at `index`.
  const ShardingRule &operator[](unsigned index) const { return rules[index]; }

private:
  std::optional<unsigned> intern(FailureOr<ShardingRule> rule);
  SmallVector<ShardingRule, 0> rules;
  /// Op name -> what its rules depend on beside it (asked once a name).
  MemoTable<const void *, RuleSharing> sharingByName;
  /// Hash of a rule -> indices of the rules with that hash.
  DenseMap<unsigned, SmallVector<unsigned, 1>> byHash;
  /// A signature (op name, operand types, result types) and its rule.
  struct SignatureEntry {
    SmallVector<const void *, 8> key;
    std::optional<unsigned> rule;
    /// For RuleSharing::Signature: the op the rule was derived from, whose
    /// properties a match must equal.
    Operation *derivedFrom;
  };
  /// Hash of a signature -> its entries.
  DenseMap<unsigned, SmallVector<SignatureEntry, 1>> bySignature;
};

//===----------------------------------------------------------------------===//
// The factor assignment of an op
//===----------------------------------------------------------------------===//

/// Which axes shard each factor of one op's rule, derived from the shardings
/// of its values: propagation gives it the shardings it knows, partitioning
/// the annotations of the op's results. The first sharding decides the mesh;
/// values on other meshes are ignored. A factor takes the axes of the first
/// dim mapped to it, unless it is blocked, one of the axes already shards
/// another factor, the mesh lacks one, or its size does not divide by the
/// axes' group size. A product of factors (a collapsed dim) has its parts'
/// axes; a dim mapped to it gives its axes to the parts, major first, each
/// split down to size 1 before the next takes any. A part takes axes only
/// where the product stays a block sharding.
class FactorAssignment {
public:
  FactorAssignment(const ShardingRule &rule, Operation *op, MeshCache &meshes)
      : rule(rule), op(op), meshes(meshes), factors(rule.factors.size()) {}

  /// Takes the axes of the dims of a value of type `type` sharded as `s`
  /// whose dims map to the factors `dims`.
  void takeDims(ShardingAttr s, ArrayRef<int64_t> dims, Type type);

  /// Gives the reduction factors the pending axes of a result sharded as
  /// `s`: each to the reduction factor one of whose operand dims is sharded
  /// over axes all pending in `s` (`operandSharding` gives the operands'
  /// shardings), the rest to the first free reduction factor.
  void takePartial(ShardingAttr s,
                   function_ref<ShardingAttr(unsigned)> operandSharding);

  /// The mesh, once a sharding on an existing mesh was taken.
  FlatSymbolRefAttr getMesh() const { return meshOp ? mesh : nullptr; }
  /// The axes of each factor.
  ArrayRef<AxisListAttr> getFactors() const { return factors; }

private:
  /// Decides the mesh on the first sharding; false for any other mesh.
  bool onMesh(ShardingAttr s);
  bool isUsed(AxisListAttr axes) const;
  void assign(unsigned factor, AxisListAttr axes);
  /// Splits `axes`, which shard a dim of `from` elements, over the parts of
  /// `product`, if they fit.
  void takeProduct(unsigned product, AxisListAttr axes, int64_t from);
  /// Gives `part` (of a product) `axes` over `devices` devices, if the
  /// product stays a block sharding.
  void takePart(unsigned part, AxisListAttr axes, int64_t devices);
  /// The product's axes: its parts', major first.
  void deriveProduct(unsigned product);

  const ShardingRule &rule;
  Operation *op;
  MeshCache &meshes;
  FlatSymbolRefAttr mesh;
  MeshOp meshOp;
  FactorSharding factors;
  /// Axes already given to a factor.
  SmallVector<StringAttr, 8> used;
};

/// The factor assignment of `op` that the annotations of its results
/// (`name`: `mesh.sharding`) say: each result's dims, then its pending
/// reductions (given to the reduction factors whose operands, as
/// `operandSharding` gives them, are split over those axes). The
/// partitioner runs an op so; mesh-auto-shard prices an annotated op so.
FactorAssignment
assignFactorsFromResults(const ShardingRule &rule, Operation *op,
                         MeshCache &meshes, StringAttr name,
                         function_ref<ShardingAttr(unsigned)> operandSharding);

// The methods called for every value of every op, defined here so that
// they inline into the passes' loops.

inline bool FactorAssignment::onMesh(ShardingAttr s) {
  if (!mesh) {
    mesh = s.getMesh();
    meshOp = meshes.get(op, mesh);
  }
  return meshOp && s.getMesh() == mesh;
}

inline bool FactorAssignment::isUsed(AxisListAttr axes) const {
  // Plain loops: the lists are short (a dim's axes; the axes of the op's
  // factors so far), and the generic algorithms cost more than the
  // compares.
  for (StringAttr a : axes.getAxes())
    for (StringAttr u : used)
      if (a == u)
        return true;
  return false;
}

LLVM_ATTRIBUTE_ALWAYS_INLINE void FactorAssignment::assign(unsigned factor,
                                                           AxisListAttr axes) {
  factors[factor] = axes;
  for (StringAttr a : axes.getAxes())
    used.push_back(a);
}

/// True when a group of `n` devices may shard `size` elements, the group
/// sharding a dim of `from` elements where it was found. A known group must
/// divide the size. A group of unknown size (a `?` axis) is trusted to
/// divide `from`, whose sharding says so, and so a multiple of it; an
/// unknown size is taken on trust (the partitioned program checks it).
inline bool mayShard(int64_t size, int64_t n, int64_t from) {
  if (ShapedType::isDynamic(size))
    return true;
  if (!ShapedType::isDynamic(n))
    return size % n == 0;
  return !ShapedType::isDynamic(from) && size % from == 0;
}

inline void FactorAssignment::takeDims(ShardingAttr s, ArrayRef<int64_t> dims,
                                       Type type) {
  if (!onMesh(s))
    return;
  ArrayRef<AxisListAttr> valueDims = s.getDims();
  auto tensor = dyn_cast<RankedTensorType>(type);
  for (auto [d, f] : llvm::enumerate(dims)) {
    if (f < 0 || d >= valueDims.size())
      continue;
    AxisListAttr axes = valueDims[d];
    const ShardingFactor &factor = rule.factors[f];
    if (axes.empty() || factors[f] || factor.blocked || isUsed(axes))
      continue;
    // The dim's size where the sharding was found (asked only for products
    // and `?` axes).
    auto from = [&, dim = d] {
      return tensor && dim < static_cast<size_t>(tensor.getRank())
                 ? tensor.getDimSize(dim)
                 : ShapedType::kDynamic;
    };
    if (factor.numParts) {
      takeProduct(f, axes, from());
      continue;
    }
    std::optional<int64_t> n = meshes.getGroupSize(meshOp, axes);
    if (!n ||
        !mayShard(factor.size, *n,
                  ShapedType::isDynamic(*n) ? from() : ShapedType::kDynamic))
      continue;
    // A factor with halos needs blocks long enough to hold them: its size
    // and group must be known.
    if (factor.maxHalo != 0 &&
        (ShapedType::isDynamic(factor.size) || ShapedType::isDynamic(*n) ||
         factor.size / *n < factor.maxHalo))
      continue;
    if (factor.product >= 0)
      takePart(f, axes, *n);
    else
      assign(f, axes);
  }
}

} // namespace mesh
} // namespace mlir

#endif // MESH_LIB_DIALECT_MESH_TRANSFORMS_SHARDINGSUPPORT_H

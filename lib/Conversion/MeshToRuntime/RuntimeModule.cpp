//===- RuntimeModule.cpp - what the runtime lowering patterns share -------===//
//
// Handles of meshes and communicators live in globals that one start-up
// function fills: every mesh is declared and every distinct (mesh, ordered
// axes) gets its communicator once, and a collective only loads its handle.
// The shut-down function finalizes the runtime, which frees them.
//
//===----------------------------------------------------------------------===//

#include "RuntimeModule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::mesh;

/// meshrt_mesh_declare's size of an axis it sizes from the world.
static constexpr int64_t kDynamicAxisSize = -1;

RuntimeModule::RuntimeModule(ModuleOp module, bool onStream)
    : module(module), ctx(module.getContext()),
      ptrType(LLVM::LLVMPointerType::get(ctx)),
      i32Type(IntegerType::get(ctx, 32)), i64Type(IntegerType::get(ctx, 64)),
      i8Type(IntegerType::get(ctx, 8)), onStream(onStream), functions(module) {}

//===----------------------------------------------------------------------===//
// Symbols and handles
//===----------------------------------------------------------------------===//

LogicalResult RuntimeModule::checkSymbols(StringRef initName,
                                          StringRef finiName,
                                          bool needInitAndFini) {
  if (initName.empty() || finiName.empty() || initName == finiName ||
      initName.starts_with("meshrt_") || finiName.starts_with("meshrt_"))
    return module.emitError()
           << "convert-mesh-to-runtime: init-symbol '" << initName
           << "' and fini-symbol '" << finiName
           << "' must be non-empty, distinct, and not start with meshrt_";
  if (failed(functions.verifyDeclarations("convert-mesh-to-runtime")))
    return failure();
  if (!needInitAndFini)
    return success();
  for (StringRef name : {initName, finiName})
    if (module.lookupSymbol(name))
      return module.emitError() << "convert-mesh-to-runtime: the module "
                                   "already has a symbol named '"
                                << name << "'";
  return success();
}

MeshOp RuntimeModule::lookupMesh(Operation *op, FlatSymbolRefAttr meshRef) {
  return mesh::lookupMesh(op, meshRef, &symbolTables);
}

LLVM::GlobalOp RuntimeModule::getMeshGlobal(MeshOp mesh) {
  auto it = meshGlobals.find(mesh.getSymName());
  if (it != meshGlobals.end())
    return it->second;
  LLVM::GlobalOp global =
      makePointerGlobal(("__mesh_mesh_" + mesh.getSymName()).str());
  meshGlobals[mesh.getSymName()] = global;
  meshOrder.push_back(mesh);
  return global;
}

LLVM::GlobalOp RuntimeModule::getCommGlobal(MeshOp mesh,
                                            ArrayRef<StringRef> axes) {
  getMeshGlobal(mesh);
  CommKey key{mesh.getSymNameAttr(), {}};
  for (StringRef axis : axes)
    key.second.push_back(*mesh.getAxisIndex(axis));
  auto it = commGlobals.find(key);
  if (it != commGlobals.end())
    return it->second;
  LLVM::GlobalOp global = makePointerGlobal("__mesh_comm");
  commGlobals.insert({std::move(key), global});
  return global;
}

void RuntimeModule::requireGroupSize(LLVM::GlobalOp comm, int64_t size,
                                     StringRef what) {
  requiredGroupSizes.try_emplace({comm.getOperation(), size}, what.str());
}

LLVM::GlobalOp RuntimeModule::getMemberGlobal(MeshOp mesh) {
  assert(mesh.hasDevices() && "every process is in a mesh without devices");
  getMeshGlobal(mesh);
  LLVM::GlobalOp &global = memberGlobals[mesh.getSymName()];
  if (!global)
    global = makeI64Global(("__mesh_member_" + mesh.getSymName()).str(), 0);
  return global;
}

Value RuntimeModule::isMember(OpBuilder &b, Location loc, MeshOp mesh) {
  if (!mesh.hasDevices())
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  Value addr = LLVM::AddressOfOp::create(b, loc, getMemberGlobal(mesh));
  Value flag = LLVM::LoadOp::create(b, loc, i64Type, addr);
  Value zero = constI64(b, loc, 0);
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, flag, zero);
}

SmallVector<Value>
RuntimeModule::ifMember(OpBuilder &b, Location loc, MeshOp mesh,
                        TypeRange types,
                        function_ref<SmallVector<Value>()> member,
                        function_ref<SmallVector<Value>()> other) {
  assert((other || types.empty()) && "values elsewhere need `other`");
  if (!mesh.hasDevices())
    return member();
  auto ifOp = scf::IfOp::create(b, loc, types, isMember(b, loc, mesh),
                                /*withElseRegion=*/bool(other));
  OpBuilder::InsertionGuard guard(b);
  // Blocks with results have no terminator yet; those without have an
  // scf.yield, which the code goes before.
  b.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> thenValues = member();
  if (!types.empty())
    scf::YieldOp::create(b, loc, thenValues);
  if (other) {
    b.setInsertionPointToStart(ifOp.elseBlock());
    SmallVector<Value> elseValues = other();
    if (!types.empty())
      scf::YieldOp::create(b, loc, elseValues);
  }
  return SmallVector<Value>(ifOp.getResults());
}

LLVM::GlobalOp RuntimeModule::getPeerGlobal(MeshOp own, MeshOp peer) {
  getMeshGlobal(own);
  getMeshGlobal(peer);
  std::pair<StringAttr, StringAttr> key{own.getSymNameAttr(),
                                        peer.getSymNameAttr()};
  auto it = peerGlobals.find(key);
  if (it != peerGlobals.end())
    return it->second;
  LLVM::GlobalOp global = makeI64Global(
      ("__mesh_peer_" + own.getSymName() + "_" + peer.getSymName()).str(), -1);
  peerGlobals.insert({key, global});
  return global;
}

LLVM::GlobalOp RuntimeModule::makeI64Global(StringRef prefix, int64_t value) {
  OpBuilder b = atModuleStart();
  return LLVM::GlobalOp::create(b, module.getLoc(), i64Type,
                                /*isConstant=*/false, LLVM::Linkage::Internal,
                                uniqueName(prefix), b.getI64IntegerAttr(value));
}

Value RuntimeModule::loadHandle(OpBuilder &b, Location loc,
                                LLVM::GlobalOp global) {
  Value addr = LLVM::AddressOfOp::create(b, loc, global);
  return LLVM::LoadOp::create(b, loc, ptrType, addr);
}

LLVM::GlobalOp RuntimeModule::getString(StringRef text) {
  auto it = strings.find(text);
  if (it != strings.end())
    return it->second;
  std::string value = text.str();
  value.push_back('\0');
  OpBuilder b = atModuleStart();
  auto type = LLVM::LLVMArrayType::get(i8Type, value.size());
  auto global = LLVM::GlobalOp::create(
      b, module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::Internal,
      uniqueName("__mesh_str"), b.getStringAttr(value));
  strings[text] = global;
  return global;
}

LLVM::GlobalOp RuntimeModule::makePointerGlobal(StringRef prefix) {
  OpBuilder b = atModuleStart();
  auto global =
      LLVM::GlobalOp::create(b, module.getLoc(), ptrType,
                             /*isConstant=*/false, LLVM::Linkage::Internal,
                             uniqueName(prefix), Attribute());
  Block *init = b.createBlock(&global.getInitializerRegion());
  b.setInsertionPointToStart(init);
  Value zero = LLVM::ZeroOp::create(b, module.getLoc(), ptrType);
  LLVM::ReturnOp::create(b, module.getLoc(), zero);
  return global;
}

Value RuntimeModule::stackArray(OpBuilder &b, Location loc, Type elementType,
                                ArrayRef<Value> values) {
  auto arrayType = LLVM::LLVMArrayType::get(elementType, values.size());
  Value array =
      LLVM::AllocaOp::create(b, loc, ptrType, arrayType, constI64(b, loc, 1));
  for (auto [i, v] : llvm::enumerate(values)) {
    Value slot =
        LLVM::GEPOp::create(b, loc, ptrType, arrayType, array,
                            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    LLVM::StoreOp::create(b, loc, v, slot);
  }
  return array;
}

OpBuilder RuntimeModule::atModuleStart() {
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  return b;
}

OpBuilder RuntimeModule::atModuleEnd() {
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  return b;
}

std::string RuntimeModule::uniqueName(StringRef prefix) {
  std::string name;
  do {
    name = (prefix + "_" + Twine(counter++)).str();
  } while (module.lookupSymbol(name));
  return name;
}

//===----------------------------------------------------------------------===//
// Start-up and shut-down
//===----------------------------------------------------------------------===//

void RuntimeModule::emitInitAndFini(StringRef initName, StringRef finiName) {
  OpBuilder flagBuilder = atModuleEnd();
  LLVM::GlobalOp guard = LLVM::GlobalOp::create(
      flagBuilder, module.getLoc(), i8Type, /*isConstant=*/false,
      LLVM::Linkage::Internal, uniqueName("__mesh_initialized"),
      flagBuilder.getI8IntegerAttr(0));

  emitGuardedFunction(
      initName, guard, /*initialises=*/true, [&](OpBuilder &b, Location loc) {
        // First, that the library loaded runs code compiled for the
        // runtime of this compiler's meshrt.h (same major.minor).
        functions.callChecked<RuntimeEntry::meshrt_check_version>(
            b, loc,
            {constI32(b, loc, MESHRT_VERSION_MAJOR),
             constI32(b, loc, MESHRT_VERSION_MINOR)});
        // A host program runs on the job's CPU backend (MPI, or gloo
        // without an MPI launcher) even on a GPU node; a device program on
        // NCCL where a device is visible. MESHRT_BACKEND overrides both.
        functions.callChecked<RuntimeEntry::meshrt_init>(
            b, loc,
            {constI32(b, loc,
                      onStream ? MESHRT_BACKEND_AUTO : MESHRT_BACKEND_HOST)});
        if (onStream)
          emitDeviceSelection(b, loc);
        for (MeshOp mesh : meshOrder)
          emitMeshDeclaration(b, loc, mesh);
        for (MeshOp mesh : meshOrder)
          if (mesh.hasDevices())
            emitMembership(b, loc, mesh);
        for (const auto &[key, global] : commGlobals)
          emitCommCreation(b, loc, key, global);
        // Sizes the static types assumed, against the mesh this run resolved.
        for (const auto &[key, what] : requiredGroupSizes) {
          auto global = cast<LLVM::GlobalOp>(key.first);
          functions.callChecked<RuntimeEntry::meshrt_comm_expect_size>(
              b, loc, "meshrt_comm_expect_size",
              {loadHandle(b, loc, global), constI64(b, loc, key.second),
               LLVM::AddressOfOp::create(b, loc, getString(what))});
        }
        for (const auto &[key, global] : peerGlobals)
          emitPeerRank(b, loc, lookupMeshByName(key.first),
                       lookupMeshByName(key.second), global);
      });
  // Shut-down frees every communicator (the runtime owns them).
  emitGuardedFunction(
      finiName, guard, /*initialises=*/false, [&](OpBuilder &b, Location loc) {
        LLVM::CallOp::create(b, loc,
                             functions.get(b, RuntimeEntry::meshrt_finalize),
                             ValueRange());
      });
}

void RuntimeModule::emitGuardedFunction(
    StringRef name, LLVM::GlobalOp guard, bool initialises,
    function_ref<void(OpBuilder &, Location)> body) {
  Location loc = module.getLoc();
  OpBuilder b = atModuleEnd();
  auto voidFn = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {});
  auto fn = LLVM::LLVMFuncOp::create(b, loc, name, voidFn);
  Block *entry = fn.addEntryBlock(b);
  Block *work = b.createBlock(&fn.getBody());
  Block *done = b.createBlock(&fn.getBody());
  b.setInsertionPointToEnd(entry);
  Value initialised = isInitialised(b, loc, guard);
  if (initialises)
    LLVM::CondBrOp::create(b, loc, initialised, done, work);
  else
    LLVM::CondBrOp::create(b, loc, initialised, work, done);

  b.setInsertionPointToEnd(work);
  body(b, loc);
  setGuard(b, loc, guard, initialises ? 1 : 0);
  LLVM::BrOp::create(b, loc, ValueRange(), done);
  b.setInsertionPointToEnd(done);
  LLVM::ReturnOp::create(b, loc, ValueRange());
}

void RuntimeModule::emitDeviceSelection(OpBuilder &b, Location loc) {
  Value slot =
      LLVM::AllocaOp::create(b, loc, ptrType, i64Type, constI64(b, loc, 1));
  functions.callChecked<RuntimeEntry::meshrt_gpu_select_device>(b, loc, {slot});
}

void RuntimeModule::emitMeshDeclaration(OpBuilder &b, Location loc,
                                        MeshOp mesh) {
  ArrayRef<int64_t> shape = mesh.getShape();
  SmallVector<Value> sizes, names;
  for (int64_t size : shape)
    sizes.push_back(constI64(
        b, loc, ShapedType::isDynamic(size) ? kDynamicAxisSize : size));
  for (StringRef name : mesh.getAxisNames().getAsValueRange<StringAttr>())
    names.push_back(LLVM::AddressOfOp::create(b, loc, getString(name)));
  Value sizeArray = stackArray(b, loc, i64Type, sizes);
  Value nameArray = stackArray(b, loc, ptrType, names);
  Value meshName =
      LLVM::AddressOfOp::create(b, loc, getString(mesh.getSymName()));
  Value out = LLVM::AddressOfOp::create(b, loc, meshGlobals[mesh.getSymName()]);
  std::optional<ArrayRef<int64_t>> devices = mesh.getDevices();
  if (!devices) {
    functions.callChecked<RuntimeEntry::meshrt_mesh_declare>(
        b, loc, "meshrt_mesh_declare of @" + mesh.getSymName(),
        {meshName, constI64(b, loc, shape.size()), sizeArray, nameArray, out});
    return;
  }
  // A mesh over part of the world: its world ranks, row-major.
  SmallVector<Value> ranks;
  for (int64_t rank : *devices)
    ranks.push_back(constI64(b, loc, rank));
  Value rankArray = stackArray(b, loc, i64Type, ranks);
  functions.callChecked<RuntimeEntry::meshrt_mesh_declare_ranks>(
      b, loc, "meshrt_mesh_declare_ranks of @" + mesh.getSymName(),
      {meshName, constI64(b, loc, shape.size()), sizeArray, nameArray,
       constI64(b, loc, ranks.size()), rankArray, out});
}

void RuntimeModule::emitMembership(OpBuilder &b, Location loc, MeshOp mesh) {
  Value meshHandle = loadHandle(b, loc, meshGlobals[mesh.getSymName()]);
  Value out = LLVM::AddressOfOp::create(b, loc, getMemberGlobal(mesh));
  functions.callChecked<RuntimeEntry::meshrt_mesh_is_member>(
      b, loc, "meshrt_mesh_is_member of @" + mesh.getSymName(),
      {meshHandle, out});
}

void RuntimeModule::emitPeerRank(OpBuilder &b, Location loc, MeshOp own,
                                 MeshOp peer, LLVM::GlobalOp global) {
  Region *body = b.getInsertionBlock()->getParent();
  Value out = LLVM::AddressOfOp::create(b, loc, global);
  // Outside `own` the global keeps its -1: nothing to compute.
  Block *compute = nullptr, *next = nullptr;
  if (own.hasDevices()) {
    Value member = isMember(b, loc, own);
    compute = new Block();
    next = new Block();
    body->push_back(compute);
    body->push_back(next);
    LLVM::CondBrOp::create(b, loc, member, compute, next);
    b.setInsertionPointToEnd(compute);
  }
  // This process's row-major position in `own`, from its coordinates.
  Value ownHandle = loadHandle(b, loc, meshGlobals[own.getSymName()]);
  Value slot =
      LLVM::AllocaOp::create(b, loc, ptrType, i64Type, constI64(b, loc, 1));
  Value position = constI64(b, loc, 0);
  for (unsigned axis = 0; axis < own.getRank(); ++axis) {
    Value axisValue = constI64(b, loc, axis);
    functions.callChecked<RuntimeEntry::meshrt_mesh_axis_size>(
        b, loc, "meshrt_mesh_axis_size of @" + own.getSymName(),
        {ownHandle, axisValue, slot});
    Value size = LLVM::LoadOp::create(b, loc, i64Type, slot);
    functions.callChecked<RuntimeEntry::meshrt_mesh_coordinate>(
        b, loc, "meshrt_mesh_coordinate of @" + own.getSymName(),
        {ownHandle, axisValue, slot});
    Value coordinate = LLVM::LoadOp::create(b, loc, i64Type, slot);
    position = LLVM::AddOp::create(
        b, loc, LLVM::MulOp::create(b, loc, position, size), coordinate);
  }
  Value peerHandle = loadHandle(b, loc, meshGlobals[peer.getSymName()]);
  functions.callChecked<RuntimeEntry::meshrt_mesh_world_rank>(
      b, loc,
      "meshrt_mesh_world_rank of @" + peer.getSymName() + " (the peer of @" +
          own.getSymName() + ")",
      {peerHandle, position, out});
  if (!next)
    return;
  LLVM::BrOp::create(b, loc, ValueRange(), next);
  b.setInsertionPointToEnd(next);
}

MeshOp RuntimeModule::lookupMeshByName(StringAttr name) {
  for (MeshOp mesh : meshOrder)
    if (mesh.getSymNameAttr() == name)
      return mesh;
  llvm_unreachable("every mesh with a global is in meshOrder");
}

void RuntimeModule::emitCommCreation(OpBuilder &b, Location loc,
                                     const CommKey &key,
                                     LLVM::GlobalOp global) {
  StringRef meshName = key.first.getValue();
  Value meshHandle = loadHandle(b, loc, meshGlobals[meshName]);
  SmallVector<Value> axes;
  for (int64_t axis : key.second)
    axes.push_back(constI64(b, loc, axis));
  Value axisArray = axes.empty()
                        ? LLVM::ZeroOp::create(b, loc, ptrType).getResult()
                        : stackArray(b, loc, i64Type, axes);
  Value out = LLVM::AddressOfOp::create(b, loc, global);
  functions.callChecked<RuntimeEntry::meshrt_comm_get>(
      b, loc, "meshrt_comm_get on @" + meshName,
      {meshHandle, constI64(b, loc, axes.size()), axisArray, out});
}

Value RuntimeModule::isInitialised(OpBuilder &b, Location loc,
                                   LLVM::GlobalOp guard) {
  Value addr = LLVM::AddressOfOp::create(b, loc, guard);
  Value flag = LLVM::LoadOp::create(b, loc, i8Type, addr);
  Value zero = LLVM::ConstantOp::create(b, loc, i8Type, b.getI8IntegerAttr(0));
  return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, flag, zero);
}

void RuntimeModule::setGuard(OpBuilder &b, Location loc, LLVM::GlobalOp guard,
                             int8_t v) {
  Value addr = LLVM::AddressOfOp::create(b, loc, guard);
  Value value = LLVM::ConstantOp::create(b, loc, i8Type, b.getI8IntegerAttr(v));
  LLVM::StoreOp::create(b, loc, value, addr);
}

void RuntimeModule::callFromMain(StringRef initName, StringRef finiName) {
  auto main = dyn_cast_or_null<FunctionOpInterface>(
      SymbolTable::lookupSymbolIn(module, "main"));
  if (!main || main.isExternal())
    return;
  auto init = module.lookupSymbol<LLVM::LLVMFuncOp>(initName);
  auto fini = module.lookupSymbol<LLVM::LLVMFuncOp>(finiName);
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&main.getFunctionBody().front());
  LLVM::CallOp::create(b, main.getLoc(), init, ValueRange());
  main.walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::ReturnLike>() &&
        op->getParentOp() == main.getOperation()) {
      b.setInsertionPoint(op);
      LLVM::CallOp::create(b, op->getLoc(), fini, ValueRange());
    }
  });
}

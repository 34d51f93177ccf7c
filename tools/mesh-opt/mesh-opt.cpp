//===- mesh-opt.cpp - the mesh optimizer driver ---------------------------===//
//
// mlir-opt for sharded programs: our dialect and passes plus the upstream
// dialects and passes needed from tensors to the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#include "mesh/InitMesh.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::mesh::registerMeshToolDialects(registry);
  mlir::mesh::registerMeshToolPasses();
  mlir::mesh::registerMeshVersionPrinter("mesh-opt");
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mesh optimizer driver\n", registry));
}

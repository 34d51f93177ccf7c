//===- mesh-lsp-server.cpp - language server for mesh programs ------------===//
//
// MLIR's language server with the same dialects mesh-opt registers, so editors
// get diagnostics, hover and go-to-definition on files that use the dialect.
//
//===----------------------------------------------------------------------===//

#include "mesh/InitMesh.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-lsp-server/MlirLspServerMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::mesh::registerMeshToolDialects(registry);
  mlir::mesh::registerMeshVersionPrinter("mesh-lsp-server");
  return mlir::failed(mlir::MlirLspServerMain(argc, argv, registry));
}

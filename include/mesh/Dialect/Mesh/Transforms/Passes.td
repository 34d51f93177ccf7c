//===- Passes.td - transforms of the mesh dialect ----------*- tablegen -*-===//
//
// Passes that rewrite mesh programs and stay in the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_PASSES_TD
#define MESH_DIALECT_MESH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrepareForBufferization
    : Pass<"mesh-prepare-for-bufferization", "::mlir::ModuleOp"> {
  let summary = "Readies a partitioned program for one-shot bufferization";
  let description = [{
    Run on a program in per-device form, before `one-shot-bufferize`:

    - removes the `mesh.sharding` annotations from operations and from
      function arguments and results: they describe tensors, and once the
      program is partitioned and about to become buffers they no longer
      apply;
    - unless `writable-arguments` is set, marks every tensor argument of a
      public function `bufferization.writable = false`, so that compiled
      kernels never overwrite the buffers their callers pass in (bufferization
      copies before writing instead).

    `mesh.shard` constraints are left alone: they must be partitioned away,
    and the lowering reports any that remain.

    ```mlir
    func.func @k(%a: tensor<4xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>})
        -> tensor<4xf32> {
      %0 = arith.negf %a {mesh.sharding = #mesh.sharding<@m, [["x"]]>} : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    // becomes
    func.func @k(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> {
      %0 = arith.negf %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    ```
  }];
  let options = [
    Option<"writableArguments", "writable-arguments", "bool", "false",
           "Let bufferization write into the arguments of public functions">
  ];
}

#endif // MESH_DIALECT_MESH_TRANSFORMS_PASSES_TD

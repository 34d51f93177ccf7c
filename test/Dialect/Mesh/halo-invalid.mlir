// RUN: mesh-opt %s --split-input-file --mesh-partition -verify-diagnostics

// Halos that cannot move: each diagnostic names the value and why.

mesh.mesh @d(["x" = ?])
// A halo on a `?` axis: its blocks (and whether the halo fits them) are
// known only at run time.
func.func @dynamic_axis(%u: tensor<18xf32> {mesh.sharding = #mesh.sharding<@d, [["x"]], halo = [[1, 1]]>})
    -> (tensor<18xf32> {mesh.sharding = #mesh.sharding<@d, [[]]>}) {
  // expected-error @+1 {{cannot move result 0 laid out as #mesh.sharding<@d, [["x"]], halo = [[1, 1]]>: dim 0 has a halo and is split over axes of unknown size}}
  return %u : tensor<18xf32>
}

// -----

mesh.mesh @m(["x" = 4])
// A halo written by hand on a dim that does not divide.
// expected-error @+1 {{'func.func' op argument 0: dim 0 of size 18 less its halo [1, 0] does not divide by the 4 devices of its axes (S10)}}
func.func @core_does_not_divide(%u: tensor<18xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]], halo = [[1, 0]]>}) -> tensor<18xf32> {
  return %u : tensor<18xf32>
}

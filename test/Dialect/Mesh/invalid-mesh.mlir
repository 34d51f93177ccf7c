// RUN: mesh-opt %s -split-input-file -verify-diagnostics

// Diagnostics of mesh.mesh, which check the constraints (Mn) of
// docs/MeshSpec.md: one case per diagnostic.

// expected-error @+1 {{'mesh.mesh' op @m needs at least one axis (M1)}}
mesh.mesh @m([])

// -----

// expected-error @+1 {{'mesh.mesh' op @m axis "b" has size 0; sizes must be at least 1 (M2)}}
mesh.mesh @m(["a" = 2, "b" = 0])

// -----

// expected-error @+1 {{axis "b" has size -3; sizes must be at least 1 (M2)}}
mesh.mesh @m(["a" = 2, "b" = -3])

// -----

// expected-error @+1 {{'mesh.mesh' op @m has two axes named "a"; axis names must be unique (M3)}}
mesh.mesh @m(["a" = 2, "a" = 4])

// -----

// expected-error @+1 {{'mesh.mesh' op @m has an axis with an empty name (M3)}}
mesh.mesh @m(["" = 2])

// -----

// expected-error @+1 {{'mesh.mesh' op @m has more than one axis of size '?'; at most one size can be left to run time (M4)}}
mesh.mesh @m(["a" = ?, "b" = ?])

// -----

// expected-error @+1 {{'mesh.mesh' op @m has 17 axes; at most 16 are supported (M6)}}
mesh.mesh @m(["a0" = 1, "a1" = 1, "a2" = 1, "a3" = 1, "a4" = 1, "a5" = 1, "a6" = 1, "a7" = 1, "a8" = 1, "a9" = 1, "a10" = 1, "a11" = 1, "a12" = 1, "a13" = 1, "a14" = 1, "a15" = 1, "a16" = 1])

// -----

// expected-error @+1 {{'mesh.mesh' op @m has more than 2^31-1 devices (M5)}}
mesh.mesh @m(["a" = 65536, "b" = 65536])

// -----

// The custom syntax pairs names and sizes; the generic form need not.
// expected-error @+1 {{'mesh.mesh' op has 2 axis names but 1 sizes (M7)}}
"mesh.mesh"() <{sym_name = "m", axis_names = ["a", "b"], shape = array<i64: 2>}> : () -> ()

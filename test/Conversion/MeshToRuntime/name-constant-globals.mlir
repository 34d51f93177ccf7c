// RUN: mesh-opt %s --allow-unregistered-dialect --mesh-name-constant-globals | FileCheck %s
// RUN: mesh-opt %s --allow-unregistered-dialect --mesh-name-constant-globals --mesh-name-constant-globals | FileCheck %s

// The private constant globals named __constant_* (bufferization's names)
// that only memref.get_global uses are renamed in the order of their first
// use and put in that order at the start of the module; the others keep
// their names and places.

// CHECK-LABEL: module
// CHECK-NEXT:  memref.global "private" constant @__constant_2xi32_0 : memref<2xi32> = dense<7>
// CHECK-NEXT:  memref.global "private" constant @__constant_4xf32_1 : memref<4xf32> = dense<1.000000e+00>
// CHECK-NEXT:  memref.global "private" constant @__constant_2x3xf32_2 : memref<2x3xf32> = dense<2.000000e+00>
// CHECK-NEXT:  memref.global "private" constant @__constant_4xf32_3 : memref<4xf32> = dense<3.000000e+00>
// CHECK-NEXT:  memref.global "private" constant @__constant_4xf32_4 : memref<4xf32> = dense<5.000000e+00>
// CHECK-NEXT:  memref.global "private" constant @__constant_4xf32_7 : memref<4xf32> = dense<4.000000e+00>
// CHECK-NEXT:  memref.global "private" @state : memref<2xi32>
// CHECK-NEXT:  memref.global constant @public : memref<2xi32> = dense<9>
// CHECK-NEXT:  memref.global "private" constant @unused : memref<2xi32> = dense<8>
// CHECK-NEXT:  memref.global "private" constant @table : memref<2xi32> = dense<6>
module {
  memref.global "private" constant @__constant_4xf32_7 : memref<4xf32> = dense<4.0>
  memref.global "private" constant @__constant_4xf32_5 : memref<4xf32> = dense<5.0>
  memref.global "private" constant @__constant_4xf32_12 : memref<4xf32> = dense<3.0>
  memref.global "private" @state : memref<2xi32>
  memref.global constant @public : memref<2xi32> = dense<9>
  memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<1.0>
  memref.global "private" constant @unused : memref<2xi32> = dense<8>
  memref.global "private" constant @table : memref<2xi32> = dense<6>
  memref.global "private" constant @__constant_2x3xf32_0 : memref<2x3xf32> = dense<2.0>
  memref.global "private" constant @__constant_2xi32_3 : memref<2xi32> = dense<7>

  // CHECK-LABEL: func.func @first
  // CHECK: memref.get_global @__constant_2xi32_0
  // CHECK: memref.get_global @__constant_4xf32_1
  // CHECK: memref.get_global @state
  // CHECK: memref.get_global @public
  // CHECK: memref.get_global @table
  func.func @first() {
    %a = memref.get_global @__constant_2xi32_3 : memref<2xi32>
    %b = memref.get_global @__constant_4xf32 : memref<4xf32>
    %s = memref.get_global @state : memref<2xi32>
    %p = memref.get_global @public : memref<2xi32>
    %t = memref.get_global @table : memref<2xi32>
    "test.use"(%a, %b, %s, %p, %t) : (memref<2xi32>, memref<4xf32>, memref<2xi32>, memref<2xi32>, memref<2xi32>) -> ()
    return
  }

  // CHECK-LABEL: func.func @second
  // CHECK: memref.get_global @__constant_2x3xf32_2
  // CHECK: memref.get_global @__constant_4xf32_1
  // CHECK: memref.get_global @__constant_4xf32_3
  // CHECK: memref.get_global @__constant_4xf32_7
  // CHECK: memref.get_global @__constant_4xf32_4
  func.func @second() {
    %a = memref.get_global @__constant_2x3xf32_0 : memref<2x3xf32>
    %b = memref.get_global @__constant_4xf32 : memref<4xf32>
    %c = memref.get_global @__constant_4xf32_12 : memref<4xf32>
    %d = memref.get_global @__constant_4xf32_7 : memref<4xf32>
    %e = memref.get_global @__constant_4xf32_5 : memref<4xf32>
    "test.use"(%a, %b, %c, %d, %e) : (memref<2x3xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    return
  }

  // @__constant_4xf32_7 is named by an op other than memref.get_global: it
  // keeps its name and place.
  "test.refers"() {to = @__constant_4xf32_7} : () -> ()
}

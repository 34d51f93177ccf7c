// REQUIRES: ptxas
// The same program compiles to the same output on every run, for the host
// and for CUDA: one-shot-bufferize numbers the constants' globals in an
// order that changes from run to run (mesh-name-constant-globals renames
// them by first use), and gpu-module-to-binary records compile times in its
// objects (mesh-gpu-strip-compile-times drops them). Twelve functions that
// call nothing, each with constants, make a different order all but certain
// without those passes.

// RUN: rm -rf %t && mkdir -p %t
// RUN: mesh-opt %s --mesh-to-llvm -o %t/host1.mlir
// RUN: mesh-opt %s --mesh-to-llvm -o %t/host2.mlir
// RUN: mesh-opt %s --mesh-to-llvm -o %t/host3.mlir
// RUN: cmp %t/host1.mlir %t/host2.mlir
// RUN: cmp %t/host1.mlir %t/host3.mlir
// RUN: FileCheck %s --check-prefix=CHECK-HOST < %t/host1.mlir
// RUN: mesh-opt %s --mesh-to-nvvm="cuda-path=%cuda_path" -o %t/cuda1.mlir
// RUN: mesh-opt %s --mesh-to-nvvm="cuda-path=%cuda_path" -o %t/cuda2.mlir
// RUN: cmp %t/cuda1.mlir %t/cuda2.mlir
// RUN: FileCheck %s --check-prefix=CHECK-CUDA < %t/cuda1.mlir

// The constants are named in the order the functions use them.
// CHECK-HOST: llvm.mlir.global private constant @__constant_4xi32_0(dense<[1, 2, 3, 4]>
// CHECK-HOST-NEXT: llvm.mlir.global private constant @__constant_4xi32_1(dense<[5, 6, 7, 8]>
// CHECK-HOST-NEXT: llvm.mlir.global private constant @__constant_4xi32_2(dense<[9, 10, 11, 12]>
// CHECK-HOST-LABEL: llvm.func @f0(
// CHECK-HOST: llvm.mlir.addressof @__constant_4xi32_0
// CHECK-HOST-LABEL: llvm.func @f1(
// CHECK-HOST: llvm.mlir.addressof @__constant_4xi32_1
// CHECK-HOST-LABEL: llvm.func @f11(
// CHECK-HOST: llvm.mlir.addressof @__constant_4xi32_11

// CHECK-CUDA: gpu.binary @mesh_kernels
// CHECK-CUDA-NOT: TimeInMs
// CHECK-CUDA-SAME: #gpu.object<#nvvm.target

func.func @f0(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %y = arith.addi %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f1(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[5, 6, 7, 8]> : tensor<4xi32>
  %y = arith.muli %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f2(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[9, 10, 11, 12]> : tensor<4xi32>
  %y = arith.subi %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f3(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[13, 14, 15, 16]> : tensor<4xi32>
  %y = arith.addi %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f4(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[17, 18, 19, 20]> : tensor<4xi32>
  %y = arith.muli %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f5(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[21, 22, 23, 24]> : tensor<4xi32>
  %y = arith.subi %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f6(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[25, 26, 27, 28]> : tensor<4xi32>
  %y = arith.addi %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f7(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[29, 30, 31, 32]> : tensor<4xi32>
  %y = arith.muli %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f8(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[33, 34, 35, 36]> : tensor<4xi32>
  %y = arith.subi %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f9(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[37, 38, 39, 40]> : tensor<4xi32>
  %y = arith.addi %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f10(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[41, 42, 43, 44]> : tensor<4xi32>
  %y = arith.muli %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}
func.func @f11(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[45, 46, 47, 48]> : tensor<4xi32>
  %y = arith.subi %x, %c : tensor<4xi32>
  return %y : tensor<4xi32>
}

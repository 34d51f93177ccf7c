// RUN: mesh-opt %s --mesh-gpu-strip-compile-times | FileCheck %s

// The two compile times go; any other property, the object and the other
// objects stay as they were.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {keep = 1 : i64}, "AAAA">, #gpu.object<#nvvm.target<chip = "sm_80">, "BBBB">, #gpu.object<#nvvm.target<chip = "sm_70">, properties = {other = "x"}, "CCCC">]
module attributes {gpu.container_module} {
  gpu.binary @kernels [
    #gpu.object<#nvvm.target<chip = "sm_90">, properties = {ISAToBinaryTimeInMs = 14443 : i64, LLVMIRToISATimeInMs = 3460 : i64, keep = 1 : i64}, "AAAA">,
    #gpu.object<#nvvm.target<chip = "sm_80">, properties = {ISAToBinaryTimeInMs = 3 : i64, LLVMIRToISATimeInMs = 4 : i64}, "BBBB">,
    #gpu.object<#nvvm.target<chip = "sm_70">, properties = {other = "x"}, "CCCC">
  ]
}

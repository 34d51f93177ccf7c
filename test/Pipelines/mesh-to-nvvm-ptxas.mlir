// REQUIRES: ptxas
// The kernels of the examples, compiled for sm_90, are PTX that CUDA's ptxas
// accepts: once through gpu-module-to-binary (fatbin: ptxas and fatbinary
// run on the toolkit named by cuda-path), once by running ptxas on the PTX
// of format=isa directly.

// RUN: mesh-opt %mesh_src_root/examples/mlir/hsdp_step.mlir --mesh-to-nvvm="cuda-path=%cuda_path" | FileCheck %s
// RUN: mesh-opt %mesh_src_root/examples/mlir/tp_mlp.mlir --mesh-to-nvvm="cuda-path=%cuda_path" | FileCheck %s
// RUN: mesh-opt %mesh_src_root/examples/mlir/ulysses.mlir --mesh-to-nvvm="cuda-path=%cuda_path" | FileCheck %s
// RUN: mesh-opt %s --mesh-to-nvvm="cuda-path=%cuda_path" | FileCheck %s

// RUN: rm -rf %t && mkdir -p %t && mesh-opt %mesh_src_root/examples/mlir/hsdp_step.mlir --mesh-to-nvvm="format=isa cuda-path=%cuda_path" | tee %t/hsdp.mlir | FileCheck %s --check-prefix=ISA
// RUN: %python %S/Inputs/extract-ptx.py %t/hsdp.mlir %t/hsdp | FileCheck %s --check-prefix=HSDP
// RUN: mesh-opt %mesh_src_root/examples/mlir/tp_mlp.mlir --mesh-to-nvvm="format=isa cuda-path=%cuda_path" | tee %t/tp.mlir | FileCheck %s --check-prefix=ISA
// RUN: %python %S/Inputs/extract-ptx.py %t/tp.mlir %t/tp | FileCheck %s --check-prefix=TP
// RUN: mesh-opt %mesh_src_root/examples/mlir/ulysses.mlir --mesh-to-nvvm="format=isa cuda-path=%cuda_path" | tee %t/uly.mlir | FileCheck %s --check-prefix=ISA
// RUN: %python %S/Inputs/extract-ptx.py %t/uly.mlir %t/uly | FileCheck %s --check-prefix=ULY
// RUN: mesh-opt %s --mesh-to-nvvm="format=isa cuda-path=%cuda_path" | tee %t/libdevice.mlir | FileCheck %s --check-prefix=ISA1
// RUN: %python %S/Inputs/extract-ptx.py %t/libdevice.mlir %t/libdevice | FileCheck %s --check-prefix=LIBDEVICE
// RUN: (n=0; for f in %t/*/*.ptx; do %ptxas -arch=sm_90 $f -o /dev/null || exit 1; n=$((n+1)); done; echo "ptxas accepted $n modules") | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t/libdevice/mesh_kernels.ptx

// CHECK: gpu.binary @{{.*}}#nvvm.target<O = 3, chip = "sm_90">

// format=isa: the kernels of a program are one module, PTX for sm_90,
// launched from the host functions before it.
// ISA: gpu.launch_func <{{.*}}> @mesh_kernels::
// ISA-COUNT-1: gpu.binary @mesh_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}assembly = "{{.*}}.target sm_90
// ISA-NOT: gpu.binary
// ISA1: gpu.launch_func <{{.*}}> @mesh_kernels::@exp_kernel
// ISA1: gpu.launch_func <{{.*}}> @mesh_kernels::@exp_kernel_0
// ISA1-COUNT-1: gpu.binary @mesh_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}assembly = "{{.*}}.target sm_90
// ISA1-NOT: gpu.binary

// Every kernel of each program reaches the binary, all of a program's
// kernels in one module (mesh-gpu-merge-kernel-modules): the examples'
// kernel counts (tp_mlp's two products are cuBLASLt calls: its kernels
// are the zero fill and the ReLU, which reads a buffer of zeros, not a
// constant, so it is no epilogue; the exp of an argument is two kernels,
// with 16-byte accesses when the buffers are aligned, and without), then
// all four modules through ptxas.
// HSDP: extracted 1 PTX modules, 2 kernels
// TP: extracted 1 PTX modules, 2 kernels
// ULY: extracted 1 PTX modules, 3 kernels
// LIBDEVICE: extracted 1 PTX modules, 2 kernels
// PTXAS: ptxas accepted 4 modules

// math.exp needs libdevice: with the toolkit found it is linked in, not left
// as an unresolved extern (which only the driver's JIT would reject). The
// first kernel loads and stores 4 floats per instruction (the vector's exp
// computed per element by libdevice), the second one at a time.
// PTX: .target sm_90
// PTX-NOT: .extern .func {{.*}}__nv_expf
// PTX: .entry exp_kernel(
// PTX: ld.global.v4.b32
// PTX: st.global.v4.b32
// PTX: .entry exp_kernel_0(
// PTX-NOT: .v4
// PTX: ld.global.b32
// PTX-NOT: .v4
// PTX: st.global.b32
// PTX-NOT: .v4

func.func @exp(%x: tensor<256xf32>) -> tensor<256xf32> {
  %0 = math.exp %x : tensor<256xf32>
  return %0 : tensor<256xf32>
}

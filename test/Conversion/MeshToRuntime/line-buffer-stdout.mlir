// RUN: mesh-opt %s --mesh-line-buffer-stdout -split-input-file -verify-diagnostics | FileCheck %s

// main makes stdout line-buffered first thing: setvbuf(stdout, NULL,
// _IOLBF, 0), with stdout and setvbuf declared for the C library.

// CHECK-DAG: llvm.mlir.global external @stdout() {{.*}} : !llvm.ptr
// CHECK-DAG: llvm.func @setvbuf(!llvm.ptr, !llvm.ptr, i32, i64) -> i32
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[ADDR:.*]] = llvm.mlir.addressof @stdout : !llvm.ptr
// CHECK-NEXT: %[[S:.*]] = llvm.load %[[ADDR]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[MODE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[SIZE:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: llvm.call @setvbuf(%[[S]], %[[NULL]], %[[MODE]], %[[SIZE]])
// CHECK-NEXT: call @work()
// CHECK-NEXT: arith.constant 0 : i32
func.func private @work()
func.func @main() -> i32 {
  call @work() : () -> ()
  %c0 = arith.constant 0 : i32
  return %c0 : i32
}

// -----

// Declarations the module already has are used, not repeated; main may be
// an llvm.func.

// CHECK: llvm.mlir.global external @stdout()
// CHECK-NOT: @stdout()
// CHECK: llvm.func @setvbuf(
// CHECK-NOT: llvm.func @setvbuf(
// CHECK-LABEL: llvm.func @main
// CHECK: llvm.call @setvbuf
// CHECK-NEXT: llvm.return
llvm.mlir.global external @stdout() : !llvm.ptr
llvm.func @setvbuf(!llvm.ptr, !llvm.ptr, i32, i64) -> i32
llvm.func @main() {
  llvm.return
}

// -----

// Without a main definition nothing changes.

// CHECK-NOT: stdout
// CHECK-NOT: setvbuf
// CHECK-LABEL: func.func private @main()
// CHECK-LABEL: func.func @f
// CHECK-NEXT: return
func.func private @main()
func.func @f() {
  return
}

// -----

// expected-error @+1 {{mesh-line-buffer-stdout: the symbol 'setvbuf' is reserved for the C library's setvbuf, of type '!llvm.func<i32 (ptr, ptr, i32, i64)>'}}
func.func private @setvbuf(i32)
func.func @main() {
  return
}

// -----

// expected-error @+1 {{mesh-line-buffer-stdout: the symbol 'stdout' is reserved for the C library}}
func.func private @stdout()
func.func @main() {
  return
}

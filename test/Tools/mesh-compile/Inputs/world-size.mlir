// A mesh over every process: main prints the size of its axis (the number
// of processes, 1 without a launcher).
mesh.mesh @world(["x" = ?])
func.func private @printI64(i64)
func.func private @printNewline()
func.func @main() -> i32 {
  %n = mesh.axis_size @world "x" : index
  %i = arith.index_cast %n : index to i64
  func.call @printI64(%i) : (i64) -> ()
  func.call @printNewline() : () -> ()
  %z = arith.constant 0 : i32
  return %z : i32
}

#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds test/Install/consumer
# against it with find_package(Mesh), and runs it on 8 ranks.
set -euo pipefail
BUILD_DIR=$1; SRC=$(cd "$(dirname "$0")" && pwd)/consumer
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cmake --install "$BUILD_DIR" --prefix "$TMP/prefix" > "$TMP/install.log"
cmake -S "$SRC" -B "$TMP/build" -G Ninja -DCMAKE_PREFIX_PATH="$TMP/prefix" \
  -DCMAKE_CXX_COMPILER="${CXX:-c++}" > "$TMP/configure.log" || { cat "$TMP/configure.log"; exit 1; }
cmake --build "$TMP/build" > "$TMP/build.log" || { cat "$TMP/build.log"; exit 1; }
mpirun -n 8 "$TMP/build/consumer" | sort
echo "consumer: built against the installed package and ran on 8 ranks"
# The installed Python package: libmeshrt and mesh-compile found through
# the loader's path and PATH, not the build tree.
PYDIR=$(ls -d "$TMP"/prefix/lib/python3*/dist-packages)
cat > "$TMP/use.py" <<'EOF'
import numpy as np
import mesh.compiler, mesh.distributed as dist, mesh.runtime
m = dist.init_device_mesh("cpu", (-1,), mesh_dim_names=("x",))
x = np.ones(3, np.float32)
m.get_group("x").all_reduce(x)
assert (x == dist.get_world_size()).all(), x
lib = mesh.compiler.compile_string("""
func.func @twice(%a: tensor<3xf32>) -> tensor<3xf32> attributes {llvm.emit_c_interface} {
  %y = arith.addf %a, %a : tensor<3xf32>
  return %y : tensor<3xf32>
}""", name="twice")
with mesh.runtime.load(lib) as mod:
    assert (mod.twice(x) == 2 * x).all()
print("python: rank", dist.get_rank(), "ok with", dist.__file__)
EOF
env -u MESHRT_LIBRARY -u MESH_COMPILE -u MESH_BUILD_DIR PYTHONPATH="$PYDIR" \
  LD_LIBRARY_PATH="$TMP/prefix/lib" PATH="$TMP/prefix/bin:$PATH" \
  mpirun -n 2 -x PYTHONPATH -x LD_LIBRARY_PATH -x PATH /usr/bin/python3 "$TMP/use.py" | sort
echo "consumer: the installed Python package ran on 2 ranks"

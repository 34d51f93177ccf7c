# -*- Python -*-
# lit configuration of the mesh compiler's test suite.

import os
import platform

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MESH"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mesh_obj_root, "test")
config.excludes = ["Inputs", "regressions", "upstream", "Install", "Executable", "CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%mesh_src_root", config.mesh_src_root))
config.substitutions.append(("%mesh_obj_root", config.mesh_obj_root))
# The version of mesh (meshrt.h's MESHRT_VERSION_*), the longer names first.
major, minor, patch = config.mesh_version.split(".")
config.substitutions.append(("%mesh_version_major", major))
config.substitutions.append(("%mesh_version_minor", minor))
config.substitutions.append(("%mesh_version", config.mesh_version))
# The clang mesh-compile runs, and the directory of MLIR's runtime libraries.
config.substitutions.append(("%mesh_clang", config.mesh_clang))
config.substitutions.append(("%llvm_lib_dir", config.llvm_lib_dir))
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.mesh_tools_dir, config.llvm_tools_dir]
tools = ["mesh-opt", "mesh-lsp-server", "mlir-translate", "mlir-opt"]
if config.mesh_has_fuzzer:
    tools.append("mesh-fuzz")
    config.available_features.add("fuzzer")
llvm_config.add_tool_substitutions(tools, tool_dirs)

# mesh-compile's --cpu default and its start-up check are x86-64 only.
if platform.machine() == "x86_64":
    config.available_features.add("x86_64")

# The CUDA toolkit of --mesh-to-nvvm (same search as its cuda-path option:
# $CUDA_HOME, else /usr/local/cuda). Tests that run ptxas (directly, or
# through gpu-module-to-binary) say REQUIRES: ptxas.
cuda_path = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
ptxas = os.path.join(cuda_path, "bin", "ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
    config.substitutions.append(("%cuda_path", cuda_path))

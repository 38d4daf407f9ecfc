# -*- Python -*-
# lit configuration of the flash-mlir test suite.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FLASH"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
# .test files are the torch-free Python suites (argument checks, kernel
# variants and the cache), run with the system python3.
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flash_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%flash_src", config.flash_src_root))
config.substitutions.append(("%flash_obj", config.flash_obj_root))
# The dialect and pass plugin of upstream mlir-opt (test/Plugin).
config.substitutions.append(
    ("%flash_plugin",
     os.path.join(config.flash_obj_root, "lib", "FlashMLIRPlugin.so")))
# Test/Install builds a project of its own; through ccache when there is one.
launcher = shutil.which("ccache")
config.substitutions.append(
    ("%cxx_launcher",
     "-DCMAKE_CXX_COMPILER_LAUNCHER=" + launcher if launcher else ""))
runner_libs = ",".join(
    os.path.join(config.llvm_lib_dir, lib)
    for lib in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so")
)
config.substitutions.append(("%mlir_runner_libs", runner_libs))
# The Python harness of the executing tests finds the tools through these.
config.environment["FLASH_OPT"] = os.path.join(config.flash_tools_dir, "flash-opt")
config.environment["MLIR_RUNNER"] = os.path.join(config.llvm_tools_dir, "mlir-runner")
config.environment["MLIR_RUNNER_LIBS"] = runner_libs
config.environment["PYTHONPATH"] = os.path.join(config.flash_src_root, "python")

# format=bin and cubins need ptxas (the GPU pipeline looks in /usr/local/cuda).
if shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("ptxas")

llvm_config.with_system_environment(
    ["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"])
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.flash_tools_dir, append_path=True)
llvm_config.use_default_substitutions()

tool_dirs = [config.flash_tools_dir, config.llvm_tools_dir]
tools = ["flash-opt", "flash-compile", "mlir-runner", "mlir-opt"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

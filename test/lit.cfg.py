# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "FMHA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fmha_obj_root, "test")
# (test/gpu holds the accelerator's scripts, no .mlir or .test file: a
# "gpu" here would also exclude test/Conversion/gpu, whose lit tests run.)
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in",
                   "unit", "Inputs", "install", "conformance"]

config.substitutions.append(("%fmha_src_root", config.fmha_src_root))
config.substitutions.append(
    ("%fmha_plugin", os.path.join(config.fmha_obj_root, "lib", "libFmhaPlugin.so")))
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.fmha_tools_dir, append_path=True)
tools = ["fmha-opt", "fmha-compile", "fmha-run"]

# ptxas (the CUDA toolkit's): tests of register, barrier and spill figures of
# the PTX run only where it is installed.
import shutil
ptxas = shutil.which("ptxas") or shutil.which("ptxas", path="/usr/local/cuda/bin")
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
llvm_config.add_tool_substitutions(tools, [config.fmha_tools_dir])

# The sanitizer build (test/sanitizers/Sanitizers.cmake): upstream mlir-opt is
# not instrumented, so loading the instrumented plugin needs the ASan runtime
# preloaded into it, with the options the project's own tools have built in
# (support/lib/SanitizerDefaults.cpp).
if getattr(config, "fmha_sanitizers", False):
    config.substitutions.insert(
        0, (r"(?<![\w/.-])mlir-opt-22\b",
            "env LD_PRELOAD=%s ASAN_OPTIONS=allow_user_poisoning=0 mlir-opt-22"
            % config.fmha_asan_runtime))
    config.available_features.add("sanitizers")

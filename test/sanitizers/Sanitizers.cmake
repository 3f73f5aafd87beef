# Test settings of the sanitizer build (FMHA_ENABLE_SANITIZERS or
# FMHA_ENABLE_FUZZERS), included by test/CMakeLists.txt.
#
# Instrumented executables carry the ASan runtime themselves (clang links it
# statically) and the options of support/lib/SanitizerDefaults.cpp, with
# LeakSanitizer on. Two kinds of test host instrumented code in a process
# that is not instrumented:
#   - upstream mlir-opt-22 loading libFmhaPlugin.so (lit): the ASan runtime
#     is preloaded into that one command (lit.cfg.py);
#   - Python loading libfmha_runtime.so through ctypes: the same preload, with
#     leak detection off for the interpreter (CPython does not free its own
#     objects at exit, so LSan would report the interpreter, not FMHA). The
#     runtime's leaks are covered by the C and C++ tests, which run with LSan.
#
# FMHA_ASAN_RUNTIME: the shared ASan runtime (it holds UBSan's handlers too).
# FMHA_SANITIZER_PRELOAD_ENV: the environment of a test whose process is an
# uninstrumented interpreter.

set(FMHA_SANITIZERS_ON FALSE)
if(FMHA_ENABLE_SANITIZERS OR FMHA_ENABLE_FUZZERS)
  set(FMHA_SANITIZERS_ON TRUE)
  execute_process(
    COMMAND ${CMAKE_CXX_COMPILER}
      -print-file-name=libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so
    OUTPUT_VARIABLE FMHA_ASAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT EXISTS "${FMHA_ASAN_RUNTIME}")
    message(FATAL_ERROR "the sanitizer build needs the shared ASan runtime "
      "of ${CMAKE_CXX_COMPILER} (clang's libclang_rt.asan-*.so)")
  endif()
  set(FMHA_SANITIZER_PRELOAD_ENV
    "LD_PRELOAD=${FMHA_ASAN_RUNTIME}"
    "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1")
endif()

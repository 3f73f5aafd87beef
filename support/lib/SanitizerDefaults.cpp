//===- SanitizerDefaults.cpp - Runtime options of the sanitizer build -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Compiled into every target of a sanitizer build (FMHA_ENABLE_SANITIZERS or
// FMHA_ENABLE_FUZZERS; support/CMakeLists.txt adds it to FMHASupport's
// interface), never into a normal build. ASAN_OPTIONS and UBSAN_OPTIONS in the
// environment still override these.
//
// allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons fresh slabs and
// unpoisons what it hands out, but only where it is compiled with ASan. Our
// instrumented code inlines its slow path and poisons slabs of allocators
// that the uninstrumented libMLIR.so then allocates from without unpoisoning
// (e.g. MLIRContext's attribute storage): false use-after-poison reports.
// Manual poisoning is turned off; heap, stack and global checks stay on.
//
// allocator_may_return_null=1: the runtime and the tools handle a failed
// allocation (a null from aligned_alloc, std::bad_alloc from new) with an
// error message; by default ASan aborts instead of returning.
//
//===----------------------------------------------------------------------===//

extern "C" {

__attribute__((used, visibility("default"))) const char *
__asan_default_options() {
  return "allow_user_poisoning=0:allocator_may_return_null=1";
}

__attribute__((used, visibility("default"))) const char *
__ubsan_default_options() {
  return "print_stacktrace=1";
}

} // extern "C"

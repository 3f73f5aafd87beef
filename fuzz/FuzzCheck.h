//===- FuzzCheck.h - Invariant checks for the fuzz targets ------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// FUZZ_CHECK(cond, message) aborts with the message when an invariant does
// not hold, so that libFuzzer records the input as a crash (like a sanitizer
// report). Compiled in every build type.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_FUZZ_FUZZCHECK_H
#define FMHA_FUZZ_FUZZCHECK_H

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fmha::fuzz {

[[noreturn]] inline void checkFailed(const char *cond, const std::string &msg,
                                     const char *file, int line) {
  std::fprintf(stderr, "%s:%d: invariant '%s' does not hold: %s\n", file, line,
               cond, msg.c_str());
  std::fflush(stderr);
  std::abort();
}

} // namespace fmha::fuzz

#define FUZZ_CHECK(cond, msg)                                                  \
  do {                                                                         \
    if (!(cond))                                                               \
      ::fmha::fuzz::checkFailed(#cond, (msg), __FILE__, __LINE__);             \
  } while (false)

#endif // FMHA_FUZZ_FUZZCHECK_H

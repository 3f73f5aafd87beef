//===- Util.h - Small helpers shared by the runtime sources -----*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Internal to runtime/: file reading, strict number parsing and quoting of
// untrusted bytes for one-line error messages.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_LIB_UTIL_H
#define FMHA_RUNTIME_LIB_UTIL_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fmha::rt::detail {

/// Reads the whole file into *out. On failure sets *err to "cannot open
/// file: REASON" style text (without the path) and returns false.
bool readFile(const std::string &path, std::string *out, std::string *err);

/// Decimal integer, optional leading '-', nothing else (no spaces, no '+').
std::optional<int64_t> parseInt(std::string_view s);

/// A finite decimal floating-point number (strtod syntax without leading
/// spaces, no inf/nan, no hex).
std::optional<double> parseFiniteDouble(std::string_view s);

/// `s` in single quotes with non-printable bytes escaped (\n, \xNN) and cut
/// to `maxLen` bytes, so that any input makes a one-line message.
std::string quote(std::string_view s, size_t maxLen = 64);

/// `s` with every byte outside printable ASCII written as \xNN (backslashes
/// left alone), for messages built from already-quoted parts.
std::string printable(std::string_view s);

/// Characters of identifiers (manifest names and expressions).
inline bool isNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool isDigit(char c) { return c >= '0' && c <= '9'; }
inline bool isNameChar(char c) { return isNameStart(c) || isDigit(c); }

/// Overflow-checked product of non-negative values.
bool mulOverflows(int64_t a, int64_t b, int64_t *out);

} // namespace fmha::rt::detail

#endif // FMHA_RUNTIME_LIB_UTIL_H

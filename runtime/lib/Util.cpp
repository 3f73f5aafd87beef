//===- Util.cpp - Small helpers shared by the runtime sources -------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "Util.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fmha::rt::detail {

bool readFile(const std::string &path, std::string *out, std::string *err) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *err = std::string("cannot open file: ") + std::strerror(errno);
    return false;
  }
  out->clear();
  char buf[1 << 16];
  while (true) {
    size_t n = std::fread(buf, 1, sizeof(buf), f);
    out->append(buf, n);
    if (n < sizeof(buf))
      break;
  }
  bool failed = std::ferror(f);
  int savedErrno = errno;
  std::fclose(f);
  if (failed) {
    *err = std::string("cannot read file: ") + std::strerror(savedErrno);
    return false;
  }
  return true;
}

std::optional<int64_t> parseInt(std::string_view s) {
  if (s.empty() || s[0] == '+')
    return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size())
    return std::nullopt;
  return v;
}

std::optional<double> parseFiniteDouble(std::string_view s) {
  if (s.empty() || s.size() > 256)
    return std::nullopt;
  for (char c : s) {
    // Digits, sign, point and exponent only: this rules out spaces, inf,
    // nan and hex floats, which strtod would accept.
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' ||
          c == 'e' || c == 'E'))
      return std::nullopt;
  }
  std::string copy(s);
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || errno == ERANGE || !std::isfinite(v))
    return std::nullopt;
  return v;
}

std::string quote(std::string_view s, size_t maxLen) {
  std::string out = "'";
  size_t n = s.size() < maxLen ? s.size() : maxLen;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  out += "'";
  if (n < s.size())
    out += "...";
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

bool mulOverflows(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

} // namespace fmha::rt::detail

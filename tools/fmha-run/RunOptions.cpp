//===- RunOptions.cpp - fmha-run's command line ---------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "RunOptions.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fmha::runopt {

using namespace fmha::rt;

void fail(const std::string &message) { throw ToolError{message}; }

std::string flagName(const std::string &name) {
  return (name.size() == 1 ? "-" : "--") + name;
}

void CommandLine::parse(int argc, const char *const *argv) {
  bool endOfOptions = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!endOfOptions && arg == "--") {
      endOfOptions = true;
      continue;
    }
    if (endOfOptions || arg.size() < 2 || arg[0] != '-') {
      if (file_)
        fail("unexpected argument '" + arg + "' (one bundle FILE at most)");
      file_ = arg;
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string> value;
    size_t eq = body.find('=');
    if (eq != std::string::npos) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    if (body == "h")
      body = "help";
    const OptionDef *def = nullptr;
    for (const OptionDef &o : kOptions)
      if (body == o.name)
        def = &o;
    if (!def)
      fail("unknown option '" + arg + "'; see --help");
    if (def->takesValue) {
      if (!value) {
        if (i + 1 >= argc)
          fail(flagName(body) + " requires a value");
        value = argv[++i];
      }
    } else if (!value) {
      value = "true";
    } else if (*value == "true" || *value == "1") {
      value = "true";
    } else if (*value == "false" || *value == "0") {
      value = "false";
    } else {
      fail(flagName(body) + ": '" + *value +
           "' is not a boolean (true or false)");
    }
    if (!values_.emplace(body, *value).second)
      fail(flagName(body) + " given more than once");
  }
}

std::optional<int64_t> CommandLine::integer(const std::string &name,
                                            int64_t min) const {
  std::optional<std::string> s = str(name);
  if (!s)
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s->c_str(), &end, 10);
  bool digits =
      !s->empty() &&
      ((*s)[0] == '-' || std::isdigit(static_cast<unsigned char>((*s)[0])));
  if (!digits || *end != '\0' || errno == ERANGE || v < min)
    fail(flagName(name) + ": '" + *s + "' is not " +
         (min == 1   ? "a positive integer"
          : min == 0 ? "a non-negative integer"
                     : "an integer >= " + std::to_string(min)));
  return v;
}

std::optional<std::vector<int64_t>>
CommandLine::lengths(const std::string &name, int64_t max) const {
  std::optional<std::string> s = str(name);
  if (!s)
    return std::nullopt;
  std::vector<int64_t> values;
  size_t at = 0;
  while (true) {
    const size_t comma = s->find(',', at);
    const std::string item = s->substr(at, comma - at);
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || !std::isdigit(static_cast<unsigned char>(item[0])) ||
        *end != '\0' || errno == ERANGE || v > max)
      fail(flagName(name) + ": '" + item + "' is not a length from 0 to " +
           std::to_string(max) +
           " (the option takes comma-separated lengths, e.g. 7,0,130)");
    values.push_back(v);
    if (comma == std::string::npos)
      return values;
    at = comma + 1;
  }
}

std::optional<uint64_t>
CommandLine::unsignedInteger(const std::string &name) const {
  std::optional<std::string> s = str(name);
  if (!s)
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(s->c_str(), &end, 10);
  if (s->empty() || !std::isdigit(static_cast<unsigned char>((*s)[0])) ||
      *end != '\0' || errno == ERANGE)
    fail(flagName(name) + ": '" + *s + "' is not a non-negative integer");
  return v;
}

std::optional<double>
CommandLine::nonNegativeReal(const std::string &name) const {
  std::optional<std::string> s = str(name);
  if (!s)
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(s->c_str(), &end);
  if (s->empty() || std::isspace(static_cast<unsigned char>((*s)[0])) ||
      *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < 0 ||
      !std::isfinite(static_cast<float>(v)))
    fail(flagName(name) + ": '" + *s + "' is not a finite non-negative number");
  return v;
}

std::string formatReal(double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", x);
  return buf;
}

Signature signatureFromBundle(const CommandLine &cl,
                              const rt::BundleMeta &meta) {
  Signature s;
  s.hq = meta.hq;
  s.hk = meta.hk;
  s.d = meta.d;
  s.dv = meta.dv;
  s.dtype = meta.dtype;
  s.mask = meta.mask;
  s.scale = meta.effectiveScale();
  s.softcap = meta.softcap;
  s.sinks = meta.sinks;
  s.blockM = meta.blockM;
  s.blockN = meta.blockN;
  auto mismatch = [&](const std::string &flag, const std::string &given,
                      const std::string &key, const std::string &bundle) {
    fail(flagName(flag) + "=" + given + " does not match the bundle (" + key +
         "=" + bundle + ")");
  };
  struct IntFlag {
    const char *flag, *key;
    int64_t bundle;
  } ints[] = {{"hq", "hq", meta.hq},
              {"hk", "hk", meta.hk},
              {"d", "d", meta.d},
              {"dv", "dv", meta.dv},
              {"block-m", "block_m", meta.blockM},
              {"block-n", "block_n", meta.blockN}};
  for (const IntFlag &f : ints)
    if (std::optional<int64_t> v = cl.integer(f.flag, 1); v && *v != f.bundle)
      mismatch(f.flag, std::to_string(*v), f.key, std::to_string(f.bundle));
  if (std::optional<std::string> t = cl.str("dtype")) {
    std::optional<DType> dt = parseDType(*t);
    if (!dt)
      fail("--dtype: '" + *t + "' is not one of f32, f16, bf16");
    if (*dt != meta.dtype)
      mismatch("dtype", *t, "dtype", toString(meta.dtype));
  }
  if (std::optional<std::string> m = cl.str("mask")) {
    std::string err;
    std::optional<MaskSpec> spec = MaskSpec::parse(*m, &err);
    if (!spec)
      fail("--mask: " + err);
    if (*spec != meta.mask)
      mismatch("mask", *m, "mask", meta.mask.str());
  }
  if (std::optional<double> x = cl.nonNegativeReal("scale")) {
    float given = static_cast<float>(*x);
    if (given != meta.scale && given != meta.effectiveScale())
      mismatch("scale", *cl.str("scale"), "scale",
               formatReal(meta.effectiveScale()));
  }
  if (std::optional<double> x = cl.nonNegativeReal("softcap"))
    if (static_cast<float>(*x) != meta.softcap)
      mismatch("softcap", *cl.str("softcap"), "softcap",
               formatReal(meta.softcap));
  return s;
}

} // namespace fmha::runopt

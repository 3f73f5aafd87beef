//===- CompileOptionsFuzzer.cpp - Fuzz fmha-compile's command line --------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Input: command-line arguments separated by NUL bytes. They go through
// LLVM's command-line parser (errors returned, not exiting) and fmha-compile's
// signature checks, which either give valid bundle metadata or a message.
//
// Only fmha-compile's own options reach the parser: arguments naming other
// registered LLVM options (--help, --version, -debug-only, ... which exit or
// change global state by design) and response files (@FILE) are dropped.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "CompileOptions.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cl = llvm::cl;
using namespace fmha;

namespace {

bool isFmhaCompileOption(llvm::StringRef name) {
  auto &options = cl::getRegisteredOptions();
  auto it = options.find(name);
  if (it == options.end())
    return false;
  for (cl::OptionCategory *c : it->second->Categories)
    if (c == &compile::category)
      return true;
  return false;
}

/// Whether the parser may see `arg`.
bool keep(llvm::StringRef arg) {
  if (arg.starts_with("@"))
    return false;
  if (!arg.starts_with("-") || arg == "-" || arg == "--")
    return true;
  llvm::StringRef name = arg.drop_front(arg.starts_with("--") ? 2 : 1);
  name = name.take_until([](char c) { return c == '='; });
  return isFmhaCompileOption(name);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> args{"fmha-compile"};
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      if (keep(current))
        args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (!current.empty() && keep(current))
    args.push_back(current);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());

  cl::ResetAllOptionOccurrences();
  // Errors go to `os`, or to llvm::errs() for bad option values (LLVM's
  // parsers print those themselves); either way parsing returns false.
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (!cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(),
                                   "", &os))
    return 0;
  std::string error;
  std::optional<rt::BundleMeta> meta = compile::bundleMetaFromOptions(&error);
  if (!meta) {
    FUZZ_CHECK(!error.empty(), "a signature error without a message");
    return 0;
  }
  FUZZ_CHECK(meta->validate().empty(),
             "accepted options give invalid metadata: " + meta->validate());
  std::string bytes;
  FUZZ_CHECK(rt::serializeBundle(*meta, "binary", &bytes, &error),
             "accepted options give metadata that does not serialize: " +
                 error);
  return 0;
}

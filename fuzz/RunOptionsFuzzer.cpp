//===- RunOptionsFuzzer.cpp - Fuzz fmha-run's command line ----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Input: command-line arguments separated by NUL bytes. fmha-run's parser
// and every option check it makes before loading anything (the numbers, the
// mask, and the signature flags against a bundle's) either accept the
// arguments or throw a ToolError with a message; nothing crashes or exits.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "RunOptions.h"

#include <cstdint>
#include <string>
#include <vector>

using namespace fmha;
using namespace fmha::runopt;

namespace {

rt::BundleMeta exampleBundle() {
  rt::BundleMeta m;
  m.hq = 8;
  m.hk = 2;
  m.d = 64;
  m.dv = 64;
  m.mask = *MaskSpec::parse("b:256,0,4");
  m.blockM = 64;
  m.blockN = 64;
  m.kernel = "fmha_fwd";
  return m;
}

/// What fmha-run checks from the command line alone, in its order.
void checkOptions(const CommandLine &cl) {
  (void)cl.flag("help");
  (void)cl.flag("version");
  (void)cl.integer("iters", 1);
  (void)cl.integer("warmup", 0);
  (void)cl.unsignedInteger("seed");
  (void)cl.flag("show-mask");
  if (cl.file()) {
    static const rt::BundleMeta meta = exampleBundle();
    (void)signatureFromBundle(cl, meta);
  } else {
    if (std::optional<std::string> m = cl.str("mask")) {
      std::string err;
      if (!MaskSpec::parse(*m, &err))
        fail("--mask: " + err);
    }
    (void)cl.integer("block-m", 1);
    (void)cl.integer("block-n", 1);
  }
  for (const char *size : {"b", "sq", "sk"})
    (void)cl.integer(size, 1);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> args{"fmha-run"};
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (!current.empty())
    args.push_back(current);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  argv.push_back(nullptr);
  try {
    CommandLine cl;
    cl.parse(static_cast<int>(args.size()), argv.data());
    checkOptions(cl);
  } catch (const ToolError &e) {
    FUZZ_CHECK(!e.message.empty(), "an error without a message");
  }
  return 0;
}

//===- BundleFuzzer.cpp - Fuzz the bundle reader --------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Input: the bytes of a bundle file. parseBundle accepts it or returns a
// one-line message (printable ASCII, naming the bundle). An accepted bundle
// validates, serializes in its own version, and reads back to the same
// metadata (its manifest included) and binary; an accepted version-1 bundle
// also serializes as version 2 and reads back to the same manifest.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "fmha/Runtime/Bundle.h"

#include <cstdint>
#include <string>
#include <string_view>

using namespace fmha::rt;

namespace {

bool sameMeta(const BundleMeta &a, const BundleMeta &b) {
  return a.target == b.target && a.chip == b.chip && a.kind == b.kind &&
         a.dtype == b.dtype && a.hq == b.hq && a.hk == b.hk && a.d == b.d &&
         a.dv == b.dv && a.mask == b.mask && a.scale == b.scale &&
         a.softcap == b.softcap && a.blockM == b.blockM &&
         a.blockN == b.blockN && a.blockThreads == b.blockThreads &&
         a.sharedBytes == b.sharedBytes && a.kernel == b.kernel &&
         a.abi == b.abi && a.binaryFormat == b.binaryFormat &&
         a.formatVersion == b.formatVersion &&
         a.manifest.str() == b.manifest.str();
}

bool isOneLine(const std::string &s) {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e)
      return false;
  return !s.empty();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  BundleMeta meta;
  std::string binary, err;
  if (!parseBundle(bytes, "fuzz.fmha", &meta, &binary, &err)) {
    FUZZ_CHECK(isOneLine(err), "message is not one printable line: " + err);
    FUZZ_CHECK(err.rfind("bundle 'fuzz.fmha': ", 0) == 0,
               "message does not name the bundle: " + err);
    return 0;
  }
  FUZZ_CHECK(meta.validate().empty(),
             "accepted metadata does not validate: " + meta.validate());
  FUZZ_CHECK(!binary.empty(), "accepted an empty binary");
  std::string out;
  FUZZ_CHECK(serializeBundle(meta, binary, &out, &err, meta.formatVersion),
             "an accepted bundle does not serialize: " + err);
  BundleMeta again;
  std::string binary2;
  FUZZ_CHECK(parseBundle(out, "again", &again, &binary2, &err),
             "a serialized bundle does not parse: " + err);
  FUZZ_CHECK(sameMeta(meta, again), "metadata changes in a round trip");
  FUZZ_CHECK(binary == binary2, "binary changes in a round trip");
  std::string out2;
  FUZZ_CHECK(
      serializeBundle(again, binary2, &out2, &err, again.formatVersion) &&
          out2 == out,
      "serialization is not stable");
  if (meta.formatVersion == 1) {
    std::string v2;
    FUZZ_CHECK(serializeBundle(meta, binary, &v2, &err),
               "a version-1 bundle does not serialize as version 2: " + err);
    BundleMeta upgraded;
    FUZZ_CHECK(parseBundle(v2, "v2", &upgraded, &binary2, &err),
               "a version-1 bundle written as version 2 does not parse: " +
                   err);
    FUZZ_CHECK(upgraded.manifest.str() == meta.manifest.str() &&
                   binary2 == binary,
               "the manifest changes from version 1 to version 2");
  }
  return 0;
}

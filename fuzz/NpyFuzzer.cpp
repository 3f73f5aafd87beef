//===- NpyFuzzer.cpp - Fuzz the .npy reader -------------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Input: the bytes of a .npy file. parseNpy accepts it or returns a one-line
// message naming the array. An accepted array has as many elements as its
// shape says, and writing it as float32 and reading it back gives the same
// shape and the same bits.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "fmha/Runtime/Npy.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

using namespace fmha::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  NpyArray a;
  std::string err;
  if (!parseNpy(bytes, "fuzz.npy", &a, &err)) {
    bool printable = !err.empty();
    for (unsigned char c : err)
      printable &= c >= 0x20 && c <= 0x7e;
    FUZZ_CHECK(printable, "message is not one printable line: " + err);
    FUZZ_CHECK(err.rfind("npy 'fuzz.npy': ", 0) == 0,
               "message does not name the array: " + err);
    return 0;
  }
  FUZZ_CHECK(a.descr == "<f4" || a.descr == "<f2", "accepted dtype " + a.descr);
  uint64_t count = 1;
  for (int64_t dim : a.shape) {
    FUZZ_CHECK(dim >= 0, "negative dimension in " + formatShape(a.shape));
    count *= static_cast<uint64_t>(dim);
  }
  FUZZ_CHECK(count == a.data.size(),
             "shape " + formatShape(a.shape) + " does not match " +
                 std::to_string(a.data.size()) + " elements");
  std::string out = serializeNpy(a.shape, a.data.data());
  NpyArray b;
  FUZZ_CHECK(parseNpy(out, "again.npy", &b, &err),
             "a written array does not read back: " + err);
  FUZZ_CHECK(b.shape == a.shape && b.descr == "<f4",
             "shape or dtype changes in a round trip");
  FUZZ_CHECK(
      b.data.size() == a.data.size() &&
          (a.data.empty() || std::memcmp(b.data.data(), a.data.data(),
                                         a.data.size() * sizeof(float)) == 0),
      "data changes in a round trip");
  return 0;
}

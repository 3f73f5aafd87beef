//===- NpyFuzzer.cpp - Fuzz the .npy reader -------------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Input: the bytes of a .npy file. parseNpy accepts it or returns a one-line
// message naming the array. An accepted array has as many elements as its
// shape says, and writing it (float32, or int32 for '<i4') and reading it
// back gives the same shape and the same bits.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "fmha/Runtime/Npy.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

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
  FUZZ_CHECK(a.descr == "<f4" || a.descr == "<f2" || a.descr == "<i4",
             "accepted dtype " + a.descr);
  // int32 arrays ('<i4', a variable-length batch's offsets) hold their
  // values in `ints`, the others in `data`.
  const bool ints = a.descr == "<i4";
  const size_t elements = ints ? a.ints.size() : a.data.size();
  FUZZ_CHECK(ints ? a.data.empty() : a.ints.empty(),
             "values in both data and ints");
  uint64_t count = 1;
  for (int64_t dim : a.shape) {
    FUZZ_CHECK(dim >= 0, "negative dimension in " + formatShape(a.shape));
    count *= static_cast<uint64_t>(dim);
  }
  FUZZ_CHECK(count == elements, "shape " + formatShape(a.shape) +
                                    " does not match " +
                                    std::to_string(elements) + " elements");
  std::string out = ints ? serializeNpy(a.shape, a.ints.data())
                         : serializeNpy(a.shape, a.data.data());
  NpyArray b;
  FUZZ_CHECK(parseNpy(out, "again.npy", &b, &err),
             "a written array does not read back: " + err);
  FUZZ_CHECK(b.shape == a.shape && b.descr == (ints ? "<i4" : "<f4"),
             "shape or dtype changes in a round trip");
  FUZZ_CHECK(ints ? b.ints == a.ints
                  : b.data.size() == a.data.size() &&
                        (a.data.empty() ||
                         std::memcmp(b.data.data(), a.data.data(),
                                     a.data.size() * sizeof(float)) == 0),
             "data changes in a round trip");
  return 0;
}

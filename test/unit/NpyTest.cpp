//===- NpyTest.cpp - .npy reading and writing -----------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Npy.h"
#include "fmha/Runtime/Half.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace fmha::rt;
using fmha::test::TempDir;

namespace {

/// .npy bytes with a given header dict (padded like NumPy) and raw data.
std::string npyBytes(const std::string &dict, const std::string &data,
                     int major = 1) {
  std::string header = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string floatData(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(float));
}

std::string parseError(const std::string &bytes) {
  NpyArray a;
  std::string err;
  EXPECT_FALSE(parseNpy(bytes, "x.npy", &a, &err));
  return err;
}

TEST(Npy, WriteReadRoundTrip) {
  TempDir dir;
  std::vector<float> data(2 * 3 * 4);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i) * 0.5f - 3.0f;
  std::string path = dir.file("a.npy");
  std::string err;
  ASSERT_TRUE(writeNpy(path, {2, 3, 4}, data.data(), &err)) << err;
  NpyArray a;
  ASSERT_TRUE(readNpy(path, &a, &err)) << err;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(a.descr, "<f4");
  EXPECT_EQ(a.data, data);
  // The header is what NumPy writes: 64-byte aligned data, '\n' at the end.
  std::string bytes = fmha::test::readBytes(path);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t dataStart = bytes.size() - data.size() * sizeof(float);
  EXPECT_EQ(dataStart % 64, 0u);
  EXPECT_EQ(bytes[dataStart - 1], '\n');
  EXPECT_NE(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(2, 3, 4), }"),
            std::string::npos);
}

TEST(Npy, ScalarAndOneDimensional) {
  std::vector<float> one = {42.0f};
  NpyArray a;
  std::string err;
  ASSERT_TRUE(parseNpy(serializeNpy({}, one.data()), "s.npy", &a, &err)) << err;
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.data, one);
  std::vector<float> five = {1, 2, 3, 4, 5};
  std::string bytes = serializeNpy({5}, five.data());
  EXPECT_NE(bytes.find("'shape': (5,)"), std::string::npos);
  ASSERT_TRUE(parseNpy(bytes, "v.npy", &a, &err)) << err;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(a.data, five);
  ASSERT_TRUE(
      parseNpy(serializeNpy({0, 3}, static_cast<const float *>(nullptr)),
               "e.npy", &a, &err))
      << err;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(a.data.empty());
}

TEST(Npy, Int32RoundTrip) {
  // The offsets of a variable-length batch (cu_seqlens_q.npy): '<i4'.
  std::vector<int32_t> cu = {0, 37, 37, 42, 1 << 30};
  std::string bytes = serializeNpy({5}, cu.data());
  EXPECT_NE(bytes.find("'descr': '<i4'"), std::string::npos);
  EXPECT_EQ(bytes.size() % 64, 5 * 4 % 64);
  NpyArray a;
  std::string err;
  ASSERT_TRUE(parseNpy(bytes, "cu.npy", &a, &err)) << err;
  EXPECT_EQ(a.descr, "<i4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(a.ints, cu);
  EXPECT_TRUE(a.data.empty());
}

TEST(Npy, ReadsFloat16AndVersion2AndOtherSpellings) {
  std::vector<uint16_t> h = {floatToHalfBits(1.5f), floatToHalfBits(-2.0f),
                             floatToHalfBits(65504.0f)};
  std::string data(reinterpret_cast<const char *>(h.data()), 6);
  NpyArray a;
  std::string err;
  ASSERT_TRUE(parseNpy(npyBytes("{'descr': '<f2', 'fortran_order': False, "
                                "'shape': (3,), }",
                                data),
                       "h.npy", &a, &err))
      << err;
  EXPECT_EQ(a.descr, "<f2");
  EXPECT_EQ(a.data, (std::vector<float>{1.5f, -2.0f, 65504.0f}));
  // Version 2.0, keys in another order, double quotes, no trailing comma.
  ASSERT_TRUE(parseNpy(npyBytes("{\"shape\": (1, 2), \"fortran_order\": "
                                "False, \"descr\": \"<f4\"}",
                                floatData({3, 4}), 2),
                       "v2.npy", &a, &err))
      << err;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.data, (std::vector<float>{3, 4}));
}

TEST(Npy, Errors) {
  const std::string ok =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  EXPECT_EQ(parseError("hello world, not npy"),
            "npy 'x.npy': bad magic: not a .npy file");
  EXPECT_EQ(parseError(""), "npy 'x.npy': bad magic: not a .npy file");
  std::string v3 = npyBytes(ok, floatData({1, 2}), 2);
  v3[6] = 3;
  EXPECT_EQ(parseError(v3), "npy 'x.npy': unsupported .npy format version "
                            "3.0 (reads 1.0 and 2.0)");
  std::string full = npyBytes(ok, floatData({1, 2}));
  EXPECT_EQ(parseError(full.substr(0, 40)),
            "npy 'x.npy': truncated header: it claims 118 bytes, file has 30");
  EXPECT_EQ(parseError(full.substr(0, full.size() - 1)),
            "npy 'x.npy': truncated data: shape (2,) of <f4 needs 8 bytes, "
            "file has 7");
  EXPECT_EQ(parseError(full + "x"),
            "npy 'x.npy': trailing data: shape (2,) of <f4 needs 8 bytes, "
            "file has 9");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': True, "
                                "'shape': (2,), }",
                                floatData({1, 2}))),
            "npy 'x.npy': fortran_order True is not supported (save a C-order "
            "array)");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f8', 'fortran_order': False, "
                                "'shape': (1,), }",
                                std::string(8, '\0'))),
            "npy 'x.npy': unsupported dtype '<f8' (expected '<f4' float32, "
            "'<f2' float16 or '<i4' int32)");
  EXPECT_EQ(parseError(npyBytes("{'descr': '>f4', 'fortran_order': False, "
                                "'shape': (1,), }",
                                std::string(4, '\0'))),
            "npy 'x.npy': unsupported dtype '>f4' (expected '<f4' float32, "
            "'<f2' float16 or '<i4' int32)");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'shape': (1,), }",
                                std::string(4, '\0'))),
            "npy 'x.npy': malformed header: missing key 'fortran_order'");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (1,), 'extra': 1}",
                                std::string(4, '\0'))),
            "npy 'x.npy': malformed header: unknown key 'extra'");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'descr': '<f4', "
                                "'fortran_order': False, 'shape': (1,)}",
                                std::string(4, '\0'))),
            "npy 'x.npy': malformed header: key 'descr' appears twice");
  EXPECT_EQ(parseError(npyBytes("['descr']", "")),
            "npy 'x.npy': malformed header: expected '{'");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': Maybe, "
                                "'shape': (1,)}",
                                std::string(4, '\0'))),
            "npy 'x.npy': malformed header: expected True or False at offset "
            "34");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (1, -2)}",
                                "")),
            "npy 'x.npy': malformed header: expected a non-negative integer in "
            "the shape at offset 54");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (1,)} junk",
                                std::string(4, '\0'))),
            "npy 'x.npy': malformed header: unexpected text after the dict");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4, 'fortran_order': False}", "")),
            "npy 'x.npy': malformed header: expected ',' or '}'");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (4611686018427387904, 4)}",
                                "")),
            "npy 'x.npy': shape (4611686018427387904, 4) is too large");

  NpyArray a;
  std::string err;
  EXPECT_FALSE(readNpy("/nonexistent/q.npy", &a, &err));
  EXPECT_EQ(err, "npy '/nonexistent/q.npy': cannot open file: No such file or "
                 "directory");
}

TEST(Npy, ShapeMismatch) {
  NpyArray a;
  a.shape = {2, 8, 64, 64};
  std::string err;
  EXPECT_TRUE(checkNpyShape(a, "q.npy", {2, 8, 64, 64}, &err));
  EXPECT_FALSE(checkNpyShape(a, "q.npy", {2, 8, 128, 64}, &err));
  EXPECT_EQ(err, "npy 'q.npy': shape (2, 8, 64, 64) does not match the "
                 "expected (2, 8, 128, 64)");
}

TEST(Npy, NeverCrashesOnCorruptHeaders) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  std::string good = serializeNpy({2, 3}, data.data());
  std::mt19937 gen(3);
  for (size_t cut = 0; cut < good.size(); ++cut) {
    NpyArray a;
    std::string err;
    EXPECT_FALSE(parseNpy(good.substr(0, cut), "t.npy", &a, &err));
    EXPECT_EQ(err.find('\n'), std::string::npos);
  }
  for (int n = 0; n < 20000; ++n) {
    std::string bytes = good;
    for (int flips = 0; flips < 3; ++flips)
      bytes[gen() % 72] = static_cast<char>(gen());
    NpyArray a;
    std::string err;
    if (!parseNpy(bytes, "t.npy", &a, &err)) {
      EXPECT_FALSE(err.empty());
      EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    }
  }
}

} // namespace

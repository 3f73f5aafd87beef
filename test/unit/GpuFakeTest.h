//===- GpuFakeTest.h - GPU backends over the fake libraries -----*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What the tests of the CUDA and HIP backends over their fake libraries
// (FakeCuda.cpp, FakeHip.cpp) share. Each runs in an executable of its own,
// since a process keeps the GPU backend it first creates: the vendor file
// (CudaFakeDeviceTest.cpp, HipFakeDeviceTest.cpp) defines fakeTarget() and
// main(), which sets the environment before any test; the tests that do
// not depend on the vendor are in GpuFakeCommonTest.cpp, linked into both.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TEST_UNIT_GPUFAKETEST_H
#define FMHA_TEST_UNIT_GPUFAKETEST_H

#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Reference.h"
#include "fmha/Runtime/Runtime.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fmha::test {

/// A failure the fake injects (PREFIX_FAIL=fn=code) while a kernel runs,
/// and the message it must give.
struct InjectedFailure {
  const char *fail;
  std::string message;
};

/// The backend under test and what the tests expect of it.
struct FakeTarget {
  rt::Target target;
  int capiTarget;          ///< FMHA_TARGET_CUDA or FMHA_TARGET_HIP
  std::string envPrefix;   ///< the fake's: FMHA_FAKE_CUDA, FMHA_FAKE_HIP
  std::string logPath;     ///< the fake's log (PREFIX_LOG)
  int device;              ///< the device the backend binds to
  std::string description; ///< Backend::description() over the fake
  /// Checks that the backend left the calling thread's API state (CUDA's
  /// current context, HIP's current device) as it found it.
  void (*expectThreadStateKept)();
  int64_t sharedLimit; ///< shared memory per block (CUDA: opt-in)
  /// What loading these bundles says: a module the library rejects; one
  /// without the kernel; shared_bytes = sharedLimit + 1; static shared
  /// memory 40000 plus shared_bytes = sharedLimit - 32448; a kernel that
  /// runs 64 threads; a backward bundle; a binary format of the other
  /// vendor.
  struct {
    std::string badImage, missingKernel, sharedOverLimit, staticPlusShared,
        maxThreads, backward, wrongFormat;
  } loadErrors;
  std::vector<InjectedFailure> runFailures;
  std::string outOfMemory;      ///< allocating 4096 of 1000 bytes
  std::string timerNotRecorded; ///< elapsed time before the stop mark
  /// The device's limit on grid.x * block_threads (HIP: 2^32 - 1), or 0.
  int64_t maxGridThreadsX;
};

/// Defined by the vendor's test file.
const FakeTarget &fakeTarget();

inline std::string readLog() { return readBytes(fakeTarget().logPath); }
inline void clearLog() { writeBytes(fakeTarget().logPath, ""); }

/// The runtime's refusal of a buffer too large for an index_bits=32 bundle
/// loaded by loadFake.
inline std::string index32TooLarge(const char *buffer, int64_t elements) {
  return std::string("bundle 'fake.fmha': problem too large for "
                     "index_bits=32: ") +
         buffer + " has " + std::to_string(elements) + " elements, more than " +
         std::to_string(rt::kMaxIndex32Elements) +
         "; compile it with --index-bits=64";
}

inline bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// A bundle of the target under test.
inline rt::BundleMeta fakeMeta(rt::DType dtype, int64_t hq, int64_t hk,
                               int64_t d, int64_t dv, const char *mask = "0") {
  return fakeGpuMeta(fakeTarget().target, dtype, hq, hk, d, dv, mask);
}

inline rt::Expected<std::unique_ptr<rt::Kernel>>
loadFake(const rt::BundleMeta &meta, const std::string &extra = "") {
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(meta, fakeModule(meta, extra), &bytes, &err))
      << err;
  return rt::Kernel::loadBytes(bytes, "fake.fmha");
}

inline rt::Problem makeProblem(const rt::BundleMeta &m, int64_t b, int64_t sq,
                               int64_t sk) {
  rt::Problem p;
  p.b = b;
  p.hq = m.hq;
  p.hk = m.hk;
  p.sq = sq;
  p.sk = sk;
  p.d = m.d;
  p.dv = m.dv;
  return p;
}

/// Host data of one problem in the kernel's storage (f16 or bf16), and its
/// reference.
struct Data {
  std::vector<uint16_t> q, k, v;
  rt::ReferenceForward ref;

  /// Host arguments over this data and the given outputs.
  rt::ForwardArgs args(std::vector<uint16_t> &o, std::vector<float> &lse) {
    return {q.data(), k.data(), v.data(), o.data(), lse.data()};
  }
};

inline Data makeData(const rt::BundleMeta &m, const rt::Problem &p,
                     unsigned seed) {
  Data data;
  std::vector<double> in[3];
  int64_t counts[3] = {p.qElements(), p.kElements(), p.vElements()};
  std::vector<uint16_t> *out[3] = {&data.q, &data.k, &data.v};
  bool half = m.dtype == rt::DType::F16;
  for (int t = 0; t < 3; ++t) {
    std::vector<double> x = randomNormal(counts[t], seed + t);
    for (double &e : x) {
      float f = static_cast<float>(e);
      uint16_t h = half ? rt::floatToHalfBits(f) : rt::floatToBFloat16Bits(f);
      out[t]->push_back(h);
      e = half ? rt::halfBitsToFloat(h) : rt::bfloat16BitsToFloat(h);
    }
    in[t] = x;
  }
  rt::ReferenceConfig cfg{p.b, p.hq, p.hk,   p.sq,    p.sk,
                          p.d, p.dv, m.mask, m.scale, m.softcap};
  std::string err;
  EXPECT_TRUE(rt::referenceForward(cfg, in[0], in[1], in[2], &data.ref, &err))
      << err;
  return data;
}

inline void expectMatches(const rt::BundleMeta &m, const Data &data,
                          const std::vector<uint16_t> &o,
                          const std::vector<float> &lse) {
  ASSERT_EQ(o.size(), data.ref.o.size());
  for (size_t i = 0; i < o.size(); ++i) {
    double got = m.dtype == rt::DType::F16 ? rt::halfBitsToFloat(o[i])
                                           : rt::bfloat16BitsToFloat(o[i]);
    ASSERT_NEAR(got, data.ref.o[i], 1e-2 * (1 + std::fabs(data.ref.o[i])))
        << "o[" << i << "]";
  }
  ASSERT_EQ(lse.size(), data.ref.lse.size());
  for (size_t i = 0; i < lse.size(); ++i) {
    if (std::isinf(data.ref.lse[i]))
      ASSERT_EQ(lse[i], data.ref.lse[i]) << "lse[" << i << "]";
    else
      ASSERT_NEAR(lse[i], data.ref.lse[i], 1e-4 * (1 + std::fabs(lse[i])))
          << "lse[" << i << "]";
  }
}

/// Loads `meta`, runs one problem over host buffers and checks the result.
inline void expectRunsHost(const rt::BundleMeta &meta, int64_t b, int64_t sq,
                           int64_t sk, const std::string &extra = "") {
  rt::Expected<std::unique_ptr<rt::Kernel>> k = loadFake(meta, extra);
  ASSERT_TRUE(k.ok()) << k.message();
  rt::Problem p = makeProblem(meta, b, sq, sk);
  Data data = makeData(meta, p, 3);
  std::vector<uint16_t> o(p.oElements(), 0xFFFF);
  std::vector<float> lse(p.lseElements(), NAN);
  rt::Status s = (*k)->runHost(p, data.args(o, lse));
  ASSERT_TRUE(s.ok()) << s.message();
  expectMatches(meta, data, o, lse);
}

/// The main() of a fake-device executable: points `target`'s log into a
/// fresh directory, sets PREFIX_LOG and the variables of `env` (null
/// unsets) before any test, since the process keeps the backend it first
/// creates, and runs the tests.
inline int runFakeDeviceTests(
    int argc, char **argv, FakeTarget &target,
    std::initializer_list<std::pair<const char *, const char *>> env) {
  static TempDir dir;
  target.logPath = dir.file("fake.log");
  setenv((target.envPrefix + "_LOG").c_str(), target.logPath.c_str(), 1);
  setenv(target.envPrefix.c_str(), "device", 1);
  unsetenv((target.envPrefix + "_FAIL").c_str());
  for (const auto &[name, value] : env) {
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

} // namespace fmha::test

#endif // FMHA_TEST_UNIT_GPUFAKETEST_H

//===- GpuFakeMergeTest.cpp - gpu-merge-v1 and gpu-acc-v1 over a fake -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The GPU merge (abi gpu-merge-v1) and accumulate (abi gpu-acc-v1) launches
// over the fake libraries, for every GPU backend: the fake checks the
// parameters, their layout and the grid and computes the result in f32
// (FakeGpu.cpp), which is held against the float64 reference here
// (referenceMerge; for acc the plain sum), in place and off the vector
// alignment; the grid limits (nothing launched past them, a launch at
// them) and a kernel missing from the module. Linked into the CUDA and the
// HIP fake-device executables.
//
//===----------------------------------------------------------------------===//

#include "GpuFakeTest.h"

#include <algorithm>
#include <cstring>

using namespace fmha;
using namespace fmha::rt;
using namespace fmha::test;

namespace {

size_t elementBytes(DType t) { return t == DType::F32 ? 4 : 2; }

/// Values rounded to a dtype: the device's bytes and the values they hold.
struct Stored {
  std::vector<unsigned char> bytes;
  std::vector<double> values;
};

double loadValue(DType t, const unsigned char *p) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::F16 ? halfBitsToFloat(h) : bfloat16BitsToFloat(h);
}

Stored store(DType t, const std::vector<double> &x) {
  Stored s;
  const size_t e = elementBytes(t);
  s.bytes.resize(x.size() * e);
  for (size_t i = 0; i < x.size(); ++i) {
    float f = static_cast<float>(x[i]);
    unsigned char *p = s.bytes.data() + i * e;
    if (t == DType::F32) {
      std::memcpy(p, &f, 4);
    } else {
      uint16_t h =
          t == DType::F16 ? floatToHalfBits(f) : floatToBFloat16Bits(f);
      std::memcpy(p, &h, 2);
    }
    s.values.push_back(loadValue(t, p));
  }
  return s;
}

std::vector<unsigned char> floatBytes(const std::vector<float> &v) {
  std::vector<unsigned char> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

DeviceBuffer upload(Backend &be, const std::vector<unsigned char> &bytes) {
  Expected<DeviceBuffer> buf = DeviceBuffer::allocate(be, bytes.size());
  EXPECT_TRUE(buf.ok()) << buf.message();
  EXPECT_TRUE(be.copyToDevice(buf->get(), bytes.data(), bytes.size()).ok());
  return buf.take();
}

std::vector<unsigned char> download(Backend &be, const DeviceBuffer &buf) {
  std::vector<unsigned char> bytes(buf.size());
  EXPECT_TRUE(be.copyToHost(bytes.data(), buf.get(), bytes.size()).ok());
  return bytes;
}

/// The largest grid.x the backend launches with `blockThreads` threads.
int64_t gridLimit(int64_t blockThreads) {
  int64_t limit = 2147483647;
  if (fakeTarget().maxGridThreadsX > 0)
    limit = std::min(limit, fakeTarget().maxGridThreadsX / blockThreads);
  return limit;
}

/// The fake's log line of one launch of `kernel`.
std::string launchLine(const BundleMeta &m, int64_t grid,
                       const std::string &problem) {
  return "launch kernel=" + m.kernel + " grid=" + std::to_string(grid) +
         ",1,1 block=" + std::to_string(m.blockThreads) + ",1,1 shared=0 " +
         problem + " device=" + std::to_string(fakeTarget().device);
}

//===----------------------------------------------------------------------===//
// Merge
//===----------------------------------------------------------------------===//

TEST(GpuFakeMerge, MatchesTheReference) {
  struct Case {
    DType dtype;
    int64_t h, dv, b, s;
    bool inPlace; ///< o = o1 and lse = lse1
  } cases[] = {
      {DType::BF16, 4, 16, 2, 33, false}, {DType::F16, 2, 8, 1, 1, false},
      {DType::F32, 3, 40, 1, 9, true},    {DType::BF16, 8, 64, 1, 5, true},
      {DType::F16, 1, 128, 3, 11, false},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(toString(c.dtype)) + " H=" + std::to_string(c.h) +
                 " Dv=" + std::to_string(c.dv) +
                 (c.inPlace ? " in place" : ""));
    BundleMeta m = fakeGpuMergeMeta(fakeTarget().target, c.dtype, c.h, c.dv);
    Expected<std::unique_ptr<Kernel>> k = loadFake(m);
    ASSERT_TRUE(k.ok()) << k.message();
    Backend &be = (*k)->backend();
    MergeProblem p;
    p.b = c.b;
    p.h = c.h;
    p.s = c.s;
    p.dv = c.dv;
    const int64_t rows = p.lseElements();

    // Partials with far-apart weights; empty ones (lse -inf) on a pattern
    // of rows, both empty on some. An empty partial's o is NaN on the
    // device (the merge must not read it into the sum) and 0 for the
    // reference.
    std::vector<double> o1 = randomNormal(p.oElements(), 1),
                        o2 = randomNormal(p.oElements(), 2);
    std::vector<float> lse1(rows), lse2(rows);
    std::vector<double> x = randomNormal(2 * rows, 3);
    for (int64_t r = 0; r < rows; ++r) {
      lse1[r] = static_cast<float>(4 * x[r]);
      lse2[r] = static_cast<float>(4 * x[rows + r]);
      const bool both = r % 11 == 4;
      if (r % 7 == 3 || both)
        lse1[r] = -INFINITY;
      if (r % 5 == 1 || both)
        lse2[r] = -INFINITY;
      for (int64_t e = 0; e < c.dv; ++e) {
        if (lse1[r] == -INFINITY)
          o1[r * c.dv + e] = NAN;
        if (lse2[r] == -INFINITY)
          o2[r * c.dv + e] = NAN;
      }
    }
    Stored s1 = store(c.dtype, o1), s2 = store(c.dtype, o2);
    for (Stored *st : {&s1, &s2})
      for (double &v : st->values)
        if (std::isnan(v))
          v = 0;
    std::vector<double> l1(lse1.begin(), lse1.end()),
        l2(lse2.begin(), lse2.end());
    ReferenceForward ref;
    std::string err;
    ASSERT_TRUE(
        referenceMerge(rows, c.dv, s1.values, l1, s2.values, l2, &ref, &err))
        << err;

    DeviceBuffer d1 = upload(be, s1.bytes), d2 = upload(be, s2.bytes);
    DeviceBuffer dl1 = upload(be, floatBytes(lse1)),
                 dl2 = upload(be, floatBytes(lse2));
    DeviceBuffer dOut, dLse;
    if (!c.inPlace) {
      dOut = DeviceBuffer::allocate(be, s1.bytes.size()).take();
      dLse = DeviceBuffer::allocate(be, rows * 4).take();
      ASSERT_TRUE(be.fill(dOut.get(), 0xFF, dOut.size(), nullptr).ok());
      ASSERT_TRUE(be.fill(dLse.get(), 0xFF, dLse.size(), nullptr).ok());
    }
    DeviceBuffer &outBuf = c.inPlace ? d1 : dOut;
    DeviceBuffer &lseBuf = c.inPlace ? dl1 : dLse;
    MergeArgs a;
    a.o1 = d1.get();
    a.lse1 = static_cast<const float *>(dl1.get());
    a.o2 = d2.get();
    a.lse2 = static_cast<const float *>(dl2.get());
    a.o = outBuf.get();
    a.lse = static_cast<float *>(lseBuf.get());
    clearLog();
    Status st = (*k)->runMerge(p, a);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(be.synchronize(nullptr).ok());
    const int64_t rowsPerBlock = m.blockThreads / 32;
    EXPECT_TRUE(contains(readLog(),
                         launchLine(m, (rows + rowsPerBlock - 1) / rowsPerBlock,
                                    "rows=" + std::to_string(rows))))
        << readLog();

    std::vector<unsigned char> o = download(be, outBuf);
    std::vector<float> lse(rows);
    ASSERT_TRUE(be.copyToHost(lse.data(), lseBuf.get(), rows * 4).ok());
    const double tol = c.dtype == DType::F32 ? 1e-5 : 1e-2;
    const size_t e = elementBytes(c.dtype);
    for (int64_t i = 0; i < p.oElements(); ++i)
      ASSERT_NEAR(loadValue(c.dtype, o.data() + i * e), ref.o[i],
                  tol * (1 + std::fabs(ref.o[i])))
          << "o[" << i << "]";
    for (int64_t r = 0; r < rows; ++r) {
      if (ref.lse[r] == -INFINITY)
        ASSERT_EQ(lse[r], -INFINITY) << "lse[" << r << "]";
      else
        ASSERT_NEAR(lse[r], ref.lse[r], 1e-5 * (1 + std::fabs(ref.lse[r])))
            << "lse[" << r << "]";
    }
    fakeTarget().expectThreadStateKept();
  }
}

TEST(GpuFakeMerge, GridLimit) {
  BundleMeta m = fakeGpuMergeMeta(fakeTarget().target, DType::BF16, 1, 8);
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  const int64_t rowsPerBlock = m.blockThreads / 32;
  const int64_t limit = gridLimit(m.blockThreads);
  MergeProblem p;
  p.b = 1;
  p.h = 1;
  p.s = rowsPerBlock * limit + 1;
  p.dv = 8;
  // The pointers are never read past the limit: the launch is refused
  // first.
  static uint16_t o[1];
  static float lse[1];
  MergeArgs a;
  a.o1 = a.o2 = a.o = o;
  a.lse1 = a.lse2 = a.lse = lse;
  clearLog();
  Status s = (*k)->runMerge(p, a);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "kernel 'fmha_merge': grid.x = cdiv(b*s," +
                             std::to_string(rowsPerBlock) +
                             ") = " + std::to_string(limit + 1) +
                             " exceeds the device limit " +
                             std::to_string(limit) + "; nothing was launched");
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();

  // At the limit the kernel is launched (and the fake refuses the
  // pointers, which hold one element).
  p.s = rowsPerBlock * limit;
  s = (*k)->runMerge(p, a);
  EXPECT_EQ(s.code(), ErrorCode::LaunchFailed) << s.message();
  EXPECT_TRUE(
      contains(readLog(), launchLine(m, limit, "rows=" + std::to_string(p.s))))
      << readLog();
}

//===----------------------------------------------------------------------===//
// Accumulate
//===----------------------------------------------------------------------===//

TEST(GpuFakeAccumulate, MatchesThePlainSum) {
  // Every dtype, n off the 4 * block_threads grid, and a second run from
  // element 1 (off the vector alignment).
  const int64_t bt =
      fakeGpuAccMeta(fakeTarget().target, DType::F32).blockThreads;
  struct Case {
    DType dtype;
    int64_t n;
  } cases[] = {{DType::F32, 1},
               {DType::BF16, 1000},
               {DType::F16, 4 * bt + 3},
               {DType::F32, 3 * 4 * bt}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(toString(c.dtype)) + " n=" + std::to_string(c.n));
    BundleMeta m = fakeGpuAccMeta(fakeTarget().target, c.dtype);
    Expected<std::unique_ptr<Kernel>> k = loadFake(m);
    ASSERT_TRUE(k.ok()) << k.message();
    Backend &be = (*k)->backend();
    std::vector<float> acc0(c.n);
    std::vector<double> a0 = randomNormal(c.n, 5);
    std::copy(a0.begin(), a0.end(), acc0.begin());
    Stored x = store(c.dtype, randomNormal(c.n, 6));
    DeviceBuffer dx = upload(be, x.bytes), dacc = upload(be, floatBytes(acc0));
    AccumulateArgs all, tail;
    all.x = dx.get();
    all.acc = static_cast<float *>(dacc.get());
    tail.x =
        static_cast<const unsigned char *>(dx.get()) + elementBytes(c.dtype);
    tail.acc = all.acc + 1;
    clearLog();
    Status s = (*k)->runAccumulate(c.n, all);
    ASSERT_TRUE(s.ok()) << s.message();
    s = (*k)->runAccumulate(c.n - 1, tail);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(be.synchronize(nullptr).ok());
    const int64_t perBlock = 4 * m.blockThreads;
    EXPECT_TRUE(
        contains(readLog(), launchLine(m, (c.n + perBlock - 1) / perBlock,
                                       "n=" + std::to_string(c.n))))
        << readLog();
    std::vector<float> got(c.n);
    ASSERT_TRUE(be.copyToHost(got.data(), dacc.get(), c.n * 4).ok());
    for (int64_t i = 0; i < c.n; ++i) {
      double want = double(acc0[i]) + x.values[i] + (i > 0 ? x.values[i] : 0.0);
      ASSERT_NEAR(got[i], want, 1e-6 * (1 + std::fabs(want)))
          << "acc[" << i << "]";
    }
    fakeTarget().expectThreadStateKept();
  }

  // In place: x = acc doubles it.
  BundleMeta m = fakeGpuAccMeta(fakeTarget().target, DType::F32);
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  Backend &be = (*k)->backend();
  std::vector<double> v = randomNormal(77, 7);
  std::vector<float> acc(v.begin(), v.end());
  DeviceBuffer d = upload(be, floatBytes(acc));
  AccumulateArgs same;
  same.x = d.get();
  same.acc = static_cast<float *>(d.get());
  Status s = (*k)->runAccumulate(77, same);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<float> got(77);
  ASSERT_TRUE(be.copyToHost(got.data(), d.get(), 77 * 4).ok());
  for (int i = 0; i < 77; ++i)
    ASSERT_EQ(got[i], 2 * acc[i]) << "acc[" << i << "]";
}

TEST(GpuFakeAccumulate, GridLimit) {
  BundleMeta m = fakeGpuAccMeta(fakeTarget().target, DType::BF16);
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  const int64_t perBlock = 4 * m.blockThreads;
  const int64_t limit = gridLimit(m.blockThreads);
  int64_t n = perBlock * limit + 1;
  static uint16_t x[1];
  static float acc[1];
  AccumulateArgs a;
  a.x = x;
  a.acc = acc;
  clearLog();
  Status s = (*k)->runAccumulate(n, a);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "kernel 'fmha_acc': grid.x = cdiv(n," +
                             std::to_string(perBlock) +
                             ") = " + std::to_string(limit + 1) +
                             " exceeds the device limit " +
                             std::to_string(limit) + "; nothing was launched");
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();

  n = perBlock * limit;
  s = (*k)->runAccumulate(n, a);
  EXPECT_EQ(s.code(), ErrorCode::LaunchFailed) << s.message();
  EXPECT_TRUE(
      contains(readLog(), launchLine(m, limit, "n=" + std::to_string(n))))
      << readLog();
}

TEST(GpuFakeMergeAccumulate, Index32Limit) {
  // With 32-bit indices a buffer of more than kMaxIndex32Elements elements
  // is refused before the launch, as for the attention kernels.
  static uint16_t h16[1];
  static float h32[1];
  BundleMeta mm = fakeGpuMergeMeta(fakeTarget().target, DType::BF16, 1, 8);
  mm.indexBits = 32;
  Expected<std::unique_ptr<Kernel>> k = loadFake(mm);
  ASSERT_TRUE(k.ok()) << k.message();
  MergeProblem p;
  p.b = 1;
  p.h = 1;
  p.s = kMaxIndex32Elements / 8 + 1;
  p.dv = 8;
  MergeArgs m;
  m.o1 = m.o2 = m.o = h16;
  m.lse1 = m.lse2 = m.lse = h32;
  clearLog();
  Status s = (*k)->runMerge(p, m);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), index32TooLarge("o1", p.s * 8));

  BundleMeta am = fakeGpuAccMeta(fakeTarget().target, DType::BF16);
  am.indexBits = 32;
  k = loadFake(am);
  ASSERT_TRUE(k.ok()) << k.message();
  AccumulateArgs a;
  a.x = h16;
  a.acc = h32;
  s = (*k)->runAccumulate(kMaxIndex32Elements + 1, a);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), index32TooLarge("x", kMaxIndex32Elements + 1));
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();
}

TEST(GpuFakeMergeAccumulate, MissingKernel) {
  for (const BundleMeta &m :
       {fakeGpuMergeMeta(fakeTarget().target, DType::F16, 2, 8),
        fakeGpuAccMeta(fakeTarget().target, DType::F32)}) {
    SCOPED_TRACE(toString(m.kind));
    BundleMeta other = m;
    other.kernel = "other_kernel";
    std::string bytes, err;
    ASSERT_TRUE(serializeBundle(other, fakeModule(m), &bytes, &err)) << err;
    Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(bytes, "g.fmha");
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().code(), ErrorCode::LoadFailed);
    EXPECT_EQ(k.message(), fakeTarget().loadErrors.missingKernel);
  }
  fakeTarget().expectThreadStateKept();
}

} // namespace

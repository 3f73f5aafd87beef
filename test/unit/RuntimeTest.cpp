//===- RuntimeTest.cpp - Kernels, problems, the host backend --------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Runtime.h"
#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Reference.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::randomNormal;
using fmha::test::testKernelBinary;
using fmha::test::testMeta;

namespace {

std::unique_ptr<Kernel> loadTestKernel(const BundleMeta &meta) {
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(meta, testKernelBinary(), &bytes, &err)) << err;
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(bytes, "test.fmha");
  EXPECT_TRUE(k.ok()) << k.message();
  return k.ok() ? k.take() : nullptr;
}

Status loadError(const BundleMeta &meta, const std::string &binary) {
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(meta, binary, &bytes, &err)) << err;
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(bytes, "test.fmha");
  EXPECT_FALSE(k.ok());
  return k.ok() ? Status() : k.status();
}

Problem problem(int64_t b, int64_t hq, int64_t hk, int64_t sq, int64_t sk,
                int64_t d, int64_t dv) {
  Problem p;
  p.b = b;
  p.hq = hq;
  p.hk = hk;
  p.sq = sq;
  p.sk = sk;
  p.d = d;
  p.dv = dv;
  return p;
}

std::vector<float> toFloat(const std::vector<double> &v) {
  return std::vector<float>(v.begin(), v.end());
}

TEST(Problem, Validate) {
  EXPECT_TRUE(problem(1, 8, 2, 3, 4, 64, 32).validate().ok());
  Status s = problem(1, 8, 3, 3, 4, 64, 64).validate();
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "problem Hq=8 is not a multiple of Hk=3");
  EXPECT_EQ(problem(1, 8, 2, 0, 4, 64, 64).validate().message(),
            "problem Sq must be positive, got 0");
  EXPECT_EQ(problem(-1, 8, 2, 1, 4, 64, 64).validate().message(),
            "problem B must be positive, got -1");
  EXPECT_EQ(
      problem(1 << 20, 1 << 20, 1, 1 << 20, 1, 1 << 20, 1).validate().message(),
      "problem is too large: an element count overflows 64 bits");
  EXPECT_TRUE(problem(1, 1, 1, kMaxSequence, 1, 1, 1).validate().ok());
  EXPECT_EQ(problem(1, 1, 1, kMaxSequence + 1, 1, 1, 1).validate().message(),
            "problem Sq=1073741825 is over the limit of 2^30 tokens");
  EXPECT_EQ(problem(1, 1, 1, 1, kMaxSequence + 1, 1, 1).validate().message(),
            "problem Sk=1073741825 is over the limit of 2^30 tokens");
}

TEST(Problem, CountVisiblePairsMatchesBruteForce) {
  for (const char *spec :
       {"0", "t", "b", "t:3,2", "b:3,2", "t:-1,4", "b:5,-1", "t:2,0,3",
        "b:1,1,5", "xt:4", "xb:7", "t:0,0,100", "b:0,0,1", "t:100,100"}) {
    MaskSpec m = *MaskSpec::parse(spec);
    for (int64_t sq : {1, 2, 5, 9, 16}) {
      for (int64_t sk : {1, 3, 5, 8, 17}) {
        int64_t brute = 0;
        for (int64_t i = 0; i < sq; ++i)
          for (int64_t j = 0; j < sk; ++j)
            brute += m.visible(i, j, sq, sk);
        EXPECT_EQ(countVisiblePairs(m, sq, sk), brute)
            << spec << " " << sq << "x" << sk;
      }
    }
  }
  EXPECT_EQ(forwardFlops(problem(2, 4, 1, 8, 8, 64, 32), *MaskSpec::parse("t")),
            2.0 * 96 * 36 * 2 * 4);
}

TEST(Kernel, RunsHostKernelAndMatchesReference) {
  const int64_t b = 2, hq = 4, hk = 2, sq = 5, sk = 7, d = 8, dv = 4;
  std::unique_ptr<Kernel> kernel =
      loadTestKernel(testMeta("naive_f32", DType::F32, hq, hk, d, dv));
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->backend().target(), Target::Cpu);
  std::vector<double> q = randomNormal(b * hq * sq * d, 1),
                      k = randomNormal(b * hk * sk * d, 2),
                      v = randomNormal(b * hk * sk * dv, 3);
  std::vector<float> qf = toFloat(q), kf = toFloat(k), vf = toFloat(v);
  std::vector<float> o(b * hq * sq * dv, NAN), lse(b * hq * sq, NAN);
  ForwardArgs args;
  args.q = qf.data();
  args.k = kf.data();
  args.v = vf.data();
  args.o = o.data();
  args.lse = lse.data();
  Problem p = problem(b, hq, hk, sq, sk, d, dv);
  Status s = kernel->run(p, args);
  ASSERT_TRUE(s.ok()) << s.message();

  ReferenceConfig c;
  c.b = b;
  c.hq = hq;
  c.hk = hk;
  c.sq = sq;
  c.sk = sk;
  c.d = d;
  c.dv = dv;
  ReferenceForward ref;
  std::string err;
  ASSERT_TRUE(referenceForward(c, std::vector<double>(qf.begin(), qf.end()),
                               std::vector<double>(kf.begin(), kf.end()),
                               std::vector<double>(vf.begin(), vf.end()), &ref,
                               &err));
  for (size_t i = 0; i < o.size(); ++i)
    EXPECT_NEAR(o[i], ref.o[i], 1e-6);
  for (size_t i = 0; i < lse.size(); ++i)
    EXPECT_NEAR(lse[i], ref.lse[i], 1e-6);

  // lse may be null: the runtime supplies scratch space.
  std::vector<float> o2(o.size(), NAN);
  args.o = o2.data();
  args.lse = nullptr;
  s = kernel->run(p, args);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(o2, o);
}

TEST(Kernel, ProblemMustMatchBundle) {
  std::unique_ptr<Kernel> kernel =
      loadTestKernel(testMeta("naive_f32", DType::F32, 16, 4, 64, 32));
  ASSERT_TRUE(kernel);
  Status s = kernel->checkProblem(problem(1, 8, 4, 1, 1, 64, 32));
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
  EXPECT_EQ(s.message(), "problem Hq=8 does not match bundle Hq=16");
  EXPECT_EQ(kernel->checkProblem(problem(1, 16, 2, 1, 1, 64, 32)).message(),
            "problem Hk=2 does not match bundle Hk=4");
  EXPECT_EQ(kernel->checkProblem(problem(1, 16, 4, 1, 1, 128, 32)).message(),
            "problem D=128 does not match bundle D=64");
  EXPECT_EQ(kernel->checkProblem(problem(1, 16, 4, 1, 1, 64, 64)).message(),
            "problem Dv=64 does not match bundle Dv=32");
  EXPECT_EQ(kernel->checkProblem(problem(1, 16, 4, 1, 0, 64, 32)).message(),
            "problem Sk must be positive, got 0");
  float x = 0;
  ForwardArgs args;
  args.q = &x;
  args.k = &x;
  args.o = &x;
  s = kernel->run(problem(1, 16, 4, 1, 1, 64, 32), args);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "null pointer for v");
  // Mismatch is reported before any pointer is touched.
  s = kernel->run(problem(1, 8, 4, 1, 1, 64, 32), args);
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
}

TEST(Varlen, OffsetsAreChecked) {
  const int32_t good[] = {0, 3, 3, 10};
  EXPECT_TRUE(checkSeqlens("cu_seqlens_q", good, 3, 10).ok());
  EXPECT_TRUE(checkSeqlens("cu_seqlens_q", good, 3, 12).ok());
  Status s = checkSeqlens("cu_seqlens_q", good, 3, 9);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "cu_seqlens_q: cu_seqlens_q[3]=10 is past the "
                         "tensors' 9 rows");
  const int32_t down[] = {0, 4, 2};
  EXPECT_EQ(checkSeqlens("cu_seqlens_k", down, 2, 10).message(),
            "cu_seqlens_k: cu_seqlens_k[2]=2 is less than cu_seqlens_k[1]=4: "
            "the offsets must be nondecreasing");
  const int32_t late[] = {1, 4};
  EXPECT_EQ(checkSeqlens("cu_seqlens_q", late, 1, 10).message(),
            "cu_seqlens_q: the offsets start at 0, got cu_seqlens_q[0]=1");
  // B = 0: one offset, 0.
  const int32_t none[] = {0};
  EXPECT_TRUE(checkSeqlens("cu_seqlens_q", none, 0, 1).ok());
}

TEST(Varlen, ProblemAndBundleAgree) {
  // A variable-length problem's tensors have batch 1.
  Problem p = problem(5, 4, 2, 100, 300, 32, 16);
  p.varlen = true;
  EXPECT_EQ(p.batch(), 1);
  EXPECT_EQ(p.qElements(), 4 * 100 * 32);
  EXPECT_EQ(p.kElements(), 2 * 300 * 32);
  EXPECT_EQ(p.lseElements(), 4 * 100);
  std::unique_ptr<Kernel> kernel =
      loadTestKernel(testMeta("naive_f32", DType::F32, 4, 2, 32, 16));
  ASSERT_TRUE(kernel);
  Status s = kernel->checkProblem(p);
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
  EXPECT_EQ(s.message(), "a variable-length problem needs a varlen=1 bundle "
                         "(fmha-compile --varlen)");
  // Offsets given to a kernel of fixed-length batches.
  float x = 0;
  int32_t cu[] = {0, 1};
  ForwardArgs args;
  args.q = args.k = args.v = &x;
  args.o = &x;
  args.cuSeqlensQ = args.cuSeqlensK = cu;
  s = kernel->run(problem(1, 4, 2, 1, 1, 32, 16), args);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "cu_seqlens given to a kernel of fixed-length "
                         "batches (its bundle has no varlen=1)");
  // varlen=1 is a forward's, in a version-2 bundle.
  BundleMeta m = testMeta("naive_f32", DType::F32, 4, 2, 32, 16);
  m.varlen = true;
  m.kind = KernelKind::Backward;
  EXPECT_EQ(m.validate(), "varlen=1 is only valid for a forward kernel "
                          "(kind=fwd), got kind=bwd");
  m.kind = KernelKind::Forward;
  m.formatVersion = 1;
  EXPECT_EQ(m.validate(), "varlen=1 needs a version-2 bundle (a manifest "
                          "naming the cu_seqlens operands)");
}

TEST(Paged, TablesAreChecked) {
  Problem p = problem(2, 4, 2, 1, 48, 32, 16);
  p.pageSize = 16;
  p.pages = 5;
  p.maxPages = 3;
  ASSERT_TRUE(p.validate().ok());
  EXPECT_EQ(p.kElements(), 5 * 2 * 16 * 32);
  EXPECT_EQ(p.vElements(), 5 * 2 * 16 * 16);
  // Entries past a sequence's pages are never read, whatever they hold.
  const int32_t table[] = {4, 0, -7, 2, 99, 99};
  const int32_t lengths[] = {17, 1};
  EXPECT_TRUE(checkPaged(p, table, lengths).ok());
  const int32_t longer[] = {33, 1};
  EXPECT_EQ(checkPaged(p, table, longer).message(),
            "block_table[0, 2]=-7 is past the cache's 5 pages "
            "(seqlens_k[0]=33 reads it)");
  const int32_t over[] = {17, 49};
  EXPECT_EQ(checkPaged(p, table, over).message(),
            "seqlens_k[1]=49 is outside the cache's [0, 48] keys (max_pages "
            "3 * page size 16)");
  const int32_t negative[] = {-1, 0};
  EXPECT_EQ(checkPaged(p, table, negative).code(), ErrorCode::InvalidArgument);
  // Sk is max_pages * P.
  p.sk = 47;
  EXPECT_EQ(p.validate().message(),
            "problem Sk of a paged cache is max_pages * page size (3 * 16, at "
            "most 2^30), got Sk=47");
  p.sk = 48;
  p.pages = 0;
  EXPECT_EQ(p.validate().message(), "problem pages of a paged cache must be "
                                    "in [1, 2^30], got 0");
  p.pageSize = -1;
  EXPECT_EQ(p.validate().message(),
            "problem page size -1 is negative (0: contiguous K/V)");
}

TEST(Paged, ProblemAndBundleAgree) {
  std::unique_ptr<Kernel> kernel =
      loadTestKernel(testMeta("naive_f32", DType::F32, 4, 2, 32, 16));
  ASSERT_TRUE(kernel);
  Problem p = problem(2, 4, 2, 1, 48, 32, 16);
  p.pageSize = 16;
  p.pages = 5;
  p.maxPages = 3;
  Status s = kernel->checkProblem(p);
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
  EXPECT_EQ(s.message(), "a paged problem (page size 16) needs a bundle built "
                         "for its page size (fmha-compile --page-size)");
  float x = 0;
  int32_t table[] = {0}, lengths[] = {1};
  ForwardArgs args;
  args.q = args.k = args.v = &x;
  args.o = &x;
  args.blockTable = table;
  args.seqlensK = lengths;
  s = kernel->run(problem(1, 4, 2, 1, 1, 32, 16), args);
  EXPECT_EQ(s.message(), "block_table or seqlens_k given to a kernel of "
                         "contiguous K/V (its bundle has no page_size)");
  // page_size is a forward's, in a version-2 bundle, a multiple or a
  // divisor of block_n (a kv tile over whole pages).
  BundleMeta m = testMeta("naive_f32", DType::F32, 4, 2, 32, 16);
  m.pageSize = 48;
  m.blockN = 32;
  EXPECT_EQ(m.validate(), "page_size (48) must be a multiple or a divisor of "
                          "block_n (32): a kv tile lies within one page or "
                          "spans whole pages");
  m.pageSize = 16;
  EXPECT_EQ(m.validate(), "");
  m.blockN = 16;
  m.kind = KernelKind::Backward;
  EXPECT_EQ(m.validate(), "page_size is only valid for a forward kernel "
                          "(kind=fwd), got kind=bwd");
  m.kind = KernelKind::Forward;
  m.formatVersion = 1;
  EXPECT_EQ(m.validate(), "page_size needs a version-2 bundle (a manifest "
                          "naming the block_table and seqlens_k operands)");
  m.pageSize = -2;
  EXPECT_EQ(m.validate().rfind("page_size must be 0 (contiguous K/V)", 0), 0u);
}

TEST(Kernel, HalfPrecisionKernels) {
  const int64_t b = 1, hq = 2, hk = 1, sq = 6, sk = 9, d = 16, dv = 8;
  for (DType t : {DType::F16, DType::BF16}) {
    const char *name = t == DType::F16 ? "naive_f16_xb" : "naive_bf16_t";
    const char *mask = t == DType::F16 ? "xb:5" : "t";
    std::unique_ptr<Kernel> kernel =
        loadTestKernel(testMeta(name, t, hq, hk, d, dv, mask));
    ASSERT_TRUE(kernel);
    auto store = [&](const std::vector<double> &v) {
      std::vector<uint16_t> bits;
      for (double x : v)
        bits.push_back(t == DType::F16
                           ? floatToHalfBits(static_cast<float>(x))
                           : floatToBFloat16Bits(static_cast<float>(x)));
      return bits;
    };
    auto load = [&](uint16_t h) {
      return t == DType::F16 ? halfBitsToFloat(h) : bfloat16BitsToFloat(h);
    };
    std::vector<uint16_t> q = store(randomNormal(b * hq * sq * d, 4)),
                          k = store(randomNormal(b * hk * sk * d, 5)),
                          v = store(randomNormal(b * hk * sk * dv, 6));
    std::vector<uint16_t> o(b * hq * sq * dv, 0x7e00);
    std::vector<float> lse(b * hq * sq);
    ForwardArgs args;
    args.q = q.data();
    args.k = k.data();
    args.v = v.data();
    args.o = o.data();
    args.lse = lse.data();
    Status s = kernel->run(problem(b, hq, hk, sq, sk, d, dv), args);
    ASSERT_TRUE(s.ok()) << s.message();
    ReferenceConfig c;
    c.b = b;
    c.hq = hq;
    c.hk = hk;
    c.sq = sq;
    c.sk = sk;
    c.d = d;
    c.dv = dv;
    c.mask = *MaskSpec::parse(mask);
    auto widen = [&](const std::vector<uint16_t> &bits) {
      std::vector<double> out;
      for (uint16_t h : bits)
        out.push_back(load(h));
      return out;
    };
    ReferenceForward ref;
    std::string err;
    ASSERT_TRUE(referenceForward(c, widen(q), widen(k), widen(v), &ref, &err));
    double tol = t == DType::F16 ? 2e-3 : 1.6e-2;
    for (size_t i = 0; i < o.size(); ++i)
      EXPECT_NEAR(load(o[i]), ref.o[i], tol * (1 + std::fabs(ref.o[i])));
  }
}

TEST(Kernel, LoadErrors) {
  BundleMeta meta = testMeta("naive_f32", DType::F32, 4, 4, 8, 8);
  std::string so = testKernelBinary();

  BundleMeta missing = meta;
  missing.kernel = "no_such_kernel";
  Status s = loadError(missing, so);
  EXPECT_EQ(s.code(), ErrorCode::LoadFailed);
  EXPECT_EQ(s.message().rfind("bundle 'test.fmha': symbol "
                              "'_mlir_ciface_no_such_kernel' not found in the "
                              "binary: ",
                              0),
            0u)
      << s.message();

  s = loadError(meta, "not an elf file");
  EXPECT_EQ(s.code(), ErrorCode::LoadFailed);
  EXPECT_EQ(s.message(), "bundle 'test.fmha': the binary is not an ELF shared "
                         "object (bad ELF magic)");

  s = loadError(meta, "\x7f"
                      "ELF but truncated");
  EXPECT_EQ(s.code(), ErrorCode::LoadFailed);
  EXPECT_EQ(s.message().rfind("bundle 'test.fmha': dlopen failed: ", 0), 0u)
      << s.message();

  BundleMeta hip = meta;
  hip.target = Target::Hip;
  hip.chip = "gfx942";
  hip.abi = kAbiGpuFlatV1;
  hip.blockThreads = 256;
  hip.binaryFormat = BinaryFormat::Hsaco;
  {
    fmha::test::ScopedEnv env;
    env.set("FMHA_HIP_LIBRARY", "/nonexistent/libamdhip64.so");
    s = loadError(hip, "hsaco");
  }
  EXPECT_EQ(s.code(), ErrorCode::BackendUnavailable);
  EXPECT_EQ(s.message(), "bundle 'test.fmha': HIP runtime not found: dlopen "
                         "/nonexistent/libamdhip64.so failed: "
                         "/nonexistent/libamdhip64.so: cannot open shared "
                         "object file: No such file or directory");

  // A backward bundle loads on the host (BackwardTest.cpp runs them); its
  // symbol must exist like a forward one's.
  BundleMeta bwd = missing;
  bwd.kind = KernelKind::Backward;
  s = loadError(bwd, so);
  EXPECT_EQ(s.code(), ErrorCode::LoadFailed);
  EXPECT_EQ(s.message().rfind("bundle 'test.fmha': symbol "
                              "'_mlir_ciface_no_such_kernel' not found",
                              0),
            0u)
      << s.message();

  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes("garbage", "g");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ErrorCode::BadBundle);
  k = Kernel::loadFile("/nonexistent.fmha");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ErrorCode::Io);
  EXPECT_EQ(k.message(), "bundle '/nonexistent.fmha': cannot open file: No "
                         "such file or directory");
}

TEST(Kernel, SeveralCopiesOfOneBinaryLoadIndependently) {
  std::unique_ptr<Kernel> a =
      loadTestKernel(testMeta("naive_f32", DType::F32, 1, 1, 2, 2));
  std::unique_ptr<Kernel> b =
      loadTestKernel(testMeta("naive_f32_b", DType::F32, 1, 1, 2, 2, "b"));
  ASSERT_TRUE(a && b);
  a.reset();
  float q[2] = {1, 0}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4}, o[2], lse[1];
  ForwardArgs args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.o = o;
  args.lse = lse;
  // b (bottom-right causal, Sq=1, Sk=2): the one row sees both keys.
  ASSERT_TRUE(b->run(problem(1, 1, 1, 1, 2, 2, 2), args).ok());
  double s0 = 1 / std::sqrt(2.0), p0 = 1 / (1 + std::exp(-s0));
  EXPECT_NEAR(o[0], p0 * 1 + (1 - p0) * 3, 1e-6);
}

TEST(Backend, HostMemory) {
  Expected<Backend *> host = getBackend(Target::Cpu);
  ASSERT_TRUE(host.ok());
  Expected<DeviceBuffer> buf = DeviceBuffer::allocate(**host, 100);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->get()) % 64, 0u);
  const char msg[] = "hello";
  ASSERT_TRUE((*host)->copyToDevice(buf->get(), msg, sizeof(msg)).ok());
  char back[sizeof(msg)];
  ASSERT_TRUE((*host)->copyToHost(back, buf->get(), sizeof(msg)).ok());
  EXPECT_STREQ(back, "hello");
  Expected<DeviceBuffer> huge = DeviceBuffer::allocate(**host, SIZE_MAX - 10);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), ErrorCode::OutOfMemory);
  fmha::test::ScopedEnv env;
  env.set("FMHA_HIP_LIBRARY", "/nonexistent/libamdhip64.so");
  Expected<Backend *> hip = getBackend(Target::Hip);
  ASSERT_FALSE(hip.ok());
  EXPECT_EQ(hip.status().code(), ErrorCode::BackendUnavailable);
}

} // namespace

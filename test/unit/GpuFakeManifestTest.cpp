//===- GpuFakeManifestTest.cpp - A manifest no runtime code names ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The generic launch path over the fake libraries: a version-2 bundle whose
// manifest has sizes, operands, a workspace and parameters that no code of
// the runtime names (window, sinks with strides, num_sms, a conditional
// kernel), launched through the C API by name. The fake's kind=probe
// kernel (FakeGpu.h) logs its grid and parameters and stores their sum at
// the address of its first, so every value is checked against the
// manifest's expressions computed here. Linked into the CUDA and the HIP
// fake-device executables.
//
//===----------------------------------------------------------------------===//

#include "GpuFakeTest.h"

#include "fmha/Runtime/fmha_runtime.h"

#include <algorithm>
#include <cstring>

using namespace fmha;
using namespace fmha::rt;
using namespace fmha::test;

namespace {

constexpr const char *kProbeManifest = "call gpu\n"
                                       "size n\n"
                                       "size window\n"
                                       "operand out inout i64 1\n"
                                       "operand sinks in f32 4 2 strided\n"
                                       "workspace scratch 64 zero\n"
                                       "kernel probe\n"
                                       "when 1\n"
                                       "grid cdiv(n,64) 1 1\n"
                                       "block 64 1 1\n"
                                       "shared 0\n"
                                       "param out.ptr ptr @out\n"
                                       "param twice i32 window*2\n"
                                       "param tiles i64 cdiv(n,64)\n"
                                       "param sms i64 num_sms\n"
                                       "kernel probe\n"
                                       "when window\n"
                                       "grid 1 max(window,1) 1\n"
                                       "block 32 2 1\n"
                                       "shared 0\n"
                                       "param scratch.ptr ptr @scratch\n"
                                       "param n i64 n\n"
                                       "param stride i64 stride(sinks,0)\n"
                                       "param seven i64 7\n";

fmhaKernel loadProbe() {
  BundleMeta m = fakeMeta(DType::F32, 1, 1, 1, 1);
  m.kernel = "probe";
  m.blockThreads = 64;
  m.abi = kAbiManifest;
  std::string err;
  EXPECT_TRUE(Manifest::parse(kProbeManifest, 1, &m.manifest, &err)) << err;
  std::string bytes;
  EXPECT_TRUE(
      serializeBundle(m, fakeModule(m, "kind=probe\nparams=4\n"), &bytes, &err))
      << err;
  fmhaKernel kernel = nullptr;
  EXPECT_EQ(fmhaKernelLoadBytes(bytes.data(), bytes.size(), &kernel),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  return kernel;
}

fmhaArg size(const char *name, int64_t value) {
  return fmhaArg{name, FMHA_ARG_SIZE, nullptr, value, nullptr, 0};
}

fmhaArg tensor(const char *name, const void *data,
               const int64_t *strides = nullptr, int64_t numStrides = 0) {
  return fmhaArg{name, FMHA_ARG_TENSOR, data, 0, strides, numStrides};
}

TEST(GpuFakeManifest, ParametersNoRuntimeCodeNames) {
  EXPECT_EQ(fmhaGetApiVersion(), FMHA_API_VERSION);
  fmhaKernel kernel = loadProbe();
  ASSERT_NE(kernel, nullptr);
  const int target = fakeTarget().capiTarget;
  const char *description = nullptr;
  ASSERT_EQ(fmhaBackendDescription(target, &description), FMHA_SUCCESS);
  // The device's num_sms: what its description says (132 SMs, 304 CUs).
  const int64_t sms = target == FMHA_TARGET_CUDA ? 132 : 304;

  void *out = nullptr, *sinks = nullptr, *workspace = nullptr;
  ASSERT_EQ(fmhaDeviceMalloc(target, 8, &out), FMHA_SUCCESS);
  ASSERT_EQ(fmhaDeviceMalloc(target, 64, &sinks), FMHA_SUCCESS);
  ASSERT_EQ(fmhaDeviceMalloc(target, 512, &workspace), FMHA_SUCCESS);
  size_t need = 0;
  fmhaArg sizes[] = {size("n", 1000), size("window", 3)};
  ASSERT_EQ(fmhaKernelWorkspaceBytes(kernel, sizes, 2, &need), FMHA_SUCCESS);
  EXPECT_EQ(need, 64u);
  std::vector<unsigned char> ones(512, 0xFF);
  ASSERT_EQ(fmhaMemcpyHostToDevice(target, workspace, ones.data(), 512),
            FMHA_SUCCESS);

  const int64_t stride[] = {3, 1};
  fmhaArg args[] = {size("n", 1000), size("window", 3), tensor("out", out),
                    tensor("sinks", sinks, stride, 2)};
  clearLog();
  ASSERT_EQ(fmhaKernelLaunch(kernel, args, 4, workspace, 512, nullptr),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  ASSERT_EQ(fmhaDeviceSynchronize(target, nullptr), FMHA_SUCCESS);
  const std::string log = readLog();
  EXPECT_TRUE(contains(log, "probe kernel=probe grid=16,1,1 block=64,1,1 "
                            "shared=0"))
      << log;
  EXPECT_TRUE(contains(log, ",6,16," + std::to_string(sms) + "\n")) << log;
  EXPECT_TRUE(contains(log, "probe kernel=probe grid=1,3,1 block=32,2,1 "))
      << log;
  EXPECT_TRUE(contains(log, ",1000,3,7\n")) << log;
  int64_t sum = 0;
  ASSERT_EQ(fmhaMemcpyDeviceToHost(target, &sum, out, 8), FMHA_SUCCESS);
  EXPECT_EQ(sum, 6 + 16 + sms);
  // The workspace: zeroed, then the second kernel's sum at its start.
  std::vector<unsigned char> back(512);
  ASSERT_EQ(fmhaMemcpyDeviceToHost(target, back.data(), workspace, 512),
            FMHA_SUCCESS);
  std::memcpy(&sum, back.data(), 8);
  EXPECT_EQ(sum, 1000 + 3 + 7);
  for (size_t i = 8; i < 64; ++i)
    ASSERT_EQ(back[i], 0) << "byte " << i;
  for (size_t i = 64; i < 512; ++i)
    ASSERT_EQ(back[i], 0xFF) << "byte " << i << " is past the workspace";

  // window = 0: the second kernel's condition is false; one launch.
  args[1] = size("window", 0);
  clearLog();
  ASSERT_EQ(fmhaKernelLaunch(kernel, args, 4, workspace, 512, nullptr),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  ASSERT_EQ(fmhaDeviceSynchronize(target, nullptr), FMHA_SUCCESS);
  const std::string once = readLog();
  EXPECT_EQ(std::count(once.begin(), once.end(), '\n'), 1) << once;
  ASSERT_EQ(fmhaMemcpyDeviceToHost(target, &sum, out, 8), FMHA_SUCCESS);
  EXPECT_EQ(sum, 0 + 16 + sms);

  // The kernel object's own workspace when none is given.
  args[1] = size("window", 1);
  ASSERT_EQ(fmhaKernelLaunch(kernel, args, 4, nullptr, 0, nullptr),
            FMHA_SUCCESS)
      << fmhaGetLastError();

  for (void *p : {out, sinks, workspace})
    EXPECT_EQ(fmhaDeviceFree(target, p), FMHA_SUCCESS);
  fmhaKernelDestroy(kernel);
}

TEST(GpuFakeManifest, BadArgumentsLaunchNothing) {
  fmhaKernel kernel = loadProbe();
  ASSERT_NE(kernel, nullptr);
  const int target = fakeTarget().capiTarget;
  void *out = nullptr;
  ASSERT_EQ(fmhaDeviceMalloc(target, 64, &out), FMHA_SUCCESS);
  const int64_t stride[] = {1}, threeStrides[] = {1, 1, 1}, badLast[] = {2, 2};
  struct Case {
    std::vector<fmhaArg> args;
    std::string message;
  } cases[] = {
      {{size("n", 10), size("window", 1), tensor("out", out),
        tensor("sinks", out), tensor("bias", out)},
       "bundle '<memory>': the bundle takes no operand 'bias' (its "
       "operands: out and sinks); nothing was launched"},
      {{size("n", 10), size("w", 1), tensor("out", out), tensor("sinks", out)},
       "bundle '<memory>': the bundle takes no size 'w' (its sizes: n and "
       "window); nothing was launched"},
      {{size("n", 10), tensor("out", out), tensor("sinks", out)},
       "bundle '<memory>': missing size 'window' (the bundle's sizes: n and "
       "window); nothing was launched"},
      {{size("n", 10), size("window", 1), tensor("out", out)},
       "bundle '<memory>': missing operand 'sinks' (the bundle's operands: "
       "out and sinks); nothing was launched"},
      {{size("n", -1), size("window", 1), tensor("out", out),
        tensor("sinks", out)},
       "bundle '<memory>': size n must be non-negative, got -1; nothing was "
       "launched"},
      {{size("n", 10), size("window", 1), tensor("out", out),
        tensor("sinks", out, threeStrides, 3)},
       "bundle '<memory>': operand sinks has 2 dimensions, got 3 strides; "
       "nothing was launched"},
      {{size("n", 10), size("window", 1), tensor("out", out),
        tensor("sinks", out, badLast, 2)},
       "bundle '<memory>': operand sinks needs a contiguous last axis (stride "
       "1 is 2, expected 1); nothing was launched"},
      {{size("n", 10), size("window", 1), tensor("out", out, stride, 1),
        tensor("sinks", out), size("n", 3)},
       "fmhaKernelLaunch: argument 'n' is given twice"},
      {{size("n", 10), size("window", 1), tensor("out", nullptr),
        tensor("sinks", out)},
       "fmhaKernelLaunch: null pointer for out"},
      {{size("n", 10), size("window", int64_t(1) << 40), tensor("out", out),
        tensor("sinks", out)},
       "bundle '<memory>': kernel probe parameter twice is 2199023255552, "
       "which does not fit its 32 bits; nothing was launched"},
      {{size("n", 10), size("window", 70000), tensor("out", out),
        tensor("sinks", out)},
       "kernel 'probe': grid.y = max(window,1) = 70000 exceeds the device "
       "limit 65535; nothing was launched"},
  };
  for (const Case &c : cases) {
    clearLog();
    EXPECT_NE(fmhaKernelLaunch(kernel, c.args.data(), c.args.size(), nullptr, 0,
                               nullptr),
              FMHA_SUCCESS);
    EXPECT_EQ(fmhaGetLastError(), c.message);
    EXPECT_FALSE(contains(readLog(), "probe kernel")) << readLog();
  }
  fmhaArg bad = {"n", 7, nullptr, 0, nullptr, 0};
  EXPECT_EQ(fmhaKernelLaunch(kernel, &bad, 1, nullptr, 0, nullptr),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(fmhaGetLastError(), "fmhaKernelLaunch: argument 0 ('n') has "
                                   "kind 7 (FMHA_ARG_SIZE or FMHA_ARG_TENSOR)");
  EXPECT_EQ(fmhaKernelLaunch(nullptr, nullptr, 0, nullptr, 0, nullptr),
            FMHA_ERROR_INVALID_ARGUMENT);
  const char *text = nullptr;
  ASSERT_EQ(fmhaKernelGetManifest(kernel, &text), FMHA_SUCCESS);
  EXPECT_EQ(std::string(text), kProbeManifest);
  EXPECT_EQ(fmhaDeviceFree(target, out), FMHA_SUCCESS);
  fmhaKernelDestroy(kernel);
}

// A chunked-prefill bundle (varlen=1, page_size=16): a problem that leaves
// out the page size, or arguments that give cu_seqlens_k (a paged cache's
// keys are its own), are refused before anything is launched.
TEST(GpuFakeManifest, PagedProblemsAndArguments) {
  BundleMeta m = fakeMeta(DType::F32, 1, 1, 1, 1);
  m.kernel = "probe";
  m.blockThreads = 64;
  m.blockN = 16;
  m.abi = kAbiManifest;
  m.varlen = true;
  m.pageSize = 16;
  std::string err;
  ASSERT_TRUE(Manifest::parse("call gpu\n"
                              "size b\nsize sq\nsize pages\nsize max_pages\n"
                              "operand q in f32 1 1 sq 1\n"
                              "operand k in f32 pages 1 16 1\n"
                              "operand v in f32 pages 1 16 1\n"
                              "operand cu_seqlens_q in i32 b+1\n"
                              "operand block_table in i32 b max_pages\n"
                              "operand seqlens_k in i32 b\n"
                              "operand o out f32 1 1 sq 1\n"
                              "kernel probe\n"
                              "grid 1 1 1\nblock 64 1 1\nshared 0\n"
                              "param o.ptr ptr @o\n",
                              1, &m.manifest, &err))
      << err;
  Expected<std::unique_ptr<Kernel>> loaded =
      loadFake(m, "kind=probe\nparams=1\n");
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  Kernel &kernel = **loaded;
  Problem p = makeProblem(m, 2, 3, 32);
  p.varlen = true;
  Status s = kernel.checkProblem(p);
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
  EXPECT_EQ(s.message(), "bundle 'fake.fmha' takes a paged K/V cache of page "
                         "size 16: set Problem::pageSize (got 0) and give "
                         "block_table and seqlens_k");
  p.pageSize = 16;
  p.pages = 4;
  p.maxPages = 2;
  ASSERT_TRUE(kernel.checkProblem(p).ok());
  float x = 0;
  int32_t ints[4] = {0, 1, 2, 3};
  ForwardArgs args;
  args.q = args.k = args.v = &x;
  args.o = &x;
  args.cuSeqlensQ = args.cuSeqlensK = ints;
  args.blockTable = args.seqlensK = ints;
  clearLog();
  s = kernel.run(p, args);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "cu_seqlens_k given to a paged cache's kernel: each "
                         "sequence's keys are seqlens_k's");
  args.cuSeqlensK = nullptr;
  args.seqlensK = nullptr;
  EXPECT_EQ(kernel.run(p, args).message(), "null pointer for seqlens_k");
  EXPECT_FALSE(contains(readLog(), "probe kernel")) << readLog();
}

} // namespace

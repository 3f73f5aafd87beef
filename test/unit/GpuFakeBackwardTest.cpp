//===- GpuFakeBackwardTest.cpp - The gpu-bwd-v1 launches over a fake ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The GPU backward (abi gpu-bwd-v1, Bundle.h) over the fake libraries, for
// every GPU backend: the three kernels launched in order with their grids,
// the 58 parameters and the workspace layout (the fake checks them all and
// computes each stage with the float64 reference, FakeGpu.cpp), the cached
// and the caller's workspace, the C API, and the errors (a missing kernel,
// a workspace too small, grid limits). Linked into the CUDA and the HIP
// fake-device executables.
//
//===----------------------------------------------------------------------===//

#include "GpuFakeTest.h"

#include "fmha/Runtime/fmha_runtime.h"

#include <cstdlib>
#include <regex>

using namespace fmha;
using namespace fmha::rt;
using namespace fmha::test;

namespace {

BundleMeta bwdMeta(DType dtype, int64_t hq, int64_t hk, int64_t d, int64_t dv,
                   const char *mask = "0", bool deterministic = false) {
  return fakeGpuBwdMeta(fakeTarget().target, dtype, hq, hk, d, dv, mask,
                        deterministic);
}

uint16_t toBits(const BundleMeta &m, double x) {
  float f = static_cast<float>(x);
  return m.dtype == DType::F16 ? floatToHalfBits(f) : floatToBFloat16Bits(f);
}

double fromBits(const BundleMeta &m, uint16_t h) {
  return m.dtype == DType::F16 ? halfBitsToFloat(h) : bfloat16BitsToFloat(h);
}

/// The inputs of a backward (q, k, v as for the forward; o, lse the
/// reference forward's, o rounded; dO random) and the reference gradients.
struct BwdData {
  Data fwd;
  std::vector<uint16_t> o, dO;
  std::vector<float> lse;
  ReferenceBackward ref;

  BackwardArgs hostArgs(std::vector<uint16_t> &dq, std::vector<uint16_t> &dk,
                        std::vector<uint16_t> &dv) const {
    BackwardArgs a;
    a.q = fwd.q.data();
    a.k = fwd.k.data();
    a.v = fwd.v.data();
    a.o = o.data();
    a.lse = lse.data();
    a.dO = dO.data();
    a.dq = dq.data();
    a.dk = dk.data();
    a.dv = dv.data();
    return a;
  }
};

BwdData makeBwdData(const BundleMeta &m, const Problem &p, unsigned seed) {
  BwdData data;
  data.fwd = makeData(m, p, seed);
  std::vector<double> q, k, v, o, dO;
  for (uint16_t h : data.fwd.q)
    q.push_back(fromBits(m, h));
  for (uint16_t h : data.fwd.k)
    k.push_back(fromBits(m, h));
  for (uint16_t h : data.fwd.v)
    v.push_back(fromBits(m, h));
  for (double x : data.fwd.ref.o) {
    data.o.push_back(toBits(m, x));
    o.push_back(fromBits(m, data.o.back()));
  }
  for (double x : data.fwd.ref.lse)
    data.lse.push_back(static_cast<float>(x));
  for (double x : randomNormal(p.oElements(), seed + 10)) {
    data.dO.push_back(toBits(m, x));
    dO.push_back(fromBits(m, data.dO.back()));
  }
  ReferenceConfig cfg{p.b, p.hq, p.hk,   p.sq,    p.sk,
                      p.d, p.dv, m.mask, m.scale, m.softcap};
  std::string err;
  EXPECT_TRUE(referenceBackward(cfg, q, k, v, dO, &data.ref, &err, &o)) << err;
  return data;
}

void expectGradients(const BundleMeta &m, const BwdData &data,
                     const std::vector<uint16_t> &dq,
                     const std::vector<uint16_t> &dk,
                     const std::vector<uint16_t> &dv) {
  struct Grad {
    const char *name;
    const std::vector<uint16_t> &got;
    const std::vector<double> &want;
  } grads[] = {{"dq", dq, data.ref.dq},
               {"dk", dk, data.ref.dk},
               {"dv", dv, data.ref.dv}};
  for (const Grad &g : grads) {
    ASSERT_EQ(g.got.size(), g.want.size()) << g.name;
    for (size_t i = 0; i < g.got.size(); ++i)
      ASSERT_NEAR(fromBits(m, g.got[i]), g.want[i],
                  1e-2 * (1 + std::fabs(g.want[i])))
          << g.name << "[" << i << "]";
  }
}

/// The launches in the fake's log, "kernel grid" each, in order.
std::vector<std::string> launches() {
  std::vector<std::string> out;
  std::regex line(
      "launch kernel=(\\S+) grid=(\\S+) block=(\\S+) shared=(\\d+)");
  std::string log = readLog();
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end;
       ++it)
    out.push_back((*it)[1].str() + " " + (*it)[2].str() + " " + (*it)[3].str() +
                  " " + (*it)[4].str());
  return out;
}

std::string grid(int64_t x, int64_t y, int64_t z) {
  return std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z);
}

/// The three launches a backward of `p` makes.
std::vector<std::string> bwdLaunches(const BundleMeta &m, const Problem &p) {
  std::string block =
      std::to_string(m.blockThreads) + ",1,1 " + std::to_string(m.sharedBytes);
  std::string q = grid((p.sq + m.blockM - 1) / m.blockM, p.hq, p.b) + " ";
  std::string kv = grid((p.sk + m.blockN - 1) / m.blockN, p.hk, p.b) + " ";
  return {m.kernel + "_prep " + q + block, m.kernel + "_dkdv " + kv + block,
          m.kernel + "_dq " + q + block};
}

struct Upload {
  Backend &be;
  std::vector<DeviceBuffer> buffers;
  void *operator()(const void *host, size_t bytes) {
    Expected<DeviceBuffer> buf = DeviceBuffer::allocate(be, bytes);
    EXPECT_TRUE(buf.ok()) << buf.message();
    if (host)
      EXPECT_TRUE(be.copyToDevice(buf->get(), host, bytes).ok());
    else
      EXPECT_TRUE(be.fill(buf->get(), 0xFF, bytes, nullptr).ok());
    buffers.push_back(buf.take());
    return buffers.back().get();
  }
};

/// Device copies of a backward's inputs and NaN outputs.
struct DeviceBwd {
  Upload up;
  BackwardArgs args;
  DeviceBwd(Backend &be, const Problem &p, const BwdData &data) : up{be, {}} {
    args.q = up(data.fwd.q.data(), data.fwd.q.size() * 2);
    args.k = up(data.fwd.k.data(), data.fwd.k.size() * 2);
    args.v = up(data.fwd.v.data(), data.fwd.v.size() * 2);
    args.o = up(data.o.data(), data.o.size() * 2);
    args.lse =
        static_cast<const float *>(up(data.lse.data(), data.lse.size() * 4));
    args.dO = up(data.dO.data(), data.dO.size() * 2);
    args.dq = up(nullptr, p.qElements() * 2);
    args.dk = up(nullptr, p.kElements() * 2);
    args.dv = up(nullptr, p.vElements() * 2);
  }
  void download(const Problem &p, std::vector<uint16_t> *dq,
                std::vector<uint16_t> *dk, std::vector<uint16_t> *dv) {
    dq->assign(p.qElements(), 0);
    dk->assign(p.kElements(), 0);
    dv->assign(p.vElements(), 0);
    ASSERT_TRUE(up.be.synchronize(nullptr).ok());
    ASSERT_TRUE(up.be.copyToHost(dq->data(), args.dq, dq->size() * 2).ok());
    ASSERT_TRUE(up.be.copyToHost(dk->data(), args.dk, dk->size() * 2).ok());
    ASSERT_TRUE(up.be.copyToHost(dv->data(), args.dv, dv->size() * 2).ok());
  }
};

/// Runs the backward on `dev`'s buffers and checks the gradients.
void expectRunsDevice(const Kernel &k, const BundleMeta &m, const Problem &p,
                      const BwdData &data, DeviceBwd &dev) {
  Status s = k.runBackward(p, dev.args);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<uint16_t> dq, dk, dv;
  dev.download(p, &dq, &dk, &dv);
  expectGradients(m, data, dq, dk, dv);
}

TEST(GpuFakeBackward, RunsThreeKernelsInOrder) {
  struct Case {
    DType dtype;
    int64_t hq, hk, d, dv;
    const char *mask;
    bool deterministic;
    int64_t b, sq, sk;
  } cases[] = {
      {DType::BF16, 4, 4, 16, 16, "0", false, 2, 33, 17},
      {DType::F16, 8, 2, 32, 16, "b", true, 1, 40, 70},     // GQA, Sk > Sq
      {DType::BF16, 4, 1, 16, 16, "t", false, 2, 50, 20},   // MQA, Sq > Sk
      {DType::F16, 2, 2, 8, 8, "b:5,0,2", true, 3, 1, 37},  // decode, sinks
      {DType::BF16, 8, 1, 16, 8, "xt:7", false, 1, 19, 65}, // 8:1
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.mask) +
                 (c.deterministic ? " deterministic" : " atomic"));
    BundleMeta m =
        bwdMeta(c.dtype, c.hq, c.hk, c.d, c.dv, c.mask, c.deterministic);
    Expected<std::unique_ptr<Kernel>> k = loadFake(m);
    ASSERT_TRUE(k.ok()) << k.message();
    Problem p = makeProblem(m, c.b, c.sq, c.sk);
    BwdData data = makeBwdData(m, p, 5);

    // Device buffers, the kernel's own workspace.
    DeviceBwd dev((*k)->backend(), p, data);
    clearLog();
    expectRunsDevice(**k, m, p, data, dev);
    EXPECT_EQ(launches(), bwdLaunches(m, p)) << readLog();
    Expected<LaunchPlan> plan = (*k)->plan(Kernel::sizesOf(p));
    ASSERT_TRUE(plan.ok()) << plan.message();
    ASSERT_EQ(plan->launches.size(), 3u);
    const LaunchDims &keys = plan->launches[1].dims; // dkdv
    EXPECT_EQ(keys.grid[0], (c.sk + 31) / 32);
    EXPECT_EQ(keys.grid[1], c.hk);

    // Host buffers: the runtime copies.
    std::vector<uint16_t> hq(p.qElements(), 0xFFFF), hk(p.kElements(), 0xFFFF),
        hv(p.vElements(), 0xFFFF);
    Status s = (*k)->runBackwardHost(p, data.hostArgs(hq, hk, hv));
    ASSERT_TRUE(s.ok()) << s.message();
    expectGradients(m, data, hq, hk, hv);
    fakeTarget().expectThreadStateKept();
  }
}

TEST(GpuFakeBackward, Workspace) {
  for (bool deterministic : {false, true}) {
    SCOPED_TRACE(deterministic ? "deterministic" : "atomic");
    BundleMeta m = bwdMeta(DType::BF16, 4, 2, 16, 16, "b", deterministic);
    Expected<std::unique_ptr<Kernel>> k = loadFake(m);
    ASSERT_TRUE(k.ok()) << k.message();
    // B*Hq*Sq = 2*4*9 = 72 rows: dsum 288 bytes, dqacc at 512.
    Problem p = makeProblem(m, 2, 9, 30);
    Expected<size_t> bytes = (*k)->backwardWorkspaceBytes(p);
    ASSERT_TRUE(bytes.ok()) << bytes.message();
    EXPECT_EQ(*bytes, deterministic ? 288u : 512u + 72 * 16 * 4);

    BwdData data = makeBwdData(m, p, 9);
    DeviceBwd dev((*k)->backend(), p, data);
    // The caller's workspace, exactly as large as needed: the fake checks
    // that dsum and dqacc lie in it where the layout says.
    void *ws = dev.up(nullptr, *bytes);
    dev.args.workspace = ws;
    dev.args.workspaceBytes = *bytes;
    expectRunsDevice(**k, m, p, data, dev);

    // Too small, or misaligned: nothing is launched.
    clearLog();
    dev.args.workspaceBytes = *bytes - 1;
    Status s = (*k)->runBackward(p, dev.args);
    EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(s.message(),
              "workspace of " + std::to_string(*bytes - 1) +
                  " bytes is too small: this launch needs " +
                  std::to_string(*bytes) +
                  " bytes (workspaceBytes; C API: fmhaKernelWorkspaceBytes); "
                  "nothing was launched");
    dev.args.workspace = static_cast<char *>(ws) + 16;
    dev.args.workspaceBytes = *bytes;
    s = (*k)->runBackward(p, dev.args);
    EXPECT_EQ(s.message(), "the workspace must be 256-byte aligned; "
                           "nothing was launched");
    EXPECT_TRUE(launches().empty()) << readLog();

    // The kernel's own workspace grows with the problem.
    dev.args.workspace = nullptr;
    dev.args.workspaceBytes = 0;
    ASSERT_TRUE((*k)->runBackward(p, dev.args).ok());
    Problem big = makeProblem(m, 3, 40, 30);
    BwdData bigData = makeBwdData(m, big, 4);
    DeviceBwd bigDev((*k)->backend(), big, bigData);
    expectRunsDevice(**k, m, big, bigData, bigDev);
    // And serves a smaller one again.
    expectRunsDevice(**k, m, p, data, dev);
  }
}

TEST(GpuFakeBackward, Errors) {
  // A module without one of the three kernels.
  BundleMeta m = bwdMeta(DType::F16, 4, 2, 16, 16);
  for (const char *stage : {"prep", "dkdv", "dq"}) {
    Expected<std::unique_ptr<Kernel>> k =
        loadFake(m, std::string("omit=") + stage + "\n");
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().code(), ErrorCode::LoadFailed);
    EXPECT_TRUE(contains(k.message(), std::string("kernel 'fmha_bwd_") + stage +
                                          "' not found in the module (the "
                                          "manifest names fmha_bwd_prep, "
                                          "fmha_bwd_dkdv, fmha_bwd_dq)"))
        << k.message();
  }
  // A forward module in a backward bundle: none of the three is there.
  BundleMeta fwd = fakeMeta(DType::F16, 4, 2, 16, 16);
  fwd.kernel = "fmha_bwd";
  std::string bytes, err;
  ASSERT_TRUE(serializeBundle(m, fakeModule(fwd), &bytes, &err)) << err;
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(bytes, "f.fmha");
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(contains(k.message(), "kernel 'fmha_bwd_prep' not found"))
      << k.message();

  // Forward and backward entry points refuse the other kind.
  k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  Problem p = makeProblem(m, 1, 8, 8);
  std::vector<uint16_t> buf(p.qElements());
  std::vector<float> lse(p.lseElements());
  Status s = (*k)->runHost(
      p, ForwardArgs{buf.data(), buf.data(), buf.data(), buf.data(), nullptr});
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
  Expected<std::unique_ptr<Kernel>> f =
      loadFake(fakeMeta(DType::F16, 4, 2, 16, 16));
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ((*f)->backwardWorkspaceBytes(p).status().code(),
            ErrorCode::ProblemMismatch);

  // Grids over the device's limits launch nothing, whichever grid.
  clearLog();
  BwdData data = makeBwdData(m, p, 1);
  std::vector<uint16_t> dq(p.qElements()), dk(p.kElements()), dv(p.vElements());
  BackwardArgs a = data.hostArgs(dq, dk, dv);
  Problem wide = makeProblem(m, 65536, 1, 1);
  s = (*k)->runBackward(wide, a);
  EXPECT_EQ(s.message(), "kernel 'fmha_bwd_prep': grid.z = b = 65536 "
                         "exceeds the device limit 65535; nothing was "
                         "launched");
  EXPECT_TRUE(launches().empty()) << readLog();
  // Each kernel has its own grid: dkdv tiles the keys.
  Problem keys = makeProblem(m, 1, 64, 129);
  Expected<LaunchPlan> plan = (*k)->plan(Kernel::sizesOf(keys));
  ASSERT_TRUE(plan.ok()) << plan.message();
  ASSERT_EQ(plan->launches.size(), 3u);
  EXPECT_EQ(plan->launches[0].dims.grid[0], 4); // ceil(64 / block_m 16)
  EXPECT_EQ(plan->launches[1].dims.grid[0], 5); // ceil(129 / block_n 32)
  EXPECT_EQ(plan->launches[2].dims.grid[0], 4);

  // A failing launch names its kernel.
  const std::string failVar = fakeTarget().envPrefix + "_FAIL";
  std::string launchFn = fakeTarget().target == Target::Cuda
                             ? "cuLaunchKernel"
                             : "hipModuleLaunchKernel";
  setenv(failVar.c_str(), (launchFn + "=1").c_str(), 1);
  s = (*k)->runBackwardHost(p, a);
  unsetenv(failVar.c_str());
  EXPECT_EQ(s.code(), ErrorCode::LaunchFailed);
  EXPECT_TRUE(contains(s.message(), "kernel 'fmha_bwd_prep', grid (1,4,1)"))
      << s.message();
  fakeTarget().expectThreadStateKept();
}

TEST(GpuFakeBackward, CApi) {
  const int target = fakeTarget().capiTarget;
  BundleMeta m = bwdMeta(DType::BF16, 4, 1, 16, 16, "t", true);
  std::string bytes, err;
  ASSERT_TRUE(serializeBundle(m, fakeModule(m), &bytes, &err));
  fmhaKernel kernel = nullptr;
  ASSERT_EQ(fmhaKernelLoadBytes(bytes.data(), bytes.size(), &kernel),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  fmhaKernelInfo info;
  ASSERT_EQ(fmhaKernelGetInfo(kernel, &info), FMHA_SUCCESS);
  EXPECT_EQ(info.kind, FMHA_KIND_BWD);
  EXPECT_EQ(info.deterministic, 1);
  EXPECT_STREQ(info.abi, "manifest");
  EXPECT_EQ(info.num_kernels, 3);
  Problem p = makeProblem(m, 2, 21, 21);
  fmhaProblem cp = {p.b, p.hq, p.hk, p.sq, p.sk, p.d, p.dv};
  size_t need = 0;
  ASSERT_EQ(fmhaKernelBackwardWorkspaceBytes(kernel, &cp, &need), FMHA_SUCCESS)
      << fmhaGetLastError();
  EXPECT_EQ(need, size_t(p.lseElements()) * 4);
  EXPECT_EQ(fmhaKernelBackwardWorkspaceBytes(kernel, &cp, nullptr),
            FMHA_ERROR_INVALID_ARGUMENT);

  BwdData data = makeBwdData(m, p, 2);
  Backend &be = **getBackend(fakeTarget().target);
  DeviceBwd dev(be, p, data);
  void *ws = nullptr;
  ASSERT_EQ(fmhaDeviceMalloc(target, need, &ws), FMHA_SUCCESS);
  const BackwardArgs &a = dev.args;
  ASSERT_EQ(fmhaKernelRunBackwardDeviceWorkspace(kernel, &cp, a.q, a.k, a.v,
                                                 a.o, a.lse, a.dO, a.dq, a.dk,
                                                 a.dv, ws, need, nullptr),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  std::vector<uint16_t> dq, dk, dv;
  dev.download(p, &dq, &dk, &dv);
  expectGradients(m, data, dq, dk, dv);
  EXPECT_EQ(fmhaKernelRunBackwardDeviceWorkspace(kernel, &cp, a.q, a.k, a.v,
                                                 a.o, a.lse, a.dO, a.dq, a.dk,
                                                 a.dv, ws, need - 4, nullptr),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(fmhaGetLastError(), "is too small"))
      << fmhaGetLastError();
  // Without a workspace: the kernel's own.
  ASSERT_EQ(fmhaKernelRunBackwardDevice(kernel, &cp, a.q, a.k, a.v, a.o, a.lse,
                                        a.dO, a.dq, a.dk, a.dv, nullptr),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  dev.download(p, &dq, &dk, &dv);
  expectGradients(m, data, dq, dk, dv);
  EXPECT_EQ(fmhaDeviceFree(target, ws), FMHA_SUCCESS);
  fmhaKernelDestroy(kernel);
  fakeTarget().expectThreadStateKept();
}

} // namespace

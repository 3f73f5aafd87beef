//===- DeviceRingFakeTest.cpp - The device ring over the fake driver ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// runRingDevice (DeviceRing.h) on one rank over the fake CUDA driver: the
// ring's device, streams, events, uploads, pair kernels and merges run their
// host logic without a GPU or NCCL. The fake computes the pair kernels with
// the float64 reference and the merges in f32, so o and lse must match the
// reference of the whole problem. A transport that reports another rank's
// failure stops the run at the barrier before the clock, with nothing
// launched. Part of the CUDA fake-device executable (CudaFakeDeviceTest.cpp
// sets the environment).
//
//===----------------------------------------------------------------------===//

#include "GpuFakeTest.h"

#include "fmha/Ring/DeviceRing.h"

#include <cstring>

using namespace fmha;
using namespace fmha::rt;
using namespace fmha::test;

namespace {

/// One rank: a shift sends to itself (the fake's device memory is host
/// memory, so a copy is the transfer); allOk reports the other ranks as
/// `othersOk` says.
class LoopbackTransport final : public ring::Transport {
public:
  explicit LoopbackTransport(bool othersOk) : othersOk_(othersOk) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string description() const override { return "loopback: 1 rank"; }
  Status startShift(const void *send, void *recv, size_t bytes) override {
    std::memcpy(recv, send, bytes);
    return Status::success();
  }
  Status waitShifts() override { return Status::success(); }
  Status allGather(const void *send, void *recv, size_t bytes) override {
    std::memcpy(recv, send, bytes);
    return Status::success();
  }
  Expected<bool> allOk(bool ok) override {
    ++allOkCalls;
    return ok && othersOk_;
  }
  int allOkCalls = 0;

private:
  bool othersOk_;
};

std::vector<unsigned char> bytesOf(const std::vector<uint16_t> &x) {
  std::vector<unsigned char> out(x.size() * sizeof(uint16_t));
  std::memcpy(out.data(), x.data(), out.size());
  return out;
}

/// The ring's bundles (forward with mask 0 and t, merge) for bf16, Hq 4,
/// Hk 2 (GQA), D = Dv = 16, and one problem of B 2, S = chunk 24.
struct OneRank {
  BundleMeta full = fakeMeta(DType::BF16, 4, 2, 16, 16, "0");
  BundleMeta causal = fakeMeta(DType::BF16, 4, 2, 16, 16, "t");
  std::unique_ptr<Kernel> fwd, fwdCausal, merge;
  std::unique_ptr<ring::CudaRingDevice> device;
  ring::RingConfig config;
  ring::RingKernels kernels;

  /// The one chunk of `data` as the ring's inputs.
  static ring::RingInputs inputs(const Data &data) {
    ring::RingInputs in;
    in.q = {bytesOf(data.q)};
    in.k = {bytesOf(data.k)};
    in.v = {bytesOf(data.v)};
    return in;
  }

  void load() {
    Expected<std::unique_ptr<Kernel>> f = loadFake(full);
    Expected<std::unique_ptr<Kernel>> c = loadFake(causal);
    Expected<std::unique_ptr<Kernel>> m =
        loadFake(fakeGpuMergeMeta(Target::Cuda, DType::BF16, 4, 16));
    ASSERT_TRUE(f.ok()) << f.message();
    ASSERT_TRUE(c.ok()) << c.message();
    ASSERT_TRUE(m.ok()) << m.message();
    fwd = std::move(*f);
    fwdCausal = std::move(*c);
    merge = std::move(*m);
    kernels.fwd = fwd.get();
    kernels.fwdCausal = fwdCausal.get();
    kernels.merge = merge.get();
    config.b = 2;
    config.chunk = 24;
    config.target = Target::Cuda;
    Expected<std::unique_ptr<ring::CudaRingDevice>> dev =
        ring::CudaRingDevice::create(fakeTarget().device);
    ASSERT_TRUE(dev.ok()) << dev.message();
    device = std::move(*dev);
  }
};

TEST(DeviceRingFake, OneRankMatchesTheReference) {
  OneRank r;
  ASSERT_NO_FATAL_FAILURE(r.load());
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    r.config.causal = causal;
    const BundleMeta &m = causal ? r.causal : r.full;
    Data data = makeData(m, makeProblem(m, 2, 24, 24), causal ? 11 : 5);
    ring::RingInputs in = OneRank::inputs(data);
    LoopbackTransport t(/*othersOk=*/true);
    ring::RingOutputs out;
    ring::DeviceRingTimes times;
    clearLog();
    Status s = ring::runRingDevice(t, *r.device, r.kernels, r.config, in, &out,
                                   &times, ring::RingMode::Full,
                                   /*iterations=*/2);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_GE(t.allOkCalls, 1);
    ASSERT_EQ(out.o.size(), 1u);
    ASSERT_EQ(out.lse.size(), 1u);
    std::vector<uint16_t> o(out.o[0].size() / sizeof(uint16_t));
    std::memcpy(o.data(), out.o[0].data(), out.o[0].size());
    expectMatches(m, data, o, out.lse[0]);
    // The pair kernel ran on the fake, once per iteration, over the chunk.
    const std::string log = readLog();
    EXPECT_TRUE(contains(log, "launch kernel=fmha_fwd")) << log;
    EXPECT_TRUE(contains(log, "B=2 Sq=24 Sk=24")) << log;
    EXPECT_GE(times.kernelCalls, 1);
    EXPECT_GE(times.forwardMs, 0.0);
  }
}

TEST(DeviceRingFake, AnotherRankFailedStopsBeforeTheClock) {
  OneRank r;
  ASSERT_NO_FATAL_FAILURE(r.load());
  Data data = makeData(r.full, makeProblem(r.full, 2, 24, 24), 3);
  ring::RingInputs in = OneRank::inputs(data);
  LoopbackTransport t(/*othersOk=*/false);
  ring::RingOutputs out;
  clearLog();
  Status s = ring::runRingDevice(t, *r.device, r.kernels, r.config, in, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::LaunchFailed);
  EXPECT_EQ(s.message(), "ring: another rank failed before the timed run");
  EXPECT_EQ(t.allOkCalls, 1);
  // Nothing was launched: the barrier comes before the first step.
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();
  EXPECT_TRUE(out.o.empty());
}

} // namespace

//===- RunElementwise.cpp - fmha-run on merge and accumulate bundles -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "RunKinds.h"
#include "Validation.h"

#include "fmha/Runtime/Random.h"
#include "fmha/Runtime/Reference.h"

#include <cmath>
#include <cstdio>
#include <cstring>

using namespace fmha::validation;

namespace fmha::runtool {
namespace {

/// The partials of a merge: o1, o2 standard normal, lse1, lse2 normal with
/// standard deviation 4 (weights far from equal), and empty partials (lse
/// -inf) on a fixed pattern of rows: lse1 on rows r % 7 == 3, lse2 on rows
/// r % 5 == 1, both on rows r % 11 == 4 (and wherever the two patterns
/// meet). An empty partial's o stays random: the kernel must not read it
/// into the sum.
struct MergeInputs {
  std::vector<float> o1, lse1, o2, lse2;
};

MergeInputs mergeInputs(const MergeProblem &p, DType dtype, uint64_t seed) {
  Normal rng(seed);
  MergeInputs in;
  in.o1.resize(p.oElements());
  in.o2.resize(p.oElements());
  in.lse1.resize(p.lseElements());
  in.lse2.resize(p.lseElements());
  for (std::vector<float> *t : {&in.o1, &in.o2})
    for (float &x : *t)
      x = roundTo(static_cast<float>(rng.next()), dtype);
  for (std::vector<float> *t : {&in.lse1, &in.lse2})
    for (float &x : *t)
      x = static_cast<float>(4.0 * rng.next());
  const float negInf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < p.lseElements(); ++r) {
    if (r % 7 == 3 || r % 11 == 4)
      in.lse1[r] = negInf;
    if (r % 5 == 1 || r % 11 == 4)
      in.lse2[r] = negInf;
  }
  return in;
}

} // namespace

/// A kind=merge bundle: -b N --sq S (S rows per head); --validate against
/// referenceMerge, --bench.
int runMergeKernel(const CommandLine &cl, Kernel &kernel, const MergeProblem &p,
                   const Signature &sig, uint64_t seed, BenchCounts counts) {
  Backend &backend = kernel.backend();
  Device dev(backend);
  MergeInputs in = mergeInputs(p, sig.dtype, seed);
  DeviceBuffer o1 = dev.upload(toStorage(in.o1, sig.dtype));
  DeviceBuffer o2 = dev.upload(toStorage(in.o2, sig.dtype));
  auto floats = [](const std::vector<float> &v) {
    std::vector<unsigned char> bytes(v.size() * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return bytes;
  };
  DeviceBuffer lse1 = dev.upload(floats(in.lse1));
  DeviceBuffer lse2 = dev.upload(floats(in.lse2));
  DeviceBuffer oBuf =
      dev.allocate(static_cast<size_t>(p.oElements()) * dtypeSize(sig.dtype));
  DeviceBuffer lseBuf =
      dev.allocate(static_cast<size_t>(p.lseElements()) * sizeof(float));
  MergeArgs args;
  args.o1 = o1.get();
  args.lse1 = static_cast<const float *>(lse1.get());
  args.o2 = o2.get();
  args.lse2 = static_cast<const float *>(lse2.get());
  args.o = oBuf.get();
  args.lse = static_cast<float *>(lseBuf.get());
  auto poison = [&]() {
    dev.poison(oBuf);
    dev.poison(lseBuf);
  };
  double firstMs =
      timeFirstRun(backend, poison, [&] { return kernel.runMerge(p, args); });
  std::vector<float> o = fromStorage(dev.download(oBuf), sig.dtype);
  std::vector<float> lse(p.lseElements());
  check(backend.copyToHost(lse.data(), lseBuf.get(), lseBuf.size()));
  std::printf("kernel %s (%s, %s, merge)\n", kernel.meta().kernel.c_str(),
              backend.description().c_str(), toString(sig.dtype));
  std::printf("merge B=%lld H=%lld S=%lld Dv=%lld: first run %.3f ms\n",
              static_cast<long long>(p.b), static_cast<long long>(p.h),
              static_cast<long long>(p.s), static_cast<long long>(p.dv),
              firstMs);
  bool passed = true;
  if (cl.flag("validate")) {
    ReferenceForward ref;
    std::string err;
    if (!referenceMerge(p.lseElements(), p.dv, toDouble(in.o1),
                        toDouble(in.lse1), toDouble(in.o2), toDouble(in.lse2),
                        &ref, &err))
      fail(err);
    std::vector<std::string> reasons;
    judgeOutputs(p.h, p.s, sig.dtype, o, lse, ref, &reasons);
    passed = printVerdict(reasons, sig.dtype,
                          "rel_err <= %g, |lse-ref| <= %g*(1+|ref|)");
  }
  if (cl.flag("bench"))
    bench(backend, counts, 1, 0.0, "merge: no FLOPs counted", poison,
          [&](size_t) { return kernel.runMerge(p, args); });
  return passed ? 0 : 1;
}

/// A kind=acc bundle: -n N. acc += x over all N elements, then over the
/// N - 1 from element 1 (misaligned for the vector path); --validate against
/// the float64 sums, --bench.
int runAccumulateKernel(const CommandLine &cl, Kernel &kernel, int64_t n,
                        DType dtype, uint64_t seed, BenchCounts counts) {
  Backend &backend = kernel.backend();
  Device dev(backend);
  Normal rng(seed);
  std::vector<float> acc0(n), x(n);
  for (float &a : acc0)
    a = static_cast<float>(rng.next());
  for (float &v : x)
    v = roundTo(static_cast<float>(rng.next()), dtype);
  std::vector<unsigned char> accBytes(n * sizeof(float));
  std::memcpy(accBytes.data(), acc0.data(), accBytes.size());
  DeviceBuffer xBuf = dev.upload(toStorage(x, dtype));
  DeviceBuffer accBuf = dev.upload(accBytes);
  const size_t elt = dtypeSize(dtype);
  AccumulateArgs all, tail;
  all.x = xBuf.get();
  all.acc = static_cast<float *>(accBuf.get());
  tail.x = static_cast<const unsigned char *>(xBuf.get()) + elt;
  tail.acc = all.acc + 1;
  double firstMs = timeFirstRun(
      backend, [] {}, [&] { return kernel.runAccumulate(n, all); });
  check(kernel.runAccumulate(n - 1, tail));
  check(backend.synchronize(nullptr));
  std::vector<float> got(n);
  check(backend.copyToHost(got.data(), accBuf.get(), accBuf.size()));
  std::printf("kernel %s (%s, %s, acc)\n", kernel.meta().kernel.c_str(),
              backend.description().c_str(), toString(dtype));
  std::printf("accumulate n=%lld: first run %.3f ms\n",
              static_cast<long long>(n), firstMs);
  bool passed = true;
  if (cl.flag("validate")) {
    std::vector<double> ref(n);
    for (int64_t i = 0; i < n; ++i)
      ref[i] = double(acc0[i]) + double(x[i]) + (i > 0 ? double(x[i]) : 0.0);
    TensorErrors e = compareTensor(got, ref);
    std::printf("acc: max_abs_err=%.3g rel_err=%.3g\n", e.maxAbs, e.rel);
    std::vector<std::string> reasons;
    if (e.nan)
      reasons.push_back("acc has " + std::to_string(e.nan) + " NaN");
    else if (!(e.rel <= 1e-6))
      reasons.push_back("acc rel_err " + std::to_string(e.rel) + " > 1e-6");
    passed = printVerdict(reasons, dtype, "acc rel_err <= 1e-6");
  }
  if (cl.flag("bench"))
    bench(
        backend, counts, 1, 0.0, "accumulate: no FLOPs counted", [] {},
        [&](size_t) { return kernel.runAccumulate(n, all); });
  return passed ? 0 : 1;
}

} // namespace fmha::runtool

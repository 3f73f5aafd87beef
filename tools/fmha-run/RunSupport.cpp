//===- RunSupport.cpp - fmha-run's buffers, launches and timing ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "RunSupport.h"

#include "fmha/Runtime/Half.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace fmha::runtool {

//===----------------------------------------------------------------------===//
// Inputs and conversions
//===----------------------------------------------------------------------===//

float roundTo(float x, DType t) {
  switch (t) {
  case DType::F32:
    return x;
  case DType::F16:
    return roundToHalf(x);
  case DType::BF16:
    return roundToBFloat16(x);
  }
  return x;
}

/// The kernel's storage bytes for `values` (already representable).
std::vector<unsigned char> toStorage(const std::vector<float> &values,
                                     DType t) {
  std::vector<unsigned char> out(values.size() * dtypeSize(t));
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[4 * i], &values[i], 4);
    } else {
      uint16_t h = t == DType::F16 ? floatToHalfBits(values[i])
                                   : floatToBFloat16Bits(values[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

std::vector<float> fromStorage(const std::vector<unsigned char> &bytes,
                               DType t) {
  size_t n = bytes.size() / dtypeSize(t);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[i], &bytes[4 * i], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[2 * i], 2);
      out[i] = t == DType::F16 ? halfBitsToFloat(h) : bfloat16BitsToFloat(h);
    }
  }
  return out;
}

std::vector<double> toDouble(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

//===----------------------------------------------------------------------===//
// Main flow
//===----------------------------------------------------------------------===//

std::string joinPath(const std::string &dir, const char *file) {
  return (std::filesystem::path(dir) / file).string();
}

NpyArray loadInput(const std::string &dir, const char *file, size_t rank) {
  NpyArray a;
  std::string err;
  if (!readNpy(joinPath(dir, file), &a, &err))
    fail(err);
  if (a.descr == "<i4")
    fail("npy '" + joinPath(dir, file) +
         "': expected float32 or float16 values, got int32");
  if (a.shape.size() != rank)
    fail("npy '" + joinPath(dir, file) + "': expected a " +
         std::to_string(rank) + "-d " + (rank == 4 ? "BHSD " : "") +
         "array, got shape " + formatShape(a.shape));
  return a;
}

std::vector<int32_t> loadOffsets(const std::string &dir, const char *file) {
  NpyArray a;
  std::string err;
  if (!readNpy(joinPath(dir, file), &a, &err))
    fail(err);
  if (a.descr != "<i4" || a.shape.size() != 1 || a.shape[0] < 1)
    fail("npy '" + joinPath(dir, file) +
         "': expected int32 offsets [B + 1], got " + a.descr + " of shape " +
         formatShape(a.shape));
  return a.ints;
}

void check(const Status &s) {
  if (!s.ok())
    fail(s.message());
}

MemoryLayout gLayout;

InputBytes inputBytes(const Problem &p, const Signature &sig,
                      const Inputs &in) {
  const MemoryLayout &L = gLayout;
  const int64_t b = p.batch();
  return {toStorage(L.toMemory(in.q, b, p.hq, p.sq, p.d), sig.dtype),
          toStorage(L.toMemory(in.k, p.kvBatch(), p.hk, p.kvRows(), p.d),
                    sig.dtype),
          toStorage(L.toMemory(in.v, p.kvBatch(), p.hk, p.kvRows(), p.dv),
                    sig.dtype)};
}

/// The forward of `p` on `args` in gLayout's memory order.
Status launchForward(const Kernel &kernel, const Problem &p,
                     const ForwardArgs &args) {
  if (!gLayout.bshd)
    return kernel.run(p, args);
  LaunchArgs la = Kernel::sizesOf(p);
  la.tensor("q", args.q, gLayout.strides(p.hq, p.sq, p.d))
      .tensor("k", args.k, gLayout.strides(p.hk, p.kvRows(), p.d))
      .tensor("v", args.v, gLayout.strides(p.hk, p.kvRows(), p.dv))
      .tensor("o", args.o, gLayout.strides(p.hq, p.sq, p.dv));
  const std::pair<const char *, const void *> optional[] = {
      {"lse", args.lse},
      {"sinks", args.sinks},
      {"cu_seqlens_q", args.cuSeqlensQ},
      {"cu_seqlens_k", args.cuSeqlensK},
      {"block_table", args.blockTable},
      {"seqlens_k", args.seqlensK}};
  for (auto [name, pointer] : optional)
    if (pointer)
      la.tensor(name, pointer);
  return kernel.launch(la);
}

/// The backward of `p` on `args` in gLayout's memory order.
Status launchBackward(const Kernel &kernel, const Problem &p,
                      const BackwardArgs &args) {
  if (!gLayout.bshd)
    return kernel.runBackward(p, args);
  LaunchArgs la = Kernel::sizesOf(p);
  auto q = gLayout.strides(p.hq, p.sq, p.d),
       k = gLayout.strides(p.hk, p.sk, p.d),
       v = gLayout.strides(p.hk, p.sk, p.dv),
       o = gLayout.strides(p.hq, p.sq, p.dv);
  la.tensor("q", args.q, q)
      .tensor("k", args.k, k)
      .tensor("v", args.v, v)
      .tensor("o", args.o, o)
      .tensor("lse", args.lse)
      .tensor("dO", args.dO, o)
      .tensor("dq", args.dq, q)
      .tensor("dk", args.dk, k)
      .tensor("dv", args.dv, v);
  if (args.sinks)
    la.tensor("sinks", args.sinks).tensor("dsinks", args.dsinks);
  return kernel.launch(la);
}

/// The launches of a GPU bundle for `sizes` (every grid checked against
/// the device), or nullopt for a cpu bundle.
std::optional<LaunchPlan> launchFor(const Kernel &kernel,
                                    const LaunchArgs &sizes) {
  if (kernel.meta().target == Target::Cpu)
    return std::nullopt;
  Expected<LaunchPlan> plan = kernel.plan(sizes);
  check(plan.status());
  return *plan;
}

/// Wall-clock time of one run from poisoned outputs.
double timeFirstRun(Backend &backend, const std::function<void()> &poison,
                    const std::function<Status()> &launch) {
  poison();
  check(backend.synchronize(nullptr));
  auto t0 = std::chrono::steady_clock::now();
  check(launch());
  check(backend.synchronize(nullptr));
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

/// Prints a line per launch of `plan` and its workspace.
void printLaunches(const Kernel &kernel, const LaunchPlan &plan,
                   size_t workspaceBytes) {
  const Manifest &m = kernel.meta().manifest;
  for (const PlannedLaunch &launch : plan.launches) {
    const LaunchDims &d = launch.dims;
    std::printf(
        "launch %s grid=(%lld,%lld,%lld) block=(%lld,%lld,%lld) "
        "shared_bytes=%lld\n",
        m.kernels[launch.kernel].symbol.c_str(),
        static_cast<long long>(d.grid[0]), static_cast<long long>(d.grid[1]),
        static_cast<long long>(d.grid[2]), static_cast<long long>(d.block[0]),
        static_cast<long long>(d.block[1]), static_cast<long long>(d.block[2]),
        static_cast<long long>(d.sharedBytes));
  }
  if (!m.workspaces.empty()) {
    std::string names;
    for (const ManifestWorkspace &w : m.workspaces)
      names += (names.empty() ? "" : ", ") + w.name;
    std::printf("workspace %zu bytes (%s)\n", workspaceBytes, names.c_str());
  }
}

void printRunHeader(const Kernel &kernel, const Signature &sig,
                    const std::optional<LaunchPlan> &launch, const Problem &p,
                    double firstMs) {
  const BundleMeta &m = kernel.meta();
  std::string kind =
      m.kind == KernelKind::Backward
          ? std::string(", bwd") + (m.deterministic ? ", deterministic" : "")
          : "";
  std::printf("kernel %s (%s, %s%s, mask=%s, scale=%s, softcap=%s, block "
              "%lldx%lld)\n",
              m.kernel.c_str(), kernel.backend().description().c_str(),
              toString(sig.dtype), kind.c_str(), sig.mask.str().c_str(),
              formatReal(sig.scale).c_str(), formatReal(sig.softcap).c_str(),
              static_cast<long long>(sig.blockM),
              static_cast<long long>(sig.blockN));
  if (launch) {
    Expected<size_t> bytes = kernel.workspaceBytes(Kernel::sizesOf(p));
    check(bytes.status());
    printLaunches(kernel, *launch, *bytes);
  }
  std::printf("problem B=%lld Hq=%lld Hk=%lld Sq=%lld Sk=%lld D=%lld "
              "Dv=%lld: first run %.3f ms\n",
              static_cast<long long>(p.b), static_cast<long long>(p.hq),
              static_cast<long long>(p.hk), static_cast<long long>(p.sq),
              static_cast<long long>(p.sk), static_cast<long long>(p.d),
              static_cast<long long>(p.dv), firstMs);
}

void saveTensors(const std::string &dir,
                 const std::vector<SavedTensor> &tensors) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    fail("--save: cannot create directory '" + dir + "': " + ec.message());
  std::string names;
  for (const SavedTensor &t : tensors) {
    std::string err;
    if (!(t.ints
              ? writeNpy(joinPath(dir, t.file), t.shape, t.ints->data(), &err)
              : writeNpy(joinPath(dir, t.file), t.shape, t.data->data(), &err)))
      fail(err);
    names += (names.empty() ? "" : " ") + std::string(t.file);
  }
  std::printf("saved %s to %s\n", names.c_str(), dir.c_str());
}

/// How many copies of the inputs --bench rotates among: up to 4, at most
/// 256 MiB of inputs in all.
size_t rotationCopies(size_t inputBytes) {
  const size_t kRotationBudget = size_t(256) << 20;
  return std::max<size_t>(
      1,
      std::min<size_t>(4, kRotationBudget / std::max<size_t>(inputBytes, 1)));
}

/// --bench: `warmup` untimed runs, then `iters` timed ones; run i uses input
/// copy i % copies. poison() precedes every run, outside its timed span.
/// Prints the bench line with `flops` per run.
void bench(Backend &backend, BenchCounts counts, size_t copies, double flops,
           const char *note, const std::function<void()> &poison,
           const std::function<Status(size_t)> &launch) {
  const int64_t warmup = counts.warmup, iters = counts.iters;
  for (int64_t i = 0; i < warmup; ++i) {
    poison();
    check(launch(static_cast<size_t>(i) % copies));
  }
  // One timer a run, all queued before any is read, so that the device
  // never waits for the host between runs.
  std::vector<std::unique_ptr<StreamTimer>> timers;
  for (int64_t i = 0; i < iters; ++i) {
    Expected<std::unique_ptr<StreamTimer>> t = backend.createTimer();
    if (!t.ok())
      fail(t.message());
    timers.push_back(t.take());
  }
  for (int64_t i = 0; i < iters; ++i) {
    poison();
    check(timers[i]->start(nullptr));
    check(launch(static_cast<size_t>(i) % copies));
    check(timers[i]->stop(nullptr));
  }
  std::vector<double> times;
  for (auto &t : timers) {
    Expected<double> ms = t->elapsedMs();
    if (!ms.ok())
      fail(ms.message());
    times.push_back(*ms);
  }
  check(backend.synchronize(nullptr));
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  double median =
      n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  double gflops = median > 0 ? flops / (median * 1e6) : 0.0;
  std::printf("bench: iters=%lld warmup=%lld median_ms=%.4f min_ms=%.4f "
              "GFLOP/s=%.2f TFLOP/s=%.3f input_copies=%zu (%s)\n",
              static_cast<long long>(iters), static_cast<long long>(warmup),
              median, times.front(), gflops, gflops / 1e3, copies, note);
}

} // namespace fmha::runtool

//===- RunSupport.h - fmha-run's buffers, launches and timing -*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What every kernel kind of fmha-run shares: element conversions, device
// buffers, the memory layout of --layout, launches through the manifest,
// the run header, --save and --bench.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TOOLS_FMHA_RUN_RUNSUPPORT_H
#define FMHA_TOOLS_FMHA_RUN_RUNSUPPORT_H

#include "RunOptions.h"

#include "fmha/Runtime/Bundle.h"
#include "fmha/Runtime/Npy.h"
#include "fmha/Runtime/Runtime.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fmha::runtool {

using namespace fmha::rt;
using namespace fmha::runopt;

/// `x` rounded to the values of `t`.
float roundTo(float x, DType t);
/// The kernel's storage bytes for `values` (already representable).
std::vector<unsigned char> toStorage(const std::vector<float> &values, DType t);
std::vector<float> fromStorage(const std::vector<unsigned char> &bytes,
                               DType t);
std::vector<double> toDouble(const std::vector<float> &v);

std::string joinPath(const std::string &dir, const char *file);
/// A 4-d BHSD .npy array of --load's folder.
NpyArray loadInput(const std::string &dir, const char *file, size_t rank = 4);

/// Reads DIR/FILE: int32 offsets [B + 1] (cu_seqlens_q.npy, cu_seqlens_k.npy).
std::vector<int32_t> loadOffsets(const std::string &dir, const char *file);
/// Fails with the status' message unless it is ok.
void check(const Status &s);

/// The inputs, rounded to the dtype; dO is empty for a forward bundle.
struct Inputs {
  /// sinks: the learned sink logits [Hq] of a bundle that takes them, else
  /// empty.
  const std::vector<float> &q, &k, &v, &dO, &sinks;
  /// cu_seqlens_q and cu_seqlens_k [B + 1] of a variable-length bundle
  /// (varlen=1), else empty.
  const std::vector<int32_t> &cuSeqlensQ, &cuSeqlensK;
  /// block_table [B, max_pages] and seqlens_k [B] of a paged bundle
  /// (page_size=P), else empty.
  const std::vector<int32_t> &blockTable, &seqlensK;
};

/// A paged cache's table and lengths (Problem's pages and maxPages).
struct PagedCache {
  std::vector<int32_t> blockTable, seqlensK;
  int64_t pages = 0, maxPages = 0;
};

/// The cache of a paged bundle of page size `pageSize` for the `b`
/// sequences (nullopt: from the lengths' count): from --load's
/// block_table.npy and seqlens_k.npy (`loadedPages` the pages of
/// k_cache.npy), else from --seqlens-k (or `sk` keys each), --pages and
/// --max-pages, its pages in an order drawn from `seed`. Sets b.
PagedCache pagedCache(const CommandLine &cl, int64_t pageSize,
                      std::optional<int64_t> &b, std::optional<int64_t> sk,
                      const std::optional<std::string> &loadDir,
                      int64_t loadedPages, uint64_t seed);

/// Sets the slots of a paged cache `kv` ([pages, Hk, P, width]) that hold
/// no key of any sequence to NaN: a kernel that reads one fails --validate.
void poisonUnusedSlots(const Problem &p, const PagedCache &cache, int64_t width,
                       std::vector<float> &kv);

/// --warmup and --iters.
struct BenchCounts {
  int64_t warmup, iters;
};

/// Buffers on the kernel's backend.
class Device {
public:
  explicit Device(Backend &backend) : backend_(backend) {}
  DeviceBuffer upload(const std::vector<unsigned char> &bytes) {
    DeviceBuffer buf = allocate(bytes.size());
    check(backend_.copyToDevice(buf.get(), bytes.data(), bytes.size()));
    return buf;
  }
  DeviceBuffer allocate(size_t bytes) {
    Expected<DeviceBuffer> buf = DeviceBuffer::allocate(backend_, bytes);
    if (!buf.ok())
      fail(buf.message());
    return buf.take();
  }
  std::vector<unsigned char> download(const DeviceBuffer &buf) {
    std::vector<unsigned char> bytes(buf.size());
    check(backend_.copyToHost(bytes.data(), buf.get(), buf.size()));
    return bytes;
  }
  /// 0xFF bytes are NaN in f32, f16 and bf16: an element the kernel leaves
  /// unwritten shows.
  void poison(const DeviceBuffer &buf) {
    check(backend_.fill(buf.get(), 0xFF, buf.size(), nullptr));
  }

private:
  Backend &backend_;
};

/// The launch line of a GPU bundle (empty for cpu).
/// A forward problem's buffers on the device: q, k, v uploaded, room for o
/// and lse, and the kernel arguments that point at them.
/// --layout: how the attention tensors lie in memory. BSHD stores the
/// logical [B, H, S, D] tensor as [B, S, H, D] and passes its strides.
struct MemoryLayout {
  bool bshd = false;

  /// `x` (logical BHSD, row-major) in memory order.
  std::vector<float> toMemory(const std::vector<float> &x, int64_t b, int64_t h,
                              int64_t s, int64_t d) const {
    return bshd ? permute(x, b, h, s, d, /*toBshd=*/true) : x;
  }
  /// Memory order back to logical BHSD.
  std::vector<float> fromMemory(const std::vector<float> &x, int64_t b,
                                int64_t h, int64_t s, int64_t d) const {
    return bshd ? permute(x, b, h, s, d, /*toBshd=*/false) : x;
  }
  /// The strides (elements) of a logical [B, H, S, D] tensor; empty for
  /// contiguous BHSD.
  std::vector<int64_t> strides(int64_t h, int64_t s, int64_t d) const {
    if (!bshd)
      return {};
    return {s * h * d, d, h * d, 1};
  }

private:
  static std::vector<float> permute(const std::vector<float> &x, int64_t b,
                                    int64_t h, int64_t s, int64_t d,
                                    bool toBshd) {
    std::vector<float> y(x.size());
    for (int64_t ib = 0; ib < b; ++ib)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t is = 0; is < s; ++is) {
          const int64_t bhsd = ((ib * h + ih) * s + is) * d;
          const int64_t bshd = ((ib * s + is) * h + ih) * d;
          std::copy_n(&x[toBshd ? bhsd : bshd], d, &y[toBshd ? bshd : bhsd]);
        }
    return y;
  }
};
/// --layout of the run (set once from the command line).
extern MemoryLayout gLayout;

/// The storage bytes of q, k and v in gLayout's memory order.
struct InputBytes {
  std::vector<unsigned char> q, k, v;
};

/// The device buffers of a forward problem: q, k, v uploaded, room for o
/// and lse, and the kernel arguments that point at them.
struct ForwardBuffers {
  ForwardBuffers(Device &dev, const Problem &p, DType dtype,
                 const std::vector<unsigned char> &qBytes,
                 const std::vector<unsigned char> &kBytes,
                 const std::vector<unsigned char> &vBytes, const Inputs &in)
      : q(dev.upload(qBytes)), k(dev.upload(kBytes)), v(dev.upload(vBytes)),
        o(dev.allocate(static_cast<size_t>(p.oElements()) * dtypeSize(dtype))),
        lse(dev.allocate(static_cast<size_t>(p.lseElements()) *
                         sizeof(float))) {
    args.q = q.get();
    args.k = k.get();
    args.v = v.get();
    args.o = o.get();
    args.lse = static_cast<float *>(lse.get());
    if (!in.sinks.empty()) {
      sinks = dev.upload(asBytes(in.sinks));
      args.sinks = static_cast<const float *>(sinks.get());
    }
    if (!in.cuSeqlensQ.empty()) {
      cuQ = dev.upload(asBytes(in.cuSeqlensQ));
      args.cuSeqlensQ = static_cast<const int32_t *>(cuQ.get());
    }
    if (!in.cuSeqlensK.empty()) {
      cuK = dev.upload(asBytes(in.cuSeqlensK));
      args.cuSeqlensK = static_cast<const int32_t *>(cuK.get());
    }
    if (!in.seqlensK.empty()) {
      table = dev.upload(asBytes(in.blockTable));
      seqlensK = dev.upload(asBytes(in.seqlensK));
      args.blockTable = static_cast<const int32_t *>(table.get());
      args.seqlensK = static_cast<const int32_t *>(seqlensK.get());
    }
  }
  template <typename T>
  static std::vector<unsigned char> asBytes(const std::vector<T> &values) {
    const auto *bytes = reinterpret_cast<const unsigned char *>(values.data());
    return std::vector<unsigned char>(bytes, bytes + values.size() * sizeof(T));
  }
  DeviceBuffer q, k, v, o, lse, sinks, cuQ, cuK, table, seqlensK;
  ForwardArgs args;
};

struct SavedTensor {
  const char *file;
  std::vector<int64_t> shape;
  const std::vector<float> *data;
  /// int32 values instead (the offsets of a variable-length batch).
  const std::vector<int32_t> *ints = nullptr;
};

InputBytes inputBytes(const Problem &p, const Signature &sig, const Inputs &in);
/// The forward (backward) of `p` on `args` in gLayout's memory order.
Status launchForward(const Kernel &kernel, const Problem &p,
                     const ForwardArgs &args);
Status launchBackward(const Kernel &kernel, const Problem &p,
                      const BackwardArgs &args);
/// The launches of a GPU bundle for `sizes` (every grid checked against
/// the device), or nullopt for a cpu bundle.
std::optional<LaunchPlan> launchFor(const Kernel &kernel,
                                    const LaunchArgs &sizes);
/// Wall-clock time of one run from poisoned outputs.
double timeFirstRun(Backend &backend, const std::function<void()> &poison,
                    const std::function<Status()> &launch);
/// Prints a line per launch of `plan` and its workspace.
void printLaunches(const Kernel &kernel, const LaunchPlan &plan,
                   size_t workspaceBytes);
void printRunHeader(const Kernel &kernel, const Signature &sig,
                    const std::optional<LaunchPlan> &launch, const Problem &p,
                    double firstMs);
void saveTensors(const std::string &dir,
                 const std::vector<SavedTensor> &tensors);
/// How many copies of the inputs --bench rotates among: up to 4, at most
/// 256 MiB of inputs in all.
size_t rotationCopies(size_t inputBytes);
/// --bench: `warmup` untimed runs, then `iters` timed ones; run i uses input
/// copy i % copies. poison() precedes every run, outside its timed span.
/// Prints the bench line with `flops` per run.
void bench(Backend &backend, BenchCounts counts, size_t copies, double flops,
           const char *note, const std::function<void()> &poison,
           const std::function<Status(size_t)> &launch);

} // namespace fmha::runtool

#endif // FMHA_TOOLS_FMHA_RUN_RUNSUPPORT_H

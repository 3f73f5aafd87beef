//===- HostBackend.cpp - Runs elf-so kernels on the host CPU --------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The binary of a cpu bundle is an ELF shared object. It is written to a
// private temporary file (mkstemp), dlopen'ed with RTLD_NOW | RTLD_LOCAL and
// unlinked at once; `_mlir_ciface_<kernel>` is called with memref
// descriptors over the caller's contiguous BHSD buffers: the forward, the
// backward, the merge or the accumulate signature of Runtime.h, as the
// bundle's kind says.
//
//===----------------------------------------------------------------------===//

#include "Backends.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

namespace fmha::rt::detail {

namespace {

template <int Rank> struct MemRef {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};
using MemRef4 = MemRef<4>;
using MemRef3 = MemRef<3>;
using MemRef1 = MemRef<1>;

using ForwardFn = void (*)(MemRef4 *, MemRef4 *, MemRef4 *, MemRef4 *,
                           MemRef3 *);
/// q, k, v, o, lse, dO, dq, dk, dv.
/// o1, lse1, o2, lse2, o, lse.
using MergeFn = void (*)(MemRef4 *, MemRef3 *, MemRef4 *, MemRef3 *, MemRef4 *,
                         MemRef3 *);
/// x, acc.
using AccumulateFn = void (*)(MemRef1 *, MemRef1 *);
using BackwardFn = void (*)(MemRef4 *, MemRef4 *, MemRef4 *, MemRef4 *,
                            MemRef3 *, MemRef4 *, MemRef4 *, MemRef4 *,
                            MemRef4 *);

template <int Rank>
MemRef<Rank> contiguous(const void *ptr, const int64_t (&sizes)[Rank]) {
  MemRef<Rank> m;
  m.allocated = const_cast<void *>(ptr);
  m.aligned = const_cast<void *>(ptr);
  m.offset = 0;
  int64_t stride = 1;
  for (int i = Rank - 1; i >= 0; --i) {
    m.sizes[i] = sizes[i];
    m.strides[i] = stride;
    stride *= sizes[i];
  }
  return m;
}

std::string dlMessage() {
  const char *msg = dlerror();
  return msg ? msg : "unknown dlopen error";
}

class HostKernel final : public LoadedKernel {
public:
  HostKernel(void *handle, KernelKind kind, void *symbol)
      : handle_(handle), kind_(kind), symbol_(symbol) {}
  ~HostKernel() override { dlclose(handle_); }

  Status launchForward(const Problem &p, const ForwardArgs &args,
                       void *) override {
    if (kind_ != KernelKind::Forward)
      return Status::error(ErrorCode::InvalidArgument,
                           "internal error: forward launch of a backward "
                           "host kernel");
    MemRef4 q = contiguous<4>(args.q, {p.b, p.hq, p.sq, p.d});
    MemRef4 k = contiguous<4>(args.k, {p.b, p.hk, p.sk, p.d});
    MemRef4 v = contiguous<4>(args.v, {p.b, p.hk, p.sk, p.dv});
    MemRef4 o = contiguous<4>(args.o, {p.b, p.hq, p.sq, p.dv});
    MemRef3 lse = contiguous<3>(args.lse, {p.b, p.hq, p.sq});
    as<ForwardFn>()(&q, &k, &v, &o, &lse);
    return Status::success();
  }

  Status launchBackward(const Problem &p, const BackwardArgs &args,
                        void *) override {
    if (kind_ != KernelKind::Backward)
      return Status::error(ErrorCode::InvalidArgument,
                           "internal error: backward launch of a forward "
                           "host kernel");
    MemRef4 q = contiguous<4>(args.q, {p.b, p.hq, p.sq, p.d});
    MemRef4 k = contiguous<4>(args.k, {p.b, p.hk, p.sk, p.d});
    MemRef4 v = contiguous<4>(args.v, {p.b, p.hk, p.sk, p.dv});
    MemRef4 o = contiguous<4>(args.o, {p.b, p.hq, p.sq, p.dv});
    MemRef3 lse = contiguous<3>(args.lse, {p.b, p.hq, p.sq});
    MemRef4 dO = contiguous<4>(args.dO, {p.b, p.hq, p.sq, p.dv});
    MemRef4 dq = contiguous<4>(args.dq, {p.b, p.hq, p.sq, p.d});
    MemRef4 dk = contiguous<4>(args.dk, {p.b, p.hk, p.sk, p.d});
    MemRef4 dv = contiguous<4>(args.dv, {p.b, p.hk, p.sk, p.dv});
    as<BackwardFn>()(&q, &k, &v, &o, &lse, &dO, &dq, &dk, &dv);
    return Status::success();
  }

  Status launchMerge(const MergeProblem &p, const MergeArgs &args,
                     void *) override {
    if (kind_ != KernelKind::Merge)
      return Status::error(ErrorCode::InvalidArgument,
                           "internal error: merge launch of a non-merge host "
                           "kernel");
    MemRef4 o1 = contiguous<4>(args.o1, {p.b, p.h, p.s, p.dv});
    MemRef3 lse1 = contiguous<3>(args.lse1, {p.b, p.h, p.s});
    MemRef4 o2 = contiguous<4>(args.o2, {p.b, p.h, p.s, p.dv});
    MemRef3 lse2 = contiguous<3>(args.lse2, {p.b, p.h, p.s});
    MemRef4 o = contiguous<4>(args.o, {p.b, p.h, p.s, p.dv});
    MemRef3 lse = contiguous<3>(args.lse, {p.b, p.h, p.s});
    as<MergeFn>()(&o1, &lse1, &o2, &lse2, &o, &lse);
    return Status::success();
  }

  Status launchAccumulate(int64_t n, const AccumulateArgs &args,
                          void *) override {
    if (kind_ != KernelKind::Accumulate)
      return Status::error(ErrorCode::InvalidArgument,
                           "internal error: accumulate launch of a "
                           "non-accumulate host kernel");
    MemRef1 x = contiguous<1>(args.x, {n});
    MemRef1 acc = contiguous<1>(args.acc, {n});
    as<AccumulateFn>()(&x, &acc);
    return Status::success();
  }

private:
  template <typename Fn> Fn as() const {
    Fn fn;
    static_assert(sizeof(fn) == sizeof(symbol_), "function pointer size");
    std::memcpy(&fn, &symbol_, sizeof(fn));
    return fn;
  }

  void *handle_;
  KernelKind kind_;
  void *symbol_;
};

class HostBackend final : public Backend {
public:
  Target target() const override { return Target::Cpu; }
  std::string description() const override { return "host"; }

  Expected<std::unique_ptr<LoadedKernel>>
  load(const BundleMeta &meta, std::string_view binary,
       const std::string &name) override {
    auto fail = [&](ErrorCode code, const std::string &problem) {
      return Status::error(code, "bundle '" + name + "': " + problem);
    };
    if (meta.target != Target::Cpu ||
        meta.binaryFormat != BinaryFormat::ElfSo ||
        meta.abi != kAbiMemrefCifaceV1)
      return fail(ErrorCode::BadBundle,
                  "the host backend runs target cpu, binary_format elf-so, "
                  "abi memref-ciface-v1 only");
    if (binary.size() < 4 || binary.substr(0, 4) != "\x7f"
                                                    "ELF")
      return fail(ErrorCode::LoadFailed,
                  "the binary is not an ELF shared object (bad ELF magic)");

    const char *tmpdir = std::getenv("TMPDIR");
    std::string path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") +
                       "/fmha-kernel-XXXXXX";
    int fd = mkstemp(path.data());
    if (fd < 0)
      return fail(ErrorCode::LoadFailed,
                  "cannot create a temporary file for the kernel in '" +
                      path.substr(0, path.rfind('/')) +
                      "': " + std::strerror(errno));
    size_t done = 0;
    while (done < binary.size()) {
      ssize_t n = ::write(fd, binary.data() + done, binary.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        std::string reason = n < 0 ? std::strerror(errno) : "short write";
        ::close(fd);
        ::unlink(path.c_str());
        return fail(ErrorCode::LoadFailed,
                    "cannot write the kernel to '" + path + "': " + reason);
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string openError = handle ? "" : dlMessage();
    ::unlink(path.c_str());
    if (!handle)
      return fail(ErrorCode::LoadFailed, "dlopen failed: " + openError);

    std::string symbol = "_mlir_ciface_" + meta.kernel;
    dlerror();
    void *sym = dlsym(handle, symbol.c_str());
    if (!sym) {
      std::string why = dlMessage();
      dlclose(handle);
      return fail(ErrorCode::LoadFailed,
                  "symbol '" + symbol + "' not found in the binary: " + why);
    }
    return std::unique_ptr<LoadedKernel>(
        new HostKernel(handle, meta.kind, sym));
  }

  Expected<void *> allocate(size_t bytes) override {
    // 64-byte alignment suits every vector width; aligned_alloc wants a
    // multiple of the alignment.
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded < bytes)
      return Status::error(ErrorCode::OutOfMemory, "allocation of " +
                                                       std::to_string(bytes) +
                                                       " bytes is too large");
    void *p = std::aligned_alloc(64, rounded ? rounded : 64);
    if (!p)
      return Status::error(ErrorCode::OutOfMemory,
                           "out of host memory allocating " +
                               std::to_string(bytes) + " bytes");
    return p;
  }

  void deallocate(void *ptr) override { std::free(ptr); }

  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return Status::success();
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return Status::success();
  }

  Status fill(void *dst, unsigned char value, size_t bytes, void *) override {
    if (bytes)
      std::memset(dst, value, bytes);
    return Status::success();
  }

  Status synchronize(void *) override { return Status::success(); }
};

} // namespace

Expected<std::unique_ptr<Backend>> createHostBackend() {
  return std::unique_ptr<Backend>(new HostBackend());
}

} // namespace fmha::rt::detail

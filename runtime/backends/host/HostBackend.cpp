//===- HostBackend.cpp - Runs elf-so kernels on the host CPU --------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The binary of a cpu bundle is an ELF shared object. It is written to a
// private temporary file (mkstemp), dlopen'ed with RTLD_NOW | RTLD_LOCAL and
// unlinked at once; `_mlir_ciface_<symbol>` of the manifest's one kernel
// is called with pointers to the memref descriptors the plan holds, one a
// parameter, in order. Its parallel loops run on the thread pool of
// HostThreads.cpp, which the loader sets the kernel's `fmha_parallel_for`
// hook to.
//
//===----------------------------------------------------------------------===//

#include "Backends.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace fmha::rt::detail {

namespace {

/// Calls `symbol` as `void(void *, ..., void *)` with N arguments.
using Caller = void (*)(void *symbol, void *const *args);

/// The kernel is compiled without -fsanitize=function (no type signature
/// before its entry): UBSan must not check this indirect call.
template <size_t... I>
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
void callWith(void *symbol, void *const *args, std::index_sequence<I...>) {
  using Fn = void (*)(decltype((void)I, static_cast<void *>(nullptr))...);
  Fn fn;
  static_assert(sizeof(fn) == sizeof(symbol), "function pointer size");
  std::memcpy(&fn, &symbol, sizeof(fn));
  fn(args[I]...);
}

template <size_t N> void call(void *symbol, void *const *args) {
  callWith(symbol, args, std::make_index_sequence<N>{});
}

/// callers[n] calls with n descriptors (Manifest.h: at most 16).
template <size_t... N>
constexpr std::array<Caller, sizeof...(N)>
makeCallers(std::index_sequence<N...>) {
  return {&call<N>...};
}
constexpr auto callers = makeCallers(std::make_index_sequence<17>{});

std::string dlMessage() {
  const char *msg = dlerror();
  return msg ? msg : "unknown dlopen error";
}

/// A shared object whose one manifest kernel is `_mlir_ciface_<symbol>`,
/// called with a pointer to each memref descriptor of the plan.
class HostKernel final : public LoadedKernel {
public:
  HostKernel(void *handle, void *symbol) : handle_(handle), symbol_(symbol) {}
  ~HostKernel() override { dlclose(handle_); }

  Status launch(const LaunchPlan &plan, void *) override {
    for (const LaunchPlan::Range &r : plan.zero)
      std::memset(r.ptr, 0, r.bytes);
    for (const PlannedLaunch &launch : plan.launches) {
      std::vector<void *> args;
      for (const std::vector<int64_t> &words : launch.memrefs)
        args.push_back(const_cast<int64_t *>(words.data()));
      if (args.size() >= callers.size())
        return Status::error(ErrorCode::InvalidArgument,
                             "internal error: a ciface call of " +
                                 std::to_string(args.size()) + " parameters");
      callers[args.size()](symbol_, args.data());
    }
    return Status::success();
  }

private:
  void *handle_;
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
        meta.manifest.call != Manifest::Call::CIface ||
        meta.manifest.kernels.size() != 1)
      return fail(ErrorCode::BadBundle,
                  "the host backend runs target cpu, binary_format elf-so, "
                  "one ciface kernel only");
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

    // A kernel with parallel loops exports the hook its loops call through
    // (fmha-cpu-parallel-for); one without runs on the calling thread.
    dlerror();
    if (void *hook = dlsym(handle, "fmha_parallel_for")) {
      void (*parallelFor)(int64_t, void (*)(void *, int64_t, int64_t), void *) =
          &hostParallelFor;
      std::memcpy(hook, &parallelFor, sizeof(parallelFor));
    }
    std::string symbol = "_mlir_ciface_" + meta.manifest.kernels[0].symbol;
    dlerror();
    void *sym = dlsym(handle, symbol.c_str());
    if (!sym) {
      std::string why = dlMessage();
      dlclose(handle);
      return fail(ErrorCode::LoadFailed,
                  "symbol '" + symbol + "' not found in the binary: " + why);
    }
    return std::unique_ptr<LoadedKernel>(new HostKernel(handle, sym));
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

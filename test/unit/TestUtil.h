//===- TestUtil.h - Helpers shared by the unit tests ------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TEST_UNIT_TESTUTIL_H
#define FMHA_TEST_UNIT_TESTUTIL_H

#include "fmha/Runtime/Bundle.h"
#include "fmha/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <utility>
#include <vector>

namespace fmha::test {

/// A fresh directory under $TMPDIR (or /tmp), removed on destruction.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/fmha-unit-XXXXXX";
    if (char *p = mkdtemp(tmpl.data()))
      path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ec);
  }
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The shared object with the naive test kernels (TestKernel.cpp) and the
/// backward plumbing fakes (PlumbingBwdKernel.cpp).
inline std::string testKernelBinary() {
  return readBytes(FMHA_TEST_KERNEL_PATH);
}

/// Metadata of a cpu bundle for one of the test kernels.
inline rt::BundleMeta testMeta(const std::string &kernel, rt::DType dtype,
                               int64_t hq, int64_t hk, int64_t d, int64_t dv,
                               const char *mask = "0", float scale = 0,
                               float softcap = 0) {
  rt::BundleMeta m;
  m.target = rt::Target::Cpu;
  m.kind = rt::KernelKind::Forward;
  m.dtype = dtype;
  m.hq = hq;
  m.hk = hk;
  m.d = d;
  m.dv = dv;
  m.mask = *MaskSpec::parse(mask);
  m.scale = scale;
  m.softcap = softcap;
  m.blockM = 64;
  m.blockN = 32;
  m.kernel = kernel;
  return m;
}

/// Metadata of a cpu kind=bwd bundle for one of the backward plumbing fakes
/// (PlumbingBwdKernel.cpp), which write constants, not gradients.
inline rt::BundleMeta plumbingBwdMeta(const std::string &kernel,
                                      rt::DType dtype, int64_t hq, int64_t hk,
                                      int64_t d, int64_t dv,
                                      const char *mask = "0") {
  rt::BundleMeta m = testMeta(kernel, dtype, hq, hk, d, dv, mask);
  m.kind = rt::KernelKind::Backward;
  return m;
}

/// Metadata of a GPU bundle (abi gpu-flat-v1) for the fake libraries
/// (FakeCuda.cpp, FakeHip.cpp): cuda "ptx" for sm_90a with 128 threads a
/// block, hip "hsaco" for gfx942 with 256 (four wavefronts of 64).
inline rt::BundleMeta fakeGpuMeta(rt::Target target, rt::DType dtype,
                                  int64_t hq, int64_t hk, int64_t d, int64_t dv,
                                  const char *mask = "0", float scale = 0,
                                  float softcap = 0) {
  rt::BundleMeta m =
      testMeta("fmha_fwd", dtype, hq, hk, d, dv, mask, scale, softcap);
  bool hip = target == rt::Target::Hip;
  m.target = target;
  m.chip = hip ? "gfx942" : "sm_90a";
  m.blockM = 16;
  m.blockN = 16;
  m.blockThreads = hip ? 256 : 128;
  m.sharedBytes = 0;
  m.abi = rt::kAbiGpuFlatV1;
  m.binaryFormat = hip ? rt::BinaryFormat::Hsaco : rt::BinaryFormat::Ptx;
  return m;
}

/// A gpu-bwd-v1 bundle of `target` (block_n 32, block_m 16: the dkdv grid
/// differs from the others).
inline rt::BundleMeta fakeGpuBwdMeta(rt::Target target, rt::DType dtype,
                                     int64_t hq, int64_t hk, int64_t d,
                                     int64_t dv, const char *mask = "0",
                                     bool deterministic = false) {
  rt::BundleMeta m = fakeGpuMeta(target, dtype, hq, hk, d, dv, mask);
  m.kind = rt::KernelKind::Backward;
  m.kernel = "fmha_bwd";
  m.abi = rt::kAbiGpuBwdV1;
  m.blockN = 32;
  m.deterministic = deterministic;
  return m;
}

/// A gpu-merge-v1 bundle of `target` over [B, h, S, dv] partials.
inline rt::BundleMeta fakeGpuMergeMeta(rt::Target target, rt::DType dtype,
                                       int64_t h, int64_t dv) {
  rt::BundleMeta m = fakeGpuMeta(target, dtype, h, h, dv, dv);
  m.kind = rt::KernelKind::Merge;
  m.kernel = "fmha_merge";
  m.abi = rt::kAbiGpuMergeV1;
  return m;
}

/// A gpu-acc-v1 bundle of `target` adding x of `dtype` into f32.
inline rt::BundleMeta fakeGpuAccMeta(rt::Target target, rt::DType dtype) {
  rt::BundleMeta m = fakeGpuMeta(target, dtype, 1, 1, 1, 1);
  m.kind = rt::KernelKind::Accumulate;
  m.kernel = "fmha_acc";
  m.abi = rt::kAbiGpuAccV1;
  return m;
}

inline rt::BundleMeta fakeCudaMeta(rt::DType dtype, int64_t hq, int64_t hk,
                                   int64_t d, int64_t dv,
                                   const char *mask = "0", float scale = 0,
                                   float softcap = 0) {
  return fakeGpuMeta(rt::Target::Cuda, dtype, hq, hk, d, dv, mask, scale,
                     softcap);
}

/// The fake library's module text for `meta` (FAKE-CUDA-MODULE or
/// FAKE-HIP-MODULE by its target); `extra` adds lines ("flaw=perturb\n",
/// "max_threads=64\n", ...).
inline std::string fakeModule(const rt::BundleMeta &meta,
                              const std::string &extra = "") {
  std::ostringstream s;
  s.precision(9);
  s << (meta.target == rt::Target::Hip ? "FAKE-HIP-MODULE\n"
                                       : "FAKE-CUDA-MODULE\n")
    << "kernel=" << meta.kernel << "\n"
    << "dtype=" << rt::toString(meta.dtype) << "\n"
    << "hq=" << meta.hq << "\nhk=" << meta.hk << "\nd=" << meta.d
    << "\ndv=" << meta.dv << "\n"
    << "mask=" << meta.mask.str() << "\n"
    << "scale=" << meta.effectiveScale() << "\n"
    << "softcap=" << meta.softcap << "\n"
    << "block_m=" << meta.blockM << "\n"
    << "block_n=" << meta.blockN << "\n"
    << "kind=" << rt::toString(meta.kind) << "\n"
    << (meta.kind == rt::KernelKind::Backward
            ? std::string("deterministic=") +
                  (meta.deterministic ? "1\n" : "0\n")
            : std::string())
    << "block_threads=" << meta.blockThreads << "\n"
    << "shared_bytes=" << meta.sharedBytes << "\n"
    << extra;
  return s.str();
}

/// Sets environment variables for one test and restores them after.
class ScopedEnv {
public:
  void set(const char *name, const char *value) {
    const char *old = std::getenv(name);
    saved_.push_back({name, old ? std::optional<std::string>(old)
                                : std::optional<std::string>()});
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

inline bool startsWith(const std::string &s, const std::string &prefix) {
  return s.rfind(prefix, 0) == 0;
}

/// The error of getBackend(target), which must fail with BackendUnavailable
/// and a one-line message.
inline rt::Status backendError(rt::Target target) {
  rt::Expected<rt::Backend *> b = rt::getBackend(target);
  EXPECT_FALSE(b.ok());
  if (b.ok())
    return rt::Status();
  EXPECT_EQ(b.status().code(), rt::ErrorCode::BackendUnavailable);
  EXPECT_EQ(b.message().find('\n'), std::string::npos);
  return b.status();
}

/// Environment variables to set (a null value unsets one) and the error
/// getBackend() must then give.
struct BackendErrorCase {
  std::vector<std::pair<const char *, const char *>> env;
  std::string message;
};

/// Checks the cases in order, each with its variables and those of the
/// cases before it set; the environment is restored afterwards.
inline void expectBackendErrors(rt::Target target,
                                const std::vector<BackendErrorCase> &cases) {
  ScopedEnv env;
  for (const BackendErrorCase &c : cases) {
    for (const auto &[name, value] : c.env)
      env.set(name, value);
    EXPECT_EQ(backendError(target).message(), c.message);
  }
}

/// Normal(0, 1) values from a fixed seed.
inline std::vector<double> randomNormal(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

struct CommandResult {
  int exitCode = -1;
  std::string output; ///< stdout and stderr together
};

/// Runs a shell command line, capturing stdout and stderr.
inline CommandResult runCommand(const std::string &cmd) {
  CommandResult r;
  std::FILE *pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe)
    return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0)
    r.output.append(buf, n);
  int status = pclose(pipe);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

} // namespace fmha::test

#endif // FMHA_TEST_UNIT_TESTUTIL_H

//===- TestUtil.h - Helpers shared by the unit tests ------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TEST_UNIT_TESTUTIL_H
#define FMHA_TEST_UNIT_TESTUTIL_H

#include "fmha/Runtime/Bundle.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <sys/wait.h>
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

/// The shared object with the naive test kernels (TestKernel.cpp).
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

/// Metadata of a cuda bundle (abi gpu-flat-v1, "ptx") for the fake CUDA
/// driver (FakeCuda.cpp).
inline rt::BundleMeta fakeCudaMeta(rt::DType dtype, int64_t hq, int64_t hk,
                                   int64_t d, int64_t dv,
                                   const char *mask = "0", float scale = 0,
                                   float softcap = 0) {
  rt::BundleMeta m =
      testMeta("fmha_fwd", dtype, hq, hk, d, dv, mask, scale, softcap);
  m.target = rt::Target::Cuda;
  m.chip = "sm_90a";
  m.blockM = 16;
  m.blockN = 16;
  m.blockThreads = 128;
  m.sharedBytes = 0;
  m.abi = rt::kAbiGpuFlatV1;
  m.binaryFormat = rt::BinaryFormat::Ptx;
  return m;
}

/// The fake driver's module text for `meta`; `extra` adds lines
/// ("flaw=perturb\n", "max_threads=64\n", ...).
inline std::string fakeCudaModule(const rt::BundleMeta &meta,
                                  const std::string &extra = "") {
  std::ostringstream s;
  s.precision(9);
  s << "FAKE-CUDA-MODULE\n"
    << "kernel=" << meta.kernel << "\n"
    << "dtype=" << rt::toString(meta.dtype) << "\n"
    << "hq=" << meta.hq << "\nhk=" << meta.hk << "\nd=" << meta.d
    << "\ndv=" << meta.dv << "\n"
    << "mask=" << meta.mask.str() << "\n"
    << "scale=" << meta.effectiveScale() << "\n"
    << "softcap=" << meta.softcap << "\n"
    << "block_m=" << meta.blockM << "\n"
    << "block_threads=" << meta.blockThreads << "\n"
    << "shared_bytes=" << meta.sharedBytes << "\n"
    << extra;
  return s.str();
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

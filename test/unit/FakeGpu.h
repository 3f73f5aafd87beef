//===- FakeGpu.h - The device of the fake GPU libraries ---------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What the fake CUDA driver (FakeCuda.cpp) and the fake HIP runtime
// (FakeHip.cpp) share: a "device" whose memory is host memory, modules that
// are text, launches that check the ABI of the module's kind and compute
// its result, events, failure injection and a log. Each vendor file exports
// its library's functions over these and defines kVendor. Nothing here runs
// on a GPU and nothing here is a kernel of the project.
//
// Environment (PREFIX is FMHA_FAKE_CUDA or FMHA_FAKE_HIP):
//   PREFIX=device        the library sees devices; anything else (or unset):
//                        none, as on a machine with the library but no GPU
//   PREFIX_DEVICES=N     how many devices (1)
//   PREFIX_FAIL=fn=N     the function fn returns the error code N
//   PREFIX_SHARED=N      shared memory per block: CUDA's opt-in limit
//                        (232448), HIP's LDS limit (65536)
//   PREFIX_MEMORY=N      bytes that can be allocated in all (no limit)
//   PREFIX_LOG=FILE      appends one line per launch, per opt-in of shared
//                        memory and per module unloaded
//
// A module image is text, every line key=value after the first:
//
//   FAKE-CUDA-MODULE  (or FAKE-HIP-MODULE)
//   kernel=NAME dtype=f16|bf16|f32 hq= hk= d= dv= mask=SPEC scale=X
//   softcap=X block_m= block_threads= shared_bytes=   (required)
//   static_shared=N max_threads=N flaw=perturb         (optional)
//   kind=fwd|bwd|merge|acc|probe block_n=N deterministic=0|1 omit=STAGE
//   params=N                                           (kind=probe)
//
// kind=probe knows no ABI (for manifests of parameters no runtime code
// names): a launch logs "probe kernel=NAME grid=... params=V0,V1,..." with
// its N 8-byte parameters and stores the sum of parameters 1..N-1 (int64)
// at the device address parameter 0 holds.
//
// A launch checks what the bundle's ABI and its grid rule (Bundle.h,
// Runtime.h) say: for kind=fwd (gpu-flat-v1) 28 parameters, allocated ==
// aligned pointing into live allocations of the current device large
// enough, offset 0, stride 1, sizes matching B, Sq, Sk, grid
// (ceil(Sq/block_m), Hq, B); kind=bwd (gpu-bwd-v1) the three stages in
// order; kind=merge (gpu-merge-v1; hq is H, dv is Dv) 31 parameters over
// rows = B*H*S and grid (ceil(rows / (block_threads / 32)), 1, 1);
// kind=acc (gpu-acc-v1) 11 parameters over n and grid (ceil(n / (4 *
// block_threads)), 1, 1). Every kind: block (block_threads, 1, 1), the
// dynamic shared memory within the function's limit, the module loaded on
// the current device. A failed check prints "fake cuda: ..." (or "fake
// hip: ...") to stderr and returns kInvalidValue. Forward and backward are
// computed with the float64 reference; merge and accumulate in f32 as the
// kernels do (DESIGN.md section 1; acc += x).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TEST_UNIT_FAKEGPU_H
#define FMHA_TEST_UNIT_FAKEGPU_H

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace fmha::fake {

/// Result codes; HIP's mirror the CUDA driver's, so these are both.
enum Code : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidContext = 201,
  kInvalidHandle = 400,
  kNotFound = 500,
};

/// What differs between the fake libraries.
struct Vendor {
  const char *envPrefix; ///< "FMHA_FAKE_CUDA"
  const char *tag;       ///< "fake cuda", on stderr
  const char *magic;     ///< "FAKE-CUDA-MODULE"
  int invalidImage;      ///< the code of a module that does not parse
  int64_t sharedLimit;   ///< PREFIX_SHARED's default
  /// Dynamic shared memory a function takes without an opt-in (CUDA: 48
  /// KiB less its static shared memory; HIP: all of the limit).
  bool sharedNeedsOptIn;
  /// The device calls run on, or -1 when none can (CUDA: no context).
  int (*currentDevice)();
};

/// Defined by the vendor file.
extern const Vendor kVendor;

/// $PREFIX + suffix, or "".
std::string env(const char *suffix);
int64_t envInt(const char *suffix, int64_t fallback);
/// PREFIX == "device".
bool hasDevices();
int deviceCount();
int64_t sharedLimit();

/// The state lock; every entry point but the error names takes it.
std::unique_lock<std::mutex> lockState();
bool initialized();
void setInitialized();
/// The code PREFIX_FAIL gives `fn`, or kSuccess.
int injected(const char *fn);

/// Every entry point of an initialized library starts with this.
#define FAKE_ENTER(fn)                                                         \
  auto fakeLock = ::fmha::fake::lockState();                                   \
  if (!::fmha::fake::initialized())                                            \
    return ::fmha::fake::kNotInitialized;                                      \
  if (int injectedCode = ::fmha::fake::injected(fn))                           \
  return injectedCode

void logLine(const std::string &line);

struct Module;

/// Parses a module image (NUL-terminated text) loaded on the current
/// device; on failure *why says what is wrong.
int loadModule(const char *image, Module **module, std::string *why);
void unloadModule(Module *module);
/// The module's function (one a module) named `name`.
int getFunction(Module *module, const char *name, Module **function);

/// A function attribute by CUDA's numbering, which HIP's mirrors: 0 max
/// threads per block, 1 static shared bytes, 4 registers, 8 max dynamic
/// shared bytes.
int functionAttribute(Module *function, int attribute, int *value);
int setMaxDynamicShared(Module *function, int bytes);

int launch(Module *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
           unsigned by, unsigned bz, unsigned shared, void **params,
           void **extra);

int allocate(size_t bytes, void **ptr);
int release(void *ptr);
/// A copy into (`toDevice`) or out of a live allocation.
int copy(void *dst, const void *src, size_t bytes, bool toDevice);
int fill(void *dst, int value, size_t bytes);
/// `count` 32-bit words of `value` into a live allocation.
int fill32(void *dst, unsigned value, size_t count);

int createEvent(void **event);
int recordEvent(void *event);
int elapsedMs(void *start, void *stop, float *ms);
int destroyEvent(void *event);

} // namespace fmha::fake

#endif // FMHA_TEST_UNIT_FAKEGPU_H

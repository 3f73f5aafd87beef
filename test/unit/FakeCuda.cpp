//===- FakeCuda.cpp - A fake CUDA driver library for the runtime's tests --===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A shared object exporting the CUDA driver functions the CUDA backend looks
// up (runtime/backends/cuda/CudaBackend.cpp), so that the backend is tested
// on a machine without a GPU: the tests point FMHA_CUDA_LIBRARY at it.
// Nothing here runs on a GPU and nothing here is a kernel of the project:
// "device memory" is host memory and a "launch" checks its arguments and
// fills o and lse from the float64 reference.
//
// Environment:
//   FMHA_FAKE_CUDA=device     one device ("FMHA fake GPU", sm_90); anything
//                             else (or unset): cuInit returns
//                             CUDA_ERROR_NO_DEVICE, as on a machine with a
//                             driver but no GPU
//   FMHA_FAKE_CUDA_FAIL=cuX=N cuX returns the CUresult N (once cuInit has
//                             succeeded, or cuInit itself)
//   FMHA_FAKE_CUDA_SHARED_OPTIN=N   opt-in shared memory per block (232448)
//   FMHA_FAKE_CUDA_MEMORY=N   bytes that can be allocated in all (no limit)
//   FMHA_FAKE_CUDA_LOG=FILE   appends one line per launch and per
//                             cuFuncSetAttribute
//
// A module image is text (a "fake PTX"), every line key=value after the
// first:
//
//   FAKE-CUDA-MODULE
//   kernel=NAME dtype=f16|bf16|f32 hq= hk= d= dv= mask=SPEC scale=X
//   softcap=X block_m= block_threads= shared_bytes=   (required)
//   static_shared=N max_threads=N flaw=perturb         (optional)
//
// cuLaunchKernel checks what the gpu-flat-v1 ABI and the grid rule (Bundle.h,
// Runtime.h) say: 28 parameters, allocated == aligned pointing into live
// allocations large enough, offset 0, stride 1, sizes matching B, Sq, Sk,
// grid (ceil(Sq/block_m), Hq, B), block (block_threads, 1, 1), the dynamic
// shared memory, the opt-in attribute above 48 KiB, the current context.
// A failed check prints "fake cuda: ..." to stderr and returns
// CUDA_ERROR_INVALID_VALUE.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Reference.h"
#include "fmha/Support/MaskSpec.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kNoDevice = 100;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kInvalidPtx = 218;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kNotFound = 500;

struct ErrorName {
  CUresult code;
  const char *name, *text;
} kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
};

struct Module {
  std::map<std::string, std::string> keys;
  std::string kernel;
  fmha::rt::ReferenceConfig cfg;
  std::string dtype;
  int64_t blockM = 0, blockThreads = 0, sharedBytes = 0, staticShared = 0,
          maxThreads = 1024, maxDynamicShared = 48 * 1024;
  bool perturb = false;
};

struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};

int gContextTag; // the primary context is &gContextTag
void *const kContext = &gContextTag;

std::mutex gMutex;
bool gInitialized = false;
std::map<CUdeviceptr, size_t> gAllocations;
size_t gAllocated = 0;
thread_local std::vector<void *> tContextStack;

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

int64_t envInt(const char *name, int64_t fallback) {
  std::string v = env(name);
  return v.empty() ? fallback : std::strtoll(v.c_str(), nullptr, 10);
}

/// The injected result for `fn`, or kSuccess.
CUresult injected(const char *fn) {
  std::string spec = env("FMHA_FAKE_CUDA_FAIL");
  size_t eq = spec.find('=');
  if (eq == std::string::npos || spec.substr(0, eq) != fn)
    return kSuccess;
  return static_cast<CUresult>(std::strtol(spec.c_str() + eq + 1, nullptr, 10));
}

/// Every function but cuInit and the error names starts with this.
#define FAKE_ENTER(fn)                                                         \
  std::lock_guard<std::mutex> lock(gMutex);                                    \
  if (!gInitialized)                                                           \
    return kNotInitialized;                                                    \
  if (CUresult r = injected(fn))                                               \
  return r

void logLine(const std::string &line) {
  std::string path = env("FMHA_FAKE_CUDA_LOG");
  if (path.empty())
    return;
  if (std::FILE *f = std::fopen(path.c_str(), "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

CUresult reject(const std::string &why) {
  std::fprintf(stderr, "fake cuda: %s\n", why.c_str());
  return kInvalidValue;
}

bool contextCurrent() {
  return !tContextStack.empty() && tContextStack.back() == kContext;
}

/// Whether [p, p+bytes) lies in one live allocation.
bool inAllocation(CUdeviceptr p, size_t bytes) {
  auto it = gAllocations.upper_bound(p);
  if (it == gAllocations.begin())
    return false;
  --it;
  return p >= it->first && p - it->first + bytes <= it->second;
}

double loadElem(const void *base, int64_t i, const std::string &dtype) {
  if (dtype == "f32") {
    float f;
    std::memcpy(&f, static_cast<const char *>(base) + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const char *>(base) + 2 * i, 2);
  return dtype == "f16" ? fmha::rt::halfBitsToFloat(h)
                        : fmha::rt::bfloat16BitsToFloat(h);
}

void storeElem(void *base, int64_t i, const std::string &dtype, double x) {
  float f = static_cast<float>(x);
  if (dtype == "f32") {
    std::memcpy(static_cast<char *>(base) + 4 * i, &f, 4);
    return;
  }
  uint16_t h = dtype == "f16" ? fmha::rt::floatToHalfBits(f)
                              : fmha::rt::floatToBFloat16Bits(f);
  std::memcpy(static_cast<char *>(base) + 2 * i, &h, 2);
}

bool parseModule(const char *image, Module *m, std::string *why) {
  static const char kMagic[] = "FAKE-CUDA-MODULE\n";
  if (std::strncmp(image, kMagic, sizeof(kMagic) - 1) != 0) {
    *why = "line 1: expected FAKE-CUDA-MODULE (this fake runs fake modules "
           "only)";
    return false;
  }
  std::string text(image + sizeof(kMagic) - 1);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(
        pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty())
      continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      *why = "malformed line '" + line + "'";
      return false;
    }
    m->keys[line.substr(0, eq)] = line.substr(eq + 1);
  }
  for (const char *k :
       {"kernel", "dtype", "hq", "hk", "d", "dv", "mask", "scale", "softcap",
        "block_m", "block_threads", "shared_bytes"})
    if (!m->keys.count(k)) {
      *why = std::string("missing key '") + k + "'";
      return false;
    }
  auto num = [&](const char *k) {
    return std::strtoll(m->keys[k].c_str(), nullptr, 10);
  };
  m->kernel = m->keys["kernel"];
  m->dtype = m->keys["dtype"];
  m->cfg.hq = num("hq");
  m->cfg.hk = num("hk");
  m->cfg.d = num("d");
  m->cfg.dv = num("dv");
  std::string err;
  std::optional<fmha::MaskSpec> mask =
      fmha::MaskSpec::parse(m->keys["mask"], &err);
  if (!mask) {
    *why = err;
    return false;
  }
  m->cfg.mask = *mask;
  m->cfg.scale = std::strtod(m->keys["scale"].c_str(), nullptr);
  m->cfg.softcap = std::strtod(m->keys["softcap"].c_str(), nullptr);
  m->blockM = num("block_m");
  m->blockThreads = num("block_threads");
  m->sharedBytes = num("shared_bytes");
  if (m->keys.count("static_shared"))
    m->staticShared = num("static_shared");
  if (m->keys.count("max_threads"))
    m->maxThreads = num("max_threads");
  m->maxDynamicShared = 48 * 1024 - m->staticShared;
  m->perturb = m->keys["flaw"] == "perturb";
  return true;
}

CUresult launch(Module &m, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                unsigned by, unsigned bz, unsigned shared, void **params,
                void **extra) {
  if (!contextCurrent())
    return kInvalidContext;
  if (extra)
    return reject("extra must be null");
  if (!params)
    return reject("kernelParams is null");
  int64_t v[28];
  for (int i = 0; i < 28; ++i)
    std::memcpy(&v[i], params[i], 8);
  int64_t b = v[25], sq = v[26], sk = v[27];
  fmha::rt::ReferenceConfig cfg = m.cfg;
  cfg.b = b;
  cfg.sq = sq;
  cfg.sk = sk;
  if (b <= 0 || sq <= 0 || sk <= 0)
    return reject("B, Sq, Sk must be positive");
  int64_t gridX = (sq + m.blockM - 1) / m.blockM;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "launch kernel=%s grid=%u,%u,%u block=%u,%u,%u shared=%u "
                "B=%lld Sq=%lld Sk=%lld",
                m.kernel.c_str(), gx, gy, gz, bx, by, bz, shared,
                static_cast<long long>(b), static_cast<long long>(sq),
                static_cast<long long>(sk));
  logLine(buf);
  if (gx != gridX || gy != cfg.hq || gz != b)
    return reject(std::string("wrong grid: ") + buf);
  if (bx != m.blockThreads || by != 1 || bz != 1)
    return reject(std::string("wrong block: ") + buf);
  if (shared != m.sharedBytes)
    return reject(std::string("wrong dynamic shared memory: ") + buf);
  if (shared > m.maxDynamicShared)
    return reject("dynamic shared memory " + std::to_string(shared) +
                  " over the function's limit " +
                  std::to_string(m.maxDynamicShared) +
                  " (cuFuncSetAttribute missing)");
  size_t elem = m.dtype == "f32" ? 4 : 2;
  int64_t counts[5] = {b * cfg.hq * sq * cfg.d, b * cfg.hk * sk * cfg.d,
                       b * cfg.hk * sk * cfg.dv, b * cfg.hq * sq * cfg.dv,
                       b * cfg.hq * sq};
  const char *names[5] = {"q", "k", "v", "o", "lse"};
  void *ptrs[5];
  for (int t = 0; t < 5; ++t) {
    const int64_t *d = v + 5 * t;
    size_t bytes = static_cast<size_t>(counts[t]) * (t == 4 ? 4 : elem);
    if (d[0] != d[1] || d[2] != 0 || d[3] != counts[t] || d[4] != 1)
      return reject(std::string("bad descriptor for ") + names[t] +
                    ": allocated=" + std::to_string(d[0]) + " aligned=" +
                    std::to_string(d[1]) + " offset=" + std::to_string(d[2]) +
                    " size=" + std::to_string(d[3]) + " (want " +
                    std::to_string(counts[t]) +
                    ") stride=" + std::to_string(d[4]));
    if (!inAllocation(static_cast<CUdeviceptr>(d[1]), bytes))
      return reject(std::string(names[t]) +
                    " does not point into a live allocation of " +
                    std::to_string(bytes) + " bytes");
    ptrs[t] = reinterpret_cast<void *>(static_cast<uintptr_t>(d[1]));
  }
  std::vector<double> in[3];
  for (int t = 0; t < 3; ++t) {
    in[t].resize(counts[t]);
    for (int64_t i = 0; i < counts[t]; ++i)
      in[t][i] = loadElem(ptrs[t], i, m.dtype);
  }
  fmha::rt::ReferenceForward ref;
  std::string err;
  if (!fmha::rt::referenceForward(cfg, in[0], in[1], in[2], &ref, &err))
    return reject("reference: " + err);
  if (m.perturb && !ref.o.empty())
    ref.o[0] += 0.5;
  for (int64_t i = 0; i < counts[3]; ++i)
    storeElem(ptrs[3], i, m.dtype, ref.o[i]);
  for (int64_t i = 0; i < counts[4]; ++i) {
    float f = static_cast<float>(ref.lse[i]);
    std::memcpy(static_cast<char *>(ptrs[4]) + 4 * i, &f, 4);
  }
  return kSuccess;
}

} // namespace

extern "C" {

CUresult cuGetErrorName(CUresult r, const char **name) {
  for (const ErrorName &e : kErrors)
    if (e.code == r) {
      *name = e.name;
      return kSuccess;
    }
  return kInvalidValue;
}

CUresult cuGetErrorString(CUresult r, const char **text) {
  for (const ErrorName &e : kErrors)
    if (e.code == r) {
      *text = e.text;
      return kSuccess;
    }
  return kInvalidValue;
}

CUresult cuInit(unsigned flags) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (flags != 0)
    return kInvalidValue;
  if (CUresult r = injected("cuInit"))
    return r;
  if (env("FMHA_FAKE_CUDA") != "device")
    return kNoDevice;
  gInitialized = true;
  return kSuccess;
}

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return kSuccess;
}

CUresult cuDeviceGetCount(int *count) {
  FAKE_ENTER("cuDeviceGetCount");
  *count = static_cast<int>(envInt("FMHA_FAKE_CUDA_DEVICES", 1));
  return kSuccess;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= envInt("FMHA_FAKE_CUDA_DEVICES", 1))
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

CUresult cuDeviceGetName(char *name, int len, int) {
  FAKE_ENTER("cuDeviceGetName");
  std::snprintf(name, static_cast<size_t>(len), "%s", "FMHA fake GPU");
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  FAKE_ENTER("cuDeviceGetAttribute");
  switch (attribute) {
  case 1: // MAX_THREADS_PER_BLOCK
    *value = 1024;
    return kSuccess;
  case 5: // MAX_GRID_DIM_X
    *value = 2147483647;
    return kSuccess;
  case 6:
  case 7:
    *value = 65535;
    return kSuccess;
  case 16: // MULTIPROCESSOR_COUNT
    *value = 132;
    return kSuccess;
  case 75:
    *value = 9;
    return kSuccess;
  case 76:
    *value = 0;
    return kSuccess;
  case 97: // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    *value = static_cast<int>(envInt("FMHA_FAKE_CUDA_SHARED_OPTIN", 232448));
    return kSuccess;
  }
  return kInvalidValue;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  *ctx = kContext;
  return kSuccess;
}

CUresult cuCtxGetCurrent(void **ctx) {
  FAKE_ENTER("cuCtxGetCurrent");
  *ctx = tContextStack.empty() ? nullptr : tContextStack.back();
  return kSuccess;
}

CUresult cuCtxSetCurrent(void *ctx) {
  FAKE_ENTER("cuCtxSetCurrent");
  if (tContextStack.empty())
    tContextStack.push_back(ctx);
  else
    tContextStack.back() = ctx;
  return kSuccess;
}

CUresult cuCtxGetDevice(int *device) {
  FAKE_ENTER("cuCtxGetDevice");
  if (!contextCurrent())
    return kInvalidContext;
  *device = 0;
  return kSuccess;
}

CUresult cuCtxPushCurrent_v2(void *ctx) {
  FAKE_ENTER("cuCtxPushCurrent_v2");
  if (ctx != kContext)
    return kInvalidContext;
  tContextStack.push_back(ctx);
  return kSuccess;
}

CUresult cuCtxPopCurrent_v2(void **ctx) {
  FAKE_ENTER("cuCtxPopCurrent_v2");
  if (tContextStack.empty())
    return kInvalidContext;
  if (ctx)
    *ctx = tContextStack.back();
  tContextStack.pop_back();
  return kSuccess;
}

CUresult cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize");
  return contextCurrent() ? kSuccess : kInvalidContext;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                            int *options, void **values) {
  FAKE_ENTER("cuModuleLoadDataEx");
  if (!contextCurrent())
    return kInvalidContext;
  auto *m = new Module;
  std::string why;
  if (!parseModule(static_cast<const char *>(image), m, &why)) {
    delete m;
    char *log = nullptr;
    size_t size = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (options[i] == 5)
        log = static_cast<char *>(values[i]);
      if (options[i] == 6)
        size = reinterpret_cast<uintptr_t>(values[i]);
    }
    if (log && size)
      std::snprintf(log, size, "fake ptxas fatal: %s\n", why.c_str());
    return kInvalidPtx;
  }
  *module = m;
  return kSuccess;
}

CUresult cuModuleUnload(void *module) {
  FAKE_ENTER("cuModuleUnload");
  delete static_cast<Module *>(module);
  logLine("module unloaded");
  return kSuccess;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  auto *m = static_cast<Module *>(module);
  if (!m)
    return kInvalidHandle;
  if (m->kernel != name)
    return kNotFound;
  *function = m; // one function a module
  return kSuccess;
}

CUresult cuFuncGetAttribute(int *value, int attribute, void *function) {
  FAKE_ENTER("cuFuncGetAttribute");
  auto *m = static_cast<Module *>(function);
  switch (attribute) {
  case 0:
    *value = static_cast<int>(m->maxThreads);
    return kSuccess;
  case 1:
    *value = static_cast<int>(m->staticShared);
    return kSuccess;
  case 4:
    *value = 96;
    return kSuccess;
  case 8:
    *value = static_cast<int>(m->maxDynamicShared);
    return kSuccess;
  }
  return kInvalidValue;
}

CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  auto *m = static_cast<Module *>(function);
  if (attribute != 8)
    return kInvalidValue;
  if (value < 0 ||
      value + m->staticShared > envInt("FMHA_FAKE_CUDA_SHARED_OPTIN", 232448))
    return kInvalidValue;
  m->maxDynamicShared = value;
  logLine("set max dynamic shared " + std::to_string(value));
  return kSuccess;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void *, void **params, void **extra) {
  FAKE_ENTER("cuLaunchKernel");
  if (!function)
    return kInvalidHandle;
  return launch(*static_cast<Module *>(function), gx, gy, gz, bx, by, bz,
                shared, params, extra);
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  FAKE_ENTER("cuMemAlloc_v2");
  if (!contextCurrent())
    return kInvalidContext;
  if (bytes == 0)
    return kInvalidValue;
  int64_t limit = envInt("FMHA_FAKE_CUDA_MEMORY", -1);
  if (limit >= 0 && gAllocated + bytes > static_cast<size_t>(limit))
    return kOutOfMemory;
  void *p = std::malloc(bytes);
  if (!p)
    return kOutOfMemory;
  *ptr = reinterpret_cast<uintptr_t>(p);
  gAllocations[*ptr] = bytes;
  gAllocated += bytes;
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  FAKE_ENTER("cuMemFree_v2");
  auto it = gAllocations.find(ptr);
  if (it == gAllocations.end())
    return kInvalidValue;
  gAllocated -= it->second;
  gAllocations.erase(it);
  std::free(reinterpret_cast<void *>(static_cast<uintptr_t>(ptr)));
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD_v2");
  if (!inAllocation(dst, bytes))
    return kInvalidValue;
  std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(dst)), src,
              bytes);
  return kSuccess;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH_v2");
  if (!inAllocation(src, bytes))
    return kInvalidValue;
  std::memcpy(dst, reinterpret_cast<void *>(static_cast<uintptr_t>(src)),
              bytes);
  return kSuccess;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes,
                         void *) {
  FAKE_ENTER("cuMemsetD8Async");
  if (!inAllocation(dst, bytes))
    return kInvalidValue;
  std::memset(reinterpret_cast<void *>(static_cast<uintptr_t>(dst)), value,
              bytes);
  return kSuccess;
}

CUresult cuStreamSynchronize(void *) {
  FAKE_ENTER("cuStreamSynchronize");
  return kSuccess;
}

CUresult cuEventCreate(void **event, unsigned) {
  FAKE_ENTER("cuEventCreate");
  *event = new Event;
  return kSuccess;
}

CUresult cuEventRecord(void *event, void *) {
  FAKE_ENTER("cuEventRecord");
  auto *e = static_cast<Event *>(event);
  e->at = std::chrono::steady_clock::now();
  e->recorded = true;
  return kSuccess;
}

CUresult cuEventSynchronize(void *) {
  FAKE_ENTER("cuEventSynchronize");
  return kSuccess;
}

CUresult cuEventElapsedTime(float *ms, void *start, void *stop) {
  FAKE_ENTER("cuEventElapsedTime");
  auto *a = static_cast<Event *>(start), *b = static_cast<Event *>(stop);
  if (!a->recorded || !b->recorded)
    return kInvalidHandle;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return kSuccess;
}

CUresult cuEventDestroy_v2(void *event) {
  FAKE_ENTER("cuEventDestroy_v2");
  delete static_cast<Event *>(event);
  return kSuccess;
}

} // extern "C"

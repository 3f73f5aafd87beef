//===- FakeHip.cpp - A fake HIP runtime library for the runtime's tests ---===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A shared object exporting the HIP runtime functions the HIP backend looks
// up (runtime/backends/hip/HipBackend.cpp), so that the backend is tested
// without an AMD GPU: the tests point FMHA_HIP_LIBRARY at it. The device is
// FakeGpu.h's (its environment variables start with FMHA_FAKE_HIP); here
// are HIP's names, codes and per-thread current device.
//
// With FMHA_FAKE_HIP=device there are FMHA_FAKE_HIP_DEVICES devices (1)
// called "FMHA fake AMD GPU" (304 CUs, wave64, 65536 bytes of LDS a block,
// FMHA_FAKE_HIP_SHARED; no opt-in). Otherwise the library answers as ROCm
// 5.2 does on a machine without /dev/kfd: hipInit returns
// hipErrorInvalidDevice and hipGetDeviceCount hipErrorNoDevice with a count
// of 0. FMHA_FAKE_HIP=device with FMHA_FAKE_HIP_DEVICES=0 makes
// hipGetDeviceCount succeed with 0. Modules, allocations and launches
// belong to the thread's current device (hipSetDevice); a launch checks
// that the module and every pointer are on it and, as HIP does, that
// grid.x * block.x fits 32 bits.
//
//===----------------------------------------------------------------------===//

#include "FakeGpu.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace fake = fmha::fake;

namespace {

using hipError_t = int;

constexpr hipError_t kInvalidConfiguration = 9;
constexpr hipError_t kInvalidMemcpyDirection = 21;
constexpr hipError_t kInvalidImage = 200;

struct ErrorName {
  hipError_t code;
  const char *name, *text;
} kErrors[] = {
    {0, "hipSuccess", "no error"},
    {1, "hipErrorInvalidValue", "invalid argument"},
    {2, "hipErrorOutOfMemory", "out of memory"},
    {3, "hipErrorNotInitialized", "initialization error"},
    {9, "hipErrorInvalidConfiguration", "invalid configuration argument"},
    {21, "hipErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {100, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {101, "hipErrorInvalidDevice", "invalid device ordinal"},
    {200, "hipErrorInvalidImage", "device kernel image is invalid"},
    {201, "hipErrorInvalidContext", "invalid device context"},
    {400, "hipErrorInvalidHandle", "invalid resource handle"},
    {500, "hipErrorNotFound", "named symbol not found"},
    {700, "hipErrorIllegalAddress", "an illegal memory access was encountered"},
    {701, "hipErrorLaunchOutOfResources",
     "too many resources requested for launch"},
    {999, "hipErrorUnknown", "unknown error"},
};

const ErrorName &lookup(hipError_t r) {
  for (const ErrorName &e : kErrors)
    if (e.code == r)
      return e;
  return kErrors[sizeof(kErrors) / sizeof(kErrors[0]) - 1];
}

thread_local int tDevice = 0;

} // namespace

const fake::Vendor fake::kVendor = {
    "FMHA_FAKE_HIP", "fake hip", "FAKE-HIP-MODULE",     kInvalidImage,
    65536,           false,      [] { return tDevice; }};

extern "C" {

// As ROCm's: a code it does not know is "hipErrorUnknown".
const char *hipGetErrorName(hipError_t r) { return lookup(r).name; }
const char *hipGetErrorString(hipError_t r) { return lookup(r).text; }

hipError_t hipInit(unsigned flags) {
  auto lock = fake::lockState();
  if (flags != 0)
    return fake::kInvalidValue;
  if (hipError_t r = fake::injected("hipInit"))
    return r;
  if (!fake::hasDevices())
    return fake::kInvalidDevice;
  fake::setInitialized();
  return fake::kSuccess;
}

hipError_t hipGetDeviceCount(int *count) {
  auto lock = fake::lockState();
  if (hipError_t r = fake::injected("hipGetDeviceCount"))
    return r;
  *count = fake::hasDevices() ? fake::deviceCount() : 0;
  return fake::hasDevices() ? fake::kSuccess : fake::kNoDevice;
}

hipError_t hipGetDevice(int *device) {
  FAKE_ENTER("hipGetDevice");
  *device = tDevice;
  return fake::kSuccess;
}

hipError_t hipSetDevice(int device) {
  FAKE_ENTER("hipSetDevice");
  if (device < 0 || device >= fake::deviceCount())
    return fake::kInvalidDevice;
  tDevice = device;
  return fake::kSuccess;
}

hipError_t hipDeviceGet(int *device, int ordinal) {
  FAKE_ENTER("hipDeviceGet");
  if (ordinal < 0 || ordinal >= fake::deviceCount())
    return fake::kInvalidDevice;
  *device = ordinal;
  return fake::kSuccess;
}

hipError_t hipDeviceGetName(char *name, int len, int device) {
  FAKE_ENTER("hipDeviceGetName");
  if (device < 0 || device >= fake::deviceCount())
    return fake::kInvalidDevice;
  std::snprintf(name, static_cast<size_t>(len), "%s", "FMHA fake AMD GPU");
  return fake::kSuccess;
}

hipError_t hipDeviceGetAttribute(int *value, int attribute, int device) {
  FAKE_ENTER("hipDeviceGetAttribute");
  if (device < 0 || device >= fake::deviceCount())
    return fake::kInvalidDevice;
  switch (attribute) {
  case 29: // hipDeviceAttributeMaxGridDimX
    *value = 2147483647;
    return fake::kSuccess;
  case 30: // MaxGridDimY
  case 31: // MaxGridDimZ
    *value = 65535;
    return fake::kSuccess;
  case 56: // MaxThreadsPerBlock
    *value = 1024;
    return fake::kSuccess;
  case 63: // MultiprocessorCount
    *value = 304;
    return fake::kSuccess;
  case 74: // MaxSharedMemoryPerBlock
    *value = static_cast<int>(fake::sharedLimit());
    return fake::kSuccess;
  case 87: // WarpSize
    *value = 64;
    return fake::kSuccess;
  }
  return fake::kInvalidValue;
}

hipError_t hipDeviceSynchronize() {
  FAKE_ENTER("hipDeviceSynchronize");
  return fake::kSuccess;
}

hipError_t hipModuleLoadData(void **module, const void *image) {
  FAKE_ENTER("hipModuleLoadData");
  std::string why;
  hipError_t r =
      fake::loadModule(static_cast<const char *>(image),
                       reinterpret_cast<fake::Module **>(module), &why);
  if (r == kInvalidImage)
    std::fprintf(stderr, "fake hip: %s\n", why.c_str());
  return r;
}

hipError_t hipModuleUnload(void *module) {
  FAKE_ENTER("hipModuleUnload");
  fake::unloadModule(static_cast<fake::Module *>(module));
  return fake::kSuccess;
}

hipError_t hipModuleGetFunction(void **function, void *module,
                                const char *name) {
  FAKE_ENTER("hipModuleGetFunction");
  return fake::getFunction(static_cast<fake::Module *>(module), name,
                           reinterpret_cast<fake::Module **>(function));
}

hipError_t hipFuncGetAttribute(int *value, int attribute, void *function) {
  FAKE_ENTER("hipFuncGetAttribute");
  return fake::functionAttribute(static_cast<fake::Module *>(function),
                                 attribute, value);
}

hipError_t hipModuleLaunchKernel(void *function, unsigned gx, unsigned gy,
                                 unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void *,
                                 void **params, void **extra) {
  FAKE_ENTER("hipModuleLaunchKernel");
  if (uint64_t(gx) * bx > UINT32_MAX || uint64_t(gy) * by > UINT32_MAX ||
      uint64_t(gz) * bz > UINT32_MAX)
    return kInvalidConfiguration;
  return fake::launch(static_cast<fake::Module *>(function), gx, gy, gz, bx, by,
                      bz, shared, params, extra);
}

hipError_t hipMalloc(void **ptr, size_t bytes) {
  FAKE_ENTER("hipMalloc");
  return fake::allocate(bytes, ptr);
}

hipError_t hipFree(void *ptr) {
  FAKE_ENTER("hipFree");
  return ptr ? fake::release(ptr) : fake::kSuccess;
}

hipError_t hipMemcpy(void *dst, const void *src, size_t bytes, int kind) {
  FAKE_ENTER("hipMemcpy");
  if (kind != 1 && kind != 2) // hipMemcpyHostToDevice, hipMemcpyDeviceToHost
    return kInvalidMemcpyDirection;
  return fake::copy(dst, src, bytes, kind == 1);
}

hipError_t hipMemsetAsync(void *dst, int value, size_t bytes, void *) {
  FAKE_ENTER("hipMemsetAsync");
  return fake::fill(dst, value, bytes);
}

hipError_t hipStreamSynchronize(void *) {
  FAKE_ENTER("hipStreamSynchronize");
  return fake::kSuccess;
}

hipError_t hipEventCreate(void **event) {
  FAKE_ENTER("hipEventCreate");
  return fake::createEvent(event);
}

hipError_t hipEventRecord(void *event, void *) {
  FAKE_ENTER("hipEventRecord");
  return fake::recordEvent(event);
}

hipError_t hipEventSynchronize(void *) {
  FAKE_ENTER("hipEventSynchronize");
  return fake::kSuccess;
}

hipError_t hipEventElapsedTime(float *ms, void *start, void *stop) {
  FAKE_ENTER("hipEventElapsedTime");
  return fake::elapsedMs(start, stop, ms);
}

hipError_t hipEventDestroy(void *event) {
  FAKE_ENTER("hipEventDestroy");
  return fake::destroyEvent(event);
}

} // extern "C"

//===- FakeCuda.cpp - A fake CUDA driver library for the runtime's tests --===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A shared object exporting the CUDA driver functions the CUDA backend looks
// up (runtime/backends/cuda/CudaBackend.cpp), so that the backend is tested
// on a machine without a GPU: the tests point FMHA_CUDA_LIBRARY at it. The
// device is FakeGpu.h's (its environment variables start with
// FMHA_FAKE_CUDA); here are the driver's names, codes and contexts.
//
// With FMHA_FAKE_CUDA=device there are FMHA_FAKE_CUDA_DEVICES devices (1)
// called "FMHA fake GPU" (sm_90) with 232448 bytes of opt-in shared memory
// (FMHA_FAKE_CUDA_SHARED); otherwise cuInit returns CUDA_ERROR_NO_DEVICE, as
// on a machine with a driver but no GPU. Launches, allocations and module
// loads need the primary context current; above 48 KiB of shared memory a
// function needs cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES).
//
//===----------------------------------------------------------------------===//

#include "FakeGpu.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace fake = fmha::fake;

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult kInvalidPtx = 218;

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

int gContextTag; // the primary context is &gContextTag
void *const kContext = &gContextTag;
thread_local std::vector<void *> tContextStack;

bool contextCurrent() {
  return !tContextStack.empty() && tContextStack.back() == kContext;
}

void *ptr(CUdeviceptr p) {
  return reinterpret_cast<void *>(static_cast<uintptr_t>(p));
}

} // namespace

const fake::Vendor fake::kVendor = {"FMHA_FAKE_CUDA",
                                    "fake cuda",
                                    "FAKE-CUDA-MODULE",
                                    kInvalidPtx,
                                    232448,
                                    true,
                                    [] { return contextCurrent() ? 0 : -1; }};

extern "C" {

CUresult cuGetErrorName(CUresult r, const char **name) {
  for (const ErrorName &e : kErrors)
    if (e.code == r) {
      *name = e.name;
      return fake::kSuccess;
    }
  return fake::kInvalidValue;
}

CUresult cuGetErrorString(CUresult r, const char **text) {
  for (const ErrorName &e : kErrors)
    if (e.code == r) {
      *text = e.text;
      return fake::kSuccess;
    }
  return fake::kInvalidValue;
}

CUresult cuInit(unsigned flags) {
  auto lock = fake::lockState();
  if (flags != 0)
    return fake::kInvalidValue;
  if (CUresult r = fake::injected("cuInit"))
    return r;
  if (!fake::hasDevices())
    return fake::kNoDevice;
  fake::setInitialized();
  return fake::kSuccess;
}

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return fake::kSuccess;
}

CUresult cuDeviceGetCount(int *count) {
  FAKE_ENTER("cuDeviceGetCount");
  *count = fake::deviceCount();
  return fake::kSuccess;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= fake::deviceCount())
    return fake::kInvalidDevice;
  *device = ordinal;
  return fake::kSuccess;
}

CUresult cuDeviceGetName(char *name, int len, int) {
  FAKE_ENTER("cuDeviceGetName");
  std::snprintf(name, static_cast<size_t>(len), "%s", "FMHA fake GPU");
  return fake::kSuccess;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  FAKE_ENTER("cuDeviceGetAttribute");
  switch (attribute) {
  case 1: // MAX_THREADS_PER_BLOCK
    *value = 1024;
    return fake::kSuccess;
  case 5: // MAX_GRID_DIM_X
    *value = 2147483647;
    return fake::kSuccess;
  case 6:
  case 7:
    *value = 65535;
    return fake::kSuccess;
  case 16: // MULTIPROCESSOR_COUNT
    *value = 132;
    return fake::kSuccess;
  case 75:
    *value = 9;
    return fake::kSuccess;
  case 76:
    *value = 0;
    return fake::kSuccess;
  case 97: // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    *value = static_cast<int>(fake::sharedLimit());
    return fake::kSuccess;
  }
  return fake::kInvalidValue;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  *ctx = kContext;
  return fake::kSuccess;
}

CUresult cuCtxGetCurrent(void **ctx) {
  FAKE_ENTER("cuCtxGetCurrent");
  *ctx = tContextStack.empty() ? nullptr : tContextStack.back();
  return fake::kSuccess;
}

CUresult cuCtxSetCurrent(void *ctx) {
  FAKE_ENTER("cuCtxSetCurrent");
  if (tContextStack.empty())
    tContextStack.push_back(ctx);
  else
    tContextStack.back() = ctx;
  return fake::kSuccess;
}

CUresult cuCtxGetDevice(int *device) {
  FAKE_ENTER("cuCtxGetDevice");
  if (!contextCurrent())
    return fake::kInvalidContext;
  *device = 0;
  return fake::kSuccess;
}

CUresult cuCtxPushCurrent_v2(void *ctx) {
  FAKE_ENTER("cuCtxPushCurrent_v2");
  if (ctx != kContext)
    return fake::kInvalidContext;
  tContextStack.push_back(ctx);
  return fake::kSuccess;
}

CUresult cuCtxPopCurrent_v2(void **ctx) {
  FAKE_ENTER("cuCtxPopCurrent_v2");
  if (tContextStack.empty())
    return fake::kInvalidContext;
  if (ctx)
    *ctx = tContextStack.back();
  tContextStack.pop_back();
  return fake::kSuccess;
}

CUresult cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize");
  return contextCurrent() ? fake::kSuccess : fake::kInvalidContext;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                            int *options, void **values) {
  FAKE_ENTER("cuModuleLoadDataEx");
  std::string why;
  CUresult r =
      fake::loadModule(static_cast<const char *>(image),
                       reinterpret_cast<fake::Module **>(module), &why);
  if (r == kInvalidPtx) {
    char *log = nullptr;
    size_t size = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (options[i] == 5) // CU_JIT_ERROR_LOG_BUFFER
        log = static_cast<char *>(values[i]);
      if (options[i] == 6) // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
        size = reinterpret_cast<uintptr_t>(values[i]);
    }
    if (log && size)
      std::snprintf(log, size, "fake ptxas fatal: %s\n", why.c_str());
  }
  return r;
}

CUresult cuModuleUnload(void *module) {
  FAKE_ENTER("cuModuleUnload");
  fake::unloadModule(static_cast<fake::Module *>(module));
  return fake::kSuccess;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  return fake::getFunction(static_cast<fake::Module *>(module), name,
                           reinterpret_cast<fake::Module **>(function));
}

CUresult cuFuncGetAttribute(int *value, int attribute, void *function) {
  FAKE_ENTER("cuFuncGetAttribute");
  return fake::functionAttribute(static_cast<fake::Module *>(function),
                                 attribute, value);
}

CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  if (attribute != 8) // MAX_DYNAMIC_SHARED_SIZE_BYTES
    return fake::kInvalidValue;
  return fake::setMaxDynamicShared(static_cast<fake::Module *>(function),
                                   value);
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void *, void **params, void **extra) {
  FAKE_ENTER("cuLaunchKernel");
  return fake::launch(static_cast<fake::Module *>(function), gx, gy, gz, bx, by,
                      bz, shared, params, extra);
}

CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t bytes) {
  FAKE_ENTER("cuMemAlloc_v2");
  void *p = nullptr;
  CUresult r = fake::allocate(bytes, &p);
  *out = reinterpret_cast<uintptr_t>(p);
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  FAKE_ENTER("cuMemFree_v2");
  return fake::release(ptr(p));
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD_v2");
  return fake::copy(ptr(dst), src, bytes, true);
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH_v2");
  return fake::copy(dst, ptr(src), bytes, false);
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes,
                         void *) {
  FAKE_ENTER("cuMemsetD8Async");
  return fake::fill(ptr(dst), value, bytes);
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count,
                          void *) {
  FAKE_ENTER("cuMemsetD32Async");
  return fake::fill32(ptr(dst), value, count);
}

// Streams (the device ring's): the fake runs everything at once, in order,
// so a stream is only a handle and waiting on an event is immediate.
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  FAKE_ENTER("cuCtxGetStreamPriorityRange");
  *least = 0;
  *greatest = -5;
  return fake::kSuccess;
}

CUresult cuStreamCreate(void **stream, unsigned) {
  FAKE_ENTER("cuStreamCreate");
  *stream = new int(0);
  return fake::kSuccess;
}

CUresult cuStreamCreateWithPriority(void **stream, unsigned, int) {
  FAKE_ENTER("cuStreamCreateWithPriority");
  *stream = new int(0);
  return fake::kSuccess;
}

CUresult cuStreamDestroy_v2(void *stream) {
  FAKE_ENTER("cuStreamDestroy_v2");
  delete static_cast<int *>(stream);
  return fake::kSuccess;
}

CUresult cuStreamWaitEvent(void *, void *, unsigned) {
  FAKE_ENTER("cuStreamWaitEvent");
  return fake::kSuccess;
}

CUresult cuStreamSynchronize(void *) {
  FAKE_ENTER("cuStreamSynchronize");
  return fake::kSuccess;
}

CUresult cuEventCreate(void **event, unsigned) {
  FAKE_ENTER("cuEventCreate");
  return fake::createEvent(event);
}

CUresult cuEventRecord(void *event, void *) {
  FAKE_ENTER("cuEventRecord");
  return fake::recordEvent(event);
}

CUresult cuEventSynchronize(void *) {
  FAKE_ENTER("cuEventSynchronize");
  return fake::kSuccess;
}

CUresult cuEventElapsedTime(float *ms, void *start, void *stop) {
  FAKE_ENTER("cuEventElapsedTime");
  return fake::elapsedMs(start, stop, ms);
}

CUresult cuEventDestroy_v2(void *event) {
  FAKE_ENTER("cuEventDestroy_v2");
  return fake::destroyEvent(event);
}

} // extern "C"

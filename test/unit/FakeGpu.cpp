//===- FakeGpu.cpp - The device of the fake GPU libraries -----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "FakeGpu.h"

#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Reference.h"
#include "fmha/Support/MaskSpec.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace fmha::fake {

struct Module {
  std::map<std::string, std::string> keys;
  std::string kernel;
  rt::ReferenceConfig cfg;
  std::string dtype;
  int64_t blockM = 0, blockThreads = 0, sharedBytes = 0, staticShared = 0,
          maxThreads = 1024, maxDynamicShared = 0;
  bool perturb = false;
  int device = 0;
};

namespace {

struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};

struct Allocation {
  size_t bytes;
  int device;
};

std::mutex gMutex;
bool gInitialized = false;
std::map<uintptr_t, Allocation> gAllocations;
size_t gAllocated = 0;

int reject(const std::string &why) {
  std::fprintf(stderr, "%s: %s\n", kVendor.tag, why.c_str());
  return kInvalidValue;
}

/// The allocation [p, p+bytes) lies in, or null.
const Allocation *findAllocation(const void *p, size_t bytes) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = gAllocations.upper_bound(a);
  if (it == gAllocations.begin())
    return nullptr;
  --it;
  return a >= it->first && a - it->first + bytes <= it->second.bytes
             ? &it->second
             : nullptr;
}

double loadElem(const void *base, int64_t i, const std::string &dtype) {
  if (dtype == "f32") {
    float f;
    std::memcpy(&f, static_cast<const char *>(base) + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const char *>(base) + 2 * i, 2);
  return dtype == "f16" ? rt::halfBitsToFloat(h) : rt::bfloat16BitsToFloat(h);
}

void storeElem(void *base, int64_t i, const std::string &dtype, double x) {
  float f = static_cast<float>(x);
  if (dtype == "f32") {
    std::memcpy(static_cast<char *>(base) + 4 * i, &f, 4);
    return;
  }
  uint16_t h =
      dtype == "f16" ? rt::floatToHalfBits(f) : rt::floatToBFloat16Bits(f);
  std::memcpy(static_cast<char *>(base) + 2 * i, &h, 2);
}

bool parseModule(const char *image, Module *m, std::string *why) {
  std::string magic = std::string(kVendor.magic) + "\n";
  if (std::strncmp(image, magic.c_str(), magic.size()) != 0) {
    *why = "line 1: expected " + std::string(kVendor.magic) +
           " (this fake runs fake modules only)";
    return false;
  }
  std::string text(image + magic.size());
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
  std::optional<MaskSpec> mask = MaskSpec::parse(m->keys["mask"], &err);
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
  m->maxDynamicShared =
      (kVendor.sharedNeedsOptIn ? 48 * 1024 : sharedLimit()) - m->staticShared;
  m->perturb = m->keys["flaw"] == "perturb";
  return true;
}

} // namespace

std::string env(const char *suffix) {
  const char *v =
      std::getenv((std::string(kVendor.envPrefix) + suffix).c_str());
  return v ? v : "";
}

int64_t envInt(const char *suffix, int64_t fallback) {
  std::string v = env(suffix);
  return v.empty() ? fallback : std::strtoll(v.c_str(), nullptr, 10);
}

bool hasDevices() { return env("") == "device"; }
int deviceCount() { return static_cast<int>(envInt("_DEVICES", 1)); }
int64_t sharedLimit() { return envInt("_SHARED", kVendor.sharedLimit); }

std::unique_lock<std::mutex> lockState() {
  return std::unique_lock<std::mutex>(gMutex);
}
bool initialized() { return gInitialized; }
void setInitialized() { gInitialized = true; }

int injected(const char *fn) {
  std::string spec = env("_FAIL");
  size_t eq = spec.find('=');
  if (eq == std::string::npos || spec.substr(0, eq) != fn)
    return kSuccess;
  return static_cast<int>(std::strtol(spec.c_str() + eq + 1, nullptr, 10));
}

void logLine(const std::string &line) {
  std::string path = env("_LOG");
  if (path.empty())
    return;
  if (std::FILE *f = std::fopen(path.c_str(), "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

int loadModule(const char *image, Module **module, std::string *why) {
  int device = kVendor.currentDevice();
  if (device < 0)
    return kInvalidContext;
  auto *m = new Module;
  if (!parseModule(image, m, why)) {
    delete m;
    return kVendor.invalidImage;
  }
  m->device = device;
  *module = m;
  return kSuccess;
}

void unloadModule(Module *module) {
  delete module;
  logLine("module unloaded");
}

int getFunction(Module *module, const char *name, Module **function) {
  if (!module)
    return kInvalidHandle;
  if (module->kernel != name)
    return kNotFound;
  *function = module;
  return kSuccess;
}

int functionAttribute(Module *m, int attribute, int *value) {
  if (!m)
    return kInvalidHandle;
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

int setMaxDynamicShared(Module *m, int value) {
  if (value < 0 || value + m->staticShared > sharedLimit())
    return kInvalidValue;
  m->maxDynamicShared = value;
  logLine("set max dynamic shared " + std::to_string(value));
  return kSuccess;
}

int launch(Module *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
           unsigned by, unsigned bz, unsigned shared, void **params,
           void **extra) {
  if (!function)
    return kInvalidHandle;
  Module &m = *function;
  int device = kVendor.currentDevice();
  if (device < 0)
    return kInvalidContext;
  if (device != m.device)
    return reject("the module was loaded on device " +
                  std::to_string(m.device) + ", the launch is on device " +
                  std::to_string(device));
  if (extra)
    return reject("extra must be null");
  if (!params)
    return reject("kernelParams is null");
  int64_t v[28];
  for (int i = 0; i < 28; ++i)
    std::memcpy(&v[i], params[i], 8);
  int64_t b = v[25], sq = v[26], sk = v[27];
  rt::ReferenceConfig cfg = m.cfg;
  cfg.b = b;
  cfg.sq = sq;
  cfg.sk = sk;
  if (b <= 0 || sq <= 0 || sk <= 0)
    return reject("B, Sq, Sk must be positive");
  int64_t gridX = (sq + m.blockM - 1) / m.blockM;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "launch kernel=%s grid=%u,%u,%u block=%u,%u,%u shared=%u "
                "B=%lld Sq=%lld Sk=%lld device=%d",
                m.kernel.c_str(), gx, gy, gz, bx, by, bz, shared,
                static_cast<long long>(b), static_cast<long long>(sq),
                static_cast<long long>(sk), device);
  logLine(buf);
  if (gx != gridX || gy != cfg.hq || gz != b)
    return reject(std::string("wrong grid: ") + buf);
  if (bx != m.blockThreads || by != 1 || bz != 1)
    return reject(std::string("wrong block: ") + buf);
  if (shared != m.sharedBytes)
    return reject(std::string("wrong dynamic shared memory: ") + buf);
  if (shared > m.maxDynamicShared)
    return reject(
        "dynamic shared memory " + std::to_string(shared) +
        " over the function's limit " + std::to_string(m.maxDynamicShared) +
        (kVendor.sharedNeedsOptIn ? " (cuFuncSetAttribute missing)" : ""));
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
    ptrs[t] = reinterpret_cast<void *>(static_cast<uintptr_t>(d[1]));
    const Allocation *a = findAllocation(ptrs[t], bytes);
    if (!a || a->device != device)
      return reject(
          std::string(names[t]) + " does not point into a live allocation of " +
          std::to_string(bytes) + " bytes on device " + std::to_string(device));
  }
  std::vector<double> in[3];
  for (int t = 0; t < 3; ++t) {
    in[t].resize(counts[t]);
    for (int64_t i = 0; i < counts[t]; ++i)
      in[t][i] = loadElem(ptrs[t], i, m.dtype);
  }
  rt::ReferenceForward ref;
  std::string err;
  if (!rt::referenceForward(cfg, in[0], in[1], in[2], &ref, &err))
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

int allocate(size_t bytes, void **ptr) {
  int device = kVendor.currentDevice();
  if (device < 0)
    return kInvalidContext;
  if (bytes == 0)
    return kInvalidValue;
  int64_t limit = envInt("_MEMORY", -1);
  if (limit >= 0 && gAllocated + bytes > static_cast<size_t>(limit))
    return kOutOfMemory;
  void *p = std::malloc(bytes);
  if (!p)
    return kOutOfMemory;
  *ptr = p;
  gAllocations[reinterpret_cast<uintptr_t>(p)] = {bytes, device};
  gAllocated += bytes;
  return kSuccess;
}

int release(void *ptr) {
  auto it = gAllocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == gAllocations.end())
    return kInvalidValue;
  gAllocated -= it->second.bytes;
  gAllocations.erase(it);
  std::free(ptr);
  return kSuccess;
}

int copy(void *dst, const void *src, size_t bytes, bool toDevice) {
  if (!findAllocation(toDevice ? dst : src, bytes))
    return kInvalidValue;
  std::memcpy(dst, src, bytes);
  return kSuccess;
}

int fill(void *dst, int value, size_t bytes) {
  if (!findAllocation(dst, bytes))
    return kInvalidValue;
  std::memset(dst, value, bytes);
  return kSuccess;
}

int createEvent(void **event) {
  *event = new Event;
  return kSuccess;
}

int recordEvent(void *event) {
  auto *e = static_cast<Event *>(event);
  e->at = std::chrono::steady_clock::now();
  e->recorded = true;
  return kSuccess;
}

int elapsedMs(void *start, void *stop, float *ms) {
  auto *a = static_cast<Event *>(start), *b = static_cast<Event *>(stop);
  if (!a->recorded || !b->recorded)
    return kInvalidHandle;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return kSuccess;
}

int destroyEvent(void *event) {
  delete static_cast<Event *>(event);
  return kSuccess;
}

} // namespace fmha::fake

//===- FakeGpu.cpp - The device of the fake GPU libraries -----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "FakeGpu.h"

#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Reference.h"
#include "fmha/Support/MaskSpec.h"

#include <algorithm>
#include <chrono>
#include <cmath>
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
  int64_t blockM = 0, blockN = 0, blockThreads = 0, sharedBytes = 0,
          staticShared = 0, maxThreads = 1024, maxDynamicShared = 0;
  bool perturb = false;
  int device = 0;
  /// fwd, bwd, merge or acc (the key `kind`, fwd when absent).
  std::string kind;
  /// kind=bwd: the three functions (children), each with its stage; the
  /// module counts the stages launched (0 none, 1 prep, 2 dkdv).
  bool backward = false, deterministic = false;
  std::vector<Module *> functions;
  std::string stage;
  Module *parent = nullptr;
  int phase = 0;
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
  m->kind = m->keys.count("kind") ? m->keys["kind"] : "fwd";
  if (m->kind != "fwd" && m->kind != "bwd" && m->kind != "merge" &&
      m->kind != "acc" && m->kind != "probe") {
    *why = "unknown kind '" + m->kind + "'";
    return false;
  }
  m->backward = m->kind == "bwd";
  m->deterministic = m->keys["deterministic"] == "1";
  if (m->keys.count("block_n"))
    m->blockN = num("block_n");
  if (m->backward && m->blockN <= 0) {
    *why = "a kind=bwd module needs block_n";
    return false;
  }
  return true;
}

/// The launch configuration a kernel was given.
struct LaunchShape {
  unsigned gx, gy, gz, bx, by, bz, shared;
};

/// "B=1 Sq=2 Sk=3", the problem in a launch's log line.
std::string attentionProblem(const rt::ReferenceConfig &cfg) {
  return "B=" + std::to_string(cfg.b) + " Sq=" + std::to_string(cfg.sq) +
         " Sk=" + std::to_string(cfg.sk);
}

/// Logs the launch and checks its grid (`x`, `y`, `z`), block and dynamic
/// shared memory against the module; `problem` ("B=1 Sq=2 Sk=3", "rows=5")
/// goes into the log line.
int checkShape(const Module &m, const LaunchShape &l, int64_t x, int64_t y,
               int64_t z, const std::string &problem, int device) {
  std::string name = m.kernel + (m.stage.empty() ? "" : "_" + m.stage);
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "launch kernel=%s grid=%u,%u,%u block=%u,%u,%u shared=%u "
                "%s device=%d",
                name.c_str(), l.gx, l.gy, l.gz, l.bx, l.by, l.bz, l.shared,
                problem.c_str(), device);
  logLine(buf);
  if (l.gx != x || l.gy != y || l.gz != z)
    return reject(std::string("wrong grid: ") + buf);
  if (l.bx != m.blockThreads || l.by != 1 || l.bz != 1)
    return reject(std::string("wrong block: ") + buf);
  if (l.shared != m.sharedBytes)
    return reject(std::string("wrong dynamic shared memory: ") + buf);
  if (l.shared > m.maxDynamicShared)
    return reject(
        "dynamic shared memory " + std::to_string(l.shared) +
        " over the function's limit " + std::to_string(m.maxDynamicShared) +
        (kVendor.sharedNeedsOptIn ? " (cuFuncSetAttribute missing)" : ""));
  return kSuccess;
}

/// Reads the N 8-byte kernel parameters.
template <size_t N> void readValues(void **params, int64_t (&v)[N]) {
  for (size_t i = 0; i < N; ++i)
    std::memcpy(&v[i], params[i], 8);
}

/// Reads `n` 8-byte kernel parameters, of which the last three are B, Sq,
/// Sk, and the module's problem with them.
int readParams(const Module &m, void **params, std::vector<int64_t> &v,
               size_t n, rt::ReferenceConfig *cfg) {
  v.resize(n);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(&v[i], params[i], 8);
  *cfg = m.cfg;
  cfg->b = v[n - 3];
  cfg->sq = v[n - 2];
  cfg->sk = v[n - 1];
  if (cfg->b <= 0 || cfg->sq <= 0 || cfg->sk <= 0)
    return reject("B, Sq, Sk must be positive");
  return kSuccess;
}

/// A tensor operand of an attention launch as the kernel sees it: its
/// logical shape and, per axis, the element stride into `base`.
struct TensorArg {
  char *base = nullptr;
  std::vector<int64_t> shape, strides;
  size_t elemBytes = 0;

  int64_t count() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  /// The element offset of logical (row-major) element i.
  int64_t at(int64_t i) const {
    int64_t off = 0;
    for (size_t a = shape.size(); a-- > 0;) {
      off += (i % shape[a]) * strides[a];
      i /= shape[a];
    }
    return off;
  }
};

/// A tensor argument as its flattened 1-d memref descriptor should be.
struct FlatArg {
  const char *name;
  int64_t count;
  size_t elemBytes;
};

/// Checks the descriptor `d` (allocated, aligned, offset, size, stride) of
/// `want`; *ptr gets its address, which must lie in a live allocation of
/// the device large enough (a descriptor of size 0 must be null).
int checkDescriptor(const int64_t *d, const FlatArg &want, int device,
                    void **ptr) {
  if (d[0] != d[1] || d[2] != 0 || d[3] != want.count || d[4] != 1)
    return reject(
        std::string("bad descriptor for ") + want.name +
        ": allocated=" + std::to_string(d[0]) +
        " aligned=" + std::to_string(d[1]) + " offset=" + std::to_string(d[2]) +
        " size=" + std::to_string(d[3]) + " (want " +
        std::to_string(want.count) + ") stride=" + std::to_string(d[4]));
  *ptr = reinterpret_cast<void *>(static_cast<uintptr_t>(d[1]));
  if (want.count == 0)
    return *ptr ? reject(std::string(want.name) +
                         " has size 0 but a non-null pointer")
                : kSuccess;
  size_t bytes = static_cast<size_t>(want.count) * want.elemBytes;
  const Allocation *a = findAllocation(*ptr, bytes);
  if (!a || a->device != device)
    return reject(
        std::string(want.name) + " does not point into a live allocation of " +
        std::to_string(bytes) + " bytes on device " + std::to_string(device));
  return kSuccess;
}

std::vector<double> loadAll(const void *base, int64_t count,
                            const std::string &dtype) {
  std::vector<double> out(count);
  for (int64_t i = 0; i < count; ++i)
    out[i] = loadElem(base, i, dtype);
  return out;
}

/// Reads the descriptor of tensor `name` of logical `shape` at `d` and
/// advances it: flat (allocated, aligned, offset, size, stride over the
/// contiguous tensor), or with `strided` the kernels' strided form
/// (allocated, aligned, offset 0, the sizes, then the strides, the last 1),
/// whose span must lie in a live allocation of the device.
int readTensor(const int64_t *&d, bool strided, const char *name,
               std::vector<int64_t> shape, size_t elemBytes, int device,
               TensorArg *t) {
  t->shape = std::move(shape);
  t->elemBytes = elemBytes;
  const size_t rank = t->shape.size();
  t->strides.assign(rank, 1);
  for (size_t a = rank; a-- > 1;)
    t->strides[a - 1] = t->strides[a] * t->shape[a];
  if (!strided) {
    void *ptr;
    int r = checkDescriptor(d, {name, t->count(), elemBytes}, device, &ptr);
    d += 5;
    t->base = static_cast<char *>(ptr);
    return r;
  }
  const int64_t *sizes = d + 3, *strides = d + 3 + rank;
  std::string text;
  for (size_t a = 0; a < rank; ++a)
    text += (a ? "," : "") + std::to_string(sizes[a]);
  text += " strides ";
  for (size_t a = 0; a < rank; ++a)
    text += (a ? "," : "") + std::to_string(strides[a]);
  const int64_t offset = d[2];
  bool ok = d[0] == d[1] && offset == 0 && strides[rank - 1] == 1;
  for (size_t a = 0; a < rank; ++a)
    ok = ok && sizes[a] == t->shape[a] && strides[a] >= 0;
  t->base = reinterpret_cast<char *>(static_cast<uintptr_t>(d[1]));
  d += 3 + 2 * rank;
  if (!ok)
    return reject(std::string("bad strided descriptor for ") + name +
                  ": offset " + std::to_string(offset) + " sizes " + text);
  int64_t span = 1;
  for (size_t a = 0; a < rank; ++a)
    span += (sizes[a] - 1) * strides[a];
  t->strides.assign(strides, strides + rank);
  const Allocation *a =
      findAllocation(t->base, static_cast<size_t>(span) * elemBytes);
  if (!a || a->device != device)
    return reject(std::string(name) + " (sizes " + text +
                  ") does not lie in a live allocation on device " +
                  std::to_string(device));
  return kSuccess;
}

std::vector<double> loadAll(const TensorArg &t, const std::string &dtype) {
  std::vector<double> out(t.count());
  for (int64_t i = 0; i < t.count(); ++i)
    out[i] = loadElem(t.base, t.at(i), dtype);
  return out;
}

void storeAt(const TensorArg &t, int64_t i, const std::string &dtype,
             double x) {
  storeElem(t.base, t.at(i), dtype, x);
}

/// One stage of a gpu-bwd-v1 backward (Bundle.h, kAbiGpuBwdV1): checks the
/// 58 parameters (with `operands=strided`, the strided ABI of today's
/// kernels: 110, each tensor a descriptor of its rank, dsum and dqacc
/// flat), the stage's grid and the order (prep, dkdv, dq), then
/// computes with the float64 reference what the stage writes. prep: dsum =
/// rowsum(dO * o), dqacc = 0. dkdv: checks dsum, writes dk, dv and (not
/// deterministic) adds dq / scale into dqacc. dq: dq = dqacc * scale, or
/// (deterministic) the reference's dq. flaw=perturb adds 0.5 to dq[0].
int launchBackward(Module &f, const LaunchShape &l, void **params, int device) {
  Module &m = *f.parent;
  const bool strided =
      m.keys.count("operands") && m.keys.at("operands") == "strided";
  std::vector<int64_t> v;
  rt::ReferenceConfig cfg;
  if (int r = readParams(m, params, v, strided ? 110 : 58, &cfg))
    return r;
  const int64_t b = cfg.b, sq = cfg.sq, sk = cfg.sk;
  const bool keys = f.stage == "dkdv";
  int64_t tile = keys ? m.blockN : m.blockM, rows = keys ? sk : sq;
  if (int r = checkShape(f, l, (rows + tile - 1) / tile, keys ? cfg.hk : cfg.hq,
                         b, attentionProblem(cfg), device))
    return r;
  const int wantPhase = f.stage == "prep" ? -1 : keys ? 1 : 2;
  if (wantPhase >= 0 && m.phase != wantPhase)
    return reject(m.kernel + "_" + f.stage + " launched out of order (" +
                  (m.phase == 0   ? "prep"
                   : m.phase == 1 ? "dkdv"
                                  : "dq") +
                  " expected next)");
  size_t elem = m.dtype == "f32" ? 4 : 2;
  int64_t qn = b * cfg.hq * sq * cfg.d, kn = b * cfg.hk * sk * cfg.d,
          vn = b * cfg.hk * sk * cfg.dv, on = b * cfg.hq * sq * cfg.dv,
          rowsN = b * cfg.hq * sq;
  const std::vector<int64_t> qs = {b, cfg.hq, sq, cfg.d},
                             ks = {b, cfg.hk, sk, cfg.d},
                             vs = {b, cfg.hk, sk, cfg.dv},
                             os = {b, cfg.hq, sq, cfg.dv}, rs = {b, cfg.hq, sq};
  enum { Q, K, V, O, DO, LSE, DQ, DK, DV, DSUM, DQACC };
  const char *names[9] = {"q", "k", "v", "o", "dO", "lse", "dq", "dk", "dv"};
  const std::vector<int64_t> *shapes[9] = {&qs, &ks, &vs, &os, &os,
                                           &rs, &qs, &ks, &vs};
  TensorArg tensors[9];
  const int64_t *d = v.data();
  for (int t = 0; t < 9; ++t)
    if (int r = readTensor(d, strided, names[t], *shapes[t],
                           t == LSE ? 4 : elem, device, &tensors[t]))
      return r;
  const FlatArg work[2] = {{"dsum", rowsN, 4},
                           {"dqacc", m.deterministic ? 0 : qn, 4}};
  void *ptrs[11];
  for (int t = 0; t < 2; ++t, d += 5)
    if (int r = checkDescriptor(d, work[t], device, &ptrs[DSUM + t]))
      return r;
  if (!m.deterministic) {
    uintptr_t want =
        reinterpret_cast<uintptr_t>(ptrs[DSUM]) + (rowsN * 4 + 255) / 256 * 256;
    if (reinterpret_cast<uintptr_t>(ptrs[DQACC]) != want)
      return reject("dqacc does not start at the first 256-byte boundary "
                    "after dsum");
  }
  auto *dsum = static_cast<float *>(ptrs[DSUM]);
  auto *dqacc = static_cast<float *>(ptrs[DQACC]);
  std::vector<double> o = loadAll(tensors[O], m.dtype),
                      dO = loadAll(tensors[DO], m.dtype);
  std::vector<float> rowsum(rowsN, 0.0f);
  for (int64_t r = 0; r < rowsN; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < cfg.dv; ++j)
      sum += o[r * cfg.dv + j] * dO[r * cfg.dv + j];
    rowsum[r] = static_cast<float>(sum);
  }
  const double scale = cfg.effectiveScale();
  if (f.stage == "prep") {
    std::memcpy(dsum, rowsum.data(), rowsN * 4);
    if (!m.deterministic)
      std::memset(dqacc, 0, qn * 4);
    m.phase = 1;
    return kSuccess;
  }
  if (std::memcmp(dsum, rowsum.data(), rowsN * 4) != 0)
    return reject(f.stage + ": dsum is not what prep wrote");
  if (f.stage == "dq" && !m.deterministic) {
    for (int64_t i = 0; i < qn; ++i)
      storeAt(tensors[DQ], i, m.dtype,
              static_cast<double>(dqacc[i]) * scale + (i == 0 && m.perturb));
    m.phase = 0;
    return kSuccess;
  }
  rt::ReferenceBackward ref;
  std::string err;
  if (!rt::referenceBackward(cfg, loadAll(tensors[Q], m.dtype),
                             loadAll(tensors[K], m.dtype),
                             loadAll(tensors[V], m.dtype), dO, &ref, &err, &o))
    return reject("reference: " + err);
  if (keys) {
    for (int64_t i = 0; i < kn; ++i)
      storeAt(tensors[DK], i, m.dtype, ref.dk[i]);
    for (int64_t i = 0; i < vn; ++i)
      storeAt(tensors[DV], i, m.dtype, ref.dv[i]);
    if (!m.deterministic)
      for (int64_t i = 0; i < qn; ++i)
        dqacc[i] += static_cast<float>(ref.dq[i] / scale);
    m.phase = 2;
    return kSuccess;
  }
  for (int64_t i = 0; i < qn; ++i)
    storeAt(tensors[DQ], i, m.dtype, ref.dq[i] + (i == 0 && m.perturb));
  m.phase = 0;
  return kSuccess;
}

/// A gpu-merge-v1 merge (Runtime.h, kAbiGpuMergeV1): checks the 31
/// parameters (o1, lse1, o2, lse2, o, lse descriptors over rows = B*H*S rows
/// of dv = the module's dv, then rows) and the grid (ceil(rows /
/// (block_threads / 32)), 1, 1), then merges row by row in f32 as DESIGN.md
/// section 1 says: lse = logaddexp(lse1, lse2), o = o1 exp(lse1 - lse) + o2
/// exp(lse2 - lse), an empty partial (lse -inf) weighing 0 and its o never
/// read into the sum, two empty ones giving o = 0, lse = -inf. Every input
/// is read before anything is written: o may be o1 or o2 and lse may be
/// lse1 or lse2. flaw=perturb adds 0.5 to o[0].
int launchMerge(const Module &m, const LaunchShape &l, void **params,
                int device) {
  int64_t v[31];
  readValues(params, v);
  const int64_t rows = v[30], dv = m.cfg.dv;
  if (rows <= 0)
    return reject("merge: rows must be positive, got " + std::to_string(rows));
  if (m.blockThreads < 32 || m.blockThreads % 32 != 0)
    return reject("merge: block_threads " + std::to_string(m.blockThreads) +
                  " is not a multiple of 32 (32 threads a row)");
  const int64_t rowsPerBlock = m.blockThreads / 32;
  if (int r = checkShape(m, l, (rows + rowsPerBlock - 1) / rowsPerBlock, 1, 1,
                         "rows=" + std::to_string(rows), device))
    return r;
  size_t elem = m.dtype == "f32" ? 4 : 2;
  const FlatArg args[6] = {{"o1", rows * dv, elem}, {"lse1", rows, 4},
                           {"o2", rows * dv, elem}, {"lse2", rows, 4},
                           {"o", rows * dv, elem},  {"lse", rows, 4}};
  void *ptrs[6];
  for (int t = 0; t < 6; ++t)
    if (int r = checkDescriptor(v + 5 * t, args[t], device, &ptrs[t]))
      return r;
  std::vector<double> o1 = loadAll(ptrs[0], rows * dv, m.dtype),
                      o2 = loadAll(ptrs[2], rows * dv, m.dtype);
  std::vector<float> lse1(rows), lse2(rows);
  std::memcpy(lse1.data(), ptrs[1], rows * 4);
  std::memcpy(lse2.data(), ptrs[3], rows * 4);
  const float negInf = -INFINITY;
  for (int64_t r = 0; r < rows; ++r) {
    const float a = lse1[r], b = lse2[r];
    const bool empty1 = a == negInf, empty2 = b == negInf;
    float lse = negInf, w1 = 0, w2 = 0;
    if (!empty1 || !empty2) {
      const float mx = std::max(a, b);
      lse = mx + std::log((empty1 ? 0.0f : std::exp(a - mx)) +
                          (empty2 ? 0.0f : std::exp(b - mx)));
      w1 = empty1 ? 0.0f : std::exp(a - lse);
      w2 = empty2 ? 0.0f : std::exp(b - lse);
    }
    for (int64_t e = 0; e < dv; ++e) {
      const int64_t i = r * dv + e;
      float x = (empty1 ? 0.0f : w1 * static_cast<float>(o1[i])) +
                (empty2 ? 0.0f : w2 * static_cast<float>(o2[i]));
      storeElem(ptrs[4], i, m.dtype, x + (i == 0 && m.perturb ? 0.5f : 0.0f));
    }
    std::memcpy(static_cast<char *>(ptrs[5]) + 4 * r, &lse, 4);
  }
  return kSuccess;
}

/// A gpu-acc-v1 accumulate (Runtime.h, kAbiGpuAccV1): checks the 11
/// parameters (x and acc descriptors over n elements, then n) and the grid
/// (ceil(n / (4 * block_threads)), 1, 1), then acc[i] += float(x[i]), one
/// f32 addition each, element by element (x may be acc). flaw=perturb adds
/// 0.5 to acc[0].
int launchAccumulate(const Module &m, const LaunchShape &l, void **params,
                     int device) {
  int64_t v[11];
  readValues(params, v);
  const int64_t n = v[10];
  if (n <= 0)
    return reject("accumulate: n must be positive, got " + std::to_string(n));
  const int64_t perBlock = 4 * m.blockThreads;
  if (int r = checkShape(m, l, (n + perBlock - 1) / perBlock, 1, 1,
                         "n=" + std::to_string(n), device))
    return r;
  const FlatArg args[2] = {{"x", n, m.dtype == "f32" ? 4u : 2u}, {"acc", n, 4}};
  void *ptrs[2];
  for (int t = 0; t < 2; ++t)
    if (int r = checkDescriptor(v + 5 * t, args[t], device, &ptrs[t]))
      return r;
  auto *acc = static_cast<float *>(ptrs[1]);
  for (int64_t i = 0; i < n; ++i) {
    acc[i] += static_cast<float>(loadElem(ptrs[0], i, m.dtype));
  }
  if (m.perturb)
    acc[0] += 0.5f;
  return kSuccess;
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
  if (m->backward)
    // Each function its own copy: attributes (the opt-in of shared memory)
    // are per function. `omit=STAGE` leaves one out.
    for (const char *stage : {"prep", "dkdv", "dq"}) {
      if (m->keys["omit"] == stage)
        continue;
      auto *f = new Module(*m);
      f->functions.clear();
      f->stage = stage;
      f->parent = m;
      m->functions.push_back(f);
    }
  *module = m;
  return kSuccess;
}

void unloadModule(Module *module) {
  for (Module *f : module->functions)
    delete f;
  delete module;
  logLine("module unloaded");
}

int getFunction(Module *module, const char *name, Module **function) {
  if (!module)
    return kInvalidHandle;
  if (module->backward) {
    for (Module *f : module->functions)
      if (module->kernel + "_" + f->stage == name) {
        *function = f;
        return kSuccess;
      }
    return kNotFound;
  }
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

/// A kind=probe module knows no ABI: it logs its launch and its `params=N`
/// 8-byte parameters, and stores the sum of parameters 1..N-1 (int64) at
/// parameter 0, a device pointer into a live allocation of 8 bytes or more.
int launchProbe(const Module &m, const LaunchShape &l, void **params,
                int device) {
  const int64_t n = std::strtoll(m.keys.at("params").c_str(), nullptr, 10);
  std::string values;
  int64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = 0;
    std::memcpy(&v, params[i], 8);
    values += (i ? "," : "") + std::to_string(v);
    if (i > 0)
      sum += v;
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "probe kernel=%s grid=%u,%u,%u block=%u,%u,%u shared=%u "
                "device=%d params=",
                m.kernel.c_str(), l.gx, l.gy, l.gz, l.bx, l.by, l.bz, l.shared,
                device);
  logLine(buf + values);
  int64_t first = 0;
  std::memcpy(&first, params[0], 8);
  void *out = reinterpret_cast<void *>(static_cast<uintptr_t>(first));
  const Allocation *a = findAllocation(out, 8);
  if (!a || a->device != device)
    return reject("probe: parameter 0 is not a device pointer to 8 bytes");
  std::memcpy(out, &sum, 8);
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
  if (m.parent)
    return launchBackward(m, {gx, gy, gz, bx, by, bz, shared}, params, device);
  if (m.kind == "merge")
    return launchMerge(m, {gx, gy, gz, bx, by, bz, shared}, params, device);
  if (m.kind == "acc")
    return launchAccumulate(m, {gx, gy, gz, bx, by, bz, shared}, params,
                            device);
  if (m.kind == "probe")
    return launchProbe(m, {gx, gy, gz, bx, by, bz, shared}, params, device);
  // The flat ABI (gpu-flat-v1, 28 parameters) or, with operands=strided,
  // today's kernels' (a descriptor of each tensor's rank: 56).
  const bool strided =
      m.keys.count("operands") && m.keys.at("operands") == "strided";
  std::vector<int64_t> v;
  rt::ReferenceConfig cfg;
  if (int r = readParams(m, params, v, strided ? 56 : 28, &cfg))
    return r;
  const int64_t b = cfg.b, sq = cfg.sq, sk = cfg.sk;
  LaunchShape got{gx, gy, gz, bx, by, bz, shared};
  if (int r = checkShape(m, got, (sq + m.blockM - 1) / m.blockM, cfg.hq, b,
                         attentionProblem(cfg), device))
    return r;
  size_t elem = m.dtype == "f32" ? 4 : 2;
  const char *names[5] = {"q", "k", "v", "o", "lse"};
  const std::vector<int64_t> shapes[5] = {{b, cfg.hq, sq, cfg.d},
                                          {b, cfg.hk, sk, cfg.d},
                                          {b, cfg.hk, sk, cfg.dv},
                                          {b, cfg.hq, sq, cfg.dv},
                                          {b, cfg.hq, sq}};
  TensorArg args[5];
  const int64_t *d = v.data();
  for (int t = 0; t < 5; ++t)
    if (int r = readTensor(d, strided, names[t], shapes[t], t == 4 ? 4 : elem,
                           device, &args[t]))
      return r;
  std::vector<double> in[3];
  for (int t = 0; t < 3; ++t)
    in[t] = loadAll(args[t], m.dtype);
  rt::ReferenceForward ref;
  std::string err;
  if (!rt::referenceForward(cfg, in[0], in[1], in[2], &ref, &err))
    return reject("reference: " + err);
  if (m.perturb && !ref.o.empty())
    ref.o[0] += 0.5;
  for (int64_t i = 0; i < args[3].count(); ++i)
    storeAt(args[3], i, m.dtype, ref.o[i]);
  for (int64_t i = 0; i < args[4].count(); ++i)
    storeAt(args[4], i, "f32", ref.lse[i]);
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
  // 256-byte aligned, as cuMemAlloc and hipMalloc give.
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
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

int fill32(void *dst, unsigned value, size_t count) {
  if (!findAllocation(dst, count * sizeof(unsigned)))
    return kInvalidValue;
  auto *words = static_cast<unsigned char *>(dst);
  for (size_t i = 0; i < count; ++i)
    std::memcpy(words + i * sizeof(unsigned), &value, sizeof(unsigned));
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

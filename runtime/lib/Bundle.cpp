//===- Bundle.cpp - FMHA bundle files: metadata and binary ----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Bundle.h"

#include "Util.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

namespace fmha::rt {

using detail::quote;

namespace {

constexpr std::string_view kMagicPrefix = "FMHA-BUNDLE ";

/// Every key, in the order the writer prints them.
constexpr const char *kKeys[] = {"target",
                                 "chip",
                                 "kind",
                                 "deterministic",
                                 "dtype",
                                 "hq",
                                 "hk",
                                 "d",
                                 "dv",
                                 "mask",
                                 "scale",
                                 "softcap",
                                 "sinks",
                                 "varlen",
                                 "page_size",
                                 "block_m",
                                 "block_n",
                                 "block_threads",
                                 "shared_bytes",
                                 "kernel",
                                 "abi",
                                 "index_bits",
                                 "binary_format",
                                 "binary_size"};

/// Keys a cpu bundle may leave out (absent means 0); GPU bundles need them.
bool isGpuOnlyKey(std::string_view key) {
  return key == "block_threads" || key == "shared_bytes";
}

/// Keys every bundle may leave out (absent: deterministic=0, index_bits=64,
/// sinks=0, varlen=0, page_size=0).
bool isOptionalKey(std::string_view key) {
  return key == "deterministic" || key == "index_bits" || key == "sinks" ||
         key == "varlen" || key == "page_size";
}

std::string formatFloat(float f) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f));
  return buf;
}

bool isIdentifier(std::string_view s) {
  if (s.empty())
    return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0))
      return false;
  }
  return true;
}

bool isChipName(std::string_view s) {
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
              c == ':' || c == '+';
    if (!ok)
      return false;
  }
  return true;
}

/// The largest head count, head dim or block size a bundle may state; keeps
/// every product of two of them far from overflow.
constexpr int64_t kMaxDim = INT32_MAX;

} // namespace

const char *toString(Target t) {
  switch (t) {
  case Target::Cpu:
    return "cpu";
  case Target::Cuda:
    return "cuda";
  case Target::Hip:
    return "hip";
  }
  return "?";
}

const char *toString(KernelKind k) {
  switch (k) {
  case KernelKind::Forward:
    return "fwd";
  case KernelKind::Backward:
    return "bwd";
  case KernelKind::Merge:
    return "merge";
  case KernelKind::Accumulate:
    return "acc";
  }
  return "?";
}

const char *toString(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

const char *toString(BinaryFormat f) {
  switch (f) {
  case BinaryFormat::ElfSo:
    return "elf-so";
  case BinaryFormat::Cubin:
    return "cubin";
  case BinaryFormat::Ptx:
    return "ptx";
  case BinaryFormat::Hsaco:
    return "hsaco";
  }
  return "?";
}

std::optional<Target> parseTarget(std::string_view s) {
  if (s == "cpu")
    return Target::Cpu;
  if (s == "cuda")
    return Target::Cuda;
  if (s == "hip")
    return Target::Hip;
  return std::nullopt;
}

std::optional<KernelKind> parseKernelKind(std::string_view s) {
  if (s == "fwd")
    return KernelKind::Forward;
  if (s == "bwd")
    return KernelKind::Backward;
  if (s == "merge")
    return KernelKind::Merge;
  if (s == "acc")
    return KernelKind::Accumulate;
  return std::nullopt;
}

std::optional<DType> parseDType(std::string_view s) {
  if (s == "f32")
    return DType::F32;
  if (s == "f16")
    return DType::F16;
  if (s == "bf16")
    return DType::BF16;
  return std::nullopt;
}

std::optional<BinaryFormat> parseBinaryFormat(std::string_view s) {
  if (s == "elf-so")
    return BinaryFormat::ElfSo;
  if (s == "cubin")
    return BinaryFormat::Cubin;
  if (s == "ptx")
    return BinaryFormat::Ptx;
  if (s == "hsaco")
    return BinaryFormat::Hsaco;
  return std::nullopt;
}

size_t dtypeSize(DType t) { return t == DType::F32 ? 4 : 2; }

float BundleMeta::effectiveScale() const {
  if (scale != 0.0f)
    return scale;
  return d > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)))
               : 0.0f;
}

std::string BundleMeta::validate() const {
  struct Dim {
    const char *name;
    int64_t value;
  } dims[] = {{"hq", hq}, {"hk", hk},          {"d", d},
              {"dv", dv}, {"block_m", blockM}, {"block_n", blockN}};
  for (const Dim &dim : dims) {
    if (dim.value <= 0)
      return std::string(dim.name) + " must be positive, got " +
             std::to_string(dim.value);
    if (dim.value > kMaxDim)
      return std::string(dim.name) +
             " is too large: " + std::to_string(dim.value);
  }
  if (hq % hk != 0)
    return "hq (" + std::to_string(hq) + ") must be a multiple of hk (" +
           std::to_string(hk) + ")";
  std::string maskErr = mask.validate();
  if (!maskErr.empty())
    return "invalid mask: " + maskErr;
  if (!std::isfinite(scale))
    return "scale must be finite";
  if (!std::isfinite(softcap) || softcap < 0.0f)
    return "softcap must be finite and non-negative (0 = none), got " +
           formatFloat(softcap);
  if (!isIdentifier(kernel))
    return "kernel name " + quote(kernel) + " is not a C identifier";
  if (!isChipName(chip))
    return "chip name " + quote(chip) +
           " has characters other than "
           "[A-Za-z0-9_.:+-]";
  if (target != Target::Cpu && chip.empty())
    return std::string("target ") + toString(target) + " needs a chip";
  bool gpu = target != Target::Cpu;
  if (abi == kAbiManifest) {
    std::string problem = manifest.validate();
    if (!problem.empty())
      return "manifest: " + problem;
    if (gpu != (manifest.call == Manifest::Call::Gpu))
      return std::string("target ") + toString(target) +
             " needs a manifest of call " + (gpu ? "gpu" : "ciface");
  } else if (abi != kAbiMemrefCifaceV1 && abi != kAbiGpuFlatV1 &&
             abi != kAbiGpuBwdV1 && abi != kAbiGpuMergeV1 &&
             abi != kAbiGpuAccV1)
    return "unknown abi " + quote(abi) + " (version-1 bundles take " +
           kAbiMemrefCifaceV1 + ", " + kAbiGpuFlatV1 + ", " + kAbiGpuBwdV1 +
           ", " + kAbiGpuMergeV1 + " or " + kAbiGpuAccV1 + ")";
  const bool v1 = abi != kAbiManifest;
  if (v1 && gpu) {
    const char *want = kind == KernelKind::Backward     ? kAbiGpuBwdV1
                       : kind == KernelKind::Merge      ? kAbiGpuMergeV1
                       : kind == KernelKind::Accumulate ? kAbiGpuAccV1
                                                        : kAbiGpuFlatV1;
    if (abi != want)
      return std::string("target ") + toString(target) + " kind " +
             toString(kind) + " needs abi " + want + ", got " + abi;
  }
  if (v1 && !gpu && abi != kAbiMemrefCifaceV1)
    return std::string("target cpu needs abi ") + kAbiMemrefCifaceV1 +
           ", got " + abi;
  if (blockThreads < 0 || blockThreads > kMaxBlockThreads ||
      (v1 && gpu && blockThreads == 0))
    return "block_threads must be in 1.." + std::to_string(kMaxBlockThreads) +
           (gpu ? "" : " (or 0 for cpu)") + ", got " +
           std::to_string(blockThreads);
  if (sharedBytes < 0)
    return "shared_bytes must be non-negative, got " +
           std::to_string(sharedBytes);
  if (sharedBytes > kMaxDim)
    return "shared_bytes is too large: " + std::to_string(sharedBytes);
  bool formatOk = false;
  const char *expected = "";
  switch (target) {
  case Target::Cpu:
    formatOk = binaryFormat == BinaryFormat::ElfSo;
    expected = "elf-so";
    break;
  case Target::Cuda:
    formatOk = binaryFormat == BinaryFormat::Cubin ||
               binaryFormat == BinaryFormat::Ptx;
    expected = "cubin or ptx";
    break;
  case Target::Hip:
    formatOk = binaryFormat == BinaryFormat::Hsaco;
    expected = "hsaco";
    break;
  }
  if (!formatOk)
    return std::string("target ") + toString(target) + " needs binary_format " +
           expected + ", got " + toString(binaryFormat);
  if (deterministic && kind != KernelKind::Backward)
    return "deterministic=1 is only valid for a backward kernel (kind=bwd), "
           "got kind=" +
           std::string(toString(kind));
  if (sinks && kind != KernelKind::Forward && kind != KernelKind::Backward)
    return "sinks=1 is only valid for an attention kernel (kind=fwd or bwd), "
           "got kind=" +
           std::string(toString(kind));
  if (sinks && formatVersion == 1)
    return "sinks=1 needs a version-2 bundle (a manifest naming the sinks "
           "operand)";
  if (varlen && kind != KernelKind::Forward)
    return "varlen=1 is only valid for a forward kernel (kind=fwd), got "
           "kind=" +
           std::string(toString(kind));
  if (varlen && formatVersion == 1)
    return "varlen=1 needs a version-2 bundle (a manifest naming the "
           "cu_seqlens operands)";
  if (pageSize < 0 || pageSize > kMaxDim)
    return "page_size must be 0 (contiguous K/V) or a page's tokens up to " +
           std::to_string(kMaxDim) + ", got " + std::to_string(pageSize);
  if (pageSize && kind != KernelKind::Forward)
    return "page_size is only valid for a forward kernel (kind=fwd), got "
           "kind=" +
           std::string(toString(kind));
  if (pageSize && formatVersion == 1)
    return "page_size needs a version-2 bundle (a manifest naming the "
           "block_table and seqlens_k operands)";
  if (pageSize && pageSize % blockN != 0 && blockN % pageSize != 0)
    return "page_size (" + std::to_string(pageSize) +
           ") must be a multiple or a divisor of block_n (" +
           std::to_string(blockN) +
           "): a kv tile lies within one page or spans whole pages";
  if (indexBits != 64 && indexBits != 32)
    return "index_bits must be 32 or 64, got " + std::to_string(indexBits);
  if (indexBits == 32 && target == Target::Cpu)
    return "index_bits=32 is only valid for a GPU target, got target=cpu";
  if (kind == KernelKind::Merge) {
    if (hk != hq || d != dv)
      return "a merge kernel (kind=merge) needs hk = hq and d = dv, got hq=" +
             std::to_string(hq) + " hk=" + std::to_string(hk) +
             " d=" + std::to_string(d) + " dv=" + std::to_string(dv);
    if (!mask.isNone() || scale != 0.0f || softcap != 0.0f)
      return "a merge kernel (kind=merge) needs mask=0, scale=0 and "
             "softcap=0";
  }
  if (kind == KernelKind::Accumulate &&
      (hq != 1 || hk != 1 || d != 1 || dv != 1 || !mask.isNone() ||
       scale != 0.0f || softcap != 0.0f))
    return "an accumulate kernel (kind=acc) needs hq=1, hk=1, d=1, dv=1, "
           "mask=0, scale=0 and softcap=0";
  if (v1 && gpu && kind == KernelKind::Merge && blockThreads % 32 != 0)
    return "gpu-merge-v1 needs block_threads a multiple of 32, got " +
           std::to_string(blockThreads);
  return {};
}

bool serializeBundle(const BundleMeta &meta, std::string_view binary,
                     std::string *out, std::string *err, int version) {
  BundleMeta m = meta;
  if (version != 1 && version != kBundleVersion) {
    *err = "cannot write bundle version " + std::to_string(version);
    return false;
  }
  if (version == kBundleVersion && m.abi != kAbiManifest) {
    // A meta of a version-1 abi: its launch rule as a manifest.
    std::string problem = m.validate();
    if (!problem.empty()) {
      *err = problem;
      return false;
    }
    m.manifest = legacyManifest(m);
    m.abi = kAbiManifest;
  }
  if (version == 1 && m.abi == kAbiManifest) {
    *err = "a version-1 bundle needs a version-1 abi, got " +
           std::string(kAbiManifest);
    return false;
  }
  if (m.abi == kAbiManifest) {
    m.blockThreads = m.manifest.maxBlockThreads();
    m.sharedBytes = m.manifest.maxConstantShared();
  }
  std::string problem = m.validate();
  if (problem.empty() && binary.empty())
    problem = "the binary is empty";
  if (!problem.empty()) {
    *err = problem;
    return false;
  }
  std::string s = std::string(kMagicPrefix) + std::to_string(version) + "\n";
  auto put = [&](const char *key, const std::string &value) {
    s += key;
    s += '=';
    s += value;
    s += '\n';
  };
  put("target", toString(m.target));
  put("chip", m.chip);
  put("kind", toString(m.kind));
  if (m.kind == KernelKind::Backward)
    put("deterministic", m.deterministic ? "1" : "0");
  put("dtype", toString(m.dtype));
  put("hq", std::to_string(m.hq));
  put("hk", std::to_string(m.hk));
  put("d", std::to_string(m.d));
  put("dv", std::to_string(m.dv));
  put("mask", m.mask.str());
  put("scale", formatFloat(m.scale));
  put("softcap", formatFloat(m.softcap));
  if (m.sinks)
    put("sinks", "1");
  if (m.varlen)
    put("varlen", "1");
  if (m.pageSize)
    put("page_size", std::to_string(m.pageSize));
  put("block_m", std::to_string(m.blockM));
  put("block_n", std::to_string(m.blockN));
  if (version == 1) {
    if (m.target != Target::Cpu || m.blockThreads != 0)
      put("block_threads", std::to_string(m.blockThreads));
    if (m.target != Target::Cpu || m.sharedBytes != 0)
      put("shared_bytes", std::to_string(m.sharedBytes));
  }
  put("kernel", m.kernel);
  if (version == 1)
    put("abi", m.abi);
  if (m.indexBits != 64)
    put("index_bits", std::to_string(m.indexBits));
  put("binary_format", toString(m.binaryFormat));
  put("binary_size", std::to_string(binary.size()));
  s += '\n';
  if (version == kBundleVersion) {
    s += m.manifest.str();
    s += '\n';
  }
  s.append(binary.data(), binary.size());
  *out = std::move(s);
  return true;
}

bool writeBundle(const std::string &path, const BundleMeta &meta,
                 const std::string &binary, std::string *err, int version) {
  std::string bytes, problem;
  if (!serializeBundle(meta, binary, &bytes, &problem, version)) {
    *err = "bundle '" + path + "': " + problem;
    return false;
  }
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *err = "bundle '" + path + "': cannot create file: " + std::strerror(errno);
    return false;
  }
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int savedErrno = errno;
  bool closeFailed = std::fclose(f) != 0;
  if (written != bytes.size() || closeFailed) {
    *err = "bundle '" + path + "': cannot write file: " +
           std::strerror(closeFailed ? errno : savedErrno);
    return false;
  }
  return true;
}

bool parseBundle(std::string_view bytes, const std::string &name,
                 BundleMeta *meta, std::string *binary, std::string *err) {
  auto fail = [&](const std::string &problem) {
    *err = detail::printable("bundle '" + name + "': " + problem);
    return false;
  };
  if (bytes.substr(0, kMagicPrefix.size()) != kMagicPrefix)
    return fail("bad magic: not an FMHA bundle (expected 'FMHA-BUNDLE " +
                std::to_string(kBundleVersion) + "' on the first line)");
  size_t firstNl = bytes.find('\n');
  std::string_view versionText = bytes.substr(
      kMagicPrefix.size(),
      firstNl == std::string_view::npos ? 16 : firstNl - kMagicPrefix.size());
  int version = versionText == "1" ? 1 : versionText == "2" ? 2 : 0;
  if (!version || firstNl == std::string_view::npos)
    return fail("unsupported bundle version " + quote(versionText, 16) +
                " (this runtime reads versions " +
                std::to_string(kOldestBundleVersion) + " to " +
                std::to_string(kBundleVersion) +
                "; recompile the bundle with this fmha-compile)");
  // Keys only version 1 has (version 2 carries them in its manifest).
  auto v1Only = [](std::string_view key) {
    return key == "abi" || isGpuOnlyKey(key);
  };

  std::map<std::string, std::string, std::less<>> values;
  size_t pos = firstNl + 1;
  int lineNo = 1;
  while (true) {
    ++lineNo;
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos)
      return fail("truncated header: no empty line ends it");
    std::string_view line = bytes.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty())
      break;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return fail("malformed header line " + std::to_string(lineNo) + ": " +
                  quote(line) + " (expected key=value)");
    std::string_view key = line.substr(0, eq);
    bool known = false;
    for (const char *k : kKeys)
      known |= key == k;
    if (!known || (version != 1 && v1Only(key)))
      return fail("unknown key " + quote(key) + " on line " +
                  std::to_string(lineNo));
    if (!values.emplace(std::string(key), std::string(line.substr(eq + 1)))
             .second)
      return fail("key " + quote(key) + " appears twice");
  }
  // block_threads and shared_bytes may be absent for cpu only; the target is
  // checked below, once it parses.
  for (const char *k : kKeys)
    if (!values.count(k) && !isGpuOnlyKey(k) && !isOptionalKey(k) &&
        !(version != 1 && v1Only(k)))
      return fail(std::string("missing key '") + k + "'");

  auto bad = [&](const char *key, const char *what) {
    return fail(std::string("bad value for '") + key +
                "': " + quote(values[key]) + " (" + what + ")");
  };
  BundleMeta m;
  if (auto t = parseTarget(values["target"]))
    m.target = *t;
  else
    return bad("target", "expected cpu, cuda or hip");
  if (m.target != Target::Cpu && version == 1)
    for (const char *k : {"block_threads", "shared_bytes"})
      if (!values.count(k))
        return fail(std::string("missing key '") + k +
                    "' (required for target " + toString(m.target) + ")");
  m.chip = values["chip"];
  if (!isChipName(m.chip))
    return bad("chip", "expected characters from [A-Za-z0-9_.:+-]");
  if (auto k = parseKernelKind(values["kind"]))
    m.kind = *k;
  else
    return bad("kind", "expected fwd, bwd, merge or acc");
  if (auto t = parseDType(values["dtype"]))
    m.dtype = *t;
  else
    return bad("dtype", "expected f32, f16 or bf16");
  struct IntKey {
    const char *key;
    int64_t *field;
  } ints[] = {{"hq", &m.hq}, {"hk", &m.hk},          {"d", &m.d},
              {"dv", &m.dv}, {"block_m", &m.blockM}, {"block_n", &m.blockN}};
  for (const IntKey &ik : ints) {
    std::optional<int64_t> v = detail::parseInt(values[ik.key]);
    if (!v)
      return bad(ik.key, "expected a decimal integer");
    if (*v <= 0)
      return bad(ik.key, "must be positive");
    *ik.field = *v;
  }
  struct OptionalIntKey {
    const char *key;
    int64_t *field;
  } gpuInts[] = {{"block_threads", &m.blockThreads},
                 {"shared_bytes", &m.sharedBytes}};
  for (const OptionalIntKey &ik : gpuInts) {
    auto it = values.find(ik.key);
    if (it == values.end())
      continue; // cpu: 0
    std::optional<int64_t> v = detail::parseInt(it->second);
    if (!v)
      return bad(ik.key, "expected a decimal integer");
    *ik.field = *v;
  }
  std::string maskErr;
  if (auto mask = MaskSpec::parse(values["mask"], &maskErr))
    m.mask = *mask;
  else
    return fail("bad value for 'mask': " + maskErr);
  struct FloatKey {
    const char *key;
    float *field;
  } floats[] = {{"scale", &m.scale}, {"softcap", &m.softcap}};
  for (const FloatKey &fk : floats) {
    std::optional<double> v = detail::parseFiniteDouble(values[fk.key]);
    if (!v)
      return bad(fk.key, "expected a finite decimal number");
    float f = static_cast<float>(*v);
    if (!std::isfinite(f))
      return bad(fk.key, "out of float range");
    *fk.field = f;
  }
  m.kernel = values["kernel"];
  if (!isIdentifier(m.kernel))
    return bad("kernel", "expected a C identifier");
  m.abi = version == 1 ? values["abi"] : std::string(kAbiManifest);
  if (auto f = parseBinaryFormat(values["binary_format"]))
    m.binaryFormat = *f;
  else
    return bad("binary_format", "expected elf-so, cubin, ptx or hsaco");
  std::optional<int64_t> size = detail::parseInt(values["binary_size"]);
  if (!size || *size < 0)
    return bad("binary_size", "expected a non-negative decimal integer");
  if (*size == 0)
    return bad("binary_size", "the binary is empty");
  if (auto it = values.find("index_bits"); it != values.end()) {
    std::optional<int64_t> bits = detail::parseInt(it->second);
    if (!bits || (*bits != 32 && *bits != 64))
      return bad("index_bits", "expected 32 or 64");
    m.indexBits = *bits;
  }
  if (auto it = values.find("deterministic"); it != values.end()) {
    if (it->second == "1")
      m.deterministic = true;
    else if (it->second != "0")
      return bad("deterministic", "expected 0 or 1");
  }
  if (auto it = values.find("sinks"); it != values.end()) {
    if (it->second == "1")
      m.sinks = true;
    else if (it->second != "0")
      return bad("sinks", "expected 0 or 1");
  }
  if (auto it = values.find("varlen"); it != values.end()) {
    if (it->second == "1")
      m.varlen = true;
    else if (it->second != "0")
      return bad("varlen", "expected 0 or 1");
  }
  if (auto it = values.find("page_size"); it != values.end()) {
    std::optional<int64_t> size = detail::parseInt(it->second);
    if (!size)
      return bad("page_size", "expected a decimal integer");
    m.pageSize = *size;
  }
  m.formatVersion = version;
  if (version == 1 && m.abi == kAbiManifest)
    return bad("abi", "a manifest needs a version-2 bundle");
  if (version == 1) {
    std::string problem = m.validate();
    if (!problem.empty())
      return fail(problem);
    m.manifest = legacyManifest(m);
  } else {
    // The manifest: lines up to the next empty one.
    size_t start = pos;
    int firstLine = lineNo + 1;
    while (true) {
      size_t nl = bytes.find('\n', pos);
      if (nl == std::string_view::npos)
        return fail("truncated manifest: no empty line ends it");
      ++lineNo;
      bool empty = nl == pos;
      pos = nl + 1;
      if (empty)
        break;
    }
    std::string manifestErr;
    if (!Manifest::parse(bytes.substr(start, pos - 1 - start), firstLine,
                         &m.manifest, &manifestErr))
      return fail(manifestErr);
    m.blockThreads = m.manifest.maxBlockThreads();
    m.sharedBytes = m.manifest.maxConstantShared();
  }
  std::string problem = m.validate();
  if (!problem.empty())
    return fail(problem);

  uint64_t remaining = bytes.size() - pos;
  if (static_cast<uint64_t>(*size) > remaining)
    return fail("truncated binary: header says " + std::to_string(*size) +
                " bytes, file has " + std::to_string(remaining));
  if (static_cast<uint64_t>(*size) < remaining)
    return fail("trailing data: header says " + std::to_string(*size) +
                " bytes, file has " + std::to_string(remaining));
  *meta = std::move(m);
  binary->assign(bytes.data() + pos, remaining);
  return true;
}

bool readBundle(const std::string &path, BundleMeta *meta, std::string *binary,
                std::string *err) {
  std::string bytes, problem;
  if (!detail::readFile(path, &bytes, &problem)) {
    *err = "bundle '" + path + "': " + problem;
    return false;
  }
  return parseBundle(bytes, path, meta, binary, err);
}

} // namespace fmha::rt

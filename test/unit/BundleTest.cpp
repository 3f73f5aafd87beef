//===- BundleTest.cpp - Bundle writing, reading and every error -----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The header keys of a bundle, through the version-1 format (the header
// without a manifest, which this runtime still reads). The version-2 format
// and its manifest: ManifestTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Bundle.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::TempDir;

namespace {

BundleMeta sampleMeta() {
  BundleMeta m;
  m.target = Target::Cuda;
  m.chip = "sm_90a";
  m.kind = KernelKind::Forward;
  m.dtype = DType::BF16;
  m.hq = 32;
  m.hk = 8;
  m.d = 128;
  m.dv = 64;
  m.mask = *MaskSpec::parse("b:128,0,4");
  m.scale = 0.0883883476f;
  m.softcap = 30.0f;
  m.blockM = 128;
  m.blockN = 64;
  m.blockThreads = 256;
  m.sharedBytes = 98304;
  m.kernel = "fmha_fwd_bf16";
  m.abi = kAbiGpuFlatV1;
  m.binaryFormat = BinaryFormat::Cubin;
  return m;
}

const std::string kBinary = std::string("\x7f"
                                        "ELF\0\x01\x02\n\n",
                                        10) +
                            "payload";

std::string sampleBytes() {
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(sampleMeta(), kBinary, &bytes, &err, 1)) << err;
  return bytes;
}

std::string parseError(const std::string &bytes) {
  BundleMeta m;
  std::string bin, err;
  EXPECT_FALSE(parseBundle(bytes, "x.fmha", &m, &bin, &err));
  EXPECT_EQ(err.find('\n'), std::string::npos);
  return err;
}

/// sampleBytes() with the line of `key` replaced by `line` (or removed).
std::string withLine(const std::string &key, const std::string &line) {
  std::string bytes = sampleBytes();
  size_t at = bytes.find("\n" + key + "=") + 1;
  size_t end = bytes.find('\n', at);
  return bytes.substr(0, at) + (line.empty() ? "" : line + "\n") +
         bytes.substr(end + 1);
}

TEST(Bundle, SerializedForm) {
  EXPECT_EQ(sampleBytes(), "FMHA-BUNDLE 1\n"
                           "target=cuda\n"
                           "chip=sm_90a\n"
                           "kind=fwd\n"
                           "dtype=bf16\n"
                           "hq=32\n"
                           "hk=8\n"
                           "d=128\n"
                           "dv=64\n"
                           "mask=b:128,0,4\n"
                           "scale=0.0883883461\n"
                           "softcap=30\n"
                           "block_m=128\n"
                           "block_n=64\n"
                           "block_threads=256\n"
                           "shared_bytes=98304\n"
                           "kernel=fmha_fwd_bf16\n"
                           "abi=gpu-flat-v1\n"
                           "binary_format=cubin\n"
                           "binary_size=17\n"
                           "\n" +
                               kBinary);
}

TEST(Bundle, FileRoundTrip) {
  TempDir dir;
  std::string path = dir.file("a.fmha"), err;
  BundleMeta in = sampleMeta();
  ASSERT_TRUE(writeBundle(path, in, kBinary, &err, 1)) << err;
  BundleMeta out;
  std::string binary;
  ASSERT_TRUE(readBundle(path, &out, &binary, &err)) << err;
  EXPECT_EQ(binary, kBinary);
  EXPECT_EQ(out.target, in.target);
  EXPECT_EQ(out.chip, in.chip);
  EXPECT_EQ(out.kind, in.kind);
  EXPECT_EQ(out.dtype, in.dtype);
  EXPECT_EQ(out.hq, in.hq);
  EXPECT_EQ(out.hk, in.hk);
  EXPECT_EQ(out.d, in.d);
  EXPECT_EQ(out.dv, in.dv);
  EXPECT_EQ(out.mask, in.mask);
  EXPECT_EQ(out.scale, in.scale); // %.9g round-trips every float
  EXPECT_EQ(out.softcap, in.softcap);
  EXPECT_EQ(out.blockM, in.blockM);
  EXPECT_EQ(out.blockN, in.blockN);
  EXPECT_EQ(out.blockThreads, in.blockThreads);
  EXPECT_EQ(out.sharedBytes, in.sharedBytes);
  EXPECT_EQ(out.kernel, in.kernel);
  EXPECT_EQ(out.abi, in.abi);
  EXPECT_EQ(out.binaryFormat, in.binaryFormat);
}

TEST(Bundle, CpuWithEmptyChipAndDefaultScale) {
  BundleMeta m = fmha::test::testMeta("k", DType::F32, 4, 4, 64, 64, "t");
  std::string bytes, err;
  ASSERT_TRUE(serializeBundle(m, kBinary, &bytes, &err, 1)) << err;
  EXPECT_NE(bytes.find("\nchip=\n"), std::string::npos);
  EXPECT_NE(bytes.find("\nscale=0\n"), std::string::npos);
  BundleMeta out;
  std::string bin;
  ASSERT_TRUE(parseBundle(bytes, "m", &out, &bin, &err)) << err;
  EXPECT_EQ(out.chip, "");
  EXPECT_EQ(out.effectiveScale(), 0.125f);
}

TEST(Bundle, StructuralErrors) {
  std::string bytes = sampleBytes();
  EXPECT_EQ(parseError(""), "bundle 'x.fmha': bad magic: not an FMHA bundle "
                            "(expected 'FMHA-BUNDLE 2' on the first line)");
  EXPECT_EQ(parseError("\x7f"
                       "ELF..."),
            "bundle 'x.fmha': bad magic: not an FMHA bundle (expected "
            "'FMHA-BUNDLE 2' on the first line)");
  EXPECT_EQ(parseError("FMHA-BUNDLE 3\n" + bytes.substr(14)),
            "bundle 'x.fmha': unsupported bundle version '3' (this runtime "
            "reads versions 1 to 2; recompile the bundle with this "
            "fmha-compile)");
  EXPECT_EQ(parseError("FMHA-BUNDLE 0\n" + bytes.substr(14)),
            "bundle 'x.fmha': unsupported bundle version '0' (this runtime "
            "reads versions 1 to 2; recompile the bundle with this "
            "fmha-compile)");
  EXPECT_EQ(parseError(bytes.substr(0, 30)),
            "bundle 'x.fmha': truncated header: no empty line ends it");
  size_t headerEnd = bytes.find("\n\n") + 2;
  EXPECT_EQ(parseError(bytes.substr(0, bytes.size() - 7)),
            "bundle 'x.fmha': truncated binary: header says 17 bytes, file "
            "has 10");
  EXPECT_EQ(parseError(bytes.substr(0, headerEnd)),
            "bundle 'x.fmha': truncated binary: header says 17 bytes, file "
            "has 0");
  EXPECT_EQ(parseError(bytes + "++"),
            "bundle 'x.fmha': trailing data: header says 17 bytes, file has "
            "19");
  EXPECT_EQ(parseError(withLine("dtype", "dtype")),
            "bundle 'x.fmha': malformed header line 5: 'dtype' (expected "
            "key=value)");
  EXPECT_EQ(parseError(withLine("dtype", "=f32")),
            "bundle 'x.fmha': malformed header line 5: '=f32' (expected "
            "key=value)");
  EXPECT_EQ(parseError(withLine("dtype", "dtype=bf16\nflavour=mint")),
            "bundle 'x.fmha': unknown key 'flavour' on line 6");
  EXPECT_EQ(parseError(withLine("dtype", "dtype=bf16\ndtype=f32")),
            "bundle 'x.fmha': key 'dtype' appears twice");
  EXPECT_EQ(parseError(withLine("dtype", "dtype=bf16\npage_size=16k")),
            "bundle 'x.fmha': bad value for 'page_size': '16k' (expected a "
            "decimal integer)");
  EXPECT_EQ(parseError(withLine("hq", "hq=32\x01")),
            "bundle 'x.fmha': bad value for 'hq': '32\\x01' (expected a "
            "decimal integer)");
}

TEST(Bundle, EveryMissingKey) {
  for (const char *key :
       {"target", "chip", "kind", "dtype", "hq", "hk", "d", "dv", "mask",
        "scale", "softcap", "block_m", "block_n", "kernel", "abi",
        "binary_format", "binary_size"}) {
    EXPECT_EQ(parseError(withLine(key, "")),
              std::string("bundle 'x.fmha': missing key '") + key + "'");
  }
  // GPU targets need the launch keys.
  for (const char *key : {"block_threads", "shared_bytes"})
    EXPECT_EQ(parseError(withLine(key, "")),
              std::string("bundle 'x.fmha': missing key '") + key +
                  "' (required for target cuda)");
}

TEST(Bundle, CpuLaunchKeysAreOptional) {
  BundleMeta m = fmha::test::testMeta("k", DType::F32, 4, 4, 64, 64, "t");
  std::string bytes, err;
  ASSERT_TRUE(serializeBundle(m, kBinary, &bytes, &err, 1)) << err;
  EXPECT_EQ(bytes.find("block_threads"), std::string::npos);
  EXPECT_EQ(bytes.find("shared_bytes"), std::string::npos);
  BundleMeta out;
  std::string bin;
  ASSERT_TRUE(parseBundle(bytes, "m", &out, &bin, &err)) << err;
  EXPECT_EQ(out.blockThreads, 0);
  EXPECT_EQ(out.sharedBytes, 0);
  // Present with values in range: kept (and written back).
  size_t at = bytes.find("kernel=");
  std::string withKeys = bytes.substr(0, at) +
                         "block_threads=0\nshared_bytes=16\n" +
                         bytes.substr(at);
  ASSERT_TRUE(parseBundle(withKeys, "m", &out, &bin, &err)) << err;
  EXPECT_EQ(out.sharedBytes, 16);
  ASSERT_TRUE(serializeBundle(out, kBinary, &bytes, &err, 1)) << err;
  EXPECT_NE(bytes.find("\nshared_bytes=16\n"), std::string::npos);
  EXPECT_EQ(bytes.find("block_threads"), std::string::npos);
  std::string bad =
      bytes.substr(0, at) + "block_threads=2000\n" + bytes.substr(at);
  EXPECT_EQ(parseError(bad), "bundle 'x.fmha': block_threads must be in "
                             "1..1024 (or 0 for cpu), got 2000");
}

TEST(Bundle, DeterministicKey) {
  // Forward bundles do not print it; absent means 0.
  EXPECT_EQ(sampleBytes().find("deterministic"), std::string::npos);
  BundleMeta m;
  std::string bin, err;
  ASSERT_TRUE(parseBundle(sampleBytes(), "x", &m, &bin, &err)) << err;
  EXPECT_FALSE(m.deterministic);

  // Backward bundles print it (0 or 1) after kind, and it round-trips.
  BundleMeta bwd = sampleMeta();
  bwd.kind = KernelKind::Backward;
  if (bwd.target != Target::Cpu)
    bwd.abi = kAbiGpuBwdV1;
  for (bool det : {false, true}) {
    bwd.deterministic = det;
    std::string bytes;
    ASSERT_TRUE(serializeBundle(bwd, kBinary, &bytes, &err, 1)) << err;
    std::string line = std::string("\nkind=bwd\ndeterministic=") +
                       (det ? "1" : "0") + "\ndtype=";
    EXPECT_NE(bytes.find(line), std::string::npos) << bytes;
    ASSERT_TRUE(parseBundle(bytes, "x", &m, &bin, &err)) << err;
    EXPECT_EQ(m.kind, KernelKind::Backward);
    EXPECT_EQ(m.deterministic, det);
  }
  // A bwd bundle without the key (an older writer) parses as 0.
  std::string bytes;
  bwd.deterministic = true;
  ASSERT_TRUE(serializeBundle(bwd, kBinary, &bytes, &err, 1)) << err;
  const std::string detLine = "deterministic=1\n";
  size_t at = bytes.find(detLine);
  ASSERT_NE(at, std::string::npos);
  std::string before = bytes.substr(0, at);
  std::string after = bytes.substr(at + detLine.size());
  ASSERT_TRUE(parseBundle(before + after, "x", &m, &bin, &err)) << err;
  EXPECT_FALSE(m.deterministic);
  // Anything but 0 or 1 is rejected; so is a repeat.
  for (const char *value : {"2", "true", "", "01", " 1"})
    EXPECT_EQ(parseError(before + "deterministic=" + value + "\n" + after),
              std::string("bundle 'x.fmha': bad value for 'deterministic': '") +
                  value + "' (expected 0 or 1)");
  EXPECT_EQ(parseError(before + "deterministic=0\n" + detLine + after),
            "bundle 'x.fmha': key 'deterministic' appears twice");
  // deterministic=1 is for backward kernels only, in the reader and writer.
  std::string fwd = sampleBytes();
  size_t end = fwd.find("\n\n") + 1;
  EXPECT_EQ(
      parseError(fwd.substr(0, end) + "deterministic=1\n" + fwd.substr(end)),
      "bundle 'x.fmha': deterministic=1 is only valid for a backward "
      "kernel (kind=bwd), got kind=fwd");
  ASSERT_TRUE(
      parseBundle(fwd.substr(0, end) + "deterministic=0\n" + fwd.substr(end),
                  "x", &m, &bin, &err))
      << err;
  EXPECT_FALSE(m.deterministic);
  BundleMeta bad = sampleMeta();
  bad.deterministic = true;
  EXPECT_EQ(bad.validate(), "deterministic=1 is only valid for a backward "
                            "kernel (kind=bwd), got kind=fwd");
  EXPECT_FALSE(serializeBundle(bad, kBinary, &bytes, &err, 1));
}

TEST(Bundle, IndexBitsKey) {
  // 64 is not printed (absent means 64); 32 is, after abi, and round-trips.
  EXPECT_EQ(sampleBytes().find("index_bits"), std::string::npos);
  BundleMeta m;
  std::string bin, err, bytes;
  ASSERT_TRUE(parseBundle(sampleBytes(), "x", &m, &bin, &err)) << err;
  EXPECT_EQ(m.indexBits, 64);
  BundleMeta narrow = sampleMeta();
  narrow.indexBits = 32;
  ASSERT_TRUE(serializeBundle(narrow, kBinary, &bytes, &err, 1)) << err;
  EXPECT_NE(
      bytes.find("\nabi=" + narrow.abi + "\nindex_bits=32\nbinary_format="),
      std::string::npos)
      << bytes;
  ASSERT_TRUE(parseBundle(bytes, "x", &m, &bin, &err)) << err;
  EXPECT_EQ(m.indexBits, 32);
  // An explicit 64 parses; anything but 32 or 64 is rejected, as is a repeat.
  const std::string line = "index_bits=32\n";
  size_t at = bytes.find(line);
  ASSERT_NE(at, std::string::npos);
  std::string before = bytes.substr(0, at);
  std::string after = bytes.substr(at + line.size());
  ASSERT_TRUE(
      parseBundle(before + "index_bits=64\n" + after, "x", &m, &bin, &err))
      << err;
  EXPECT_EQ(m.indexBits, 64);
  for (const char *value : {"16", "0", "", "32 ", "x"})
    EXPECT_EQ(parseError(before + "index_bits=" + value + "\n" + after),
              std::string("bundle 'x.fmha': bad value for 'index_bits': '") +
                  value + "' (expected 32 or 64)");
  EXPECT_EQ(parseError(before + line + line + after),
            "bundle 'x.fmha': key 'index_bits' appears twice");
  // 32-bit indices are for GPU kernels only, in the writer and the reader.
  BundleMeta cpu = sampleMeta();
  cpu.target = Target::Cpu;
  cpu.abi = kAbiMemrefCifaceV1;
  cpu.binaryFormat = BinaryFormat::ElfSo;
  cpu.blockThreads = cpu.sharedBytes = 0;
  cpu.indexBits = 32;
  EXPECT_EQ(cpu.validate(),
            "index_bits=32 is only valid for a GPU target, got target=cpu");
  EXPECT_FALSE(serializeBundle(cpu, kBinary, &bytes, &err, 1));
  BundleMeta odd = sampleMeta();
  odd.indexBits = 48;
  EXPECT_EQ(odd.validate(), "index_bits must be 32 or 64, got 48");
}

TEST(Bundle, GpuLaunchKeysAndAbi) {
  struct Case {
    const char *key, *line, *message;
  } cases[] = {
      {"block_threads", "block_threads=0",
       "block_threads must be in 1..1024, got 0"},
      {"block_threads", "block_threads=1025",
       "block_threads must be in 1..1024, got 1025"},
      {"block_threads", "block_threads=-32",
       "block_threads must be in 1..1024, got -32"},
      {"block_threads", "block_threads=12a",
       "bad value for 'block_threads': '12a' (expected a decimal integer)"},
      {"shared_bytes", "shared_bytes=-1",
       "shared_bytes must be non-negative, got -1"},
      {"shared_bytes", "shared_bytes=4294967296",
       "shared_bytes is too large: 4294967296"},
      {"shared_bytes", "shared_bytes=",
       "bad value for 'shared_bytes': '' (expected a decimal integer)"},
      {"abi", "abi=memref-ciface-v1",
       "target cuda kind fwd needs abi gpu-flat-v1, got memref-ciface-v1"},
      {"abi", "abi=gpu-flat-v2",
       "unknown abi 'gpu-flat-v2' (version-1 bundles take memref-ciface-v1, "
       "gpu-flat-v1, gpu-bwd-v1, gpu-merge-v1 or gpu-acc-v1)"},
      {"abi", "abi=manifest",
       "bad value for 'abi': 'manifest' (a manifest needs a version-2 "
       "bundle)"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(parseError(withLine(c.key, c.line)),
              std::string("bundle 'x.fmha': ") + c.message)
        << c.line;
  // Edge values that are fine.
  for (const char *line : {"block_threads=1", "block_threads=1024"}) {
    BundleMeta m;
    std::string bin, err;
    EXPECT_TRUE(
        parseBundle(withLine("block_threads", line), "x", &m, &bin, &err))
        << err;
  }
  BundleMeta m;
  std::string bin, err;
  ASSERT_TRUE(parseBundle(withLine("shared_bytes", "shared_bytes=0"), "x", &m,
                          &bin, &err))
      << err;
  EXPECT_EQ(m.sharedBytes, 0);
  // hip takes gpu-flat-v1 too; cpu does not.
  std::string hip = withLine("target", "target=hip");
  hip = hip.substr(0, hip.find("binary_format=")) + "binary_format=hsaco" +
        hip.substr(hip.find("\n", hip.find("binary_format=")));
  EXPECT_TRUE(parseBundle(hip, "x", &m, &bin, &err)) << err;
  EXPECT_EQ(m.target, Target::Hip);
  m = sampleMeta();
  m.target = Target::Cpu;
  m.chip = "";
  m.binaryFormat = BinaryFormat::ElfSo;
  EXPECT_EQ(m.validate(),
            "target cpu needs abi memref-ciface-v1, got gpu-flat-v1");
}

TEST(Bundle, HipNeedsHsacoAndGpuFlatV1) {
  BundleMeta m =
      fmha::test::fakeGpuMeta(Target::Hip, DType::F16, 8, 2, 128, 128, "b");
  m.sharedBytes = 32768;
  std::string bytes, err, binary;
  ASSERT_TRUE(serializeBundle(m, kBinary, &bytes, &err, 1)) << err;
  BundleMeta out;
  ASSERT_TRUE(parseBundle(bytes, "h.fmha", &out, &binary, &err)) << err;
  EXPECT_EQ(out.target, Target::Hip);
  EXPECT_EQ(out.chip, "gfx942");
  EXPECT_EQ(out.binaryFormat, BinaryFormat::Hsaco);
  EXPECT_EQ(out.abi, kAbiGpuFlatV1);
  EXPECT_EQ(out.blockThreads, 256);
  EXPECT_EQ(out.sharedBytes, 32768);

  BundleMeta bad = m;
  bad.binaryFormat = BinaryFormat::Ptx;
  EXPECT_EQ(bad.validate(), "target hip needs binary_format hsaco, got ptx");
  bad = m;
  bad.abi = kAbiMemrefCifaceV1;
  EXPECT_EQ(bad.validate(),
            "target hip kind fwd needs abi gpu-flat-v1, got memref-ciface-v1");
  bad = m;
  bad.chip = "";
  EXPECT_EQ(bad.validate(), "target hip needs a chip");
  bad = m;
  bad.blockThreads = 0;
  EXPECT_EQ(bad.validate(), "block_threads must be in 1..1024, got 0");
}

TEST(Bundle, BadValues) {
  struct Case {
    const char *key, *line, *message;
  } cases[] = {
      {"target", "target=gpu",
       "bad value for 'target': 'gpu' (expected cpu, cuda or hip)"},
      {"chip", "chip=sm 90",
       "bad value for 'chip': 'sm 90' (expected characters from "
       "[A-Za-z0-9_.:+-])"},
      {"kind", "kind=forward",
       "bad value for 'kind': 'forward' (expected fwd, "
       "bwd, merge or acc)"},
      {"dtype", "dtype=f64",
       "bad value for 'dtype': 'f64' (expected f32, f16 or bf16)"},
      {"hq", "hq=abc",
       "bad value for 'hq': 'abc' (expected a decimal integer)"},
      {"hq", "hq=+32",
       "bad value for 'hq': '+32' (expected a decimal integer)"},
      {"hq", "hq= 32",
       "bad value for 'hq': ' 32' (expected a decimal integer)"},
      {"hk", "hk=0", "bad value for 'hk': '0' (must be positive)"},
      {"d", "d=-64", "bad value for 'd': '-64' (must be positive)"},
      {"dv", "dv=99999999999999999999",
       "bad value for 'dv': '99999999999999999999' (expected a decimal "
       "integer)"},
      {"dv", "dv=4294967296", "dv is too large: 4294967296"},
      {"hk", "hk=5", "hq (32) must be a multiple of hk (5)"},
      {"mask", "mask=causal",
       "bad value for 'mask': unknown mask spec 'causal': expected one of 0, "
       "none, t, b, t:L,R, b:L,R, t:L,R,S, b:L,R,S, xt:W, xb:W"},
      {"mask", "mask=t:1,2,-3",
       "bad value for 'mask': malformed mask spec 't:1,2,-3': sink (S) must "
       "be non-negative, got -3"},
      {"scale", "scale=nan",
       "bad value for 'scale': 'nan' (expected a finite decimal number)"},
      {"scale", "scale=inf",
       "bad value for 'scale': 'inf' (expected a finite decimal number)"},
      {"scale", "scale=0x1p-3",
       "bad value for 'scale': '0x1p-3' (expected a finite decimal number)"},
      {"scale", "scale=1e39",
       "bad value for 'scale': '1e39' (out of float "
       "range)"},
      {"scale", "scale=",
       "bad value for 'scale': '' (expected a finite "
       "decimal number)"},
      {"softcap", "softcap=-1",
       "softcap must be finite and non-negative (0 = none), got -1"},
      {"block_m", "block_m=0",
       "bad value for 'block_m': '0' (must be "
       "positive)"},
      {"kernel", "kernel=fmha fwd",
       "bad value for 'kernel': 'fmha fwd' (expected a C identifier)"},
      {"kernel", "kernel=",
       "bad value for 'kernel': '' (expected a C "
       "identifier)"},
      {"kernel", "kernel=9lives",
       "bad value for 'kernel': '9lives' (expected a C identifier)"},
      {"abi", "abi=memref-ciface-v2",
       "unknown abi 'memref-ciface-v2' (version-1 bundles take "
       "memref-ciface-v1, "
       "gpu-flat-v1, gpu-bwd-v1, gpu-merge-v1 or gpu-acc-v1)"},
      {"abi", "abi=manifest",
       "bad value for 'abi': 'manifest' (a manifest needs a version-2 "
       "bundle)"},
      {"binary_format", "binary_format=elf",
       "bad value for 'binary_format': 'elf' (expected elf-so, cubin, ptx or "
       "hsaco)"},
      {"binary_format", "binary_format=hsaco",
       "target cuda needs binary_format cubin or ptx, got hsaco"},
      {"binary_size", "binary_size=ten",
       "bad value for 'binary_size': 'ten' (expected a non-negative decimal "
       "integer)"},
      {"binary_size", "binary_size=-1",
       "bad value for 'binary_size': '-1' (expected a non-negative decimal "
       "integer)"},
      {"binary_size", "binary_size=0",
       "bad value for 'binary_size': '0' (the binary is empty)"},
      {"chip", "chip=", "target cuda needs a chip"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(parseError(withLine(c.key, c.line)),
              std::string("bundle 'x.fmha': ") + c.message)
        << c.line;
}

TEST(Bundle, WriterRejectsInvalidMeta) {
  TempDir dir;
  std::string err;
  BundleMeta m = sampleMeta();
  m.hk = 3;
  EXPECT_FALSE(writeBundle(dir.file("a.fmha"), m, kBinary, &err, 1));
  EXPECT_EQ(err, "bundle '" + dir.file("a.fmha") +
                     "': hq (32) must be a multiple of hk (3)");
  m = sampleMeta();
  EXPECT_FALSE(writeBundle(dir.file("b.fmha"), m, "", &err, 1));
  EXPECT_EQ(err, "bundle '" + dir.file("b.fmha") + "': the binary is empty");
  m.target = Target::Cpu;
  m.abi = kAbiMemrefCifaceV1;
  EXPECT_FALSE(writeBundle(dir.file("c.fmha"), m, kBinary, &err, 1));
  EXPECT_EQ(err, "bundle '" + dir.file("c.fmha") +
                     "': target cpu needs binary_format elf-so, got cubin");
  EXPECT_FALSE(
      writeBundle("/nonexistent/dir/a.fmha", sampleMeta(), kBinary, &err, 1));
  EXPECT_EQ(err, "bundle '/nonexistent/dir/a.fmha': cannot create file: No "
                 "such file or directory");
  BundleMeta out;
  std::string bin;
  EXPECT_FALSE(readBundle("/nonexistent.fmha", &out, &bin, &err));
  EXPECT_EQ(err, "bundle '/nonexistent.fmha': cannot open file: No such file "
                 "or directory");
}

TEST(Bundle, NeverCrashesOnAnyBytes) {
  // Every prefix, and many random corruptions of the header; the result is
  // either a valid bundle or a one-line error.
  std::string good = sampleBytes();
  for (size_t cut = 0; cut < good.size(); ++cut)
    parseError(good.substr(0, cut));
  std::mt19937 gen(11);
  size_t header = good.find("\n\n") + 2;
  int accepted = 0;
  for (int n = 0; n < 50000; ++n) {
    std::string bytes = good;
    int flips = 1 + gen() % 4;
    for (int f = 0; f < flips; ++f)
      bytes[gen() % header] = static_cast<char>(gen() % 256);
    if (gen() % 4 == 0)
      bytes.insert(gen() % bytes.size(), 1, static_cast<char>(gen() % 256));
    BundleMeta m;
    std::string bin, err;
    if (parseBundle(bytes, "f", &m, &bin, &err)) {
      ++accepted;
      EXPECT_EQ(m.validate(), "");
    } else {
      ASSERT_FALSE(err.empty());
      ASSERT_EQ(err.find('\n'), std::string::npos) << err;
    }
  }
  // Some flips land in values that still parse (digits to digits).
  EXPECT_GT(accepted, 0);
}

} // namespace

//===- ManifestTest.cpp - Launch manifests, version-2 bundles, binding ----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The manifest's expressions (text form, evaluation, every failure), its
// text form and every rejection of the reader, the version-2 bundle around
// it, and the binding of named arguments (bindLaunch, planLaunch) with its
// errors. No backend: the launches themselves are tested over the fake
// drivers (GpuFakeManifestTest.cpp) and on the host (RuntimeTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Bundle.h"
#include "fmha/Runtime/Launch.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace fmha;
using namespace fmha::rt;

namespace {

using Env = std::map<std::string, int64_t, std::less<>>;

int64_t eval(const std::string &text, const Env &env) {
  std::string err;
  std::optional<Expr> e = Expr::parse(text, &err);
  EXPECT_TRUE(e) << err;
  if (!e)
    return -999;
  // The text form parses back to the same expression.
  std::optional<Expr> again = Expr::parse(e->str(), &err);
  EXPECT_TRUE(again && *again == *e) << text << " printed as " << e->str();
  std::optional<int64_t> v = e->evaluate(env, &err);
  EXPECT_TRUE(v) << err;
  return v.value_or(-999);
}

std::string evalError(const std::string &text, const Env &env) {
  std::string err;
  std::optional<Expr> e = Expr::parse(text, &err);
  if (!e)
    return err;
  EXPECT_FALSE(e->evaluate(env, &err));
  return err;
}

TEST(Expr, Evaluates) {
  Env env = {{"b", 3}, {"sq", 129}, {"stride(q,2)", 64}};
  EXPECT_EQ(eval("cdiv(sq,64)", env), 3);
  EXPECT_EQ(eval("b*16*sq*128", env), 3 * 16 * 129 * 128);
  EXPECT_EQ(eval("sq/64", env), 2);
  EXPECT_EQ(eval("sq%64", env), 1);
  EXPECT_EQ(eval("b-(sq-1)", env), 3 - 128);
  EXPECT_EQ(eval("b-sq-1", env), 3 - 129 - 1);
  EXPECT_EQ(eval("(b+1)*2", env), 8);
  EXPECT_EQ(eval("b+1*2", env), 5);
  EXPECT_EQ(eval("min(b,sq)+max(b,sq)", env), 132);
  EXPECT_EQ(eval("stride(q,2)*2", env), 128);
  EXPECT_EQ(eval("7", env), 7);
  // Constants fold; x*1 and x+0 are x.
  EXPECT_EQ((Expr(4) * Expr(8)).str(), "32");
  EXPECT_EQ((Expr::var("b") * Expr(1) + Expr(0)).str(), "b");
  EXPECT_EQ((Expr::var("b") - (Expr::var("c") - Expr::var("d"))).str(),
            "b-(c-d)");
  EXPECT_EQ(Expr::var("n").ceilDiv(Expr(1024)).str(), "cdiv(n,1024)");
  EXPECT_EQ(*Expr(5).constant(), 5);
  EXPECT_FALSE(Expr::var("b").constant());
}

TEST(Expr, Errors) {
  Env env = {{"b", 3}, {"big", int64_t(1) << 62}};
  EXPECT_EQ(evalError("b*", env), "bad expression 'b*': unexpected end");
  EXPECT_EQ(evalError("b)", env),
            "bad expression 'b)': unexpected ')' at column 2");
  EXPECT_EQ(evalError("pow(b,2)", env),
            "bad expression 'pow(b,2)': unknown function 'pow' (cdiv, min, "
            "max and stride are known)");
  EXPECT_EQ(evalError("stride(1,2)", env),
            "bad expression 'stride(1,2)': stride() takes an operand name "
            "first");
  EXPECT_EQ(evalError("99999999999999999999", env),
            "bad expression '99999999999999999999': integer "
            "'99999999999999999999' out of range");
  EXPECT_EQ(evalError("(((((((((((((((((((((((((((((((((((((((((((((((((((((((("
                      "((((((((((b))))))))))))))))))))))))))))))))))))))))))))"
                      "))))))))))))))))))))))",
                      env)
                .substr(0, 15),
            "bad expression ");
  EXPECT_EQ(evalError("sq", env), "expression 'sq': no value for 'sq'");
  EXPECT_EQ(evalError("b/0", env),
            "expression 'b/0': division of 3 by 0 (needs a non-negative "
            "dividend and a positive divisor)");
  EXPECT_EQ(evalError("cdiv(0-b,2)", env),
            "expression 'cdiv(0-b,2)': division of -3 by 2 (needs a "
            "non-negative dividend and a positive divisor)");
  EXPECT_EQ(evalError("big*4", env),
            "expression 'big*4': overflows 64 bits (4611686018427387904 * 4)");
}

constexpr const char *kManifest = "call gpu\n"
                                  "size b\n"
                                  "size s\n"
                                  "operand x in bf16 b 8 s 64\n"
                                  "operand y out f32 b 8 s optional\n"
                                  "workspace w b*8*s*4 zero\n"
                                  "kernel k\n"
                                  "when 1\n"
                                  "grid cdiv(s,64) 8 b\n"
                                  "block 128 1 1\n"
                                  "shared 1024\n"
                                  "param x.ptr ptr @x\n"
                                  "param w.ptr ptr @w\n"
                                  "param rows i32 b*8*s\n"
                                  "param xs i64 stride(x,2)\n";

std::string manifestError(const std::string &text) {
  Manifest m;
  std::string err;
  EXPECT_FALSE(Manifest::parse(text, 1, &m, &err)) << text;
  EXPECT_EQ(err.find('\n'), std::string::npos);
  return err;
}

/// kManifest with line `n` (1-based) replaced by `line` (removed if empty).
std::string withLine(int n, const std::string &line) {
  std::string s = kManifest, out;
  int i = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    ++i;
    std::string l = s.substr(pos, nl - pos);
    out += i == n ? (line.empty() ? "" : line + "\n") : l + "\n";
    pos = nl + 1;
  }
  return out;
}

TEST(Manifest, RoundTrip) {
  Manifest m;
  std::string err;
  ASSERT_TRUE(Manifest::parse(kManifest, 1, &m, &err)) << err;
  EXPECT_EQ(m.str(), kManifest);
  EXPECT_EQ(m.operands.size(), 2u);
  EXPECT_TRUE(m.operands[1].optional);
  EXPECT_TRUE(m.workspaces[0].zero);
  EXPECT_EQ(m.maxBlockThreads(), 128);
  EXPECT_EQ(m.maxConstantShared(), 1024);
  EXPECT_EQ(m.kernels[0].params[2].type, ManifestParam::Type::I32);
}

TEST(Manifest, EveryRejection) {
  struct Case {
    int line;
    std::string replacement, message;
  } cases[] = {
      {1, "call cpu", "manifest line 1 'call cpu': expected gpu or ciface"},
      {1, "",
       "manifest line 1 'size b': the manifest must start with 'call "
       "gpu' or 'call ciface'"},
      {2, "size",
       "manifest line 2 'size': expected 1 value(s) after 'size', "
       "got 0"},
      {2, "size  b",
       "manifest line 2 'size  b': empty token (tokens are "
       "separated by one space)"},
      {2, "call gpu", "manifest line 2 'call gpu': 'call' appears twice"},
      {4, "operand x in",
       "manifest line 4 'operand x in': expected 'operand "
       "NAME ROLE TYPE DIMS...'"},
      {4, "operand x sideways bf16 b",
       "manifest line 4 'operand x sideways "
       "bf16 b': bad role 'sideways' (in, "
       "out or inout)"},
      {4, "operand x in f64 b",
       "manifest line 4 'operand x in f64 b': bad "
       "element type 'f64' (f32, f16, bf16, i32 or "
       "i64)"},
      {4, "operand x in bf16 b optional 8",
       "manifest line 4 'operand x in bf16 b optional 8': dimensions come "
       "before 'optional', 'strided' and 'align'"},
      {4, "operand x in bf16 b align 12",
       "manifest line 4 'operand x in bf16 b align 12': 'align' takes a "
       "power of two up to 4096 (bytes)"},
      {4, "operand x in bf16 b align",
       "manifest line 4 'operand x in bf16 b align': 'align' takes a power "
       "of two up to 4096 (bytes)"},
      {4, "operand x in bf16 b+",
       "manifest line 4 'operand x in bf16 b+': "
       "bad expression 'b+': unexpected end"},
      {6, "workspace w",
       "manifest line 6 'workspace w': expected 'workspace "
       "NAME BYTES [zero]'"},
      {7, "when 1", "manifest line 7 'when 1': 'when' before any 'kernel'"},
      {8, "when",
       "manifest line 8 'when': expected 1 value(s) after 'when', "
       "got 0"},
      {9, "when 1",
       "manifest line 9 'when 1': 'when' appears twice in "
       "kernel 'k'"},
      {9, "grid 1 1",
       "manifest line 9 'grid 1 1': expected 3 value(s) after "
       "'grid', got 2"},
      {10, "block 128 x 1",
       "manifest line 10 'block 128 x 1': block sizes "
       "are decimal integers"},
      {12, "param x.ptr f64 @x",
       "manifest line 12 'param x.ptr f64 @x': bad "
       "parameter type 'f64' (ptr, i64, i32 or "
       "memref)"},
      {12, "hello x",
       "manifest line 12 'hello x': unknown item 'hello' "
       "(call, size, operand, workspace, kernel, when, grid, "
       "block, shared, param)"},
      // Checks of the whole (validate).
      {3, "size b", "manifest: size name 'b' is declared twice"},
      {3, "size num_sms", "manifest: size name 'num_sms' is reserved"},
      {5, "operand 2y out f32 b",
       "manifest: operand name '2y' is not an "
       "identifier"},
      {6, "workspace w q*4",
       "manifest: workspace w reads 'q', which is not "
       "a declared size (nor num_sms or a stride)"},
      {9, "grid cdiv(s,64) stride(z,0) b",
       "manifest: kernel 'k' reads the stride of 'z', not an operand"},
      {9, "grid cdiv(s,64) stride(x,4) b",
       "manifest: kernel 'k' reads stride 4 of 'x', which has 4 dimensions"},
      {10, "block 1024 2 1",
       "manifest: kernel 'k': 2048 threads a block, "
       "over 1024"},
      {10, "block 0 1 1",
       "manifest: kernel 'k': block sizes must be in "
       "1..1024"},
      {12, "param x.ptr ptr @nothing",
       "manifest: kernel 'k' parameter "
       "'x.ptr': @nothing is not an operand "
       "or a workspace"},
      {12, "param x.ptr ptr 0",
       "manifest: kernel 'k' parameter 'x.ptr': a "
       "ptr or memref parameter is an @operand or "
       "@workspace"},
      {12, "param x.ptr i64 @x",
       "manifest: kernel 'k' parameter 'x.ptr': an "
       "integer parameter is an expression"},
      {12, "param x.ptr memref @x",
       "manifest: kernel 'k' parameter 'x.ptr': "
       "a gpu kernel takes ptr, i64 and i32 "
       "parameters"},
      {12, "param rows i64 1",
       "manifest: kernel 'k' parameter 'rows': "
       "appears twice"},
      {12, "param x..ptr ptr @x",
       "manifest: kernel 'k' parameter 'x..ptr': "
       "not a name"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(manifestError(withLine(c.line, c.replacement)), c.message)
        << "line " << c.line << " -> " << c.replacement;
  EXPECT_EQ(manifestError(""), "manifest line 1 '': the manifest is empty");
  EXPECT_EQ(manifestError("call gpu\nsize b"),
            "manifest line 2 'size b': no newline ends it");
  EXPECT_EQ(manifestError("call gpu\n"), "manifest: no kernel");
  EXPECT_EQ(manifestError("call ciface\noperand x in f32 4\nkernel k\n"
                          "grid 1 1 1\n"),
            "manifest line 4 'grid 1 1 1': a ciface kernel has no 'grid'");
  EXPECT_EQ(manifestError("call ciface\noperand x in f32 4\nkernel k\n"
                          "param x ptr @x\n"),
            "manifest: kernel 'k' parameter 'x': a ciface kernel takes "
            "memref parameters only");
  EXPECT_EQ(manifestError("call ciface\noperand x in f32 4\nkernel k\n"
                          "param x memref @x\nkernel j\nparam x memref @x\n"),
            "manifest: a ciface manifest has one kernel, this one 2");
  EXPECT_EQ(manifestError("call gpu\noperand x in f32\nkernel k\n"),
            "manifest: operand 'x' needs 1 to 8 dimensions, has 0");
}

BundleMeta gpuMeta() {
  BundleMeta m = fmha::test::fakeCudaMeta(DType::BF16, 8, 8, 64, 64);
  m.kernel = "k";
  m.abi = kAbiManifest;
  std::string err;
  EXPECT_TRUE(Manifest::parse(kManifest, 1, &m.manifest, &err)) << err;
  return m;
}

TEST(Manifest, VersionTwoBundle) {
  std::string bytes, err;
  BundleMeta m = gpuMeta();
  ASSERT_TRUE(serializeBundle(m, "BINARY", &bytes, &err)) << err;
  EXPECT_EQ(bytes, "FMHA-BUNDLE 2\n"
                   "target=cuda\n"
                   "chip=sm_90a\n"
                   "kind=fwd\n"
                   "dtype=bf16\n"
                   "hq=8\n"
                   "hk=8\n"
                   "d=64\n"
                   "dv=64\n"
                   "mask=0\n"
                   "scale=0\n"
                   "softcap=0\n"
                   "block_m=16\n"
                   "block_n=16\n"
                   "kernel=k\n"
                   "binary_format=ptx\n"
                   "binary_size=6\n"
                   "\n" +
                       std::string(kManifest) + "\nBINARY");
  BundleMeta out;
  std::string binary;
  ASSERT_TRUE(parseBundle(bytes, "x.fmha", &out, &binary, &err)) << err;
  EXPECT_EQ(binary, "BINARY");
  EXPECT_EQ(out.formatVersion, 2);
  EXPECT_EQ(out.abi, kAbiManifest);
  EXPECT_EQ(out.manifest.str(), kManifest);
  EXPECT_EQ(out.blockThreads, 128);
  EXPECT_EQ(out.sharedBytes, 1024);

  auto error = [&](const std::string &b) {
    BundleMeta ignored;
    std::string bin, e;
    EXPECT_FALSE(parseBundle(b, "x.fmha", &ignored, &bin, &e));
    return e;
  };
  const size_t manifestAt = bytes.find("\n\n") + 2;
  // Keys of version 1 only.
  std::string withAbi = bytes;
  withAbi.insert(withAbi.find("binary_format="), "abi=gpu-flat-v1\n");
  EXPECT_EQ(error(withAbi), "bundle 'x.fmha': unknown key 'abi' on line 16");
  // A bad manifest line: numbered in the file.
  std::string bad = bytes;
  bad.replace(bad.find("block 128 1 1"), 13, "block 128 1");
  EXPECT_EQ(error(bad), "bundle 'x.fmha': manifest line 28 'block 128 1': "
                        "expected 3 value(s) after 'block', got 2");
  EXPECT_EQ(error(bytes.substr(0, manifestAt + 20)),
            "bundle 'x.fmha': truncated manifest: no empty line ends it");
  EXPECT_EQ(error(bytes.substr(0, manifestAt) + "\nBINARY"),
            "bundle 'x.fmha': manifest line 19 '': the manifest is empty");
  // The target and the call agree.
  std::string host = bytes;
  host.replace(host.find("call gpu"), 8, "call ciface");
  EXPECT_EQ(error(host), "bundle 'x.fmha': manifest line 26 'when 1': a "
                         "ciface kernel has no 'when'");
  BundleMeta cpu = fmha::test::testMeta("k", DType::F32, 4, 4, 64, 64);
  cpu.abi = kAbiManifest;
  cpu.manifest = m.manifest;
  EXPECT_FALSE(serializeBundle(cpu, "BINARY", &bytes, &err));
  EXPECT_EQ(err, "target cpu needs a manifest of call ciface");
  // A version-1 bundle cannot carry a manifest.
  EXPECT_FALSE(serializeBundle(m, "BINARY", &bytes, &err, 1));
  EXPECT_EQ(err, "a version-1 bundle needs a version-1 abi, got manifest");
  EXPECT_FALSE(serializeBundle(m, "BINARY", &bytes, &err, 3));
  EXPECT_EQ(err, "cannot write bundle version 3");
}

TEST(Manifest, EveryLegacyManifestValidates) {
  using fmha::test::fakeGpuAccMeta;
  using fmha::test::fakeGpuBwdMeta;
  using fmha::test::fakeGpuMergeMeta;
  using fmha::test::fakeGpuMeta;
  for (Target t : {Target::Cuda, Target::Hip}) {
    for (const BundleMeta &m :
         {fakeGpuMeta(t, DType::BF16, 8, 2, 64, 64),
          fakeGpuBwdMeta(t, DType::F16, 8, 2, 128, 128, "t", true),
          fakeGpuBwdMeta(t, DType::F16, 8, 2, 128, 128, "t", false),
          fakeGpuMergeMeta(t, DType::BF16, 4, 32),
          fakeGpuAccMeta(t, DType::BF16)}) {
      Manifest legacy = legacyManifest(m);
      EXPECT_EQ(legacy.validate(), "") << legacy.str();
      EXPECT_EQ(legacy.call, Manifest::Call::Gpu);
    }
  }
  Manifest host =
      legacyManifest(fmha::test::testMeta("k", DType::F32, 4, 4, 64, 64));
  EXPECT_EQ(host.validate(), "");
  EXPECT_EQ(host.call, Manifest::Call::CIface);
}

TEST(Launch, BindingErrors) {
  Manifest m;
  std::string err;
  ASSERT_TRUE(Manifest::parse(kManifest, 1, &m, &err)) << err;
  int x = 0;
  auto bindError = [&](const LaunchArgs &args, int64_t indexBits = 64) {
    LaunchBinding b;
    std::string e;
    EXPECT_FALSE(bindLaunch(m, args, 132, indexBits, true, &b, &e));
    return e;
  };
  LaunchArgs ok;
  ok.size("b", 2).size("s", 100).tensor("x", &x);
  LaunchBinding b;
  ASSERT_TRUE(bindLaunch(m, ok, 132, 64, true, &b, &err)) << err;
  EXPECT_EQ(b.workspaceBytes, 2u * 8 * 100 * 4);
  EXPECT_FALSE(b.operands[1].given); // y is optional
  EXPECT_EQ(b.operands[0].strides, (std::vector<int64_t>{51200, 6400, 64, 1}));
  EXPECT_EQ(b.operands[0].span, 2 * 8 * 100 * 64);

  LaunchArgs strided = ok;
  strided.tensor("x", &x, {51200, 6400, 128, 1});
  EXPECT_EQ(bindError(strided),
            "operand x is not contiguous (stride 2 is 128, expected 64); "
            "this bundle's kernels take contiguous x");
  strided.tensor("x", &x, {51200, 6400, 64, -1});
  EXPECT_EQ(bindError(strided), "operand x: stride 3 is negative (-1)");
  // A size-1 axis may have any stride (PyTorch's views).
  LaunchArgs one = ok;
  one.size("b", 1).tensor("x", &x, {7, 6400, 64, 1});
  EXPECT_TRUE(bindLaunch(m, one, 132, 64, true, &b, &err)) << err;
  LaunchArgs big = ok;
  big.size("b", int64_t(1) << 22);
  EXPECT_EQ(bindError(big, 32),
            "problem too large for index_bits=32: x has 214748364800 "
            "elements, more than 2146435072; compile it with "
            "--index-bits=64");
  LaunchArgs huge = ok;
  huge.size("b", int64_t(1) << 60);
  EXPECT_EQ(bindError(huge), "operand x is too large: its extent overflows "
                             "64 bits");

  // The plan: the workspace address, the i32 parameter, x's stride.
  ASSERT_TRUE(bindLaunch(m, ok, 132, 64, true, &b, &err)) << err;
  alignas(256) static char workspace[8192];
  LaunchPlan plan;
  ASSERT_TRUE(planLaunch(m, b, {&x, nullptr}, workspace, &plan, &err)) << err;
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].params,
            (std::vector<uint64_t>{reinterpret_cast<uintptr_t>(&x),
                                   reinterpret_cast<uintptr_t>(workspace),
                                   2 * 8 * 100, 64}));
  EXPECT_EQ(plan.launches[0].dims.grid[0], 2);
  ASSERT_EQ(plan.zero.size(), 1u);
  EXPECT_EQ(plan.zero[0].bytes, 2u * 8 * 100 * 4);
}

// Strided operands (the kernels' `strided align 16`): any strides but a
// contiguous last axis, strides and address multiples of the alignment,
// outputs without overlap; the strides reach the parameters.
TEST(Launch, StridedOperands) {
  const char *text = "call gpu\n"
                     "size b\n"
                     "size s\n"
                     "operand x in bf16 b 8 s 64 strided align 16\n"
                     "operand y out bf16 b 8 s 64 strided align 16\n"
                     "operand l out f32 b 8 s strided\n"
                     "kernel k\n"
                     "when 1\n"
                     "grid 1 1 1\n"
                     "block 32 1 1\n"
                     "shared 0\n"
                     "param x.ptr ptr @x\n"
                     "param xb i64 stride(x,0)\n"
                     "param xh i64 stride(x,1)\n"
                     "param xs i64 stride(x,2)\n"
                     "param ys i64 stride(y,2)\n";
  Manifest m;
  std::string err;
  ASSERT_TRUE(Manifest::parse(text, 1, &m, &err)) << err;
  EXPECT_EQ(m.operands[0].align, 16);
  EXPECT_TRUE(m.operands[2].strided);
  EXPECT_EQ(m.operands[2].align, 0);
  Manifest again;
  ASSERT_TRUE(Manifest::parse(m.str(), 1, &again, &err)) << err;
  EXPECT_EQ(again.str(), m.str());

  alignas(64) static char mem[64];
  const std::vector<int64_t> bshd = {100 * 8 * 64, 64, 8 * 64, 1};
  auto args = [&](std::vector<int64_t> xs, std::vector<int64_t> ys,
                  std::vector<int64_t> ls = {}) {
    LaunchArgs a;
    a.size("b", 2).size("s", 100);
    a.tensor("x", mem, std::move(xs)).tensor("y", mem + 16, std::move(ys));
    a.tensor("l", mem, std::move(ls));
    return a;
  };
  auto bindError = [&](const LaunchArgs &a) {
    LaunchBinding b;
    std::string e;
    EXPECT_FALSE(bindLaunch(m, a, 132, 64, true, &b, &e));
    return e;
  };
  LaunchBinding b;
  ASSERT_TRUE(bindLaunch(m, args(bshd, bshd), 132, 64, true, &b, &err)) << err;
  EXPECT_EQ(b.operands[0].strides, bshd);
  EXPECT_EQ(b.operands[0].span, 1 + 51200 + 7 * 64 + 99 * 512 + 63);
  LaunchPlan plan;
  ASSERT_TRUE(planLaunch(m, b, {mem, mem + 16, mem}, nullptr, &plan, &err))
      << err;
  EXPECT_EQ(plan.launches[0].params,
            (std::vector<uint64_t>{reinterpret_cast<uintptr_t>(mem), 51200, 64,
                                   512, 512}));
  // An input may broadcast (stride 0), and lse-like operands take any
  // element stride but the last.
  ASSERT_TRUE(bindLaunch(m, args({0, 64, 512, 1}, bshd, {801, 100, 1}), 132, 64,
                         true, &b, &err))
      << err;

  EXPECT_EQ(bindError(args({51200, 64, 512, 2}, bshd)),
            "operand x needs a contiguous last axis (stride 3 is 2, "
            "expected 1)");
  EXPECT_EQ(bindError(args({51200, 60, 512, 1}, bshd)),
            "operand x has stride 1 of 60 elements (120 bytes); the kernels "
            "need multiples of 16 bytes");
  EXPECT_EQ(bindError(args({int64_t(1) << 62, 64, 512, 1}, bshd)),
            "operand x has stride 0 of 4611686018427387904 elements, past 64 "
            "bits in bytes");
  EXPECT_EQ(bindError(args(bshd, {51200, 0, 512, 1})),
            "operand y is an output whose elements overlap (stride 1 is 0, "
            "inside an extent of 1 elements); give it memory of its own");
  EXPECT_EQ(bindError(args(bshd, {51200, 64, 256, 1})),
            "operand y is an output whose elements overlap (stride 2 is 256, "
            "inside an extent of 512 elements); give it memory of its own");

  // The address: 16-byte aligned.
  ASSERT_TRUE(bindLaunch(m, args(bshd, bshd), 132, 64, true, &b, &err)) << err;
  EXPECT_FALSE(
      planLaunch(m, b, {mem + 2, mem + 16, mem}, nullptr, &plan, &err));
  EXPECT_EQ(err, "operand x is at address " +
                     std::to_string(reinterpret_cast<uintptr_t>(mem + 2)) +
                     ", not a multiple of 16 bytes, which the kernels need");
}

} // namespace

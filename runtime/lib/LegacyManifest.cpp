//===- LegacyManifest.cpp - The manifest of a version-1 bundle ------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A version-1 bundle carries no manifest: its abi key names a fixed launch
// rule (gpu-flat-v1, gpu-bwd-v1, gpu-merge-v1, gpu-acc-v1, memref-ciface-v1;
// Bundle.h and Runtime.h). The reader gives it the manifest that rule
// amounts to, so that version-1 bundles run through the same generic launch
// path as version-2 ones. This is the only place those rules are written;
// it goes when version-1 bundles stop being read.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Bundle.h"

namespace fmha::rt {

namespace {

ScalarType scalarOf(DType t) {
  switch (t) {
  case DType::F16:
    return ScalarType::F16;
  case DType::BF16:
    return ScalarType::BF16;
  case DType::F32:
    break;
  }
  return ScalarType::F32;
}

Expr v(const char *name) { return Expr::var(name); }

struct Builder {
  Manifest m;
  ScalarType elt;
  ManifestParam::Type index = ManifestParam::Type::I64;

  void operand(const char *name, ManifestOperand::Role role, ScalarType type,
               std::vector<Expr> shape, bool optional = false) {
    ManifestOperand o;
    o.name = name;
    o.role = role;
    o.type = type;
    o.shape = std::move(shape);
    o.optional = optional;
    m.operands.push_back(std::move(o));
  }

  /// The number of elements of a manifest operand or workspace.
  static Expr elements(const std::vector<Expr> &shape) {
    Expr e = shape[0];
    for (size_t i = 1; i < shape.size(); ++i)
      e = e * shape[i];
    return e;
  }

  /// The five values of a flat 1-d memref descriptor over `buffer` of
  /// `size` elements (gpu-flat-v1).
  static void descriptor(ManifestKernel &k, const std::string &buffer,
                         Expr size, ManifestParam::Type index) {
    auto add = [&](const char *field, ManifestParam::Type type,
                   const std::string &ref, Expr value) {
      ManifestParam p;
      p.name = buffer + "." + field;
      p.type = type;
      p.buffer = ref;
      p.value = std::move(value);
      k.params.push_back(std::move(p));
    };
    add("allocated", ManifestParam::Type::Ptr, buffer, 0);
    add("aligned", ManifestParam::Type::Ptr, buffer, 0);
    add("offset", index, "", 0);
    add("size", index, "", std::move(size));
    add("stride", index, "", 1);
  }

  static void scalar(ManifestKernel &k, const std::string &name, Expr value,
                     ManifestParam::Type type) {
    ManifestParam p;
    p.name = name;
    p.type = type;
    p.value = std::move(value);
    k.params.push_back(std::move(p));
  }
};

} // namespace

Manifest legacyManifest(const BundleMeta &meta) {
  using Role = ManifestOperand::Role;
  Builder b;
  b.elt = scalarOf(meta.dtype);
  b.index = meta.indexBits == 32 ? ManifestParam::Type::I32
                                 : ManifestParam::Type::I64;
  Manifest &m = b.m;
  const bool gpu = meta.target != Target::Cpu;
  m.call = gpu ? Manifest::Call::Gpu : Manifest::Call::CIface;
  const Expr hq = meta.hq, hk = meta.hk, d = meta.d, dv = meta.dv;
  const ScalarType f32 = ScalarType::F32;

  // The operands in the order of the v1 host ABI, which is also the order
  // of the ciface call.
  std::vector<std::string> order;
  switch (meta.kind) {
  case KernelKind::Forward:
  case KernelKind::Backward: {
    m.sizes = {"b", "sq", "sk"};
    const Expr bb = v("b"), sq = v("sq"), sk = v("sk");
    const bool bwd = meta.kind == KernelKind::Backward;
    b.operand("q", Role::In, b.elt, {bb, hq, sq, d});
    b.operand("k", Role::In, b.elt, {bb, hk, sk, d});
    b.operand("v", Role::In, b.elt, {bb, hk, sk, dv});
    b.operand("o", bwd ? Role::In : Role::Out, b.elt, {bb, hq, sq, dv});
    b.operand("lse", bwd ? Role::In : Role::Out, f32, {bb, hq, sq},
              /*optional=*/!bwd);
    order = {"q", "k", "v", "o", "lse"};
    if (bwd) {
      b.operand("dO", Role::In, b.elt, {bb, hq, sq, dv});
      b.operand("dq", Role::Out, b.elt, {bb, hq, sq, d});
      b.operand("dk", Role::Out, b.elt, {bb, hk, sk, d});
      b.operand("dv", Role::Out, b.elt, {bb, hk, sk, dv});
      order = {"q", "k", "v", "o", "lse", "dO", "dq", "dk", "dv"};
    }
    if (!gpu)
      break;
    const Expr qGrid[3] = {sq.ceilDiv(meta.blockM), hq, bb};
    auto kernel = [&](const std::string &symbol, const Expr(&grid)[3]) {
      ManifestKernel k;
      k.symbol = symbol;
      for (int i = 0; i < 3; ++i)
        k.grid[i] = grid[i];
      k.block[0] = meta.blockThreads;
      k.shared = meta.sharedBytes;
      return k;
    };
    auto sizeOf = [&](const std::string &name) {
      return Builder::elements(m.operand(name)->shape);
    };
    if (!bwd) {
      ManifestKernel k = kernel(meta.kernel, qGrid);
      for (const char *name : {"q", "k", "v", "o", "lse"})
        Builder::descriptor(k, name, sizeOf(name), b.index);
      for (const char *name : {"b", "sq", "sk"})
        Builder::scalar(k, name, v(name), b.index);
      m.kernels.push_back(std::move(k));
      break;
    }
    const Expr rows = bb * hq * sq;
    const Expr acc = meta.deterministic ? Expr(0) : rows * d;
    ManifestWorkspace dsum, dqacc;
    dsum.name = "dsum";
    dsum.bytes = rows * 4;
    dqacc.name = "dqacc";
    dqacc.bytes = meta.deterministic ? Expr(0) : acc * 4;
    m.workspaces = {dsum, dqacc};
    const Expr kvGrid[3] = {sk.ceilDiv(meta.blockN), hk, bb};
    for (const char *stage : {"_prep", "_dkdv", "_dq"}) {
      ManifestKernel k = kernel(meta.kernel + stage,
                                std::string(stage) == "_dkdv" ? kvGrid : qGrid);
      for (const char *name :
           {"q", "k", "v", "o", "dO", "lse", "dq", "dk", "dv"})
        Builder::descriptor(k, name, sizeOf(name), b.index);
      Builder::descriptor(k, "dsum", rows, b.index);
      Builder::descriptor(k, "dqacc", acc, b.index);
      for (const char *name : {"b", "sq", "sk"})
        Builder::scalar(k, name, v(name), b.index);
      m.kernels.push_back(std::move(k));
    }
    break;
  }
  case KernelKind::Merge: {
    m.sizes = {"b", "s"};
    const Expr bb = v("b"), s = v("s"), h = meta.hq;
    b.operand("o1", Role::In, b.elt, {bb, h, s, dv});
    b.operand("lse1", Role::In, f32, {bb, h, s});
    b.operand("o2", Role::In, b.elt, {bb, h, s, dv});
    b.operand("lse2", Role::In, f32, {bb, h, s});
    b.operand("o", Role::Out, b.elt, {bb, h, s, dv});
    b.operand("lse", Role::Out, f32, {bb, h, s});
    order = {"o1", "lse1", "o2", "lse2", "o", "lse"};
    if (!gpu)
      break;
    const Expr rows = bb * h * s;
    ManifestKernel k;
    k.symbol = meta.kernel;
    k.grid[0] = rows.ceilDiv(meta.blockThreads / 32);
    k.block[0] = meta.blockThreads;
    k.shared = meta.sharedBytes;
    for (const char *name : {"o1", "lse1", "o2", "lse2", "o", "lse"})
      Builder::descriptor(k, name, Builder::elements(m.operand(name)->shape),
                          b.index);
    // The seventh kernel operand: its name in the manifests fmha-compile
    // derives from the IR.
    Builder::scalar(k, "arg6", rows, b.index);
    m.kernels.push_back(std::move(k));
    break;
  }
  case KernelKind::Accumulate: {
    m.sizes = {"n"};
    const Expr n = v("n");
    b.operand("x", Role::In, b.elt, {n});
    b.operand("acc", Role::InOut, f32, {n});
    order = {"x", "acc"};
    if (!gpu)
      break;
    ManifestKernel k;
    k.symbol = meta.kernel;
    k.grid[0] = n.ceilDiv(4 * meta.blockThreads);
    k.block[0] = meta.blockThreads;
    k.shared = meta.sharedBytes;
    Builder::descriptor(k, "x", n, b.index);
    Builder::descriptor(k, "acc", n, b.index);
    Builder::scalar(k, "n", n, b.index);
    m.kernels.push_back(std::move(k));
    break;
  }
  }
  if (!gpu) {
    ManifestKernel k;
    k.symbol = meta.kernel;
    for (const std::string &name : order) {
      ManifestParam p;
      p.name = name;
      p.type = ManifestParam::Type::MemRef;
      p.buffer = name;
      k.params.push_back(std::move(p));
    }
    m.kernels.push_back(std::move(k));
  }
  return m;
}

} // namespace fmha::rt

//===- LaunchManifest.cpp - The manifest of a lowered module --------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "LaunchManifest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
namespace rt = ::fmha::rt;

namespace fmha::compile {

namespace {

std::optional<rt::ScalarType> scalarType(Type t) {
  if (t.isF32())
    return rt::ScalarType::F32;
  if (t.isF16())
    return rt::ScalarType::F16;
  if (t.isBF16())
    return rt::ScalarType::BF16;
  if (t.isInteger(32))
    return rt::ScalarType::I32;
  if (t.isInteger(64))
    return rt::ScalarType::I64;
  return std::nullopt;
}

/// Whether a memref's layout is strided with a contiguous last axis (what
/// the kernels and the host functions take).
bool hasContiguousLastAxis(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         !strides.empty() && strides.back() == 1;
}

std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os, OpPrintingFlags().skipRegions());
  return s.substr(0, 200);
}

/// Values of the host function as manifest expressions.
class Translator {
public:
  Translator(func::FuncOp func, const rt::Manifest &m) : func_(func), m_(m) {}

  /// The expression of an index or integer value.
  std::optional<rt::Expr> expr(Value v, std::string *err) {
    if (auto it = exprs_.find(v); it != exprs_.end())
      return it->second;
    std::optional<rt::Expr> e = compute(v, err);
    if (e)
      exprs_[v] = *e;
    return e;
  }

  /// The operand (its index in m.operands) a memref value views whole, if
  /// any: a function argument through casts and collapse_shape.
  std::optional<size_t> operandOf(Value v) {
    v = strip(v);
    if (auto arg = dyn_cast<BlockArgument>(v))
      if (arg.getOwner()->getParentOp() == func_.getOperation())
        return arg.getArgNumber();
    return std::nullopt;
  }

  /// The allocation a memref value is, through casts.
  memref::AllocOp allocOf(Value v) {
    return strip(v).getDefiningOp<memref::AllocOp>();
  }

  /// The product of an operand's shape.
  rt::Expr elements(size_t operand) const {
    const std::vector<rt::Expr> &shape = m_.operands[operand].shape;
    rt::Expr e = shape[0];
    for (size_t i = 1; i < shape.size(); ++i)
      e = e * shape[i];
    return e;
  }

private:
  static Value strip(Value v) {
    while (Operation *op = v.getDefiningOp()) {
      if (auto cast = dyn_cast<memref::CastOp>(op))
        v = cast.getSource();
      else if (auto collapse = dyn_cast<memref::CollapseShapeOp>(op))
        v = collapse.getSrc();
      else
        break;
    }
    return v;
  }

  /// Dimension `index` of a memref that views an operand through casts and
  /// collapse_shape (a collapsed dimension: the product of its group).
  std::optional<rt::Expr> dimension(Value v, int64_t index) {
    while (auto cast = v.getDefiningOp<memref::CastOp>())
      v = cast.getSource();
    if (auto collapse = v.getDefiningOp<memref::CollapseShapeOp>()) {
      auto groups = collapse.getReassociationIndices();
      if (index < 0 || index >= static_cast<int64_t>(groups.size()))
        return std::nullopt;
      std::optional<rt::Expr> product;
      for (int64_t source : groups[index]) {
        std::optional<rt::Expr> d = dimension(collapse.getSrc(), source);
        if (!d)
          return std::nullopt;
        product = product ? *product * *d : *d;
      }
      return product;
    }
    std::optional<size_t> operand = operandOf(v);
    if (!operand || index < 0 ||
        index >= static_cast<int64_t>(m_.operands[*operand].shape.size()))
      return std::nullopt;
    return m_.operands[*operand].shape[index];
  }

  std::optional<rt::Expr> compute(Value v, std::string *err) {
    APInt constant;
    if (matchPattern(v, m_ConstantInt(&constant)))
      return rt::Expr(constant.getSExtValue());
    Operation *op = v.getDefiningOp();
    if (!op) {
      *err = "a block argument that is not a size";
      return std::nullopt;
    }
    if (auto dim = dyn_cast<memref::DimOp>(op)) {
      std::optional<int64_t> index = dim.getConstantIndex();
      std::optional<rt::Expr> size;
      if (index)
        size = dimension(dim.getSource(), *index);
      if (!size)
        *err = "a memref.dim that is not of an operand's dimension: " +
               describe(op);
      return size;
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp, arith::TruncIOp>(op))
      return expr(op->getOperand(0), err);
    if (op->getNumOperands() != 2) {
      *err = "an op the manifest cannot express: " + describe(op);
      return std::nullopt;
    }
    std::optional<rt::Expr> l = expr(op->getOperand(0), err);
    if (!l)
      return std::nullopt;
    std::optional<rt::Expr> r = expr(op->getOperand(1), err);
    if (!r)
      return std::nullopt;
    if (isa<arith::AddIOp>(op))
      return *l + *r;
    if (isa<arith::SubIOp>(op))
      return *l - *r;
    if (isa<arith::MulIOp>(op))
      return *l * *r;
    // Sizes are non-negative: signed and unsigned division agree.
    if (isa<arith::DivUIOp, arith::DivSIOp, arith::FloorDivSIOp>(op))
      return *l / *r;
    if (isa<arith::CeilDivUIOp, arith::CeilDivSIOp>(op))
      return l->ceilDiv(*r);
    if (isa<arith::RemUIOp, arith::RemSIOp>(op))
      return *l % *r;
    if (isa<arith::MinUIOp, arith::MinSIOp>(op))
      return l->min(*r);
    if (isa<arith::MaxUIOp, arith::MaxSIOp>(op))
      return l->max(*r);
    *err = "an op the manifest cannot express: " + describe(op);
    return std::nullopt;
  }

  func::FuncOp func_;
  const rt::Manifest &m_;
  llvm::DenseMap<Value, rt::Expr> exprs_;
};

} // namespace

bool hostManifest(func::FuncOp func, const std::vector<OperandSpec> &specs,
                  rt::Manifest *out, std::string *err) {
  rt::Manifest m;
  m.call = rt::Manifest::Call::CIface;
  auto args = func.getArguments();
  if (args.size() != specs.size()) {
    *err = "the function has " + std::to_string(args.size()) +
           " arguments, the manifest names " + std::to_string(specs.size());
    return false;
  }
  rt::ManifestKernel kernel;
  kernel.symbol = func.getName().str();
  for (auto [arg, spec] : llvm::zip(args, specs)) {
    // A memref of identity layout or of any strides but a contiguous last
    // axis, or a tensor (which the pipeline bufferizes into a contiguous
    // memref).
    auto type = dyn_cast<ShapedType>(arg.getType());
    auto memref = dyn_cast<MemRefType>(arg.getType());
    const bool strided = memref && !memref.getLayout().isIdentity() &&
                         hasContiguousLastAxis(memref);
    if (!type || !(isa<RankedTensorType>(type) ||
                   (memref && (memref.getLayout().isIdentity() || strided)))) {
      *err = "argument " + spec.name +
             " is neither a ranked tensor nor a memref of identity layout or "
             "of a contiguous last axis";
      return false;
    }
    std::optional<rt::ScalarType> elt = scalarType(type.getElementType());
    if (!elt) {
      *err = "argument " + spec.name + " has no manifest element type";
      return false;
    }
    rt::ManifestOperand o;
    o.name = spec.name;
    o.role = spec.role;
    o.type = *elt;
    o.optional = spec.optional;
    o.strided = strided;
    size_t next = 0;
    for (int64_t size : type.getShape()) {
      if (!ShapedType::isDynamic(size)) {
        o.shape.push_back(rt::Expr(size));
        continue;
      }
      if (next >= spec.dynamicDims.size()) {
        *err = "argument " + spec.name +
               " has more dynamic dimensions than "
               "names for them";
        return false;
      }
      // A size name, or NAME+1 (cu_seqlens: [b + 1]).
      llvm::StringRef dim = spec.dynamicDims[next++];
      const bool plusOne = dim.consume_back("+1");
      const std::string name = dim.str();
      if (std::find(m.sizes.begin(), m.sizes.end(), name) == m.sizes.end())
        m.sizes.push_back(name);
      o.shape.push_back(plusOne ? rt::Expr::var(name) + rt::Expr(1)
                                : rt::Expr::var(name));
    }
    m.operands.push_back(std::move(o));
    rt::ManifestParam p;
    p.name = spec.name;
    p.type = rt::ManifestParam::Type::MemRef;
    p.buffer = spec.name;
    kernel.params.push_back(std::move(p));
  }
  m.kernels.push_back(std::move(kernel));
  *out = std::move(m);
  return true;
}

bool gpuManifest(func::FuncOp hostFunc, int64_t indexBits, rt::Manifest *m,
                 std::string *err) {
  using Param = rt::ManifestParam;
  const Param::Type index =
      indexBits == 32 ? Param::Type::I32 : Param::Type::I64;
  Translator t(hostFunc, *m);
  std::vector<rt::ManifestKernel> kernels;
  std::vector<rt::ManifestWorkspace> workspaces;
  llvm::DenseMap<Operation *, std::string> workspaceNames;
  bool ok = true;
  auto fail = [&](Operation *op, const std::string &why) {
    *err = "launch manifest: " + why + " (in " + describe(op) + ")";
    ok = false;
  };
  hostFunc.walk([&](gpu::LaunchFuncOp launch) {
    if (!ok)
      return;
    rt::ManifestKernel k;
    k.symbol = launch.getKernelName().str();
    std::string why;
    Value grid[3] = {launch.getGridSizeX(), launch.getGridSizeY(),
                     launch.getGridSizeZ()};
    Value block[3] = {launch.getBlockSizeX(), launch.getBlockSizeY(),
                      launch.getBlockSizeZ()};
    for (int i = 0; i < 3; ++i) {
      std::optional<rt::Expr> g = t.expr(grid[i], &why);
      std::optional<rt::Expr> b = t.expr(block[i], &why);
      if (!g || !b)
        return fail(launch, why);
      std::optional<int64_t> constant = b->constant();
      if (!constant)
        return fail(launch, "the block size is not a constant");
      k.grid[i] = *g;
      k.block[i] = *constant;
    }
    if (Value shared = launch.getDynamicSharedMemorySize()) {
      std::optional<rt::Expr> s = t.expr(shared, &why);
      if (!s)
        return fail(launch, why);
      k.shared = *s;
    }
    int argIndex = 0;
    for (Value operand : launch.getKernelOperands()) {
      const int position = argIndex++;
      auto add = [&](std::string name, Param::Type type, std::string buffer,
                     rt::Expr value) {
        Param p;
        p.name = std::move(name);
        p.type = type;
        p.buffer = std::move(buffer);
        p.value = std::move(value);
        k.params.push_back(std::move(p));
      };
      if (auto type = dyn_cast<MemRefType>(operand.getType())) {
        // A tensor operand (a memref of its rank, any strides but the
        // last, stridedKernelType) or a flat workspace (memref<?xT>).
        if (!hasContiguousLastAxis(type))
          return fail(launch, "kernel operand " + std::to_string(position) +
                                  " is not a memref of a contiguous last "
                                  "axis");
        const bool flat = type.getRank() == 1 && type.getLayout().isIdentity();
        std::string buffer;
        rt::Expr size;
        std::vector<rt::Expr> sizes, strides;
        if (std::optional<size_t> o = t.operandOf(operand)) {
          buffer = m->operands[*o].name;
          size = t.elements(*o);
          sizes = m->operands[*o].shape;
          for (size_t i = 0; i < sizes.size(); ++i)
            strides.push_back(rt::Expr::var(
                rt::Expr::strideName(buffer, static_cast<int64_t>(i))));
          if (auto align = launch->getAttrOfType<DenseI64ArrayAttr>(
                  "fmha.operand_align");
              align && position < static_cast<int>(align.size()))
            m->operands[*o].align =
                std::max(m->operands[*o].align, align[position]);
        } else if (memref::AllocOp alloc = t.allocOf(operand)) {
          // Its element count: the static sizes times the dynamic ones.
          MemRefType allocType = alloc.getType();
          std::optional<rt::Expr> elements;
          size_t dynamic = 0;
          for (int64_t s : allocType.getShape()) {
            std::optional<rt::Expr> e =
                ShapedType::isDynamic(s)
                    ? t.expr(alloc.getDynamicSizes()[dynamic++], &why)
                    : std::optional<rt::Expr>(rt::Expr(s));
            if (!e)
              return fail(alloc, why);
            elements = elements ? *elements * *e : *e;
            sizes.push_back(*e);
          }
          // Contiguous: each stride the product of the sizes inside it.
          strides.assign(sizes.size(), rt::Expr(1));
          for (size_t i = sizes.size(); i-- > 1;)
            strides[i - 1] = strides[i] * sizes[i];
          if (!elements)
            elements = rt::Expr(1); // rank 0
          auto &name = workspaceNames[alloc];
          if (name.empty()) {
            auto attr = alloc->getAttrOfType<StringAttr>("fmha.workspace");
            name = attr ? attr.str()
                        : "workspace" + std::to_string(workspaces.size());
            std::optional<rt::ScalarType> elt =
                scalarType(allocType.getElementType());
            if (!elt)
              return fail(alloc, "a workspace of no manifest element type");
            rt::ManifestWorkspace w;
            w.name = name;
            w.bytes = *elements * rt::Expr(rt::scalarSize(*elt));
            workspaces.push_back(w);
          }
          buffer = name;
          size = *elements;
        } else {
          return fail(launch, "kernel operand " + std::to_string(position) +
                                  " is neither a view of an operand nor an "
                                  "allocation");
        }
        add(buffer + ".allocated", Param::Type::Ptr, buffer, 0);
        add(buffer + ".aligned", Param::Type::Ptr, buffer, 0);
        add(buffer + ".offset", index, "", 0);
        if (flat) {
          add(buffer + ".size", index, "", size);
          add(buffer + ".stride", index, "", 1);
          continue;
        }
        if (static_cast<int64_t>(sizes.size()) != type.getRank())
          return fail(launch, "kernel operand " + std::to_string(position) +
                                  " has another rank than " + buffer);
        for (size_t i = 0; i < sizes.size(); ++i)
          add(buffer + ".size" + std::to_string(i), index, "", sizes[i]);
        for (size_t i = 0; i < strides.size(); ++i)
          add(buffer + ".stride" + std::to_string(i), index, "", strides[i]);
        continue;
      }
      std::optional<rt::Expr> e = t.expr(operand, &why);
      if (!e)
        return fail(launch, why);
      std::string name = "arg" + std::to_string(position);
      if (e->nodes().size() == 1 && e->nodes()[0].op == rt::Expr::Op::Var)
        name = e->nodes()[0].name;
      Param::Type type = index;
      if (!operand.getType().isIndex())
        type = operand.getType().isInteger(32) ? Param::Type::I32
                                               : Param::Type::I64;
      add(name, type, "", *e);
    }
    kernels.push_back(std::move(k));
  });
  if (!ok)
    return false;
  if (kernels.empty()) {
    *err = "launch manifest: the GPU pipeline left no gpu.launch_func in " +
           hostFunc.getName().str();
    return false;
  }
  m->call = rt::Manifest::Call::Gpu;
  m->kernels = std::move(kernels);
  m->workspaces = std::move(workspaces);
  std::string problem = m->validate();
  if (!problem.empty()) {
    *err = "launch manifest: " + problem;
    return false;
  }
  return true;
}

} // namespace fmha::compile

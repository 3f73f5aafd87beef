//===- Launch.cpp - Binding named arguments to a manifest -----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Launch.h"

#include "fmha/Runtime/Bundle.h"

#include "Util.h"

#include <algorithm>

namespace fmha::rt {

using detail::quote;

namespace {

/// "a, b and c" of the names, or "none".
template <typename Range, typename Name>
std::string listNames(const Range &range, Name name) {
  std::vector<std::string> names;
  for (const auto &item : range)
    names.push_back(name(item));
  if (names.empty())
    return "none";
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

constexpr size_t kWorkspaceAlign = 256;

} // namespace

/// What is wrong with the strides of a given, strided operand (empty when
/// nothing): the last axis contiguous; with `align`, the other strides
/// multiples of it in bytes; an output's elements all distinct.
static std::string checkStrides(const ManifestOperand &o,
                                const std::vector<int64_t> &sizes,
                                const std::vector<int64_t> &strides) {
  const size_t rank = sizes.size();
  if (rank == 0)
    return {};
  if (sizes[rank - 1] > 1 && strides[rank - 1] != 1)
    return "needs a contiguous last axis (stride " + std::to_string(rank - 1) +
           " is " + std::to_string(strides[rank - 1]) + ", expected 1)";
  const int64_t element = static_cast<int64_t>(scalarSize(o.type));
  for (size_t a = 0; o.align && a + 1 < rank; ++a) {
    if (sizes[a] <= 1)
      continue;
    int64_t bytes;
    if (__builtin_mul_overflow(strides[a], element, &bytes))
      return "has stride " + std::to_string(a) + " of " +
             std::to_string(strides[a]) + " elements, past 64 bits in bytes";
    if (bytes % o.align != 0)
      return "has stride " + std::to_string(a) + " of " +
             std::to_string(strides[a]) + " elements (" +
             std::to_string(bytes) + " bytes); the kernels need multiples of " +
             std::to_string(o.align) + " bytes";
  }
  if (o.role == ManifestOperand::Role::In)
    return {};
  // Distinct elements: ordered by stride, each axis steps past the whole
  // extent of the ones inside it.
  std::vector<size_t> axes;
  for (size_t a = 0; a < rank; ++a)
    if (sizes[a] > 1)
      axes.push_back(a);
  std::sort(axes.begin(), axes.end(),
            [&](size_t x, size_t y) { return strides[x] < strides[y]; });
  int64_t extent = 1;
  for (size_t a : axes) {
    if (strides[a] < extent)
      return "is an output whose elements overlap (stride " +
             std::to_string(a) + " is " + std::to_string(strides[a]) +
             ", inside an extent of " + std::to_string(extent) +
             " elements); give it memory of its own";
    if (__builtin_mul_overflow(strides[a], sizes[a], &extent))
      return {}; // past 64 bits: the span check refuses it
  }
  return {};
}

bool bindLaunch(const Manifest &m, const LaunchArgs &args, int64_t numSms,
                int64_t indexBits, bool requireOperands, LaunchBinding *out,
                std::string *err) {
  LaunchBinding b;
  auto fail = [&](const std::string &why) {
    *err = why;
    return false;
  };
  // For messages only.
  auto sizeNames = [&] {
    return listNames(m.sizes, [](const std::string &s) { return s; });
  };
  auto operandNames = [&] {
    return listNames(m.operands,
                     [](const ManifestOperand &o) { return o.name; });
  };
  for (const auto &[name, value] : args.sizes) {
    if (std::find(m.sizes.begin(), m.sizes.end(), name) == m.sizes.end())
      return fail("the bundle takes no size " + quote(name) +
                  " (its sizes: " + sizeNames() + ")");
    if (value < 0)
      return fail("size " + name + " must be non-negative, got " +
                  std::to_string(value));
  }
  for (const auto &[name, tensor] : args.tensors)
    if (!m.operand(name))
      return fail("the bundle takes no operand " + quote(name) +
                  " (its operands: " + operandNames() + ")");
  for (const std::string &name : m.sizes) {
    auto it = args.sizes.find(name);
    if (it == args.sizes.end())
      return fail("missing size " + quote(name) +
                  " (the bundle's sizes: " + sizeNames() + ")");
    b.env[name] = it->second;
  }
  b.env["num_sms"] = numSms;

  // Shapes first (they read sizes only), then the strides they imply.
  b.operands.resize(m.operands.size());
  for (size_t i = 0; i < m.operands.size(); ++i) {
    const ManifestOperand &o = m.operands[i];
    LaunchBinding::Operand &bound = b.operands[i];
    auto it = args.tensors.find(o.name);
    bound.given = it != args.tensors.end() && it->second.data;
    if (it != args.tensors.end() && !it->second.data && !o.optional)
      return fail("null pointer for " + o.name);
    if (!bound.given && !o.optional && requireOperands)
      return fail("missing operand " + quote(o.name) +
                  " (the bundle's operands: " + operandNames() + ")");
    for (const Expr &dim : o.shape) {
      std::string why;
      std::optional<int64_t> v = dim.evaluate(b.env, &why);
      if (!v)
        return fail("operand " + o.name + ": " + why);
      if (*v < 0)
        return fail("operand " + o.name + " has a negative size " +
                    std::to_string(*v));
      bound.sizes.push_back(*v);
    }
    const size_t rank = o.shape.size();
    std::vector<int64_t> contiguous(rank, 1);
    for (size_t a = rank; a-- > 1;)
      if (__builtin_mul_overflow(contiguous[a], bound.sizes[a],
                                 &contiguous[a - 1]))
        return fail("operand " + o.name +
                    " is too large: its size "
                    "overflows 64 bits");
    bound.strides = contiguous;
    if (bound.given && !it->second.strides.empty()) {
      const std::vector<int64_t> &given = it->second.strides;
      if (given.size() != rank)
        return fail("operand " + o.name + " has " + std::to_string(rank) +
                    " dimensions, got " + std::to_string(given.size()) +
                    " strides");
      for (size_t a = 0; a < rank; ++a)
        if (given[a] < 0)
          return fail("operand " + o.name + ": stride " + std::to_string(a) +
                      " is negative (" + std::to_string(given[a]) + ")");
      if (!o.strided) {
        for (size_t a = 0; a < rank; ++a)
          if (given[a] != contiguous[a] && bound.sizes[a] > 1)
            return fail("operand " + o.name + " is not contiguous (stride " +
                        std::to_string(a) + " is " + std::to_string(given[a]) +
                        ", expected " + std::to_string(contiguous[a]) +
                        "); this bundle's kernels take contiguous " + o.name);
      } else {
        bound.strides = given;
      }
    }
    if (bound.given && o.strided) {
      std::string why = checkStrides(o, bound.sizes, bound.strides);
      if (!why.empty())
        return fail("operand " + o.name + " " + why);
    }
    // The span: one past the last element's offset.
    int64_t span = 1;
    for (size_t a = 0; a < rank; ++a) {
      if (bound.sizes[a] == 0) {
        span = 0;
        break;
      }
      int64_t extent;
      if (__builtin_mul_overflow(bound.sizes[a] - 1, bound.strides[a],
                                 &extent) ||
          __builtin_add_overflow(span, extent, &span))
        return fail("operand " + o.name +
                    " is too large: its extent "
                    "overflows 64 bits");
    }
    bound.span = span;
    if (indexBits == 32 && span > kMaxIndex32Elements)
      return fail("problem too large for index_bits=32: " + o.name + " has " +
                  std::to_string(span) + " elements, more than " +
                  std::to_string(kMaxIndex32Elements) +
                  "; compile it with --index-bits=64");
    for (size_t a = 0; a < rank; ++a)
      b.env[Expr::strideName(o.name, static_cast<int64_t>(a))] =
          bound.strides[a];
  }

  size_t offset = 0;
  for (const ManifestWorkspace &w : m.workspaces) {
    std::string why;
    std::optional<int64_t> bytes = w.bytes.evaluate(b.env, &why);
    if (!bytes)
      return fail("workspace " + w.name + ": " + why);
    if (*bytes < 0)
      return fail("workspace " + w.name + " has a negative size " +
                  std::to_string(*bytes));
    if (*bytes > 0)
      offset =
          (offset + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
    if (static_cast<uint64_t>(*bytes) > (uint64_t(1) << 60))
      return fail("workspace " + w.name +
                  " is too large: " + std::to_string(*bytes) + " bytes");
    b.workspaceOffsets.push_back(*bytes ? offset : 0);
    b.workspaceSizes.push_back(static_cast<size_t>(*bytes));
    offset += static_cast<size_t>(*bytes);
  }
  b.workspaceBytes = offset;
  *out = std::move(b);
  return true;
}

bool planLaunch(const Manifest &m, const LaunchBinding &binding,
                const std::vector<const void *> &operandAddress,
                void *workspace, LaunchPlan *out, std::string *err) {
  LaunchPlan plan;
  auto fail = [&](const std::string &why) {
    *err = why;
    return false;
  };
  auto eval = [&](const Expr &e, const std::string &where, int64_t *v) {
    std::string why;
    std::optional<int64_t> r = e.evaluate(binding.env, &why);
    if (!r)
      return fail(where + ": " + why);
    *v = *r;
    return true;
  };
  char *base = static_cast<char *>(workspace);
  auto address = [&](const std::string &name) -> const void * {
    for (size_t i = 0; i < m.operands.size(); ++i)
      if (m.operands[i].name == name)
        return operandAddress[i];
    for (size_t i = 0; i < m.workspaces.size(); ++i)
      if (m.workspaces[i].name == name)
        return binding.workspaceSizes[i] && base
                   ? base + binding.workspaceOffsets[i]
                   : nullptr;
    return nullptr;
  };
  for (size_t i = 0; i < m.operands.size(); ++i) {
    const int64_t align = m.operands[i].align;
    const auto at = reinterpret_cast<uintptr_t>(operandAddress[i]);
    if (align && binding.operands[i].given && at % align != 0)
      return fail("operand " + m.operands[i].name + " is at address " +
                  std::to_string(at) + ", not a multiple of " +
                  std::to_string(align) + " bytes, which the kernels need");
  }
  for (size_t i = 0; i < m.workspaces.size(); ++i)
    if (m.workspaces[i].zero && binding.workspaceSizes[i])
      plan.zero.push_back(
          {base + binding.workspaceOffsets[i], binding.workspaceSizes[i]});

  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const ManifestKernel &kernel = m.kernels[k];
    const std::string where = "kernel " + kernel.symbol;
    PlannedLaunch launch;
    launch.kernel = k;
    if (m.call == Manifest::Call::Gpu) {
      int64_t when = 0;
      if (!eval(kernel.when, where + " condition", &when))
        return false;
      if (!when)
        continue;
      for (int d = 0; d < 3; ++d) {
        if (!eval(kernel.grid[d], where + " grid", &launch.dims.grid[d]))
          return false;
        launch.dims.block[d] = kernel.block[d];
      }
      if (!eval(kernel.shared, where + " shared memory",
                &launch.dims.sharedBytes))
        return false;
      if (launch.dims.sharedBytes < 0)
        return fail(where + ": negative shared memory");
    }
    for (const ManifestParam &p : kernel.params) {
      const std::string pw = where + " parameter " + p.name;
      if (p.type == ManifestParam::Type::MemRef) {
        size_t i = 0;
        while (m.operands[i].name != p.buffer)
          ++i;
        const LaunchBinding::Operand &o = binding.operands[i];
        std::vector<int64_t> words;
        int64_t ptr = static_cast<int64_t>(
            reinterpret_cast<uintptr_t>(operandAddress[i]));
        words.push_back(ptr); // allocated
        words.push_back(ptr); // aligned
        words.push_back(0);   // offset
        words.insert(words.end(), o.sizes.begin(), o.sizes.end());
        words.insert(words.end(), o.strides.begin(), o.strides.end());
        launch.memrefs.push_back(std::move(words));
        continue;
      }
      if (p.type == ManifestParam::Type::Ptr) {
        launch.params.push_back(static_cast<uint64_t>(
            reinterpret_cast<uintptr_t>(address(p.buffer))));
        continue;
      }
      int64_t v = 0;
      if (!eval(p.value, pw, &v))
        return false;
      if (p.type == ManifestParam::Type::I32) {
        if (v < INT32_MIN || v > INT32_MAX)
          return fail(pw + " is " + std::to_string(v) +
                      ", which does not fit its 32 bits");
        launch.params.push_back(static_cast<uint64_t>(
            static_cast<uint32_t>(static_cast<int32_t>(v))));
        continue;
      }
      launch.params.push_back(static_cast<uint64_t>(v));
    }
    plan.launches.push_back(std::move(launch));
  }
  *out = std::move(plan);
  return true;
}

} // namespace fmha::rt

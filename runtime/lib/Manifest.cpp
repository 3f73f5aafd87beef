//===- Manifest.cpp - The launch manifest of a bundle ---------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Manifest.h"

#include "Util.h"

#include <algorithm>
#include <set>

namespace fmha::rt {

using detail::quote;

//===----------------------------------------------------------------------===//
// Names of the enums
//===----------------------------------------------------------------------===//

const char *toString(ScalarType t) {
  switch (t) {
  case ScalarType::F32:
    return "f32";
  case ScalarType::F16:
    return "f16";
  case ScalarType::BF16:
    return "bf16";
  case ScalarType::I32:
    return "i32";
  case ScalarType::I64:
    return "i64";
  }
  return "?";
}

std::optional<ScalarType> parseScalarType(std::string_view s) {
  for (ScalarType t : {ScalarType::F32, ScalarType::F16, ScalarType::BF16,
                       ScalarType::I32, ScalarType::I64})
    if (s == toString(t))
      return t;
  return std::nullopt;
}

size_t scalarSize(ScalarType t) {
  switch (t) {
  case ScalarType::F16:
  case ScalarType::BF16:
    return 2;
  case ScalarType::I64:
    return 8;
  default:
    return 4;
  }
}

const char *toString(ManifestOperand::Role r) {
  switch (r) {
  case ManifestOperand::Role::In:
    return "in";
  case ManifestOperand::Role::Out:
    return "out";
  case ManifestOperand::Role::InOut:
    return "inout";
  }
  return "?";
}

const char *toString(ManifestParam::Type t) {
  switch (t) {
  case ManifestParam::Type::Ptr:
    return "ptr";
  case ManifestParam::Type::I64:
    return "i64";
  case ManifestParam::Type::I32:
    return "i32";
  case ManifestParam::Type::MemRef:
    return "memref";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Manifest: text
//===----------------------------------------------------------------------===//

std::string Manifest::str() const {
  std::string s;
  auto line = [&](const std::string &text) {
    s += text;
    s += '\n';
  };
  line(std::string("call ") + (call == Call::Gpu ? "gpu" : "ciface"));
  for (const std::string &size : sizes)
    line("size " + size);
  for (const ManifestOperand &o : operands) {
    std::string text =
        "operand " + o.name + " " + toString(o.role) + " " + toString(o.type);
    for (const Expr &dim : o.shape)
      text += " " + dim.str();
    if (o.optional)
      text += " optional";
    if (o.strided)
      text += " strided";
    if (o.align)
      text += " align " + std::to_string(o.align);
    line(text);
  }
  for (const ManifestWorkspace &w : workspaces)
    line("workspace " + w.name + " " + w.bytes.str() + (w.zero ? " zero" : ""));
  for (const ManifestKernel &k : kernels) {
    line("kernel " + k.symbol);
    if (call == Call::Gpu) {
      line("when " + k.when.str());
      line("grid " + k.grid[0].str() + " " + k.grid[1].str() + " " +
           k.grid[2].str());
      line("block " + std::to_string(k.block[0]) + " " +
           std::to_string(k.block[1]) + " " + std::to_string(k.block[2]));
      line("shared " + k.shared.str());
    }
    for (const ManifestParam &p : k.params)
      line("param " + p.name + " " + toString(p.type) + " " +
           (p.buffer.empty() ? p.value.str() : "@" + p.buffer));
  }
  return s;
}

namespace {

std::vector<std::string_view> splitTokens(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t pos = 0;
  while (pos <= line.size()) {
    size_t sp = line.find(' ', pos);
    if (sp == std::string_view::npos)
      sp = line.size();
    tokens.push_back(line.substr(pos, sp - pos));
    pos = sp + 1;
  }
  return tokens;
}

bool isIdent(std::string_view s) {
  if (s.empty() || !detail::isNameStart(s[0]))
    return false;
  return std::all_of(s.begin(), s.end(), detail::isNameChar);
}

/// A parameter name: identifiers joined by '.' ("q.allocated").
bool isParamName(std::string_view s) {
  size_t pos = 0;
  while (true) {
    size_t dot = s.find('.', pos);
    std::string_view part =
        s.substr(pos, dot == std::string_view::npos ? s.npos : dot - pos);
    if (!isIdent(part))
      return false;
    if (dot == std::string_view::npos)
      return true;
    pos = dot + 1;
  }
}

} // namespace

bool Manifest::parse(std::string_view text, int firstLine, Manifest *out,
                     std::string *err) {
  Manifest m;
  int lineNo = firstLine - 1;
  std::string_view line;
  auto fail = [&](const std::string &why) {
    *err = "manifest line " + std::to_string(lineNo) + " " + quote(line) +
           ": " + why;
    return false;
  };
  size_t pos = 0;
  bool sawCall = false;
  // Which of a kernel's lines have been seen (when, grid, block, shared).
  bool seen[4] = {false, false, false, false};
  while (pos < text.size()) {
    ++lineNo;
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      line = text.substr(pos);
      return fail("no newline ends it");
    }
    line = text.substr(pos, nl - pos);
    pos = nl + 1;
    std::vector<std::string_view> t = splitTokens(line);
    const std::string_view key = t[0];
    for (std::string_view token : t)
      if (token.empty())
        return fail("empty token (tokens are separated by one space)");
    auto expr = [&](std::string_view s, Expr *e) {
      std::string why;
      std::optional<Expr> parsed = Expr::parse(s, &why);
      if (!parsed)
        return fail(why);
      *e = *parsed;
      return true;
    };
    auto count = [&](size_t n) {
      return t.size() == n ? true
                           : fail("expected " + std::to_string(n - 1) +
                                  " value(s) after '" + std::string(key) +
                                  "', got " + std::to_string(t.size() - 1));
    };
    if (!sawCall && key != "call")
      return fail("the manifest must start with 'call gpu' or 'call ciface'");
    if (key == "call") {
      if (sawCall)
        return fail("'call' appears twice");
      if (!count(2))
        return false;
      if (t[1] == "gpu")
        m.call = Call::Gpu;
      else if (t[1] == "ciface")
        m.call = Call::CIface;
      else
        return fail("expected gpu or ciface");
      sawCall = true;
    } else if (key == "size") {
      if (!count(2))
        return false;
      m.sizes.emplace_back(t[1]);
    } else if (key == "operand") {
      if (t.size() < 4)
        return fail("expected 'operand NAME ROLE TYPE DIMS...'");
      ManifestOperand o;
      o.name = t[1];
      if (t[2] == "in")
        o.role = ManifestOperand::Role::In;
      else if (t[2] == "out")
        o.role = ManifestOperand::Role::Out;
      else if (t[2] == "inout")
        o.role = ManifestOperand::Role::InOut;
      else
        return fail("bad role " + quote(t[2]) + " (in, out or inout)");
      std::optional<ScalarType> type = parseScalarType(t[3]);
      if (!type)
        return fail("bad element type " + quote(t[3]) +
                    " (f32, f16, bf16, i32 or i64)");
      o.type = *type;
      for (size_t i = 4; i < t.size(); ++i) {
        if (t[i] == "optional")
          o.optional = true;
        else if (t[i] == "strided")
          o.strided = true;
        else if (t[i] == "align") {
          std::optional<int64_t> n;
          if (i + 1 < t.size())
            n = detail::parseInt(t[i + 1]);
          if (!n || *n <= 0 || (*n & (*n - 1)) != 0 || *n > 4096)
            return fail("'align' takes a power of two up to 4096 (bytes)");
          o.align = *n;
          ++i;
        } else {
          if (o.optional || o.strided || o.align)
            return fail(
                "dimensions come before 'optional', 'strided' and 'align'");
          Expr dim;
          if (!expr(t[i], &dim))
            return false;
          o.shape.push_back(dim);
        }
      }
      m.operands.push_back(std::move(o));
    } else if (key == "workspace") {
      if (t.size() != 3 && !(t.size() == 4 && t[3] == "zero"))
        return fail("expected 'workspace NAME BYTES [zero]'");
      ManifestWorkspace w;
      w.name = t[1];
      if (!expr(t[2], &w.bytes))
        return false;
      w.zero = t.size() == 4;
      m.workspaces.push_back(std::move(w));
    } else if (key == "kernel") {
      if (!count(2))
        return false;
      ManifestKernel k;
      k.symbol = t[1];
      m.kernels.push_back(std::move(k));
      std::fill(std::begin(seen), std::end(seen), false);
    } else if (key == "when" || key == "grid" || key == "block" ||
               key == "shared" || key == "param") {
      if (m.kernels.empty())
        return fail("'" + std::string(key) + "' before any 'kernel'");
      ManifestKernel &k = m.kernels.back();
      int slot = key == "when"     ? 0
                 : key == "grid"   ? 1
                 : key == "block"  ? 2
                 : key == "shared" ? 3
                                   : -1;
      if (slot >= 0) {
        if (m.call == Call::CIface)
          return fail("a ciface kernel has no '" + std::string(key) + "'");
        if (seen[slot])
          return fail("'" + std::string(key) + "' appears twice in kernel " +
                      quote(k.symbol));
        seen[slot] = true;
      }
      if (key == "when") {
        if (!count(2) || !expr(t[1], &k.when))
          return false;
      } else if (key == "grid") {
        if (!count(4))
          return false;
        for (int i = 0; i < 3; ++i)
          if (!expr(t[1 + i], &k.grid[i]))
            return false;
      } else if (key == "block") {
        if (!count(4))
          return false;
        for (int i = 0; i < 3; ++i) {
          std::optional<int64_t> v = detail::parseInt(t[1 + i]);
          if (!v)
            return fail("block sizes are decimal integers");
          k.block[i] = *v;
        }
      } else if (key == "shared") {
        if (!count(2) || !expr(t[1], &k.shared))
          return false;
      } else {
        if (!count(4))
          return false;
        ManifestParam p;
        p.name = t[1];
        if (t[2] == "ptr")
          p.type = ManifestParam::Type::Ptr;
        else if (t[2] == "i64")
          p.type = ManifestParam::Type::I64;
        else if (t[2] == "i32")
          p.type = ManifestParam::Type::I32;
        else if (t[2] == "memref")
          p.type = ManifestParam::Type::MemRef;
        else
          return fail("bad parameter type " + quote(t[2]) +
                      " (ptr, i64, i32 or memref)");
        if (t[3][0] == '@')
          p.buffer = t[3].substr(1);
        else if (!expr(t[3], &p.value))
          return false;
        k.params.push_back(std::move(p));
      }
    } else {
      return fail("unknown item " + quote(key) +
                  " (call, size, operand, workspace, kernel, when, grid, "
                  "block, shared, param)");
    }
  }
  if (!sawCall) {
    line = {};
    ++lineNo;
    return fail("the manifest is empty");
  }
  std::string problem = m.validate();
  if (!problem.empty()) {
    *err = "manifest: " + problem;
    return false;
  }
  *out = std::move(m);
  return true;
}

//===----------------------------------------------------------------------===//
// Manifest: checks and queries
//===----------------------------------------------------------------------===//

const ManifestOperand *Manifest::operand(std::string_view name) const {
  for (const ManifestOperand &o : operands)
    if (o.name == name)
      return &o;
  return nullptr;
}

const ManifestWorkspace *Manifest::workspace(std::string_view name) const {
  for (const ManifestWorkspace &w : workspaces)
    if (w.name == name)
      return &w;
  return nullptr;
}

int64_t Manifest::maxBlockThreads() const {
  int64_t most = 0;
  if (call == Call::Gpu)
    for (const ManifestKernel &k : kernels)
      most = std::max(most, k.block[0] * k.block[1] * k.block[2]);
  return most;
}

int64_t Manifest::maxConstantShared() const {
  int64_t most = 0;
  if (call == Call::Gpu)
    for (const ManifestKernel &k : kernels)
      most = std::max(most, k.shared.constant().value_or(0));
  return most;
}

std::string Manifest::validate() const {
  std::set<std::string, std::less<>> names;
  auto declare = [&](const std::string &name, const char *what) {
    if (!isIdent(name))
      return std::string(what) + " name " + quote(name) +
             " is not an identifier";
    if (name == "num_sms" || name == "stride" || name == "cdiv" ||
        name == "min" || name == "max")
      return std::string(what) + " name " + quote(name) + " is reserved";
    if (!names.insert(name).second)
      return std::string(what) + " name " + quote(name) + " is declared twice";
    return std::string();
  };
  for (const std::string &s : sizes)
    if (std::string e = declare(s, "size"); !e.empty())
      return e;
  for (const ManifestOperand &o : operands) {
    if (std::string e = declare(o.name, "operand"); !e.empty())
      return e;
    if (o.shape.empty() || o.shape.size() > 8)
      return "operand " + quote(o.name) + " needs 1 to 8 dimensions, has " +
             std::to_string(o.shape.size());
  }
  for (const ManifestWorkspace &w : workspaces)
    if (std::string e = declare(w.name, "workspace"); !e.empty())
      return e;
  // Which names an expression may read.
  auto checkExpr = [&](const Expr &e, const std::string &where) {
    for (const std::string &n : e.names()) {
      if (n == "num_sms")
        continue;
      bool known = std::find(sizes.begin(), sizes.end(), n) != sizes.end();
      if (!known && n.rfind("stride(", 0) == 0) {
        size_t comma = n.find(',');
        std::optional<int64_t> axisValue =
            comma == std::string::npos || n.back() != ')'
                ? std::nullopt
                : detail::parseInt(std::string_view(n).substr(
                      comma + 1, n.size() - comma - 2));
        if (!axisValue || *axisValue < 0)
          return where + " reads a malformed stride " + quote(n);
        std::string opName = n.substr(7, comma - 7);
        int64_t axis = *axisValue;
        const ManifestOperand *o = operand(opName);
        if (!o)
          return where + " reads the stride of " + quote(opName) +
                 ", not an operand";
        if (axis >= static_cast<int64_t>(o->shape.size()))
          return where + " reads stride " + std::to_string(axis) + " of " +
                 quote(opName) + ", which has " +
                 std::to_string(o->shape.size()) + " dimensions";
        known = true;
      }
      if (!known)
        return where + " reads " + quote(n) +
               ", which is not a declared size (nor num_sms or a stride)";
    }
    return std::string();
  };
  for (const ManifestOperand &o : operands)
    for (const Expr &dim : o.shape)
      if (std::string e = checkExpr(dim, "operand " + o.name); !e.empty())
        return e;
  for (const ManifestWorkspace &w : workspaces)
    if (std::string e = checkExpr(w.bytes, "workspace " + w.name); !e.empty())
      return e;
  if (kernels.empty())
    return "no kernel";
  if (call == Call::CIface && kernels.size() != 1)
    return "a ciface manifest has one kernel, this one " +
           std::to_string(kernels.size());
  for (const ManifestKernel &k : kernels) {
    const std::string where = "kernel " + quote(k.symbol);
    if (!isIdent(k.symbol))
      return where + ": the symbol is not an identifier";
    if (call == Call::Gpu) {
      int64_t threads = 1;
      for (int64_t b : k.block) {
        if (b < 1 || b > 1024)
          return where + ": block sizes must be in 1..1024";
        threads *= b;
      }
      if (threads > 1024)
        return where + ": " + std::to_string(threads) +
               " threads a block, over 1024";
      for (const Expr *e :
           {&k.when, &k.grid[0], &k.grid[1], &k.grid[2], &k.shared})
        if (std::string m = checkExpr(*e, where); !m.empty())
          return m;
    }
    if (call == Call::CIface && k.params.size() > 16)
      return where + ": a ciface call takes at most 16 parameters, has " +
             std::to_string(k.params.size());
    std::set<std::string, std::less<>> paramNames;
    for (const ManifestParam &p : k.params) {
      const std::string pw = where + " parameter " + quote(p.name);
      if (!isParamName(p.name))
        return pw + ": not a name";
      if (!paramNames.insert(p.name).second)
        return pw + ": appears twice";
      const bool isMemRef = p.type == ManifestParam::Type::MemRef;
      if ((call == Call::CIface) != isMemRef)
        return pw + ": " +
               (call == Call::CIface
                    ? "a ciface kernel takes memref parameters only"
                    : "a gpu kernel takes ptr, i64 and i32 parameters");
      const bool pointer = isMemRef || p.type == ManifestParam::Type::Ptr;
      if (pointer != !p.buffer.empty())
        return pw + ": " +
               (pointer ? "a ptr or memref parameter is an @operand or "
                          "@workspace"
                        : "an integer parameter is an expression");
      if (!p.buffer.empty()) {
        if (!operand(p.buffer) && !(workspace(p.buffer) && !isMemRef))
          return pw + ": @" + p.buffer + " is not " +
                 (isMemRef ? "an operand" : "an operand or a workspace");
      } else if (std::string m = checkExpr(p.value, pw); !m.empty()) {
        return m;
      }
    }
  }
  return {};
}

} // namespace fmha::rt

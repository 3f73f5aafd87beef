//===- Expr.cpp - The integer expressions of a launch manifest ------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Manifest.h"

#include "Util.h"

#include <algorithm>

namespace fmha::rt {

using detail::quote;

//===----------------------------------------------------------------------===//
// Expr
//===----------------------------------------------------------------------===//

namespace {

bool isBinary(Expr::Op op) {
  return op != Expr::Op::Const && op != Expr::Op::Var;
}

/// Binding strength in the text form: sums, products, atoms and calls.
int precedence(Expr::Op op) {
  switch (op) {
  case Expr::Op::Add:
  case Expr::Op::Sub:
    return 1;
  case Expr::Op::Mul:
  case Expr::Op::Div:
  case Expr::Op::Rem:
    return 2;
  default:
    return 3;
  }
}

const char *functionName(Expr::Op op) {
  switch (op) {
  case Expr::Op::CeilDiv:
    return "cdiv";
  case Expr::Op::Min:
    return "min";
  case Expr::Op::Max:
    return "max";
  default:
    return nullptr;
  }
}

char infixSymbol(Expr::Op op) {
  switch (op) {
  case Expr::Op::Add:
    return '+';
  case Expr::Op::Sub:
    return '-';
  case Expr::Op::Mul:
    return '*';
  case Expr::Op::Div:
    return '/';
  case Expr::Op::Rem:
    return '%';
  default:
    return '?';
  }
}

/// Recursive descent over the text form, appending postfix nodes.
class ExprParser {
public:
  explicit ExprParser(std::string_view text) : text_(text) {}

  bool parse(std::vector<Expr::Node> *out, std::string *err) {
    nodes_.clear();
    if (!sum())
      return fail(err);
    if (pos_ != text_.size()) {
      error_ = "unexpected " + quote(text_.substr(pos_, 1)) + " at column " +
               std::to_string(pos_ + 1);
      return fail(err);
    }
    *out = std::move(nodes_);
    return true;
  }

private:
  bool fail(std::string *err) {
    *err = "bad expression " + quote(text_) + ": " + error_;
    return false;
  }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool expect(char c) {
    if (at(c)) {
      ++pos_;
      return true;
    }
    error_ = std::string("expected '") + c + "' at column " +
             std::to_string(pos_ + 1);
    return false;
  }
  void emit(Expr::Op op) {
    Expr::Node n;
    n.op = op;
    nodes_.push_back(std::move(n));
  }

  bool sum() {
    if (!product())
      return false;
    while (at('+') || at('-')) {
      Expr::Op op = at('+') ? Expr::Op::Add : Expr::Op::Sub;
      ++pos_;
      if (!product())
        return false;
      emit(op);
    }
    return true;
  }

  bool product() {
    if (!atom())
      return false;
    while (at('*') || at('/') || at('%')) {
      Expr::Op op = at('*')   ? Expr::Op::Mul
                    : at('/') ? Expr::Op::Div
                              : Expr::Op::Rem;
      ++pos_;
      if (!atom())
        return false;
      emit(op);
    }
    return true;
  }

  bool atom() {
    if (++depth_ > 64) {
      error_ = "nested too deeply";
      return false;
    }
    bool ok = atomInner();
    --depth_;
    return ok;
  }

  bool atomInner() {
    if (at('(')) {
      ++pos_;
      return sum() && expect(')');
    }
    size_t start = pos_;
    if (pos_ < text_.size() && detail::isDigit(text_[pos_])) {
      while (pos_ < text_.size() && detail::isDigit(text_[pos_]))
        ++pos_;
      std::optional<int64_t> v =
          detail::parseInt(text_.substr(start, pos_ - start));
      if (!v) {
        error_ = "integer " + quote(text_.substr(start, pos_ - start)) +
                 " out of range";
        return false;
      }
      Expr::Node n;
      n.value = *v;
      nodes_.push_back(n);
      return true;
    }
    if (pos_ >= text_.size() || !detail::isNameStart(text_[pos_])) {
      error_ = pos_ >= text_.size()
                   ? std::string("unexpected end")
                   : "unexpected " + quote(text_.substr(pos_, 1)) +
                         " at column " + std::to_string(pos_ + 1);
      return false;
    }
    while (pos_ < text_.size() && detail::isNameChar(text_[pos_]))
      ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    if (!at('(')) {
      Expr::Node n;
      n.op = Expr::Op::Var;
      n.name = name;
      nodes_.push_back(std::move(n));
      return true;
    }
    ++pos_;
    if (name == "stride") {
      size_t first = pos_;
      while (pos_ < text_.size() && detail::isNameChar(text_[pos_]))
        ++pos_;
      std::string operand(text_.substr(first, pos_ - first));
      if (operand.empty() || !detail::isNameStart(operand[0])) {
        error_ = "stride() takes an operand name first";
        return false;
      }
      if (!expect(','))
        return false;
      size_t digits = pos_;
      while (pos_ < text_.size() && detail::isDigit(text_[pos_]))
        ++pos_;
      std::optional<int64_t> axis =
          detail::parseInt(text_.substr(digits, pos_ - digits));
      if (!axis || *axis > 64) {
        error_ = "stride() takes an axis (0..64) second";
        return false;
      }
      if (!expect(')'))
        return false;
      Expr::Node n;
      n.op = Expr::Op::Var;
      n.name = Expr::strideName(operand, *axis);
      nodes_.push_back(std::move(n));
      return true;
    }
    Expr::Op op;
    if (name == "cdiv")
      op = Expr::Op::CeilDiv;
    else if (name == "min")
      op = Expr::Op::Min;
    else if (name == "max")
      op = Expr::Op::Max;
    else {
      error_ = "unknown function " + quote(name) +
               " (cdiv, min, max and stride are known)";
      return false;
    }
    if (!sum() || !expect(',') || !sum() || !expect(')'))
      return false;
    emit(op);
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Expr::Node> nodes_;
  std::string error_;
};

} // namespace

Expr::Expr(int64_t value) {
  Node n;
  n.value = value;
  nodes_.push_back(n);
}

Expr Expr::var(std::string name) {
  Expr e;
  e.nodes_[0].op = Op::Var;
  e.nodes_[0].name = std::move(name);
  return e;
}

std::string Expr::strideName(std::string_view operand, int64_t axis) {
  return "stride(" + std::string(operand) + "," + std::to_string(axis) + ")";
}

Expr Expr::binary(Op op, const Expr &r) const {
  // x * 1, 1 * x, x + 0, x - 0, x / 1 and cdiv(x, 1) are x.
  auto isConst = [](const Expr &e, int64_t v) {
    return e.nodes_.size() == 1 && e.nodes_[0].op == Op::Const &&
           e.nodes_[0].value == v;
  };
  if ((op == Op::Mul && isConst(r, 1)) || (op == Op::Add && isConst(r, 0)) ||
      (op == Op::Sub && isConst(r, 0)) ||
      ((op == Op::Div || op == Op::CeilDiv) && isConst(r, 1)))
    return *this;
  if ((op == Op::Mul && isConst(*this, 1)) ||
      (op == Op::Add && isConst(*this, 0)))
    return r;
  // Two constants fold (unless the operation fails: it stays, to fail when
  // evaluated).
  if (nodes_.size() == 1 && nodes_[0].op == Op::Const && r.nodes_.size() == 1 &&
      r.nodes_[0].op == Op::Const) {
    Expr e = *this;
    e.nodes_.push_back(r.nodes_[0]);
    Node n;
    n.op = op;
    e.nodes_.push_back(n);
    std::string ignored;
    if (std::optional<int64_t> v = e.evaluate({}, &ignored))
      return Expr(*v);
  }
  Expr e = *this;
  e.nodes_.insert(e.nodes_.end(), r.nodes_.begin(), r.nodes_.end());
  Node n;
  n.op = op;
  e.nodes_.push_back(n);
  return e;
}

std::optional<Expr> Expr::parse(std::string_view text, std::string *err) {
  Expr e;
  if (!ExprParser(text).parse(&e.nodes_, err))
    return std::nullopt;
  return e;
}

std::string Expr::str() const {
  struct Part {
    std::string text;
    int prec;
  };
  std::vector<Part> stack;
  for (const Node &n : nodes_) {
    if (n.op == Op::Const) {
      stack.push_back({std::to_string(n.value), 3});
      continue;
    }
    if (n.op == Op::Var) {
      stack.push_back({n.name, 3});
      continue;
    }
    if (stack.size() < 2)
      return "?";
    Part r = std::move(stack.back());
    stack.pop_back();
    Part l = std::move(stack.back());
    stack.pop_back();
    if (const char *fn = functionName(n.op)) {
      stack.push_back({std::string(fn) + "(" + l.text + "," + r.text + ")", 3});
      continue;
    }
    int p = precedence(n.op);
    std::string lt = l.prec < p ? "(" + l.text + ")" : l.text;
    std::string rtext = r.prec <= p ? "(" + r.text + ")" : r.text;
    stack.push_back({lt + infixSymbol(n.op) + rtext, p});
  }
  return stack.size() == 1 ? stack[0].text : "?";
}

std::optional<int64_t>
Expr::evaluate(const std::map<std::string, int64_t, std::less<>> &env,
               std::string *err) const {
  std::vector<int64_t> stack;
  auto fail = [&](const std::string &why) {
    *err = "expression " + quote(str()) + ": " + why;
    return std::nullopt;
  };
  for (const Node &n : nodes_) {
    if (n.op == Op::Const) {
      stack.push_back(n.value);
      continue;
    }
    if (n.op == Op::Var) {
      auto it = env.find(n.name);
      if (it == env.end())
        return fail("no value for " + quote(n.name));
      stack.push_back(it->second);
      continue;
    }
    if (stack.size() < 2)
      return fail("malformed");
    int64_t r = stack.back();
    stack.pop_back();
    int64_t l = stack.back();
    stack.pop_back();
    int64_t v = 0;
    bool overflow = false;
    switch (n.op) {
    case Op::Add:
      overflow = __builtin_add_overflow(l, r, &v);
      break;
    case Op::Sub:
      overflow = __builtin_sub_overflow(l, r, &v);
      break;
    case Op::Mul:
      overflow = __builtin_mul_overflow(l, r, &v);
      break;
    case Op::Div:
    case Op::Rem:
    case Op::CeilDiv:
      if (r <= 0 || l < 0)
        return fail("division of " + std::to_string(l) + " by " +
                    std::to_string(r) +
                    " (needs a non-negative dividend and a positive divisor)");
      v = n.op == Op::Div   ? l / r
          : n.op == Op::Rem ? l % r
                            : l / r + (l % r != 0);
      break;
    case Op::Min:
      v = std::min(l, r);
      break;
    case Op::Max:
      v = std::max(l, r);
      break;
    default:
      return fail("malformed");
    }
    if (overflow)
      return fail("overflows 64 bits (" + std::to_string(l) + " " +
                  infixSymbol(n.op) + " " + std::to_string(r) + ")");
    stack.push_back(v);
  }
  if (stack.size() != 1)
    return fail("malformed");
  return stack[0];
}

std::optional<int64_t> Expr::constant() const {
  std::string ignored;
  if (!names().empty())
    return std::nullopt;
  return evaluate({}, &ignored);
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  for (const Node &n : nodes_)
    if (n.op == Op::Var &&
        std::find(out.begin(), out.end(), n.name) == out.end())
      out.push_back(n.name);
  return out;
}

bool Expr::operator==(const Expr &o) const {
  if (nodes_.size() != o.nodes_.size())
    return false;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &a = nodes_[i], &b = o.nodes_[i];
    if (a.op != b.op || (a.op == Op::Const && a.value != b.value) ||
        (a.op == Op::Var && a.name != b.name))
      return false;
  }
  return true;
}

} // namespace fmha::rt

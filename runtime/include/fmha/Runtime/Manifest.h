//===- Manifest.h - The launch manifest of a bundle -------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A launch manifest says how to run a bundle's binary, so that one generic
// launch path in the runtime serves every kernel kind and a new operand
// needs no new entry point (DESIGN.md section 4). `fmha-compile` derives it
// from the host side of the lowered IR (the `gpu.launch_func` ops and the
// values they take); the runtime binds names to it and launches.
//
// What it holds:
//   - sizes: the run-time sizes the caller gives by name (b, sq, sk; s for a
//     merge; n for an accumulate);
//   - operands: the tensors the caller gives by name, with their role (in,
//     out, inout), element type, shape (expressions of the sizes), whether
//     the caller may leave them out (optional: the runtime then gives the
//     kernels scratch memory) and whether the kernels take any strides
//     (strided) or contiguous row-major memory only;
//   - workspaces: device scratch the runtime provides (or the caller, as
//     one buffer), each at the next 256-byte boundary of the workspace, its
//     size in bytes an expression, zeroed before the first launch when
//     marked `zero`;
//   - kernels, launched in order on one stream: the symbol, a condition
//     (launched when it is not 0), grid (expressions), block (constants),
//     dynamic shared memory (an expression), and the parameters, each named
//     and typed (ptr, i64, i32; memref for the host's ciface call) with a
//     value: `@name` (the address of an operand or workspace) or an
//     expression.
//
// Expressions are integers over the sizes, the device's properties (num_sms:
// multiprocessors on CUDA, compute units on HIP, cores on the host) and the
// operands' strides (stride(q,2), in elements): decimal literals, names,
// + - * / (floor division) %, and the functions cdiv(a,b), min(a,b),
// max(a,b), stride(operand,axis). Evaluation fails, never wraps, on an
// overflow or a division by zero.
//
// Text form (one item a line, tokens separated by one space, expressions
// written without spaces), as the bundle stores it:
//
//   call gpu                             (gpu | ciface)
//   size b
//   operand q in bf16 b 16 sq 128        (name role type dims... [optional]
//                                         [strided])
//   workspace dsum 4*b*16*sq [zero]
//   kernel attn_fwd                      (the items below belong to it)
//   when 1
//   grid cdiv(sq,128) 16 b
//   block 256 1 1
//   shared 66560
//   param q.allocated ptr @q
//   param b i64 b
//
// A ciface manifest has one kernel, no grid, block, shared or when, and only
// memref parameters (the host calls `_mlir_ciface_<symbol>` with pointers to
// their descriptors, in order).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_MANIFEST_H
#define FMHA_RUNTIME_MANIFEST_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fmha::rt {

/// An integer expression of a manifest (value semantics; postfix nodes).
class Expr {
public:
  enum class Op { Const, Var, Add, Sub, Mul, Div, Rem, CeilDiv, Min, Max };
  struct Node {
    Op op = Op::Const;
    int64_t value = 0; ///< Const
    std::string name;  ///< Var ("b", "num_sms", "stride(q,2)")
  };

  Expr() : Expr(0) {}
  /// A constant.
  Expr(int64_t value);
  static Expr var(std::string name);
  /// The canonical name of an operand's stride variable: "stride(q,2)".
  static std::string strideName(std::string_view operand, int64_t axis);

  Expr operator+(const Expr &r) const { return binary(Op::Add, r); }
  Expr operator-(const Expr &r) const { return binary(Op::Sub, r); }
  Expr operator*(const Expr &r) const { return binary(Op::Mul, r); }
  Expr operator/(const Expr &r) const { return binary(Op::Div, r); }
  Expr operator%(const Expr &r) const { return binary(Op::Rem, r); }
  Expr ceilDiv(const Expr &r) const { return binary(Op::CeilDiv, r); }
  Expr min(const Expr &r) const { return binary(Op::Min, r); }
  Expr max(const Expr &r) const { return binary(Op::Max, r); }

  /// Parses the text form. On failure returns nullopt and sets *err.
  static std::optional<Expr> parse(std::string_view text, std::string *err);
  /// The text form, without spaces (parse(str()) gives the same nodes).
  std::string str() const;

  /// The value under `env` (every name the expression uses). On a missing
  /// name, an overflow, a division or remainder by zero or a negative
  /// division returns nullopt and sets *err.
  std::optional<int64_t>
  evaluate(const std::map<std::string, int64_t, std::less<>> &env,
           std::string *err) const;

  /// The constant value when the expression has no names.
  std::optional<int64_t> constant() const;
  /// The variable names the expression reads.
  std::vector<std::string> names() const;

  const std::vector<Node> &nodes() const { return nodes_; }
  bool operator==(const Expr &o) const;
  bool operator!=(const Expr &o) const { return !(*this == o); }

private:
  Expr binary(Op op, const Expr &r) const;
  std::vector<Node> nodes_;
};

/// Element types of manifest operands.
enum class ScalarType { F32, F16, BF16, I32, I64 };
const char *toString(ScalarType t);
std::optional<ScalarType> parseScalarType(std::string_view s);
size_t scalarSize(ScalarType t);

struct ManifestOperand {
  enum class Role { In, Out, InOut };
  std::string name;
  Role role = Role::In;
  ScalarType type = ScalarType::F32;
  std::vector<Expr> shape;
  /// The caller may leave it out; the runtime then gives the kernels
  /// scratch memory for it (and waits for them before freeing it).
  bool optional = false;
  /// The kernels take any strides on every axis but the last, which is
  /// contiguous (stride(name,axis) in the parameters); an output's must not
  /// overlap. Otherwise the operand must be contiguous row-major.
  bool strided = false;
  /// `align N`: the operand's address and, strided, each stride but the
  /// last (of an axis longer than 1) in bytes are multiples of N; 0: the
  /// element's own alignment.
  int64_t align = 0;
};
const char *toString(ManifestOperand::Role r);

struct ManifestWorkspace {
  std::string name;
  Expr bytes;
  /// Zeroed (on the stream) before the first kernel is launched.
  bool zero = false;
};

struct ManifestParam {
  enum class Type { Ptr, I64, I32, MemRef };
  std::string name;
  Type type = Type::I64;
  /// `@buffer`: the address (ptr) or the descriptor (memref) of an operand
  /// or a workspace; otherwise `value`.
  std::string buffer;
  Expr value;
};
const char *toString(ManifestParam::Type t);

struct ManifestKernel {
  std::string symbol;
  Expr when = Expr(1);
  Expr grid[3] = {Expr(1), Expr(1), Expr(1)};
  int64_t block[3] = {1, 1, 1};
  Expr shared = Expr(0);
  std::vector<ManifestParam> params;
};

struct Manifest {
  enum class Call { Gpu, CIface };
  Call call = Call::Gpu;
  std::vector<std::string> sizes;
  std::vector<ManifestOperand> operands;
  std::vector<ManifestWorkspace> workspaces;
  std::vector<ManifestKernel> kernels;

  /// The text form (one item a line, each ending in '\n').
  std::string str() const;
  /// Parses the text form: lines as str() writes them, each ending in '\n'.
  /// `firstLine` numbers the first for messages. On failure returns false
  /// and sets *err (one line, naming the line and the problem).
  static bool parse(std::string_view text, int firstLine, Manifest *out,
                    std::string *err);
  /// Every name an identifier (operand and workspace names may hold '.'
  /// only in parameters), unique among sizes, operands and workspaces;
  /// every expression over declared sizes, num_sms and strides of declared
  /// operands (axis < rank); every @ref to a declared operand or workspace;
  /// ptr and memref parameters only as @refs; gpu kernels with blocks of
  /// 1..1024 threads in all and no memref parameter; a ciface manifest
  /// with one kernel of memref parameters only, at most 16. Returns an
  /// empty string when valid, else the message.
  std::string validate() const;

  const ManifestOperand *operand(std::string_view name) const;
  const ManifestWorkspace *workspace(std::string_view name) const;
  /// The largest block (threads) and dynamic shared memory of the kernels
  /// when constant (0 for a ciface manifest or an expression).
  int64_t maxBlockThreads() const;
  int64_t maxConstantShared() const;
};

} // namespace fmha::rt

#endif // FMHA_RUNTIME_MANIFEST_H

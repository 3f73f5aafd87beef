//===- GpuKernelUtils.h - Shared pieces of the GPU kernel builders -*- C++ -*-//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What the forward, backward, merge and accumulate kernel builders of
// --fmha-lower-to-gpu share: f32 arithmetic that routes exp2/log2 through the
// target, the kernel module, flat views of operands, and the per-op lowering
// entry points.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_LOWERING_COMMON_GPUKERNELUTILS_H
#define FMHA_LOWERING_COMMON_GPUKERNELUTILS_H

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"

#include <limits>

namespace mlir::fmha {

/// The gpu.module every kernel of --fmha-lower-to-gpu lands in.
inline constexpr const char *kKernelModuleName = "fmha_kernels";

/// Workgroup-memory rows are padded by 16 bytes so that the eight rows an 8x8
/// matrix load reads fall in different banks.
inline constexpr int64_t kRowPad = 8;

/// f32 helpers for kernel bodies.
struct FloatMath {
  OpBuilder &b;
  Location loc;
  const GpuTarget &target;

  Value c(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value negInf() { return c(-std::numeric_limits<double>::infinity()); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value max(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value exp2(Value x) { return target.emitExp2(b, loc, x); }
  /// x * y + z, rounded once: LLVM's intrinsic, which every target has as
  /// an instruction (math.fma would become a call into NVIDIA's libdevice,
  /// which a PTX bundle written without a CUDA toolkit cannot resolve).
  Value fma(Value x, Value y, Value z) {
    return LLVM::FMAOp::create(b, loc, x, y, z);
  }
  Value log2(Value x) { return target.emitLog2(b, loc, x); }
  /// tanh(x) = 1 - 2 / (exp(2x) + 1), from exp2 alone (no math library on
  /// the device); exact at both saturated ends.
  Value tanh(Value x) {
    Value e = exp2(mul(x, c(2.0 * 1.4426950408889634)));
    Value q = arith::DivFOp::create(b, loc, c(2.0), add(e, c(1.0)));
    return sub(c(1.0), q);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
};

/// The module's `gpu.module @fmha_kernels`, created (and the module marked as
/// a GPU container) on first use.
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module, Location loc);

/// A kernel gpu.func taking `argTypes`, appended to the module's kernel
/// module (getOrCreateKernelModule) for `op`: named `kernelName` or, when
/// that is empty, `<function around op>_kernel` (`<fallback>_kernel` outside
/// a function), made unique in the kernel module, with a known block size
/// of (`blockThreads`, 1, 1). Its entry block is empty.
gpu::GPUFuncOp createKernelFunc(Operation *op, ModuleOp module,
                                StringRef kernelName, StringRef fallback,
                                TypeRange argTypes, int64_t blockThreads);

/// A rank-1 view of a contiguous memref (memref.collapse_shape), cast to
/// memref<?xT> as the kernels take it.
Value collapseToRank1(OpBuilder &b, Location loc, Value memref);

/// The type a kernel takes a tensor operand of type `type` as: its shape,
/// any offset and strides but a contiguous last axis
/// (`strided<[?, ..., ?, 1], offset: ?>`), in global memory.
MemRefType stridedKernelType(MemRefType type);

/// The host side of a tensor operand: `memref` (any layout whose last axis
/// is contiguous) cast to its stridedKernelType.
Value castToKernelType(OpBuilder &b, Location loc, Value memref);

/// Whether a memref's last axis is statically contiguous (stride 1), what
/// the kernels' 16-byte row copies need.
bool hasContiguousRows(MemRefType type);

/// A kernel's tensor operand (a stridedKernelType argument) as the kernel
/// reads it: a rank-1 view `flat` of its whole buffer and the element
/// offset and strides that place each element in it.
struct GlobalTensor {
  Value flat;
  Value offset;
  SmallVector<Value> strides;

  /// Opens kernel argument `arg` (memref.extract_strided_metadata and a
  /// rank-1 memref.reinterpret_cast of the base buffer).
  static GlobalTensor open(OpBuilder &b, Location loc, Value arg);
  /// The element offset of index (outer..., 0, ..., 0): offset plus each
  /// given leading index times its stride.
  Value at(OpBuilder &b, Location loc, ArrayRef<Value> outer) const;
  /// The stride of the second-to-last axis (the rows of a [.., S, D] view).
  Value rowStride() const { return strides[strides.size() - 2]; }
};

/// The attribute on a gpu.launch_func naming, per kernel operand, the byte
/// alignment the kernel needs of each row start of that operand (its
/// address and every stride but the last's); 0 where nothing beyond the
/// element's own. The launch manifest carries it (`align`).
inline constexpr const char *kOperandAlignAttrName = "fmha.operand_align";

/// A view of `shape` elements of `elementType` at `byteOffset` into the
/// kernel's dynamic workgroup memory `raw` (memref<?xi8, workgroup>).
Value workgroupView(OpBuilder &b, Location loc, Value raw, Value byteOffset,
                    ArrayRef<int64_t> shape, Type elementType);
Value workgroupView(OpBuilder &b, Location loc, Value raw, int64_t byteOffset,
                    ArrayRef<int64_t> shape, Type elementType);

/// Warpgroup products (GpuTarget::emitWarpgroupMma): 64 rows over four
/// warps; their operands in the 128-byte swizzle start 1024-aligned.
inline constexpr int64_t kWarpgroupRows = 64;
inline constexpr int64_t kWarpgroupWarps = 4;
inline constexpr int64_t kSwizzleAlign = 1024;

/// The first `align`-aligned byte of the kernel's dynamic workgroup memory
/// `raw`: its offset into `raw` (index) and its address in the shared
/// address space (i64, for warpgroup descriptors). The kernel reserves
/// `align` bytes of slack.
struct AlignedWorkgroup {
  Value pad, address;
};
AlignedWorkgroup alignWorkgroup(OpBuilder &b, Location loc, Value raw,
                                int64_t align);

/// The i64 shared address `offset` bytes (plus the index `dynamicOffset`,
/// where not null) past `base` (AlignedWorkgroup::address).
Value offsetAddress(OpBuilder &b, Location loc, Value base, int64_t offset,
                    Value dynamicOffset);

/// Buffer `buf` (rank-reduced 2-d view) of a [stages][rows][cols] buffer set.
Value selectBuffer(OpBuilder &b, Location loc, Value buffers, Value buf);

/// Copies `rows` rows of `width` 16-bit elements, rows row0 .. row0 + rows -
/// 1 of the global rank-1 memref `global` starting at element `base`,
/// `rowStride` elements apart (rows past `rowLast` read row `rowLast` again),
/// into buffer `buf` of `buffers`
/// ([stages][rows][width + pad]), 16 bytes per copy, spread over the
/// `threads` threads (`tid`). Appends the target's async-copy tokens. With
/// `swizzled` the buffers are [stages][width / 64][rows][64] instead, in
/// Hopper's 128-byte swizzle: the 16-byte chunk j of a row r's 64 elements
/// goes to chunk j ^ (r % 8) (width a multiple of 64, rows of 8; each stage
/// 1024-aligned in the shared address space).
void emitCopyRows(OpBuilder &b, Location loc, const GpuTarget &target,
                  Value global, Value base, Value rowStride, int64_t width,
                  int64_t rows, Value row0, Value rowLast, Value buffers,
                  Value buf, Value tid, int64_t threads,
                  SmallVectorImpl<Value> &tokens, bool swizzled = false);

/// Stores the C elements in row slot `slot` of `tiles` N-wide tiles of a
/// warp's row block: value(b, j, e), the f32 value of element e of tile j,
/// rounded to `elementType`, goes to mem[rowBase + N j + col(e)] (`cCoords`:
/// the lane's C coordinates). Where the target lays C pairs out as adjacent
/// columns (cPairsAreAdjacent), a pair is one 4-byte store (rowBase and the
/// row width even).
void emitStoreCRowSlot(OpBuilder &b, Location loc, const GpuTarget &target,
                       Type elementType, int64_t tiles, int64_t slot,
                       ArrayRef<FragmentCoord> cCoords,
                       function_ref<Value(OpBuilder &, int64_t, int64_t)> value,
                       Value mem, Value rowBase);

/// A software-pipelined loop over tiles [lb, ub) carrying `init`: with two
/// copy stages the copies of tile t + 1 (into buffer 1 - buf) are issued
/// before tile t (in buffer buf = (t - lb) % 2) is computed; with one stage
/// each tile's copies complete before its math. `issue(b, t, buf)` issues the
/// copies of tile t (t may be ub: clamp) and returns their group token;
/// `body(b, t, buf, args)` computes tile t and returns the new values. Both
/// barriers (tile visible; buffer free) are emitted here.
scf::ForOp emitPipelinedTileLoop(
    OpBuilder &b, Location loc, const GpuTarget &target, Value lb, Value ub,
    ValueRange init, function_ref<Value(OpBuilder &, Value, Value)> issue,
    function_ref<SmallVector<Value>(OpBuilder &, Value, Value, ValueRange)>
        body);

/// Lowers one fmha.attention_bwd on memrefs to its kernels and launches
/// (GpuAttentionBwdKernel.cpp); emits the diagnostic on failure.
/// `blockM`, `blockN`, `warpRows` are the pass options (the backward kernels
/// take block-m = block-n and one MMA row block per warp); `wgmma`: the dkdv
/// kernel of warpgroup products (`mma=wgmma`).
LogicalResult lowerAttentionBwdToGpu(AttentionBwdOp op, const GpuTarget &target,
                                     StringRef chip, StringRef kernelName,
                                     int64_t blockM, int64_t blockN,
                                     int64_t warpRows, bool wgmma);

} // namespace mlir::fmha

#endif // FMHA_LOWERING_COMMON_GPUKERNELUTILS_H

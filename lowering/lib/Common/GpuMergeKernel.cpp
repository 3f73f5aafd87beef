//===- GpuMergeKernel.cpp - fmha.merge -> GPU kernel ----------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-lower-to-gpu: each fmha.merge on memrefs ([B, H, S, Dv] partials,
// [B, H, S] lse) becomes an elementwise gpu.func over the B*H*S rows and a
// gpu.launch_func on the host. Per row (DESIGN.md section 1, merge; the same
// arithmetic as the host lowering, MergeToLoops.cpp, in base 2):
//
//   m   = max(lse1, lse2)                 (0 when both are -inf)
//   w_i = lse_i == -inf ? 0 : 2^((lse_i - m) log2 e)
//   lse = both empty ? -inf : m + log2(w1 + w2) ln 2
//   o   = (w1 o1 + w2 o2) / (w1 + w2)     (an empty partial's o is never
//                                          read into the sum: 0, never NaN)
//
// f32 arithmetic, o rounded to its element type (f16, bf16 or f32).
//
// Kernel ABI (gpu-merge-v1): (o1: memref<?xT>, lse1: memref<?xf32>, o2, lse2,
// o, lse, rows: index) over contiguous buffers, rows = B*H*S. A row belongs
// to kLanesPerRow consecutive threads of a workgroup of kBlockThreads
// threads; lane l of a row handles columns l, l + 32, ... < Dv, so a warp's
// loads are contiguous. grid (ceil(rows / (kBlockThreads / kLanesPerRow)),
// 1, 1), block (kBlockThreads, 1, 1), no workgroup memory.
//
// In place: each o element is read (o1, o2) and written (o) by one thread,
// and a row's lse is written after a workgroup barrier that follows every
// read of lse1 and lse2 of that row, so o may be o1 or o2 and lse may be
// lse1 or lse2 (the ring driver merges into its running partial).
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include <string>

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// Threads of a row and of a workgroup (gpu-merge-v1, Runtime.h).
constexpr int64_t kLanesPerRow = 32;
constexpr int64_t kBlockThreads = 256;

/// Why the kernel cannot take `op`, or empty.
std::string checkMerge(MergeOp op) {
  if (!op.hasPureBufferSemantics())
    return "the GPU lowering takes fmha.merge on memrefs (bufferize first)";
  for (Value v : op->getOperands())
    if (!cast<MemRefType>(v.getType()).getLayout().isIdentity())
      return "the GPU lowering needs contiguous (identity-layout) memrefs";
  auto o1 = cast<MemRefType>(op.getO1().getType());
  if (o1.isDynamicDim(1) || o1.isDynamicDim(3))
    return "the GPU merge kernel needs a static head count H and value head "
           "dim Dv (only B and S may be dynamic)";
  Type elt = o1.getElementType();
  for (Value v : {op.getO2(), op.getO()}) {
    Type other = cast<MemRefType>(v.getType()).getElementType();
    if (other != elt) {
      std::string a, b;
      llvm::raw_string_ostream(a) << elt;
      llvm::raw_string_ostream(b) << other;
      return "the GPU merge kernel needs o1, o2 and o of one element type, "
             "got " +
             a + " and " + b;
    }
  }
  return {};
}

/// The body of the merge kernel over the entry block's arguments.
void buildMergeBody(OpBuilder &b, Location loc, const GpuTarget &target,
                    Block &entry, Type elt, int64_t dv) {
  IndexMath im{b, loc};
  FloatMath fm{b, loc, target};
  Value o1 = entry.getArgument(0), lse1 = entry.getArgument(1);
  Value o2 = entry.getArgument(2), lse2 = entry.getArgument(3);
  Value o = entry.getArgument(4), lse = entry.getArgument(5);
  Value rows = entry.getArgument(6);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value lanes = im.c(kLanesPerRow);
  Value lane = im.rem(tid, lanes);
  Value row = im.add(im.mul(bid, im.c(kBlockThreads / kLanesPerRow)),
                     im.div(tid, lanes));
  Value inRange = im.lt(row, rows);
  // Rows past the end read row 0 (rows >= 1) and write nothing; every
  // thread reaches the barrier.
  Value safeRow = im.select(inRange, row, im.c(0));

  Value l1 = memref::LoadOp::create(b, loc, lse1, safeRow);
  Value l2 = memref::LoadOp::create(b, loc, lse2, safeRow);
  auto isNegInf = [&](Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                 fm.negInf())
        .getResult();
  };
  Value empty1 = isNegInf(l1), empty2 = isNegInf(l2);
  Value both = arith::AndIOp::create(b, loc, empty1, empty2);
  Value m = fm.select(both, fm.c(0.0), fm.max(l1, l2));
  const double log2e = 1.4426950408889634, ln2 = 0.6931471805599453;
  auto weight = [&](Value l, Value empty) {
    return fm.select(empty, fm.c(0.0),
                     fm.exp2(fm.mul(fm.sub(l, m), fm.c(log2e))));
  };
  Value w1 = weight(l1, empty1), w2 = weight(l2, empty2);
  Value sum = fm.select(both, fm.c(1.0), fm.add(w1, w2));
  Value inv = arith::DivFOp::create(b, loc, fm.c(1.0), sum);
  Value a1 = fm.mul(w1, inv), a2 = fm.mul(w2, inv);
  Value merged =
      fm.select(both, fm.negInf(), fm.fma(fm.log2(sum), fm.c(ln2), m));

  Type f32 = b.getF32Type();
  auto toF32 = [&](OpBuilder &ob, Value x) -> Value {
    return elt.isF32() ? x : arith::ExtFOp::create(ob, loc, f32, x);
  };
  auto fromF32 = [&](OpBuilder &ob, Value x) -> Value {
    return elt.isF32() ? x : arith::TruncFOp::create(ob, loc, elt, x);
  };
  scf::IfOp::create(b, loc, inRange, [&](OpBuilder &tb, Location) {
    IndexMath tm{tb, loc};
    Value base = tm.mul(row, tm.c(dv));
    scf::ForOp::create(
        tb, loc, lane, tm.c(dv), lanes, ValueRange{},
        [&](OpBuilder &lb, Location, Value col, ValueRange) {
          FloatMath lm{lb, loc, target};
          IndexMath li{lb, loc};
          Value at = li.add(base, col);
          auto term = [&](Value src, Value a, Value empty) {
            Value x = toF32(lb, memref::LoadOp::create(lb, loc, src, at));
            return lm.select(empty, lm.c(0.0), lm.mul(x, a));
          };
          Value out = lm.add(term(o1, a1, empty1), term(o2, a2, empty2));
          memref::StoreOp::create(lb, loc, fromF32(lb, out), o, at);
          scf::YieldOp::create(lb, loc);
        });
    scf::YieldOp::create(tb, loc);
  });
  // Every read of this workgroup's lse1, lse2 happens before any write of
  // lse (they may be one buffer).
  target.emitBarrier(b, loc);
  Value writer = arith::AndIOp::create(
      b, loc, inRange, im.cmp(arith::CmpIPredicate::eq, lane, im.c(0)));
  scf::IfOp::create(b, loc, writer, [&](OpBuilder &tb, Location) {
    memref::StoreOp::create(tb, loc, merged, lse, row);
    scf::YieldOp::create(tb, loc);
  });
}

} // namespace

LogicalResult mlir::fmha::lowerMergeToGpu(MergeOp op, const GpuTarget &target,
                                          StringRef, StringRef kernelName) {
  std::string error = checkMerge(op);
  if (!error.empty())
    return op.emitOpError() << error;
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return op.emitOpError() << "the GPU lowering needs fmha.merge in a module";
  Location loc = op.getLoc();
  OpBuilder b(op);
  auto oType = cast<MemRefType>(op.getO1().getType());
  Type elt = oType.getElementType();
  const int64_t dv = oType.getDimSize(3);
  auto flat = MemRefType::get({ShapedType::kDynamic}, elt);
  auto flatF32 = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  gpu::GPUFuncOp func = createKernelFunc(
      op, module, kernelName, "merge",
      {flat, flatF32, flat, flatF32, flat, flatF32, b.getIndexType()},
      kBlockThreads);
  Block &entry = func.getBody().front();
  OpBuilder kb = OpBuilder::atBlockBegin(&entry);
  buildMergeBody(kb, loc, target, entry, elt, dv);
  gpu::ReturnOp::create(kb, loc);

  // Host side: flat views and the launch.
  IndexMath im{b, loc};
  Value rows = im.mul(im.mul(im.dim(op.getO1(), 0), im.dim(op.getO1(), 1)),
                      im.dim(op.getO1(), 2));
  gpu::KernelDim3 grid{im.ceilDiv(rows, im.c(kBlockThreads / kLanesPerRow)),
                       im.c(1), im.c(1)};
  gpu::KernelDim3 block{im.c(kBlockThreads), im.c(1), im.c(1)};
  Value shared = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  // Flat views of dynamic size (static shapes collapse to a static size).
  auto flatten = [&](Value v) -> Value {
    Value flatView = collapseToRank1(b, loc, v);
    auto type = cast<MemRefType>(flatView.getType());
    if (!type.hasStaticShape())
      return flatView;
    return memref::CastOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, type.getElementType()),
        flatView);
  };
  gpu::LaunchFuncOp::create(
      b, loc, func, grid, block, shared,
      ValueRange{flatten(op.getO1()), flatten(op.getLse1()),
                 flatten(op.getO2()), flatten(op.getLse2()), flatten(op.getO()),
                 flatten(op.getLse()), rows});
  op.erase();
  return success();
}

//===- GpuAttentionKernel.cpp - fmha.attention -> GPU flash kernel --------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-lower-to-gpu: each fmha.attention on memrefs becomes a gpu.func
// kernel in `gpu.module @fmha_kernels` and a gpu.launch_func on the host.
//
// Kernel (target-independent; the target supplies GpuTarget):
//   workgroup (qt, hq, b) = (block_id.x, block_id.y, block_id.z);
//   warp w of the workgroup owns query rows [r0 + M w, r0 + M (w + 1));
//   Q fragments are held in registers for the whole kv loop;
//   kv tiles come from the mask-derived loops (MaskUtils.h): a leading sink
//   loop and the window loop; fully hidden tiles are never visited;
//   S = Q K^T and O += P V on the matrix units, f32 accumulators;
//   online softmax in base 2 with scale * log2(e) folded in, row max by
//   cross-lane shuffles, the row sum kept per lane until the end;
//   the element mask only on tiles that cross a mask edge or the end of K.
//
// Kernel parameters: (q, k, v, o, lse, B, Sq, Sk), each tensor a memref of
// its shape with any offset and strides but a contiguous last axis
// (stridedKernelType; the launch's fmha.operand_align asks 16-byte rows of
// q, k, v and o); grid (ceil(Sq / block-m), Hq, B), block (warps * warp
// size). The launch manifest (fmha-compile) is derived from the launch.
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"
#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Conversion/KernelDefaults.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHALOWERTOGPUPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// K/V stages of the `mma=wgmma` kernel: tile t + 1 lands while tile t's
/// S = Q K^T and tile t - 1's O += P V read the other two.
constexpr int64_t kWarpgroupStages = 3;

/// The workgroup memory of the `mma=wgmma` kernel, in bytes, every operand
/// in the 128-byte swizzled layout ([cols / 64][rows][64], emitCopyRows with
/// `swizzled`): the K stages, the V stages, the Q tile (P stays in
/// registers). Each part starts at a multiple of 1024 past a 1024-aligned
/// base, which the kernel rounds its workgroup memory up to (`total` keeps
/// the slack).
struct WarpgroupLayout {
  int64_t kStage, vStage, kOffset, vOffset, qOffset, total;

  WarpgroupLayout(int64_t stages, int64_t blockM, int64_t blockN, int64_t d,
                  int64_t dv) {
    kStage = blockN * d * 2;
    vStage = blockN * dv * 2;
    kOffset = 0;
    vOffset = stages * kStage;
    qOffset = vOffset + stages * vStage;
    total = qOffset + blockM * d * 2 + kSwizzleAlign;
  }
};

/// Bytes of the K and V buffers (all stages) of 16-bit elements.
int64_t sharedBytesFor(int64_t stages, int64_t blockN, int64_t d, int64_t dv) {
  return stages * blockN * ((d + kRowPad) + (dv ? dv + kRowPad : 0)) * 2;
}

/// All the kernel's workgroup memory: the K/V stages; on targets whose C
/// fragments are not A fragments, each warp's rows of P; with `qInShared`,
/// the Q tile. With `wgmma`, the WarpgroupLayout.
int64_t kernelSharedBytes(const GpuTarget &target, int64_t blockM,
                          int64_t blockN, int64_t d, int64_t dv, bool qInShared,
                          bool wgmma = false) {
  if (wgmma)
    return WarpgroupLayout(kWarpgroupStages, blockM, blockN, d, dv).total;
  int64_t bytes = sharedBytesFor(target.getNumCopyStages(), blockN, d, dv);
  if (!target.getAFromC(0))
    bytes += blockM * (blockN + kRowPad) * 2; // warps * mmaM rows
  if (qInShared)
    bytes += blockM * (d + kRowPad) * 2;
  return bytes;
}

/// Everything the kernel builder needs to know about one problem signature.
struct KernelConfig {
  Type elementType;
  int64_t hq, hk, d, dv;
  int64_t blockM, blockN, warps;
  /// Row blocks (of the MMA's M rows) per warp: K/V fragments read from
  /// workgroup memory feed this many products.
  int64_t rowBlocks;
  ::fmha::MaskSpec mask;
  double scale;
  std::optional<double> softcap;
  /// Q stays in workgroup memory and its fragments are read per kv tile
  /// (frees the registers Q fragments would hold, for wider kv tiles).
  bool qInShared = false;
  /// Warpgroup products (GpuTarget::emitWarpgroupMma): Q, K and V are read
  /// from workgroup memory in core-matrix layout, P from registers; warp w
  /// holds rows [16 w, 16 w + 16) of S and O in C fragments as with the warp
  /// MMA.
  bool wgmma = false;
  /// Lazy rescaling of O (visitTile): only when a row's max grows by more
  /// than a factor 2^8; otherwise at every kv tile.
  bool lazyRescale = false;
};

/// Builds the body of the flash-attention kernel.
class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc, const GpuTarget &target,
                const KernelConfig &config)
      : b(b), loc(loc), target(target), cfg(config) {}

  void build(gpu::GPUFuncOp func);

private:
  /// The running state of one row block of a warp: per row slot the max and
  /// the (lane-partial) sum, then the O accumulators tile by tile.
  struct RowState {
    SmallVector<Value> m, l;
    SmallVector<SmallVector<Value>> acc; // [Dv / N][numC]
  };
  struct State {
    SmallVector<RowState> rows; // [rowBlocks]
  };

  /// Scores of a tile: s[row block][key tile][C element].
  using Scores = SmallVector<SmallVector<SmallVector<Value>>>;
  /// One online-softmax step: the new m and l of every row, and what O must
  /// be scaled by.
  struct SoftmaxStep {
    State out;                              // m and l; acc once rescaled
    SmallVector<SmallVector<Value>> alphas; // [row block][slot]
    Value anyMoved;                         // lazy: some row's max moved
  };

  SmallVector<Value> flatten(const State &s) const;
  State unflatten(ValueRange values) const;
  State visitTile(OpBuilder &ob, Value kt, Value buf, const State &in);
  /// Masks (edge tiles only) and exponentiates the scores `s` of the tile
  /// of keys from `c0` in place: the softmax step from `in`. With `accFrom`,
  /// O = accFrom's acc is rescaled into out.acc too; otherwise the caller
  /// calls `rescale`.
  SoftmaxStep softmaxTile(OpBuilder &ob, Value c0, Scores &s, const State &in,
                          const State *accFrom);
  /// One row block's O scaled per row slot by `alpha`.
  SmallVector<SmallVector<Value>> scaleAcc(FloatMath &fm, const RowState &rows,
                                           ArrayRef<Value> alpha) const;
  /// step.out.acc = O of `accFrom` scaled by the step's alphas.
  void rescale(OpBuilder &ob, SoftmaxStep &step, const State &accFrom);
  /// O *= alpha (alphas[row block][slot]) under one branch taken when
  /// `anyMoved`; fills out.rows[*].acc from in.rows[*].acc.
  void lazyRescale(OpBuilder &ob, Value anyMoved,
                   ArrayRef<SmallVector<Value>> alphas, const State &in,
                   State &out);
  /// The kv loop over tiles [lb, ub) of the `mma=wgmma` kernel.
  State warpgroupLoop(Value lb, Value ub, const State &in, StringRef name);
  /// Issues S = Q K^T of K stage `buf` as warpgroup products and commits
  /// them; returns the accumulators (valid after emitWarpgroupWait).
  SmallVector<Value> issueScores(OpBuilder &ob, Value buf);
  /// Issues O += P V (O: `rows`' acc; P: A registers per k-step, `pRegs`; V
  /// stage `buf`) and commits it; returns the accumulators (valid after
  /// emitWarpgroupWait).
  SmallVector<Value> issuePV(OpBuilder &ob, Value buf,
                             ArrayRef<SmallVector<Value>> pRegs,
                             const RowState &rows);
  /// P = the exponentiated scores of one row block as the A registers of
  /// each k-step ([block-n / K][numA / 2]).
  SmallVector<SmallVector<Value>> packP(OpBuilder &ob,
                                        ArrayRef<SmallVector<Value>> p);
  /// A register of P (elements e and e + 1 of the A fragment of k-step kk)
  /// packed from the C fragments `p` of one row block (key tile by key tile).
  Value pRegister(OpBuilder &ob, ArrayRef<SmallVector<Value>> p, int64_t kk,
                  int64_t e);
  /// The i64 workgroup-memory address `offset` + `dynamicOffset` bytes past
  /// the start of the kernel's workgroup memory.
  Value sharedAddress(OpBuilder &ob, int64_t offset, Value dynamicOffset);
  Value issueTile(OpBuilder &ob, Value kt, Value buf);
  Value loadPair(OpBuilder &ob, Value memref, Value index, int64_t count);

  OpBuilder &b;
  Location loc;
  const GpuTarget &target;
  KernelConfig cfg;

  // Values of the kernel prologue.
  Value qMem, kMem, vMem, oMem, lseMem, sq, sk;
  Value lane, tid, warpRow0, r0, r1, kBase, vBase;
  // The element strides of K and V rows (GlobalTensor::rowStride).
  Value kRowStride, vRowStride;
  // Workgroup memory, two stages: [2][block-n][D + pad], [2][block-n][Dv +
  // pad].
  Value kBuffers, vBuffers;
  SmallVector<SmallVector<SmallVector<Value>>> qFrags; // [R][D / K][regs]
  Value qStage, qTile; // The workgroup's Q rows (qInShared).
  // wgmma: the i64 address of the workgroup memory, the warpgroup of this
  // warp.
  Value sharedBase, warpGroup;
  SmallVector<FragmentCoord> cCoords, aCoords;
  Value pTile; // This warp's rows of P in workgroup memory (when needed).
};

Value KernelBuilder::loadPair(OpBuilder &ob, Value memref, Value index,
                              int64_t count) {
  auto type = VectorType::get({count}, cfg.elementType);
  // Pairs start at even elements of rows of even length: 4-byte aligned.
  return vector::LoadOp::create(ob, loc, type, memref, ValueRange{index},
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(2 * count));
}

Value KernelBuilder::issueTile(OpBuilder &ob, Value kt, Value buf) {
  IndexMath im{ob, loc};
  Value c0 = im.mul(kt, im.c(cfg.blockN));
  SmallVector<Value> tokens;
  const int64_t threads = cfg.warps * target.getWarpSize();
  Value skLast = im.sub(sk, im.c(1));
  emitCopyRows(ob, loc, target, kMem, kBase, kRowStride, cfg.d, cfg.blockN, c0,
               skLast, kBuffers, buf, tid, threads, tokens, cfg.wgmma);
  emitCopyRows(ob, loc, target, vMem, vBase, vRowStride, cfg.dv, cfg.blockN, c0,
               skLast, vBuffers, buf, tid, threads, tokens, cfg.wgmma);
  llvm::erase(tokens, Value()); // Targets without asynchronous copies.
  return target.emitAsyncCommit(ob, loc, tokens);
}

SmallVector<Value> KernelBuilder::flatten(const State &s) const {
  SmallVector<Value> out;
  for (const RowState &r : s.rows) {
    out.append(r.m.begin(), r.m.end());
    out.append(r.l.begin(), r.l.end());
    for (const SmallVector<Value> &tile : r.acc)
      out.append(tile.begin(), tile.end());
  }
  return out;
}

KernelBuilder::State KernelBuilder::unflatten(ValueRange values) const {
  State s;
  int64_t slots = target.getNumCRowSlots(), numC = target.getNumCElements();
  size_t pos = 0;
  for (int64_t rb = 0; rb < cfg.rowBlocks; ++rb) {
    RowState r;
    for (int64_t i = 0; i < slots; ++i)
      r.m.push_back(values[pos++]);
    for (int64_t i = 0; i < slots; ++i)
      r.l.push_back(values[pos++]);
    for (int64_t j = 0; j < cfg.dv / target.getMmaN(); ++j) {
      SmallVector<Value> tile;
      for (int64_t e = 0; e < numC; ++e)
        tile.push_back(values[pos++]);
      r.acc.push_back(tile);
    }
    s.rows.push_back(r);
  }
  return s;
}

Value KernelBuilder::sharedAddress(OpBuilder &ob, int64_t offset,
                                   Value dynamicOffset) {
  return offsetAddress(ob, loc, sharedBase, offset, dynamicOffset);
}

Value KernelBuilder::pRegister(OpBuilder &ob, ArrayRef<SmallVector<Value>> p,
                               int64_t kk, int64_t e) {
  const int64_t tilesPerK = target.getMmaK() / target.getMmaN();
  SmallVector<Value> pair;
  for (int64_t h = 0; h < 2; ++h) {
    auto [tile, elem] = *target.getAFromC(e + h);
    pair.push_back(arith::TruncFOp::create(ob, loc, cfg.elementType,
                                           p[kk * tilesPerK + tile][elem]));
  }
  return vector::FromElementsOp::create(
      ob, loc, VectorType::get({2}, cfg.elementType), pair);
}

SmallVector<Value> KernelBuilder::issueScores(OpBuilder &ob, Value buf) {
  IndexMath im{ob, loc};
  WarpgroupLayout layout(kWarpgroupStages, cfg.blockM, cfg.blockN, cfg.d,
                         cfg.dv);
  // Q: [D / 64][block-m][64], this warpgroup's 64 rows 64 x 128 bytes in;
  // K: [D / 64][block-n][64]; both K-major, 8-row atoms 1024 bytes apart. A
  // k-step of 16 elements is 32 bytes into its 128-byte rows (the hardware
  // applies the swizzle to the address it forms).
  Value qRows = im.mul(warpGroup, im.c(kWarpgroupRows * 128));
  Value kStage = im.mul(buf, im.c(layout.kStage));
  const int64_t mmaK = target.getMmaK(), stepsPerRow = 64 / mmaK;
  target.emitWarpgroupFence(ob, loc);
  SmallVector<Value> acc;
  for (int64_t kk = 0; kk < cfg.d / mmaK; ++kk) {
    const int64_t block = kk / stepsPerRow, inRow = kk % stepsPerRow * 32;
    Value descQ = target.emitWarpgroupDescriptor(
        ob, loc,
        sharedAddress(ob, layout.qOffset + block * cfg.blockM * 128 + inRow,
                      qRows),
        16, 1024);
    Value descK = target.emitWarpgroupDescriptor(
        ob, loc,
        sharedAddress(ob, layout.kOffset + block * cfg.blockN * 128 + inRow,
                      kStage),
        16, 1024);
    acc = target.emitWarpgroupMma(ob, loc, cfg.elementType, cfg.blockN, descQ,
                                  /*aMMajor=*/false, descK, /*bNMajor=*/false,
                                  acc);
  }
  target.emitWarpgroupCommit(ob, loc);
  return acc;
}

SmallVector<SmallVector<Value>>
KernelBuilder::packP(OpBuilder &ob, ArrayRef<SmallVector<Value>> p) {
  // The wgmma accumulator of a warp is its rows' C fragments tile after
  // tile, and the A register fragment of m64nNk16 is the warp MMA's A
  // fragment for the same rows: P goes to the product from the registers
  // of S.
  SmallVector<SmallVector<Value>> regs;
  for (int64_t kk = 0; kk < cfg.blockN / target.getMmaK(); ++kk) {
    regs.emplace_back();
    for (int64_t e = 0; e < target.getNumAElements(); e += 2)
      regs.back().push_back(pRegister(ob, p, kk, e));
  }
  return regs;
}

SmallVector<Value> KernelBuilder::issuePV(OpBuilder &ob, Value buf,
                                          ArrayRef<SmallVector<Value>> pRegs,
                                          const RowState &rows) {
  IndexMath im{ob, loc};
  WarpgroupLayout layout(kWarpgroupStages, cfg.blockM, cfg.blockN, cfg.d,
                         cfg.dv);
  // V: [Dv / 64][block-n][64] (B, N-major: 128-byte rows of 64 value
  // columns, one per key); 64-column blocks block-n x 128 bytes apart, 8-key
  // atoms 1024 bytes apart. A k-step of 16 keys is two atoms.
  Value vStage = im.mul(buf, im.c(layout.vStage));
  SmallVector<Value> acc;
  for (const SmallVector<Value> &tile : rows.acc)
    acc.append(tile.begin(), tile.end());
  target.emitWarpgroupFence(ob, loc);
  for (auto [kk, regs] : llvm::enumerate(pRegs)) {
    Value descV = target.emitWarpgroupDescriptor(
        ob, loc, sharedAddress(ob, layout.vOffset + kk * 2048, vStage),
        cfg.blockN * 128, 1024);
    acc = target.emitWarpgroupMmaRegisterA(ob, loc, cfg.elementType, cfg.dv,
                                           regs, descV,
                                           /*bNMajor=*/true, acc);
  }
  target.emitWarpgroupCommit(ob, loc);
  return acc;
}

KernelBuilder::State KernelBuilder::warpgroupLoop(Value lb, Value ub,
                                                  const State &in,
                                                  StringRef name) {
  // Pipelined within each warpgroup as in FlashAttention-3: the step of
  // tile t issues S(t) = Q K_t^T, then O += P(t-1) V_(t-1), waits for S(t)
  // alone, and computes softmax(t) while the tensor cores run P V; then it
  // waits for P V and rescales O (O, P(t-1) and V_(t-1) are all relative to
  // the max of tile t - 1). Three copy stages: tile t + 1 lands in the
  // stage of tile t - 2 while S(t) and P(t-1) V read the other two. One
  // barrier per tile: after it, tile t is visible to every warp and every
  // warpgroup has waited for P(t-2) V, so tile t - 2's stage is free.
  const int64_t numC = target.getNumCElements();
  const int64_t kSteps = cfg.blockN / target.getMmaK();
  const int64_t regsPerStep = target.getNumAElements() / 2;
  auto stage = [&](OpBuilder &ob, Value t) {
    IndexMath sm{ob, loc};
    return sm.rem(sm.sub(t, lb), sm.c(kWarpgroupStages));
  };
  auto beginStep = [&](OpBuilder &ob, Value t) {
    IndexMath sm{ob, loc};
    target.emitAsyncWait(ob, loc, target.emitAsyncCommit(ob, loc, {}), 0);
    target.emitWarpgroupOperandFence(ob, loc);
    target.emitBarrier(ob, loc);
    Value next = sm.add(t, sm.c(1));
    issueTile(ob, next, stage(ob, next));
    return issueScores(ob, stage(ob, t));
  };
  auto keys = [&](OpBuilder &ob, Value t) {
    IndexMath km{ob, loc};
    return km.mul(t, km.c(cfg.blockN));
  };
  // A warpgroup accumulator as the warp's C tiles, numC elements each.
  auto cTiles = [&](ArrayRef<Value> acc) {
    SmallVector<SmallVector<Value>> tiles;
    for (size_t i = 0; i < acc.size(); i += numC)
      tiles.emplace_back(acc.begin() + i, acc.begin() + i + numC);
    return tiles;
  };
  auto scoreTiles = [&](ArrayRef<Value> acc) { return Scores{cTiles(acc)}; };
  IndexMath im{b, loc};
  auto nonEmpty = scf::IfOp::create(
      b, loc, im.lt(lb, ub),
      [&](OpBuilder &ob, Location) {
        IndexMath om{ob, loc};
        issueTile(ob, lb, om.c(0));
        // Tile lb: no product of this loop before it.
        Scores s =
            scoreTiles(target.emitWarpgroupWait(ob, loc, 0, beginStep(ob, lb)));
        SmallVector<Value> init =
            flatten(softmaxTile(ob, keys(ob, lb), s, in, &in).out);
        for (const SmallVector<Value> &regs : packP(ob, s[0]))
          init.append(regs.begin(), regs.end());
        const size_t stateSize = init.size() - kSteps * regsPerStep;
        auto splitP = [&](ValueRange values) {
          SmallVector<SmallVector<Value>> regs;
          for (int64_t kk = 0; kk < kSteps; ++kk)
            regs.emplace_back(values.begin() + stateSize + kk * regsPerStep,
                              values.begin() + stateSize +
                                  (kk + 1) * regsPerStep);
          return regs;
        };
        auto loop = scf::ForOp::create(
            ob, loc, om.add(lb, om.c(1)), ub, om.c(1), init,
            [&](OpBuilder &lob, Location, Value t, ValueRange args) {
              IndexMath lm{lob, loc};
              State prev = unflatten(args.take_front(stateSize));
              SmallVector<Value> sAcc = beginStep(lob, t);
              SmallVector<Value> oAcc =
                  issuePV(lob, stage(lob, lm.sub(t, lm.c(1))), splitP(args),
                          prev.rows[0]);
              Scores s =
                  scoreTiles(target.emitWarpgroupWait(lob, loc, 1, sAcc));
              SoftmaxStep step =
                  softmaxTile(lob, keys(lob, t), s, prev, nullptr);
              prev.rows[0].acc =
                  cTiles(target.emitWarpgroupWait(lob, loc, 0, oAcc));
              rescale(lob, step, prev);
              SmallVector<Value> next = flatten(step.out);
              for (const SmallVector<Value> &regs : packP(lob, s[0]))
                next.append(regs.begin(), regs.end());
              scf::YieldOp::create(lob, loc, next);
            });
        loop->setAttr("fmha.kv_loop", ob.getStringAttr(name));
        // The last tile's P V; then the prefetch of tile ub drains before
        // the stages are reused.
        State last = unflatten(loop.getResults().take_front(stateSize));
        SmallVector<Value> oAcc =
            issuePV(ob, stage(ob, om.sub(ub, om.c(1))),
                    splitP(loop.getResults()), last.rows[0]);
        last.rows[0].acc = cTiles(target.emitWarpgroupWait(ob, loc, 0, oAcc));
        target.emitAsyncWait(ob, loc, target.emitAsyncCommit(ob, loc, {}), 0);
        target.emitBarrier(ob, loc);
        scf::YieldOp::create(ob, loc, flatten(last));
      },
      [&](OpBuilder &ob, Location) {
        scf::YieldOp::create(ob, loc, flatten(in));
      });
  return unflatten(nonEmpty.getResults());
}

KernelBuilder::State KernelBuilder::visitTile(OpBuilder &ob, Value kt,
                                              Value buf, const State &in) {
  Value kTile = selectBuffer(ob, loc, kBuffers, buf);
  Value vTile = selectBuffer(ob, loc, vBuffers, buf);
  IndexMath im{ob, loc};
  FloatMath fm{ob, loc, target};
  const int64_t mmaM = target.getMmaM(), mmaN = target.getMmaN(),
                mmaK = target.getMmaK();
  const int64_t numA = target.getNumAElements(),
                numC = target.getNumCElements();
  const int64_t rowBlocks = cfg.rowBlocks;
  const int64_t keyTiles = cfg.blockN / mmaN;
  Value c0 = im.mul(kt, im.c(cfg.blockN));

  // S = Q K^T, one N-wide tile of keys at a time; each K fragment read from
  // workgroup memory feeds every row block of the warp.
  Scores s(rowBlocks);
  if (cfg.qInShared) {
    // Q fragments from workgroup memory, two k-steps at a time, each feeding
    // every key tile.
    SmallVector<SmallVector<SmallVector<Value>>> acc(
        rowBlocks, SmallVector<SmallVector<Value>>(
                       keyTiles, SmallVector<Value>(numC, fm.c(0.0))));
    Value localRow0 =
        im.mul(im.div(tid, im.c(target.getWarpSize())), im.c(mmaM * rowBlocks));
    for (int64_t kk = 0; kk < cfg.d / mmaK; kk += 2) {
      SmallVector<SmallVector<SmallVector<Value>>> qa(rowBlocks);
      for (int64_t rb = 0; rb < rowBlocks; ++rb)
        for (int64_t h = 0; h < 2; ++h)
          qa[rb].push_back(target.emitLoadAFragment(
              ob, loc, qTile, lane, im.add(localRow0, im.c(rb * mmaM)),
              im.c((kk + h) * mmaK)));
      for (int64_t j = 0; j < keyTiles; ++j) {
        SmallVector<SmallVector<Value>> frags = target.emitLoadKFragments(
            ob, loc, kTile, lane, im.c(j * mmaN), im.c(kk * mmaK));
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t rb = 0; rb < rowBlocks; ++rb)
            acc[rb][j] = target.emitMma(ob, loc, cfg.elementType, qa[rb][h],
                                        frags[h], acc[rb][j]);
      }
    }
    s = acc;
  }
  for (int64_t j = 0; j < keyTiles && !cfg.qInShared; ++j) {
    SmallVector<SmallVector<Value>> acc(rowBlocks,
                                        SmallVector<Value>(numC, fm.c(0.0)));
    for (int64_t kk = 0; kk < cfg.d / mmaK; kk += 2) {
      SmallVector<SmallVector<Value>> frags = target.emitLoadKFragments(
          ob, loc, kTile, lane, im.c(j * mmaN), im.c(kk * mmaK));
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t rb = 0; rb < rowBlocks; ++rb)
          acc[rb] = target.emitMma(ob, loc, cfg.elementType, qFrags[rb][kk + h],
                                   frags[h], acc[rb]);
    }
    for (int64_t rb = 0; rb < rowBlocks; ++rb)
      s[rb].push_back(acc[rb]);
  }
  State out = softmaxTile(ob, c0, s, in, &in).out;

  // O += P V. Where the target's C fragments are A fragments in the same
  // lane, P goes straight from the S registers; otherwise each warp writes
  // its rows of P to workgroup memory and reads them back as A fragments.
  auto pairType = VectorType::get({2}, cfg.elementType);
  const bool pInRegisters = target.getAFromC(0).has_value();
  if (!pInRegisters) {
    for (int64_t rb = 0; rb < rowBlocks; ++rb)
      for (int64_t j = 0; j < keyTiles; ++j)
        for (int64_t e = 0; e < numC; ++e)
          memref::StoreOp::create(
              ob, loc,
              arith::TruncFOp::create(ob, loc, cfg.elementType, s[rb][j][e]),
              pTile,
              ValueRange{im.add(im.c(rb * mmaM), cCoords[e].row),
                         im.add(im.c(j * mmaN), cCoords[e].col)});
    target.emitBarrier(ob, loc);
  }
  for (int64_t kk = 0; kk < cfg.blockN / mmaK; ++kk) {
    SmallVector<SmallVector<Value>> pFrags(rowBlocks);
    for (int64_t rb = 0; rb < rowBlocks; ++rb)
      for (int64_t e = 0; e < numA; e += 2) {
        if (!pInRegisters) {
          pFrags[rb].push_back(vector::LoadOp::create(
              ob, loc, pairType, pTile,
              ValueRange{im.add(im.c(rb * mmaM), aCoords[e].row),
                         im.add(im.c(kk * mmaK), aCoords[e].col)}));
          continue;
        }
        pFrags[rb].push_back(pRegister(ob, s[rb], kk, e));
      }
    for (int64_t jv = 0; jv < cfg.dv / mmaN; jv += 2) {
      SmallVector<SmallVector<Value>> frags = target.emitLoadVFragments(
          ob, loc, vTile, lane, im.c(kk * mmaK), im.c(jv * mmaN));
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t rb = 0; rb < rowBlocks; ++rb)
          out.rows[rb].acc[jv + h] =
              target.emitMma(ob, loc, cfg.elementType, pFrags[rb], frags[h],
                             out.rows[rb].acc[jv + h]);
    }
  }
  return out;
}

KernelBuilder::SoftmaxStep KernelBuilder::softmaxTile(OpBuilder &ob, Value c0,
                                                      Scores &s,
                                                      const State &in,
                                                      const State *accFrom) {
  IndexMath im{ob, loc};
  FloatMath fm{ob, loc, target};
  const int64_t mmaM = target.getMmaM(), mmaN = target.getMmaN();
  const int64_t numC = target.getNumCElements();
  const int64_t slots = target.getNumCRowSlots();
  const int64_t rowBlocks = static_cast<int64_t>(s.size());
  const int64_t keyTiles = cfg.blockN / mmaN;

  // Scores in base 2: x = softcap(scale * s) * log2(e). Without a softcap
  // the scale stays out of the tile: the row max is scaled once per row
  // (scale > 0 keeps the order) and each probability is exp2 of one FMA,
  // s * scale * log2(e) - m.
  const double log2e = 1.4426950408889634;
  const bool foldScale = !cfg.softcap;
  if (!foldScale)
    for (auto &block : s)
      for (SmallVector<Value> &tile : block)
        for (Value &x : tile) {
          x = fm.mul(x, fm.c(cfg.scale / *cfg.softcap));
          x = fm.mul(fm.tanh(x), fm.c(*cfg.softcap * log2e));
        }

  // The element mask, only on tiles that cross a mask edge or Sk.
  Value c1 = im.add(c0, im.c(cfg.blockN));
  Value full = emitKvTileIsFull(ob, loc, cfg.mask, r0, r1, c0, c1, sq, sk);
  full = arith::AndIOp::create(ob, loc, full, im.le(c1, sk));
  SmallVector<Value> flatS;
  for (const auto &block : s)
    for (const SmallVector<Value> &tile : block)
      flatS.append(tile.begin(), tile.end());
  auto ifOp = scf::IfOp::create(
      ob, loc, full,
      [&](OpBuilder &then, Location) {
        scf::YieldOp::create(then, loc, flatS);
      },
      [&](OpBuilder &els, Location) {
        IndexMath em{els, loc};
        FloatMath ef{els, loc, target};
        Value negInf = ef.negInf();
        SmallVector<Value> masked;
        for (int64_t rb = 0; rb < rowBlocks; ++rb)
          for (int64_t j = 0; j < keyTiles; ++j)
            for (int64_t e = 0; e < numC; ++e) {
              Value row =
                  em.add(em.add(warpRow0, em.c(rb * mmaM)), cCoords[e].row);
              Value col = em.add(c0, em.add(em.c(j * mmaN), cCoords[e].col));
              Value vis = emitVisible(els, loc, cfg.mask, row, col, sq, sk);
              vis = arith::AndIOp::create(els, loc, vis, em.lt(col, sk));
              masked.push_back(ef.select(vis, s[rb][j][e], negInf));
            }
        scf::YieldOp::create(els, loc, masked);
      });
  {
    int64_t pos = 0;
    for (auto &block : s)
      for (SmallVector<Value> &tile : block)
        for (Value &x : tile)
          x = ifOp.getResult(pos++);
  }

  // Online softmax per row block and row slot. Eager: m is the running max
  // (base 2) and O is rescaled by alpha = exp2(m_old - m) at every tile.
  // Lazy (cfg.lazyRescale): m moves only when the tile's row max exceeds it
  // by more than kRescaleSlack. Otherwise every probability of the tile is
  // exp2(x - m) <= 2^kRescaleSlack, O and l keep their scale, and the
  // multiply of O by alpha is skipped: one branch, taken when any row of
  // the thread moved. O / l and lse = m + log2(l) are exact for any such m,
  // as the final normalisation uses the same m for both.
  constexpr double kRescaleSlack = 8.0;
  SoftmaxStep step;
  Value &anyMoved = step.anyMoved;
  for (int64_t rb = 0; rb < rowBlocks; ++rb) {
    const RowState &prev = in.rows[rb];
    RowState next;
    SmallVector<Value> mSafe(slots), alpha(slots);
    for (int64_t slot = 0; slot < slots; ++slot) {
      Value rowMax = fm.negInf();
      for (const SmallVector<Value> &tile : s[rb])
        for (int64_t e = 0; e < numC; ++e)
          if (target.getCRowSlot(e) == slot)
            rowMax = fm.max(rowMax, tile[e]);
      for (int64_t mask : target.getRowReduceXorMasks())
        rowMax = fm.max(rowMax, target.emitShuffleXor(ob, loc, rowMax, mask));
      if (foldScale)
        rowMax = fm.mul(rowMax, fm.c(cfg.scale * log2e));
      Value mNew = fm.max(prev.m[slot], rowMax);
      if (cfg.lazyRescale) {
        // m = -inf (no visible key yet) moves to any finite row max.
        Value moved =
            arith::CmpFOp::create(ob, loc, arith::CmpFPredicate::OGT, rowMax,
                                  fm.add(prev.m[slot], fm.c(kRescaleSlack)));
        anyMoved =
            anyMoved
                ? arith::OrIOp::create(ob, loc, anyMoved, moved).getResult()
                : moved;
        mNew = fm.select(moved, rowMax, prev.m[slot]);
      }
      // Rows that have seen no visible key keep m = -inf; subtracting 0
      // keeps exp2(-inf) = 0 instead of NaN.
      Value hidden = arith::CmpFOp::create(ob, loc, arith::CmpFPredicate::OEQ,
                                           mNew, fm.negInf());
      mSafe[slot] = fm.select(hidden, fm.c(0.0), mNew);
      alpha[slot] = fm.exp2(fm.sub(prev.m[slot], mSafe[slot]));
      next.m.push_back(mNew);
    }
    SmallVector<Value> negM;
    if (foldScale)
      for (int64_t slot = 0; slot < slots; ++slot)
        negM.push_back(arith::NegFOp::create(ob, loc, mSafe[slot]));
    // Each slot has elements in every tile, so the first starts the sum (an
    // add of 0.0 is not folded: -0.0 + 0.0 is +0.0).
    SmallVector<Value> rowSum(slots);
    for (SmallVector<Value> &tile : s[rb])
      for (int64_t e = 0; e < numC; ++e) {
        int64_t slot = target.getCRowSlot(e);
        tile[e] = fm.exp2(
            foldScale ? fm.fma(tile[e], fm.c(cfg.scale * log2e), negM[slot])
                      : fm.sub(tile[e], mSafe[slot]));
        rowSum[slot] = rowSum[slot] ? fm.add(rowSum[slot], tile[e]) : tile[e];
      }
    for (int64_t slot = 0; slot < slots; ++slot)
      next.l.push_back(fm.add(fm.mul(prev.l[slot], alpha[slot]), rowSum[slot]));
    if (accFrom && !cfg.lazyRescale)
      next.acc = scaleAcc(fm, accFrom->rows[rb], alpha);
    step.alphas.push_back(alpha);
    step.out.rows.push_back(next);
  }
  if (accFrom && cfg.lazyRescale)
    lazyRescale(ob, anyMoved, step.alphas, *accFrom, step.out);
  return step;
}

SmallVector<SmallVector<Value>>
KernelBuilder::scaleAcc(FloatMath &fm, const RowState &rows,
                        ArrayRef<Value> alpha) const {
  SmallVector<SmallVector<Value>> acc;
  for (const SmallVector<Value> &tile : rows.acc) {
    SmallVector<Value> scaled;
    for (auto [e, x] : llvm::enumerate(tile))
      scaled.push_back(fm.mul(x, alpha[target.getCRowSlot(e)]));
    acc.push_back(scaled);
  }
  return acc;
}

void KernelBuilder::rescale(OpBuilder &ob, SoftmaxStep &step,
                            const State &accFrom) {
  if (cfg.lazyRescale) {
    lazyRescale(ob, step.anyMoved, step.alphas, accFrom, step.out);
    return;
  }
  FloatMath fm{ob, loc, target};
  for (auto [rb, rows] : llvm::enumerate(step.out.rows))
    rows.acc = scaleAcc(fm, accFrom.rows[rb], step.alphas[rb]);
}

void KernelBuilder::lazyRescale(OpBuilder &ob, Value anyMoved,
                                ArrayRef<SmallVector<Value>> alphas,
                                const State &in, State &out) {
  const int64_t numC = target.getNumCElements();
  const int64_t rowBlocks = cfg.rowBlocks;
  // One branch for all the thread's rows: O *= alpha where a row moved.
  SmallVector<Value> flatAcc;
  for (const RowState &prev : in.rows)
    for (const SmallVector<Value> &tile : prev.acc)
      flatAcc.append(tile.begin(), tile.end());
  auto rescale = scf::IfOp::create(
      ob, loc, anyMoved,
      [&](OpBuilder &then, Location) {
        FloatMath tm{then, loc, target};
        SmallVector<Value> scaled;
        for (int64_t rb = 0; rb < rowBlocks; ++rb)
          for (const SmallVector<Value> &tile : in.rows[rb].acc)
            for (int64_t e = 0; e < numC; ++e)
              scaled.push_back(
                  tm.mul(tile[e], alphas[rb][target.getCRowSlot(e)]));
        scf::YieldOp::create(then, loc, scaled);
      },
      [&](OpBuilder &els, Location) {
        scf::YieldOp::create(els, loc, flatAcc);
      });
  for (int64_t rb = 0, pos = 0; rb < rowBlocks; ++rb)
    for (size_t t = 0; t < in.rows[rb].acc.size(); ++t) {
      out.rows[rb].acc.emplace_back();
      for (int64_t e = 0; e < numC; ++e)
        out.rows[rb].acc.back().push_back(rescale.getResult(pos++));
    }
}

void KernelBuilder::build(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  IndexMath im{b, loc};
  FloatMath fm{b, loc, target};
  GlobalTensor q = GlobalTensor::open(b, loc, entry.getArgument(0));
  GlobalTensor k = GlobalTensor::open(b, loc, entry.getArgument(1));
  GlobalTensor v = GlobalTensor::open(b, loc, entry.getArgument(2));
  GlobalTensor o = GlobalTensor::open(b, loc, entry.getArgument(3));
  GlobalTensor lseT = GlobalTensor::open(b, loc, entry.getArgument(4));
  qMem = q.flat;
  kMem = k.flat;
  vMem = v.flat;
  oMem = o.flat;
  lseMem = lseT.flat;
  kRowStride = k.rowStride();
  vRowStride = v.rowStride();
  sq = entry.getArgument(6);
  sk = entry.getArgument(7);
  const int64_t mmaM = target.getMmaM(), mmaK = target.getMmaK(),
                mmaN = target.getMmaN();
  const int64_t numA = target.getNumAElements(),
                numC = target.getNumCElements();
  const int64_t slots = target.getNumCRowSlots();
  const int64_t rowBlocks = cfg.rowBlocks;

  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value warpSize = im.c(target.getWarpSize());
  lane = im.rem(tid, warpSize);
  Value warp = im.div(tid, warpSize);
  {
    // Dynamic workgroup memory: the K buffers (one per stage), then the V
    // buffers, then (where P cannot stay in registers) each warp's rows of P.
    auto workgroup = gpu::AddressSpaceAttr::get(
        b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
    auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                                 MemRefLayoutAttrInterface(), workgroup);
    Value raw = gpu::DynamicSharedMemoryOp::create(b, loc, bytes);
    const int64_t stages = target.getNumCopyStages();
    if (cfg.wgmma) {
      // Every operand swizzled (WarpgroupLayout), from the first 1024-aligned
      // address of the workgroup memory on.
      WarpgroupLayout layout(kWarpgroupStages, cfg.blockM, cfg.blockN, cfg.d,
                             cfg.dv);
      AlignedWorkgroup aligned = alignWorkgroup(b, loc, raw, kSwizzleAlign);
      Value pad = aligned.pad;
      auto swizzled = [&](int64_t offset, int64_t count, int64_t rows,
                          int64_t cols) {
        return workgroupView(b, loc, raw, im.add(pad, im.c(offset)),
                             {count, cols / 64, rows, 64}, cfg.elementType);
      };
      kBuffers = swizzled(layout.kOffset, kWarpgroupStages, cfg.blockN, cfg.d);
      vBuffers = swizzled(layout.vOffset, kWarpgroupStages, cfg.blockN, cfg.dv);
      qStage = swizzled(layout.qOffset, 1, cfg.blockM, cfg.d);
      warpGroup = im.div(warp, im.c(kWarpgroupWarps));
      sharedBase = aligned.address;
    }
    auto kType =
        MemRefType::get({stages, cfg.blockN, cfg.d + kRowPad}, cfg.elementType,
                        MemRefLayoutAttrInterface(), workgroup);
    auto vType =
        MemRefType::get({stages, cfg.blockN, cfg.dv + kRowPad}, cfg.elementType,
                        MemRefLayoutAttrInterface(), workgroup);
    if (!cfg.wgmma) {
      kBuffers =
          memref::ViewOp::create(b, loc, kType, raw, im.c(0), ValueRange{});
      vBuffers = memref::ViewOp::create(
          b, loc, vType, raw,
          im.c(sharedBytesFor(stages, cfg.blockN, cfg.d, 0)), ValueRange{});
    }
    if (!target.getAFromC(0)) {
      auto pType = MemRefType::get(
          {cfg.warps, rowBlocks * mmaM, cfg.blockN + kRowPad}, cfg.elementType,
          MemRefLayoutAttrInterface(), workgroup);
      Value pBuffers = memref::ViewOp::create(
          b, loc, pType, raw,
          im.c(sharedBytesFor(stages, cfg.blockN, cfg.d, cfg.dv)),
          ValueRange{});
      pTile = selectBuffer(b, loc, pBuffers, warp);
    }
    if (cfg.qInShared && !cfg.wgmma) {
      int64_t offset = kernelSharedBytes(target, cfg.blockM, cfg.blockN, cfg.d,
                                         cfg.dv, /*qInShared=*/false);
      qStage = workgroupView(b, loc, raw, offset,
                             {1, cfg.blockM, cfg.d + kRowPad}, cfg.elementType);
      qTile = selectBuffer(b, loc, qStage, im.c(0));
    }
  }
  Value qt = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  if (cfg.mask.hasRight()) {
    // Later q tiles see more keys under a right bound (causal): schedule
    // them first so that the light tiles fill the tail of the grid.
    // (The grid is ceil(Sq / block-m) wide.) Numbering the whole grid
    // tile-major instead lost up to 9% on the H200 (docs/PERFORMANCE.md,
    // "Backward v14"): concurrent blocks then read different heads' K/V.
    Value tiles = im.ceilDiv(sq, im.c(cfg.blockM));
    qt = im.sub(im.sub(tiles, im.c(1)), qt);
  }
  Value h = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value kvHead = cfg.hq == cfg.hk ? h : im.div(h, im.c(cfg.hq / cfg.hk));
  r0 = im.mul(qt, im.c(cfg.blockM));
  r1 = im.min(im.add(r0, im.c(cfg.blockM)), sq);
  warpRow0 = im.add(r0, im.mul(warp, im.c(mmaM * rowBlocks)));
  // Row 0 of this workgroup's heads in each operand (lse rows are
  // contiguous: its last axis is).
  Value qBase = q.at(b, loc, {batch, h});
  Value oBase = o.at(b, loc, {batch, h});
  Value lseBase = lseT.at(b, loc, {batch, h});
  kBase = k.at(b, loc, {batch, kvHead});
  vBase = v.at(b, loc, {batch, kvHead});

  for (int64_t e = 0; e < numC; ++e)
    cCoords.push_back(target.getCCoord(b, loc, lane, e));
  for (int64_t e = 0; e < numA; ++e)
    aCoords.push_back(target.getACoord(b, loc, lane, e));

  // Q fragments for the whole head dim, kept in registers (or the Q tile in
  // workgroup memory). Rows past Sq are clamped (their results are never
  // stored).
  Value sqLast = im.sub(sq, im.c(1));
  if (cfg.qInShared || cfg.wgmma) {
    SmallVector<Value> tokens;
    const int64_t threads = cfg.warps * target.getWarpSize();
    emitCopyRows(b, loc, target, qMem, qBase, q.rowStride(), cfg.d, cfg.blockM,
                 r0, sqLast, qStage, im.c(0), tid, threads, tokens, cfg.wgmma);
    llvm::erase(tokens, Value());
    target.emitAsyncWait(b, loc, target.emitAsyncCommit(b, loc, tokens), 0);
    if (cfg.wgmma)
      target.emitWarpgroupOperandFence(b, loc);
    target.emitBarrier(b, loc);
  }
  for (int64_t rb = 0; rb < rowBlocks && !cfg.qInShared && !cfg.wgmma; ++rb) {
    SmallVector<SmallVector<Value>> blockFrags;
    for (int64_t kk = 0; kk < cfg.d / mmaK; ++kk) {
      SmallVector<Value> frag;
      for (int64_t e = 0; e < numA; e += 2) {
        Value row = im.min(
            im.add(im.add(warpRow0, im.c(rb * mmaM)), aCoords[e].row), sqLast);
        Value idx = im.add(im.add(qBase, im.mul(row, q.rowStride())),
                           im.add(im.c(kk * mmaK), aCoords[e].col));
        frag.push_back(loadPair(b, qMem, idx, 2));
      }
      blockFrags.push_back(frag);
    }
    qFrags.push_back(blockFrags);
  }

  State init;
  for (int64_t rb = 0; rb < rowBlocks; ++rb) {
    RowState r;
    for (int64_t slot = 0; slot < slots; ++slot) {
      r.m.push_back(fm.negInf());
      r.l.push_back(fm.c(0.0));
    }
    for (int64_t jv = 0; jv < cfg.dv / mmaN; ++jv)
      r.acc.push_back(SmallVector<Value>(numC, fm.c(0.0)));
    init.rows.push_back(r);
  }

  KvLoopBounds bounds =
      emitKvLoopBounds(b, loc, cfg.mask, r0, r1, sq, sk, cfg.blockN);
  // With two stages, a software pipeline over workgroup memory: while tile
  // kt is computed from one buffer, the copies of tile kt + 1 fill the other.
  // Keys past Sk are clamped by the copies (and masked by visitTile), so the
  // prefetch past the loop's end reads valid memory. With one stage the
  // copies of a tile simply precede its math.
  auto emitLoop = [&](Value lb, Value ub, const State &in, StringRef name) {
    if (cfg.wgmma)
      return warpgroupLoop(lb, ub, in, name);
    scf::ForOp loop = emitPipelinedTileLoop(
        b, loc, target, lb, ub, flatten(in),
        [&](OpBuilder &ob, Value kt, Value buf) {
          return issueTile(ob, kt, buf);
        },
        [&](OpBuilder &ob, Value kt, Value buf, ValueRange args) {
          return flatten(visitTile(ob, kt, buf, unflatten(args)));
        });
    loop->setAttr("fmha.kv_loop", b.getStringAttr(name));
    return unflatten(loop.getResults());
  };
  State state = init;
  if (bounds.sinkEnd)
    state = emitLoop(im.c(0), bounds.sinkEnd, state, "sink");
  state = emitLoop(bounds.begin, bounds.end, state, "window");

  // Finalize: combine the lane-partial sums of each row, o = acc / l,
  // lse = (m + log2 l) ln 2; rows with no visible key get 0 and -inf.
  const double ln2 = 0.6931471805599453;
  for (int64_t rb = 0; rb < rowBlocks; ++rb) {
    const RowState &rows = state.rows[rb];
    Value blockRow0 = im.add(warpRow0, im.c(rb * mmaM));
    for (int64_t slot = 0; slot < slots; ++slot) {
      Value l = rows.l[slot];
      for (int64_t mask : target.getRowReduceXorMasks())
        l = fm.add(l, target.emitShuffleXor(b, loc, l, mask));
      Value any = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, l,
                                        fm.c(0.0));
      Value safeL = fm.select(any, l, fm.c(1.0));
      Value inv = arith::DivFOp::create(b, loc, fm.c(1.0), safeL);
      // The elements of this slot share one row.
      int64_t firstElem = 0;
      while (target.getCRowSlot(firstElem) != slot)
        ++firstElem;
      Value row = im.add(blockRow0, cCoords[firstElem].row);
      auto inRange = scf::IfOp::create(b, loc, im.lt(row, sq),
                                       /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(inRange.thenBlock());
      IndexMath rm{b, loc};
      emitStoreCRowSlot(
          b, loc, target, cfg.elementType, cfg.dv / mmaN, slot, cCoords,
          [&](OpBuilder &sb, int64_t jv, int64_t e) {
            FloatMath sf{sb, loc, target};
            return sf.select(any, sf.mul(rows.acc[jv][e], inv), sf.c(0.0));
          },
          oMem, rm.add(oBase, rm.mul(row, o.rowStride())));
      // One lane per row writes lse: the one holding column 0.
      Value writesLse =
          rm.cmp(arith::CmpIPredicate::eq, cCoords[firstElem].col, rm.c(0));
      auto lseIf = scf::IfOp::create(b, loc, writesLse, false);
      b.setInsertionPointToStart(lseIf.thenBlock());
      FloatMath lf{b, loc, target};
      Value lse = lf.select(
          any, lf.mul(lf.add(rows.m[slot], lf.log2(safeL)), lf.c(ln2)),
          lf.negInf());
      memref::StoreOp::create(b, loc, lse, lseMem,
                              ValueRange{IndexMath{b, loc}.add(lseBase, row)});
    }
  }
}

/// Checks what the kernel supports; returns a message naming what is not.
std::string checkSupported(AttentionOp op, const GpuTarget &target,
                           StringRef chip, int64_t blockM, int64_t blockN,
                           int64_t warpRows, bool qInShared, bool wgmma) {
  auto qType = cast<ShapedType>(op.getQ().getType());
  auto vType = cast<ShapedType>(op.getV().getType());
  Type elt = qType.getElementType();
  if (wgmma) {
    std::string error = target.checkWarpgroupMma(chip);
    if (!error.empty())
      return error;
    int64_t d = qType.getDimSize(3), dv = vType.getDimSize(3);
    if (d != dv || (d != 64 && d != 128))
      return "mma=wgmma supports head dims D = Dv in {64, 128}, got D=" +
             std::to_string(d) + ", Dv=" + std::to_string(dv);
    if (blockM % kWarpgroupRows != 0 || blockM <= 0 ||
        blockM > 4 * kWarpgroupRows)
      return "mma=wgmma needs block-m 64, 128, 192 or 256 (one to four "
             "warpgroups of 64 rows), got " +
             std::to_string(blockM);
    if (warpRows != target.getMmaM())
      return "mma=wgmma needs warp-rows=" + std::to_string(target.getMmaM()) +
             " (each warp holds 16 rows of its warpgroup), got " +
             std::to_string(warpRows);
    if (blockN % 16 != 0 || blockN < 16 || blockN > 256)
      return "mma=wgmma needs block-n a multiple of 16 from 16 to 256, got " +
             std::to_string(blockN);
  }
  if (!elt.isF16() && !elt.isBF16())
    return "the " + target.getName().str() +
           " kernel needs f16 or bf16 inputs, got " + [&] {
             std::string s;
             llvm::raw_string_ostream os(s);
             os << elt;
             return s;
           }();
  if (cast<ShapedType>(op.getO().getType()).getElementType() != elt)
    return "the GPU kernel writes o in the input element type";
  int64_t d = qType.getDimSize(3), dv = vType.getDimSize(3);
  for (int64_t dim : {d, dv})
    if (dim != 32 && dim != 64 && dim != 128)
      return "head dims D=" + std::to_string(d) + ", Dv=" + std::to_string(dv) +
             " are not supported by the GPU kernel (supported: 32, 64, 128)";
  if (std::max(d, dv) > target.getMaxHeadDim())
    return "head dims D=" + std::to_string(d) + ", Dv=" + std::to_string(dv) +
           " do not fit the registers of a lane on " + chip.str() +
           " (at most " + std::to_string(target.getMaxHeadDim()) + ")";
  // The kernel reads K (V) fragments two k-steps (two column tiles) at a time.
  if (d % (2 * target.getMmaK()) != 0 || dv % (2 * target.getMmaN()) != 0)
    return "head dims D=" + std::to_string(d) + ", Dv=" + std::to_string(dv) +
           " are not supported with the " + std::to_string(target.getMmaM()) +
           "x" + std::to_string(target.getMmaN()) + "x" +
           std::to_string(target.getMmaK()) +
           " matrix instruction (D a multiple of " +
           std::to_string(2 * target.getMmaK()) + ", Dv of " +
           std::to_string(2 * target.getMmaN()) + ")";
  if (warpRows <= 0 || warpRows % target.getMmaM() != 0 ||
      warpRows > 4 * target.getMmaM())
    return "warp-rows=" + std::to_string(warpRows) + " must be a multiple of " +
           std::to_string(target.getMmaM()) + " up to " +
           std::to_string(4 * target.getMmaM());
  if (blockM % warpRows != 0 || blockM / warpRows * target.getWarpSize() > 1024)
    return "block-m=" + std::to_string(blockM) + " must be a multiple of " +
           std::to_string(warpRows) + " (warp-rows) with at most " +
           std::to_string(1024 / target.getWarpSize()) + " warps";
  const int64_t sharedBytes =
      kernelSharedBytes(target, blockM, blockN, d, dv, qInShared, wgmma);
  const int64_t maxShared = target.getMaxSharedBytes(chip);
  if (sharedBytes > maxShared)
    return "block-m=" + std::to_string(blockM) +
           " block-n=" + std::to_string(blockN) + " need " +
           std::to_string(sharedBytes) +
           " bytes of workgroup memory, over the " + std::to_string(maxShared) +
           " bytes of " + chip.str();
  if (blockN % target.getMmaK() != 0 || blockN <= 0)
    return "block-n=" + std::to_string(blockN) +
           " must be a positive multiple of " +
           std::to_string(target.getMmaK());
  if (!isa<MemRefType>(op.getQ().getType()))
    return "the GPU lowering takes fmha.attention on memrefs (bufferize first)";
  const char *names[] = {"q", "k", "v", "o", "lse"};
  for (OpOperand &v : op->getOpOperands())
    if (!hasContiguousRows(cast<MemRefType>(v.get().getType())))
      return std::string(names[std::min<unsigned>(v.getOperandNumber(), 4)]) +
             " needs a contiguous last axis (stride 1), got " +
             llvm::formatv("{0}", v.get().getType()).str();
  return {};
}

struct FmhaLowerToGpuPass
    : mlir::fmha::impl::FmhaLowerToGpuPassBase<FmhaLowerToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::unique_ptr<GpuTarget> gpuTarget = createGpuTarget(target, module);
    if (!gpuTarget)
      return signalPassFailure();
    std::string chipError = gpuTarget->configure(chip, mfma);
    if (!chipError.empty()) {
      module.emitError() << chipError;
      return signalPassFailure();
    }
    if (!rescale.empty() && rescale != "lazy" && rescale != "eager") {
      module.emitError() << "unknown rescale '" << rescale
                         << "' (expected lazy, eager, or empty for the "
                            "target's choice)";
      return signalPassFailure();
    }
    if (indexBitwidth != 32 && indexBitwidth != 64) {
      module.emitError() << "index-bitwidth must be 32 or 64, got "
                         << static_cast<unsigned>(indexBitwidth);
      return signalPassFailure();
    }
    for (const std::string &name : fixed)
      if (!llvm::is_contained(
              {"block-m", "block-n", "warp-rows", "q-in-shared", "mma"},
              name)) {
        module.emitError() << "unknown option '" << name
                           << "' in fixed (expected block-m, block-n, "
                              "warp-rows, q-in-shared or mma)";
        return signalPassFailure();
      }
    if (!mma.empty() && mma != "wgmma") {
      module.emitError() << "unknown mma '" << mma
                         << "' (expected wgmma, or empty for the target's "
                            "warp-level matrix instruction)";
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionBwdOp, MergeOp, AccumulateOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      LogicalResult result =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](AttentionOp a) {
                return lower(a, *gpuTarget,
                             choiceFor(a.getQ().getType(), a.getV().getType(),
                                       /*backward=*/false));
              })
              .Case([&](AttentionBwdOp a) {
                GpuKernelChoice k = choiceFor(
                    a.getQ().getType(), a.getV().getType(), /*backward=*/true);
                return lowerAttentionBwdToGpu(a, *gpuTarget, chip, kernelName,
                                              k.blockM, k.blockN, k.warpRows,
                                              k.mma == "wgmma");
              })
              .Case<MergeOp, AccumulateOp>([&](Operation *e) {
                return e->emitOpError()
                       << "is lowered through its loops: run "
                          "--fmha-tile-elementwise and "
                          "--fmha-map-parallel-to-gpu first (the "
                          "fmha-to-nvvm and fmha-to-rocdl pipelines do)";
              });
      if (failed(result))
        return signalPassFailure();
    }
  }

  /// The tiles and matrix instruction of an attention op with q of type
  /// `q` and v of type `v`: the options as given, or with `tuned` the
  /// chip's defaults for those not named in `fixed`.
  GpuKernelChoice choiceFor(Type q, Type v, bool backward) {
    if (!tuned) {
      GpuKernelChoice k;
      k.blockM = blockM;
      k.blockN = blockN;
      k.warpRows = warpRows;
      k.qInShared = qInShared;
      k.mma = mma;
      return k;
    }
    auto qType = cast<ShapedType>(q), vType = cast<ShapedType>(v);
    GpuKernelRequest r;
    r.rocdl = target == "rocdl";
    r.chip = chip;
    r.backward = backward;
    r.f32 = qType.getElementType().isF32();
    r.d = qType.getRank() == 4 ? qType.getDimSize(3) : 0;
    r.dv = vType.getRank() == 4 ? vType.getDimSize(3) : 0;
    r.mfma = mfma;
    auto given = [&](StringRef name) {
      return llvm::is_contained(fixed, name);
    };
    if (given("block-m"))
      r.blockM = blockM;
    if (given("block-n"))
      r.blockN = blockN;
    if (given("warp-rows"))
      r.warpRows = warpRows;
    if (given("q-in-shared"))
      r.qInShared = qInShared;
    if (given("mma"))
      r.mma = mma.empty() ? std::string("mma.sync") : mma.getValue();
    return chooseGpuKernel(r);
  }

  LogicalResult lower(AttentionOp op, const GpuTarget &gpuTarget,
                      const GpuKernelChoice &k) {
    if (op.getSinks())
      return op.emitOpError()
             << "learned sink logits (sinks) are built by the staged "
                "forward: give the pipeline vector-tiles=1 (fmha-compile "
                "--vector-tiles)";
    if (op.isVarlen())
      return op.emitOpError()
             << "variable-length batches (cu_seqlens) are tiled by "
                "fmha-tile-attention; the GPU kernel builders do not take "
                "them";
    if (op.isPaged())
      return op.emitOpError()
             << "a paged K/V cache (block_table) is tiled by "
                "fmha-tile-attention; the GPU kernel builders do not take it";
    std::string error =
        checkSupported(op, gpuTarget, chip, k.blockM, k.blockN, k.warpRows,
                       k.qInShared, k.mma == "wgmma");
    if (!error.empty())
      return op.emitOpError() << error;
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    Location loc = op.getLoc();
    OpBuilder b(ctx);
    auto qType = cast<MemRefType>(op.getQ().getType());
    auto kType = cast<MemRefType>(op.getK().getType());
    auto vType = cast<MemRefType>(op.getV().getType());
    Type elt = qType.getElementType();
    auto lseType = MemRefType::get(
        {qType.getDimSize(0), qType.getDimSize(1), qType.getDimSize(2)},
        b.getF32Type());
    if (Value given = op.getLse())
      lseType = cast<MemRefType>(given.getType());
    Type index = b.getIndexType();
    int64_t rowBlocks = k.warpRows / gpuTarget.getMmaM();
    int64_t warps = k.blockM / k.warpRows;
    int32_t threads = static_cast<int32_t>(warps * gpuTarget.getWarpSize());
    auto kernelType = [&](Value v) {
      return stridedKernelType(cast<MemRefType>(v.getType()));
    };
    SmallVector<Type> argTypes = {kernelType(op.getQ()),
                                  kernelType(op.getK()),
                                  kernelType(op.getV()),
                                  kernelType(op.getO()),
                                  stridedKernelType(lseType),
                                  index,
                                  index,
                                  index};
    gpu::GPUFuncOp func = createKernelFunc(op, module, kernelName, "attention",
                                           argTypes, threads);

    KernelConfig config;
    config.elementType = elt;
    config.hq = qType.getDimSize(1);
    config.hk = kType.getDimSize(1);
    config.d = qType.getDimSize(3);
    config.dv = vType.getDimSize(3);
    config.blockM = k.blockM;
    config.blockN = k.blockN;
    config.warps = warps;
    config.rowBlocks = rowBlocks;
    config.mask = op.getMaskSpec();
    config.scale = op.getScaleOrDefault();
    if (std::optional<APFloat> cap = op.getSoftcap())
      config.softcap = cap->convertToDouble();
    config.qInShared = k.qInShared;
    config.wgmma = k.mma == "wgmma";
    config.lazyRescale = rescale == "lazy" ||
                         (rescale.empty() && !config.wgmma &&
                          gpuTarget.prefersLazyRescale(config.dv, k.blockN));
    OpBuilder kb(ctx);
    KernelBuilder(kb, loc, gpuTarget, config).build(func);
    kb.setInsertionPointToEnd(&func.getBody().front());
    gpu::ReturnOp::create(kb, loc);

    // Host side: the operands as the kernel takes them, and the launch.
    b.setInsertionPoint(op);
    IndexMath im{b, loc};
    auto operand = [&](Value v) { return castToKernelType(b, loc, v); };
    Value lse = op.getLse();
    if (!lse) {
      // The kernel always writes lse; give it a scratch buffer.
      Value bDim = im.dim(op.getQ(), 0), sqDim = im.dim(op.getQ(), 2);
      SmallVector<Value> dyn;
      if (lseType.isDynamicDim(0))
        dyn.push_back(bDim);
      if (lseType.isDynamicDim(2))
        dyn.push_back(sqDim);
      lse = memref::AllocOp::create(b, loc, lseType, dyn);
    }
    Value batch = im.dim(op.getQ(), 0), sq = im.dim(op.getQ(), 2),
          sk = im.dim(op.getK(), 2);
    gpu::KernelDim3 grid{im.ceilDiv(sq, im.c(k.blockM)),
                         im.c(qType.getDimSize(1)), batch};
    gpu::KernelDim3 block{im.c(threads), im.c(1), im.c(1)};
    Value shared = arith::ConstantIntOp::create(
        b, loc, b.getI32Type(),
        kernelSharedBytes(gpuTarget, k.blockM, k.blockN, qType.getDimSize(3),
                          vType.getDimSize(3), k.qInShared, k.mma == "wgmma"));
    auto launch = gpu::LaunchFuncOp::create(
        b, loc, func, grid, block, shared,
        ValueRange{operand(op.getQ()), operand(op.getK()), operand(op.getV()),
                   operand(op.getO()), operand(lse), batch, sq, sk});
    // Rows of q, k, v and o move in 16-byte copies; lse by element.
    launch->setAttr(kOperandAlignAttrName,
                    b.getDenseI64ArrayAttr({16, 16, 16, 16, 0, 0, 0, 0}));
    if (!op.getLse())
      memref::DeallocOp::create(b, loc, lse);
    op.erase();
    return success();
  }
};

} // namespace

gpu::GPUModuleOp mlir::fmha::getOrCreateKernelModule(ModuleOp module,
                                                     Location loc) {
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  return gpu::GPUModuleOp::create(b, loc, kKernelModuleName);
}

gpu::GPUFuncOp mlir::fmha::createKernelFunc(Operation *op, ModuleOp module,
                                            StringRef kernelName,
                                            StringRef fallback,
                                            TypeRange argTypes,
                                            int64_t blockThreads) {
  Location loc = op->getLoc();
  gpu::GPUModuleOp gpuModule = getOrCreateKernelModule(module, loc);
  std::string name = kernelName.str();
  if (name.empty()) {
    auto parent = op->getParentOfType<FunctionOpInterface>();
    name = (parent ? parent.getName().str() : fallback.str()) + "_kernel";
  }
  SymbolTable symbols(gpuModule);
  OpBuilder b = OpBuilder::atBlockEnd(gpuModule.getBody());
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(blockThreads), 1, 1}));
  symbols.insert(func); // Uniquifies the name.
  return func;
}

Value mlir::fmha::workgroupView(OpBuilder &b, Location loc, Value raw,
                                Value byteOffset, ArrayRef<int64_t> shape,
                                Type elementType) {
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  auto type = MemRefType::get(shape, elementType, MemRefLayoutAttrInterface(),
                              workgroup);
  return memref::ViewOp::create(b, loc, type, raw, byteOffset, ValueRange{});
}

AlignedWorkgroup mlir::fmha::alignWorkgroup(OpBuilder &b, Location loc,
                                            Value raw, int64_t align) {
  IndexMath im{b, loc};
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, raw);
  Value pad =
      im.rem(im.sub(im.c(align), im.rem(address, im.c(align))), im.c(align));
  return {pad, arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                          im.add(address, pad))};
}

Value mlir::fmha::offsetAddress(OpBuilder &b, Location loc, Value base,
                                int64_t offset, Value dynamicOffset) {
  Type i64 = b.getI64Type();
  Value address = arith::AddIOp::create(
      b, loc, base, arith::ConstantIntOp::create(b, loc, i64, offset));
  if (dynamicOffset)
    address = arith::AddIOp::create(
        b, loc, address,
        arith::IndexCastOp::create(b, loc, i64, dynamicOffset));
  return address;
}

Value mlir::fmha::workgroupView(OpBuilder &b, Location loc, Value raw,
                                int64_t byteOffset, ArrayRef<int64_t> shape,
                                Type elementType) {
  return workgroupView(b, loc, raw,
                       arith::ConstantIndexOp::create(b, loc, byteOffset),
                       shape, elementType);
}

Value mlir::fmha::selectBuffer(OpBuilder &b, Location loc, Value buffers,
                               Value buf) {
  auto type = cast<MemRefType>(buffers.getType());
  SmallVector<OpFoldResult> offsets = {buf, b.getIndexAttr(0),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                     b.getIndexAttr(type.getDimSize(1)),
                                     b.getIndexAttr(type.getDimSize(2))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto viewType = memref::SubViewOp::inferRankReducedResultType(
      {type.getDimSize(1), type.getDimSize(2)}, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType), buffers,
                                   offsets, sizes, strides);
}

void mlir::fmha::emitCopyRows(OpBuilder &b, Location loc,
                              const GpuTarget &target, Value global, Value base,
                              Value rowStride, int64_t width, int64_t rows,
                              Value row0, Value rowLast, Value buffers,
                              Value buf, Value tid, int64_t threads,
                              SmallVectorImpl<Value> &tokens, bool swizzled) {
  IndexMath im{b, loc};
  const int64_t chunk = 8; // 16 bytes of 16-bit elements
  const int64_t chunksPerRow = width / chunk;
  const int64_t total = rows * chunksPerRow;
  for (int64_t first = 0; first < total; first += threads) {
    // Threads past the end copy a chunk again (same data, same place), so no
    // thread needs a guard.
    Value c = im.rem(im.add(tid, im.c(first)), im.c(total));
    // Eight threads in a row copy 128 contiguous bytes of one row: whole
    // 32-byte sectors, and (swizzled or padded) no bank conflict.
    Value row = im.div(c, im.c(chunksPerRow));
    Value chunkCol = im.rem(c, im.c(chunksPerRow));
    Value col = im.mul(chunkCol, im.c(chunk));
    Value src = im.min(im.add(row0, row), rowLast);
    Value idx = im.add(im.add(base, im.mul(src, rowStride)), col);
    SmallVector<Value> dst = {buf, row, col};
    if (swizzled) {
      Value swizzledChunk = arith::XOrIOp::create(
          b, loc, im.rem(chunkCol, im.c(8)), im.rem(row, im.c(8)));
      dst = {buf, im.div(chunkCol, im.c(8)), row,
             im.mul(swizzledChunk, im.c(chunk))};
    }
    tokens.push_back(
        target.emitAsyncCopy16(b, loc, global, ValueRange{idx}, buffers, dst));
  }
}

scf::ForOp mlir::fmha::emitPipelinedTileLoop(
    OpBuilder &b, Location loc, const GpuTarget &target, Value lb, Value ub,
    ValueRange init, function_ref<Value(OpBuilder &, Value, Value)> issue,
    function_ref<SmallVector<Value>(OpBuilder &, Value, Value, ValueRange)>
        body) {
  // With two stages, a software pipeline over workgroup memory: while tile t
  // is computed from one buffer, the copies of tile t + 1 fill the other.
  // The copies clamp their rows, so the prefetch past the loop's end reads
  // valid memory. With one stage the copies of a tile simply precede its
  // math.
  IndexMath im{b, loc};
  const bool pipelined = target.getNumCopyStages() == 2;
  if (pipelined)
    issue(b, lb, im.c(0));
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, im.c(1), init,
      [&](OpBuilder &ob, Location, Value t, ValueRange args) {
        IndexMath lm{ob, loc};
        Value buf = lm.c(0);
        if (pipelined) {
          buf = lm.rem(lm.sub(t, lb), lm.c(2));
          Value group = issue(ob, lm.add(t, lm.c(1)), lm.sub(lm.c(1), buf));
          target.emitAsyncWait(ob, loc, group, /*pending=*/1);
        } else {
          target.emitAsyncWait(ob, loc, issue(ob, t, buf), 0);
        }
        target.emitBarrier(ob, loc); // Tile t is visible to all warps.
        SmallVector<Value> next = body(ob, t, buf, args);
        target.emitBarrier(ob, loc); // Its buffer may be refilled.
        scf::YieldOp::create(ob, loc, next);
      });
  if (pipelined) {
    // Drain the last prefetch before the buffers are reused.
    target.emitAsyncWait(b, loc, target.emitAsyncCommit(b, loc, {}), 0);
    target.emitBarrier(b, loc);
  }
  return loop;
}

void mlir::fmha::emitStoreCRowSlot(
    OpBuilder &b, Location loc, const GpuTarget &target, Type elementType,
    int64_t tiles, int64_t slot, ArrayRef<FragmentCoord> cCoords,
    function_ref<Value(OpBuilder &, int64_t, int64_t)> value, Value mem,
    Value rowBase) {
  IndexMath im{b, loc};
  const int64_t numC = target.getNumCElements();
  const bool pairs = target.cPairsAreAdjacent();
  auto element = [&](int64_t j, int64_t e) {
    return arith::TruncFOp::create(b, loc, elementType, value(b, j, e))
        .getResult();
  };
  for (int64_t j = 0; j < tiles; ++j)
    for (int64_t e = 0; e < numC; ++e) {
      if (target.getCRowSlot(e) != slot)
        continue;
      Value index =
          im.add(rowBase, im.add(im.c(j * target.getMmaN()), cCoords[e].col));
      if (pairs && e % 2 == 0 && e + 1 < numC &&
          target.getCRowSlot(e + 1) == slot) {
        Value pair = vector::FromElementsOp::create(
            b, loc, VectorType::get({2}, elementType),
            ValueRange{element(j, e), element(j, e + 1)});
        vector::StoreOp::create(b, loc, pair, mem, ValueRange{index},
                                /*nontemporal=*/false, llvm::MaybeAlign(4));
        ++e;
        continue;
      }
      memref::StoreOp::create(b, loc, element(j, e), mem, ValueRange{index});
    }
}

Value mlir::fmha::collapseToRank1(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  Value flat = memref::CollapseShapeOp::create(b, loc, memref, all);
  // Kernels take memref<?xT> whatever the static sizes.
  auto dynamic = MemRefType::get({ShapedType::kDynamic}, type.getElementType());
  if (cast<MemRefType>(flat.getType()) == dynamic)
    return flat;
  return memref::CastOp::create(b, loc, dynamic, flat);
}

//===- GpuAttentionBwdKernel.cpp - fmha.attention_bwd -> GPU kernels ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-lower-to-gpu on fmha.attention_bwd: three kernels of the gpu-bwd-v1
// ABI (runtime/include/fmha/Runtime/Bundle.h), target-independent like the
// forward kernel (the target supplies GpuTarget):
//
//   <name>_prep  grid (ceil(Sq / block-m), Hq, B): one warp per row,
//                dsum = rowsum(dO * o) in f32; zeroes the f32 dQ accumulator
//                (atomic mode).
//   <name>_dkdv  grid (ceil(Sk / block-n), Hk, B): warp w owns kv rows
//                [c0 + M w, c0 + M (w + 1)) of the kv tile, whose K and V stay
//                in workgroup memory; the kernel walks the q heads of the GQA
//                group and, per head, the q tiles that see the kv tile
//                (emitQLoopBounds), Q and dO double-buffered. Per q tile:
//                  S^T = K Q^T, P^T = exp(scale S^T - lse) (recomputed, never
//                  stored), dV += P^T dO, dP^T = V dO^T,
//                  dS^T = P^T (dP^T - dsum) [softcap: (1 - (s'/cap)^2)] scale,
//                  dK += dS^T Q,
//                  atomic mode: dS^T goes to workgroup memory and the warps
//                  add dS K into the f32 accumulator (one atomic add per
//                  element).
//                dK and dV are summed over the group in registers: no K/V
//                copies, no atomics for them.
//   <name>_dq    grid (ceil(Sq / block-m), Hq, B): deterministic mode, warp w
//                owns q rows; over the kv tiles of the forward's loops (sink
//                loop, window loop) in a fixed order: S = Q K^T, P, dP = dO
//                V^T, dS, dQ += dS K in registers. Atomic mode: dq = the
//                accumulator rounded to the element type.
//
// All three run with the same block and dynamic workgroup memory (the
// largest any of them needs). The element mask only on tiles that cross a
// mask edge or the end of Sq/Sk; rows and keys past the ends are clamped on
// load and hidden by the mask (P = 0, so dS = 0).
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"
#include "fmha/Transforms/MaskUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fmha;

namespace {

constexpr double kLog2e = 1.4426950408889634;

/// A product of rows x cols outputs split over the warps of a workgroup:
/// warp w owns the tile of tileRows x tileCols at row (w / colWarps)
/// tileRows, column (w % colWarps) tileCols.
struct WarpGrid {
  int64_t colWarps, tileRows, tileCols;
};

/// The grid of `warps` warps over rows x cols, with tiles of 2 M rows where
/// they go round (fragments of B shared by two row blocks), else M, and
/// columns a multiple of `colUnit`; none when neither divides.
std::optional<WarpGrid> warpGrid(int64_t rows, int64_t cols, int64_t warps,
                                 int64_t mmaM, int64_t colUnit) {
  for (int64_t tileRows : {2 * mmaM, mmaM}) {
    if (rows % tileRows != 0)
      continue;
    const int64_t rowWarps = rows / tileRows;
    if (rowWarps > warps || warps % rowWarps != 0)
      continue;
    const int64_t colWarps = warps / rowWarps;
    if (cols % colWarps != 0 || (cols / colWarps) % colUnit != 0)
      continue;
    return WarpGrid{colWarps, tileRows, cols / colWarps};
  }
  return std::nullopt;
}

/// The warp grids of the split dkdv step (q tile qStep x kv tile blockRows):
/// S and dP (qStep x blockRows), dK (blockRows x D), dV (blockRows x Dv),
/// dQ (qStep x D, atomic mode).
struct SplitGrids {
  WarpGrid s, dk, dv, dq;
};

/// The coordinates (tile, y, z) of this block of a grid (tiles, ySize,
/// zSize), the sizes as the kernel computes them from its arguments: the
/// block ids, or where the i1 `tileMajor` holds (null: never) a
/// renumbering. The hardware dispatches blocks in the order of x + X (y +
/// ySize z); tile-major maps that order to (tile, y, z) with the tile
/// varying slowest, so that tile 0 of every (y, z) runs first, then tile 1.
/// Where the first tiles are the heavy ones, that keeps the grid's tail
/// short, at the cost of L2 locality (concurrent blocks read different
/// heads).
struct BlockCoords {
  Value tile, y, z;
};
BlockCoords emitBlockCoords(OpBuilder &b, Location loc, Value tiles,
                            int64_t ySize, Value zSize, Value tileMajor) {
  IndexMath im{b, loc};
  Value x = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value y = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value z = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  if (!tileMajor)
    return {x, y, z};
  // (Not gpu.grid_dim: on AMD it would add the implicit kernel arguments.)
  Value rows = im.mul(im.c(ySize), zSize);
  Value linear = im.add(x, im.mul(tiles, im.add(y, im.mul(im.c(ySize), z))));
  Value rest = im.rem(linear, rows);
  return {im.select(tileMajor, im.div(linear, rows), x),
          im.select(tileMajor, im.rem(rest, im.c(ySize)), y),
          im.select(tileMajor, im.div(rest, im.c(ySize)), z)};
}

/// One problem signature of the backward kernels.
struct BwdConfig {
  Type elementType;
  int64_t hq, hk, d, dv;
  /// Rows per workgroup of prep/dq (q rows) and dkdv (kv rows): one MMA row
  /// block per warp.
  int64_t blockRows, warps;
  /// The q tile of the dkdv kernel's loop and the kv tile of the dq kernel's.
  int64_t qStep, kvStep;
  bool deterministic;
  /// The dkdv step split over warp grids, P and dS through workgroup memory
  /// (where the grids exist and the memory fits); else each warp owns M kv
  /// rows of the whole step.
  std::optional<SplitGrids> split;
  /// dkdv with warpgroup products (`mma=wgmma`, sm_90a): two warpgroups of
  /// 64 kv rows, q steps of 64 rows, every operand in workgroup memory in
  /// the 128-byte swizzled layout (WarpgroupDkDvLayout).
  bool wgmma = false;
  ::fmha::MaskSpec mask;
  double scale;
  std::optional<double> softcap;
};

/// A lane's C fragments of one MMA row block: [N-wide tile][C element].
using CTiles = SmallVector<SmallVector<Value>>;

/// Bytes of a [rows][cols + pad] buffer of 16-bit elements.
int64_t bufferBytes(int64_t rows, int64_t cols) {
  return rows * (cols + kRowPad) * 2;
}

/// Workgroup memory of the dkdv kernel: K and V of the kv tile; the Q and dO
/// stages; the dS tile ([q][kv]; atomic mode or split); split: the P tile
/// ([q][kv], at `scratch`), else each warp's P scratch (targets whose C
/// fragments are not A fragments).
struct DkDvLayout {
  int64_t k, v, q, dO, dS, scratch, total;
};
DkDvLayout dkdvLayout(const GpuTarget &t, const BwdConfig &c) {
  DkDvLayout l;
  const int64_t stages = t.getNumCopyStages();
  const int64_t qkvTile = bufferBytes(c.qStep, c.blockRows);
  l.k = 0;
  l.v = l.k + bufferBytes(c.blockRows, c.d);
  l.q = l.v + bufferBytes(c.blockRows, c.dv);
  l.dO = l.q + stages * bufferBytes(c.qStep, c.d);
  l.dS = l.dO + stages * bufferBytes(c.qStep, c.dv);
  l.scratch = l.dS + (c.deterministic && !c.split ? 0 : qkvTile);
  if (c.split)
    l.total = l.scratch + qkvTile;
  else
    l.total =
        l.scratch +
        (t.getAFromC(0) ? 0 : c.warps * bufferBytes(t.getMmaM(), c.qStep));
  return l;
}

/// Workgroup memory of the deterministic dq kernel: K and V stages, scratch.
struct DqLayout {
  int64_t k, v, scratch, total;
};
DqLayout dqLayout(const GpuTarget &t, const BwdConfig &c) {
  DqLayout l;
  const int64_t stages = t.getNumCopyStages();
  l.k = 0;
  l.v = stages * bufferBytes(c.kvStep, c.d);
  l.scratch = l.v + stages * bufferBytes(c.kvStep, c.dv);
  l.total = l.scratch +
            (t.getAFromC(0) ? 0 : c.warps * bufferBytes(t.getMmaM(), c.kvStep));
  return l;
}

/// Q/dO stages of the warpgroup dkdv kernel.
constexpr int64_t kWarpgroupStages = 2;

/// Workgroup memory of the warpgroup dkdv kernel, offsets from its first
/// 1024-aligned byte (alignWorkgroup; `total` keeps the slack): K and V of
/// the kv tile ([D / 64][block][64] in the 128-byte swizzle, emitCopyRows),
/// the Q and dO stages ([D / 64][q step][64]), dS^T ([block][q step], the
/// same swizzle; atomic mode), and the stages of the q rows' lse and dsum
/// ([2][q step] f32).
struct WarpgroupDkDvLayout {
  int64_t k, v, q, dO, qStage, dOStage, dS, rowState, total;
};
WarpgroupDkDvLayout warpgroupDkDvLayout(const BwdConfig &c) {
  WarpgroupDkDvLayout l;
  l.qStage = c.qStep * c.d * 2;
  l.dOStage = c.qStep * c.dv * 2;
  l.k = 0;
  l.v = l.k + c.blockRows * c.d * 2;
  l.q = l.v + c.blockRows * c.dv * 2;
  l.dO = l.q + kWarpgroupStages * l.qStage;
  l.dS = l.dO + kWarpgroupStages * l.dOStage;
  l.rowState = l.dS + (c.deterministic ? 0 : c.blockRows * c.qStep * 2);
  l.total = l.rowState + kWarpgroupStages * 2 * c.qStep * 4 + kSwizzleAlign;
  return l;
}

int64_t sharedBytes(const GpuTarget &t, const BwdConfig &c) {
  int64_t bytes =
      c.wgmma ? warpgroupDkDvLayout(c).total : dkdvLayout(t, c).total;
  if (c.deterministic)
    bytes = std::max(bytes, dqLayout(t, c).total);
  return bytes;
}

/// The kernel parameters of gpu-bwd-v1, in order.
enum Param {
  kQ,
  kK,
  kV,
  kO,
  kDO,
  kLse,
  kDQ,
  kDK,
  kDV,
  kDsum,
  kDQAcc,
  kBatch,
  kSq,
  kSk,
  kNumParams
};

/// Builds the body of one of the three kernels.
class BwdKernelBuilder {
public:
  BwdKernelBuilder(OpBuilder &b, Location loc, const GpuTarget &target,
                   const BwdConfig &config)
      : b(b), loc(loc), t(target), cfg(config) {}

  void buildPrep(gpu::GPUFuncOp func);
  void buildDkDv(gpu::GPUFuncOp func);
  void buildDq(gpu::GPUFuncOp func);
  /// dkdv of `wgmma`, after the prologue.
  void buildDkDvWarpgroup();

private:
  void prologue(gpu::GPUFuncOp func);
  /// A parameter; a tensor operand's is its rank-1 view (GlobalTensor).
  Value arg(Param p) const { return args[p]; }
  /// The element stride of a tensor operand's rows.
  Value rowStride(Param p) const { return tensors[p].rowStride(); }
  /// Row 0 of (batch, head) in tensor operand p.
  Value headBase(OpBuilder &ob, Param p, Value batch, Value head) const {
    return tensors[p].at(ob, loc, {batch, head});
  }

  /// Two adjacent 16-bit elements at `index` (even) of a rank-1 or the
  /// last dimension of a 2-d memref: one 4-byte load.
  Value loadPair(OpBuilder &ob, Value mem, ValueRange index);
  /// A fragments of the tile rows [row0, row0 + M) and columns [col0, col0 +
  /// K) of a 2-d memref (workgroup or global), one pair per register.
  SmallVector<Value> loadA(OpBuilder &ob, Value tile, Value row0, Value col0);
  /// The A fragment of k-step kk (K columns) of the row block whose C tiles
  /// (N columns each) are `c`, rounded to the element type: straight from
  /// registers where the target allows, else through the warp's scratch
  /// (all k-steps stored at once by `spill`).
  SmallVector<Value> aFromC(OpBuilder &ob, const CTiles &c, int64_t kk,
                            Value scratch);
  void spill(OpBuilder &ob, const CTiles &c, Value scratch);
  /// C tiles of A(frags over the reduction) x B^T, B from a [rows][cols]
  /// workgroup tile read with emitLoadKFragments: `n` rows of B.
  CTiles productBT(OpBuilder &ob, ArrayRef<SmallVector<Value>> aFrags,
                   Value bTile, int64_t n, int64_t reduction);
  /// acc[j] += A(kk) x B for B rows [kk K, kk K + K) of a workgroup tile read
  /// with emitLoadVFragments, over `cols` columns.
  void accumulateAB(OpBuilder &ob, ArrayRef<SmallVector<Value>> aFrags,
                    Value bTile, int64_t cols, CTiles &acc);
  /// The C tiles ([row block][N tile], flattened) of a warp's grid tile of
  /// A x B^T: rows [row0, row0 + rows) of the 2-d workgroup tile `aTile`
  /// against rows [col0, col0 + cols) of `bTile` (emitLoadKFragments), over
  /// `reduction` columns of both.
  CTiles gridProductBT(OpBuilder &ob, Value aTile, Value bTile, Value row0,
                       Value col0, int64_t rows, int64_t cols,
                       int64_t reduction);
  /// acc ([row block][N tile]) += A x B over `reduction`: A is rows [row0,
  /// row0 + rows) and columns [0, reduction) of `aTile`, or of its transpose
  /// with `aTransposed`; B is rows [0, reduction) and columns [col0, col0 +
  /// cols) of `bTile` (emitLoadVFragments).
  void gridAccumulateAB(OpBuilder &ob, Value aTile, bool aTransposed,
                        Value bTile, Value row0, Value col0, int64_t rows,
                        int64_t cols, int64_t reduction, CTiles &acc);
  /// Stores the grid tile `c` ([row block][N tile] of `cols` columns),
  /// rounded, at rows row0.. and columns col0.. of a 2-d workgroup tile.
  void storeTile(OpBuilder &ob, const CTiles &c, Value tile, Value row0,
                 Value col0, int64_t cols);
  /// The dQ accumulator's index of C element e of the M x N tile at q row
  /// row0 (a multiple of M) and column col0 of the head whose row 0 is flat
  /// row `rowBase`. A full block of M rows keeps each of its D / N tiles as
  /// M N floats in C-fragment order (element e of lane l at e W + l), so
  /// that a warp's adds of one element are one contiguous run; a head's
  /// last, partial block is row-major (rows past Sq clamped). The same
  /// B Hq Sq D floats as row-major, permuted.
  Value dqAccIndex(OpBuilder &ob, Value rowBase, Value row0, Value col0,
                   int64_t e, Value sq);
  /// Scores to probabilities and dS (in place): s -> P, dp -> dS (scaled),
  /// given the per-element lse and dsum (f32, natural log) and a visibility
  /// predicate for edge tiles (null: all visible).
  void probsAndDs(OpBuilder &ob, CTiles &s, CTiles &dp,
                  function_ref<Value(int64_t j, int64_t e)> lseOf,
                  function_ref<Value(int64_t j, int64_t e)> dsumOf, Value full,
                  function_ref<Value(OpBuilder &, int64_t, int64_t)> visible);
  /// Stores the rows [row0, rowEnd) of `acc` at mem[base + row rowStride +
  /// col].
  void storeRows(OpBuilder &ob, const CTiles &acc, Value mem, Value base,
                 Value row0, Value rowEnd, Value rowStride);
  /// Splits loop-carried values into accumulators of `widths` columns each
  /// (N-wide C tiles), and back.
  SmallVector<CTiles> unpack(ValueRange values, ArrayRef<int64_t> widths) const;
  static SmallVector<Value> pack(ArrayRef<CTiles> accs);
  /// The dkdv kernel's block: kv tile [c0, c1) of kv head kvHead (flat, b
  /// Hk + hk) and the steps over the q tiles that see it, `total` of them
  /// for the whole GQA group.
  struct DkDvFrame {
    Value c0, c1, kvHead, kBase, vBase, dkBase, dvBase, sqLast, skLast, total;
    QLoopBounds qb;
    /// Of q, dO and lse (by Param): row 0 of the group's first q head.
    SmallVector<Value> groupBase;
  };
  DkDvFrame dkdvFrame();
  /// Step `it`'s flat q head (b Hq + hq) and first q row.
  std::pair<Value, Value> decodeStep(IndexMath &m, const DkDvFrame &f,
                                     Value it);
  /// Row 0 of a step's flat q head `head` in q, dO or lse: the group's base
  /// plus the head's place in the group times the head stride (no division
  /// per step).
  Value stepBase(IndexMath &m, const DkDvFrame &f, Param p, Value head) const;
  /// Whether the step's q tile [q0, q0 + qStep) against the kv tile lies
  /// inside Sq, Sk and the mask (no element mask needed).
  Value stepIsFull(OpBuilder &ob, const DkDvFrame &f, Value q0);
  /// Whether one (q row, kv row) pair of an edge tile is visible.
  Value pairVisible(OpBuilder &ob, Value qRow, Value kvRow);
  /// Each warp's P scratch ([M][cols + pad] in workgroup memory at
  /// `offset`) on targets whose C fragments are not A fragments, else null.
  Value warpScratch(int64_t offset, int64_t cols);

  OpBuilder &b;
  Location loc;
  const GpuTarget &t;
  BwdConfig cfg;
  SmallVector<Value> args;
  SmallVector<GlobalTensor> tensors; // kQ .. kDV
  Value tid, lane, warp, raw;
  SmallVector<FragmentCoord> aCoords, cCoords;
};

void BwdKernelBuilder::prologue(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  IndexMath im{b, loc};
  args.assign(entry.getArguments().begin(), entry.getArguments().end());
  for (int p = kQ; p <= kDV; ++p) {
    tensors.push_back(GlobalTensor::open(b, loc, args[p]));
    args[p] = tensors.back().flat;
  }
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = im.rem(tid, im.c(t.getWarpSize()));
  warp = im.div(tid, im.c(t.getWarpSize()));
  for (int64_t e = 0; e < t.getNumAElements(); ++e)
    aCoords.push_back(t.getACoord(b, loc, lane, e));
  for (int64_t e = 0; e < t.getNumCElements(); ++e)
    cCoords.push_back(t.getCCoord(b, loc, lane, e));
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  raw = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
}

Value BwdKernelBuilder::loadPair(OpBuilder &ob, Value mem, ValueRange index) {
  return vector::LoadOp::create(ob, loc, VectorType::get({2}, cfg.elementType),
                                mem, index, /*nontemporal=*/false,
                                llvm::MaybeAlign(4));
}

SmallVector<Value> BwdKernelBuilder::loadA(OpBuilder &ob, Value tile,
                                           Value row0, Value col0) {
  return t.emitLoadAFragment(ob, loc, tile, lane, row0, col0);
}

void BwdKernelBuilder::spill(OpBuilder &ob, const CTiles &c, Value scratch) {
  IndexMath im{ob, loc};
  storeTile(ob, c, scratch, im.c(0), im.c(0), c.size() * t.getMmaN());
  t.emitBarrier(ob, loc);
}

SmallVector<Value> BwdKernelBuilder::aFromC(OpBuilder &ob, const CTiles &c,
                                            int64_t kk, Value scratch) {
  if (!t.getAFromC(0)) {
    IndexMath im{ob, loc};
    return loadA(ob, scratch, im.c(0), im.c(kk * t.getMmaK()));
  }
  auto pairType = VectorType::get({2}, cfg.elementType);
  const int64_t tilesPerK = t.getMmaK() / t.getMmaN();
  SmallVector<Value> regs;
  for (int64_t e = 0; e < t.getNumAElements(); e += 2) {
    SmallVector<Value> pair;
    for (int64_t h = 0; h < 2; ++h) {
      auto [tile, elem] = *t.getAFromC(e + h);
      pair.push_back(arith::TruncFOp::create(ob, loc, cfg.elementType,
                                             c[kk * tilesPerK + tile][elem]));
    }
    regs.push_back(vector::FromElementsOp::create(ob, loc, pairType, pair));
  }
  return regs;
}

CTiles BwdKernelBuilder::productBT(OpBuilder &ob,
                                   ArrayRef<SmallVector<Value>> aFrags,
                                   Value bTile, int64_t n, int64_t reduction) {
  IndexMath im{ob, loc};
  FloatMath fm{ob, loc, t};
  const int64_t mmaN = t.getMmaN(), mmaK = t.getMmaK();
  CTiles out;
  for (int64_t j = 0; j < n / mmaN; ++j) {
    SmallVector<Value> acc(t.getNumCElements(), fm.c(0.0));
    for (int64_t kk = 0; kk < reduction / mmaK; kk += 2) {
      SmallVector<SmallVector<Value>> frags = t.emitLoadKFragments(
          ob, loc, bTile, lane, im.c(j * mmaN), im.c(kk * mmaK));
      for (int64_t h = 0; h < 2; ++h)
        acc =
            t.emitMma(ob, loc, cfg.elementType, aFrags[kk + h], frags[h], acc);
    }
    out.push_back(acc);
  }
  return out;
}

void BwdKernelBuilder::accumulateAB(OpBuilder &ob,
                                    ArrayRef<SmallVector<Value>> aFrags,
                                    Value bTile, int64_t cols, CTiles &acc) {
  IndexMath im{ob, loc};
  const int64_t mmaN = t.getMmaN(), mmaK = t.getMmaK();
  for (size_t kk = 0; kk < aFrags.size(); ++kk)
    for (int64_t j = 0; j < cols / mmaN; j += 2) {
      SmallVector<SmallVector<Value>> frags = t.emitLoadVFragments(
          ob, loc, bTile, lane, im.c(kk * mmaK), im.c(j * mmaN));
      for (int64_t h = 0; h < 2; ++h)
        acc[j + h] = t.emitMma(ob, loc, cfg.elementType, aFrags[kk], frags[h],
                               acc[j + h]);
    }
}

void BwdKernelBuilder::probsAndDs(
    OpBuilder &ob, CTiles &s, CTiles &dp,
    function_ref<Value(int64_t, int64_t)> lseOf,
    function_ref<Value(int64_t, int64_t)> dsumOf, Value full,
    function_ref<Value(OpBuilder &, int64_t, int64_t)> visible) {
  FloatMath fm{ob, loc, t};
  const int64_t numC = t.getNumCElements();
  // P = exp(x - lse) with x = scale s (softcap: cap tanh(scale s / cap)), in
  // base 2; without a softcap one FMA per score.
  SmallVector<Value> flat;
  SmallVector<Value> capped; // x / cap per element (softcap only)
  for (size_t j = 0; j < s.size(); ++j)
    for (int64_t e = 0; e < numC; ++e) {
      Value negLse = fm.mul(lseOf(j, e), fm.c(-kLog2e));
      Value p;
      if (cfg.softcap) {
        Value th = fm.tanh(fm.mul(s[j][e], fm.c(cfg.scale / *cfg.softcap)));
        capped.push_back(th);
        p = fm.exp2(fm.fma(th, fm.c(*cfg.softcap * kLog2e), negLse));
      } else {
        p = fm.exp2(fm.fma(s[j][e], fm.c(cfg.scale * kLog2e), negLse));
      }
      flat.push_back(p);
    }
  // Hidden elements (edge tiles only) get P = 0.
  auto ifOp = scf::IfOp::create(
      ob, loc, full,
      [&](OpBuilder &then, Location) { scf::YieldOp::create(then, loc, flat); },
      [&](OpBuilder &els, Location) {
        FloatMath ef{els, loc, t};
        SmallVector<Value> masked;
        for (size_t j = 0; j < s.size(); ++j)
          for (int64_t e = 0; e < numC; ++e)
            masked.push_back(
                ef.select(visible(els, j, e), flat[j * numC + e], ef.c(0.0)));
        scf::YieldOp::create(els, loc, masked);
      });
  for (size_t j = 0; j < s.size(); ++j)
    for (int64_t e = 0; e < numC; ++e) {
      Value p = ifOp.getResult(j * numC + e);
      s[j][e] = p;
      // dS = P (dP - dsum) [(1 - tanh^2)] scale.
      Value ds = fm.mul(p, fm.sub(dp[j][e], dsumOf(j, e)));
      if (cfg.softcap) {
        Value th = capped[j * numC + e];
        ds = fm.mul(ds, fm.sub(fm.c(1.0), fm.mul(th, th)));
      }
      dp[j][e] = fm.mul(ds, fm.c(cfg.scale));
    }
}

CTiles BwdKernelBuilder::gridProductBT(OpBuilder &ob, Value aTile, Value bTile,
                                       Value row0, Value col0, int64_t rows,
                                       int64_t cols, int64_t reduction) {
  IndexMath im{ob, loc};
  FloatMath fm{ob, loc, t};
  const int64_t mmaM = t.getMmaM(), mmaN = t.getMmaN(), mmaK = t.getMmaK();
  const int64_t blocks = rows / mmaM, tiles = cols / mmaN;
  CTiles acc(blocks * tiles,
             SmallVector<Value>(t.getNumCElements(), fm.c(0.0)));
  for (int64_t kk = 0; kk < reduction / mmaK; kk += 2) {
    SmallVector<SmallVector<Value>> a; // [block][k-step kk + h]
    for (int64_t rb = 0; rb < blocks; ++rb)
      for (int64_t h = 0; h < 2; ++h)
        a.push_back(loadA(ob, aTile, im.add(row0, im.c(rb * mmaM)),
                          im.c((kk + h) * mmaK)));
    for (int64_t j = 0; j < tiles; ++j) {
      SmallVector<SmallVector<Value>> frags = t.emitLoadKFragments(
          ob, loc, bTile, lane, im.add(col0, im.c(j * mmaN)), im.c(kk * mmaK));
      for (int64_t rb = 0; rb < blocks; ++rb)
        for (int64_t h = 0; h < 2; ++h)
          acc[rb * tiles + j] =
              t.emitMma(ob, loc, cfg.elementType, a[rb * 2 + h], frags[h],
                        acc[rb * tiles + j]);
    }
  }
  return acc;
}

void BwdKernelBuilder::gridAccumulateAB(OpBuilder &ob, Value aTile,
                                        bool aTransposed, Value bTile,
                                        Value row0, Value col0, int64_t rows,
                                        int64_t cols, int64_t reduction,
                                        CTiles &acc) {
  IndexMath im{ob, loc};
  const int64_t mmaM = t.getMmaM(), mmaN = t.getMmaN(), mmaK = t.getMmaK();
  const int64_t blocks = rows / mmaM, tiles = cols / mmaN;
  for (int64_t kk = 0; kk < reduction / mmaK; ++kk) {
    SmallVector<SmallVector<Value>> a;
    for (int64_t rb = 0; rb < blocks; ++rb) {
      Value r = im.add(row0, im.c(rb * mmaM)), k = im.c(kk * mmaK);
      a.push_back(aTransposed ? t.emitLoadATransposedFragment(ob, loc, aTile,
                                                              lane, r, k)
                              : loadA(ob, aTile, r, k));
    }
    for (int64_t j = 0; j < tiles; j += 2) {
      SmallVector<SmallVector<Value>> frags = t.emitLoadVFragments(
          ob, loc, bTile, lane, im.c(kk * mmaK), im.add(col0, im.c(j * mmaN)));
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t rb = 0; rb < blocks; ++rb)
          acc[rb * tiles + j + h] =
              t.emitMma(ob, loc, cfg.elementType, a[rb], frags[h],
                        acc[rb * tiles + j + h]);
    }
  }
}

void BwdKernelBuilder::storeTile(OpBuilder &ob, const CTiles &c, Value tile,
                                 Value row0, Value col0, int64_t cols) {
  IndexMath im{ob, loc};
  const int64_t mmaM = t.getMmaM(), mmaN = t.getMmaN();
  const int64_t tiles = cols / mmaN, numC = t.getNumCElements();
  const bool pairs = t.cPairsAreAdjacent();
  auto round = [&](Value v) {
    return arith::TruncFOp::create(ob, loc, cfg.elementType, v).getResult();
  };
  for (size_t i = 0; i < c.size(); ++i) {
    const int64_t rb = i / tiles, j = i % tiles;
    for (int64_t e = 0; e < numC; e += pairs ? 2 : 1) {
      Value row = im.add(row0, im.add(im.c(rb * mmaM), cCoords[e].row));
      Value col = im.add(col0, im.add(im.c(j * mmaN), cCoords[e].col));
      if (pairs) {
        Value pair = vector::FromElementsOp::create(
            ob, loc, VectorType::get({2}, cfg.elementType),
            ValueRange{round(c[i][e]), round(c[i][e + 1])});
        vector::StoreOp::create(ob, loc, pair, tile, ValueRange{row, col},
                                /*nontemporal=*/false, llvm::MaybeAlign(4));
      } else {
        memref::StoreOp::create(ob, loc, round(c[i][e]), tile,
                                ValueRange{row, col});
      }
    }
  }
}

Value BwdKernelBuilder::dqAccIndex(OpBuilder &ob, Value rowBase, Value row0,
                                   Value col0, int64_t e, Value sq) {
  IndexMath m{ob, loc};
  const int64_t mmaM = t.getMmaM();
  Value full = m.le(m.add(row0, m.c(mmaM)), sq);
  Value blocked = m.add(
      m.add(m.mul(m.add(rowBase, row0), m.c(cfg.d)), m.mul(col0, m.c(mmaM))),
      m.add(m.c(e * t.getWarpSize()), lane));
  Value row = m.min(m.add(row0, cCoords[e].row), m.sub(sq, m.c(1)));
  Value rowMajor = m.add(m.mul(m.add(rowBase, row), m.c(cfg.d)),
                         m.add(col0, cCoords[e].col));
  return arith::SelectOp::create(ob, loc, full, blocked, rowMajor);
}

SmallVector<CTiles> BwdKernelBuilder::unpack(ValueRange values,
                                             ArrayRef<int64_t> widths) const {
  SmallVector<CTiles> accs;
  size_t pos = 0;
  for (int64_t width : widths) {
    CTiles acc;
    for (int64_t j = 0; j < width / t.getMmaN(); ++j) {
      acc.push_back({});
      for (int64_t e = 0; e < t.getNumCElements(); ++e)
        acc.back().push_back(values[pos++]);
    }
    accs.push_back(acc);
  }
  return accs;
}

SmallVector<Value> BwdKernelBuilder::pack(ArrayRef<CTiles> accs) {
  SmallVector<Value> values;
  for (const CTiles &acc : accs)
    for (const SmallVector<Value> &tile : acc)
      values.append(tile.begin(), tile.end());
  return values;
}

Value BwdKernelBuilder::warpScratch(int64_t offset, int64_t cols) {
  if (t.getAFromC(0))
    return {};
  Value all =
      workgroupView(b, loc, raw, offset,
                    {cfg.warps, t.getMmaM(), cols + kRowPad}, cfg.elementType);
  return selectBuffer(b, loc, all, warp);
}

void BwdKernelBuilder::storeRows(OpBuilder &ob, const CTiles &acc, Value mem,
                                 Value base, Value row0, Value rowEnd,
                                 Value rowStride) {
  const int64_t slots = t.getNumCRowSlots();
  for (int64_t slot = 0; slot < slots; ++slot) {
    int64_t first = 0;
    while (t.getCRowSlot(first) != slot)
      ++first;
    IndexMath im{ob, loc};
    Value row = im.add(row0, cCoords[first].row);
    auto inRange = scf::IfOp::create(ob, loc, im.lt(row, rowEnd),
                                     /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(ob);
    ob.setInsertionPointToStart(inRange.thenBlock());
    IndexMath rm{ob, loc};
    emitStoreCRowSlot(
        ob, loc, t, cfg.elementType, acc.size(), slot, cCoords,
        [&](OpBuilder &, int64_t j, int64_t e) { return acc[j][e]; }, mem,
        rm.add(base, rm.mul(row, rowStride)));
  }
}

//===----------------------------------------------------------------------===//
// prep: dsum = rowsum(dO * o); zero the dQ accumulator.
//===----------------------------------------------------------------------===//

void BwdKernelBuilder::buildPrep(gpu::GPUFuncOp func) {
  prologue(func);
  IndexMath im{b, loc};
  Value qt = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value h = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value sq = arg(kSq);
  Value head = im.add(im.mul(batch, im.c(cfg.hq)), h);
  Value q0 = im.mul(qt, im.c(cfg.blockRows));
  const int64_t ws = t.getWarpSize();
  scf::ForOp rows =
      scf::ForOp::create(b, loc, warp, im.c(cfg.blockRows), im.c(cfg.warps));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(rows.getBody());
    IndexMath rm{b, loc};
    Value row = rm.add(q0, rows.getInductionVar());
    auto inRange = scf::IfOp::create(b, loc, rm.lt(row, sq), false);
    b.setInsertionPointToStart(inRange.thenBlock());
    IndexMath lm{b, loc};
    FloatMath fm{b, loc, t};
    Value flatRow = lm.add(lm.mul(head, sq), row);
    Value oRow = lm.add(headBase(b, kO, batch, h), lm.mul(row, rowStride(kO)));
    Value dORow =
        lm.add(headBase(b, kDO, batch, h), lm.mul(row, rowStride(kDO)));
    // Each lane: pairs at columns 2 lane + 2 ws i.
    Value sum = fm.c(0.0);
    for (int64_t c0 = 0; c0 < cfg.dv; c0 += 2 * ws) {
      Value col = lm.add(lm.c(c0), lm.mul(lane, lm.c(2)));
      Value inCols = lm.lt(col, lm.c(cfg.dv));
      Value at = lm.min(col, lm.c(cfg.dv - 2));
      Value o = loadPair(b, arg(kO), lm.add(oRow, at));
      Value dO = loadPair(b, arg(kDO), lm.add(dORow, at));
      Value part = fm.c(0.0);
      for (int64_t i = 0; i < 2; ++i) {
        auto ext = [&](Value v) {
          Value x = vector::ExtractOp::create(b, loc, v, i);
          return arith::ExtFOp::create(b, loc, b.getF32Type(), x).getResult();
        };
        part = fm.fma(ext(o), ext(dO), part);
      }
      sum = fm.add(sum, fm.select(inCols, part, fm.c(0.0)));
    }
    for (int64_t mask = ws / 2; mask >= 1; mask /= 2)
      sum = fm.add(sum, t.emitShuffleXor(b, loc, sum, mask));
    auto first = scf::IfOp::create(
        b, loc, lm.cmp(arith::CmpIPredicate::eq, lane, lm.c(0)), false);
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(first.thenBlock());
      memref::StoreOp::create(b, loc, sum, arg(kDsum), ValueRange{flatRow});
    }
    if (!cfg.deterministic) {
      Value accBase = lm.mul(flatRow, lm.c(cfg.d));
      for (int64_t c0 = 0; c0 < cfg.d; c0 += ws) {
        Value col = lm.add(lm.c(c0), lane);
        auto inCols = scf::IfOp::create(b, loc, lm.lt(col, lm.c(cfg.d)), false);
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(inCols.thenBlock());
        memref::StoreOp::create(
            b, loc, FloatMath{b, loc, t}.c(0.0), arg(kDQAcc),
            ValueRange{IndexMath{b, loc}.add(accBase, col)});
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// dkdv: per kv tile, over the group's q heads and the q tiles that see it.
//===----------------------------------------------------------------------===//

BwdKernelBuilder::DkDvFrame BwdKernelBuilder::dkdvFrame() {
  IndexMath im{b, loc};
  Value sq = arg(kSq), sk = arg(kSk);
  DkDvFrame f;
  // Under a right bound (causal) the first kv tiles are seen by the most q
  // tiles. With GQA, where each block walks a whole group of heads, and few
  // kv tiles per head (<= 32), they run first across the grid (tile-major):
  // the plain order leaves heavy blocks for the grid's tail (gqa4 causal
  // D = 128: +16% at 1k, +19% at 4k); with more tiles, or one head per
  // block, the plain order's L2 locality wins (docs/PERFORMANCE.md,
  // "Backward v14").
  Value kvTiles = im.ceilDiv(sk, im.c(cfg.blockRows));
  Value tileMajor;
  if (cfg.mask.hasRight() && cfg.hq > cfg.hk)
    tileMajor = im.le(kvTiles, im.c(32));
  BlockCoords block =
      emitBlockCoords(b, loc, kvTiles, cfg.hk, arg(kBatch), tileMajor);
  Value kt = block.tile, hk = block.y, batch = block.z;
  f.c0 = im.mul(kt, im.c(cfg.blockRows));
  f.c1 = im.add(f.c0, im.c(cfg.blockRows));
  f.kvHead = im.add(im.mul(batch, im.c(cfg.hk)), hk);
  f.kBase = headBase(b, kK, batch, hk);
  f.vBase = headBase(b, kV, batch, hk);
  f.dkBase = headBase(b, kDK, batch, hk);
  f.dvBase = headBase(b, kDV, batch, hk);
  f.groupBase.assign(kNumParams, Value());
  Value firstHead = im.mul(hk, im.c(cfg.hq / cfg.hk));
  for (Param p : {kQ, kDO, kLse})
    f.groupBase[p] = headBase(b, p, batch, firstHead);
  f.skLast = im.sub(sk, im.c(1));
  f.sqLast = im.sub(sq, im.c(1));
  // The q tiles that see [c0, c1), for every head of the group: iteration
  // it = (qt - begin) * group + g, so that decoding it divides by the
  // constant group size (a shift for powers of two), not by a runtime count.
  f.qb = emitQLoopBounds(b, loc, cfg.mask, f.c0, f.c1, sq, sk, cfg.qStep);
  Value nq = im.max(im.sub(f.qb.end, f.qb.begin), im.c(0));
  f.total = im.mul(nq, im.c(cfg.hq / cfg.hk));
  return f;
}

std::pair<Value, Value>
BwdKernelBuilder::decodeStep(IndexMath &m, const DkDvFrame &f, Value it) {
  const int64_t group = cfg.hq / cfg.hk;
  Value g = m.b.createOrFold<arith::RemUIOp>(loc, it, m.c(group));
  Value qTile =
      m.add(f.qb.begin, m.b.createOrFold<arith::DivUIOp>(loc, it, m.c(group)));
  Value head = m.add(m.mul(f.kvHead, m.c(group)), g); // b * Hq + hq
  return std::pair(head, m.mul(qTile, m.c(cfg.qStep)));
}

Value BwdKernelBuilder::stepBase(IndexMath &m, const DkDvFrame &f, Param p,
                                 Value head) const {
  Value g = m.sub(head, m.mul(f.kvHead, m.c(cfg.hq / cfg.hk)));
  return m.add(f.groupBase[p], m.mul(g, tensors[p].strides[1]));
}

Value BwdKernelBuilder::stepIsFull(OpBuilder &ob, const DkDvFrame &f,
                                   Value q0) {
  IndexMath m{ob, loc};
  Value sq = arg(kSq), sk = arg(kSk);
  Value q1 = m.add(q0, m.c(cfg.qStep));
  Value full = emitKvTileIsFull(ob, loc, cfg.mask, q0, q1, f.c0, f.c1, sq, sk);
  full = arith::AndIOp::create(ob, loc, full, m.le(q1, sq));
  return arith::AndIOp::create(ob, loc, full, m.le(f.c1, sk)).getResult();
}

Value BwdKernelBuilder::pairVisible(OpBuilder &ob, Value qRow, Value kvRow) {
  IndexMath em{ob, loc};
  Value sq = arg(kSq), sk = arg(kSk);
  Value vis = emitVisible(ob, loc, cfg.mask, qRow, kvRow, sq, sk);
  vis = arith::AndIOp::create(ob, loc, vis, em.lt(qRow, sq));
  return arith::AndIOp::create(ob, loc, vis, em.lt(kvRow, sk)).getResult();
}

void BwdKernelBuilder::buildDkDv(gpu::GPUFuncOp func) {
  prologue(func);
  if (cfg.wgmma)
    return buildDkDvWarpgroup();
  IndexMath im{b, loc};
  FloatMath fm{b, loc, t};
  const int64_t mmaM = t.getMmaM(), mmaN = t.getMmaN(), mmaK = t.getMmaK();
  const int64_t numC = t.getNumCElements();
  const int64_t group = cfg.hq / cfg.hk;
  const int64_t threads = cfg.warps * t.getWarpSize();
  const int64_t stages = t.getNumCopyStages();
  Value sq = arg(kSq), sk = arg(kSk);
  DkDvFrame f = dkdvFrame();
  Value c0 = f.c0, kBase = f.kBase, vBase = f.vBase;
  Value skLast = f.skLast, sqLast = f.sqLast, total = f.total;

  DkDvLayout layout = dkdvLayout(t, cfg);
  // K and V as one-buffer stage sets, so that the row copies serve them.
  Value kStage =
      workgroupView(b, loc, raw, layout.k, {1, cfg.blockRows, cfg.d + kRowPad},
                    cfg.elementType);
  Value vStage =
      workgroupView(b, loc, raw, layout.v, {1, cfg.blockRows, cfg.dv + kRowPad},
                    cfg.elementType);
  Value kTile = selectBuffer(b, loc, kStage, im.c(0));
  Value vTile = selectBuffer(b, loc, vStage, im.c(0));
  Value qBufs =
      workgroupView(b, loc, raw, layout.q, {stages, cfg.qStep, cfg.d + kRowPad},
                    cfg.elementType);
  Value dOBufs =
      workgroupView(b, loc, raw, layout.dO,
                    {stages, cfg.qStep, cfg.dv + kRowPad}, cfg.elementType);
  Value dsTile, pTile, scratch;
  if (!cfg.deterministic || cfg.split)
    dsTile =
        workgroupView(b, loc, raw, layout.dS,
                      {cfg.qStep, cfg.blockRows + kRowPad}, cfg.elementType);
  if (cfg.split)
    pTile =
        workgroupView(b, loc, raw, layout.scratch,
                      {cfg.qStep, cfg.blockRows + kRowPad}, cfg.elementType);
  else
    scratch = warpScratch(layout.scratch, cfg.qStep);

  // K and V of the kv tile, once.
  {
    SmallVector<Value> tokens;
    emitCopyRows(b, loc, t, arg(kK), kBase, rowStride(kK), cfg.d, cfg.blockRows,
                 c0, skLast, kStage, im.c(0), tid, threads, tokens);
    emitCopyRows(b, loc, t, arg(kV), vBase, rowStride(kV), cfg.dv,
                 cfg.blockRows, c0, skLast, vStage, im.c(0), tid, threads,
                 tokens);
    llvm::erase(tokens, Value());
    t.emitAsyncWait(b, loc, t.emitAsyncCommit(b, loc, tokens), 0);
    t.emitBarrier(b, loc);
  }
  Value warpRow0 = im.mul(warp, im.c(mmaM)); // within the kv tile
  // The A fragments of the warp's K and V rows. Up to d + dv = 128 they stay
  // in registers for the whole loop (32 registers at D = 64); wider, they
  // would not fit next to the dK/dV accumulators and are re-read per step.
  auto loadKvFrags = [&](OpBuilder &ob, Value tile, int64_t width) {
    IndexMath m{ob, loc};
    SmallVector<SmallVector<Value>> frags;
    for (int64_t kk = 0; kk < width / mmaK; ++kk)
      frags.push_back(loadA(ob, tile, warpRow0, m.c(kk * mmaK)));
    return frags;
  };
  SmallVector<SmallVector<Value>> kHeld, vHeld;
  if (!cfg.split && cfg.d + cfg.dv <= 128) {
    kHeld = loadKvFrags(b, kTile, cfg.d);
    vHeld = loadKvFrags(b, vTile, cfg.dv);
  }

  auto decode = [&](IndexMath &m, Value it) { return decodeStep(m, f, it); };

  // The split step's warp tiles: origins of the warp in each grid, and its
  // dK and dV accumulators as one "width" of N-wide tiles each.
  auto origin = [&](const WarpGrid &g) {
    return std::pair(im.mul(im.div(warp, im.c(g.colWarps)), im.c(g.tileRows)),
                     im.mul(im.rem(warp, im.c(g.colWarps)), im.c(g.tileCols)));
  };
  auto tilesOf = [&](const WarpGrid &g) {
    return g.tileRows / mmaM * g.tileCols;
  };
  SmallVector<int64_t> accWidths = {cfg.d, cfg.dv};
  std::pair<Value, Value> sAt, dkAt, dvAt, dqAt;
  if (cfg.split) {
    const SplitGrids &g = *cfg.split;
    accWidths = {tilesOf(g.dk), tilesOf(g.dv)};
    sAt = origin(g.s);
    dkAt = origin(g.dk);
    dvAt = origin(g.dv);
    if (!cfg.deterministic)
      dqAt = origin(g.dq);
  }
  SmallVector<Value> init((accWidths[0] + accWidths[1]) / mmaN * numC,
                          fm.c(0.0));

  auto issue = [&](OpBuilder &ob, Value it, Value buf) {
    IndexMath m{ob, loc};
    Value clamped = m.max(m.min(it, m.sub(total, m.c(1))), m.c(0));
    auto [head, q0] = decode(m, clamped);
    SmallVector<Value> tokens;
    emitCopyRows(ob, loc, t, arg(kQ), stepBase(m, f, kQ, head), rowStride(kQ),
                 cfg.d, cfg.qStep, q0, sqLast, qBufs, buf, tid, threads,
                 tokens);
    emitCopyRows(ob, loc, t, arg(kDO), stepBase(m, f, kDO, head),
                 rowStride(kDO), cfg.dv, cfg.qStep, q0, sqLast, dOBufs, buf,
                 tid, threads, tokens);
    llvm::erase(tokens, Value());
    return t.emitAsyncCommit(ob, loc, tokens);
  };

  auto stepIsFull = [&](OpBuilder &ob, Value q0) {
    return this->stepIsFull(ob, f, q0);
  };

  // One step (q tile of head `head` from row q0) of each form.
  auto unsplitStep = [&](OpBuilder &ob, Value head, Value q0, Value qTile,
                         Value dOTile, CTiles &accK, CTiles &accV) {
    IndexMath m{ob, loc};
    // S^T = K Q^T and dP^T = V dO^T for the warp's kv rows.
    SmallVector<SmallVector<Value>> kFrags = kHeld, vFrags = vHeld;
    if (kFrags.empty())
      kFrags = loadKvFrags(ob, kTile, cfg.d);
    CTiles s = productBT(ob, kFrags, qTile, cfg.qStep, cfg.d);
    if (vFrags.empty())
      vFrags = loadKvFrags(ob, vTile, cfg.dv);
    CTiles dp = productBT(ob, vFrags, dOTile, cfg.qStep, cfg.dv);

    // Per element: column = q row q0 + N j + col, row = kv row.
    Value rowBase = m.mul(head, sq);
    Value lseBase = stepBase(m, f, kLse, head);
    SmallVector<Value> lse, dsum;
    for (int64_t j = 0; j < cfg.qStep / mmaN; ++j)
      for (int64_t e = 0; e < numC; ++e) {
        Value qRow =
            m.min(m.add(q0, m.add(m.c(j * mmaN), cCoords[e].col)), sqLast);
        lse.push_back(
            memref::LoadOp::create(ob, loc, arg(kLse), m.add(lseBase, qRow)));
        dsum.push_back(
            memref::LoadOp::create(ob, loc, arg(kDsum), m.add(rowBase, qRow)));
      }
    probsAndDs(
        ob, s, dp, [&](int64_t j, int64_t e) { return lse[j * numC + e]; },
        [&](int64_t j, int64_t e) { return dsum[j * numC + e]; },
        stepIsFull(ob, q0),
        [&](OpBuilder &eb, int64_t j, int64_t e) {
          IndexMath em{eb, loc};
          Value qRow = em.add(q0, em.add(em.c(j * mmaN), cCoords[e].col));
          Value kvRow = em.add(em.add(c0, warpRow0), cCoords[e].row);
          return pairVisible(eb, qRow, kvRow);
        });

    // dV += P^T dO, dK += dS^T Q (the reduction runs over the q tile).
    SmallVector<SmallVector<Value>> pA, dsA;
    if (scratch)
      spill(ob, s, scratch);
    for (int64_t kk = 0; kk < cfg.qStep / mmaK; ++kk)
      pA.push_back(aFromC(ob, s, kk, scratch));
    accumulateAB(ob, pA, dOTile, cfg.dv, accV);
    if (scratch) {
      t.emitBarrier(ob, loc);
      spill(ob, dp, scratch);
    }
    for (int64_t kk = 0; kk < cfg.qStep / mmaK; ++kk)
      dsA.push_back(aFromC(ob, dp, kk, scratch));
    accumulateAB(ob, dsA, qTile, cfg.d, accK);
    if (scratch)
      t.emitBarrier(ob, loc);

    if (!cfg.deterministic) {
      // dS (q rows x kv rows) through workgroup memory; the warps split the
      // q tile's dQ into (M rows x 2N columns) units, each a product over the
      // kv tile, added atomically to the f32 accumulator.
      for (size_t j = 0; j < dp.size(); ++j)
        for (int64_t e = 0; e < numC; ++e)
          memref::StoreOp::create(
              ob, loc,
              arith::TruncFOp::create(ob, loc, cfg.elementType, dp[j][e]),
              dsTile,
              ValueRange{m.add(m.c(j * mmaN), cCoords[e].col),
                         m.add(warpRow0, cCoords[e].row)});
      t.emitBarrier(ob, loc);
      const int64_t colUnits = cfg.d / (2 * mmaN);
      const int64_t units = (cfg.qStep / mmaM) * colUnits;
      auto unitLoop =
          scf::ForOp::create(ob, loc, warp, m.c(units), m.c(cfg.warps));
      OpBuilder::InsertionGuard guard(ob);
      ob.setInsertionPointToStart(unitLoop.getBody());
      IndexMath um{ob, loc};
      FloatMath uf{ob, loc, t};
      Value u = unitLoop.getInductionVar();
      Value rowBlock = um.mul(um.div(u, um.c(colUnits)), um.c(mmaM));
      Value col0 = um.mul(um.rem(u, um.c(colUnits)), um.c(2 * mmaN));
      SmallVector<SmallVector<Value>> acc(2,
                                          SmallVector<Value>(numC, uf.c(0.0)));
      for (int64_t kk = 0; kk < cfg.blockRows / mmaK; ++kk) {
        SmallVector<Value> a = loadA(ob, dsTile, rowBlock, um.c(kk * mmaK));
        SmallVector<SmallVector<Value>> frags =
            t.emitLoadVFragments(ob, loc, kTile, lane, um.c(kk * mmaK), col0);
        for (int64_t h = 0; h < 2; ++h)
          acc[h] = t.emitMma(ob, loc, cfg.elementType, a, frags[h], acc[h]);
      }
      // Rows past Sq hold dS = 0: clamping them adds zeros.
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < numC; ++e) {
          Value idx = dqAccIndex(ob, rowBase, um.add(q0, rowBlock),
                                 um.add(col0, um.c(h * mmaN)), e, sq);
          t.emitWorkspaceAtomicAdd(ob, loc, acc[h][e], arg(kDQAcc), idx);
        }
    }
  };

  // The split step: S = Q K^T and dP = dO V^T over the S grid; P and dS
  // (q rows x kv columns) to workgroup memory; then dV += P^T dO and dK +=
  // dS^T Q over their own grids (the transposes read by the loads), and in
  // atomic mode dQ = dS K over the dQ grid, added to the accumulator.
  auto splitStep = [&](OpBuilder &ob, Value head, Value q0, Value qTile,
                       Value dOTile, CTiles &accK, CTiles &accV) {
    const SplitGrids &g = *cfg.split;
    IndexMath m{ob, loc};

    CTiles s = gridProductBT(ob, qTile, kTile, sAt.first, sAt.second,
                             g.s.tileRows, g.s.tileCols, cfg.d);
    CTiles dp = gridProductBT(ob, dOTile, vTile, sAt.first, sAt.second,
                              g.s.tileRows, g.s.tileCols, cfg.dv);
    // lse and dsum per (row block, row slot) of the warp's q rows.
    const int64_t tiles = g.s.tileCols / mmaN;
    const int64_t slots = t.getNumCRowSlots();
    Value rowBase = m.mul(head, sq);
    Value lseBase = stepBase(m, f, kLse, head);
    auto qRowOf = [&](IndexMath &em, int64_t i, int64_t e) {
      return em.add(em.add(q0, sAt.first),
                    em.add(em.c(i / tiles * mmaM), cCoords[e].row));
    };
    SmallVector<Value> lse, dsum;
    for (int64_t rb = 0; rb < g.s.tileRows / mmaM; ++rb)
      for (int64_t slot = 0; slot < slots; ++slot) {
        int64_t e = 0;
        while (t.getCRowSlot(e) != slot)
          ++e;
        Value row = m.min(qRowOf(m, rb * tiles, e), sqLast);
        lse.push_back(
            memref::LoadOp::create(ob, loc, arg(kLse), m.add(lseBase, row)));
        dsum.push_back(
            memref::LoadOp::create(ob, loc, arg(kDsum), m.add(rowBase, row)));
      }
    auto rowState = [&](ArrayRef<Value> v) {
      return [&, v](int64_t i, int64_t e) {
        return v[i / tiles * slots + t.getCRowSlot(e)];
      };
    };
    probsAndDs(ob, s, dp, rowState(lse), rowState(dsum), stepIsFull(ob, q0),
               [&](OpBuilder &eb, int64_t i, int64_t e) {
                 IndexMath em{eb, loc};
                 Value kvRow =
                     em.add(em.add(c0, sAt.second),
                            em.add(em.c(i % tiles * mmaN), cCoords[e].col));
                 return pairVisible(eb, qRowOf(em, i, e), kvRow);
               });
    storeTile(ob, s, pTile, sAt.first, sAt.second, g.s.tileCols);
    storeTile(ob, dp, dsTile, sAt.first, sAt.second, g.s.tileCols);
    t.emitBarrier(ob, loc);

    gridAccumulateAB(ob, pTile, /*aTransposed=*/true, dOTile, dvAt.first,
                     dvAt.second, g.dv.tileRows, g.dv.tileCols, cfg.qStep,
                     accV);
    gridAccumulateAB(ob, dsTile, /*aTransposed=*/true, qTile, dkAt.first,
                     dkAt.second, g.dk.tileRows, g.dk.tileCols, cfg.qStep,
                     accK);
    if (!cfg.deterministic) {
      FloatMath qf{ob, loc, t};
      const int64_t dqTiles = g.dq.tileCols / mmaN;
      CTiles dq(g.dq.tileRows / mmaM * dqTiles,
                SmallVector<Value>(numC, qf.c(0.0)));
      gridAccumulateAB(ob, dsTile, /*aTransposed=*/false, kTile, dqAt.first,
                       dqAt.second, g.dq.tileRows, g.dq.tileCols, cfg.blockRows,
                       dq);
      // Rows past Sq hold dS = 0: clamping them adds zeros.
      for (size_t i = 0; i < dq.size(); ++i) {
        Value row0 = m.add(m.add(q0, dqAt.first), m.c(i / dqTiles * mmaM));
        Value col0 = m.add(dqAt.second, m.c(i % dqTiles * mmaN));
        for (int64_t e = 0; e < numC; ++e)
          t.emitWorkspaceAtomicAdd(ob, loc, dq[i][e], arg(kDQAcc),
                                   dqAccIndex(ob, rowBase, row0, col0, e, sq));
      }
    }
  };

  auto body = [&](OpBuilder &ob, Value it, Value buf,
                  ValueRange carried) -> SmallVector<Value> {
    IndexMath m{ob, loc};
    std::pair<Value, Value> decoded = decode(m, it);
    Value qTile = selectBuffer(ob, loc, qBufs, buf);
    Value dOTile = selectBuffer(ob, loc, dOBufs, buf);
    SmallVector<CTiles> accs = unpack(carried, accWidths);
    if (cfg.split)
      splitStep(ob, decoded.first, decoded.second, qTile, dOTile, accs[0],
                accs[1]);
    else
      unsplitStep(ob, decoded.first, decoded.second, qTile, dOTile, accs[0],
                  accs[1]);
    return pack(accs);
  };
  scf::ForOp loop =
      emitPipelinedTileLoop(b, loc, t, im.c(0), total, init, issue, body);
  loop->setAttr("fmha.q_loop", b.getStringAttr("group"));

  // dK (scale already in dS) and dV, rows past Sk not written.
  SmallVector<CTiles> out = unpack(loop.getResults(), accWidths);
  if (!cfg.split) {
    Value kvRow0 = im.add(c0, warpRow0);
    storeRows(b, out[0], arg(kDK), f.dkBase, kvRow0, sk, rowStride(kDK));
    storeRows(b, out[1], arg(kDV), f.dvBase, kvRow0, sk, rowStride(kDV));
    return;
  }
  // Per row block of the warp's grid tiles.
  auto storeGrid = [&](const CTiles &acc, const WarpGrid &g,
                       std::pair<Value, Value> at, Param p, Value base) {
    const int64_t tiles = g.tileCols / mmaN;
    for (int64_t rb = 0; rb < g.tileRows / mmaM; ++rb) {
      CTiles block(acc.begin() + rb * tiles, acc.begin() + (rb + 1) * tiles);
      storeRows(b, block, arg(p), im.add(base, at.second),
                im.add(im.add(c0, at.first), im.c(rb * mmaM)), sk,
                rowStride(p));
    }
  };
  storeGrid(out[0], cfg.split->dk, dkAt, kDK, f.dkBase);
  storeGrid(out[1], cfg.split->dv, dvAt, kDV, f.dvBase);
}

//===----------------------------------------------------------------------===//
// dkdv with warpgroup products (mma=wgmma).
//===----------------------------------------------------------------------===//

void BwdKernelBuilder::buildDkDvWarpgroup() {
  // Warpgroup g owns kv rows [64 g, 64 g + 64) of the kv tile; warp w of it
  // rows [16 w, 16 w + 16) of those, as C fragments (GpuTarget's warpgroup
  // hooks). Per step (q tile of 64 rows):
  //   S^T = K Q^T and dP^T = V dO^T (A = K, V rows, B = Q, dO, both
  //   K-major), one group, waited for;
  //   P^T and dS^T in registers; atomic mode: dS^T rounded to workgroup
  //   memory;
  //   dV += P^T dO and dK += dS^T Q with A from registers (the C fragments
  //   are A fragments) and B = dO, Q N-major, one group;
  //   atomic mode: after a barrier, dQ = dS K over the q tile's 64 rows,
  //   warpgroup g taking columns [g D / 2, (g + 1) D / 2) (A = dS^T read
  //   M-major, B = K N-major), added to the accumulator in C-fragment order
  //   (dqAccIndex).
  // Q and dO are double-buffered; the next step's lse and dsum are loaded
  // during a step and stored to their stage at its end. One barrier starts
  // each step: every warpgroup has then waited for all its products of the
  // last step, so the other stage and the dS^T tile are free.
  IndexMath im{b, loc};
  FloatMath fm{b, loc, t};
  Type f32 = b.getF32Type();
  const int64_t mmaM = t.getMmaM(), mmaK = t.getMmaK(), mmaN = t.getMmaN();
  const int64_t threads = cfg.warps * t.getWarpSize();
  const int64_t q = cfg.qStep, rows = cfg.blockRows;
  Value sq = arg(kSq), sk = arg(kSk);
  DkDvFrame f = dkdvFrame();
  WarpgroupDkDvLayout layout = warpgroupDkDvLayout(cfg);
  AlignedWorkgroup aligned = alignWorkgroup(b, loc, raw, kSwizzleAlign);
  auto view = [&](int64_t offset, ArrayRef<int64_t> shape, Type type) {
    return workgroupView(b, loc, raw, im.add(aligned.pad, im.c(offset)), shape,
                         type);
  };
  Type elt = cfg.elementType;
  Value kStage = view(layout.k, {1, cfg.d / 64, rows, 64}, elt);
  Value vStage = view(layout.v, {1, cfg.dv / 64, rows, 64}, elt);
  Value qBufs = view(layout.q, {kWarpgroupStages, cfg.d / 64, q, 64}, elt);
  Value dOBufs = view(layout.dO, {kWarpgroupStages, cfg.dv / 64, q, 64}, elt);
  Value rowState = view(layout.rowState, {kWarpgroupStages, 2, q}, f32);
  Value dsTile;
  if (!cfg.deterministic)
    dsTile = view(layout.dS, {rows, q}, elt);
  Value group = im.div(warp, im.c(kWarpgroupWarps));
  // The warp's first kv row within the tile.
  Value warpRow0 =
      im.add(im.mul(group, im.c(kWarpgroupRows)),
             im.mul(im.rem(warp, im.c(kWarpgroupWarps)), im.c(mmaM)));
  // The descriptor of an operand `offset` (+ `dynamic`) bytes into the
  // layout.
  auto desc = [&](OpBuilder &ob, int64_t offset, Value dynamic,
                  int64_t leading) {
    return t.emitWarpgroupDescriptor(
        ob, loc, offsetAddress(ob, loc, aligned.address, offset, dynamic),
        leading, 1024);
  };

  // Copies of step `it` (clamped into the loop) to stage `buf`, and the
  // lse or dsum value this thread stages for it: thread i holds element
  // i % q of row state (i / q) % 2 (0: lse, 1: dsum).
  auto issue = [&](OpBuilder &ob, Value it, Value buf) {
    IndexMath m{ob, loc};
    Value clamped = m.max(m.min(it, m.sub(f.total, m.c(1))), m.c(0));
    auto [head, q0] = decodeStep(m, f, clamped);
    Value rowBase = m.mul(head, sq);
    SmallVector<Value> tokens;
    emitCopyRows(ob, loc, t, arg(kQ), stepBase(m, f, kQ, head), rowStride(kQ),
                 cfg.d, q, q0, f.sqLast, qBufs, buf, tid, threads, tokens,
                 /*swizzled=*/true);
    emitCopyRows(ob, loc, t, arg(kDO), stepBase(m, f, kDO, head),
                 rowStride(kDO), cfg.dv, q, q0, f.sqLast, dOBufs, buf, tid,
                 threads, tokens, /*swizzled=*/true);
    llvm::erase(tokens, Value());
    t.emitAsyncCommit(ob, loc, tokens);
    Value row = m.min(m.add(q0, m.rem(tid, m.c(q))), f.sqLast);
    Value isDsum = m.cmp(arith::CmpIPredicate::eq,
                         m.rem(m.div(tid, m.c(q)), m.c(2)), m.c(1));
    Value lse = memref::LoadOp::create(ob, loc, arg(kLse),
                                       m.add(stepBase(m, f, kLse, head), row));
    Value dsum =
        memref::LoadOp::create(ob, loc, arg(kDsum), m.add(rowBase, row));
    return FloatMath{ob, loc, t}.select(isDsum, dsum, lse);
  };
  auto stageRowState = [&](OpBuilder &ob, Value value, Value buf) {
    IndexMath m{ob, loc};
    memref::StoreOp::create(
        ob, loc, value, rowState,
        ValueRange{buf, m.rem(m.div(tid, m.c(q)), m.c(2)), m.rem(tid, m.c(q))});
  };

  // K and V of the kv tile and step 0's operands.
  {
    SmallVector<Value> tokens;
    emitCopyRows(b, loc, t, arg(kK), f.kBase, rowStride(kK), cfg.d, rows, f.c0,
                 f.skLast, kStage, im.c(0), tid, threads, tokens,
                 /*swizzled=*/true);
    emitCopyRows(b, loc, t, arg(kV), f.vBase, rowStride(kV), cfg.dv, rows, f.c0,
                 f.skLast, vStage, im.c(0), tid, threads, tokens,
                 /*swizzled=*/true);
    llvm::erase(tokens, Value());
    t.emitAsyncCommit(b, loc, tokens);
    stageRowState(b, issue(b, im.c(0), im.c(0)), im.c(0));
  }

  // S^T (A = K) or dP^T (A = V) of a step: K-major operands, [width / 64]
  // blocks of 128-byte rows; a k-step of 16 elements is 32 bytes into them.
  auto scoresT = [&](OpBuilder &ob, int64_t aOffset, int64_t bOffset,
                     Value bStage, int64_t width) {
    IndexMath m{ob, loc};
    Value aRows = m.mul(group, m.c(kWarpgroupRows * 128));
    SmallVector<Value> acc;
    for (int64_t kk = 0; kk < width / mmaK; ++kk) {
      const int64_t block = kk / (64 / mmaK), inRow = kk % (64 / mmaK) * 32;
      Value descA = desc(ob, aOffset + block * rows * 128 + inRow, aRows, 16);
      Value descB = desc(ob, bOffset + block * q * 128 + inRow, bStage, 16);
      acc = t.emitWarpgroupMma(ob, loc, elt, q, descA, /*aMMajor=*/false, descB,
                               /*bNMajor=*/false, acc);
    }
    return acc;
  };
  // The A fragments of `c` (K = q rows), all k-steps: rounded before the
  // products are issued, so that no register of theirs changes between them.
  auto aFragments = [&](OpBuilder &ob, const CTiles &c) {
    SmallVector<SmallVector<Value>> regs;
    for (int64_t kk = 0; kk < q / mmaK; ++kk)
      regs.push_back(aFromC(ob, c, kk, Value()));
    return regs;
  };
  // acc += A B, B = rows of the stage (N-major: N = width columns,
  // [width / 64] blocks of q x 128 bytes).
  auto accumulate = [&](OpBuilder &ob, ArrayRef<SmallVector<Value>> aRegs,
                        int64_t bOffset, Value bStage, int64_t width,
                        ArrayRef<Value> acc) {
    SmallVector<Value> out(acc);
    for (auto [kk, regs] : llvm::enumerate(aRegs))
      out = t.emitWarpgroupMmaRegisterA(
          ob, loc, elt, width, regs,
          desc(ob, bOffset + kk * mmaK * 128, bStage, q * 128),
          /*bNMajor=*/true, out);
    return out;
  };

  SmallVector<Value> init((cfg.d + cfg.dv) / 2, fm.c(0.0));
  init.push_back(fm.c(0.0)); // the staged row state
  auto loop = scf::ForOp::create(
      b, loc, im.c(0), f.total, im.c(1), init,
      [&](OpBuilder &ob, Location, Value it, ValueRange carried) {
        IndexMath m{ob, loc};
        Value buf = m.rem(it, m.c(kWarpgroupStages));
        Value next = m.sub(m.c(1), buf);
        t.emitAsyncWait(ob, loc, t.emitAsyncCommit(ob, loc, {}), 0);
        t.emitWarpgroupOperandFence(ob, loc);
        t.emitBarrier(ob, loc);
        Value staged = issue(ob, m.add(it, m.c(1)), next);
        std::pair<Value, Value> step = decodeStep(m, f, it);
        Value q0 = step.second;
        Value rowBase = m.mul(step.first, sq);

        Value qOff = m.mul(buf, m.c(layout.qStage));
        Value dOOff = m.mul(buf, m.c(layout.dOStage));
        t.emitWarpgroupFence(ob, loc);
        SmallVector<Value> sAcc = scoresT(ob, layout.k, layout.q, qOff, cfg.d);
        SmallVector<Value> dpAcc =
            scoresT(ob, layout.v, layout.dO, dOOff, cfg.dv);
        t.emitWarpgroupCommit(ob, loc);
        sAcc.append(dpAcc);
        SmallVector<CTiles> sdp =
            unpack(t.emitWarpgroupWait(ob, loc, 0, sAcc), {q, q});
        CTiles &s = sdp[0], &dp = sdp[1];

        // Element (j, e): kv row warpRow0 + row(e), q row q0 + N j + col(e).
        auto stateOf = [&](int64_t which) {
          return [&, which](int64_t j, int64_t e) -> Value {
            IndexMath sm{ob, loc};
            return memref::LoadOp::create(
                ob, loc, rowState,
                ValueRange{buf, sm.c(which),
                           sm.add(sm.c(j * mmaN), cCoords[e].col)});
          };
        };
        probsAndDs(ob, s, dp, stateOf(0), stateOf(1), stepIsFull(ob, f, q0),
                   [&](OpBuilder &eb, int64_t j, int64_t e) {
                     IndexMath em{eb, loc};
                     Value qRow =
                         em.add(q0, em.add(em.c(j * mmaN), cCoords[e].col));
                     Value kvRow =
                         em.add(em.add(f.c0, warpRow0), cCoords[e].row);
                     return pairVisible(eb, qRow, kvRow);
                   });

        if (dsTile) {
          // dS^T rounded: row r's 16-byte chunk j at chunk j ^ (r % 8).
          for (size_t j = 0; j < dp.size(); ++j)
            for (int64_t e = 0; e < t.getNumCElements(); ++e) {
              Value row = m.add(warpRow0, cCoords[e].row);
              Value chunk =
                  arith::XOrIOp::create(ob, loc, m.c(j), m.rem(row, m.c(8)));
              Value col = m.add(m.mul(chunk, m.c(8)), cCoords[e].col);
              memref::StoreOp::create(
                  ob, loc, arith::TruncFOp::create(ob, loc, elt, dp[j][e]),
                  dsTile, ValueRange{row, col});
            }
        }

        SmallVector<Value> accs(carried.drop_back());
        SmallVector<SmallVector<Value>> dsRegs = aFragments(ob, dp),
                                        pRegs = aFragments(ob, s);
        t.emitWarpgroupFence(ob, loc);
        SmallVector<Value> accK =
            accumulate(ob, dsRegs, layout.q, qOff, cfg.d,
                       ArrayRef<Value>(accs).take_front(cfg.d / 2));
        SmallVector<Value> accV =
            accumulate(ob, pRegs, layout.dO, dOOff, cfg.dv,
                       ArrayRef<Value>(accs).drop_front(cfg.d / 2));
        t.emitWarpgroupCommit(ob, loc);
        accs = accK;
        accs.append(accV);
        if (!dsTile) {
          accs = t.emitWarpgroupWait(ob, loc, 0, accs);
        } else {
          t.emitWarpgroupOperandFence(ob, loc);
          t.emitBarrier(ob, loc);
          // Columns [g D / 2, (g + 1) D / 2) of K (N-major): block g D / 128
          // of block-n x 128 bytes, (g D / 2) % 64 elements into its rows.
          const int64_t half = cfg.d / 2;
          Value colOff = m.mul(group, m.c(half));
          Value kCols = m.add(m.mul(m.div(colOff, m.c(64)), m.c(rows * 128)),
                              m.mul(m.rem(colOff, m.c(64)), m.c(2)));
          t.emitWarpgroupFence(ob, loc);
          SmallVector<Value> dq;
          for (int64_t kk = 0; kk < rows / mmaK; ++kk)
            dq = t.emitWarpgroupMma(
                ob, loc, elt, half,
                desc(ob, layout.dS + kk * mmaK * 128, Value(), rows * 128),
                /*aMMajor=*/true,
                desc(ob, layout.k + kk * mmaK * 128, kCols, rows * 128),
                /*bNMajor=*/true, dq);
          t.emitWarpgroupCommit(ob, loc);
          accs.append(dq);
          accs = t.emitWarpgroupWait(ob, loc, 0, accs);
          CTiles dqTiles =
              unpack(ArrayRef<Value>(accs).drop_front((cfg.d + cfg.dv) / 2),
                     {half})[0];
          accs.resize((cfg.d + cfg.dv) / 2);
          // Rows past Sq hold dS = 0: clamping them adds zeros.
          Value row0 =
              m.add(q0, m.mul(m.rem(warp, m.c(kWarpgroupWarps)), m.c(mmaM)));
          for (size_t j = 0; j < dqTiles.size(); ++j)
            for (int64_t e = 0; e < t.getNumCElements(); ++e)
              t.emitWorkspaceAtomicAdd(ob, loc, dqTiles[j][e], arg(kDQAcc),
                                       dqAccIndex(ob, rowBase, row0,
                                                  m.add(colOff, m.c(j * mmaN)),
                                                  e, sq));
        }
        stageRowState(ob, staged, next);
        accs.push_back(staged);
        scf::YieldOp::create(ob, loc, accs);
      });
  loop->setAttr("fmha.q_loop", b.getStringAttr("group"));
  // The prefetch past the last step drains before the kernel ends.
  t.emitAsyncWait(b, loc, t.emitAsyncCommit(b, loc, {}), 0);

  // dK (scale already in dS) and dV, rows past Sk not written.
  SmallVector<CTiles> out =
      unpack(loop.getResults().drop_back(), {cfg.d, cfg.dv});
  Value kvRow0 = im.add(f.c0, warpRow0);
  storeRows(b, out[0], arg(kDK), f.dkBase, kvRow0, sk, rowStride(kDK));
  storeRows(b, out[1], arg(kDV), f.dvBase, kvRow0, sk, rowStride(kDV));
}

//===----------------------------------------------------------------------===//
// dq: deterministic recompute per q tile, or the accumulator rounded.
//===----------------------------------------------------------------------===//

void BwdKernelBuilder::buildDq(gpu::GPUFuncOp func) {
  prologue(func);
  IndexMath im{b, loc};
  FloatMath fm{b, loc, t};
  const int64_t mmaM = t.getMmaM(), mmaN = t.getMmaN(), mmaK = t.getMmaK();
  const int64_t numC = t.getNumCElements();
  const int64_t threads = cfg.warps * t.getWarpSize();
  const int64_t stages = t.getNumCopyStages();
  Value sq = arg(kSq), sk = arg(kSk);
  Value qt = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value h = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value head = im.add(im.mul(batch, im.c(cfg.hq)), h);
  Value r0 = im.mul(qt, im.c(cfg.blockRows));
  Value r1 = im.add(r0, im.c(cfg.blockRows));
  Value rowBase = im.mul(head, sq);
  Value dqBase = headBase(b, kDQ, batch, h);

  if (!cfg.deterministic) {
    // dq = the accumulator rounded: warp w reads its row block's tiles in
    // the accumulator's order (dqAccIndex) and stores them row-major.
    Value row0 = im.add(r0, im.mul(warp, im.c(mmaM)));
    CTiles acc;
    for (int64_t j = 0; j < cfg.d / mmaN; ++j) {
      acc.emplace_back();
      for (int64_t e = 0; e < numC; ++e)
        acc.back().push_back(memref::LoadOp::create(
            b, loc, arg(kDQAcc),
            dqAccIndex(b, rowBase, row0, im.c(j * mmaN), e, sq)));
    }
    storeRows(b, acc, arg(kDQ), dqBase, row0, sq, rowStride(kDQ));
    return;
  }

  DqLayout layout = dqLayout(t, cfg);
  Value kBufs =
      workgroupView(b, loc, raw, layout.k,
                    {stages, cfg.kvStep, cfg.d + kRowPad}, cfg.elementType);
  Value vBufs =
      workgroupView(b, loc, raw, layout.v,
                    {stages, cfg.kvStep, cfg.dv + kRowPad}, cfg.elementType);
  Value scratch = warpScratch(layout.scratch, cfg.kvStep);

  Value warpRow0 = im.add(r0, im.mul(warp, im.c(mmaM)));
  Value sqLast = im.sub(sq, im.c(1)), skLast = im.sub(sk, im.c(1));
  // Q and dO of the warp's rows as A fragments; rows past Sq are clamped
  // (their results are never stored).
  SmallVector<SmallVector<Value>> qFrags, dOFrags;
  auto loadRows = [&](Param p, int64_t kk) {
    Value base = headBase(b, p, batch, h);
    SmallVector<Value> regs;
    for (int64_t e = 0; e < t.getNumAElements(); e += 2) {
      Value row = im.min(im.add(warpRow0, aCoords[e].row), sqLast);
      Value idx = im.add(im.add(base, im.mul(row, rowStride(p))),
                         im.add(im.c(kk * mmaK), aCoords[e].col));
      regs.push_back(loadPair(b, arg(p), idx));
    }
    return regs;
  };
  for (int64_t kk = 0; kk < cfg.d / mmaK; ++kk)
    qFrags.push_back(loadRows(kQ, kk));
  for (int64_t kk = 0; kk < cfg.dv / mmaK; ++kk)
    dOFrags.push_back(loadRows(kDO, kk));
  SmallVector<Value> lse, dsum; // per C element
  Value lseBase = headBase(b, kLse, batch, h);
  for (int64_t e = 0; e < numC; ++e) {
    Value row = im.min(im.add(warpRow0, cCoords[e].row), sqLast);
    lse.push_back(
        memref::LoadOp::create(b, loc, arg(kLse), im.add(lseBase, row)));
    dsum.push_back(
        memref::LoadOp::create(b, loc, arg(kDsum), im.add(rowBase, row)));
  }
  Value kvHead = im.div(h, im.c(cfg.hq / cfg.hk));
  Value kBase = headBase(b, kK, batch, kvHead);
  Value vBase = headBase(b, kV, batch, kvHead);

  auto issue = [&](OpBuilder &ob, Value kt, Value buf) {
    IndexMath m{ob, loc};
    Value key0 = m.mul(kt, m.c(cfg.kvStep));
    SmallVector<Value> tokens;
    emitCopyRows(ob, loc, t, arg(kK), kBase, rowStride(kK), cfg.d, cfg.kvStep,
                 key0, skLast, kBufs, buf, tid, threads, tokens);
    emitCopyRows(ob, loc, t, arg(kV), vBase, rowStride(kV), cfg.dv, cfg.kvStep,
                 key0, skLast, vBufs, buf, tid, threads, tokens);
    llvm::erase(tokens, Value());
    return t.emitAsyncCommit(ob, loc, tokens);
  };
  auto body = [&](OpBuilder &ob, Value kt, Value buf,
                  ValueRange carried) -> SmallVector<Value> {
    IndexMath m{ob, loc};
    Value kTile = selectBuffer(ob, loc, kBufs, buf);
    Value vTile = selectBuffer(ob, loc, vBufs, buf);
    SmallVector<CTiles> accs = unpack(carried, {cfg.d});
    CTiles &acc = accs[0];
    CTiles s = productBT(ob, qFrags, kTile, cfg.kvStep, cfg.d);
    CTiles dp = productBT(ob, dOFrags, vTile, cfg.kvStep, cfg.dv);
    Value k0 = m.mul(kt, m.c(cfg.kvStep));
    Value k1 = m.add(k0, m.c(cfg.kvStep));
    Value full = emitKvTileIsFull(ob, loc, cfg.mask, r0, r1, k0, k1, sq, sk);
    full = arith::AndIOp::create(ob, loc, full, m.le(k1, sk));
    probsAndDs(
        ob, s, dp, [&](int64_t, int64_t e) { return lse[e]; },
        [&](int64_t, int64_t e) { return dsum[e]; }, full,
        [&](OpBuilder &eb, int64_t j, int64_t e) {
          IndexMath em{eb, loc};
          Value row = em.add(warpRow0, cCoords[e].row);
          Value col = em.add(k0, em.add(em.c(j * mmaN), cCoords[e].col));
          Value vis = emitVisible(eb, loc, cfg.mask, row, col, sq, sk);
          return arith::AndIOp::create(eb, loc, vis, em.lt(col, sk))
              .getResult();
        });
    if (scratch)
      spill(ob, dp, scratch);
    SmallVector<SmallVector<Value>> dsA;
    for (int64_t kk = 0; kk < cfg.kvStep / mmaK; ++kk)
      dsA.push_back(aFromC(ob, dp, kk, scratch));
    accumulateAB(ob, dsA, kTile, cfg.d, acc);
    return pack(accs);
  };

  SmallVector<Value> init(cfg.d / mmaN * numC, fm.c(0.0));
  KvLoopBounds bounds =
      emitKvLoopBounds(b, loc, cfg.mask, r0, r1, sq, sk, cfg.kvStep);
  ValueRange state = init;
  scf::ForOp sinkLoop;
  if (bounds.sinkEnd) {
    sinkLoop = emitPipelinedTileLoop(b, loc, t, im.c(0), bounds.sinkEnd, init,
                                     issue, body);
    sinkLoop->setAttr("fmha.kv_loop", b.getStringAttr("sink"));
    state = sinkLoop.getResults();
  }
  scf::ForOp window = emitPipelinedTileLoop(b, loc, t, bounds.begin, bounds.end,
                                            state, issue, body);
  window->setAttr("fmha.kv_loop", b.getStringAttr("window"));
  storeRows(b, unpack(window.getResults(), {cfg.d})[0], arg(kDQ), dqBase,
            warpRow0, sq, rowStride(kDQ));
}

/// Checks what the kernels support; returns a message naming what is not.
std::string checkSupported(AttentionBwdOp op, const GpuTarget &t,
                           StringRef chip, const BwdConfig &c, int64_t blockM,
                           int64_t blockN, int64_t warpRows) {
  auto name = [](Type type) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << type;
    return s;
  };
  Type elt = c.elementType;
  if (!elt.isF16() && !elt.isBF16())
    return "the " + t.getName().str() +
           " backward kernels need f16 or bf16 inputs, got " + name(elt);
  for (Value v : {op.getK(), op.getV(), op.getO(), op.getDout(), op.getDq(),
                  op.getDk(), op.getDv()})
    if (cast<ShapedType>(v.getType()).getElementType() != elt)
      return "the GPU backward kernels take q, k, v, o, dO, dq, dk and dv of "
             "one element type (" +
             name(elt) + ")";
  if (!cast<ShapedType>(op.getLse().getType()).getElementType().isF32())
    return "the GPU backward kernels take lse in f32";
  for (int64_t dim : {c.d, c.dv})
    if (dim != 32 && dim != 64 && dim != 128)
      return "head dims D=" + std::to_string(c.d) +
             ", Dv=" + std::to_string(c.dv) +
             " are not supported by the GPU backward kernels (supported: 32, "
             "64, 128)";
  if (std::max(c.d, c.dv) > t.getMaxHeadDim())
    return "head dims D=" + std::to_string(c.d) +
           ", Dv=" + std::to_string(c.dv) +
           " do not fit the registers of a lane on " + chip.str() +
           " (at most " + std::to_string(t.getMaxHeadDim()) + ")";
  const int64_t mmaM = t.getMmaM(), mmaN = t.getMmaN(), mmaK = t.getMmaK();
  // Fragments are read two k-steps (two N columns) at a time, over D and Dv
  // both as reduction and as output columns.
  const int64_t unit = std::max(2 * mmaK, 2 * mmaN);
  if (c.d % unit != 0 || c.dv % unit != 0)
    return "head dims D=" + std::to_string(c.d) +
           ", Dv=" + std::to_string(c.dv) + " are not supported with the " +
           std::to_string(mmaM) + "x" + std::to_string(mmaN) + "x" +
           std::to_string(mmaK) +
           " matrix instruction in the backward kernels (multiples of " +
           std::to_string(unit) + ")";
  if (warpRows != mmaM)
    return "the backward kernels give each warp one row block: warp-rows must "
           "be " +
           std::to_string(mmaM) + ", got " + std::to_string(warpRows);
  if (blockM != blockN || blockM % mmaM != 0 ||
      blockM / mmaM * t.getWarpSize() > 1024 || blockM % unit != 0)
    return "the backward kernels need block-m = block-n, a multiple of " +
           std::to_string(std::max(mmaM, unit)) + " with at most " +
           std::to_string(1024 / t.getWarpSize()) + " warps of " +
           std::to_string(mmaM) +
           " rows; got block-m=" + std::to_string(blockM) +
           " block-n=" + std::to_string(blockN);
  const int64_t bytes = sharedBytes(t, c);
  if (bytes > t.getMaxSharedBytes(chip))
    return "D=" + std::to_string(c.d) + ", Dv=" + std::to_string(c.dv) +
           " with block-m=" + std::to_string(blockM) + " needs " +
           std::to_string(bytes) +
           " bytes of workgroup memory in the "
           "backward kernels, over the " +
           std::to_string(t.getMaxSharedBytes(chip)) + " bytes of " +
           chip.str();
  if (!isa<MemRefType>(op.getQ().getType()))
    return "the GPU lowering takes fmha.attention_bwd on memrefs (bufferize "
           "first)";
  const char *names[] = {"q", "k", "v", "o", "lse", "dO", "dq", "dk", "dv"};
  for (OpOperand &v : op->getOpOperands())
    if (!hasContiguousRows(cast<MemRefType>(v.get().getType())))
      return std::string(names[std::min<unsigned>(v.getOperandNumber(), 8)]) +
             " needs a contiguous last axis (stride 1), got " +
             name(v.get().getType());
  return {};
}

} // namespace

LogicalResult mlir::fmha::lowerAttentionBwdToGpu(AttentionBwdOp op,
                                                 const GpuTarget &target,
                                                 StringRef chip,
                                                 StringRef kernelName,
                                                 int64_t blockM, int64_t blockN,
                                                 int64_t warpRows, bool wgmma) {
  auto qType = cast<ShapedType>(op.getQ().getType());
  auto kType = cast<ShapedType>(op.getK().getType());
  auto vType = cast<ShapedType>(op.getV().getType());
  BwdConfig cfg;
  cfg.elementType = qType.getElementType();
  cfg.hq = qType.getDimSize(1);
  cfg.hk = kType.getDimSize(1);
  cfg.d = qType.getDimSize(3);
  cfg.dv = vType.getDimSize(3);
  cfg.blockRows = blockM;
  cfg.warps = std::max<int64_t>(1, blockM / target.getMmaM());
  // Inner tiles, at least what one pair of fragment loads covers: dkdv
  // holds dK, dV, S^T and dP^T in registers, so 32 q rows per step (64
  // spills at D = 64 on sm_90a); dq holds Q, dO and dQ, so 64 keys per step
  // up to D = 64 and 32 at D = 128.
  const int64_t unit =
      std::max({2 * target.getMmaK(), 2 * target.getMmaN(), target.getMmaM()});
  cfg.qStep = std::max<int64_t>(32, unit);
  cfg.kvStep = std::max<int64_t>(std::max(cfg.d, cfg.dv) > 64 ? 32 : 64, unit);
  cfg.deterministic = op.getDeterministic();
  cfg.mask = op.getMaskSpec();
  cfg.scale = op.getScaleOrDefault();
  if (std::optional<APFloat> cap = op.getSoftcap())
    cfg.softcap = cap->convertToDouble();
  if (wgmma) {
    std::string error = target.checkWarpgroupMma(chip);
    if (error.empty() && (cfg.d != cfg.dv || (cfg.d != 64 && cfg.d != 128)))
      error = "mma=wgmma supports head dims D = Dv in {64, 128} in the "
              "backward kernels, got D=" +
              std::to_string(cfg.d) + ", Dv=" + std::to_string(cfg.dv);
    if (error.empty() && (blockM != 2 * kWarpgroupRows || blockN != blockM ||
                          warpRows != target.getMmaM()))
      error = "mma=wgmma in the backward kernels needs block-m = block-n = " +
              std::to_string(2 * kWarpgroupRows) +
              " (two warpgroups of 64 kv rows) and warp-rows = " +
              std::to_string(target.getMmaM()) +
              "; got block-m=" + std::to_string(blockM) +
              " block-n=" + std::to_string(blockN) +
              " warp-rows=" + std::to_string(warpRows);
    if (!error.empty())
      return op.emitOpError() << error;
    cfg.wgmma = true;
    cfg.qStep = kWarpgroupRows;
  } else if (blockM == blockN && blockM % target.getMmaM() == 0 &&
             warpRows == target.getMmaM()) {
    // The split dkdv step (64 q rows against the kv tile, P and dS through
    // workgroup memory) where its warp grids exist and its workgroup memory
    // fits the chip (docs/PERFORMANCE.md, "Backward v14").
    const int64_t colUnit = 2 * target.getMmaN();
    BwdConfig split = cfg;
    split.qStep = std::max<int64_t>(64, unit);
    auto grid = [&](int64_t rows, int64_t cols) {
      return warpGrid(rows, cols, cfg.warps, target.getMmaM(), colUnit);
    };
    std::optional<WarpGrid> s = grid(split.qStep, blockM),
                            dk = grid(blockM, cfg.d), dv = grid(blockM, cfg.dv),
                            dq = grid(split.qStep, cfg.d);
    if (s && dk && dv && dq && blockM % unit == 0) {
      split.split = SplitGrids{*s, *dk, *dv, *dq};
      if (sharedBytes(target, split) <= target.getMaxSharedBytes(chip))
        cfg = split;
    }
  }
  std::string error =
      checkSupported(op, target, chip, cfg, blockM, blockN, warpRows);
  if (!error.empty())
    return op.emitOpError() << error;

  auto module = op->getParentOfType<ModuleOp>();
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  OpBuilder b(ctx);
  Type elt = cfg.elementType;
  auto flatF32 = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  Type index = b.getIndexType();
  const Value tensorOperands[] = {op.getQ(),  op.getK(),    op.getV(),
                                  op.getO(),  op.getDout(), op.getLse(),
                                  op.getDq(), op.getDk(),   op.getDv()};
  SmallVector<Type> params;
  for (Value v : tensorOperands)
    params.push_back(stridedKernelType(cast<MemRefType>(v.getType())));
  params.append({flatF32, flatF32, index, index, index});
  std::string base = kernelName.str();
  if (base.empty()) {
    auto parent = op->getParentOfType<FunctionOpInterface>();
    base = parent ? parent.getName().str() : std::string("attention_bwd");
  }
  const int64_t threads = cfg.warps * target.getWarpSize();
  auto makeKernel = [&](StringRef suffix) {
    return createKernelFunc(op, module, base + suffix.str(), "", params,
                            threads);
  };
  gpu::GPUFuncOp prep = makeKernel("_prep");
  gpu::GPUFuncOp dkdv = makeKernel("_dkdv");
  gpu::GPUFuncOp dq = makeKernel("_dq");
  for (auto [func, build] : {std::pair(prep, &BwdKernelBuilder::buildPrep),
                             std::pair(dkdv, &BwdKernelBuilder::buildDkDv),
                             std::pair(dq, &BwdKernelBuilder::buildDq)}) {
    OpBuilder kb(ctx);
    BwdKernelBuilder builder(kb, loc, target, cfg);
    (builder.*build)(func);
    kb.setInsertionPointToEnd(&func.getBody().front());
    gpu::ReturnOp::create(kb, loc);
  }

  // Host side: the workspace, flat views and the three launches.
  b.setInsertionPoint(op);
  IndexMath im{b, loc};
  Value batch = im.dim(op.getQ(), 0), sq = im.dim(op.getQ(), 2),
        sk = im.dim(op.getK(), 2);
  Value rows = im.mul(im.mul(batch, im.c(cfg.hq)), sq);
  // Named for the launch manifest, where they become the runtime's
  // workspaces.
  auto dsum = memref::AllocOp::create(b, loc, flatF32, ValueRange{rows});
  dsum->setAttr("fmha.workspace", b.getStringAttr("dsum"));
  // Deterministic: no accumulator, an empty buffer of static size (which no
  // canonicalization rebuilds, so that its name stays).
  auto dqacc =
      cfg.deterministic
          ? memref::AllocOp::create(
                b, loc, MemRefType::get({0}, b.getF32Type()), ValueRange{})
          : memref::AllocOp::create(b, loc, flatF32,
                                    ValueRange{im.mul(rows, im.c(cfg.d))});
  dqacc->setAttr("fmha.workspace", b.getStringAttr("dqacc"));
  Value dqaccFlat = dqacc;
  if (cfg.deterministic)
    dqaccFlat = memref::CastOp::create(b, loc, flatF32, dqacc);
  SmallVector<Value> operands;
  for (Value v : tensorOperands)
    operands.push_back(castToKernelType(b, loc, v));
  operands.append({dsum, dqaccFlat, batch, sq, sk});
  // Rows of every tensor but lse move in 16-byte copies or pairs.
  SmallVector<int64_t> align(kNumParams, 0);
  for (int p : {kQ, kK, kV, kO, kDO, kDQ, kDK, kDV})
    align[p] = 16;
  Value shared = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                              sharedBytes(target, cfg));
  gpu::KernelDim3 block{im.c(threads), im.c(1), im.c(1)};
  gpu::KernelDim3 qGrid{im.ceilDiv(sq, im.c(blockM)), im.c(cfg.hq), batch};
  gpu::KernelDim3 kvGrid{im.ceilDiv(sk, im.c(blockN)), im.c(cfg.hk), batch};
  for (auto [kernel, grid] :
       {std::pair(prep, qGrid), std::pair(dkdv, kvGrid), std::pair(dq, qGrid)})
    gpu::LaunchFuncOp::create(b, loc, kernel, grid, block, shared, operands)
        ->setAttr(kOperandAlignAttrName, b.getDenseI64ArrayAttr(align));
  memref::DeallocOp::create(b, loc, dsum);
  memref::DeallocOp::create(b, loc, dqacc);
  op.erase();
  return success();
}

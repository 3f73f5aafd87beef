//===- ROCDLTarget.cpp - AMD matrix-core fragments and lane exchanges -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// v_mfma_f32_16x16x16_{f16,bf16} (gfx90a: `16x16x16f16`/`16x16x16bf16_1k`,
// gfx942 and gfx950: `16x16x16_f16`/`_bf16`), wave64. Layouts as AMD's
// matrix instruction calculator prints them (test/unit checks them against
// its tables); with q = lane / 16, r = lane % 16:
//   A (16x16, M x K): element e = 0..3 holds A[r][4q + e]
//   B (16x16, K x N): element e holds B[4q + e][r]
//   C (16x16):        element e holds C[4q + e][r]
// CDNA4 (gfx950) keeps the CDNA3 16x16x16 instructions with these layouts
// (AMD CDNA4 ISA, "Matrix fused multiply add" table); the calculator does not
// cover CDNA4, so gfx950 reuses the CDNA3 tables.
//
// A lane's four C elements lie in four rows, shared with the 16 lanes of its
// quarter-wave; a row of P (C layout) is not an A fragment in the same lane,
// so the kernel passes P through workgroup memory (getAFromC is empty).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fmha;

namespace {

class ROCDLTarget : public GpuTarget {
public:
  StringRef getName() const override { return "rocdl"; }
  int64_t getWarpSize() const override { return 64; }
  int64_t getMmaM() const override { return 16; }
  int64_t getMmaN() const override { return 16; }
  int64_t getMmaK() const override { return 16; }
  int64_t getNumAElements() const override { return 4; }
  int64_t getNumBElements() const override { return 4; }
  int64_t getNumCElements() const override { return 4; }

  FragmentCoord getACoord(OpBuilder &b, Location loc, Value lane,
                          int64_t e) const override {
    IndexMath im{b, loc};
    return {im.rem(lane, im.c(16)),
            im.add(im.mul(im.div(lane, im.c(16)), im.c(4)), im.c(e))};
  }
  FragmentCoord getBCoord(OpBuilder &b, Location loc, Value lane,
                          int64_t e) const override {
    IndexMath im{b, loc};
    return {im.add(im.mul(im.div(lane, im.c(16)), im.c(4)), im.c(e)),
            im.rem(lane, im.c(16))};
  }
  FragmentCoord getCCoord(OpBuilder &b, Location loc, Value lane,
                          int64_t e) const override {
    IndexMath im{b, loc};
    return {im.add(im.mul(im.div(lane, im.c(16)), im.c(4)), im.c(e)),
            im.rem(lane, im.c(16))};
  }
  bool pairsAreAdjacent() const override { return true; }
  int64_t getNumCRowSlots() const override { return 4; }
  int64_t getCRowSlot(int64_t e) const override { return e; }
  SmallVector<int64_t> getRowReduceXorMasks() const override {
    return {1, 2, 4, 8};
  }
  std::optional<std::pair<int64_t, int64_t>> getAFromC(int64_t) const override {
    return std::nullopt;
  }

  SmallVector<Value> emitMma(OpBuilder &b, Location loc, Type elementType,
                             ArrayRef<Value> aRegs, ArrayRef<Value> bRegs,
                             ArrayRef<Value> c) const override {
    auto quad = VectorType::get({4}, elementType);
    auto join = [&](ArrayRef<Value> pairs) -> Value {
      SmallVector<Value> elems;
      for (Value pair : pairs)
        for (int64_t i = 0; i < 2; ++i)
          elems.push_back(vector::ExtractOp::create(b, loc, pair, i));
      return vector::FromElementsOp::create(b, loc, quad, elems);
    };
    auto accType = VectorType::get({4}, b.getF32Type());
    Value acc = vector::FromElementsOp::create(b, loc, accType, c);
    Value d = amdgpu::MFMAOp::create(b, loc, accType, 16, 16, 16, 1,
                                     join(aRegs), join(bRegs), acc);
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(vector::ExtractOp::create(b, loc, d, i));
    return out;
  }

  /// Splits a vector<4xT> into two vector<2xT> registers.
  SmallVector<Value> split(OpBuilder &b, Location loc, Value quad) const {
    SmallVector<Value> regs;
    for (int64_t i = 0; i < 4; i += 2)
      regs.push_back(vector::ExtractStridedSliceOp::create(
          b, loc, quad, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{2},
          ArrayRef<int64_t>{1}));
    return regs;
  }

  SmallVector<SmallVector<Value>>
  emitLoadKFragments(OpBuilder &b, Location loc, Value tile, Value lane,
                     Value key0, Value col0) const override {
    // B[k][n] = K[key0 + n][col0 + k]: lane (q, r) reads the four adjacent
    // head-dim elements 4q .. 4q + 3 of key r.
    IndexMath im{b, loc};
    Type elt = cast<MemRefType>(tile.getType()).getElementType();
    auto quad = VectorType::get({4}, elt);
    Value row = im.add(key0, im.rem(lane, im.c(16)));
    Value col = im.add(col0, im.mul(im.div(lane, im.c(16)), im.c(4)));
    SmallVector<SmallVector<Value>> frags;
    for (int64_t step = 0; step < 2; ++step) {
      Value v = vector::LoadOp::create(
          b, loc, quad, tile, ValueRange{row, im.add(col, im.c(16 * step))},
          /*nontemporal=*/false, llvm::MaybeAlign(8));
      frags.push_back(split(b, loc, v));
    }
    return frags;
  }

  SmallVector<SmallVector<Value>>
  emitLoadVFragments(OpBuilder &b, Location loc, Value tile, Value lane,
                     Value key0, Value col0) const override {
    // B[k][n] = V[key0 + k][col0 + n]: lane (q, r) reads column r of keys
    // 4q .. 4q + 3, one element per key.
    IndexMath im{b, loc};
    Type elt = cast<MemRefType>(tile.getType()).getElementType();
    auto quad = VectorType::get({4}, elt);
    Value key = im.add(key0, im.mul(im.div(lane, im.c(16)), im.c(4)));
    Value colBase = im.add(col0, im.rem(lane, im.c(16)));
    SmallVector<SmallVector<Value>> frags;
    for (int64_t block = 0; block < 2; ++block) {
      Value col = im.add(colBase, im.c(16 * block));
      SmallVector<Value> elems;
      for (int64_t e = 0; e < 4; ++e)
        elems.push_back(memref::LoadOp::create(
            b, loc, tile, ValueRange{im.add(key, im.c(e)), col}));
      frags.push_back(
          split(b, loc, vector::FromElementsOp::create(b, loc, quad, elems)));
    }
    return frags;
  }

  void emitBarrier(OpBuilder &b, Location loc) const override {
    gpu::BarrierOp::create(b, loc);
  }

  // No asynchronous global-to-LDS copy here: 16-byte loads and stores.
  Value emitAsyncCopy16(OpBuilder &b, Location loc, Value src,
                        ValueRange srcIndices, Value dst,
                        ValueRange dstIndices) const override {
    Type elt = cast<MemRefType>(src.getType()).getElementType();
    auto chunk = VectorType::get({16 / (elt.getIntOrFloatBitWidth() / 8)}, elt);
    Value data =
        vector::LoadOp::create(b, loc, chunk, src, srcIndices,
                               /*nontemporal=*/false, llvm::MaybeAlign(16));
    vector::StoreOp::create(b, loc, data, dst, dstIndices,
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
    return Value();
  }
  Value emitAsyncCommit(OpBuilder &, Location, ArrayRef<Value>) const override {
    return Value();
  }
  void emitAsyncWait(OpBuilder &, Location, Value, int64_t) const override {}

  Value emitShuffleXor(OpBuilder &b, Location loc, Value value,
                       int64_t mask) const override {
    return gpu::ShuffleOp::create(b, loc, value, mask, /*width=*/64,
                                  gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }

  int64_t getNumCopyStages() const override { return 1; }
  int64_t getMaxSharedBytes(StringRef chip) const override {
    // LDS per workgroup: 64 KB on CDNA2/3, 160 KB on CDNA4.
    return chip == "gfx950" ? 160 * 1024 : 64 * 1024;
  }

  std::string checkChip(StringRef chip) const override {
    if (chip == "gfx90a" || chip == "gfx940" || chip == "gfx941" ||
        chip == "gfx942" || chip == "gfx950")
      return {};
    if (chip.starts_with("gfx11") || chip.starts_with("gfx12"))
      return "chip '" + chip.str() +
             "' (RDNA, wave32 WMMA) is not supported by the rocdl kernel yet "
             "(supported: gfx90a, gfx940, gfx941, gfx942, gfx950)";
    return "unknown or unsupported AMD chip '" + chip.str() +
           "' (supported: gfx90a, gfx940, gfx941, gfx942, gfx950)";
  }
};

} // namespace

std::unique_ptr<GpuTarget> mlir::fmha::createROCDLTarget() {
  return std::make_unique<ROCDLTarget>();
}

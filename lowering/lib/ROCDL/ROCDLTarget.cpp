//===- ROCDLTarget.cpp - AMD matrix-core fragments and lane exchanges -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Four matrix instructions, chosen by chip and the `mfma` option: MFMA
// 16x16x16 (CDNA, wave64; gfx90a `v_mfma_f32_16x16x16f16`/`bf16_1k`, gfx94x
// and gfx950 `v_mfma_f32_16x16x16_f16`/`_bf16`), the default; MFMA 32x32x8
// (CDNA, wave64, mfma=32); WMMA 16x16x16 on RDNA3 (gfx1100/1101/1102, wave32;
// lanes l and l + 16 hold the same row of A) and on RDNA4 (gfx1200/1201,
// wave32). Their fragment layouts, as AMD's matrix instruction calculator
// prints them, are data in support/MmaInstruction.h (test/layouts checks
// them against its tables).
//
// CDNA4 (gfx950) keeps the CDNA3 16x16x16 and 32x32x8 instructions with these
// layouts (AMD CDNA4 ISA, "Matrix fused multiply add" table); the calculator
// does not cover CDNA4, so gfx950 reuses the CDNA3 tables.
//
// No C fragment here is an A fragment of the same lane, so the kernel passes
// P through workgroup memory (getAFromC is empty).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Target/FmhaToLLVMIRTranslation.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fmha;

namespace {

constexpr const char *kSupportedChips =
    "gfx90a, gfx942, gfx950 (MFMA, wave64); gfx1100, gfx1101, "
    "gfx1102 (RDNA3 WMMA, wave32); gfx1200, gfx1201 (RDNA4 WMMA, wave32)";

class ROCDLTarget : public GpuTarget {
public:
  enum class Shape { Mfma16, Mfma32, WmmaRdna3, WmmaRdna4 };

  StringRef getName() const override { return "rocdl"; }
  const ::fmha::MmaInstruction &getMma() const override { return mma; }

  // RDNA3 WMMA holds Q twice over (16 VGPRs per 16 head-dim columns): at
  // D = 128 the kernel needs more than the 256 VGPRs of a wave32 lane and
  // spills to scratch (masked tiles, sinks), so it stops at 64.
  int64_t getMaxHeadDim() const override {
    return shape == Shape::WmmaRdna3 ? 64 : 128;
  }

  /// The column of B (row of A) a lane holds, and the k of its element e.
  Value line(OpBuilder &b, Location loc, Value lane) const {
    return emitLayoutAxis(b, loc, mma.b, lane, 0, /*row=*/false);
  }
  Value kIndex(OpBuilder &b, Location loc, Value lane, int64_t e) const {
    return emitLayoutAxis(b, loc, mma.b, lane, e, /*row=*/true);
  }
  /// Consecutive elements of a fragment that are consecutive k (one load).
  int64_t kRun() const { return shape == Shape::WmmaRdna3 ? 16 : 4; }

  SmallVector<Value> emitMma(OpBuilder &b, Location loc, Type elementType,
                             ArrayRef<Value> aRegs, ArrayRef<Value> bRegs,
                             ArrayRef<Value> c) const override {
    auto operand = VectorType::get({getNumAElements()}, elementType);
    auto join = [&](ArrayRef<Value> pairs) -> Value {
      SmallVector<Value> elems;
      for (Value pair : pairs)
        for (int64_t i = 0; i < 2; ++i)
          elems.push_back(vector::ExtractOp::create(b, loc, pair, i));
      return vector::FromElementsOp::create(b, loc, operand, elems);
    };
    const int64_t numC = getNumCElements();
    auto accType = VectorType::get({numC}, b.getF32Type());
    Value acc = vector::FromElementsOp::create(b, loc, accType, c);
    Value d = isWmma() ? amdgpu::WMMAOp::create(b, loc, accType, 16, 16, 16,
                                                join(aRegs), join(bRegs), acc)
                             .getResult()
                       : amdgpu::MFMAOp::create(b, loc, accType, getMmaM(),
                                                getMmaN(), getMmaK(), 1,
                                                join(aRegs), join(bRegs), acc)
                             .getResult();
    SmallVector<Value> out;
    for (int64_t i = 0; i < numC; ++i)
      out.push_back(vector::ExtractOp::create(b, loc, d, i));
    return out;
  }

  /// Splits a vector of 16-bit elements into vector<2xT> registers.
  SmallVector<Value> split(OpBuilder &b, Location loc, Value v) const {
    SmallVector<Value> regs;
    int64_t n = cast<VectorType>(v.getType()).getNumElements();
    for (int64_t i = 0; i < n; i += 2)
      regs.push_back(vector::ExtractStridedSliceOp::create(
          b, loc, v, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{2},
          ArrayRef<int64_t>{1}));
    return regs;
  }

  SmallVector<SmallVector<Value>>
  emitLoadKFragments(OpBuilder &b, Location loc, Value tile, Value lane,
                     Value key0, Value col0) const override {
    // B[k][n] = K[key0 + n][col0 + k]: a lane reads, from its key l % N, runs
    // of kRun() adjacent head-dim elements.
    IndexMath im{b, loc};
    Type elt = cast<MemRefType>(tile.getType()).getElementType();
    const int64_t run = kRun();
    auto runType = VectorType::get({run}, elt);
    Value row = im.add(key0, line(b, loc, lane));
    SmallVector<SmallVector<Value>> frags;
    for (int64_t step = 0; step < 2; ++step) {
      SmallVector<Value> regs;
      for (int64_t e = 0; e < getNumBElements(); e += run) {
        Value col = im.add(im.add(col0, kIndex(b, loc, lane, e)),
                           im.c(getMmaK() * step));
        Value v = vector::LoadOp::create(
            b, loc, runType, tile, ValueRange{row, col},
            /*nontemporal=*/false,
            llvm::MaybeAlign(std::min<int64_t>(2 * run, 16)));
        llvm::append_range(regs, split(b, loc, v));
      }
      frags.push_back(regs);
    }
    return frags;
  }

  SmallVector<SmallVector<Value>>
  emitLoadVFragments(OpBuilder &b, Location loc, Value tile, Value lane,
                     Value key0, Value col0) const override {
    // B[k][n] = V[key0 + k][col0 + n]: a lane reads column l % N of its keys,
    // one element per key.
    IndexMath im{b, loc};
    Type elt = cast<MemRefType>(tile.getType()).getElementType();
    auto fragType = VectorType::get({getNumBElements()}, elt);
    Value colBase = im.add(col0, line(b, loc, lane));
    SmallVector<SmallVector<Value>> frags;
    for (int64_t block = 0; block < 2; ++block) {
      Value col = im.add(colBase, im.c(getMmaN() * block));
      SmallVector<Value> elems;
      for (int64_t e = 0; e < getNumBElements(); ++e)
        elems.push_back(memref::LoadOp::create(
            b, loc, tile,
            ValueRange{im.add(key0, kIndex(b, loc, lane, e)), col}));
      frags.push_back(split(
          b, loc, vector::FromElementsOp::create(b, loc, fragType, elems)));
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
    return gpu::ShuffleOp::create(b, loc, value, mask,
                                  /*width=*/getWarpSize(),
                                  gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }

  /// An llvm.atomicrmw that says what the workspace is (fmha.amdgpu_*
  /// attributes, FmhaToLLVMIRTranslation.h): coarse-grained memory of this
  /// device (ABI gpu-bwd-v1, Bundle.h). That lets the AMDGPU backend select
  /// global_atomic_add_f32 instead of a compare-and-swap loop, which
  /// memref.atomic_rmw's lowering cannot (it drops the attributes).
  /// Monotonic: the adds need atomicity only. gfx90a's f32 add flushes
  /// denormal addends; the accumulator is rounded to the element type, where
  /// an f32 denormal is zero (f16) or a bf16 denormal at most.
  void emitWorkspaceAtomicAdd(OpBuilder &b, Location loc, Value value,
                              Value memref, ValueRange indices) const override {
    auto type = cast<MemRefType>(memref.getType());
    if (type.getMemorySpace()) {
      GpuTarget::emitWorkspaceAtomicAdd(b, loc, value, memref, indices);
      return;
    }
    if (type.getRank() != 1 || !type.getLayout().isIdentity()) {
      // A tile of the workspace (the staged backward's strided views): the
      // element's global pointer from the buffer's aligned pointer, its
      // offset and strides.
      emitAmdgpuAtomicAdd(
          b, loc,
          emitGlobalElementPointer(b, loc, memref, indices, getIndexBitwidth()),
          value);
      return;
    }
    Value idx = indices.front();
    // The buffer's aligned pointer, element idx.
    Value base = emitAlignedPointer(b, loc, memref, getIndexBitwidth());
    Value offset = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
    Value ptr =
        LLVM::GEPOp::create(b, loc, base.getType(), type.getElementType(), base,
                            ValueRange{offset}, LLVM::GEPNoWrapFlags::inbounds);
    emitAmdgpuAtomicAdd(b, loc, ptr, value);
  }

  static void emitAmdgpuAtomicAdd(OpBuilder &b, Location loc, Value ptr,
                                  Value value) {
    auto add =
        LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::fadd, ptr, value,
                                  LLVM::AtomicOrdering::monotonic);
    for (StringRef name :
         {kAmdgpuNoFineGrainedMemoryAttrName, kAmdgpuNoRemoteMemoryAttrName,
          kAmdgpuIgnoreDenormalModeAttrName})
      add->setAttr(name, b.getUnitAttr());
  }

  int64_t getNumCopyStages() const override { return 1; }
  int64_t getMaxSharedBytes(StringRef chip) const override {
    // LDS per workgroup: 64 KB on CDNA2/3 and RDNA3/4, 160 KB on CDNA4.
    return chip == "gfx950" ? 160 * 1024 : 64 * 1024;
  }

  static bool isCdna(StringRef chip) {
    return chip == "gfx90a" || chip == "gfx942" || chip == "gfx950";
  }
  static bool isRdna3(StringRef chip) {
    return chip == "gfx1100" || chip == "gfx1101" || chip == "gfx1102";
  }
  static bool isRdna4(StringRef chip) {
    return chip == "gfx1200" || chip == "gfx1201";
  }

  std::string checkChip(StringRef chip) const override {
    if (isCdna(chip) || isRdna3(chip) || isRdna4(chip))
      return {};
    // LLVM folded these MI300 names into gfx942; LLVM 22's AMDGPU backend
    // no longer knows them and aborts instruction selection for them.
    if (chip == "gfx940" || chip == "gfx941")
      return "AMD chip '" + chip.str() +
             "' is compiled as gfx942 (LLVM 22 no longer has the name): use "
             "--chip=gfx942";
    return "unknown or unsupported AMD chip '" + chip.str() +
           "' (supported: " + kSupportedChips + ")";
  }

  std::string configure(StringRef chip, int64_t matrixSize) override {
    std::string error = checkChip(chip);
    if (!error.empty())
      return error;
    if (isCdna(chip)) {
      if (matrixSize != 0 && matrixSize != 16 && matrixSize != 32)
        return "mfma=" + std::to_string(matrixSize) + " on " + chip.str() +
               ": expected 16 (v_mfma_f32_16x16x16) or 32 "
               "(v_mfma_f32_32x32x8)";
      shape = matrixSize == 32 ? Shape::Mfma32 : Shape::Mfma16;
      mma = matrixSize == 32 ? ::fmha::MmaInstruction::amdMfma32x32x8()
                             : ::fmha::MmaInstruction::amdMfma16x16x16();
      return {};
    }
    if (matrixSize != 0 && matrixSize != 16)
      return "mfma=" + std::to_string(matrixSize) + " on " + chip.str() +
             ": RDNA chips have only the WMMA 16x16x16 instructions (mfma=16)";
    shape = isRdna3(chip) ? Shape::WmmaRdna3 : Shape::WmmaRdna4;
    mma = isRdna3(chip) ? ::fmha::MmaInstruction::amdWmmaRdna3()
                        : ::fmha::MmaInstruction::amdWmmaRdna4();
    return {};
  }

private:
  bool isWmma() const {
    return shape == Shape::WmmaRdna3 || shape == Shape::WmmaRdna4;
  }

  Shape shape = Shape::Mfma16;
  ::fmha::MmaInstruction mma = ::fmha::MmaInstruction::amdMfma16x16x16();
};

} // namespace

std::unique_ptr<GpuTarget> mlir::fmha::createROCDLTarget() {
  return std::make_unique<ROCDLTarget>();
}

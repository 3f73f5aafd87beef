//===- NVVMTarget.cpp - NVIDIA tensor-core fragments and shuffles ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// mma.sync.aligned.m16n8k16.row.col (f16/bf16 -> f32); its fragment layouts
// (PTX ISA, "Matrix Fragments for mma.m16n8k16") are data in
// support/MmaInstruction.h. C fragments of two adjacent n8 tiles are, lane by
// lane, the A fragment of k16 (getAFromC): P stays in registers.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fmha;

namespace {

class NVVMTarget : public GpuTarget {
  const ::fmha::MmaInstruction mma =
      ::fmha::MmaInstruction::nvidiaMmaSyncM16N8K16();

public:
  StringRef getName() const override { return "nvvm"; }
  const ::fmha::MmaInstruction &getMma() const override { return mma; }

  SmallVector<Value> emitMma(OpBuilder &b, Location loc, Type elementType,
                             ArrayRef<Value> aRegs, ArrayRef<Value> bRegs,
                             ArrayRef<Value> c) const override {
    bool isBF16 = elementType.isBF16();
    Type i32 = b.getI32Type();
    // mma.sync takes bf16 pairs as i32 and f16 pairs as vector<2xf16>.
    auto operands = [&](ArrayRef<Value> regs) {
      SmallVector<Value> out;
      for (Value reg : regs)
        out.push_back(isBF16 ? LLVM::BitcastOp::create(b, loc, i32, reg) : reg);
      return out;
    };
    Type f32 = b.getF32Type();
    auto resultType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(4, f32));
    NVVM::MMATypes ptxType =
        isBF16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    auto mma = NVVM::MmaOp::create(
        b, loc, resultType, operands(aRegs), operands(bRegs), c,
        ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, loc, mma, i));
    return d;
  }

  /// ldmatrix.x4: lanes 8m .. 8m + 7 address the rows of 8x8 matrix m; lane l
  /// receives, of each matrix, row l / 4, columns 2 (l % 4) and + 1 (or, with
  /// .trans, column l / 4 of rows 2 (l % 4) and + 1).
  SmallVector<Value> ldmatrixX4(OpBuilder &b, Location loc, Value tile,
                                Value row, Value col, bool transpose) const {
    auto tileType = cast<MemRefType>(tile.getType());
    Type elt = tileType.getElementType();
    auto resultType = VectorType::get({4, 2}, elt);
    Value regs = nvgpu::LdMatrixOp::create(b, loc, resultType, tile,
                                           ValueRange{row, col}, transpose,
                                           /*numTiles=*/4);
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(vector::ExtractOp::create(b, loc, regs, i));
    return out;
  }

  /// ldmatrix of 16-bit elements: lane l receives row l / 4, columns
  /// 2 (l % 4) and + 1 of each matrix; with .trans, column l / 4 of rows
  /// 2 (l % 4) and + 1.
  SmallVector<MatrixLoad> getMatrixLoads() const override {
    using ::fmha::colRun;
    using ::fmha::concat;
    using ::fmha::LinearLayout;
    using ::fmha::rowRun;
    return {{LinearLayout(8, 8, colRun(1), concat(colRun(2, 2), rowRun(3))),
             /*transpose=*/false},
            {LinearLayout(8, 8, rowRun(1), concat(rowRun(2, 2), colRun(3))),
             /*transpose=*/true}};
  }
  int64_t getMaxMatricesPerLoad() const override { return 4; }
  SmallVector<Value> emitMatrixLoad(OpBuilder &b, Location loc, Value memref,
                                    ValueRange indices, int64_t count,
                                    bool transpose) const override {
    Type elt = cast<MemRefType>(memref.getType()).getElementType();
    Value regs =
        nvgpu::LdMatrixOp::create(b, loc, VectorType::get({count, 2}, elt),
                                  memref, indices, transpose, count);
    SmallVector<Value> out;
    for (int64_t i = 0; i < count; ++i)
      out.push_back(vector::ExtractOp::create(b, loc, regs, i));
    return out;
  }

  SmallVector<SmallVector<Value>>
  emitLoadKFragments(OpBuilder &b, Location loc, Value tile, Value lane,
                     Value key0, Value col0) const override {
    // Matrix m = lane / 8 covers keys [key0, key0 + 8) and columns
    // [col0 + 8 m, col0 + 8 m + 8): registers (0, 1) are the B fragment of
    // k-step col0, (2, 3) of k-step col0 + 16.
    IndexMath im{b, loc};
    Value row = im.add(key0, im.rem(lane, im.c(8)));
    Value col = im.add(col0, im.mul(im.div(lane, im.c(8)), im.c(8)));
    SmallVector<Value> r = ldmatrixX4(b, loc, tile, row, col, false);
    return {{r[0], r[1]}, {r[2], r[3]}};
  }

  SmallVector<Value> emitLoadAFragment(OpBuilder &b, Location loc, Value tile,
                                       Value lane, Value row0,
                                       Value col0) const override {
    // Matrix m = lane / 8: rows [row0 + 8 (m % 2), + 8), columns col0 +
    // 8 (m / 2): registers a0..a3 of m16n8k16 in order.
    IndexMath im{b, loc};
    Value row = im.add(row0, im.rem(lane, im.c(16)));
    Value col = im.add(col0, im.mul(im.div(lane, im.c(16)), im.c(8)));
    return ldmatrixX4(b, loc, tile, row, col, false);
  }

  SmallVector<Value> emitLoadATransposedFragment(OpBuilder &b, Location loc,
                                                 Value tile, Value lane,
                                                 Value row0,
                                                 Value col0) const override {
    // Transposed: register m = lane / 8 holds A rows [row0 + 8 (m % 2), + 8)
    // and columns [col0 + 8 (m / 2), + 8), which the tile stores as its rows
    // col0 + 8 (m / 2) + i, columns from row0 + 8 (m % 2).
    IndexMath im{b, loc};
    Value m = im.div(lane, im.c(8));
    Value row = im.add(im.add(col0, im.mul(im.div(m, im.c(2)), im.c(8))),
                       im.rem(lane, im.c(8)));
    Value col = im.add(row0, im.mul(im.rem(m, im.c(2)), im.c(8)));
    return ldmatrixX4(b, loc, tile, row, col, true);
  }

  SmallVector<SmallVector<Value>>
  emitLoadVFragments(OpBuilder &b, Location loc, Value tile, Value lane,
                     Value key0, Value col0) const override {
    // Transposed: matrix m covers keys [key0 + 8 (m % 2), + 8) and value
    // columns [col0 + 8 (m / 2), + 8); registers (0, 1) are the B fragment of
    // columns col0, (2, 3) of col0 + 8.
    IndexMath im{b, loc};
    Value m = im.div(lane, im.c(8));
    Value row = im.add(im.add(key0, im.mul(im.rem(m, im.c(2)), im.c(8))),
                       im.rem(lane, im.c(8)));
    Value col = im.add(col0, im.mul(im.div(m, im.c(2)), im.c(8)));
    SmallVector<Value> r = ldmatrixX4(b, loc, tile, row, col, true);
    return {{r[0], r[1]}, {r[2], r[3]}};
  }

  // wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16} (sm_90a), both
  // operands from workgroup memory (PTX ISA "Asynchronous Warpgroup Level
  // Matrix Multiply-Accumulate"). Matrix descriptor: bits 0-13 address >> 4,
  // 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 49-51
  // base offset (0: the atoms are 1024-aligned), 62-63 swizzle mode (1:
  // 128-byte).
  std::string checkWarpgroupMma(StringRef chip) const override {
    if (chip != "sm_90a")
      return "mma=wgmma needs chip sm_90a (wgmma.mma_async), got '" +
             chip.str() + "'";
    return {};
  }
  Value emitWarpgroupDescriptor(OpBuilder &b, Location loc, Value address,
                                int64_t leadingBytes,
                                int64_t strideBytes) const override {
    Type i64 = b.getI64Type();
    auto c = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, i64, v).getResult();
    };
    Value start = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, address, c(4)), c(0x3fff));
    int64_t fields = ((leadingBytes >> 4) & 0x3fff) << 16 |
                     ((strideBytes >> 4) & 0x3fff) << 32 | int64_t(1) << 62;
    return arith::OrIOp::create(b, loc, start, c(fields));
  }
  SmallVector<Value> emitWarpgroupMma(OpBuilder &b, Location loc,
                                      Type elementType, int64_t n, Value descA,
                                      bool aMMajor, Value descB, bool bNMajor,
                                      ArrayRef<Value> acc) const override {
    Type f32 = b.getF32Type();
    auto structType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(n / 2, f32));
    Value in;
    if (acc.empty()) {
      in = LLVM::PoisonOp::create(b, loc, structType);
    } else {
      in = LLVM::UndefOp::create(b, loc, structType);
      for (auto [i, v] : llvm::enumerate(acc))
        in = LLVM::InsertValueOp::create(b, loc, in, v, i);
    }
    NVVM::WGMMATypes type =
        elementType.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
    auto mma = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, structType, in, descA, descB,
        NVVM::MMAShapeAttr::get(b.getContext(), 64, n, 16), type, type,
        NVVM::WGMMATypes::f32,
        acc.empty() ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
        NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
        aMMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        bNMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col,
        /*satfinite=*/NVVM::MMAIntOverflowAttr());
    SmallVector<Value> d;
    for (int64_t i = 0; i < n / 2; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, loc, mma, i));
    return d;
  }
  SmallVector<Value>
  emitWarpgroupMmaRegisterA(OpBuilder &b, Location loc, Type elementType,
                            int64_t n, ArrayRef<Value> aRegs, Value descB,
                            bool bNMajor, ArrayRef<Value> acc) const override {
    // The register-A form, wgmma.mma_async ... d, {a0..a3}, b-desc, scale-d,
    // imm-scale-a, imm-scale-b, imm-trans-b, is not an NVVM op (upstream's
    // nvvm.wgmma.mma_async takes A as a descriptor only), so it is emitted
    // as upstream lowers that op: one instruction in llvm.inline_asm. D is
    // tied to the accumulator inputs, scale-d a predicate operand (true).
    assert(static_cast<int64_t>(acc.size()) == n / 2 && aRegs.size() == 4 &&
           "m64nNk16: n / 2 accumulators, four A registers");
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    std::string type = elementType.isBF16() ? "bf16" : "f16";
    std::string asmText = "wgmma.mma_async.sync.aligned.m64n" +
                          std::to_string(n) + "k16.f32." + type + "." + type +
                          " {";
    std::string constraints;
    SmallVector<Value> operands;
    for (int64_t i = 0; i < n / 2; ++i) {
      asmText += (i ? ", $" : "$") + std::to_string(i);
      constraints += (i ? ",=f" : "=f");
    }
    int64_t next = n / 2;
    asmText += "}, {";
    for (auto [i, reg] : llvm::enumerate(aRegs)) {
      asmText += (i ? ", $" : "$") + std::to_string(next++);
      constraints += ",r";
      operands.push_back(LLVM::BitcastOp::create(b, loc, i32, reg));
    }
    asmText += "}, $" + std::to_string(next) + ", $" +
               std::to_string(next + 1) + ", 1, 1, " + (bNMajor ? "1" : "0") +
               ";";
    constraints += ",l,b";
    operands.push_back(descB);
    operands.push_back(arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
    for (int64_t i = 0; i < n / 2; ++i)
      constraints += "," + std::to_string(i);
    operands.append(acc.begin(), acc.end());
    auto structType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(n / 2, f32));
    auto mma = LLVM::InlineAsmOp::create(
        b, loc, structType, operands, asmText, constraints,
        /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::tailcallkind::TailCallKind::None,
        LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
        /*operand_attrs=*/ArrayAttr());
    SmallVector<Value> d;
    for (int64_t i = 0; i < n / 2; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, loc, mma.getResult(0), i));
    return d;
  }
  void emitWarpgroupFence(OpBuilder &b, Location loc) const override {
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
  }
  void emitWarpgroupCommit(OpBuilder &b, Location loc) const override {
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  }
  SmallVector<Value> emitWarpgroupWait(OpBuilder &b, Location loc,
                                       int64_t pending,
                                       ArrayRef<Value> results) const override {
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
    // The accumulators are plain SSA values to LLVM, which could move their
    // first use above the wait (PTX leaves reading them before it
    // undefined). An empty side-effecting asm per value, tied in and out,
    // keeps every use after the wait and emits no instruction.
    SmallVector<Value> fenced;
    for (Value v : results)
      fenced.push_back(LLVM::InlineAsmOp::create(
                           b, loc, v.getType(), ValueRange{v}, "", "=f,0",
                           /*has_side_effects=*/true, /*is_align_stack=*/false,
                           LLVM::tailcallkind::TailCallKind::None,
                           LLVM::AsmDialectAttr::get(b.getContext(),
                                                     LLVM::AsmDialect::AD_ATT),
                           /*operand_attrs=*/ArrayAttr())
                           .getResult(0));
    return fenced;
  }
  std::string checkBulkAdd(StringRef chip) const override {
    // cp.reduce.async.bulk: sm_90 and later.
    return checkWarpgroupMma(chip).empty() ? ""
                                           : "cp.reduce.async.bulk needs "
                                             "sm_90a";
  }
  void emitBulkAdd(OpBuilder &b, Location loc, Value source, Value dest,
                   int64_t bytes, Value first) const override {
    emitWarpgroupOperandFence(b, loc);
    emitBarrier(b, loc);
    Value src = arith::IndexCastOp::create(b, loc, b.getI32Type(), source);
    Value dst = LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), dest);
    Value size = arith::ConstantIntOp::create(b, loc, b.getI32Type(), bytes);
    NVVM::InlinePtxOp::create(
        b, loc, TypeRange{}, ValueRange{dst, src, size}, ValueRange{},
        "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], "
        "[$1], $2;",
        first);
    NVVM::InlinePtxOp::create(b, loc, TypeRange{}, ValueRange{}, ValueRange{},
                              "cp.async.bulk.commit_group;", first);
  }
  void emitBulkAddWait(OpBuilder &b, Location loc, bool read,
                       Value first) const override {
    NVVM::InlinePtxOp::create(b, loc, TypeRange{}, ValueRange{}, ValueRange{},
                              read ? "cp.async.bulk.wait_group.read 0;"
                                   : "cp.async.bulk.wait_group 0;",
                              first);
    emitBarrier(b, loc);
  }

  void emitWarpgroupOperandFence(OpBuilder &b, Location loc) const override {
    // fence.proxy.async.shared::cta: generic-proxy writes (st.shared,
    // cp.async) become visible to the async proxy wgmma reads through.
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  }

  void emitBarrier(OpBuilder &b, Location loc) const override {
    gpu::BarrierOp::create(b, loc);
  }

  // cp.async.cg (16 bytes, bypassing L1), commit_group, wait_group.
  Value emitAsyncCopy16(OpBuilder &b, Location loc, Value src,
                        ValueRange srcIndices, Value dst,
                        ValueRange dstIndices) const override {
    int64_t elements =
        16 / (cast<MemRefType>(src.getType()).getElementTypeBitWidth() / 8);
    return nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst,
        dstIndices, src, srcIndices, b.getIndexAttr(elements),
        /*srcElements=*/Value(), /*bypassL1=*/b.getUnitAttr());
  }
  Value emitAsyncCommit(OpBuilder &b, Location loc,
                        ArrayRef<Value> tokens) const override {
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
  }
  void emitAsyncWait(OpBuilder &b, Location loc, Value group,
                     int64_t pending) const override {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group,
                                     b.getI32IntegerAttr(pending));
  }

  /// cp.async.cg (16 bytes, around L1) with src-size 0 where not valid:
  /// zeros written, nothing read (the source row clamped to the first).
  void emitCopyAsync(OpBuilder &b, Location loc, Value src,
                     ValueRange srcIndices, Value dst, ValueRange dstIndices,
                     int64_t elements, Value valid) const override {
    Value all = arith::ConstantIndexOp::create(b, loc, elements);
    Value none = arith::ConstantIndexOp::create(b, loc, 0);
    Value count = arith::SelectOp::create(b, loc, valid, all, none);
    const int64_t bits =
        cast<MemRefType>(src.getType()).getElementTypeBitWidth();
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst,
        dstIndices, src, srcIndices, b.getIndexAttr(elements), count,
        elements * bits == 128 ? b.getUnitAttr() : UnitAttr());
  }
  void emitCopyCommit(OpBuilder &b, Location loc) const override {
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  void emitCopyWait(OpBuilder &b, Location loc,
                    int64_t pending) const override {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, uint32_t(pending));
  }

  Value emitShuffleXor(OpBuilder &b, Location loc, Value value,
                       int64_t mask) const override {
    auto shuffle = gpu::ShuffleOp::create(b, loc, value, mask,
                                          /*width=*/32, gpu::ShuffleMode::XOR);
    return shuffle.getShuffleResult();
  }

  /// ex2.approx.ftz.f32 (MUFU.EX2): 2 ulp, subnormal results flush to zero,
  /// which a softmax weight never needs next to the row maximum's 1.
  Value emitExp2(OpBuilder &b, Location loc, Value x) const override {
    return LLVM::CallIntrinsicOp::create(
               b, loc, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"), x)
        .getResult(0);
  }
  /// lg2.approx.f32 (MUFU.LG2): 2^-22.6 absolute error on [0.5, 2]; used once
  /// per row for the log-sum-exp.
  Value emitLog2(OpBuilder &b, Location loc, Value x) const override {
    return LLVM::CallIntrinsicOp::create(
               b, loc, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.lg2.approx.f"), x)
        .getResult(0);
  }

  /// NVPTX lowers math.tanh (llvm.tanh) to tanh.approx.f32 itself.
  bool lowersTanh() const override { return true; }

  int64_t getNumCopyStages() const override { return 2; }
  /// H200, mma.sync (docs/PERFORMANCE.md v9): D = 128 with 32-key tiles
  /// +8-14%, D = 64 with 64-key tiles -7-9%: lazy where the O rescale
  /// (Dv / block-n multiplies per key and row) outweighs the branch.
  bool prefersLazyRescale(int64_t dv, int64_t blockN) const override {
    return dv >= 2 * blockN;
  }
  int64_t getMaxSharedBytes(StringRef chip) const override {
    // Opt-in per block: sm_80 163 KB, sm_86/89 99 KB, sm_90 227 KB.
    if (chip.starts_with("sm_90"))
      return 227 * 1024;
    if (chip == "sm_80" || chip == "sm_87")
      return 163 * 1024;
    return 99 * 1024;
  }

  std::string checkChip(StringRef chip) const override {
    if (!chip.starts_with("sm_"))
      return "unknown NVIDIA chip '" + chip.str() +
             "' (expected sm_80, sm_86, sm_89, sm_90 or sm_90a)";
    int version = 0;
    if (chip.drop_front(3)
            .take_while(llvm::isDigit)
            .getAsInteger(10, version) ||
        version < 80)
      return "chip '" + chip.str() +
             "' has no bf16 mma.sync m16n8k16: need sm_80 or newer";
    // The pipeline emits PTX 8.0, which ends at sm_90a; LLVM aborts on
    // newer or unknown chips instead of reporting them.
    if (chip != "sm_80" && chip != "sm_86" && chip != "sm_87" &&
        chip != "sm_89" && chip != "sm_90" && chip != "sm_90a")
      return "unknown or unsupported NVIDIA chip '" + chip.str() +
             "' (supported: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a)";
    return {};
  }
};

} // namespace

std::unique_ptr<GpuTarget> mlir::fmha::createNVVMTarget() {
  return std::make_unique<NVVMTarget>();
}

std::unique_ptr<GpuTarget> mlir::fmha::createGpuTarget(StringRef name) {
  if (name == "nvvm")
    return createNVVMTarget();
  if (name == "rocdl")
    return createROCDLTarget();
  return nullptr;
}

//===- GpuTarget.h - What a GPU target supplies to the lowering -*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The flash-attention kernel structure (workgroup per (b, hq, q-tile), warps
// owning row blocks, online softmax in registers, mask-derived kv loops) is
// written once in GpuAttentionKernel.cpp. A target answers only this
// interface: its matrix instruction as data (shape, warp size and fragment
// layouts, support/MmaInstruction.h, from which every fragment fact below is
// derived), how to issue it and the loads that feed it, and cross-lane
// shuffles, barriers and copies (compare Triton's TargetInfoBase).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_CONVERSION_GPUTARGET_H
#define FMHA_CONVERSION_GPUTARGET_H

#include "fmha/Support/MmaInstruction.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::fmha {

/// Where one fragment element of a lane lives in its matrix tile.
struct FragmentCoord {
  Value row;
  Value col;
};

class GpuTarget {
public:
  virtual ~GpuTarget() = default;

  /// `nvvm` or `rocdl`.
  virtual StringRef getName() const = 0;
  /// The warp-level matrix instruction D[M x N] = A[M x K] * B[K x N] + C,
  /// with 16-bit float A/B (f16 or bf16) and f32 C/D, as data: its shape,
  /// warp size and fragment layouts (support/MmaInstruction.h). Everything
  /// below about fragments is derived from it. Valid after configure().
  virtual const ::fmha::MmaInstruction &getMma() const = 0;

  /// Lanes of a warp (wavefront): 32, or 64 on AMD CDNA. The pipeline's
  /// target attachment and the launch's block size follow it.
  int64_t getWarpSize() const { return getMma().warpSize; }
  int64_t getMmaM() const { return getMma().m; }
  int64_t getMmaN() const { return getMma().n; }
  int64_t getMmaK() const { return getMma().k; }
  /// Elements of A, B and C/D each lane holds.
  int64_t getNumAElements() const { return getMma().a.getNumRegisters(); }
  int64_t getNumBElements() const { return getMma().b.getNumRegisters(); }
  int64_t getNumCElements() const { return getMma().c.getNumRegisters(); }

  /// The (row, col) of element `e` of a lane's fragment, as index IR of the
  /// lane id (emitLayoutCoord). A is M x K, B is K x N (row = k), C is M x N.
  FragmentCoord getACoord(OpBuilder &b, Location loc, Value lane,
                          int64_t e) const;
  FragmentCoord getBCoord(OpBuilder &b, Location loc, Value lane,
                          int64_t e) const;
  FragmentCoord getCCoord(OpBuilder &b, Location loc, Value lane,
                          int64_t e) const;

  /// How many lanes hold each element of A (and of B): 1, or 2 where the
  /// instruction reads a row of A from two lanes (RDNA3 WMMA in wave32:
  /// lanes l and l + 16). The C layout always holds each element once.
  int64_t getABLaneCopies() const { return getMma().getABLaneCopies(); }

  /// The largest head dim (D and Dv) whose kernel fits the registers of a
  /// lane (Q fragments, O accumulators and the row state live there).
  virtual int64_t getMaxHeadDim() const { return 128; }

  /// Whether the forward kernel of the warp-level MMA rescales O lazily by
  /// default (the `rescale` option overrides it): only where measured
  /// faster on the target.
  virtual bool prefersLazyRescale(int64_t dv, int64_t blockN) const {
    return false;
  }

  /// Elements (e, e+1) of A and of B are adjacent columns (A) or rows (B)
  /// of the same row (A) / column (B): they can be loaded as one pair.
  bool pairsAreAdjacent() const { return getMma().pairsAreAdjacent(); }

  /// Elements (e, e+1) of C, e even, are adjacent columns of one row: the
  /// kernels store them as one pair.
  bool cPairsAreAdjacent() const { return getMma().cPairsAreAdjacent(); }

  /// A lane's C elements cover this many distinct rows ("row slots"); element
  /// e lies in slot getCRowSlot(e).
  int64_t getNumCRowSlots() const { return getMma().getNumCRowSlots(); }
  int64_t getCRowSlot(int64_t e) const { return getMma().getCRowSlot(e); }
  /// The xor masks that combine the lanes sharing a C row.
  SmallVector<int64_t> getRowReduceXorMasks() const {
    std::vector<int64_t> masks = getMma().getRowReduceXorMasks();
    return SmallVector<int64_t>(masks.begin(), masks.end());
  }

  /// When the C fragments of N-adjacent tiles hold, in the same lane, the
  /// elements of an A fragment of K = mmaK columns: element e of that A
  /// fragment is element `second` of C tile `first` (0 .. K/N - 1). The
  /// kernel then feeds P = softmax(S) to the second product from registers.
  std::optional<std::pair<int64_t, int64_t>> getAFromC(int64_t e) const {
    return getMma().getAFromC(e);
  }

  /// Fragments travel as registers of two 16-bit elements (vector<2xT>):
  /// numA / 2 registers for A, numB / 2 for B, in element-pair order.
  /// D = A * B + C with f32 scalars for C and D.
  virtual SmallVector<Value> emitMma(OpBuilder &b, Location loc,
                                     Type elementType, ArrayRef<Value> aRegs,
                                     ArrayRef<Value> bRegs,
                                     ArrayRef<Value> c) const = 0;

  /// Loads, from a workgroup-memory tile of row-major rows (keys) of
  /// 16-bit elements, the B fragments of K^T for keys [key0, key0 + N) and
  /// head-dim columns [col0, col0 + 2 K): two fragments (k-steps col0 and
  /// col0 + K), each numB / 2 registers.
  virtual SmallVector<SmallVector<Value>>
  emitLoadKFragments(OpBuilder &b, Location loc, Value tile, Value lane,
                     Value key0, Value col0) const = 0;

  /// Loads, from a workgroup-memory tile of rows (keys), the B fragments of
  /// V for keys [key0, key0 + K) and value columns [col0, col0 + 2 N): two
  /// fragments (columns col0 and col0 + N).
  virtual SmallVector<SmallVector<Value>>
  emitLoadVFragments(OpBuilder &b, Location loc, Value tile, Value lane,
                     Value key0, Value col0) const = 0;

  /// Loads, from a workgroup-memory tile of row-major rows of 16-bit
  /// elements, the A fragment of rows [row0, row0 + M) and columns [col0,
  /// col0 + K): numA / 2 registers. The default reads element pairs at
  /// getACoord.
  virtual SmallVector<Value> emitLoadAFragment(OpBuilder &b, Location loc,
                                               Value tile, Value lane,
                                               Value row0, Value col0) const;

  /// The A fragment of rows [row0, row0 + M) and columns [col0, col0 + K)
  /// of a matrix whose transpose a workgroup-memory tile holds row-major:
  /// element (r, c) of A is tile[col0 + c][row0 + r] (e.g. P^T from a tile
  /// of P). numA / 2 registers. The default reads each element at
  /// getACoord.
  virtual SmallVector<Value>
  emitLoadATransposedFragment(OpBuilder &b, Location loc, Value tile,
                              Value lane, Value row0, Value col0) const;

  /// A load of 8 x 8 matrices of 16-bit elements from workgroup memory
  /// straight into fragment registers (NVIDIA's ldmatrix): `matrix` is where
  /// one matrix's elements land, in the memory's (row, col) of the matrix,
  /// one register pair a lane (register basis 0 and the lane bases). Lane
  /// 8 i + r gives the address of row r of matrix i (16-byte aligned).
  struct MatrixLoad {
    ::fmha::LinearLayout matrix;
    bool transpose;
  };
  /// The target's matrix loads (none by default) and how many matrices one
  /// load reads at most.
  virtual SmallVector<MatrixLoad> getMatrixLoads() const { return {}; }
  virtual int64_t getMaxMatricesPerLoad() const { return 0; }
  /// Loads `count` matrices from the workgroup-memory `memref`, this lane
  /// giving the address `indices` (the last two a row and a column of the
  /// matrices' dims; any before them pick a stage): `count` registers of an
  /// element pair (vector<2xT>), matrix i's in register i.
  virtual SmallVector<Value> emitMatrixLoad(OpBuilder &b, Location loc,
                                            Value memref, ValueRange indices,
                                            int64_t count,
                                            bool transpose) const;

  /// Warpgroup matrix instructions (Hopper wgmma.mma_async), for the kernel
  /// of `mma=wgmma`: a warpgroup of four warps computes D[64 x N] = A[64 x K]
  /// * B[K x N] (+ D), K = getMmaK(), with A and B read from workgroup memory
  /// through descriptors and D in f32 registers. Warp w % 4 of the warpgroup
  /// holds rows [16 (w % 4), 16 (w % 4) + 16) of D as N / getMmaN() C
  /// fragments (getCCoord) side by side: element i of the result is element
  /// i % numC of C tile i / numC.
  ///
  /// Returns a message when `chip` has no warpgroup MMA (the default).
  virtual std::string checkWarpgroupMma(StringRef chip) const;
  /// The descriptor (i64) of an operand at workgroup-memory byte address
  /// `address` (i64) in the 128-byte swizzled layout: rows of 64 16-bit
  /// elements (128 bytes) along the operand's contiguous dimension, 8 rows
  /// (1024 bytes, 1024-aligned) per swizzle atom, in which the 16-byte chunk
  /// j of row r lies at chunk j ^ r. K-major: atoms `strideBytes` apart along
  /// M (A) or N (B) (`leadingBytes` unused); N-major: atoms `leadingBytes`
  /// apart along N and `strideBytes` apart along K.
  virtual Value emitWarpgroupDescriptor(OpBuilder &b, Location loc,
                                        Value address, int64_t leadingBytes,
                                        int64_t strideBytes) const;
  /// One warpgroup product of N = `n` columns; A is K-major (its rows run
  /// along K), or M-major with `aMMajor` (rows along M, descriptor as for an
  /// N-major B); B is K-major, or N-major with `bNMajor` (rows along N).
  /// `acc` holds the n / 2 f32 elements of D; empty, D = A * B.
  /// Asynchronous: the results are valid after emitWarpgroupWait.
  virtual SmallVector<Value> emitWarpgroupMma(OpBuilder &b, Location loc,
                                              Type elementType, int64_t n,
                                              Value descA, bool aMMajor,
                                              Value descB, bool bNMajor,
                                              ArrayRef<Value> acc) const;
  /// The same product with A from registers: warp w % 4 of the warpgroup
  /// holds rows [16 (w % 4), 16 (w % 4) + 16) of A as the A fragment of the
  /// warp-level instruction (getACoord), numA / 2 registers of two 16-bit
  /// elements; `acc` (n / 2 f32, not empty) is accumulated into. The
  /// registers may be changed again only after emitWarpgroupWait.
  virtual SmallVector<Value>
  emitWarpgroupMmaRegisterA(OpBuilder &b, Location loc, Type elementType,
                            int64_t n, ArrayRef<Value> aRegs, Value descB,
                            bool bNMajor, ArrayRef<Value> acc) const;
  /// Orders register accesses before the next warpgroup products.
  virtual void emitWarpgroupFence(OpBuilder &b, Location loc) const;
  /// Closes the group of the products issued since the last commit.
  virtual void emitWarpgroupCommit(OpBuilder &b, Location loc) const;
  /// Waits until at most `pending` committed groups are in flight and returns
  /// `results` (accumulators of the groups now complete) as values that no
  /// use can be scheduled before the wait.
  virtual SmallVector<Value> emitWarpgroupWait(OpBuilder &b, Location loc,
                                               int64_t pending,
                                               ArrayRef<Value> results) const;
  /// Makes this thread's completed writes to workgroup memory (stores and
  /// asynchronous copies) visible to the warpgroup products; a barrier must
  /// follow before another thread's product reads them.
  virtual void emitWarpgroupOperandFence(OpBuilder &b, Location loc) const;
  /// A workgroup-wide barrier over workgroup memory.
  virtual void emitBarrier(OpBuilder &b, Location loc) const = 0;

  /// Asynchronous copies of 16 bytes from global to workgroup memory. A
  /// target without them copies synchronously and returns null tokens.
  virtual Value emitAsyncCopy16(OpBuilder &b, Location loc, Value src,
                                ValueRange srcIndices, Value dst,
                                ValueRange dstIndices) const = 0;
  /// Closes a group of the copies issued so far; returns its token.
  virtual Value emitAsyncCommit(OpBuilder &b, Location loc,
                                ArrayRef<Value> tokens) const = 0;
  /// Waits until at most `pending` of the groups up to `group` are still in
  /// flight (this thread's copies; a barrier makes them visible to all).
  virtual void emitAsyncWait(OpBuilder &b, Location loc, Value group,
                             int64_t pending) const = 0;

  /// The copies of `fmha.copy_async`, for one thread: starts copying
  /// `elements` consecutive elements (16 bytes) from src[srcIndices] into
  /// workgroup memory at dst[dstIndices]; where `valid` (i1) is false,
  /// writes zeros and reads nothing. emitCopyCommit closes the group of the
  /// copies started since the last; emitCopyWait waits until at most
  /// `pending` of this thread's groups are in flight. The defaults copy at
  /// once (and commit and wait for nothing).
  virtual void emitCopyAsync(OpBuilder &b, Location loc, Value src,
                             ValueRange srcIndices, Value dst,
                             ValueRange dstIndices, int64_t elements,
                             Value valid) const;
  virtual void emitCopyCommit(OpBuilder &b, Location loc) const {}
  virtual void emitCopyWait(OpBuilder &b, Location loc, int64_t pending) const {
  }

  /// A cross-lane exchange: the value of lane (lane xor mask).
  virtual Value emitShuffleXor(OpBuilder &b, Location loc, Value value,
                               int64_t mask) const = 0;

  /// 2^x and log2(x) of f32 values, in the target's own instructions where it
  /// has them (no device math library needs to be linked). The defaults are
  /// the `math` ops.
  virtual Value emitExp2(OpBuilder &b, Location loc, Value x) const;
  virtual Value emitLog2(OpBuilder &b, Location loc, Value x) const;
  /// Whether the target's LLVM backend lowers math.tanh of f32 itself
  /// (NVPTX: tanh.approx.f32); else emitTanh gives it.
  virtual bool lowersTanh() const { return false; }
  /// tanh(x) of an f32 value (the softcap) as 1 - 2 / (2^(2x log2 e) + 1)
  /// through emitExp2 (AMDGPU has no tanh).
  Value emitTanh(OpBuilder &b, Location loc, Value x) const;

  /// memref[idx] += value (f32), atomically, on a rank-1 memref of global
  /// memory that the kernel's caller allocated on this device (a workspace,
  /// e.g. the backward's dQ accumulator): its readers run in later
  /// launches, so the add needs atomicity only. The default is
  /// memref.atomic_rmw.
  virtual void emitWorkspaceAtomicAdd(OpBuilder &b, Location loc, Value value,
                                      Value memref, ValueRange indices) const;

  /// Empty when the target adds a workgroup buffer into global memory in
  /// one asynchronous bulk operation (fmha.add_async); else why not.
  virtual std::string checkBulkAdd(StringRef chip) const {
    return getName().str() + " has no asynchronous bulk add";
  }
  /// fmha.add_async: every thread's writes of the workgroup buffer at
  /// `source` (its workgroup address, an index) made visible to the bulk
  /// operation, a barrier, then the thread where `first` holds starts
  /// adding its `bytes` into `dest` (an `!llvm.ptr<1>`; f32, atomically),
  /// one bulk group.
  virtual void emitBulkAdd(OpBuilder &b, Location loc, Value source, Value dest,
                           int64_t bytes, Value first) const {}
  /// fmha.add_wait: the thread where `first` holds waits for its bulk
  /// groups (`read`: until they have read their sources; else until their
  /// adds are done), then a barrier.
  virtual void emitBulkAddWait(OpBuilder &b, Location loc, bool read,
                               Value first) const {}

  /// The LLVM address space of workgroup memory (shared memory, LDS; 3 on
  /// both targets). Buffers the staged passes add take it as a number: their
  /// vector accesses lower before the target's conversion would map
  /// #gpu.address_space<workgroup>.
  virtual unsigned getWorkgroupAddressSpace() const { return 3; }

  /// Buffers of the K/V tile pipeline: 2 when copies run asynchronously (the
  /// next tile lands while this one is computed), 1 otherwise.
  virtual int64_t getNumCopyStages() const = 0;
  /// The most workgroup memory one workgroup may use on `chip`.
  virtual int64_t getMaxSharedBytes(StringRef chip) const = 0;

  /// Checks that the chip is one the target knows; returns a message when not.
  virtual std::string checkChip(StringRef chip) const = 0;

  /// Chooses the matrix instruction for `chip`: `matrixSize` is the M = N of
  /// the instruction asked for (the `mfma` option; 0: the target's default).
  /// Called once, before any other query but getName; returns a message when
  /// the chip or the size is not supported. The default accepts only 0 and
  /// the target's own M and checks the chip.
  virtual std::string configure(StringRef chip, int64_t matrixSize);

  /// The width of `index` in the kernel's lowering to LLVM (32 or 64): the
  /// descriptors the target reads pointers from have fields that wide.
  unsigned getIndexBitwidth() const { return indexBitwidth; }
  void setIndexBitwidth(unsigned bits) { indexBitwidth = bits; }

private:
  unsigned indexBitwidth = 64;
};

/// The aligned pointer of `memref` (an `!llvm.ptr` of its memory space's
/// address space, 64-bit on the targets' global memory) from the descriptor
/// the kernel's lowering gives it with `indexBitwidth`-bit indices (the cast
/// folds away in reconcile-unrealized-casts).
Value emitAlignedPointer(OpBuilder &b, Location loc, Value memref,
                         unsigned indexBitwidth);

/// The global pointer (`!llvm.ptr<1>`) to `memref[indices]` (all of its
/// dims; none for the element at its offset) of a memref in the default
/// memory space: its buffer's aligned pointer, from the descriptor the
/// kernel's lowering gives it with `indexBitwidth`-bit indices (the cast
/// folds away in reconcile-unrealized-casts), advanced by its offset plus
/// the indices times its strides. A 64-bit pointer whatever the index width
/// (an index would cut it to 32 bits where indices are).
Value emitGlobalElementPointer(OpBuilder &b, Location loc, Value memref,
                               ValueRange indices, unsigned indexBitwidth);

/// The (row, col) that register `reg` of lane `lane` holds in `layout`, as
/// index IR of `lane` (a value below the layout's lane count): the lane bits
/// as divisions, remainders and products (runs of bits that map to runs of
/// one axis as one of each), the register's part a constant. The layout has
/// no warp bits.
FragmentCoord emitLayoutCoord(OpBuilder &b, Location loc,
                              const ::fmha::LinearLayout &layout, Value lane,
                              int64_t reg);
/// One axis of it: the row (`row`) or the column.
Value emitLayoutAxis(OpBuilder &b, Location loc,
                     const ::fmha::LinearLayout &layout, Value lane,
                     int64_t reg, bool row);

/// The NVVM target (mma.sync m16n8k16, sm_80 and newer).
std::unique_ptr<GpuTarget> createNVVMTarget();

/// The ROCDL target: MFMA 16x16x16 or 32x32x8 in wave64 (gfx90a, gfx94x,
/// gfx950), WMMA 16x16x16 in wave32 (gfx110x, gfx120x); configure() picks.
std::unique_ptr<GpuTarget> createROCDLTarget();

/// The target called `name` (`nvvm`, `rocdl`), or null.
std::unique_ptr<GpuTarget> createGpuTarget(StringRef name);
/// The same, with an error on `at` naming the targets when there is none.
std::unique_ptr<GpuTarget> createGpuTarget(StringRef name, Operation *at);
/// The target called `name`, configured for `chip` and `matrixSize`
/// (GpuTarget::configure), or null with an error on `at` (prefixed by
/// `pass`) saying what is not supported.
std::unique_ptr<GpuTarget> createGpuTarget(StringRef name, StringRef chip,
                                           int64_t matrixSize, Operation *at,
                                           StringRef pass);
/// The gpu.func ops nested in `root`, in order.
SmallVector<Operation *> gpuFuncsIn(Operation *root);

} // namespace mlir::fmha

#endif // FMHA_CONVERSION_GPUTARGET_H

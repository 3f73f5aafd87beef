//===- KernelDefaults.cpp - Each chip's fastest kernel by default ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/KernelDefaults.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <string_view>

using namespace mlir::fmha;

GpuKernelChoice mlir::fmha::chooseGpuKernel(const GpuKernelRequest &r) {
  GpuKernelChoice c;
  c.blockM = r.blockM.value_or(64);
  c.blockN = r.blockN.value_or(64);
  c.warpRows = r.warpRows.value_or(16);
  c.qInShared = r.qInShared.value_or(false);
  const bool tileGiven = r.blockM || r.blockN || r.warpRows || r.qInShared;
  std::string mma = r.mma.value_or("");
  // The staged warpgroup kernel where it is the fastest (docs/
  // PERFORMANCE.md, "the staged warpgroup kernel as sm_90a's default"):
  // 1.04-1.09x the builder's at D = 128 with no mask or a window, the only
  // one for other head dims; the builder's at D = Dv = 64 (the staged
  // 0.95x) and at D = Dv = 128 under a plain causal mask (0.97-0.99x).
  // Head dims 80, 96 and 192 (multiples of 16) take the staged kernels
  // alone, their tiles padded to the next power of two (the products skip
  // the k steps of the padding).
  auto padded = [](int64_t d) { return int64_t(llvm::PowerOf2Ceil(d)); };
  auto wgmmaDim = [&](int64_t d) {
    return d % 16 == 0 && padded(d) >= 64 && padded(d) <= 256;
  };
  auto builderDim = [](int64_t d) { return d == 32 || d == 64 || d == 128; };
  const bool wgmmaFits = !r.rocdl && !r.f32 && r.chip == "sm_90a" &&
                         wgmmaDim(r.d) && wgmmaDim(r.dv);
  const bool builderAhead =
      r.d == r.dv && (r.d == 64 || (r.d == 128 && r.plainCausal));
  // The staged mma.sync / MFMA / WMMA kernels take padded head dims up to
  // 128 (fmha-compile checks).
  const bool stagedRequired =
      r.stagedRequired || !builderDim(r.d) || !builderDim(r.dv);
  // Where only the staged forward takes the op, the tile options given
  // shape it.
  if (r.stagedAllowed && !r.staged && !r.backward &&
      ((wgmmaFits && !builderAhead && !tileGiven && !r.mma) ||
       stagedRequired)) {
    GpuKernelRequest staged = r;
    staged.staged = true;
    if (wgmmaFits && (!r.mma || *r.mma == "wgmma"))
      staged.mma = "wgmma";
    else if (r.mma == "mma.sync")
      staged.mma = std::nullopt;
    GpuKernelChoice choice = chooseGpuKernel(staged);
    choice.staged = true;
    return choice;
  }
  // The backward of a head dim the builder does not take (multiples of 16
  // up to 128 other than 32, 64 and 128) comes from the staged passes; so
  // does sm_90a's deterministic backward, where the staged one (no atomics
  // by construction) is 1.09-1.45x the builder's (H200, docs/
  // PERFORMANCE.md, session 30).
  const bool stagedDeterministic = r.deterministic && wgmmaFits &&
                                   std::max(r.d, r.dv) <= 128 && !tileGiven &&
                                   !r.mma;
  if (r.stagedAllowed && !r.staged && r.backward && !r.rocdl &&
      (stagedRequired || stagedDeterministic)) {
    GpuKernelRequest staged = r;
    staged.staged = true;
    GpuKernelChoice choice = chooseGpuKernel(staged);
    choice.staged = true;
    return choice;
  }
  if (r.staged && r.backward) {
    // The staged backward: 64 x 64 tiles, one warp each 16 rows of both
    // loops' tiles (the dK/dV loop's rows are keys, the dQ loop's queries:
    // block-m = block-n). On sm_90a warpgroup products with the A operands
    // read before the loops (k and v of the dK/dV kernel, q and dO of the
    // dQ kernel) in workgroup memory: 0.88-0.94x the builder's warpgroup
    // backward, 1.22-1.37x its mma.sync one, where the staged mma.sync
    // backward is 0.46-0.65x (H100, docs/PERFORMANCE.md, session 29). With
    // mma.sync, those A operands in workgroup memory above D = 64 (3-8%
    // faster at D 128, 4% slower at D 64).
    if (!r.blockM)
      c.blockM = r.blockN ? *r.blockN : 64;
    if (!r.blockN)
      c.blockN = c.blockM;
    const bool wgmma = r.mma ? mma == "wgmma"
                             : wgmmaFits && stagedWarpgroupRows(c.blockM) &&
                                   stagedWarpgroupRows(c.blockN) &&
                                   std::max(r.d, r.dv) <= 128;
    c.mma = wgmma ? "wgmma" : (mma == "mma.sync" ? "" : mma);
    if (!r.qInShared)
      c.qInShared = wgmma || std::max(r.d, r.dv) > 64;
    return c;
  }
  if (r.staged && mma == "wgmma") {
    // Warpgroup products: two warpgroups of 64 rows, Q in workgroup memory
    // (read by descriptor, as K and V), the builder's wgmma kv tiles.
    if (!r.blockM)
      c.blockM = 128;
    // 64-key tiles at D = 256: the K and V stages and Q fit the 227 KB.
    if (!r.blockN)
      c.blockN = padded(std::max(r.d, r.dv)) == 128 ? 128 : 64;
    if (!r.qInShared)
      c.qInShared = true;
    c.mma = mma;
    return c;
  }
  if (r.staged && r.rocdl) {
    // On paper (no AMD GPU here; docs/PERFORMANCE.md, "the staged forward
    // on gfx942"): four waves of one MFMA / WMMA row block each, 64-key
    // tiles on CDNA, 16 on RDNA (the wave32 lanes hold a whole 16-key
    // accumulator row block), Q in registers: no scratch.
    std::string_view chip(r.chip);
    if (!r.blockM)
      c.blockM = r.mfma == 32 ? 128 : 64;
    if (!r.blockN)
      c.blockN = chip.rfind("gfx1", 0) == 0 ? 16 : 64;
    c.mma = "";
    return c;
  }
  if (r.staged) {
    // Measured on the H200 (docs/PERFORMANCE.md, "Q through workgroup
    // memory"): 128 rows, 32 a warp; above D = 64 Q in workgroup memory
    // (1.13-1.16x over 64 x 64 with Q in registers at full masks, 1.05x at
    // causal 16k), at D = 64 in registers (Q in workgroup memory 0.96x).
    if (!r.blockM)
      c.blockM = 128;
    if (!r.qInShared && !r.blockM && std::max(r.d, r.dv) > 64)
      c.qInShared = true;
    c.mma = "";
    return c;
  }
  // The warpgroup kernel by default where it applies: 1.4-1.5x the
  // mma.sync kernel on the H200 (docs/PERFORMANCE.md, wgmma v15).
  if (!r.mma && !r.rocdl && r.chip == "sm_90a" && r.d == r.dv &&
      (r.d == 64 || r.d == 128) && !r.f32 && !tileGiven)
    mma = "wgmma";
  if (mma == "mma.sync")
    mma = ""; // The pass's default kernel.
  c.mma = mma;
  if (!mma.empty() && r.backward) {
    // Two warpgroups of 64 kv rows (docs/PERFORMANCE.md, "Backward
    // wgmma").
    if (!r.blockM && !r.blockN)
      c.blockM = c.blockN = 128;
  } else if (!mma.empty()) {
    // Two warpgroups of 64 rows; 64-key tiles at D = 64, 128 at D = 128
    // (measured on the H200, docs/PERFORMANCE.md, v7 and wgmma v15).
    if (!r.blockM)
      c.blockM = 128;
    if (!r.warpRows)
      c.warpRows = 16;
    if (!r.blockN)
      c.blockN = r.d == 64 ? 64 : 128;
  } else if (!r.rocdl && !r.backward) {
    // Tile defaults measured on the H200 (docs/PERFORMANCE.md, v4, v9 and
    // v11): four warps of 32 rows, 64-key tiles at D <= 64; at D = 128 the
    // Q tile in workgroup memory and 64-key tiles (the registers Q no
    // longer holds go to the wider S tile), or 16-key tiles where block-n
    // alone is given without q-in-shared.
    if (!r.blockM && !r.warpRows) {
      c.blockM = 128;
      c.warpRows = 32;
    }
    const bool wide = std::max(r.d, r.dv) > 64;
    if (wide && !r.qInShared && !r.blockN)
      c.qInShared = true;
    if (!r.blockN)
      c.blockN = wide && !c.qInShared ? 16 : 64;
  } else if (!r.rocdl && !r.blockM && !r.blockN) {
    // The backward with the split dkdv step, both modes: 128 x 128 tiles
    // above D = 64, 64 x 64 up to it (docs/PERFORMANCE.md, "Backward v14").
    c.blockM = c.blockN = std::max(r.d, r.dv) > 64 ? 128 : 64;
  }
  if (r.rocdl) {
    // 32x32 MFMA: one row block of 32 rows per wave. RDNA (wave32 WMMA):
    // 16-key tiles on RDNA3, 32 on RDNA4 (16 at D = 128) keep every mask
    // within the 256 VGPRs of a lane, without scratch.
    if (r.mfma == 32 && !r.warpRows)
      c.warpRows = 32;
    std::string_view chip(r.chip);
    if (chip.rfind("gfx1", 0) == 0 && !r.backward && !r.blockN)
      c.blockN =
          chip.rfind("gfx11", 0) == 0 || std::max(r.d, r.dv) > 64 ? 16 : 32;
  }
  return c;
}

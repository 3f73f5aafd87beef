//===- CompileOptions.cpp - fmha-compile's command line -------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "CompileOptions.h"

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Conversion/KernelDefaults.h"

#include <array>
#include <type_traits>

#include "llvm/ADT/Twine.h"

#include <cmath>

namespace fmha::compile {

namespace cl = llvm::cl;

cl::OptionCategory category("fmha-compile options");

cl::opt<std::string> target("target", cl::desc("cpu | cuda | hip"),
                            cl::init("cpu"), cl::cat(category));
cl::opt<std::string> chip("chip",
                          cl::desc("Target chip (cpu: LLVM CPU name, default "
                                   "the host; cuda: sm_80, sm_90a; hip: "
                                   "gfx942, ...)"),
                          cl::init(""), cl::cat(category));
cl::opt<std::string> dtype("dtype", cl::desc("f32 | f16 | bf16"),
                           cl::init("f32"), cl::cat(category));
cl::opt<int64_t> hq("hq", cl::desc("Query heads"), cl::init(-1),
                    cl::cat(category));
cl::opt<int64_t> hk("hk", cl::desc("Key/value heads (Hq % Hk == 0)"),
                    cl::init(-1), cl::cat(category));
cl::opt<int64_t> headDim("d", cl::desc("Head dim of q and k"), cl::init(-1),
                         cl::cat(category));
cl::opt<int64_t> headDimV("dv", cl::desc("Head dim of v and o (default d)"),
                          cl::init(-1), cl::cat(category));
cl::opt<std::string> mask("mask",
                          cl::desc("Mask spec (CK): 0, t, b, t:L,R[,S], "
                                   "b:L,R[,S], xt:W, xb:W"),
                          cl::init("0"), cl::cat(category));
cl::opt<double> scale("scale", cl::desc("Score scale (default 1/sqrt(d))"),
                      cl::init(0.0), cl::cat(category));
cl::opt<double> softcap("softcap", cl::desc("Softcap (default none)"),
                        cl::init(0.0), cl::cat(category));
cl::opt<bool> bwd("bwd", cl::desc("Compile the backward kernel"),
                  cl::init(false), cl::cat(category));
cl::opt<bool> sinks(
    "sinks",
    cl::desc("learned sink logits (gpt-oss): an operand 'sinks', float32 "
             "[Hq], one logit per query head that joins every row's softmax "
             "denominator and carries no value (DESIGN.md section 1); on GPU "
             "targets the staged forward. With --bwd the backward also "
             "writes their gradient 'dsinks' (float32 [Hq], fmha.sinks_grad)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> varlen(
    "varlen",
    cl::desc("a variable-length batch (FlashAttention's cu_seqlens): "
             "operands 'cu_seqlens_q' and 'cu_seqlens_k', int32 [B + 1], and "
             "q, k, v, o, lse of batch 1 holding the B sequences back to back, "
             "the mask local to each (DESIGN.md section 1); the forward (on "
             "GPU targets the staged kernel)"),
    cl::init(false), cl::cat(category));
cl::opt<int64_t> pageSize(
    "page-size",
    cl::desc("a paged K/V cache of pages of P tokens (FlashAttention's and "
             "vLLM's): operands 'block_table' (int32 [B, max_pages]) and "
             "'seqlens_k' (int32 [B]) after v, k and v [pages, Hk, P, D]; "
             "with --varlen, chunked prefill (cu_seqlens_q only); the "
             "forward (on GPU targets the staged kernel, P a multiple of "
             "16). A kv tile lies within a page (block-n the largest power "
             "of two dividing P up to its default) or, of static tiles (the "
             "staged GPU forward, --static-tiles, --vector-tiles), spans "
             "whole pages where P divides block-n"),
    cl::init(0), cl::cat(category));
cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("With --bwd: bit-identical gradients run to run (dQ recomputed "
             "per query tile instead of accumulated atomically); on sm_90a "
             "with head dims from 48 to 128 and no tile option, the staged "
             "backward (as --vector-tiles), which is deterministic by "
             "construction"),
    cl::init(false), cl::cat(category));
cl::opt<bool> dqAtomics(
    "dq-atomics",
    cl::desc("With --bwd and the staged backward on a GPU (--vector-tiles): "
             "the dK/dV kernel adds scale dS K into an f32 workspace "
             "(dq_accum) atomically and a last kernel rounds it into dq, "
             "instead of a dQ kernel that sweeps K and V again; not "
             "deterministic. The CPU's static and vector tiles add dQ so "
             "whenever the backward is not --deterministic"),
    cl::init(false), cl::cat(category));
cl::opt<bool> bulkAdd(
    "bulk-add",
    cl::desc("With --dq-atomics and warpgroup products (sm_90a): the dK/dV "
             "kernel writes its dQ part into a workgroup buffer and one "
             "thread adds the whole buffer into dq_accum "
             "(cp.reduce.async.bulk) instead of every thread's atomics"),
    cl::init(false), cl::cat(category));
cl::opt<bool> merge(
    "merge",
    cl::desc("Compile the merge of two attention partials (fmha.merge, "
             "kind=merge): o1, o2, o [B,H,S,Dv] with H = --hq "
             "and Dv = --dv, lse [B,H,S]; takes only --dtype, --hq, --dv"),
    cl::init(false), cl::cat(category));
cl::opt<bool> accumulate(
    "accumulate",
    cl::desc("Compile the accumulation acc += x (fmha.accumulate, kind=acc) "
             "over a flat element count given at run time: x in --dtype, acc "
             "f32; takes only --dtype"),
    cl::init(false), cl::cat(category));
cl::opt<int64_t> blockM("block-m",
                        cl::desc("Query rows per tile (default 64; cuda: "
                                 "128; --bwd on cuda: 64 up to D = 64, "
                                 "else 128; --bwd on GPUs: block-m = "
                                 "block-n)"),
                        cl::init(64), cl::cat(category));
cl::opt<int64_t>
    blockN("block-n",
           cl::desc("Keys per kv tile (cuda default: 64; 16 at D = 128 with "
                    "--q-in-shared=false; hip: 16 on gfx11, 32 on gfx12 (16 "
                    "at D = 128))"),
           cl::init(64), cl::cat(category));
cl::opt<int64_t> warpRows("warp-rows",
                          cl::desc("GPU: query rows per warp (16 or 32): the "
                                   "K/V fragments a warp reads feed "
                                   "warp-rows / 16 products (cuda default: "
                                   "32 with block-m 128)"),
                          cl::init(16), cl::cat(category));
cl::opt<int64_t> mfma("mfma",
                      cl::desc("hip on CDNA: MFMA shape 16 (16x16x16, the "
                               "default) or 32 (32x32x8; warp-rows default "
                               "32)"),
                      cl::init(0), cl::cat(category));
cl::opt<std::string>
    mma("mma",
        cl::desc("cuda: the matrix instruction, wgmma (sm_90a "
                 "warpgroup MMA: f16/bf16, D = Dv in {64, 128}; forward: "
                 "block-m 128, block-n 64 at D = 64 and 128 at D = 128, "
                 "warp-rows 16 by default; --bwd: the dkdv kernel, block-m "
                 "= block-n = 128), mma.sync (m16n8k16), or empty: wgmma "
                 "where it applies and no tile option (--block-m, "
                 "--block-n, --warp-rows, --q-in-shared) is given, "
                 "mma.sync elsewhere"),
        cl::init(""), cl::cat(category));
cl::opt<std::string> cudaBinary(
    "cuda-binary",
    cl::desc("cuda bundles: cubin (SASS for --chip, needs a CUDA toolkit's "
             "ptxas), ptx (the driver compiles it on first load, also for "
             "newer GPUs than --chip), or auto (the default: cubin where a "
             "toolkit is found, else ptx)"),
    cl::init("auto"), cl::cat(category));
cl::opt<std::string> rescale(
    "rescale",
    cl::desc(
        "GPU forward: when the online softmax rescales O: lazy (only "
        "when a row's max grows by more than a factor 2^8), eager (every kv "
        "tile), or empty: lazy on cuda with the mma.sync kernel where "
        "Dv >= 2 x block-n, eager elsewhere"),
    cl::init(""), cl::cat(category));
cl::opt<bool> qInShared(
    "q-in-shared",
    cl::desc("GPU forward: keep the Q tile in workgroup memory and read its "
             "fragments per kv tile (frees registers for wider kv tiles; "
             "cuda default: on at D = 128 unless --block-n is given; with "
             "--vector-tiles, fmha-stage-q, on above D = 64 unless "
             "--block-m is given)"),
    cl::init(false), cl::cat(category));
cl::opt<int64_t> indexBits(
    "index-bits",
    cl::desc("GPU: bits of the kernels' index arithmetic and index "
             "parameters, 32 (cuda's default: cheaper address arithmetic, "
             "and the runtime refuses a problem with a buffer of more than "
             "2^31 - 2^20 elements) or 64 (hip's default: 32 is not yet "
             "measured on AMD hardware)"),
    cl::init(0), cl::cat(category));
cl::opt<bool> fromTensors(
    "from-tensors",
    cl::desc("run the op on tensors and let the pipeline bufferize it: "
             "with --strides=contiguous a function on tensors returning the "
             "outs (the bundle is the one from memrefs), with --strides=any "
             "the strided memrefs taken as tensors and the outs written back "
             "in place"),
    cl::init(false), cl::cat(category));
cl::opt<bool> staticTiles(
    "static-tiles",
    cl::desc("CPU forward or backward: tile with the GPU's static tiles "
             "(q, k and v tiles padded at the edges of Sq and Sk and to the "
             "next power of two of the head dims, the element mask on kv "
             "tiles past Sk; the backward's dQ recomputed per q tile); needs "
             "--from-tensors. Runs the GPU's tiled form on the host"),
    cl::init(false), cl::cat(category));
cl::opt<bool> vectorTiles(
    "vector-tiles",
    cl::desc("the forward from the staged passes: the static tiles as "
             "vectors and the tile ops as generic vector ops "
             "(fmha-vectorize-tiles); on a GPU a workgroup per q tile, the "
             "tiles distributed to its lanes by the layouts of the chip's "
             "matrix instruction (mma.sync, MFMA, WMMA), K "
             "and V through workgroup memory (128 x 64 tiles by default, Q "
             "in workgroup memory above D = 64); with --mma=wgmma "
             "(sm_90a) warpgroup products over K, V and Q in the 128-byte "
             "swizzle, warps of 16 rows (128 x 128 tiles, 128 x 64 at D = "
             "64). With --bwd (cpu, cuda): the backward from the staged "
             "passes, on cuda three kernels (Dsum; dK/dV with S^T = K Q^T, "
             "Q and dO through workgroup memory; dQ), 64 x 64 tiles by "
             "default, deterministic; on sm_90a "
             "warpgroup products with K, V (dQ: Q, dO) in workgroup memory "
             "too (block-m and block-n 64 or 128, each kernel a warp each 16 "
             "of its rows), mma.sync at D 32 and elsewhere (block-m = "
             "block-n). Implies --from-tensors"),
    cl::init(false), cl::cat(category));
cl::opt<bool> deferPV(
    "defer-pv",
    cl::desc("with --vector-tiles: each kv tile's P V product in the next "
             "iteration, after the next tile's scores (fmha-defer-pv): with "
             "--mma=wgmma the softmax runs while the product is in flight; on "
             "the CPU and with mma.sync the same values, to check it"),
    cl::init(false), cl::cat(category));
cl::opt<int64_t> kvStages(
    "kv-stages",
    cl::desc("with --vector-tiles on a GPU: the stages of the kv loop's "
             "workgroup buffers, 2 (the next K/V tiles copied while the "
             "products run; the default) or 1"),
    cl::init(2), cl::cat(category));
cl::opt<int64_t> bundleVersion(
    "bundle-version",
    cl::desc("the bundle format to write: 2 (with a launch manifest), or 1 "
             "(no manifest; read by older runtimes, and by this one until "
             "the staged GPU pipeline is complete)"),
    cl::init(2), cl::cat(category));
cl::opt<std::string> strides(
    "strides",
    cl::desc("the memory the attention bundles take: 'any' (every tensor "
             "with any strides on B, H and S, the head-dim axis contiguous: "
             "BSHD, transposed views and packed QKV without a copy) or "
             "'contiguous' (BHSD row-major only)"),
    cl::init("any"), cl::cat(category));
cl::opt<std::string> emit("emit", cl::desc("bundle | mlir | llvm | isa"),
                          cl::init("bundle"), cl::cat(category));
cl::opt<std::string> output("o", cl::desc("Output file ('-' for stdout)"),
                            cl::value_desc("file"), cl::init(""),
                            cl::cat(category));

std::optional<rt::BundleMeta> bundleMetaFromOptions(std::string *err) {
  auto error = [&](const llvm::Twine &message) {
    *err = message.str();
    return std::nullopt;
  };
  rt::BundleMeta meta;
  std::optional<rt::Target> parsedTarget = rt::parseTarget(target);
  if (!parsedTarget)
    return error("unknown --target '" + target +
                 "' (expected cpu, cuda or hip)");
  meta.target = *parsedTarget;
  meta.chip = chip;
  if (meta.target == rt::Target::Cuda && meta.chip.empty())
    meta.chip = "sm_90";
  if (meta.target == rt::Target::Hip && meta.chip.empty())
    meta.chip = "gfx942";
  std::optional<rt::DType> parsedType = rt::parseDType(dtype);
  if (!parsedType)
    return error("unknown --dtype '" + dtype + "' (expected f32, f16 or bf16)");
  meta.dtype = *parsedType;
  if (!mma.empty()) {
    if (mma != "wgmma" && mma != "mma.sync")
      return error("unknown --mma '" + mma + "' (expected wgmma or mma.sync)");
    if (meta.target != rt::Target::Cuda ||
        (mma == "wgmma" && meta.chip != "sm_90a"))
      return error("--mma=" + mma + " needs --target=cuda" +
                   (mma == "wgmma" ? " --chip=sm_90a" : ""));
    if (merge || accumulate)
      return error("--mma=" + mma +
                   " applies to attention kernels (not --merge or "
                   "--accumulate)");
  }
  // Options of the GPU forward kernel alone.
  const bool gpuForward =
      meta.target != rt::Target::Cpu && !bwd && !merge && !accumulate;
  auto gpuForwardOnly = [&](llvm::StringRef flag) {
    return error(flag + " applies to the GPU forward kernel only (not "
                        "--target=cpu, --bwd, --merge or --accumulate)");
  };
  if (!rescale.empty()) {
    if (rescale != "lazy" && rescale != "eager")
      return error("unknown --rescale '" + rescale +
                   "' (expected lazy or eager)");
    if (!gpuForward)
      return gpuForwardOnly("--rescale");
  }
  // The staged GPU backward takes it too: the tiles its loops read before
  // the loops as A operands (k and v in the dK/dV kernel, q and dO in the
  // dQ kernel) go through workgroup memory (fmha-stage-q).
  if (qInShared.getNumOccurrences() && !gpuForward &&
      !(bwd && vectorTiles && meta.target == rt::Target::Cuda))
    return gpuForwardOnly("--q-in-shared");
  if (sinks && (merge || accumulate))
    return error("--sinks applies to attention kernels (not --merge or "
                 "--accumulate: a merge takes partials without the sink "
                 "logits, which fold in once after the last merge)");
  if (varlen && (merge || accumulate || bwd))
    return error("--varlen builds the forward of a variable-length batch (not "
                 "--bwd, --merge or --accumulate: their variable-length "
                 "kernels are not built yet)");
  if (pageSize && (merge || accumulate || bwd))
    return error("--page-size builds the forward over a paged K/V cache (not "
                 "--bwd, --merge or --accumulate)");
  if (pageSize < 0 || pageSize > (int64_t(1) << 30))
    return error("--page-size must be a page's tokens in [1, 2^30] (0: "
                 "contiguous K/V), got " +
                 llvm::Twine(pageSize.getValue()));
  // 32-bit indices on cuda by default: measured on the H200
  // (docs/PERFORMANCE.md, v13).
  meta.indexBits = meta.target == rt::Target::Cuda ? 32 : 64;
  if (indexBits.getNumOccurrences()) {
    if (indexBits != 64 && indexBits != 32)
      return error("--index-bits must be 32 or 64, got " +
                   llvm::Twine(indexBits.getValue()));
    if (indexBits == 32 && meta.target == rt::Target::Cpu)
      return error("--index-bits=32 needs a GPU target (the cpu kernels "
                   "keep 64-bit indices)");
    meta.indexBits = indexBits;
  }
  if (accumulate) {
    if (bwd || deterministic || merge)
      return error("--accumulate cannot be combined with --bwd, "
                   "--deterministic or --merge");
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &hq, &hk, &headDim, &headDimV, &mask, &scale, &softcap})
      if (o->getNumOccurrences())
        return error("--accumulate takes only --dtype, not " +
                     llvm::Twine(o->ArgStr.size() > 1 ? "--" : "-") +
                     o->ArgStr);
    if (blockM <= 0 || blockN <= 0)
      return error("--block-m and --block-n must be positive");
    meta.kind = rt::KernelKind::Accumulate;
    meta.hq = meta.hk = meta.d = meta.dv = 1;
    meta.kernel = kAccumulateKernelName;
    meta.blockM = blockM;
    meta.blockN = blockN;
    if (meta.target != rt::Target::Cpu) {
      meta.abi = rt::kAbiGpuAccV1;
      meta.binaryFormat = meta.target == rt::Target::Hip
                              ? rt::BinaryFormat::Hsaco
                              : rt::BinaryFormat::Cubin;
      meta.blockThreads = 64; // Provisional: the lowering's launch decides.
    }
  } else if (merge) {
    if (bwd || deterministic)
      return error("--merge cannot be combined with --bwd or --deterministic");
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &hk, &headDim, &mask, &scale, &softcap})
      if (o->getNumOccurrences())
        return error("--merge takes --hq (H) and --dv (Dv), not " +
                     llvm::Twine(o->ArgStr.size() > 1 ? "--" : "-") +
                     o->ArgStr);
    if (hq <= 0 || headDimV <= 0)
      return error("--merge needs --hq and --dv, both positive");
    if (blockM <= 0 || blockN <= 0)
      return error("--block-m and --block-n must be positive");
    meta.kind = rt::KernelKind::Merge;
    meta.hq = meta.hk = hq;
    meta.d = meta.dv = headDimV;
    meta.kernel = kMergeKernelName;
    meta.blockM = blockM;
    meta.blockN = blockN;
    if (meta.target != rt::Target::Cpu) {
      if (meta.dtype == rt::DType::F32)
        return error("--merge --target=" + target.getValue() +
                     " needs --dtype=f16 or bf16");
      meta.abi = rt::kAbiGpuMergeV1;
      meta.binaryFormat = meta.target == rt::Target::Hip
                              ? rt::BinaryFormat::Hsaco
                              : rt::BinaryFormat::Cubin;
      meta.blockThreads = 64; // Provisional: the lowering's launch decides.
    }
  } else {
    if (deterministic && !bwd)
      return error("--deterministic needs --bwd");
    if (dqAtomics && (!bwd || deterministic))
      return error("--dq-atomics needs --bwd and no --deterministic");
    if (bulkAdd && !dqAtomics)
      return error("--bulk-add needs --dq-atomics");
    if (bulkAdd && target != "cuda")
      return error("--bulk-add needs warpgroup products (--target=cuda "
                   "--chip=sm_90a)");
    meta.kind = bwd ? rt::KernelKind::Backward : rt::KernelKind::Forward;
    meta.deterministic = deterministic;
    if (hq <= 0 || hk <= 0 || headDim <= 0)
      return error("--hq, --hk and -d are required and must be positive");
    if (hq % hk != 0)
      return error("Hq (" + llvm::Twine(hq) + ") must be a multiple of Hk (" +
                   llvm::Twine(hk) + ")");
    meta.hq = hq;
    meta.hk = hk;
    meta.d = headDim;
    meta.dv = headDimV > 0 ? headDimV.getValue() : headDim.getValue();
    if (headDimV.getNumOccurrences() && headDimV <= 0)
      return error("--dv must be positive");
    std::string maskError;
    std::optional<::fmha::MaskSpec> spec =
        ::fmha::MaskSpec::parse(mask, &maskError);
    if (!spec)
      return error("--mask: " + maskError);
    meta.mask = *spec;
    if (scale.getNumOccurrences() && !(scale > 0.0 && std::isfinite(scale)))
      return error("--scale must be positive and finite");
    if (softcap.getNumOccurrences() &&
        !(softcap > 0.0 && std::isfinite(softcap)))
      return error("--softcap must be positive and finite");
    meta.scale = static_cast<float>(scale);
    meta.softcap = static_cast<float>(softcap);
    meta.sinks = sinks;
    meta.varlen = varlen;
    meta.pageSize = pageSize;
    if (sinks && bwd && (fromTensors || vectorTiles))
      return error("--sinks with --bwd takes memrefs (fmha.attention_bwd "
                   "beside fmha.sinks_grad): drop --from-tensors and "
                   "--vector-tiles");
    if (blockM <= 0 || blockN <= 0)
      return error("--block-m and --block-n must be positive");
    meta.blockM = blockM;
    meta.blockN = blockN;
    meta.kernel = bwd ? kBwdKernelName : kKernelName;
    meta.binaryFormat = rt::BinaryFormat::ElfSo;
    // The builder's warpgroup kernel: D = Dv in {64, 128}; the staged one
    // (--vector-tiles): D and Dv multiples of 16 from 48 to 256 (the tiles
    // padded to the next power of two, 64 to 256: whole rows of the
    // 128-byte swizzle).
    if (!mma.empty() && mma != "mma.sync" && !vectorTiles &&
        (meta.d != meta.dv || (meta.d != 64 && meta.d != 128)))
      return error("--mma=wgmma supports d = dv in {64, 128}, got d=" +
                   llvm::Twine(meta.d) + " dv=" + llvm::Twine(meta.dv) +
                   " (with --vector-tiles: multiples of 16 from 48 to 256)");
    if (!mma.empty() && mma != "mma.sync" && vectorTiles &&
        llvm::any_of(std::array<int64_t, 2>{meta.d, meta.dv}, [](int64_t d) {
          return d % 16 != 0 || d < 48 || d > 256;
        }))
      return error("--mma=wgmma with --vector-tiles supports d and dv "
                   "multiples of 16 from 48 to 256, got d=" +
                   llvm::Twine(meta.d) + " dv=" + llvm::Twine(meta.dv));
    if (meta.target == rt::Target::Cpu && mma == "mma.sync")
      mma = "";
    if (meta.target != rt::Target::Cpu) {
      // Each chip's fastest kernel where no option says otherwise: the
      // lowering's defaults, which the named pipelines use too.
      mlir::fmha::GpuKernelRequest request;
      request.rocdl = meta.target == rt::Target::Hip;
      request.chip = meta.chip;
      request.backward = bwd;
      request.staged = vectorTiles;
      // fmha-compile builds the staged forward where it is the fastest
      // (the warpgroup kernel above D = 64 on sm_90a) or the op needs it
      // (only the staged forward takes learned sink logits), unless an
      // option naming another kernel is given.
      // The backward too on cuda, for the head dims only the staged one
      // takes (not with learned sinks: their backward takes memrefs).
      request.stagedAllowed =
          ((!bwd && meta.kind == rt::KernelKind::Forward) ||
           (bwd && !sinks && meta.target == rt::Target::Cuda)) &&
          !rescale.getNumOccurrences();
      // Only the staged forward takes learned sink logits and
      // variable-length batches.
      request.stagedRequired = sinks || varlen || pageSize;
      request.plainCausal = meta.mask.kind != ::fmha::MaskKind::None &&
                            meta.mask.right == 0 && !meta.mask.hasLeft() &&
                            meta.mask.sink == 0;
      request.deterministic = deterministic;
      request.f32 = meta.dtype == rt::DType::F32;
      request.d = meta.d;
      request.dv = meta.dv;
      request.mfma = mfma;
      auto given = [](const auto &o) {
        using T = std::decay_t<decltype(o.getValue())>;
        return o.getNumOccurrences() ? std::optional<T>(o.getValue())
                                     : std::nullopt;
      };
      request.blockM = given(blockM);
      request.blockN = given(blockN);
      request.warpRows = given(warpRows);
      request.qInShared = given(qInShared);
      if (!mma.empty())
        request.mma = mma.getValue();
      mlir::fmha::GpuKernelChoice choice = mlir::fmha::chooseGpuKernel(request);
      meta.blockM = blockM = choice.blockM;
      meta.blockN = blockN = choice.blockN;
      warpRows = choice.warpRows;
      qInShared = choice.qInShared;
      mma = choice.mma;
      if (choice.staged)
        vectorTiles = true, fromTensors = true;
      // The staged backward (three kernels, each gradient tile summed in
      // one workgroup's registers, no atomics) is deterministic whatever
      // --deterministic says.
      if (vectorTiles && bwd && !dqAtomics)
        meta.deterministic = true;
      if (dqAtomics && !vectorTiles)
        return error("--dq-atomics is the staged backward's: add "
                     "--vector-tiles");
      if (bulkAdd && (meta.target != rt::Target::Cuda || mma != "wgmma"))
        return error("--bulk-add needs warpgroup products (--target=cuda "
                     "--chip=sm_90a, --mma=wgmma or its default)");
      if ((sinks || varlen || pageSize) && !bwd && !vectorTiles)
        return error(std::string(sinks    ? "--sinks"
                                 : varlen ? "--varlen"
                                          : "--page-size") +
                     " on --target=" + target.getValue() +
                     " needs the staged forward, which the options given "
                     "leave out: add --vector-tiles");
    }
    // A paged cache's kv tiles lie within a page: block-n divides P (the
    // largest power of two that does, up to the chosen one, unless given);
    // static tiles (the staged GPU forward, the CPU's --static-tiles and
    // --vector-tiles) may instead span whole pages (P divides block-n), one
    // copy a page.
    if (pageSize) {
      const bool spans = (vectorTiles || staticTiles) && blockN > pageSize &&
                         blockN % pageSize == 0;
      if (blockN.getNumOccurrences() && pageSize % blockN != 0 && !spans)
        return error("--page-size (" + llvm::Twine(pageSize.getValue()) +
                     ") must be a multiple of --block-n (" +
                     llvm::Twine(blockN.getValue()) +
                     "): a kv tile lies within one page" +
                     (vectorTiles || staticTiles
                          ? " or spans whole pages (a multiple of it)"
                          : " (with --static-tiles or --vector-tiles it may "
                            "also span whole pages)"));
      if (!spans) {
        int64_t fit = blockN;
        while (pageSize % fit != 0)
          fit /= 2;
        meta.blockN = blockN = fit;
      }
    }
    if (meta.target != rt::Target::Cpu) {
      const std::string t = "--target=" + target.getValue();
      if (meta.dtype == rt::DType::F32)
        return error(t + " needs --dtype=f16 or bf16 (the matrix-core kernel "
                         "has 16-bit inputs)");
      // The builders take head dims 32, 64 and 128; the staged forward
      // (--vector-tiles, the default for other head dims) multiples of 16
      // up to 128, its tiles padded to the next power of two (the warpgroup
      // kernel's, to 256, checked above).
      const bool stagedWarpgroup = vectorTiles && mma == "wgmma";
      for (int64_t dim : {meta.d, meta.dv})
        if (!stagedWarpgroup &&
            (vectorTiles ? dim % 16 != 0 || dim > 128
                         : dim != 32 && dim != 64 && dim != 128))
          return error(
              t + " supports head dims " +
              (bwd ? (vectorTiles ? "multiples of 16 up to 128 in the "
                                    "staged backward"
                      : meta.target == rt::Target::Cuda && !sinks
                          ? "32, 64 and 128 in the backward (the "
                            "staged one, --vector-tiles: "
                            "multiples of 16 up to 128)"
                          : "32, 64 and 128 in the backward")
                   : "multiples of 16 up to 128 in the forward (32, 64 and "
                     "128 with the options given; sm_90a's default kernel "
                     "up to 256)") +
              ", got d=" + llvm::Twine(meta.d) + " dv=" + llvm::Twine(meta.dv));
      // The staged kernel's tiles have the padded head dims as columns:
      // they must fit the chip's registers as the builder's do (RDNA3: 64).
      if (vectorTiles && meta.target == rt::Target::Hip) {
        std::unique_ptr<mlir::fmha::GpuTarget> rocdl =
            mlir::fmha::createGpuTarget("rocdl");
        const int64_t columns = llvm::PowerOf2Ceil(std::max(meta.d, meta.dv));
        if (rocdl && rocdl->configure(meta.chip, mfma).empty() &&
            columns > rocdl->getMaxHeadDim())
          return error(t + " head dims d=" + llvm::Twine(meta.d) +
                       " dv=" + llvm::Twine(meta.dv) + " take tiles of " +
                       llvm::Twine(columns) +
                       " columns, more than the registers of a lane hold "
                       "on " +
                       meta.chip + " (at most " +
                       llvm::Twine(rocdl->getMaxHeadDim()) + ")");
      }
      if (warpRows != 16 && warpRows != 32)
        return error(t + " needs --warp-rows 16 or 32");
      if (blockM % warpRows != 0 || blockM > 512)
        return error(t + " needs --block-m a multiple of --warp-rows (" +
                     llvm::Twine(warpRows) + ") and at most 512");
      if (pageSize % 16 != 0)
        return error(t +
                     " needs --page-size a multiple of 16 (the matrix "
                     "instructions take keys 16 at a time), got " +
                     llvm::Twine(pageSize.getValue()));
      if (blockN % 16 != 0)
        return error(t + " needs --block-n a multiple of 16");
      meta.abi = bwd ? rt::kAbiGpuBwdV1 : rt::kAbiGpuFlatV1;
      // Provisional: the bundle takes the launch the lowering chose.
      meta.binaryFormat = meta.target == rt::Target::Hip
                              ? rt::BinaryFormat::Hsaco
                              : rt::BinaryFormat::Cubin;
      meta.blockThreads = 64;
    }
  } // !merge
  if (bundleVersion != 1 && bundleVersion != 2)
    return error("--bundle-version must be 1 or 2, got " +
                 llvm::Twine(bundleVersion.getValue()));
  if (strides != "any" && strides != "contiguous")
    return error("--strides must be 'any' or 'contiguous', got '" + strides +
                 "'");
  const bool attention = meta.kind == rt::KernelKind::Forward ||
                         meta.kind == rt::KernelKind::Backward;
  if (bundleVersion == 1 && !attention && meta.target != rt::Target::Cpu)
    return error("--bundle-version=1 holds the GPU merge and accumulate "
                 "kernels of fixed parameters (gpu-merge-v1, gpu-acc-v1) that "
                 "this fmha-compile no longer builds (its kernels come from "
                 "the staged pipeline, their parameters named in the "
                 "manifest); write version 2");
  if (bundleVersion == 1 && attention) {
    if (meta.target != rt::Target::Cpu)
      return error("--bundle-version=1 holds the flat-operand GPU kernels "
                   "(gpu-flat-v1, gpu-bwd-v1) that this fmha-compile no "
                   "longer builds (its kernels take strided operands); write "
                   "version 2");
    if (strides.getNumOccurrences() && strides == "any")
      return error("--bundle-version=1 takes contiguous operands only (its "
                   "ABI has no strides); drop --strides=any");
    // Their operands are named by a version-2 bundle's manifest only.
    if (meta.sinks || meta.varlen || meta.pageSize)
      return error(std::string("--bundle-version=1 has no operand for ") +
                   (meta.sinks    ? "--sinks"
                    : meta.varlen ? "--varlen"
                                  : "--page-size") +
                   " (a version-2 bundle's manifest names it); write "
                   "version 2");
    strides = "contiguous";
  }
  // --from-tensors keeps --strides: with 'any' (the default) the function
  // takes strided memrefs and runs the op on them as tensors.
  if (staticTiles && (!fromTensors || meta.target != rt::Target::Cpu ||
                      (meta.kind != rt::KernelKind::Forward &&
                       meta.kind != rt::KernelKind::Backward)))
    return error("--static-tiles tiles the CPU forward or backward on "
                 "tensors: give --from-tensors, --target=cpu and no --merge "
                 "or --accumulate");
  if (vectorTiles && meta.kind != rt::KernelKind::Forward &&
      meta.kind != rt::KernelKind::Backward)
    return error("--vector-tiles tiles the forward and the backward: give "
                 "no --merge or --accumulate");
  if (vectorTiles && bwd && meta.target == rt::Target::Cuda) {
    if (std::max(meta.d, meta.dv) > 128)
      return error("--bwd --vector-tiles takes head dims up to 128, got d=" +
                   llvm::Twine(meta.d) + " dv=" + llvm::Twine(meta.dv));
    if (mma == "wgmma" && (!mlir::fmha::stagedWarpgroupRows(blockM) ||
                           !mlir::fmha::stagedWarpgroupRows(blockN)))
      return error("--bwd --vector-tiles --mma=wgmma takes block-m and "
                   "block-n of 64 or 128 (a warpgroup each 64 rows of a "
                   "kernel's tiles: the dK/dV kernel's block-n, the dQ "
                   "kernel's block-m), got " +
                   llvm::Twine(blockM.getValue()) + " x " +
                   llvm::Twine(blockN.getValue()));
    if (mma != "wgmma" && blockM != blockN)
      return error("--bwd --vector-tiles with mma.sync takes block-m = "
                   "block-n (the dK/dV kernel's tiles have block-n rows, the "
                   "dQ kernel's block-m, over the same warps; --mma=wgmma "
                   "gives each kernel the warps of its rows), got " +
                   llvm::Twine(blockM.getValue()) + " and " +
                   llvm::Twine(blockN.getValue()));
  }
  if (vectorTiles) // The staged passes tile the op on tensors.
    fromTensors = true;
  if (deferPV && !vectorTiles)
    return error("--defer-pv reorders the staged forward's kv loop: give "
                 "--vector-tiles (and --from-tensors)");
  if (kvStages.getNumOccurrences()) {
    if (!vectorTiles || meta.target == rt::Target::Cpu)
      return error("--kv-stages is for the staged GPU forward: give "
                   "--vector-tiles and --target=cuda");
    if (kvStages != 1 && kvStages != 2)
      return error("--kv-stages must be 1 or 2, got " +
                   llvm::Twine(kvStages.getValue()));
  }
  if (cudaBinary != "auto" && cudaBinary != "cubin" && cudaBinary != "ptx")
    return error("unknown --cuda-binary '" + cudaBinary +
                 "' (expected auto, cubin or ptx)");
  if (cudaBinary.getNumOccurrences() && meta.target != rt::Target::Cuda)
    return error("--cuda-binary is for --target=cuda");
  if (emit != "bundle" && emit != "mlir" && emit != "llvm" && emit != "isa")
    return error("unknown --emit '" + emit +
                 "' (expected bundle, mlir, llvm or isa)");
  if (emit == "bundle" && output.empty())
    return error("-o FILE is required for --emit=bundle");
  std::string metaError = meta.validate();
  if (!metaError.empty())
    return error(metaError);

  return meta;
}

} // namespace fmha::compile

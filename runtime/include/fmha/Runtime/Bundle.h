//===- Bundle.h - FMHA bundle files: metadata and binary --------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A bundle is what `fmha-compile` writes and the runtime loads: one compiled
// binary, the problem signature it was compiled for and its launch manifest
// (Manifest.h: the kernels in order, their named and typed parameters,
// grids, workspaces).
//
//   FMHA-BUNDLE 2\n
//   key=value\n          one line per key, every key below exactly once
//   \n                   an empty line ends the header
//   manifest lines\n     Manifest.h's text form
//   \n                   an empty line ends the manifest
//   <binary_size bytes>  the kernel binary, nothing after it
//
// Keys: target=cpu|cuda|hip, chip (may be empty for cpu),
// kind=fwd|bwd|merge|acc,
// dtype=f32|f16|bf16, hq, hk, d, dv, mask (a MaskSpec string), scale (%.9g,
// 0 = 1/sqrt(d)), softcap (%.9g, 0 = none), block_m, block_n, kernel (the
// symbol name, or its stem: the manifest names every symbol),
// binary_format=elf-so|cubin|ptx|hsaco, binary_size. deterministic=0|1 is
// optional (absent means 0; the writer prints it after kind, for kind=bwd
// only; 1 is valid only with kind=bwd). sinks=0|1 is optional (absent means
// 0; the writer prints it after softcap when 1, which kinds fwd and bwd of
// version 2 only may be): the kernel takes learned sink logits, an operand
// `sinks` (float32 [Hq]) of the manifest. index_bits=32|64 is optional
// (absent means 64; the writer prints it after kernel when it is 32, which
// GPU targets only may be): the width of the kernels' index arithmetic and
// index parameters; the runtime refuses a 32-bit bundle any operand of more
// than kMaxIndex32Elements elements. The manifest's call is gpu for cuda and
// hip, ciface for cpu. The reader is strict: a missing, repeated or unknown
// key, a value that does not parse, a manifest that does not validate, or a
// binary of the wrong size is an error whose one-line message names the file
// and the problem. No byte sequence makes the reader crash.
//
// Versions: the runtime reads version 2 and, until the staged GPU pipeline
// is complete, version 1: the same header plus the keys abi (a fixed launch
// rule, below), block_threads and shared_bytes (GPU targets), without a
// manifest section; the reader gives it the manifest its abi amounts to
// (legacyManifest). Any other version is refused with a message naming it.
// A version-2 bundle's meta has abi = kAbiManifest.
//
// Version 1, for reference:
//
// kind=merge bundles hold the merge of two attention partials (fmha.merge,
// DESIGN.md section 1) over [B, H, S, Dv]: hq is H and dv is Dv; the
// attention-only keys are fixed (hk = hq, d = dv, mask = 0, scale = 0,
// softcap = 0) and the reader rejects other values. Target cpu runs them
// through memref-ciface-v1, cuda and hip through gpu-merge-v1 (Runtime.h).
//
// kind=acc bundles hold an accumulation (fmha.accumulate): acc += x over a
// flat count n given at run time, acc float32, x in the bundle's dtype. They
// have no attention shape: hq = hk = d = dv = 1, mask = 0, scale = 0,
// softcap = 0 (the reader rejects other values). Target cpu runs them
// through memref-ciface-v1, cuda and hip through gpu-acc-v1 (Runtime.h).
// Ring attention sums its gradient partials with them.
//
// GPU launch (target cuda or hip, abi gpu-flat-v1), for a problem
// B, Hq, Sq (Problem in Runtime.h):
//
//   grid  = (ceil(Sq / block_m), Hq, B)     one workgroup per (q tile, head,
//                                           batch); blockIdx.x = q tile
//   block = (block_threads, 1, 1)
//   dynamic shared memory = shared_bytes
//
// The runtime refuses (before launching anything) a grid over the device's
// limits: grid.x <= 2^31-1, grid.y = Hq <= 65535, grid.z = B <= 65535 (the
// limits the device reports), and on HIP grid.x * block_threads < 2^32.
// The kernel parameters of abi gpu-flat-v1 are listed in Runtime.h.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_BUNDLE_H
#define FMHA_RUNTIME_BUNDLE_H

#include "fmha/Runtime/Manifest.h"
#include "fmha/Support/MaskSpec.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fmha::rt {

enum class Target { Cpu, Cuda, Hip };
enum class KernelKind { Forward, Backward, Merge, Accumulate };
enum class DType { F32, F16, BF16 };
enum class BinaryFormat { ElfSo, Cubin, Ptx, Hsaco };

/// The spelling used in bundles and on the command line (`cpu`, `fwd`, `f16`,
/// `elf-so`, ...).
const char *toString(Target t);
const char *toString(KernelKind k);
const char *toString(DType t);
const char *toString(BinaryFormat f);

std::optional<Target> parseTarget(std::string_view s);
std::optional<KernelKind> parseKernelKind(std::string_view s);
std::optional<DType> parseDType(std::string_view s);
std::optional<BinaryFormat> parseBinaryFormat(std::string_view s);

/// Bytes per element of q, k, v and o (lse is always float32).
size_t dtypeSize(DType t);

/// The bundle format this runtime writes, and the oldest it reads.
inline constexpr int kBundleVersion = 2;
inline constexpr int kOldestBundleVersion = 1;

/// The abi of every version-2 bundle: its manifest says how to launch it.
inline constexpr const char *kAbiManifest = "manifest";

/// The host kernel argument ABI: MLIR's `_mlir_ciface_` wrappers over
/// memref descriptors (see Runtime.h). Valid for target cpu only.
inline constexpr const char *kAbiMemrefCifaceV1 = "memref-ciface-v1";

/// The GPU kernel argument ABI: a `gpu.func` kernel over 1-d memrefs as
/// MLIR's gpu-to-nvvm/rocdl lowering passes them, flattened into scalar
/// kernel parameters (see Runtime.h). Valid for targets cuda and hip only.
inline constexpr const char *kAbiGpuFlatV1 = "gpu-flat-v1";

/// The GPU backward ABI (kind=bwd, targets cuda and hip). The module holds
/// three kernels, `<kernel>_prep`, `<kernel>_dkdv` and `<kernel>_dq`,
/// launched in that order on one stream, each with block (block_threads, 1,
/// 1) and shared_bytes of dynamic workgroup memory, all taking the same
/// parameters: the flattened 1-d memref descriptors (allocated, aligned,
/// offset 0, size, stride 1; five 64-bit values each) of q, k, v, o, dO
/// (element type), lse (f32), dq, dk, dv (element type), dsum (f32,
/// B*Hq*Sq elements) and dqacc (f32, B*Hq*Sq*D elements in an order of
/// the kernels' own; size 0 when deterministic, and then never read),
/// followed by B, Sq, Sk (64-bit).
/// Grids: prep and dq (ceil(Sq / block_m), Hq, B), dkdv (ceil(Sk / block_n),
/// Hk, B). prep writes dsum = rowsum(dO * o) and zeroes dqacc; dkdv writes
/// dk and dv (and, unless deterministic, adds dS K into dqacc atomically);
/// dq writes dq (deterministic: recomputed per q tile over its kv tiles in a
/// fixed order; otherwise dqacc * scale rounded). The workspace is dsum,
/// then dqacc at the next 256-byte boundary. It must be ordinary device
/// memory of the launching device: coarse-grained and not remote (the
/// runtime's own workspace comes from the device allocator, hipMalloc /
/// cuMemAlloc; a caller's must be the same kind, not host, managed, or
/// fine-grained memory, nor a peer device's). hip bundles rely on it: their
/// dkdv kernel's atomic adds into dqacc are compiled for that memory
/// (!amdgpu.no.fine.grained.memory, !amdgpu.no.remote.memory: the native
/// global_atomic_add_f32), which is not atomic on fine-grained memory.
inline constexpr const char *kAbiGpuBwdV1 = "gpu-bwd-v1";

/// The GPU merge ABI (kind=merge, targets cuda and hip): one elementwise
/// kernel over o1, lse1, o2, lse2, o, lse (flat memref descriptors) and
/// rows = B*H*S, 32 threads a row, grid (ceil(rows / (block_threads / 32)),
/// 1, 1); the parameters are listed in Runtime.h.
inline constexpr const char *kAbiGpuMergeV1 = "gpu-merge-v1";

/// The GPU accumulate ABI (kind=acc, targets cuda and hip): one elementwise
/// kernel over x, acc (flat memref descriptors) and n, 4 elements a thread,
/// grid (ceil(n / (4 * block_threads)), 1, 1); the parameters are listed in
/// Runtime.h.
inline constexpr const char *kAbiGpuAccV1 = "gpu-acc-v1";

/// The largest block_threads a bundle may state (CUDA's and HIP's limit of
/// threads per block).
inline constexpr int64_t kMaxBlockThreads = 1024;

struct BundleMeta {
  Target target = Target::Cpu;
  std::string chip;
  KernelKind kind = KernelKind::Forward;
  DType dtype = DType::F32;
  int64_t hq = 0, hk = 0, d = 0, dv = 0;
  MaskSpec mask;
  /// 0 means the default 1/sqrt(d).
  float scale = 0.0f;
  /// 0 means no softcap.
  float softcap = 0.0f;
  /// Attention kernels: the kernel takes learned sink logits (an operand
  /// `sinks`, float32 [Hq]; DESIGN.md section 1).
  bool sinks = false;
  /// Forward kernels: a variable-length batch (operands `cu_seqlens_q`,
  /// `cu_seqlens_k`, int32 [B + 1]; q, k, v, o and lse of batch 1 holding
  /// every sequence back to back; DESIGN.md section 1).
  bool varlen = false;
  /// Forward kernels: the page size P of a paged K/V cache (operands
  /// `block_table` int32 [B, max_pages] and `seqlens_k` int32 [B]; k and v
  /// [pages, Hk, P, D]; DESIGN.md section 1); 0 when K/V are contiguous.
  int64_t pageSize = 0;
  int64_t blockM = 0, blockN = 0;
  /// GPU targets: threads per workgroup (1..1024) and bytes of dynamic
  /// shared memory per workgroup (>= 0). 0 and 0 for cpu.
  int64_t blockThreads = 0;
  int64_t sharedBytes = 0;
  /// The kernel symbol; the host ABI looks up `_mlir_ciface_<kernel>`.
  std::string kernel;
  std::string abi = kAbiMemrefCifaceV1;
  BinaryFormat binaryFormat = BinaryFormat::ElfSo;
  /// Backward kernels only: the kernel gives bit-identical dq, dk, dv run
  /// to run (no floating-point atomics whose order varies).
  bool deterministic = false;
  /// GPU targets: the bits of the kernels' index arithmetic and index
  /// parameters, 64 or 32. With 32 every element offset of a run must stay
  /// below kMaxIndex32Elements (the runtime refuses larger problems).
  int64_t indexBits = 64;
  /// How to launch the binary (version 2: from the bundle; version 1: the
  /// legacyManifest of the abi).
  Manifest manifest;
  /// The format version the bundle was read from (kBundleVersion for one
  /// built in memory).
  int formatVersion = kBundleVersion;

  /// The scale the kernel applies: `scale`, or 1/sqrt(d) when it is 0.
  float effectiveScale() const;

  /// Checks every field and their consistency (hq % hk == 0, positive dims,
  /// a valid mask, a C identifier as kernel, a binary format the target can
  /// run, an ABI the target takes, block_threads and shared_bytes in range
  /// for GPU targets, deterministic only with kind bwd, index_bits 64, or
  /// 32 on a GPU target; kind merge with
  /// hk = hq, d = dv, mask 0, scale 0 and softcap 0; kind acc with hq = hk
  /// = d = dv = 1, mask 0, scale 0 and softcap 0). Returns an empty
  /// string when valid, else the message (without a file name).
  std::string validate() const;
};

/// The manifest a version-1 bundle's abi amounts to (LegacyManifest.cpp):
/// its operands, workspaces and kernels with the grids and parameters that
/// Bundle.h and Runtime.h document for gpu-flat-v1, gpu-bwd-v1,
/// gpu-merge-v1, gpu-acc-v1 and memref-ciface-v1. `meta` must validate.
Manifest legacyManifest(const BundleMeta &meta);

/// The largest element count of any buffer a bundle with index_bits=32 may
/// address: 2^31 less a margin of 2^20 for the tile arithmetic that runs
/// past a buffer's last row before it is clamped.
constexpr int64_t kMaxIndex32Elements = (int64_t(1) << 31) - (int64_t(1) << 20);

/// The bundle as bytes, in format `version` (2, or 1 for a meta of a
/// version-1 abi, for tests of the version-1 reader). A version-2 bundle
/// of a meta without a manifest (no kernels) and a version-1 abi gets the
/// legacyManifest of that abi. Fails (returns false, sets *err) when
/// `meta` does not validate or the binary is empty.
bool serializeBundle(const BundleMeta &meta, std::string_view binary,
                     std::string *out, std::string *err,
                     int version = kBundleVersion);

/// Writes a bundle file. `err` gets "bundle 'PATH': ..." on failure.
bool writeBundle(const std::string &path, const BundleMeta &meta,
                 const std::string &binary, std::string *err,
                 int version = kBundleVersion);

/// Parses bundle bytes; `name` is what messages call the bundle (a path, or
/// "<memory>"). On failure returns false and sets *err to one line:
/// "bundle 'NAME': PROBLEM".
bool parseBundle(std::string_view bytes, const std::string &name,
                 BundleMeta *meta, std::string *binary, std::string *err);

/// Reads and parses a bundle file.
bool readBundle(const std::string &path, BundleMeta *meta, std::string *binary,
                std::string *err);

} // namespace fmha::rt

#endif // FMHA_RUNTIME_BUNDLE_H

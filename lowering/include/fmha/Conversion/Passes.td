//===- Passes.td - FMHA lowering passes --------------------*- tablegen -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_CONVERSION_PASSES_TD
#define FMHA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FmhaLowerToCpuPass : Pass<"fmha-lower-to-cpu"> {
  let summary = "Lower the fmha tile ops to loops for the host CPU";
  let description = [{
    Rewrites `fmha.tile_init`, `tile_qk`, `tile_softmax`, `tile_pv` and
    `tile_finalize` (and the backward tile ops) into scf loops of
    arith/math/memref ops written so that
    LLVM vectorizes the inner loops (reductions carry `reassoc`), and replaces
    exp/log/tanh by polynomial approximations that vectorize too. The result
    lowers to the LLVM dialect with the upstream conversions
    (`fmha-to-cpu-pipeline` runs them all).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect"
  ];
}

def FmhaCpuParallelForPass
    : Pass<"fmha-cpu-parallel-for", "::mlir::ModuleOp"> {
  let summary = "Run the outermost scf.parallel loops on the runtime's threads";
  let description = [{
    Each outermost `scf.parallel` without results (the (batch, head, tile)
    loops of `--fmha-tile-attention`) becomes a function `@<func>_parallel_<n>(ctx: !llvm.ptr,
    lo: i64, hi: i64)` that runs the iterations [lo, hi) of the loop
    flattened (the last dimension fastest), and a call in its place:
    through the module's hook `@fmha_parallel_for` (an exported
    `!llvm.ptr` global, `void (*)(int64_t n, void (*body)(void *, int64_t,
    int64_t), void *ctx)`) when the loader has set it, else directly with
    [0, n) on the calling thread. The values the loop reads from above are
    passed in a stack struct (memrefs as their LLVM descriptors, index as
    i64); constants are cloned, and the scratch allocas of
    `--fmha-lower-to-cpu` (`fmha.scratch`) are allocated in the function,
    one set per thread. The runtime's host backend sets the hook to its
    thread pool (`FMHA_NUM_THREADS`, `fmhaSetHostThreads`).
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::func::FuncDialect",
    "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"
  ];
}

def FmhaUnrollVectorTilesPass : Pass<"fmha-unroll-vector-tiles"> {
  let summary = "The vector tiles' contractions and reductions unrolled, "
                "for vector units without matrix instructions";
  let description = [{
    What runs `--fmha-vectorize-tiles`'s form without distributing it: the
    host CPU, and a GPU kernel before the distribution to lanes (one thread
    a workgroup). The operands of a contraction with f16/bf16 operands and
    an f32 accumulator are extended to f32 first (plain vector units have
    no arithmetic on narrow vectors; the matrix instructions take the narrow
    operands), truncations to bf16 vectors become integer arithmetic, then
    S = Q K^T (both operands' rows along the reduced head dim) unrolls into
    dot products of rows, O += P V into outer products, and the row
    reductions into reductions of rows. `fmha-to-cpu-pipeline{vector-tiles=1}`
    and the GPU pipelines with `vector-tiles=1` run it before the upstream
    vector lowerings.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::vector::VectorDialect"
  ];
}

def FmhaLowerToGpuPass : Pass<"fmha-lower-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower fmha.attention to a GPU flash-attention kernel";
  let description = [{
    Each `fmha.attention` on memrefs becomes a `gpu.func` kernel in
    `gpu.module @fmha_kernels` and a `gpu.launch_func` on the host: one
    workgroup per (q-tile, q-head, batch), one warp per row block of the
    q tile, Q in registers, S = Q K^T and O += P V on the target's matrix
    instruction with f32 accumulators, online softmax in base 2 with the scale
    folded in, the mask-derived kv loops of `--fmha-tile-attention` (sink loop,
    window loop, fully hidden tiles skipped, element mask only on edge tiles).
    The target (`nvvm`) supplies fragment layouts, the matrix instruction and
    shuffles. Kernel ABI: (q, k, v, o: memref<?xT>, lse: memref<?xf32>, B, Sq,
    Sk: index) over contiguous BHSD buffers; grid (ceil(Sq / block-m), Hq, B);
    block (block-m / warp-rows warps).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::amdgpu::AMDGPUDialect"
  ];
  let options = [
    Option<"target", "target", "std::string", "\"nvvm\"",
           "GPU target: nvvm or rocdl">,
    Option<"chip", "chip", "std::string", "\"sm_90\"", "Target chip">,
    Option<"blockM", "block-m", "int64_t", "64",
           "Query rows per workgroup (16 per warp)">,
    Option<"blockN", "block-n", "int64_t", "64", "Keys per kv tile">,
    Option<"warpRows", "warp-rows", "int64_t", "16",
           "Query rows per warp (a multiple of the MMA's M): the K/V "
           "fragments a warp reads feed warp-rows / M products">,
    Option<"qInShared", "q-in-shared", "bool", "false",
           "fmha.attention: keep the Q tile in workgroup memory and read its "
           "fragments per kv tile instead of holding them in registers">,
    Option<"rescale", "rescale", "std::string", "\"\"",
           "fmha.attention: when the online softmax rescales O; lazy: only "
           "when a row's max grows by more than a factor 2^8, eager: every kv "
           "tile; empty: lazy for the warp-level MMA on nvvm where Dv >= 2 x "
           "block-n (the O rescale dominates the per-key work), eager "
           "otherwise">,
    Option<"kernelName", "kernel-name", "std::string", "\"\"",
           "Name of the kernel (default: <function>_kernel)">,
    Option<"mfma", "mfma", "int64_t", "0",
           "rocdl on CDNA: the MFMA shape, 16 (16x16x16) or 32 (32x32x8, "
           "needs warp-rows a multiple of 32); 0: the target's default "
           "(16; RDNA chips have only WMMA 16x16x16)">,
    Option<"mma", "mma", "std::string", "\"\"",
           "The matrix instruction; empty: the target's warp-level one; "
           "wgmma: Hopper warpgroup MMA (nvvm, sm_90a, f16 or bf16, D = Dv "
           "in {64, 128}, warp-rows 16, operands read from workgroup memory "
           "by descriptors); fmha.attention: block-m 64 to 256 (a warpgroup "
           "per 64 rows); fmha.attention_bwd: its dkdv kernel, block-m = "
           "block-n = 128">,
    Option<"indexBitwidth", "index-bitwidth", "unsigned", "64",
           "The index width the kernels will be lowered at (32 or 64; the "
           "pipelines pass theirs): their index arithmetic is written to "
           "stay in range at either, given the runtime's limits">,
    Option<"tuned", "tuned", "bool", "false",
           "Per op, the chip's measured defaults (fmha/Conversion/"
           "KernelDefaults.h, what fmha-compile gives) for block-m, block-n, "
           "warp-rows, q-in-shared and mma, except those named in `fixed`; "
           "the named pipelines set it">,
    ListOption<"fixed", "fixed", "std::string",
               "With tuned: the options given explicitly (block-m, block-n, "
               "warp-rows, q-in-shared, mma)">
  ];
}

def FmhaMapParallelToGpuPass
    : Pass<"fmha-map-parallel-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Map the outermost scf.parallel loops of the host functions "
                "to GPU kernels";
  let description = [{
    Each outermost `scf.parallel` without results in a `func.func` (the
    loops of `--fmha-tile-elementwise`) becomes a `gpu.func` in
    `gpu.module @fmha_kernels` and a `gpu.launch_func` in its place: the
    values the loop reads from above are the kernel's operands (constants
    are cloned in), the grid is computed from the loop's trip counts.
    Two forms, each a mapping of the iterations to threads:

    * Element: a body without an inner `scf.parallel`; each thread of a
      workgroup of `block-threads` runs `thread-elements` iterations of the
      flattened loop (the last dimension fastest), `block-threads` apart.
    * Row: a body with one inner 1-D `scf.parallel`; each iteration of the
      outer loop (a row) belongs to `row-threads` consecutive threads, which
      run the ops before the inner loop redundantly (they may read memory,
      not write it), the inner loop's iterations `row-threads` apart (lane l
      takes l, l + row-threads, ...), then, after a workgroup barrier that
      follows every thread's reads, the ops after it on the row's first
      thread alone (their writes may then alias what the row read: the
      merge in place). Threads past the last row read row 0 and write
      nothing.
    * Workgroup (`workgroup=1`): each iteration of the flattened loop is a
      workgroup of `block-threads` threads, every one of which runs the
      whole body; the body's vector tiles are then spread over the threads
      by `--fmha-distribute-tiles` (the staged attention forward). With
      `warp-size` set, a loop whose vector tiles are anchored in register
      layouts (`fmha.to_layout`) gets the most warps those layouts name
      times `warp-size` threads instead (each kernel of the staged
      backward the warps of its own rows).

    A loop it cannot map gets a diagnostic naming what is supported.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"
  ];
  let options = [
    Option<"kernelName", "kernel-name", "std::string", "\"\"",
           "Name of the kernel (default: <function>_kernel)">,
    Option<"blockThreads", "block-threads", "int64_t", "256",
           "Threads of a workgroup">,
    Option<"rowThreads", "row-threads", "int64_t", "32",
           "Row form: threads of a row (divides block-threads)">,
    Option<"threadElements", "thread-elements", "int64_t", "1",
           "Element form: iterations of a thread">,
    Option<"workgroup", "workgroup", "bool", "false",
           "Workgroup form: each iteration a workgroup whose threads all run "
           "its body (vector tiles that --fmha-distribute-tiles then spreads "
           "over them)">,
    Option<"warpSize", "warp-size", "int64_t", "0",
           "Workgroup form: when nonzero, a loop's workgroup is the warps "
           "of its tiles' register layouts, of this many threads each">
  ];
}

def FmhaGpuMathToTargetPass : Pass<"fmha-gpu-math-to-target"> {
  let summary = "Lower f32 exp and log in GPU kernels to the target's "
                "instructions";
  let description = [{
    In each `gpu.func`, `math.exp(x)` on f32 becomes the target's 2^x of
    x log2(e) and `math.log(x)` the target's log2(x) times ln(2)
    (`GpuTarget::emitExp2`/`emitLog2`: `ex2.approx.ftz.f32` and
    `lg2.approx.f32` on nvvm, `math.exp2`/`math.log2` and so `v_exp_f32`,
    `v_log_f32` on rocdl): no math library in the kernels. On a 1-D vector
    of f32 (a thread's registers of a distributed tile), element by
    element.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect", "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"target", "target", "std::string", "\"nvvm\"",
           "GPU target: nvvm or rocdl">
  ];
}

def FmhaDistributeTilesPass : Pass<"fmha-distribute-tiles"> {
  let summary = "Distribute the vector tiles of GPU kernels to the registers "
                "of each thread, by their layouts";
  let description = [{
    In each `gpu.func`, every vector tile with a register layout (anchored
    by `fmha.to_layout`, as `--fmha-assign-layouts` and
    `--fmha-vectorize-tiles` leave them, or following from an anchor) becomes
    the 1-D vector of the registers one thread holds, thread = warp id x
    warp size + lane id on `gpu.thread_id x`: reads and writes at the
    coordinates the layout gives each register (runs adjacent in a row as
    one transfer; replicas write once), `vector.contract` as the target's
    matrix instruction over the fragments (A, B and C must be its tilings),
    `vector.multi_reduction` along columns over registers, then xor shuffles
    across the lanes that split the columns, broadcasts of rows register by
    register, elementwise ops on the registers, `fmha.to_layout` as a
    register permutation (or nothing), loops and branches carrying the
    registers. Values made of constants and index steps alone (the mask's
    indices) are built in the layout of each use. A contraction whose B is
    read from a workgroup buffer in the 128-byte swizzle (`fmha.swizzle`,
    `--fmha-stage-kv{swizzle=128}`) is a warpgroup product on chips that
    have them (sm_90a `wgmma.mma_async` over descriptors; A from such a
    buffer or from registers; C in warps of 16 rows), and the copies into
    such buffers write each 16-byte chunk at its swizzled place. What it
    cannot distribute gets a diagnostic naming the op.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::ROCDL::ROCDLDialect", "::mlir::amdgpu::AMDGPUDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"target", "target", "std::string", "\"nvvm\"",
           "GPU target: nvvm or rocdl">,
    Option<"chip", "chip", "std::string", "\"sm_80\"",
           "The chip (the target's matrix instruction follows it)">,
    Option<"mfma", "mfma", "int64_t", "0",
           "ROCDL: the MFMA size (16 or 32; 0: the chip's default)">,
    Option<"indexBitwidth", "index-bitwidth", "unsigned", "64",
           "The width of index in the kernel's lowering to LLVM (32 or 64): "
           "global pointers taken from memref descriptors read fields that "
           "wide">
  ];
}

def FmhaStageQPass : Pass<"fmha-stage-q"> {
  let summary = "Copy the A operands of a kernel's loops through workgroup "
                "memory";
  let description = [{
    In each `gpu.func` of vector tiles (before `--fmha-distribute-tiles`),
    a 2-D tile read from global memory before a loop only to be the A
    operand of products inside loops (the staged forward's Q tile) is
    copied once by the whole workgroup (`fmha.copy_async` in
    `fmha::copyLayout`, then `fmha.copy_wait` and a barrier) into a
    workgroup buffer (rows padded by 16 bytes), and each product reads it
    back from there right before it, where the distribution folds the read
    into the product (a k step's fragments at a time, by the target's matrix
    load): the tile's registers are not held across the loop.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"target", "target", "std::string", "\"nvvm\"",
           "GPU target: nvvm or rocdl">,
    Option<"chip", "chip", "std::string", "\"sm_80\"",
           "The chip (the target's warp size follows it)">,
    Option<"mfma", "mfma", "int64_t", "0",
           "ROCDL: the MFMA size (16 or 32; 0: the chip's default)">,
    Option<"swizzle", "swizzle", "int64_t", "0",
           "The buffers' layout: rows padded by 16 bytes (0), or the 128-byte "
           "swizzle warpgroup products read (128; fmha.swizzle on the "
           "attribution)">
  ];
}

def FmhaBulkAddPass : Pass<"fmha-bulk-add"> {
  let summary = "Add a tile into global memory by one bulk add of a "
                "workgroup buffer instead of atomics a register";
  let description = [{
    In each `gpu.func` of vector tiles (before `--fmha-distribute-tiles`):
    each `fmha.atomic_add` of a vector tile into a contiguous buffer of
    global memory (the backward's dQ part into its tile of the dq_accum
    workspace) becomes, after an `fmha.add_wait {read}` (the buffer's last
    bulk add has read it), a `vector.transfer_write` of the tile into a
    workgroup buffer and an `fmha.add_async` of that buffer into the
    destination, which the distribution makes one bulk reduction on NVIDIA
    (`cp.reduce.async.bulk ... .add.f32` by one thread after a proxy fence
    and a barrier: the tensor memory accelerator adds while the warps go
    on); each `gpu.return` first waits for the adds (`fmha.add_wait`). One
    buffer serves the adds of one shape in a function.
  }];
  let options = [
    Option<"workgroupSpace", "workgroup-space", "unsigned", /*default=*/"3",
           "the address space of the workgroup buffers">
  ];
  let dependentDialects = [
    "::mlir::fmha::FmhaDialect", "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect", "::mlir::vector::VectorDialect"
  ];
}

def FmhaStageTransposedAPass : Pass<"fmha-stage-transposed-a"> {
  let summary = "Write a transposed A operand of a warpgroup product into "
                "workgroup memory, for the product to read by descriptor";
  let description = [{
    In each `gpu.func` of vector tiles (after `--fmha-stage-q`, before
    `--fmha-distribute-tiles`): a product that reads its A transposed (lhs
    map (k, i); the backward's atomic dQ += dS K on dS^T) from registers
    converted into the transpose of A's layout and narrowed, and its B from
    a buffer in the 128-byte swizzle (a warpgroup product), takes that A
    from a workgroup buffer of its own in the same swizzle instead: the
    tile, narrowed in the layout it has, is written there between two
    barriers and read back by the product, which the distribution makes a
    warpgroup product reading A M-major by descriptor. What a generic
    conversion did through workgroup memory in f32 (stores, a barrier, a
    load a register) becomes one 16-bit store a pair of registers.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FmhaStageKVPass : Pass<"fmha-stage-kv"> {
  let summary = "Copy the B operands of a kernel's loop iterations through "
                "workgroup memory";
  let description = [{
    In each `gpu.func` of vector tiles (before `--fmha-distribute-tiles`),
    a 2-D tile that a loop iteration reads from global memory only to be
    the B operand of its products (the k and v tiles of the staged forward's
    kv loop, every warp's operand) is copied once by the whole workgroup in
    16-byte pieces (`fmha.copy_async` in `fmha::copyLayout`; rows past the
    source zero) into a workgroup buffer (a workgroup attribution of the
    kernel, rows padded by 16 bytes against bank conflicts) after a barrier,
    then `fmha.copy_wait` and a barrier (one of each for the tiles of a
    block), and the products read it from there. The block size comes
    from the kernel's `known_block_size`; the warp size from the target.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"target", "target", "std::string", "\"nvvm\"",
           "GPU target: nvvm or rocdl">,
    Option<"chip", "chip", "std::string", "\"sm_80\"",
           "The chip (the target's warp size follows it)">,
    Option<"mfma", "mfma", "int64_t", "0",
           "ROCDL: the MFMA size (16 or 32; 0: the chip's default)">,
    Option<"swizzle", "swizzle", "int64_t", "0",
           "The buffers' layout: rows padded by 16 bytes (0), or the 128-byte "
           "swizzle warpgroup products read (128; fmha.swizzle on the "
           "attribution)">
  ];
}

def FmhaPipelineCopiesPass : Pass<"fmha-pipeline-copies"> {
  let summary = "Copy a kernel loop's next tiles while it computes on these";
  let description = [{
    In each `gpu.func`, a `scf.for` whose body starts its copies into
    workgroup buffers after a barrier and waits for them before a second
    barrier (`gpu.barrier`, `fmha.copy_async`s, `fmha.copy_wait pending(0)`,
    `gpu.barrier`: the form of `--fmha-stage-kv`) is double-buffered: each
    buffer gets a leading dim of two stages, the first iteration's copies
    move before the loop (after a barrier), and each iteration waits for its
    own copies, passes one barrier (its tiles visible, the last iteration's
    reads of the other stage done), then starts the next iteration's copies
    into the other stage before its products. The copies' operands are
    recomputed for the next iteration from the induction variable; a loop
    whose copies depend on values it carries, or whose buffers are used
    elsewhere, is left as it is. `stages=1` leaves every loop as it is.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "Stages of each buffer: 2 (double-buffered) or 1 (as it is)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::fmha::FmhaDialect"
  ];
}

def FmhaWorkgroupToDynamicSharedPass
    : Pass<"fmha-workgroup-to-dynamic-shared", "::mlir::ModuleOp"> {
  let summary = "Place the workgroup buffers of kernels in dynamic workgroup "
                "memory";
  let description = [{
    Static workgroup memory (the workgroup attributions of a `gpu.func`) is
    capped at 48 KB a kernel on NVIDIA GPUs; dynamic workgroup memory takes
    what the chip has (227 KB on the H100 and H200) and its size is part of
    the launch. For each kernel of the module's `gpu.module`s with workgroup
    attributions: each becomes a `memref.view` of `gpu.dynamic_shared_memory`
    at an offset aligned to 128 bytes (1024 for a buffer in the 128-byte
    swizzle, `fmha.swizzle`, with every view then past the first 1024-byte
    boundary of the dynamic memory, found at run time, and 1024 bytes of
    slack in the size; a `memref.memory_space_cast` where the
    attribution names the workgroup address space by number; two buffers
    share bytes where every use of one comes before every use of the other
    with a `gpu.barrier` of the kernel's body between them, as the buffers
    of kv loops that run one after the other), the
    attributions are dropped, and every `gpu.launch_func` of the kernel in
    the module launches with the total as its dynamic workgroup memory size.
    A launch that already sets one other than 0, or an attribution of a shape
    that is not
    static with an identity layout, is an error naming it.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def FmhaOperandAlignmentPass
    : Pass<"fmha-operand-alignment", "::mlir::ModuleOp"> {
  let summary = "Record on each launch the row alignment its kernel's vector "
                "accesses need of the operands";
  let description = [{
    A kernel that reads or writes an operand's rows in vectors (16-byte
    asynchronous copies, vector loads and stores, transfers) needs every row
    start of that operand at a multiple of the vector's bytes:
    `fmha-vector-to-llvm` gives each access its vector's alignment. For each
    kernel of the module's `gpu.module`s this pass finds, per memref
    argument, the largest vector access in bytes whose memref is the
    argument or a view of it (`nvgpu.device_async_copy`'s source,
    `vector.load`, `vector.store`, `vector.transfer_read`,
    `vector.transfer_write`, `vector.maskedload`, `vector.maskedstore`), and
    sets `fmha.operand_align` on each `gpu.launch_func` of the kernel: per
    kernel operand those bytes, 0 where no access is wider than an element
    (the larger value where the launch already names one). The launch
    manifest carries it (`align`): the runtime refuses an operand whose
    address or strides break it, naming the operand.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def FmhaVectorToLLVMPass : Pass<"fmha-vector-to-llvm"> {
  let summary = "Lower the kernels' vector ops to LLVM at a chosen index "
                "bitwidth, loads and stores at their vector's alignment";
  let description = [{
    Upstream's `convert-vector-to-llvm` lowers with 64-bit indices, so its
    output cannot meet a `convert-gpu-to-nvvm{index-bitwidth=32}` lowering
    of the rest of the kernel. This pass lowers the vector ops that remain
    after `--fmha-distribute-tiles` and `convert-vector-to-scf` (the
    register vectors' broadcasts, shape casts, extracts and inserts, 1-D
    transfers, loads and stores) first to simpler vector ops, then to the
    LLVM dialect with a type converter whose index type has
    `index-bitwidth` bits (32 or 64); vector loads and stores take their
    vector's alignment (every run of a distributed tile starts at a
    multiple of its size, so a 16-byte access stays one access).
  }];
  let options = [
    Option<"indexBitwidth", "index-bitwidth", "unsigned", /*default=*/"64",
           "Bits of the index type: 32 or 64">,
  ];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def FmhaNVGPUToNVVMPass : Pass<"fmha-nvgpu-to-nvvm"> {
  let summary = "Lower the nvgpu ops of the kernels to NVVM at a chosen "
                "index bitwidth";
  let description = [{
    Rewrites the nvgpu ops the fmha kernels use (`nvgpu.device_async_copy`,
    `device_async_create_group`, `device_async_wait`, `ldmatrix`,
    `mma.sync`) into NVVM and LLVM ops with upstream's patterns, but with an
    index type of `index-bitwidth` bits. Upstream's `convert-nvgpu-to-nvvm`
    always takes 64-bit indices, so its output cannot meet a
    `convert-gpu-to-nvvm{index-bitwidth=32}` lowering of the rest of the
    kernel; `fmha-to-nvvm-pipeline{index-bitwidth=32}` runs this pass
    instead. Async-copy tokens become i32 values that nothing reads.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let options = [
    Option<"indexBitwidth", "index-bitwidth", "unsigned", "64",
           "Bits of the index type (32 or 64)">
  ];
}

#endif // FMHA_CONVERSION_PASSES_TD

//===- Passes.td - FMHA transformation passes --------------*- tablegen -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TRANSFORMS_PASSES_TD
#define FMHA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FmhaTileAttentionPass : Pass<"fmha-tile-attention"> {
  let summary = "Tile fmha.attention into the flash-attention loop nest";
  let description = [{
    Rewrites each `fmha.attention` into a parallel loop over (batch, q-head,
    q-tile) whose body runs the online-softmax tile ops over the kv tiles the
    mask leaves visible: per q tile, the first and last kv tile holding a
    visible key bound the main loop, sink tiles before it get a leading loop,
    only tiles that cross a mask edge apply an element mask, and fully hidden
    tiles are never visited. Query head h reads kv head h / (Hq / Hk) straight
    from K/V (no copies). Dynamic Sq/Sk give remainder tiles.
    On tensors the forward's tiled form is on values: an `scf.forall` over
    the q tiles with o and lse as shared outs, the kv loops carrying the
    running max, sum and accumulator, each tile op returning its updated
    outs (One-Shot Bufferize gives the form on memrefs, in place). The
    backward on tensors is bridged with `bufferization.to_buffer`/`to_tensor`
    into fresh buffers; with `backward-on-tensors=false` it is left for a run
    after bufferization (what fmha-to-cpu-pipeline does: its gradients are
    then written into the outs' buffers).
    With `static-tiles` (the GPU's register tiles) every tile of the
    forward on tensors has a static shape: the q, k and v tiles are their
    slices padded with zeros (`tensor.pad`) to block-m or block-n rows, the
    running max, sum, accumulator and scores start as `tensor.empty`, the
    o and lse tiles are written block-m rows and sliced back to the rows in
    range; a kv tile that reaches past Sk gets the element mask (which
    hides keys at or past Sk).
    With `longest-first`, under a mask with a right bound (causal, windows)
    the forward's q-tile index runs backwards (iteration i takes q tile
    ceil(Sq / block-m) - 1 - i): a GPU grid, dispatched in iteration order,
    starts with the tiles that see the most keys and ends on the light ones.
  }];
  let dependentDialects = [
    "::mlir::fmha::FmhaDialect", "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
  let options = [
    Option<"blockM", "block-m", "int64_t", "64",
           "Query rows per tile (one workgroup / loop iteration)">,
    Option<"blockN", "block-n", "int64_t", "64",
           "Keys per kv tile">,
    Option<"backwardOnTensors", "backward-on-tensors", "bool", "true",
           "Tile fmha.attention_bwd on tensors too (bridged through fresh "
           "buffers); false leaves it untouched">,
    Option<"staticTiles", "static-tiles", "bool", "false",
           "Tiles of static shape, padded at the edges of Sq and Sk (the "
           "forward on tensors)">,
    Option<"longestFirst", "longest-first", "bool", "false",
           "The forward's q tiles in reverse order under a mask with a "
           "right bound (causal): the tiles that see the most keys first, "
           "so that a GPU grid ends on light tiles">
  ];
}

def FmhaAssignLayoutsPass : Pass<"fmha-assign-layouts"> {
  let summary = "Type the forward's register tiles with their fragment "
                "layouts";
  let description = [{
    The GPU tile level's first step: each static tile of the forward on
    values (`--fmha-tile-attention{static-tiles=1}`) gets the `#fmha.layout`
    encoding of the register fragments that hold it, derived from a matrix
    instruction's fragments (support/MmaInstruction.h) tiled over a warp's
    band of rows and over `warps` warps (fmha::tileFragments): the scores,
    the accumulator and o in the layout of the instruction's C; q and p in
    that of A (S = Q K^T and O += P V); k as the transposed B of S and v as
    the B of O, every warp holding the whole tile; the running max, sum and
    lse in the row slice of C (fmha::rowSlice). `tensor.empty` outs are
    built in their layout, the kv loops and the branches carry the typed
    tiles, and `fmha.convert_layout` marks each place a tile changes layout:
    where q, k and v enter registers, where o and lse leave them, and where
    p, an accumulator of S, becomes an A operand of PV in a layout of its
    own (AMD's MFMA and WMMA; mma.sync's C of S is its A of PV, no
    conversion). Tiles whose shape the instruction does not divide get a
    diagnostic naming the op and the sizes.
  }];
  let dependentDialects = [
    "::mlir::fmha::FmhaDialect", "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"mma", "mma", "std::string", "\"mma.sync\"",
           "The matrix instruction: mma.sync (NVIDIA m16n8k16), mfma16 "
           "(AMD 16x16x16), mfma32 (AMD 32x32x8), wmma-rdna3 or wmma-rdna4 "
           "(AMD 16x16x16)">,
    Option<"warps", "warps", "int64_t", "4",
           "Warps (waves) of a workgroup, each a band of the q tile's rows">,
    Option<"warpRows", "warp-rows", "int64_t", "0",
           "When nonzero, the tiles of a loop marked fmha.loop_rows (the "
           "backward's Dsum, dK/dV and dQ loops) are held by loop_rows / "
           "warp-rows warps instead of `warps`: each kernel of the backward "
           "gets the warps of its own rows (block-n in the dK/dV loop, "
           "block-m in the others)">
  ];
}

def FmhaRegisterOrderWorkspacePass : Pass<"fmha-register-order-workspace"> {
  let summary = "Keep the backward's dQ accumulator in its adds' register "
                "order";
  let description = [{
    After `--fmha-assign-layouts`, on the values form of the backward with
    atomic dQ: the workspace `dq_accum` (a `memref.alloc` with
    `fmha.workspace`) holds each of its bm x D tiles in the register order
    of the layout L its atomic adds' tiles are held in (before their
    conversion to the line layout): allocated as [B, H, q tiles, R x W,
    lanes] (the same bytes),
    each add is `fmha.pack_tile {order = L}` of the tile into its packed
    tile (one line of consecutive lanes a register of a warp, no
    conversion), and each read of a tile (an extract_slice converted to a
    layout X) reads the packed tile in `fmha::toRegisterOrder(L, X)` and
    `fmha.unpack_tile`s it, so that the reader's threads hold what they
    held before; the zeroing of a tile stores the packed zeros. A
    workspace used
    otherwise, or added to in different layouts, stays row-major.
  }];
  let dependentDialects = [
    "::mlir::fmha::FmhaDialect", "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect"
  ];
}

def FmhaVectorizeTilesPass : Pass<"fmha-vectorize-tiles"> {
  let summary = "The forward's static tiles as vectors, its tile ops as "
                "generic vector ops";
  let description = [{
    The GPU tile level's second step, before bufferization: each static
    tile of the forward on values (`--fmha-tile-attention{static-tiles=1}`,
    after `--fmha-assign-layouts` or not) becomes a `vector` of its shape.
    A q, k or v tile (a `tensor.pad` of a slice of the operand) is a
    `vector.transfer_read` of the slice, out of bounds along its rows (the
    rows past them read 0);
    `tile_init` gives splats; `tile_qk` a `vector.contract` over the head
    dim, the scale and softcap, and where it is masked a select on
    `visible(r0 + i, c0 + j)` and `c0 + j < Sk` computed on index vectors;
    `tile_softmax` two `vector.multi_reduction`s along the columns (the row
    max, accumulated into the running max; the row sum, into l times the
    rescale) and `exp`; `tile_pv` a `vector.contract` of p, in v's element
    type, and v into the accumulator; `tile_finalize` acc / l and m + log l
    (0 and -inf for rows that saw no key). The o and lse tiles are written
    by a `vector.transfer_write` into the slice of the shared out the
    `tensor.parallel_insert_slice` fills, out of bounds along its rows (the
    rows past Sq are not written). Row vectors
    broadcast over columns through a `vector.shape_cast` to rows x 1. A
    tile that had a `#fmha.layout` is anchored in it by `fmha.to_layout`
    where its vector is made (and where `fmha.convert_layout` stood). The
    kv loops and branches carry the vectors; vectors pass through One-Shot
    Bufferize untouched.
  }];
  let dependentDialects = [
    "::mlir::fmha::FmhaDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FmhaTileElementwisePass : Pass<"fmha-tile-elementwise"> {
  let summary = "Rewrite fmha.merge, fmha.accumulate and fmha.sinks_grad "
                "into parallel loops";
  let description = [{
    The loop form of the elementwise ops, shared by every target (the CPU
    runs the loops on its threads, `--fmha-map-parallel-to-gpu` maps them to
    a grid). `fmha.merge` on memrefs becomes an `scf.parallel` over the
    (batch, head, query) rows that reads both lse, computes the weights
    (DESIGN.md section 1, merge: an empty partial, lse = -inf, weighs 0; two
    empty ones give o = 0 and lse = -inf), runs an inner `scf.parallel` over
    the Dv columns of o and then writes the row's lse. `fmha.accumulate`
    becomes one `scf.parallel` over the elements (acc += x, in f32, not
    reassociated). With every operand contiguous (identity layout) the loops
    run over flat views (`memref.collapse_shape`), rows times Dv; otherwise
    over the operands' own indices. Arithmetic is f32: loads widen, stores
    round to the element type. Each row or element reads its inputs before
    it writes the same indices, so the outputs may be the inputs (the ring
    driver merges in place). `fmha.sinks_grad` becomes three `scf.parallel`
    loops with sequential sums inside (each row's exp(sinks - lse) times
    rowsum(dout * o) into a buffer `dsinks_rows`, sums of chunks of 256 rows
    into `dsinks_parts`, then per head the negated sum of those): a fixed
    order, so dsinks is the same run to run. The ops on tensors get a
    diagnostic (bufferize them first; the named pipelines do).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect"
  ];
}

def FmhaVectorizeElementsPass : Pass<"fmha-vectorize-elements"> {
  let summary = "Give each iteration of an elementwise parallel loop a "
                "vector of elements";
  let description = [{
    Each outermost 1-D `scf.parallel` from 0 with step 1 whose body is
    straight-line elementwise code on its induction variable (loads and
    stores of rank-1 identity-layout memrefs at exactly that index, ops
    `Elementwise` on scalars, values from above) becomes a loop over
    ceil(n / width) iterations of `width` consecutive elements: where all of
    them are in range and every memref it reads or writes is aligned to a
    vector of `width` elements (checked at run time: one answer for a whole
    launch), one `vector.load` per load, the ops on vectors, one
    `vector.store` per store (each with that alignment); otherwise the
    elements one by one. Loops of any other form are left as they are. The
    GPU pipelines run it between `--fmha-tile-elementwise` and
    `--fmha-map-parallel-to-gpu` (the accumulate: 16-byte accesses per
    thread).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"width", "width", "int64_t", "4", "Elements of an iteration">
  ];
}

def FmhaDeferScalePass : Pass<"fmha-defer-scale"> {
  let summary = "Apply a positive constant scale of the scores after the "
                "mask, the branches and the row max";
  let description = [{
    The staged forward's scores are a product by a positive constant (the
    scale, or the softcap's cap); the online softmax takes their row max
    and exp(s - m). Rounding is monotonic, so the product commutes exactly
    with the mask's select to -inf, with an `scf.if` whose branches both
    yield it, with `fmha.to_layout` and with a max `vector.multi_reduction`
    (max_j fl(x_j c) = fl(c max_j x_j)); these patterns move it past them,
    leaving one product a row in the max and the element-wise product
    only in exp(x c - m), which `--fmha-gpu-math-to-target` folds into the
    exponent's fma. Every rewrite gives the same bits. The GPU pipelines'
    `vector-tiles=1` run it on the kernels before the distribution.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::vector::VectorDialect"
  ];
}

def FmhaDeferPVPass : Pass<"fmha-defer-pv"> {
  let summary = "Compute each kv tile's P V product in the next iteration, "
                "after the next tile's scores";
  let description = [{
    In the vector form of the forward (`--fmha-vectorize-tiles`, on tensors
    or buffers), each kv loop (`fmha.kv_loop`) whose O += P V is one
    contraction at the top of its body, with V an anchored read of the
    iteration, carries P instead: iteration t multiplies the previous
    iteration's P by the previous tile of V (read there, tile t - 1 clamped
    to the first, where P is 0) right after its own scores' product, then
    rescales that sum by the softmax's alpha; the last tile's product
    follows the loop (where it ran). The scores' contraction that both
    branches of the mask's `scf.if` start with moves before the branch. On a
    GPU with asynchronous products (wgmma) the softmax of tile t then runs
    while P_{t-1} V_{t-1} is in flight (FlashAttention-3's intra-warpgroup
    overlap). Values are those of the loop before, up to the order of two
    f32 operations on O (the product, then the rescale).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FmhaDropOutResultsPass
    : Pass<"fmha-drop-out-results", "::mlir::ModuleOp"> {
  let summary = "Drop function results that are an argument's buffer";
  let description = [{
    After bufferization a function on tensors returns the buffers its
    destination-style ops wrote in place: its out arguments. This pass drops
    each such result (a returned value that is, through memref.cast, an
    argument of the same type), from every function with a body, public ones
    included, and rewrites the func.call sites to use the argument passed.
    A function on tensors then has the signature of its form on memrefs (the
    runtime's kernel ABIs). Upstream's `drop-equivalent-buffer-results` does
    the same for private functions only.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif // FMHA_TRANSFORMS_PASSES_TD

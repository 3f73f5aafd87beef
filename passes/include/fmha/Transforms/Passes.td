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
    Tensor operands are bridged with `bufferization.to_buffer`/`to_tensor`.
  }];
  let dependentDialects = [
    "::mlir::fmha::FmhaDialect", "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
  let options = [
    Option<"blockM", "block-m", "int64_t", "64",
           "Query rows per tile (one workgroup / loop iteration)">,
    Option<"blockN", "block-n", "int64_t", "64",
           "Keys per kv tile">
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

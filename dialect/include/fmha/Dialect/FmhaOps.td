//===- FmhaOps.td - FMHA operations ------------------------*- tablegen -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHAOPS_TD
#define FMHA_DIALECT_FMHAOPS_TD

include "fmha/Dialect/FmhaBase.td"
include "fmha/Dialect/FmhaAttrs.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"

def Fmha_ShapedFloat : AnyTypeOf<[RankedTensorOf<[F16, BF16, F32]>,
                                  MemRefOf<[F16, BF16, F32]>],
                                 "ranked tensor or memref of f16, bf16 or f32">;

def Fmha_ShapedI32 : AnyTypeOf<[RankedTensorOf<[I32]>, MemRefOf<[I32]>],
                               "ranked tensor or memref of i32">;

class Fmha_DpsOp<string mnemonic, list<Trait> traits = []>
    : Fmha_Op<mnemonic, !listconcat(traits, [
        DestinationStyleOpInterface,
        DeclareOpInterfaceMethods<MemoryEffectsOpInterface>])> {
  let results = (outs Variadic<AnyRankedTensor>:$results);
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

def Fmha_AttentionOp : Fmha_DpsOp<"attention", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<TilingInterface, ["getLoopIteratorTypes",
        "getIterationDomain", "getTiledImplementation",
        "getResultTilePosition"]>]> {
  let summary = "Fused multi-head attention (forward)";
  let description = [{
    `o = softmax(mask(softcap(scale * q k^T))) v` over BHSD operands:
    q `[B, Hq, Sq, D]`, k `[B, Hk, Sk, D]`, v `[B, Hk, Sk, Dv]`,
    o `[B, Hq, Sq, Dv]` and the optional lse `[B, Hq, Sq]` (f32, natural log).
    Query head h reads kv head `h / (Hq / Hk)`. Batch and sequence lengths may
    be dynamic; head counts and head dims are static. A row with no visible
    key gets o = 0 and lse = -inf. Tensors and memrefs are both accepted
    (destination style: on tensors the op returns the updated `outs`).

    The optional `sinks` (f32 `[Hq]`, gpt-oss's learned sink logits) gives
    each query head h one more logit sinks[h], in the units of the scores
    (after scale, never soft-capped), that joins every row's softmax
    denominator and carries no value: `o_i = sum_j e^{s_ij} v_j /
    (e^{sinks[h]} + sum_j e^{s_ij})`, lse_i the log of that denominator; a
    row with no visible key gets o = 0 and lse = sinks[h].

    The optional `cu_seqlens_q` and `cu_seqlens_k` (i32 `[N + 1]`, both or
    neither) make it a variable-length batch (FlashAttention's `cu_seqlens`):
    q, k, v, o and lse have batch 1 and their sequence axis holds the N
    sequences back to back; sequence n owns query rows `[cu_q[n],
    cu_q[n+1])` and keys `[cu_k[n], cu_k[n+1])`, the mask's i, j, Sq and Sk
    are local to it, an empty sequence is allowed and rows past `cu_q[N]`
    are left untouched. The offsets are nondecreasing from 0 and end within
    the tensors (the caller's promise; the runtime checks it on the host).

    The optional `block_table` (i32 `[B, max_pages]`) and `seqlens_k` (i32
    `[B]`), both or neither, make k and v a paged cache (FlashAttention's
    and vLLM's): k `[num_pages, Hk, P, D]`, v `[num_pages, Hk, P, Dv]` with
    a static page size P; key j of (batch b, kv head h) is
    `k[block_table[b, j / P], h, j % P]`, the mask's Sk is `seqlens_k[b]`,
    and table entries past `ceil(seqlens_k[b] / P)` are never read. A
    cache of FlashAttention's `[num_pages, P, Hk, D]` memory is this view
    with strides. With `cu_seqlens_q` alone (no `cu_seqlens_k`: each
    sequence's keys are its cache's) it is chunked prefill: sequence n's
    rows against the cache of table row n, `seqlens_k[n]` keys.

    Example:
    ```mlir
    %o, %lse = fmha.attention ins(%q, %k, %v : tensor<2x8x?x64xf16>,
        tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>)
        outs(%o0 : tensor<2x8x?x64xf16>, %l0 : tensor<2x8x?xf32>)
        {mask = #fmha.mask<"b:-1,0,4">, scale = 0.125 : f32}
        -> tensor<2x8x?x64xf16>, tensor<2x8x?xf32>
    ```
  }];
  let arguments = (ins Fmha_ShapedFloat:$q, Fmha_ShapedFloat:$k,
                       Fmha_ShapedFloat:$v,
                       Optional<Fmha_ShapedFloat>:$sinks,
                       Optional<Fmha_ShapedI32>:$cu_seqlens_q,
                       Optional<Fmha_ShapedI32>:$cu_seqlens_k,
                       Optional<Fmha_ShapedI32>:$block_table,
                       Optional<Fmha_ShapedI32>:$seqlens_k,
                       Fmha_ShapedFloat:$o,
                       Optional<Fmha_ShapedFloat>:$lse,
                       OptionalAttr<Fmha_MaskAttr>:$mask,
                       OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<F32Attr>:$softcap);
  let assemblyFormat = [{
    `ins` `(` $q `,` $k `,` $v `:` type($q) `,` type($k) `,` type($v) `)`
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`cu_seqlens` `(` $cu_seqlens_q^ (`,` $cu_seqlens_k^)? `:`
        type($cu_seqlens_q) (`,` type($cu_seqlens_k)^)? `)`)?
    (`paged` `(` $block_table^ `,` $seqlens_k `:`
        type($block_table) `,` type($seqlens_k) `)`)?
    `outs` `(` $o `:` type($o) (`,` $lse^ `:` type($lse))? `)`
    attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      const unsigned inputs = getOMutable().getOperandNumber();
      return MutableOperandRange(getOperation(), /*start=*/inputs,
                                 /*length=*/getNumOperands() - inputs);
    }
    /// Whether it is a variable-length batch (cu_seqlens operands).
    bool isVarlen() { return getCuSeqlensQ() != nullptr; }
    /// Whether k and v are a paged cache (block_table, seqlens_k).
    bool isPaged() { return getBlockTable() || getSeqlensK(); }
    /// q, k, v (unless paged), o and lse (when present) with their names.
    SmallVector<std::pair<StringRef, Value>> batchedOperands();
    /// The mask, `0` when the attribute is absent.
    ::fmha::MaskSpec getMaskSpec();
    /// The scale, 1/sqrt(D) when the attribute is absent.
    double getScaleOrDefault();
  }];
}

//===----------------------------------------------------------------------===//
// AttentionBwdOp
//===----------------------------------------------------------------------===//

def Fmha_AttentionBwdOp : Fmha_DpsOp<"attention_bwd"> {
  let summary = "Gradients of fused multi-head attention";
  let description = [{
    From q, k, v, the forward's o and lse and the output gradient dO, computes
    dQ, dK and dV (DESIGN.md section 1): `Dsum = rowsum(dO * o)`,
    `dS = P * (dO v^T - Dsum)`, `dQ = scale * dS k`, `dK = scale * dS^T q`,
    `dV = P^T dO`, with dK and dV summed over the `Hq / Hk` query heads of each
    kv head. `deterministic` asks for bit-identical results run to run.
  }];
  let arguments = (ins Fmha_ShapedFloat:$q, Fmha_ShapedFloat:$k,
                       Fmha_ShapedFloat:$v, Fmha_ShapedFloat:$o,
                       Fmha_ShapedFloat:$lse, Fmha_ShapedFloat:$dout,
                       Fmha_ShapedFloat:$dq, Fmha_ShapedFloat:$dk,
                       Fmha_ShapedFloat:$dv,
                       OptionalAttr<Fmha_MaskAttr>:$mask,
                       OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<F32Attr>:$softcap,
                       UnitAttr:$deterministic);
  let assemblyFormat = [{
    `ins` `(` $q `,` $k `,` $v `,` $o `,` $lse `,` $dout `:` type($q) `,`
        type($k) `,` type($v) `,` type($o) `,` type($lse) `,` type($dout) `)`
    `outs` `(` $dq `,` $dk `,` $dv `:` type($dq) `,` type($dk) `,` type($dv) `)`
    attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/6, /*length=*/3);
    }
    ::fmha::MaskSpec getMaskSpec();
    /// The scale, 1/sqrt(D) when the attribute is absent.
    double getScaleOrDefault();
  }];
}

//===----------------------------------------------------------------------===//
// SinksGradOp
//===----------------------------------------------------------------------===//

def Fmha_SinksGradOp : Fmha_DpsOp<"sinks_grad"> {
  let summary = "Gradient of the learned sink logits";
  let description = [{
    The gradient of the loss with respect to `fmha.attention`'s learned
    sink logits (DESIGN.md section 1): from the forward's o and lse, the
    output gradient dout and the sinks,
    `dsinks[h] = -sum_{b, i} exp(sinks[h] - lse[b, h, i]) * Dsum[b, h, i]`
    with `Dsum = rowsum(dout * o)`. The sinks change dq, dk and dv only
    through the lse that `fmha.attention_bwd` takes, so the backward with
    learned sinks is `fmha.attention_bwd` beside this op. o and dout
    `[B, H, S, Dv]`, lse `[B, H, S]`, sinks and dsinks `[H]` (f32). The sum
    runs in a fixed order: dsinks is the same bit for bit run to run.

    Example:
    ```mlir
    fmha.sinks_grad ins(%o, %lse, %do, %sinks : memref<?x8x?x64xbf16>,
        memref<?x8x?xf32>, memref<?x8x?x64xbf16>, memref<8xf32>)
        outs(%dsinks : memref<8xf32>)
    ```
  }];
  let arguments = (ins Fmha_ShapedFloat:$o, Fmha_ShapedFloat:$lse,
                       Fmha_ShapedFloat:$dout, Fmha_ShapedFloat:$sinks,
                       Fmha_ShapedFloat:$dsinks);
  let assemblyFormat = [{
    `ins` `(` $o `,` $lse `,` $dout `,` $sinks `:` type($o) `,` type($lse)
        `,` type($dout) `,` type($sinks) `)`
    `outs` `(` $dsinks `:` type($dsinks) `)`
    attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/4, /*length=*/1);
    }
  }];
}

//===----------------------------------------------------------------------===//
// MergeOp
//===----------------------------------------------------------------------===//

def Fmha_MergeOp : Fmha_DpsOp<"merge"> {
  let summary = "Merge two attention partials over disjoint key sets";
  let description = [{
    `lse = logaddexp(lse1, lse2)`, `o = o1 * exp(lse1 - lse) + o2 *
    exp(lse2 - lse)`; a partial with lse = -inf weighs 0, and two empty
    partials give o = 0, lse = -inf. Ring attention and split-KV decoding are
    built from it.
  }];
  let arguments = (ins Fmha_ShapedFloat:$o1, Fmha_ShapedFloat:$lse1,
                       Fmha_ShapedFloat:$o2, Fmha_ShapedFloat:$lse2,
                       Fmha_ShapedFloat:$o, Fmha_ShapedFloat:$lse);
  let assemblyFormat = [{
    `ins` `(` $o1 `,` $lse1 `,` $o2 `,` $lse2 `:` type($o1) `,` type($lse1)
        `,` type($o2) `,` type($lse2) `)`
    `outs` `(` $o `,` $lse `:` type($o) `,` type($lse) `)`
    attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/4, /*length=*/2);
    }
  }];
}

//===----------------------------------------------------------------------===//
// AccumulateOp
//===----------------------------------------------------------------------===//

def Fmha_AccumulateOp : Fmha_DpsOp<"accumulate"> {
  let summary = "Add a tensor into a float32 accumulator, elementwise";
  let description = [{
    `acc += x`, element by element, in f32: `x` (f16, bf16 or f32) is
    widened and added to the f32 accumulator of the same shape (any rank;
    dynamic sizes allowed). Ring attention sums the gradient partials of its
    block pairs (dq, and the dK/dV that travel with K/V) with it.

    Example:
    ```mlir
    fmha.accumulate ins(%dq : memref<?xbf16>) outs(%sum : memref<?xf32>)
    ```
  }];
  let arguments = (ins Fmha_ShapedFloat:$x, Fmha_ShapedFloat:$acc);
  let assemblyFormat = [{
    `ins` `(` $x `:` type($x) `)` `outs` `(` $acc `:` type($acc) `)`
    attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/1, /*length=*/1);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Tile ops: the online-softmax steps of the flash-attention loop
//===----------------------------------------------------------------------===//

// The forward's tiles are values or buffers: on tensors a tile op returns its
// updated outs (destination style, bufferized by One-Shot Bufferize into the
// same op on memrefs); on memrefs it writes them in place. An op takes all
// tensors or all memrefs (tile_store also a tensor into a memref out).
def Fmha_ValueTile2D : AnyTypeOf<[MemRefRankOf<[F16, BF16, F32], [2]>,
                                  TensorRankOf<[F16, BF16, F32], [2]>]>;
def Fmha_F32ValueTile2D : AnyTypeOf<[MemRefRankOf<[F32], [2]>,
                                     TensorRankOf<[F32], [2]>]>;
def Fmha_F32ValueTile1D : AnyTypeOf<[MemRefRankOf<[F32], [1]>,
                                     TensorRankOf<[F32], [1]>]>;

class Fmha_TileDpsOp<string mnemonic> : Fmha_DpsOp<mnemonic> {
  let hasVerifier = 1;
}

def Fmha_TileInitOp : Fmha_TileDpsOp<"tile_init"> {
  let summary = "Initialise the running max, sum and accumulator of a q tile";
  let description = [{
    m = -inf, l = 0, acc = 0 (all three are outs). With `sink` (a learned
    sink logit, f32): m = sink, l = 1 (the sink's term e^{sink - m} of the
    denominator, with no value in acc).
  }];
  let arguments = (ins Fmha_F32ValueTile1D:$m, Fmha_F32ValueTile1D:$l,
                       Fmha_F32ValueTile2D:$acc, Optional<F32>:$sink);
  let assemblyFormat = [{
    $m `,` $l `,` $acc (`sink` $sink^)? attr-dict `:` type($m) `,` type($l)
      `,` type($acc) (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/0, /*length=*/3);
    }
  }];
}

def Fmha_TileQKOp : Fmha_TileDpsOp<"tile_qk"> {
  let summary = "Scores of one q tile against one kv tile";
  let description = [{
    `s[i, j] = softcap(scale * dot(q[i, :], k[j, :]))` for the rows of `q`
    and the rows of `k` (`s` is the out). When `masked [row0, col0, Sq, Sk]`
    is given, scores of keys that `mask` (when given) hides from query
    `row0 + i` and of keys at or past Sk (key `col0 + j`; the padding of a
    static tile) become -inf; tiles without it need no element mask.

    With `transposed`, `s` holds the same scores with the keys as rows:
    `s[j, i]` is the score of query `i` against key `j` (S^T = K Q^T, the
    form the backward's dK/dV loop takes so that P^T and dS^T come out with
    the keys as rows); the mask coordinates keep their meaning.
  }];
  let arguments = (ins Fmha_ValueTile2D:$q, Fmha_ValueTile2D:$k,
                       Fmha_F32ValueTile2D:$s, Variadic<Index>:$maskCoords,
                       F32Attr:$scale, OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<Fmha_MaskAttr>:$mask,
                       UnitAttr:$transposed);
  let assemblyFormat = [{
    $q `,` $k `into` $s (`transposed` $transposed^)?
      (`masked` `[` $maskCoords^ `]`)? attr-dict `:`
      type($q) `,` type($k) `,` type($s) (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getSMutable(); }
  }];
}

def Fmha_TileSoftmaxOp : Fmha_TileDpsOp<"tile_softmax"> {
  let summary = "Online-softmax update of one q tile with one score tile";
  let description = [{
    Per row: `m' = max(m, max_j s)`, `p = exp(s - m')` (written over `s`),
    `l = l * exp(m - m') + sum_j p`, `acc *= exp(m - m')`, `m = m'`. Rows whose
    keys are all hidden so far keep m = -inf and contribute nothing. All four
    operands are read and written (outs): on tensors the op returns p, m, l
    and acc.
  }];
  let arguments = (ins Fmha_F32ValueTile2D:$s, Fmha_F32ValueTile1D:$m,
                       Fmha_F32ValueTile1D:$l, Fmha_F32ValueTile2D:$acc);
  let assemblyFormat = [{
    $s `,` $m `,` $l `,` $acc attr-dict `:` type($s) `,` type($m) `,`
      type($l) `,` type($acc) (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/0, /*length=*/4);
    }
  }];
}

def Fmha_TilePVOp : Fmha_TileDpsOp<"tile_pv"> {
  let summary = "acc += p v for one kv tile";
  let description = [{ `acc` is the out, read and written. }];
  let arguments = (ins Fmha_F32ValueTile2D:$p, Fmha_ValueTile2D:$v,
                       Fmha_F32ValueTile2D:$acc);
  let assemblyFormat = [{
    $p `,` $v `into` $acc attr-dict `:` type($p) `,` type($v) `,` type($acc)
      (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getAccMutable(); }
  }];
}

def Fmha_TileFinalizeOp : Fmha_TileDpsOp<"tile_finalize"> {
  let summary = "Write o = acc / l and lse = m + log(l) of one q tile";
  let description = [{
    Rows with l = 0 (no visible key) get o = 0 and lse = -inf. `o` and the
    optional `lse` are the outs.
  }];
  let arguments = (ins Fmha_F32ValueTile1D:$m, Fmha_F32ValueTile1D:$l,
                       Fmha_F32ValueTile2D:$acc, Fmha_ValueTile2D:$o,
                       Optional<Fmha_F32ValueTile1D>:$lse);
  let assemblyFormat = [{
    $m `,` $l `,` $acc `into` $o (`,` $lse^)? attr-dict `:` type($m) `,`
      type($l) `,` type($acc) `,` type($o) (`,` type($lse)^)?
      (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(), /*start=*/3,
                                 /*length=*/getNumOperands() - 3);
    }
  }];
}

def Fmha_ConvertLayoutOp : Fmha_Op<"convert_layout", [Pure]> {
  let summary = "The same tile in another register layout";
  let description = [{
    `result` holds the elements of `source`: only where they live (which
    register of which lane of which warp, the `#fmha.layout` encodings)
    changes. Either side may be a tensor without an encoding, a tile that is
    not in registers: from it, the tile is loaded into its layout; to it,
    the tile leaves registers (to be stored). A conversion between equal
    layouts folds away; on the GPU the others move elements between lanes
    or through workgroup memory (AMD's P between the MFMAs of S and of PV).

    Example:
    ```mlir
    %p = fmha.convert_layout %s : tensor<64x64xf32, #c> -> tensor<64x64xf32, #a>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fmha_ToLayoutOp : Fmha_Op<"to_layout", [Pure,
    AllTypesMatch<["source", "result"]>]> {
  let summary = "A vector tile from here on in a register layout (an anchor)";
  let description = [{
    The form of `fmha.convert_layout` on vectors, which carry no encoding:
    `result` is `source`, held in `layout` (a `#fmha.layout` of the vector's
    shape; a row vector's layout has 1 column, a column vector's 1 row).
    `--fmha-vectorize-tiles` anchors every tile it gives in the layout its
    tensor had, so that the
    distribution to lanes reads each tile's layout where it is defined, as
    IREE's `to_layout` anchors do. Where the source is anchored in another
    layout, this is a conversion.

    Example:
    ```mlir
    %a = fmha.to_layout %s to layout(#c) : vector<64x64xf32>
    ```
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$source, Fmha_LayoutAttr:$layout);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat =
      "$source `to` `layout` `(` $layout `)` attr-dict `:` type($source)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fmha_PackTileOp : Fmha_Op<"pack_tile", [Pure]> {
  let summary = "A tile's elements in the order of a layout's registers";
  let description = [{
    `packed[w R + r, l] = tile[order(r, l, w)]`: the 2-D tile rearranged
    so that row w R + r holds, along its columns, what register r of the
    lanes of warp w hold in `order` (a `#fmha.layout` of the tile without
    replicas, R registers a lane): a (registers x warps) x lanes tile. A
    buffer in this order takes the tile with one run of consecutive
    addresses a register of a warp (`fmha::registerOrder`). Held in `order`,
    the tile needs no data movement: `packed` is the same registers in
    `fmha::registerOrder(order)` (`--fmha-distribute-tiles` refuses other
    layouts). Tensors (with or without encodings) or vectors.

    Example:
    ```mlir
    %p = fmha.pack_tile %dq {order = #c}
        : tensor<64x64xf32, #c> -> tensor<128x32xf32, #packed>
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnyRankedTensor, AnyVectorOfNonZeroRank]>:$tile,
                       Fmha_LayoutAttr:$order);
  let results = (outs AnyTypeOf<[AnyRankedTensor, AnyVectorOfNonZeroRank]>:$packed);
  let assemblyFormat = "$tile attr-dict `:` type($tile) `->` type($packed)";
  let hasVerifier = 1;
}

def Fmha_UnpackTileOp : Fmha_Op<"unpack_tile", [Pure]> {
  let summary = "A tile from its elements in the order of a layout's registers";
  let description = [{
    `fmha.pack_tile`'s inverse: `tile[order(r, l, w)] = packed[w R + r, l]`.
    Held in a layout M, the packed tile needs no data movement: `tile` is
    the same registers in `fmha::fromRegisterOrder(order, M)` (the reader's
    threads need not be order's: each register of M reaches the element
    of `tile` it holds).

    Example:
    ```mlir
    %dq = fmha.unpack_tile %p {order = #c}
        : tensor<128x32xf32, #packed> -> tensor<64x64xf32, #c>
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnyRankedTensor, AnyVectorOfNonZeroRank]>:$packed,
                       Fmha_LayoutAttr:$order);
  let results = (outs AnyTypeOf<[AnyRankedTensor, AnyVectorOfNonZeroRank]>:$tile);
  let assemblyFormat = "$packed attr-dict `:` type($packed) `->` type($tile)";
  let hasVerifier = 1;
}

def Fmha_AddAsyncOp : Fmha_Op<"add_async"> {
  let summary = "Start adding a workgroup buffer into a buffer, by the "
                "whole workgroup";
  let description = [{
    `dest[i, j] += source[i, j]` for every element of the 2-D f32 workgroup
    buffer `source`, each add atomic with respect to other adds into `dest`
    (as `fmha.atomic_add`'s), both buffers of one static shape and
    contiguous (row stride the row's length). Collective: every thread of
    the workgroup runs it, after writing its part of `source`; those writes
    are what is added. The adds are asynchronous, one group, and `source`
    may be written again only after an `fmha.add_wait {read}` (which every
    thread runs) has seen the group read it. On NVIDIA (sm_90) one thread
    issues one bulk reduction (`cp.reduce.async.bulk ... .add.f32`) after a
    proxy fence and a barrier: the tensor memory accelerator adds the whole
    buffer while the warps go on (FlashAttention-3's dQ).

    Example:
    ```mlir
    fmha.add_async %buf to %dq_tile
        : memref<128x32xf32, 3> to memref<128x32xf32, strided<[32, 1], offset: ?>>
    ```
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [2]>, "", [MemRead]>:$source,
                       Arg<MemRefRankOf<[F32], [2]>, "", [MemRead, MemWrite]>:$dest);
  let assemblyFormat =
      "$source `to` $dest attr-dict `:` type($source) `to` type($dest)";
  let hasVerifier = 1;
}

def Fmha_AddWaitOp : Fmha_Op<"add_wait"> {
  let summary = "Wait for the workgroup's asynchronous adds";
  let description = [{
    Collective: returns in every thread of the workgroup once all the
    `fmha.add_async` groups it started have read their sources (`read`:
    the sources may be written again) or have completed their adds into
    their destinations (without `read`: before the kernel ends).

    Example:
    ```mlir
    fmha.add_wait {read}
    ```
  }];
  let arguments = (ins UnitAttr:$read);
  let assemblyFormat = "attr-dict";
}

def Fmha_CopyAsyncOp : Fmha_Op<"copy_async", [AttrSizedOperandSegments]> {
  let summary = "Start copying a tile into workgroup memory";
  let description = [{
    Starts copying the tile of `layout`'s shape (rows x cols) at
    `source[source_indices]` into `dest[dest_indices]`, both along their
    last two dims. Elements of the tile past the source's rows or columns
    (its dims rank - 2 and rank - 1: the rows past Sk, a head dim padded to
    the tile's) are written as zeros and not read, as a
    `vector.transfer_read` whose dims are not in bounds reads them; the
    source's columns are a whole number of each thread's runs.
    `layout` (a `#fmha.layout` of the tile) says which thread copies which
    elements: each thread its registers' runs along a row (16 bytes where
    the layout is `fmha::copyLayout`'s).

    The copy is asynchronous: each `fmha.copy_async` is one group of the
    issuing thread's copies, complete for that thread after an
    `fmha.copy_wait` that leaves fewer groups pending than were issued after
    it, and visible to the other threads of the workgroup after a barrier
    that follows the wait (cp.async and cp.async.wait_group on NVIDIA; a
    target without asynchronous copies copies at once).

    Example:
    ```mlir
    fmha.copy_async %k[%row, %c0] to %kbuf[%slot, %c0, %c0] layout(#copy)
        : memref<?x128xbf16, strided<[?, 1], offset: ?>> to memref<2x64x136xbf16, 3>
    fmha.copy_wait pending(0)
    gpu.barrier
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$source,
                       Variadic<Index>:$source_indices,
                       Arg<AnyMemRef, "", [MemWrite]>:$dest,
                       Variadic<Index>:$dest_indices,
                       Fmha_LayoutAttr:$layout);
  let assemblyFormat = [{
    $source `[` $source_indices `]` `to` $dest `[` $dest_indices `]`
    `layout` `(` $layout `)` attr-dict `:` type($source) `to` type($dest)
  }];
  let hasVerifier = 1;
}

def Fmha_CopyWaitOp : Fmha_Op<"copy_wait"> {
  let summary = "Wait for this thread's asynchronous copies";
  let description = [{
    Waits until at most `pending` of the groups of copies this thread
    started (`fmha.copy_async`, one group each) are still in flight: the
    latest `pending` may be; all the earlier ones are complete.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let assemblyFormat = "`pending` `(` $pending `)` attr-dict";
}

def Fmha_AtomicAddOp : Fmha_Op<"atomic_add"> {
  let summary = "Add an f32 tile into a buffer, each element atomically";
  let description = [{
    `dest[i, j] += value[i, j]` for every element of the 2-D f32 tile
    `value`, each add atomic: parallel iterations (workgroups on the GPU,
    threads on the CPU) may add into the same elements, in any order.
    `dest` is a buffer of the tile's static shape. The tile is a value (a
    tensor or, after `--fmha-vectorize-tiles`, a vector: the distribution
    adds each register at its layout's row and column) or, bufferized on
    the CPU, a buffer. The backward's dQ accumulator takes scale dS K of
    each (q tile, kv tile) pair of the dK/dV loop so.

    Example:
    ```mlir
    fmha.atomic_add %dq, %acc : vector<64x128xf32>,
        memref<64x128xf32, strided<[128, 1], offset: ?>>
    ```
  }];
  // No declared effects: the op may read and write memory (dest, and value
  // when it is a buffer).
  let arguments = (ins AnyTypeOf<[VectorOfRankAndType<[2], [F32]>,
                                  TensorRankOf<[F32], [2]>,
                                  MemRefRankOf<[F32], [2]>]>:$value,
                       MemRefRankOf<[F32], [2]>:$dest);
  let assemblyFormat =
      "$value `,` $dest attr-dict `:` type($value) `,` type($dest)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile ops of the backward pass
//===----------------------------------------------------------------------===//

// The backward's tile ops, on values or buffers as the forward's: on
// tensors each returns its updated out; `atomic` products take buffers.
// tile_store may also write a value into a buffer in place (the values
// form zeroes the backward's shared dQ accumulator so).

def Fmha_TileFillOp : Fmha_TileDpsOp<"tile_fill"> {
  let summary = "Set every element of an f32 tile";
  let description = [{ `dst` is the out. }];
  let arguments = (ins Fmha_F32ValueTile2D:$dst, F32Attr:$value);
  let assemblyFormat = [{
    $dst `,` $value attr-dict `:` type($dst) (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getDstMutable(); }
  }];
}

def Fmha_TileStoreOp : Fmha_TileDpsOp<"tile_store"> {
  let summary = "Copy an f32 tile into a tile of any float type (rounding)";
  let description = [{
    `dst` is the out: a value, or a buffer written in place (from a value
    `src` too).
  }];
  let arguments = (ins Fmha_F32ValueTile2D:$src, Fmha_ValueTile2D:$dst);
  let assemblyFormat = [{
    $src `into` $dst attr-dict `:` type($src) `,` type($dst)
      (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getDstMutable(); }
  }];
}

def Fmha_TileMatmulOp : Fmha_TileDpsOp<"tile_matmul"> {
  let summary = "c (+)= alpha * op(a) op(b) on tiles";
  let description = [{
    `c[i, j] = (accumulate ? c[i, j] : 0) + alpha * sum_k A[i, k] * B[k, j]`
    with `A = transpose_a ? a^T : a` and `B = transpose_b ? b^T : b`, products
    and sums in f32. With `atomic`, each element of `c` is updated by an
    atomic add (requires `accumulate` and buffers): parallel iterations may
    share `c`. `c` is the out. The backward pass is built from it:
    dV += P^T dO, dP = dO V^T, dK += scale dS^T Q, dQ += scale dS K.
  }];
  let arguments = (ins Fmha_ValueTile2D:$a, Fmha_ValueTile2D:$b,
                       Fmha_F32ValueTile2D:$c, F32Attr:$alpha,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$accumulate, UnitAttr:$atomic);
  let assemblyFormat = [{
    $a `,` $b `into` $c attr-dict `:` type($a) `,` type($b) `,` type($c)
      (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getCMutable(); }
  }];
}

def Fmha_TileRowDotOp : Fmha_TileDpsOp<"tile_row_dot"> {
  let summary = "out[i] = sum_c a[i, c] * b[i, c] (the backward's Dsum)";
  let description = [{ `out` is the out. }];
  let arguments = (ins Fmha_ValueTile2D:$a, Fmha_ValueTile2D:$b,
                       Fmha_F32ValueTile1D:$out);
  let assemblyFormat = [{
    $a `,` $b `into` $out attr-dict `:` type($a) `,` type($b) `,` type($out)
      (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getOutMutable(); }
  }];
}

def Fmha_TileBwdProbsOp : Fmha_TileDpsOp<"tile_bwd_probs"> {
  let summary = "Recompute the probabilities of a score tile from the lse";
  let description = [{
    `p[i, j] = exp(s[i, j] - lse[i])`, and 0 for a row with lse = -inf (no
    visible key) or a hidden key (s = -inf). `p` is the out. With
    `transposed` (scores with the keys as rows, from a transposed
    `fmha.tile_qk`) the lse runs along the columns: `p[j, i] = exp(s[j, i] -
    lse[i])`.
  }];
  let arguments = (ins Fmha_F32ValueTile2D:$s, Fmha_F32ValueTile1D:$lse,
                       Fmha_F32ValueTile2D:$p, UnitAttr:$transposed);
  let assemblyFormat = [{
    $s `,` $lse `into` $p (`transposed` $transposed^)? attr-dict `:` type($s) `,` type($lse) `,` type($p)
      (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getPMutable(); }
  }];
}

def Fmha_TileBwdDsOp : Fmha_TileDpsOp<"tile_bwd_ds"> {
  let summary = "dS = P * (dP - Dsum), through the softcap when there is one";
  let description = [{
    Over `dp` (the out, read and written): `dp[i, j] = p[i, j] * (dp[i, j] -
    dsum[i])`, times `1 - (s[i, j] / softcap)^2` (the derivative of
    `softcap * tanh(x / softcap)`, from the capped score `s`) when `softcap`
    is given; 0 where p = 0. With `transposed` (tiles with the keys as
    rows) Dsum runs along the columns: `dp[j, i] = p[j, i] * (dp[j, i] -
    dsum[i])`.
  }];
  let arguments = (ins Fmha_F32ValueTile2D:$p, Fmha_F32ValueTile1D:$dsum,
                       Optional<Fmha_F32ValueTile2D>:$s,
                       Fmha_F32ValueTile2D:$dp,
                       OptionalAttr<F32Attr>:$softcap, UnitAttr:$transposed);
  let assemblyFormat = [{
    $p `,` $dsum (`capped` $s^)? `into` $dp (`transposed` $transposed^)?
      attr-dict `:` type($p) `,`
      type($dsum) `,` type($dp) (`,` type($s)^)? (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getDpMutable(); }
  }];
}

#endif // FMHA_DIALECT_FMHAOPS_TD

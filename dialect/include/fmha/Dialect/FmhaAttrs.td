//===- FmhaAttrs.td - FMHA attributes ----------------------*- tablegen -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHAATTRS_TD
#define FMHA_DIALECT_FMHAATTRS_TD

include "fmha/Dialect/FmhaBase.td"
include "mlir/IR/EnumAttr.td"

def Fmha_MaskKind : I32EnumAttr<"MaskKind", "attention mask kind", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"TopLeft", 1, "top_left">,
    I32EnumAttrCase<"BottomRight", 2, "bottom_right">]> {
  let cppNamespace = "::mlir::fmha";
  let genSpecializedAttr = 0;
}

def Fmha_MaskAttr : Fmha_Attr<"Mask", "mask"> {
  let summary = "Attention mask written as CK's spec string";
  let description = [{
    Parses and prints CK's mask spec strings: `0` (or `none`), `t`, `b`,
    `t:L,R`, `b:L,R`, `t:L,R,S`, `b:L,R,S`, `xt:W`, `xb:W`. Query row i sees
    key j iff `j < S` or `lo(i) <= j <= hi(i)` with `lo = i + off - L`,
    `hi = i + off + R`, `off = 0` for top-left and `Sk - Sq` for bottom-right;
    a negative L or R leaves that side unbounded. The attribute stores the
    normalized form and prints its canonical spelling, e.g.
    `#fmha.mask<"xt:5">` prints as `#fmha.mask<"t:2,2">`.
  }];
  let parameters = (ins "MaskKind":$kind, "int64_t":$left, "int64_t":$right,
                        "int64_t":$sink);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The mask as the project's plain C++ description.
    ::fmha::MaskSpec getSpec() const;
    /// The canonical spec string.
    std::string getSpecString() const;
    static MaskAttr get(::mlir::MLIRContext *context,
                        const ::fmha::MaskSpec &spec);
    bool isNone() const { return getKind() == MaskKind::None; }
  }];
}

def Fmha_LayoutAttr : Fmha_Attr<"Layout", "layout"> {
  let summary = "Where each register of each lane of each warp holds a tile";
  let description = [{
    A linear fragment layout (support/LinearLayout.h, Triton's
    LinearLayout): for a `rows x cols` tile, a basis `[row, col]` for each bit
    of the register index, then of the lane, then of the warp; the element
    that register r of lane l of warp w holds is the xor of the bases of the
    set bits of (r, l, w). A zero basis replicates. It is the encoding of a
    register tile (a tensor of that shape) on the GPU; the matrix
    instructions' fragments and their tilings come from
    fmha::MmaInstruction and fmha::tileFragments.

    Example (mma.sync m16n8k16's accumulator):
    ```mlir
    #fmha.layout<16x8, register = [[0, 1], [8, 0]],
                 lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
    ```
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$cols,
                        ArrayRefParameter<"int64_t">:$registers,
                        ArrayRefParameter<"int64_t">:$lanes,
                        ArrayRefParameter<"int64_t">:$warps);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The layout as the project's plain C++ description.
    ::fmha::LinearLayout getLayout() const;
    static LayoutAttr get(::mlir::MLIRContext *context,
                          const ::fmha::LinearLayout &layout);
  }];
}

#endif // FMHA_DIALECT_FMHAATTRS_TD

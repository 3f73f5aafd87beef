//===- FmhaBase.td - FMHA dialect definition ---------------*- tablegen -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHABASE_TD
#define FMHA_DIALECT_FMHABASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Fmha_Dialect : Dialect {
  let name = "fmha";
  let cppNamespace = "::mlir::fmha";
  let summary = "Fused multi-head attention";
  let description = [{
    One op, `fmha.attention`, carries a whole attention problem: mask (CK's
    spec strings), sink tokens, grouped-query heads, scale, softcap and an
    optional log-sum-exp. The `fmha.tile_*` ops are the online-softmax tile
    steps that `--fmha-tile-attention` produces and the lowerings consume.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
}

class Fmha_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Fmha_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class Fmha_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fmha_Dialect, mnemonic, traits>;

#endif // FMHA_DIALECT_FMHABASE_TD

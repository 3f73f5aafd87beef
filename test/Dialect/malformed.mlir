// Malformed IR ends in a diagnostic and a non-zero exit, never a crash.
// RUN: not fmha-opt %s -split-input-file 2>&1 | FileCheck %s

// CHECK: error: expected ','
func.func @missing_operand(%q: memref<?x4x?x64xf32>) {
  fmha.attention ins(%q %q, %q : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>) outs(%q : memref<?x4x?x64xf32>)
  return
}

// -----

// CHECK: error: custom op 'fmha.attentio' is unknown
func.func @misspelled(%q: memref<?x4x?x64xf32>) {
  fmha.attentio ins(%q, %q, %q : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>) outs(%q : memref<?x4x?x64xf32>)
  return
}

// -----

// CHECK: error: 'fmha.attention' op operand #0 must be ranked tensor or memref of f16, bf16 or f32
func.func @wrong_type(%q: memref<?x4x?x64xi8>, %o: memref<?x4x?x64xf32>) {
  fmha.attention ins(%q, %q, %q : memref<?x4x?x64xi8>, memref<?x4x?x64xi8>, memref<?x4x?x64xi8>) outs(%o : memref<?x4x?x64xf32>)
  return
}

// -----

// CHECK: error: expected '<'
func.func @bad_attr() attributes {m = #fmha.mask} { return }

// -----

// CHECK: error: use of undeclared SSA value name
func.func @undefined(%q: memref<?x4x?x64xf32>) {
  fmha.attention ins(%q, %k, %q : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>) outs(%q : memref<?x4x?x64xf32>)
  return
}

// RUN: fmha-opt %s --fmha-defer-scale -split-input-file | FileCheck %s

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// The scores' scale (0.125) leaves the masked and the unmasked branch (past
// the select to -inf and the anchor), follows the scf.if, and the row max
// takes the unscaled scores, scaled once a row; exp(s - m) keeps the
// element-wise product for fmha-gpu-math-to-target to fold.
// CHECK-LABEL: func.func @scores
// CHECK-SAME: (%[[X:[^:]+]]: vector<16x16xf32>, %[[VIS:[^:]+]]: vector<16x16xi1>, %[[P:[^:]+]]: i1, %[[M:[^:]+]]: vector<16xf32>)
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant dense<0xFF800000> : vector<16x16xf32>
// CHECK-DAG: %[[ROWINF:.+]] = arith.constant dense<0xFF800000> : vector<16xf32>
// CHECK-DAG: %[[C:.+]] = arith.constant dense<1.250000e-01> : vector<16x16xf32>
// CHECK-DAG: %[[CROW:.+]] = arith.constant dense<1.250000e-01> : vector<16xf32>
// CHECK: %[[S:.+]] = scf.if %[[P]] -> (vector<16x16xf32>) {
// CHECK-NEXT: %[[SEL:.+]] = arith.select %[[VIS]], %[[X]], %[[NEGINF]]
// CHECK-NEXT: %[[A:.+]] = fmha.to_layout %[[SEL]]
// CHECK-NEXT: scf.yield %[[A]]
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[B:.+]] = fmha.to_layout %[[X]]
// CHECK-NEXT: scf.yield %[[B]]
// CHECK: %[[SC:.+]] = arith.mulf %[[S]], %[[C]] : vector<16x16xf32>
// CHECK: %[[RAW:.+]] = vector.multi_reduction <maximumf>, %[[S]], %[[ROWINF]] [1]
// CHECK: %[[RS:.+]] = arith.mulf %[[RAW]], %[[CROW]] : vector<16xf32>
// CHECK: %[[MNEW:.+]] = arith.maximumf %[[RS]], %[[M]] : vector<16xf32>
// CHECK: %[[BC:.+]] = vector.broadcast
// CHECK: arith.subf %[[SC]], %{{.+}} : vector<16x16xf32>
// CHECK-NOT: arith.mulf
// CHECK: return
func.func @scores(%x: vector<16x16xf32>, %vis: vector<16x16xi1>, %p: i1, %m: vector<16xf32>) -> (vector<16x16xf32>, vector<16xf32>) {
  %c = arith.constant dense<0.125> : vector<16x16xf32>
  %ninf = arith.constant dense<0xFF800000> : vector<16x16xf32>
  %s = scf.if %p -> (vector<16x16xf32>) {
    %xs = arith.mulf %x, %c : vector<16x16xf32>
    %sel = arith.select %vis, %xs, %ninf : vector<16x16xi1>, vector<16x16xf32>
    %a = fmha.to_layout %sel to layout(#c) : vector<16x16xf32>
    scf.yield %a : vector<16x16xf32>
  } else {
    %xs = arith.mulf %c, %x : vector<16x16xf32>
    %a = fmha.to_layout %xs to layout(#c) : vector<16x16xf32>
    scf.yield %a : vector<16x16xf32>
  }
  %mnew = vector.multi_reduction <maximumf>, %s, %m [1] : vector<16x16xf32> to vector<16xf32>
  %r = vector.shape_cast %mnew : vector<16xf32> to vector<16x1xf32>
  %b = vector.broadcast %r : vector<16x1xf32> to vector<16x16xf32>
  %d = arith.subf %s, %b : vector<16x16xf32>
  %e = math.exp %d : vector<16x16xf32>
  return %e, %mnew : vector<16x16xf32>, vector<16xf32>
}

// -----

// Left alone: a negative scale (it turns -inf to +inf and the max to a
// min), a select to another value than -inf, branches scaled by different
// constants, a sum.
// CHECK-LABEL: func.func @kept
// CHECK: %[[N:.+]] = arith.mulf %{{.+}}, %{{.+}} : vector<16x16xf32>
// CHECK: arith.select %{{.+}}, %[[N]], %{{.+}}
// CHECK: %[[Z:.+]] = arith.mulf
// CHECK: arith.select %{{.+}}, %[[Z]], %{{.+}}
// CHECK: scf.if
// CHECK: arith.mulf
// CHECK: scf.yield
// CHECK: arith.mulf
// CHECK: scf.yield
// CHECK: %[[Q:.+]] = arith.mulf
// CHECK: vector.multi_reduction <add>, %[[Q]]
func.func @kept(%x: vector<16x16xf32>, %vis: vector<16x16xi1>, %p: i1, %m: vector<16xf32>) -> (vector<16x16xf32>, vector<16x16xf32>, vector<16x16xf32>, vector<16xf32>) {
  %neg = arith.constant dense<-0.5> : vector<16x16xf32>
  %c = arith.constant dense<0.5> : vector<16x16xf32>
  %c2 = arith.constant dense<0.25> : vector<16x16xf32>
  %ninf = arith.constant dense<0xFF800000> : vector<16x16xf32>
  %zero = arith.constant dense<0.0> : vector<16x16xf32>
  %xn = arith.mulf %x, %neg : vector<16x16xf32>
  %a = arith.select %vis, %xn, %ninf : vector<16x16xi1>, vector<16x16xf32>
  %xc = arith.mulf %x, %c : vector<16x16xf32>
  %b = arith.select %vis, %xc, %zero : vector<16x16xi1>, vector<16x16xf32>
  %s = scf.if %p -> (vector<16x16xf32>) {
    %y = arith.mulf %x, %c : vector<16x16xf32>
    scf.yield %y : vector<16x16xf32>
  } else {
    %y = arith.mulf %x, %c2 : vector<16x16xf32>
    scf.yield %y : vector<16x16xf32>
  }
  %xq = arith.mulf %x, %c : vector<16x16xf32>
  %sum = vector.multi_reduction <add>, %xq, %m [1] : vector<16x16xf32> to vector<16xf32>
  return %a, %b, %s, %sum : vector<16x16xf32>, vector<16x16xf32>, vector<16x16xf32>, vector<16xf32>
}

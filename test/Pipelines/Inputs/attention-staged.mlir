// The staged forward's input for staged-replay.test: bf16, GQA 4:2, D 64,
// causal with 4 sink tokens and softcap (two kv loops), on tensors.
func.func @attention(%q: tensor<2x4x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>, %o: tensor<2x4x?x64xbf16>, %l: tensor<2x4x?xf32>) -> (tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %v : tensor<2x4x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>) outs(%o : tensor<2x4x?x64xbf16>, %l : tensor<2x4x?xf32>) {mask = #fmha.mask<"b:100,0,4">, softcap = 30.0 : f32} -> tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>
  return %0#0, %0#1 : tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>
}

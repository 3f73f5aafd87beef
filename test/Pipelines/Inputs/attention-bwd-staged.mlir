// The staged backward's input for staged-replay.test: bf16, GQA 4:2, D 64,
// bottom-right causal with 4 sink tokens and softcap (the dQ loop's sink
// and window kv loops, the dK/dV loop's q bounds), on tensors.
func.func @grads(%q: tensor<2x4x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>,
                 %o: tensor<2x4x?x64xbf16>, %lse: tensor<2x4x?xf32>, %do: tensor<2x4x?x64xbf16>,
                 %dq: tensor<2x4x?x64xbf16>, %dk: tensor<2x2x?x64xbf16>, %dv: tensor<2x2x?x64xbf16>)
    -> (tensor<2x4x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>) {
  %0:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<2x4x?x64xbf16>, tensor<2x2x?x64xbf16>,
          tensor<2x2x?x64xbf16>, tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>, tensor<2x4x?x64xbf16>)
      outs(%dq, %dk, %dv : tensor<2x4x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>)
      {mask = #fmha.mask<"b:100,0,4">, softcap = 30.0 : f32}
      -> tensor<2x4x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>
  return %0#0, %0#1, %0#2 : tensor<2x4x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>
}

#!/usr/bin/env python3
"""fmha.integrations.transformers on small random-weight Llama and Gemma 2
models (head_dim 128; Gemma 2 with sliding windows on alternate layers and
logit soft-capping), against transformers' eager attention on the same
weights: logits, the gradients of every attention projection, and decoding
through the KV cache (per-step logits and greedy choices).

Here (LLVM): test/gpu/transformers_test.py --make-bundles DIR --bin build/bin
There (torch, transformers): test/gpu/transformers_test.py --bundles DIR
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import fmha  # noqa: E402
from checks import Checks, main  # noqa: E402

LLAMA = dict(vocab_size=256, hidden_size=512, intermediate_size=1024, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=128,
             max_position_embeddings=512)
GEMMA2 = dict(vocab_size=256, hidden_size=512, intermediate_size=1024, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, head_dim=128,
              max_position_embeddings=512, sliding_window=32, query_pre_attn_scalar=128,
              attn_logit_softcapping=50.0, final_logit_softcapping=30.0)


def signatures():
    """(hq, hk, d, mask, scale, softcap) of the attention calls the models make."""
    scale = 128 ** -0.5
    return [(4, 2, 128, "b", scale, None),
            (4, 2, 128, "b", GEMMA2["query_pre_attn_scalar"] ** -0.5, 50.0),
            (4, 2, 128, "b:%d,0" % (GEMMA2["sliding_window"] - 1),
             GEMMA2["query_pre_attn_scalar"] ** -0.5, 50.0)]


def make_bundles(out, bin_dir):
    os.makedirs(out, exist_ok=True)
    for hq, hk, d, mask, scale, softcap in signatures():
        for kind in ("fwd", "bwd"):
            sig = dict(target="cuda", chip="sm_90a", dtype="bf16", hq=hq, hk=hk, d=d, dv=d,
                       mask=mask, scale=scale, softcap=softcap)
            if kind == "bwd":
                sig.update(kind="bwd", deterministic=False)
            path = os.path.join(out, fmha.bundle_name(**sig))
            fmha.compile_bundle(path, compiler=os.path.join(bin_dir, "fmha-compile"), **sig)
            print("compiled", os.path.basename(path))


check = Checks()


def rel(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def run(bundles):
    import torch
    import transformers
    import fmha.integrations.transformers as fmha_hf
    print("transformers", transformers.__version__, "torch", torch.__version__)
    fmha_hf.bundle_dir = bundles
    fmha_hf.register()
    for name, cfg_cls, model_cls, kwargs in (
            ("Llama", transformers.LlamaConfig, transformers.LlamaForCausalLM, LLAMA),
            ("Gemma 2", transformers.Gemma2Config, transformers.Gemma2ForCausalLM, GEMMA2)):
        torch.manual_seed(0)
        models = {}
        for impl in ("eager", "fmha"):
            cfg = cfg_cls(**kwargs)
            cfg._attn_implementation = impl
            m = model_cls(cfg).to("cuda", torch.bfloat16)
            if models:
                m.load_state_dict(models["eager"].state_dict())
            models[impl] = m
        ids = torch.randint(0, kwargs["vocab_size"], (2, 96), device="cuda")
        out = {}
        for impl, m in models.items():
            m.zero_grad()
            logits = m(ids).logits
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            loss.backward()
            grads = {n: p.grad.detach().clone() for n, p in m.named_parameters()
                     if p.grad is not None and any(x in n for x in ("q_proj", "k_proj", "v_proj"))}
            out[impl] = (logits.detach(), grads)
        err = rel(out["fmha"][0], out["eager"][0])
        check(err <= 1e-2, "%s logits: rel err %.2e (<= 1e-2)" % (name, err))
        worst = max(rel(out["fmha"][1][n], out["eager"][1][n]) for n in out["eager"][1])
        check(worst <= 5e-2, "%s q/k/v projection gradients: worst rel err %.2e (<= 5e-2), %d tensors"
              % (name, worst, len(out["eager"][1])))
        # Decoding through the KV cache (one query row against the cache,
        # bottom-right causal): eager's greedy continuation, fed back one
        # token at a time to both models; the per-step logits compared, and
        # the greedy choices wherever eager's top two logits differ by more
        # than 0.1 (random weights leave near-ties that bf16 rounding flips).
        prompt = ids[:1, :40]
        seq = models["eager"].generate(prompt, max_new_tokens=24, do_sample=False)
        steps = {}
        for impl, m in models.items():
            with torch.no_grad():
                o = m(seq[:, :40], use_cache=True)
                past, logits = o.past_key_values, [o.logits[:, -1]]
                for t in range(40, 63):
                    o = m(seq[:, t:t + 1], past_key_values=past, use_cache=True)
                    past = o.past_key_values
                    logits.append(o.logits[:, -1])
            steps[impl] = torch.cat(logits).float()
        err = rel(steps["fmha"], steps["eager"])
        check(err <= 1e-2, "%s decode through the cache, 24 steps: logits rel err %.2e (<= 1e-2)"
              % (name, err))
        top2 = steps["eager"].topk(2, dim=-1).values
        clear = (top2[:, 0] - top2[:, 1]) > 0.1
        differ = int(((steps["fmha"].argmax(-1) != steps["eager"].argmax(-1)) & clear).sum())
        check(differ == 0, "%s greedy choices with a margin > 0.1: %d of %d differ"
              % (name, differ, int(clear.sum())))
    # What it refuses: a padding mask.
    m = models["fmha"]
    mask = torch.ones(2, 96, dtype=torch.long, device="cuda")
    mask[1, :10] = 0
    try:
        m(ids, attention_mask=mask)
        check(False, "a padding mask is refused")
    except ValueError as e:
        check("padding masks are not supported" in str(e), "a padding mask is refused: %s" % e)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main(__doc__, make_bundles, run))

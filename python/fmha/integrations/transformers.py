"""FMHA as a transformers attention implementation.

    import fmha.integrations.transformers as fmha_hf
    fmha_hf.register()                      # once: the name "fmha"
    model = AutoModelForCausalLM.from_config(config, attn_implementation="fmha")

register() adds `attention` below to transformers' AttentionInterface (and,
where transformers has it, a mask function to AttentionMaskInterface that
builds no mask: the kernels apply causality and sliding windows
themselves). What it takes: grouped-query heads (K/V never repeated),
causal attention (bottom-right aligned, so decoding against a cache works),
sliding windows (transformers' `sliding_window` W: keys i - W < j <= i),
logit soft-capping and the module's scaling. What it refuses, with a
message: a padding mask (a 2-d attention_mask with zeros, or a 4-d mask),
attention dropout in training, non-causal modules. Learned sinks and
padding join when FMHA has them.

bundle_dir: fmha.attention's (None: the cache, compiling what is missing).
"""

from .. import _attention

bundle_dir = None


def _mask_spec(module, query, key, sliding_window):
    if not getattr(module, "is_causal", True):
        raise ValueError("fmha attention: %s is not causal; only causal attention is "
                         "supported" % type(module).__name__)
    if sliding_window:
        return "b:%d,0" % (int(sliding_window) - 1)
    return "b"


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
              sliding_window=None, softcap=None, **kwargs):
    """transformers' attention function signature: query [B, Hq, S, D], key
    and value [B, Hk, S, D] (views are fine); returns ([B, S, Hq, Dv], None)."""
    if attention_mask is not None:
        if attention_mask.dim() != 2 or not bool(attention_mask.all()):
            raise ValueError("fmha attention: padding masks are not supported yet "
                             "(attention_mask of shape %s)" % (tuple(attention_mask.shape),))
    if dropout and module.training:
        raise ValueError("fmha attention: attention dropout (%r) is not supported" % dropout)
    mask = _mask_spec(module, query, key, sliding_window)
    out = _attention.attention(query, key, value, mask=mask, scale=scaling,
                               softcap=softcap if softcap else None, bundle_dir=bundle_dir)
    return out.transpose(1, 2), None


def _no_mask(*args, attention_mask=None, **kwargs):
    """The mask function: none (the kernel masks); transformers passes the
    result to attention() as attention_mask. A padding mask (a 2-d
    attention_mask with zeros) is refused rather than ignored."""
    if attention_mask is not None and not bool(attention_mask.all()):
        raise ValueError("fmha attention: padding masks are not supported yet")
    return None


def register(name="fmha"):
    """Registers the attention function (and the mask function where
    transformers has AttentionMaskInterface) under `name`."""
    import transformers
    transformers.AttentionInterface.register(name, attention)
    masks = getattr(transformers, "AttentionMaskInterface", None)
    if masks is not None:
        masks.register(name, _no_mask)
    return name

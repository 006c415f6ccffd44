#!/usr/bin/env python3
"""Layer-by-layer parity of our C forward against transformers (test oracle
only; needs torch + transformers).

usage: layerwise.py MODEL_DIR DUMP_DIR [ATTN]
  DUMP_DIR: written by `FIDELITY_FORWARD_DUMP=DUMP_DIR fidelity capture ...`
            (src/engine/ops/tensor.c fd_op_dump(): raw little-endian arrays
            <stage>[.L<layer>].<bf16|f32|u8|i64> of the FIRST forward call).
  ATTN:     transformers attn_implementation (default eager).

Runs the window whose ids are DUMP_DIR/ids.i64 through GlmMoeDsaForCausalLM
(bf16) with forward hooks on every submodule of interest and prints, for each
stage in forward order,
  global: fraction of bit-identical elements (ours vs transformers' value in
          the same run) and the max |diff|;
  local:  the same after feeding OUR dumped input of that stage through the
          transformers submodule (isolates the stage's own arithmetic).
The first stage whose LOCAL check is not 1.0 is where our arithmetic differs.
"""
import os, sys
import numpy as np
import torch
from transformers import GlmMoeDsaForCausalLM

model_dir, dump_dir = sys.argv[1:3]
attn = sys.argv[3] if len(sys.argv) > 3 else "eager"
torch.set_num_threads(2)
model = GlmMoeDsaForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, attn_implementation=attn).eval()
cfg = model.config
ids = np.fromfile(os.path.join(dump_dir, "ids.i64"), dtype="<i8")
S = len(ids)


def ours(stage, L=None, ext="bf16"):
    p = os.path.join(dump_dir, stage + ("" if L is None else ".L%d" % L) + "." + ext)
    if not os.path.exists(p):
        return None
    if ext == "bf16":
        return torch.from_numpy(np.fromfile(p, dtype="<i2").astype(np.int16)).view(torch.bfloat16).reshape(S, -1)
    if ext == "f32":
        return torch.from_numpy(np.fromfile(p, dtype="<f4")).reshape(S, -1)
    return torch.from_numpy(np.fromfile(p, dtype=np.uint8)).reshape(S, -1)


def cmp(a, b):
    """a: ours, b: theirs -> (bit-identical fraction, max abs diff)"""
    a = a.reshape(S, -1)
    b = b.reshape(S, -1)
    if a.dtype == torch.bfloat16 and b.dtype == torch.bfloat16:
        same = (a.view(torch.int16) == b.view(torch.int16)).float().mean().item()
    else:
        same = (a.float() == b.float()).float().mean().item()
    return same, (a.float() - b.float()).abs().max().item()


caps = {}


def out_hook(name, pick=None):
    def h(mod, inp, out):
        o = out if pick is None else out[pick]
        caps[name] = o.detach().reshape(S, -1).clone()
    return h


def in_hook(name):
    def h(mod, inp):
        caps[name] = inp[0].detach().reshape(S, -1).clone()
    return h


m = model.model
m.embed_tokens.register_forward_hook(out_hook("embed"))
m.norm.register_forward_hook(out_hook("final"))
for L, layer in enumerate(m.layers):
    a = layer.self_attn
    layer.input_layernorm.register_forward_hook(out_hook("attn_in.%d" % L))
    for n in ("q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj"):
        getattr(a, n).register_forward_hook(out_hook("%s.%d" % (n, L)))
    a.o_proj.register_forward_pre_hook(in_hook("attn_core.%d" % L))
    a.register_forward_hook(out_hook("topk.%d" % L, 2))
    if a.indexer is not None:
        ix = a.indexer
        ix.wq_b.register_forward_hook(out_hook("idx_q.%d" % L))
        ix.wk.register_forward_hook(out_hook("idx_k.%d" % L))
        ix.k_norm.register_forward_hook(out_hook("idx_k_norm.%d" % L))
        ix.weights_proj.register_forward_hook(out_hook("idx_w.%d" % L))
    layer.post_attention_layernorm.register_forward_pre_hook(in_hook("attn_resid.%d" % L))
    layer.post_attention_layernorm.register_forward_hook(out_hook("post_ln.%d" % L))
    layer.mlp.register_forward_hook(out_hook("mlp.%d" % L))
    if hasattr(layer.mlp, "gate"):
        layer.mlp.gate.register_forward_hook(out_hook("router_logits.%d" % L, 0))
        layer.mlp.experts.register_forward_hook(out_hook("routed.%d" % L))
        layer.mlp.shared_experts.register_forward_hook(out_hook("shared.%d" % L))
    layer.register_forward_hook(out_hook("layer_out.%d" % L, 0))

with torch.inference_mode():
    model(input_ids=torch.from_numpy(ids)[None, :], attention_mask=torch.ones(1, S, dtype=torch.int64), use_cache=False)


def row(name, o, t, local=None):
    if o is None:  # a stage this window does not run (the indexer when S <= index_topk)
        print("%-22s (not run by our forward for this window)" % name)
        return
    g = cmp(o, t)
    s = "%-22s global same=%.4f maxdiff=%.3g" % (name, g[0], g[1])
    if local is not None:
        l = cmp(o, local)
        s += "   local same=%.4f maxdiff=%.3g" % l
    print(s)


def sel_from_topk(tk):
    sel = torch.zeros(S, S, dtype=torch.uint8)
    tk = tk.reshape(S, -1).long()
    for t in range(S):
        for j in tk[t].tolist():
            if j <= t:
                sel[t, j] = 1
    return sel


bf = torch.bfloat16
with torch.inference_mode():
    row("embed", ours("embed"), caps["embed"])
    x_in = ours("embed")
    for L, layer in enumerate(m.layers):
        a = layer.self_attn
        print("--- layer %d (%s, %s)" % (L, cfg.indexer_types[L], cfg.mlp_layer_types[L]))
        row("attn_in", ours("attn_in", L), caps["attn_in.%d" % L], layer.input_layernorm(x_in))
        h = ours("attn_in", L)
        row("q_a", ours("q_a", L), caps["q_a_proj.%d" % L], a.q_a_proj(h))
        row("q_a_norm", ours("q_a_norm", L), caps["q_a_layernorm.%d" % L], a.q_a_layernorm(ours("q_a", L)))
        row("q_b", ours("q_b", L), caps["q_b_proj.%d" % L], a.q_b_proj(ours("q_a_norm", L)))
        row("kv_a", ours("kv_a", L), caps["kv_a_proj_with_mqa.%d" % L], a.kv_a_proj_with_mqa(h))
        rkv = cfg.kv_lora_rank
        row("kv_a_norm", ours("kv_a_norm", L), caps["kv_a_layernorm.%d" % L],
            a.kv_a_layernorm(ours("kv_a", L)[:, :rkv]))
        row("kv_b", ours("kv_b", L), caps["kv_b_proj.%d" % L], a.kv_b_proj(ours("kv_a_norm", L)))
        if a.indexer is not None and ours("idx_q", L) is not None:
            ix = a.indexer
            row("idx_q", ours("idx_q", L), caps["idx_q.%d" % L], ix.wq_b(ours("q_a_norm", L)))
            row("idx_k", ours("idx_k", L), caps["idx_k.%d" % L], ix.wk(h))
            row("idx_k_norm", ours("idx_k_norm", L), caps["idx_k_norm.%d" % L], ix.k_norm(ours("idx_k", L)))
            row("idx_w(ours bf16)", ours("idx_w", L), caps["idx_w.%d" % L])
        # selection (set equality per row); local = transformers' indexer on our inputs
        theirs_sel = sel_from_topk(caps["topk.%d" % L])
        os_ = ours("sel", L, "u8")
        msg = "sel rows equal=%.4f" % (os_ == theirs_sel).all(dim=1).float().mean().item()
        if a.indexer is not None:
            pos = torch.arange(S)[None]
            pe = m.rotary_emb(h[None], pos)
            mask = torch.zeros(1, S, S, dtype=bf).masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1)[None],
                                                             torch.finfo(bf).min)
            if attn != "eager":
                mask = None
            tk = ix(h[None], ours("q_a_norm", L)[None], pe, mask, pos)
            msg += "   local rows equal=%.4f" % (os_ == sel_from_topk(tk)).all(dim=1).float().mean().item()
        print("%-22s %s" % ("sel", msg))
        # attention core: local = transformers' eager attention on our q, k, v and selection
        nh, dn, dr, dv = cfg.num_attention_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        q_ = ours("q_rope", L).reshape(S, nh, dn + dr).transpose(0, 1)[None]
        kvb = ours("kv_b", L).reshape(S, nh, dn + dv)
        kr = ours("kv_a_rope", L)[:, cfg.kv_lora_rank:]
        k_ = torch.cat([kvb[:, :, :dn], kr[:, None, :].expand(S, nh, dr)], dim=-1).transpose(0, 1)[None]
        v_ = kvb[:, :, dn:].transpose(0, 1)[None]
        amask = torch.zeros(1, 1, S, S, dtype=bf).masked_fill(ours("sel", L, "u8")[None, None] == 0,
                                                               torch.finfo(bf).min)
        from transformers.models.glm_moe_dsa.modeling_glm_moe_dsa import eager_attention_forward
        lo, _ = eager_attention_forward(a, q_, k_, v_, amask, a.scaling)
        row("attn_core", ours("attn_core", L), caps["attn_core.%d" % L], lo.reshape(S, -1))
        row("o_proj", ours("o_proj", L), caps["o_proj.%d" % L], a.o_proj(ours("attn_core", L)))
        row("attn_resid", ours("attn_resid", L), caps["attn_resid.%d" % L], x_in + ours("o_proj", L))
        row("post_ln", ours("post_ln", L), caps["post_ln.%d" % L],
            layer.post_attention_layernorm(ours("attn_resid", L)))
        h2 = ours("post_ln", L)
        if hasattr(layer.mlp, "gate"):
            rl = ours("router_logits", L, "f32")
            row("router_logits(f32)", rl, caps["router_logits.%d" % L].float(), layer.mlp.gate(h2)[0].float())
            _, tw, ti = layer.mlp.gate(h2)
            row("routed", ours("routed", L), caps["routed.%d" % L], layer.mlp.experts(h2, ti, tw))
            row("shared", ours("shared", L), caps["shared.%d" % L], layer.mlp.shared_experts(h2))
        row("mlp", ours("mlp", L), caps["mlp.%d" % L], layer.mlp(h2[None]).reshape(S, -1))
        row("layer_out", ours("layer_out", L), caps["layer_out.%d" % L], ours("attn_resid", L) + ours("mlp", L))
        x_in = ours("layer_out", L)
    row("final", ours("final"), caps["final"], m.norm(x_in))

#!/usr/bin/env python3
"""Stage-by-stage parity of the glm5_next forward against transformers (test
oracle only; needs torch + transformers).

usage: layerwise_next.py MODEL_DIR DUMP_DIR
  DUMP_DIR: written by `FIDELITY_FORWARD_DUMP=DUMP_DIR fidelity capture ...`
            (next_forward.c nx_dump: raw arrays <stage>[.L<layer>].<ext>).
Run with ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 (as the goldens).

For every stage in forward order it prints "local": the fraction of
bit-identical elements between our dumped output and transformers' module
(or function) applied to OUR dumped input of that stage, and the max |diff|;
the first stage below 1.0 is where our arithmetic differs.  "global" rows
compare with transformers' own value in a full forward (hooks)."""
import os, sys
import numpy as np
import torch
import torch.nn.functional as F
from transformers import Glm5NextForConditionalGeneration
import transformers.models.glm5_next.modeling_glm5_next as mod

model_dir, dump_dir = sys.argv[1:3]
torch.set_num_threads(2)
model = Glm5NextForConditionalGeneration.from_pretrained(model_dir, dtype=torch.bfloat16,
                                                         attn_implementation="eager").eval()
tm = model.model.language_model
cfg = tm.config
ids = np.fromfile(os.path.join(dump_dir, "ids.i64"), dtype="<i8")
S, H, M = len(ids), cfg.hidden_size, cfg.hc_mult
bf = torch.bfloat16


def ours(stage, L=None, ext="bf16"):
    p = os.path.join(dump_dir, stage + ("" if L is None else ".L%d" % L) + "." + ext)
    if not os.path.exists(p):
        return None
    if ext == "bf16":
        return torch.from_numpy(np.fromfile(p, dtype="<i2").astype(np.int16)).view(bf).reshape(S, -1)
    if ext == "f32":
        return torch.from_numpy(np.fromfile(p, dtype="<f4")).reshape(S, -1)
    return torch.from_numpy(np.fromfile(p, dtype=np.uint8)).reshape(S, -1)


def row(name, o, t):
    if o is None or t is None:
        print("%-24s (missing)" % name)
        return
    a, b = o.reshape(S, -1), t.reshape(S, -1)
    if a.dtype == bf and b.dtype == bf:
        eq = a.view(torch.int16) == b.view(torch.int16)
    else:
        eq = a.float() == b.float()
    print("%-24s same=%.6f (%d differ) maxdiff=%.3g" % (name, eq.double().mean().item(), (~eq).sum().item(),
                                                       (a.float() - b.float()).abs().max().item()))


caps = {}
for L, layer in enumerate(tm.layers):
    layer.register_forward_hook(lambda m_, i, o, L=L: caps.__setitem__("layer_out.%d" % L, o[0].detach().clone()))
tm.norm.register_forward_hook(lambda m_, i, o: caps.__setitem__("final", o.detach().clone()))
with torch.inference_mode():
    model(input_ids=torch.from_numpy(ids)[None, :], attention_mask=torch.ones(1, S, dtype=torch.int64),
          use_cache=False)


def streams(t):  # [S, M*H] -> [1, S, M, H]
    return t.reshape(1, S, M, H)


def hc_check(hcm, X, L, site):
    hc = hcm.hc_mult
    flat = hcm.input_norm(X.flatten(start_dim=2).float())
    mix = F.linear(flat, hcm.fn.float())
    row("hcmix_" + site, ours("hcmix_" + site, L, "f32"), mix[0])
    post, comb, col = hcm(X)
    row("hcpost_" + site, ours("hcpost_" + site, L, "f32"), post[0])
    row("hccomb_" + site, ours("hccomb_" + site, L, "f32"), comb[0])
    # the same Sinkhorn on OUR mix (isolates the elementwise part)
    om = ours("hcmix_" + site, L, "f32")[None]
    pre_w, post_w, comb_w = om.split([hc, hc, hc * hc], dim=-1)
    pre_b, post_b, comb_b = hcm.base.split([hc, hc, hc * hc])
    s0, s1, s2 = hcm.scale.unbind(0)
    pst = 2 * torch.sigmoid(post_w * s1 + post_b)
    cl = comb_w.view(1, S, hc, hc) * s2 + comb_b.view(hc, hc)
    cb = torch.softmax(cl, dim=-1) + hcm.hc_eps
    cb = cb / (cb.sum(dim=-2, keepdim=True) + hcm.hc_eps)
    for _ in range(hcm.hc_sinkhorn_iters - 1):
        cb = cb / (cb.sum(dim=-1, keepdim=True) + hcm.hc_eps)
        cb = cb / (cb.sum(dim=-2, keepdim=True) + hcm.hc_eps)
    pre = torch.sigmoid(pre_w * s0 + pre_b) + hcm.hc_eps
    row("  post(our mix)", ours("hcpost_" + site, L, "f32"), pst[0])
    row("  comb(our mix)", ours("hccomb_" + site, L, "f32"), cb[0])
    row("  collapsed(our mix)", ours("hccol_" + site, L), (pre.unsqueeze(-1) * X).sum(dim=2).to(bf)[0])
    row("hccol_" + site, ours("hccol_" + site, L), col[0])


def combine(L, site, out, X):
    post = ours("hcpost_" + site, L, "f32")[None]
    comb = ours("hccomb_" + site, L, "f32").reshape(1, S, M, M)
    return post.to(bf).unsqueeze(-1) * out[None].unsqueeze(-2) + torch.matmul(comb.to(bf).transpose(-1, -2), X)


def kda_check(a, h, L):
    mixed = torch.cat([a.q_proj(h), a.k_proj(h), a.v_proj(h)], dim=-1).transpose(1, 2)
    conv = mod.causal_conv1d_fn(mixed, weight=a.conv1d.weight.squeeze(1), bias=a.conv1d.bias, activation=a.activation)
    row("kda_qkv", ours("kda_qkv", L, "f32"), conv.transpose(1, 2)[0].float())
    g = a.forget_gate(h)
    row("kda_g", ours("kda_g", L, "f32"), g[0].reshape(S, -1))
    beta = torch.sigmoid(a.b_proj(h))
    row("kda_beta", ours("kda_beta", L, "f32"), beta[0].float())
    qkv = ours("kda_qkv", L, "f32").to(bf)
    Q = a.qkv_dim
    hs = (1, S, -1, a.head_dim)
    core, _ = mod.chunk_kimi_delta_attention(qkv[:, :Q].reshape(hs), qkv[:, Q:2 * Q].reshape(hs),
                                             qkv[:, 2 * Q:].reshape(hs), g=ours("kda_g", L, "f32").reshape(hs),
                                             beta=ours("kda_beta", L, "f32").to(bf)[None],
                                             use_qk_l2norm_in_kernel=True)
    row("kda_core(bf16)", ours("kda_core", L, "f32").to(bf), core[0].reshape(S, -1))
    gate = a.g_b_proj(a.g_a_proj(h))
    row("kda_gate", ours("kda_gate", L), gate[0])
    o = a.o_norm(ours("kda_core", L, "f32").to(bf).reshape(hs), ours("kda_gate", L).reshape(hs))
    row("kda_o", ours("kda_o", L), o[0].reshape(S, -1))
    row("attn(o_proj)", ours("attn", L), a.o_proj(ours("kda_o", L)))


with torch.inference_mode():
    X = tm.embed_tokens(torch.from_numpy(ids)[None]).unsqueeze(2).expand(1, S, M, H)
    for L, layer in enumerate(tm.layers):
        print("--- layer %d (%s, %s)" % (L, cfg.layer_types[L], cfg.mlp_layer_types[L]))
        hc_check(layer.attn_hc, X, L, "attn")
        row("attn_in", ours("attn_in", L), layer.input_layernorm(ours("hccol_attn", L)))
        h = ours("attn_in", L)[None]
        if layer.block_type == "linear_attention":
            kda_check(layer.self_attn, h, L)
            row("attn(module)", ours("attn", L), layer.self_attn(h)[0])
        else:
            a = layer.self_attn
            mask = torch.ones(1, S, dtype=torch.bool)
            osel = ours("sel", L, "u8")
            if a.indexer is not None:
                qr = a.q_a_layernorm(a.q_a_proj(h))
                tk = a.indexer(hidden_states=h, q_resid=qr, attention_mask=mask, past_key_values=None)[0].long()
                tsel = torch.zeros(S, S, dtype=torch.uint8)
                for t in range(S):
                    for j in tk[t].tolist():
                        if 0 <= j <= t:
                            tsel[t, j] = 1
                eqr = (tsel == osel).all(dim=1)
                print("%-24s rows equal=%.6f (%d differ, first %s)" % ("sel(local)", eqr.double().mean().item(),
                      (~eqr).sum().item(), (~eqr).nonzero()[:5, 0].tolist()))
            width = int(osel.sum(1).max())
            idx = torch.full((1, S, width), -1, dtype=torch.int32)
            for t in range(S):
                js = osel[t].nonzero()[:, 0]
                idx[0, t, :len(js)] = js.to(torch.int32)
            saved = a.indexer
            a.indexer = None
            o, _, _ = a(hidden_states=h, attention_mask=mask, prev_topk_indices=idx)
            a.indexer = saved
            row("attn(our sel)", ours("attn", L), o[0])
        row("attn_mid", ours("attn_mid", L), combine(L, "attn", ours("attn", L), X)[0])
        X2 = streams(ours("attn_mid", L))
        hc_check(layer.ffn_hc, X2, L, "ffn")
        row("post_ln", ours("post_ln", L), layer.post_attention_layernorm(ours("hccol_ffn", L)))
        row("mlp", ours("mlp", L), layer.mlp(ours("post_ln", L)[None])[0])
        row("layer_out", ours("layer_out", L), combine(L, "ffn", ours("mlp", L), X2)[0])
        row("layer_out(global)", ours("layer_out", L), caps["layer_out.%d" % L][0])
        X = streams(ours("layer_out", L))
    row("final", ours("final"), tm.norm(tm.hc_head(X))[0])
    row("final(global)", ours("final"), caps["final"][0])

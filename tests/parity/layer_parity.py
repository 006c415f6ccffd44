#!/usr/bin/env python3
"""Per-layer, per-stage parity of our forward with transformers, teacher
forced, for every layer of every architecture, on any host (issue 17 item 4).
Test oracle only: needs torch + transformers (skips cleanly without them).

usage: layer_parity.py BINARY [--arch glm_moe_dsa|glm5_next|minimax_m2|qwen3_5|qwen3_5_moe|qwen4_exp|deepseek_v4]... [--seed N] [--keep DIR] [--json FILE]
                       [--perturb STAGE.LN] [--inject]

For each architecture (default: all six) it
  1. writes a checkpoint with transformers' own save_pretrained (random init,
     torch.manual_seed(seed), bf16; glm_moe_dsa: the config of
     `fidelity fixture --preset tiny`; glm5_next: a tiny config built here,
     KDA, DSA full and shared layers, dense and MoE MLPs, a DSA top-k below the window;
     minimax_m2: the config of `fidelity fixture --preset minimax-m2-tiny`;
     qwen3_5 / qwen3_5_moe: the configs of `fixture --preset qwen35-tiny / qwen35-moe-tiny`;
     qwen4_exp: `fixture --preset qwen4-exp-tiny`'s, QSA selections compared per row;
     deepseek_v4: `fixture --preset deepseek-v4-tiny`'s, indexer and expert selections per row),
  2. captures one window of the fixture panel (64 tokens; qwen3_5: 100, two
     delta-rule chunks) with BINARY and
     FIDELITY_FORWARD_DUMP (our every stage of every layer),
  3. for every stage of every layer feeds OUR dumped input of that stage to
     transformers' module (teacher forcing: both sides start from the same
     bits, so each stage is judged on its own arithmetic, not on what earlier
     stages left), and compares the outputs element by element;
  4. with --inject (glm_moe_dsa, minimax_m2), the other direction: transformers' own
     input of layer L fed to our layer L (FIDELITY_FORWARD_INJECT), our
     layer output against transformers' (run_inject).

Bounds (the summation-order analysis, docs/ARCHITECTURE.md "Per-layer parity"):
  exact     element-wise stages (embedding, residual adds, RoPE): 0.
  reduce    a short reduction then element-wise (RMSNorm/LayerNorm, the mHC
            collapse / Sinkhorn / combine over hc_mult streams): 1 ulp of the
            output dtype (the reduction order may move the last bit).
  linear    y = x W^T with fp32 accumulation of K exact bf16 x bf16 products:
            |ours - theirs| <= 2 gamma_K (|x| |W|^T) + ulp(y),
            gamma_K = K u / (1 - K u), u = 2^-24 (any summation order is
            within gamma_K sum|x_i w_i| of the exact sum; each side rounds
            once to the output dtype).
  composite the same bound for the stage's last product h W^T, with h
            computed by transformers on the same input, plus 2 ulp(h) |W|^T
            (the inner products' bf16 results may move by an ulp or two);
            routed experts: the routing-weighted sum of the per-expert bounds
            plus k ulp(y) (transformers adds the k slots in bf16).
  row       (stages whose inner products are not exposed: KDA conv/gates/core)
            4 bf16 ulps of the row's largest |value| - an engineering bound,
            not a derivation.
  select    DSA key selection and MoE top-k expert sets, per row: all equal.
Exit 1 when any bound is violated, 0 otherwise."""
import argparse, json, math, os, shutil, subprocess, sys, tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    import transformers
except ImportError:
    print("layer_parity: skipped (torch not installed)")
    sys.exit(0)

bf = torch.bfloat16
U32 = 2.0 ** -24


def ulp(v, dtype):
    """spacing of dtype at |v| (float64 tensor)"""
    p = 7 if dtype == bf else 23
    a = v.double().abs().clamp(min=2.0 ** -126)
    _, e = torch.frexp(a)
    return torch.ldexp(torch.ones_like(a), (e - 1 - p).to(torch.int32))


def ordered(t):
    if t.dtype == bf:
        i = t.view(torch.int16).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFF), i)
    i = t.float().view(torch.int32).to(torch.int64)
    return torch.where(i < 0, -(i & 0x7FFFFFFF), i)


def prod_bound(h, W, c_in=0.0):
    """2 gamma_K |h||W|^T + c_in ulp(h)|W|^T for h [N, K], W [O, K]"""
    K = h.shape[-1]
    g = K * U32 / (1 - K * U32)
    aw = W.double().abs()
    b = 2 * g * (h.double().abs() @ aw.T)
    if c_in:
        b = b + c_in * (ulp(h, h.dtype) @ aw.T)
    return b


class Report:
    def __init__(self, arch):
        self.arch, self.rows, self.fail = arch, [], 0

    def stage(self, L, name, kind, o, t, extra=None, skip_rows=None):
        """o: ours, t: theirs, same shape [S, n]; extra: float64 bound without the output ulp"""
        if o is None or t is None:
            print("  %-20s (missing)" % name)
            self.fail += 1
            return
        S = o.shape[0]
        o, t = o.reshape(S, -1), t.reshape(S, -1).to(o.dtype)
        diff = (o.double() - t.double()).abs()
        ud = (ordered(o) - ordered(t)).abs()
        if kind == "exact":
            bound = torch.zeros_like(diff)
        elif kind == "reduce":
            bound = ulp(torch.maximum(o.double().abs(), t.double().abs()), o.dtype)
        elif kind == "row":
            bound = (4 * ulp(t.double().abs().amax(dim=1, keepdim=True), bf)).expand_as(diff)
        else:
            bound = extra.reshape(S, -1) + ulp(torch.maximum(o.double().abs(), t.double().abs()), o.dtype)
        ok = diff <= bound
        if skip_rows is not None:
            ok[skip_rows] = True
        bad = int((~ok).sum())
        ratio = (diff / bound.clamp(min=1e-300)).max().item() if kind != "exact" else float(diff.max() > 0)
        rec = dict(layer=L, stage=name, kind=kind, exact=(o.double() == t.double()).double().mean().item(),
                   maxdiff=diff.max().item(), maxulp=int(ud.max()), ratio=ratio, violations=bad)
        self.rows.append(rec)
        print("  %-20s %-9s exact=%.6f maxdiff=%.3g maxulp=%-4d diff/bound=%.3g%s" % (
            name, kind, rec["exact"], rec["maxdiff"], rec["maxulp"], ratio, "  VIOLATED (%d)" % bad if bad else ""))
        self.fail += bad > 0

    def select(self, L, name, ours_sets, theirs_sets):
        eq = [a == b for a, b in zip(ours_sets, theirs_sets)]
        n = len(eq) - sum(eq)
        self.rows.append(dict(layer=L, stage=name, kind="select", agree=sum(eq) / len(eq), differ=n))
        print("  %-20s select    rows equal=%.6f (%d differ%s)" % (name, sum(eq) / len(eq), n,
              ", first %s" % [i for i, x in enumerate(eq) if not x][:5] if n else ""))
        self.fail += n > 0
        return [i for i, x in enumerate(eq) if not x]


class Dump:
    def __init__(self, d, perturb=None):
        self.d, self.perturb = d, perturb
        self.ids = np.fromfile(os.path.join(d, "ids.i64"), dtype="<i8")
        self.S = len(self.ids)

    def __call__(self, stage, L=None, ext="bf16"):
        p = os.path.join(self.d, stage + ("" if L is None else ".L%d" % L) + "." + ext)
        if not os.path.exists(p):
            return None
        if ext == "bf16":
            a = np.fromfile(p, dtype="<i2").astype(np.int16)
            if self.perturb == "%s.L%s" % (stage, L):  # fault injection: 64 ulps on one element
                a[len(a) // 2] += 64
            return torch.from_numpy(a).view(bf).reshape(self.S, -1)
        if ext == "f32":
            return torch.from_numpy(np.fromfile(p, dtype="<f4")).reshape(self.S, -1)
        if ext == "i64":
            return torch.from_numpy(np.fromfile(p, dtype="<i8")).reshape(self.S, -1)
        return torch.from_numpy(np.fromfile(p, dtype=np.uint8)).reshape(self.S, -1)


def sets_of_sel(sel):
    return [frozenset(sel[t].nonzero()[:, 0].tolist()) for t in range(sel.shape[0])]


def sets_of_topk(tk, S):
    return [frozenset(j for j in tk[t].tolist() if 0 <= j <= t) for t in range(S)]


# ---- shared pieces of the two MoE/MLP families -------------------------------------------------

def gated(g, u, limit):
    if limit is not None:
        g = g.clamp(max=limit)
        u = u.clamp(min=-limit, max=limit)
    return F.silu(g) * u


def mlp_bound(mlp, x, limit):
    """composite bound of a gate/up/down MLP on x (bf16 [S, H])"""
    h = gated(mlp.gate_proj(x), mlp.up_proj(x), limit)
    return prod_bound(h, mlp.down_proj.weight, 2.0)


def experts_bound(ex, x, idx, w, limit, yabs):
    """routed output bound: sum_slots |r| expert bound + k ulp(|y|)"""
    S, k = idx.shape
    b = torch.zeros(S, x.shape[1], dtype=torch.float64)
    for e in idx.unique().tolist():
        tok, slot = (idx == e).nonzero(as_tuple=True)
        gu = F.linear(x[tok], ex.gate_up_proj[e])
        g, u = gu.chunk(2, dim=-1)
        h = gated(g, u, limit)
        y = F.linear(h, ex.down_proj[e])
        be = prod_bound(h, ex.down_proj[e], 2.0) + ulp(y.double(), bf)
        b[tok] += w[tok, slot].double().abs()[:, None] * be
    return b + k * ulp(yabs, bf)


def moe_check(R, L, D, moe, h2, limit, routed_name):
    """routing agreement, routed (if dumped), shared; returns (bound of the mlp output w/o ulp, differing rows)"""
    S = h2.shape[0]
    logits, tw, ti = moe.gate(h2)
    oe = D("experts", L, "i64")
    bad = R.select(L, "experts(top-k)", [frozenset(r.tolist()) for r in oe] if oe is not None else [None] * S,
                   [frozenset(r.tolist()) for r in ti])
    rl = D("router_logits", L, "f32")
    if rl is not None:
        R.stage(L, "router_logits(f32)", "linear", rl, logits.float(),
                prod_bound(h2.float(), moe.gate.weight.float()))
    routed = moe.experts(h2, ti, tw)
    rb = experts_bound(moe.experts, h2, ti, tw, limit, routed.double().abs())
    if routed_name and D(routed_name, L) is not None:
        R.stage(L, routed_name, "composite", D(routed_name, L), routed, rb, skip_rows=bad or None)
    sb = mlp_bound(moe.shared_experts, h2, limit)
    if D("shared", L) is not None:
        R.stage(L, "shared", "composite", D("shared", L), moe.shared_experts(h2), sb)
    return rb + sb + ulp(routed.double().abs(), bf), bad


# ---- glm_moe_dsa -----------------------------------------------------------------------------------

def run_dsa(model, D, R):
    from transformers.models.glm_moe_dsa import modeling_glm_moe_dsa as mod
    cfg, m, S = model.config, model.model, D.S
    ids = torch.from_numpy(D.ids)[None]
    R.stage(-1, "embed", "exact", D("embed"), m.embed_tokens(ids)[0])
    x_in = D("embed")
    pos = torch.arange(S)[None]
    prev_tk = None
    for L, layer in enumerate(m.layers):
        a = layer.self_attn
        print("--- %s layer %d (%s, %s)" % (R.arch, L, cfg.indexer_types[L], cfg.mlp_layer_types[L]))
        R.stage(L, "attn_in", "reduce", D("attn_in", L), layer.input_layernorm(x_in))
        h = D("attn_in", L)
        lin = lambda name, mod_, inp: R.stage(L, name, "linear", D(name, L), mod_(inp), prod_bound(inp, mod_.weight))
        lin("q_a", a.q_a_proj, h)
        R.stage(L, "q_a_norm", "reduce", D("q_a_norm", L), a.q_a_layernorm(D("q_a", L)))
        lin("q_b", a.q_b_proj, D("q_a_norm", L))
        lin("kv_a", a.kv_a_proj_with_mqa, h)
        rkv, nh = cfg.kv_lora_rank, cfg.num_attention_heads
        dn, dr, dv = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        R.stage(L, "kv_a_norm", "reduce", D("kv_a_norm", L), a.kv_a_layernorm(D("kv_a", L)[:, :rkv]))
        lin("kv_b", a.kv_b_proj, D("kv_a_norm", L))
        cos, sin = m.rotary_emb(h[None], pos)
        qs = D("q_b", L).reshape(1, S, nh, dn + dr).transpose(1, 2)
        qp, qr = qs.split([dn, dr], dim=-1)
        kr = D("kv_a", L)[:, rkv:].reshape(1, 1, S, dr)
        qr, kr = mod.apply_rotary_pos_emb_interleave(qr, kr, cos, sin)
        R.stage(L, "q_rope", "exact", D("q_rope", L), torch.cat([qp, qr], -1).transpose(1, 2).reshape(S, -1))
        R.stage(L, "kv_a_rope", "exact", D("kv_a_rope", L), torch.cat([D("kv_a", L)[:, :rkv], kr.reshape(S, dr)], -1))
        osel = D("sel", L, "u8")
        if a.indexer is not None:
            ix = a.indexer
            if D("idx_q", L) is not None:
                lin("idx_q", ix.wq_b, D("q_a_norm", L))
                lin("idx_k", ix.wk, h)
                R.stage(L, "idx_k_norm", "reduce", D("idx_k_norm", L), ix.k_norm(D("idx_k", L)))
            mask = torch.zeros(1, S, S, dtype=bf).masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1)[None],
                                                             torch.finfo(bf).min)
            prev_tk = ix(h[None], D("q_a_norm", L)[None], (cos, sin), mask, pos)[0]
        R.select(L, "dsa_sel", sets_of_sel(osel), sets_of_topk(prev_tk, S))
        # attention core on our q/k/v and OUR selection; its last product is P V
        q_ = D("q_rope", L).reshape(S, nh, dn + dr).transpose(0, 1)[None]
        kvb = D("kv_b", L).reshape(S, nh, dn + dv)
        krope = D("kv_a_rope", L)[:, rkv:]
        k_ = torch.cat([kvb[:, :, :dn], krope[:, None, :].expand(S, nh, dr)], dim=-1).transpose(0, 1)[None]
        v_ = kvb[:, :, dn:].transpose(0, 1)[None]
        amask = torch.zeros(1, 1, S, S, dtype=bf).masked_fill(osel[None, None] == 0, torch.finfo(bf).min)
        lo, P = mod.eager_attention_forward(a, q_, k_, v_, amask, a.scaling)
        cb = torch.stack([prod_bound(P[0, i], v_[0, i].T, 2.0) for i in range(nh)], 1).reshape(S, -1)
        R.stage(L, "attn_core", "composite", D("attn_core", L), lo.reshape(S, -1), cb)
        lin("o_proj", a.o_proj, D("attn_core", L))
        R.stage(L, "attn_resid", "exact", D("attn_resid", L), x_in + D("o_proj", L))
        R.stage(L, "post_ln", "reduce", D("post_ln", L), layer.post_attention_layernorm(D("attn_resid", L)))
        h2 = D("post_ln", L)
        if hasattr(layer.mlp, "gate"):
            mb, bad = moe_check(R, L, D, layer.mlp, h2, None, "routed")
        else:
            mb, bad = mlp_bound(layer.mlp, h2, None), []
        R.stage(L, "mlp", "composite", D("mlp", L), layer.mlp(h2[None])[0], mb, skip_rows=bad or None)
        R.stage(L, "layer_out", "exact", D("layer_out", L), D("attn_resid", L) + D("mlp", L))
        x_in = D("layer_out", L)
    R.stage(-1, "final", "reduce", D("final"), m.norm(x_in))


# ---- minimax_m2 ------------------------------------------------------------------------------------

def run_mm2(model, D, R):
    import transformers.models.minimax_m2.modeling_minimax_m2 as mod
    cfg, m, S = model.config, model.model, D.S
    nh, nkv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    ids = torch.from_numpy(D.ids)[None]
    R.stage(-1, "embed", "exact", D("embed"), m.embed_tokens(ids)[0])
    x_in = D("embed")
    pos = torch.arange(S)[None]
    for L, layer in enumerate(m.layers):
        a, moe = layer.self_attn, layer.mlp
        print("--- %s layer %d" % (R.arch, L))
        R.stage(L, "attn_in", "reduce", D("attn_in", L), layer.input_layernorm(x_in))
        h = D("attn_in", L)
        lin = lambda name, mod_, inp: R.stage(L, name, "linear", D(name, L), mod_(inp), prod_bound(inp, mod_.weight))
        lin("q", a.q_proj, h)
        lin("k", a.k_proj, h)
        lin("v", a.v_proj, h)
        # q_norm / k_norm: one RMSNorm over the whole projection of a token
        R.stage(L, "q_norm", "reduce", D("q_norm", L), a.q_norm(D("q", L)))
        R.stage(L, "k_norm", "reduce", D("k_norm", L), a.k_norm(D("k", L)))
        cos, sin = m.rotary_emb(h[None], pos)
        qr, kr = mod.apply_rotary_pos_emb(D("q_norm", L).reshape(1, S, nh, d).transpose(1, 2),
                                          D("k_norm", L).reshape(1, S, nkv, d).transpose(1, 2), cos, sin)
        R.stage(L, "q_rope", "exact", D("q_rope", L), qr.transpose(1, 2).reshape(S, -1))
        R.stage(L, "k_rope", "exact", D("k_rope", L), kr.transpose(1, 2).reshape(S, -1))
        q_ = D("q_rope", L).reshape(1, S, nh, d).transpose(1, 2)
        k_ = D("k_rope", L).reshape(1, S, nkv, d).transpose(1, 2)
        v_ = D("v", L).reshape(1, S, nkv, d).transpose(1, 2)
        amask = torch.zeros(1, 1, S, S, dtype=bf).masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1),
                                                             torch.finfo(bf).min)
        lo, P = mod.eager_attention_forward(a, q_, k_, v_, amask, a.scaling)
        vr = mod.repeat_kv(v_, a.num_key_value_groups)
        cb = torch.stack([prod_bound(P[0, i], vr[0, i].T, 2.0) for i in range(nh)], 1).reshape(S, -1)
        R.stage(L, "attn_core", "composite", D("attn_core", L), lo.reshape(S, -1), cb)
        lin("o_proj", a.o_proj, D("attn_core", L))
        R.stage(L, "attn_resid", "exact", D("attn_resid", L), x_in + D("o_proj", L))
        R.stage(L, "post_ln", "reduce", D("post_ln", L), layer.post_attention_layernorm(D("attn_resid", L)))
        h2 = D("post_ln", L)
        logits, tw, ti = moe.gate(h2, moe.e_score_correction_bias)
        R.stage(L, "router_logits", "linear", D("router_logits", L), logits, prod_bound(h2, moe.gate.weight))
        oe = D("experts", L, "i64")
        bad = R.select(L, "experts(top-k)", [frozenset(r.tolist()) for r in oe] if oe is not None else [None] * S,
                       [frozenset(r.tolist()) for r in ti])
        routed = moe.experts(h2, ti, tw)
        R.stage(L, "mlp", "composite", D("mlp", L), routed,
                experts_bound(moe.experts, h2, ti, tw, None, routed.double().abs()), skip_rows=bad or None)
        R.stage(L, "layer_out", "exact", D("layer_out", L), D("attn_resid", L) + D("mlp", L))
        x_in = D("layer_out", L)
    R.stage(-1, "final", "reduce", D("final"), m.norm(x_in))


# ---- glm5_next -------------------------------------------------------------------------------------

def run_next(model, D, R):
    import transformers.models.glm5_next.modeling_glm5_next as mod
    tm = model.model.language_model
    cfg, S = tm.config, D.S
    H, M = cfg.hidden_size, cfg.hc_mult
    ids = torch.from_numpy(D.ids)[None]
    lim = cfg.swiglu_limit
    streams = lambda t: t.reshape(1, S, M, H)

    def hc(hcm, X, L, site):
        hcn = hcm.hc_mult
        flat = hcm.input_norm(X.flatten(start_dim=2).float())[0]
        R.stage(L, "hcmix_" + site, "composite", D("hcmix_" + site, L, "f32"), F.linear(flat, hcm.fn.float()),
                prod_bound(flat, hcm.fn.float(), 2.0))
        om = D("hcmix_" + site, L, "f32")[None]
        pre_w, post_w, comb_w = om.split([hcn, hcn, hcn * hcn], dim=-1)
        pre_b, post_b, comb_b = hcm.base.split([hcn, hcn, hcn * hcn])
        s0, s1, s2 = hcm.scale.unbind(0)
        pst = 2 * torch.sigmoid(post_w * s1 + post_b)
        cl = comb_w.view(1, S, hcn, hcn) * s2 + comb_b.view(hcn, hcn)
        cb = torch.softmax(cl, dim=-1) + hcm.hc_eps
        cb = cb / (cb.sum(dim=-2, keepdim=True) + hcm.hc_eps)
        for _ in range(hcm.hc_sinkhorn_iters - 1):
            cb = cb / (cb.sum(dim=-1, keepdim=True) + hcm.hc_eps)
            cb = cb / (cb.sum(dim=-2, keepdim=True) + hcm.hc_eps)
        pre = torch.sigmoid(pre_w * s0 + pre_b) + hcm.hc_eps
        R.stage(L, "hcpost_" + site, "reduce", D("hcpost_" + site, L, "f32"), pst[0])
        R.stage(L, "hccomb_" + site, "reduce", D("hccomb_" + site, L, "f32"), cb[0].reshape(S, -1))
        R.stage(L, "hccol_" + site, "reduce", D("hccol_" + site, L), (pre.unsqueeze(-1) * X).sum(dim=2).to(bf)[0])

    def combine(L, site, out, X):
        post = D("hcpost_" + site, L, "f32")[None]
        comb = D("hccomb_" + site, L, "f32").reshape(1, S, M, M)
        return (post.to(bf).unsqueeze(-1) * out[None].unsqueeze(-2) + torch.matmul(comb.to(bf).transpose(-1, -2), X))[0]

    def kda(a, h, L):
        mixed = torch.cat([a.q_proj(h), a.k_proj(h), a.v_proj(h)], dim=-1).transpose(1, 2)
        conv = mod.causal_conv1d_fn(mixed, weight=a.conv1d.weight.squeeze(1), bias=a.conv1d.bias,
                                    activation=a.activation)
        R.stage(L, "kda_qkv", "row", D("kda_qkv", L, "f32"), conv.transpose(1, 2)[0].float())
        R.stage(L, "kda_g", "row", D("kda_g", L, "f32"), a.forget_gate(h)[0].reshape(S, -1).float())
        R.stage(L, "kda_beta", "row", D("kda_beta", L, "f32"), torch.sigmoid(a.b_proj(h))[0].float())
        qkv = D("kda_qkv", L, "f32").to(bf)
        Q = a.qkv_dim
        hs = (1, S, -1, a.head_dim)
        core, _ = mod.chunk_kimi_delta_attention(qkv[:, :Q].reshape(hs), qkv[:, Q:2 * Q].reshape(hs),
                                                 qkv[:, 2 * Q:].reshape(hs), g=D("kda_g", L, "f32").reshape(hs),
                                                 beta=D("kda_beta", L, "f32").to(bf)[None],
                                                 use_qk_l2norm_in_kernel=True)
        R.stage(L, "kda_core(bf16)", "row", D("kda_core", L, "f32").to(bf), core[0].reshape(S, -1))
        ga = a.g_a_proj(h)
        R.stage(L, "kda_gate", "composite", D("kda_gate", L), a.g_b_proj(ga)[0], prod_bound(ga[0], a.g_b_proj.weight, 2.0))
        o = a.o_norm(D("kda_core", L, "f32").to(bf).reshape(hs), D("kda_gate", L).reshape(hs))
        R.stage(L, "kda_o", "reduce", D("kda_o", L), o[0].reshape(S, -1))
        R.stage(L, "attn(o_proj)", "linear", D("attn", L), a.o_proj(D("kda_o", L)), prod_bound(D("kda_o", L), a.o_proj.weight))

    X = tm.embed_tokens(ids).unsqueeze(2).expand(1, S, M, H)
    prev_tk = None
    for L, layer in enumerate(tm.layers):
        print("--- %s layer %d (%s, %s)" % (R.arch, L, cfg.layer_types[L], cfg.mlp_layer_types[L]))
        hc(layer.attn_hc, X, L, "attn")
        R.stage(L, "attn_in", "reduce", D("attn_in", L), layer.input_layernorm(D("hccol_attn", L)))
        h = D("attn_in", L)[None]
        if layer.block_type == "linear_attention":
            kda(layer.self_attn, h, L)
        else:
            a = layer.self_attn
            mask = torch.ones(1, S, dtype=torch.bool)
            osel = D("sel", L, "u8")
            if a.indexer is not None:
                qr = a.q_a_layernorm(a.q_a_proj(h))
                prev_tk = a.indexer(hidden_states=h, q_resid=qr, attention_mask=mask, past_key_values=None)[0].long()
            R.select(L, "dsa_sel", sets_of_sel(osel), sets_of_topk(prev_tk, S))
            width = int(osel.sum(1).max())
            idx = torch.full((1, S, width), -1, dtype=torch.int32)
            for t in range(S):
                js = osel[t].nonzero()[:, 0]
                idx[0, t, :len(js)] = js.to(torch.int32)
            got = {}
            hk = a.o_proj.register_forward_pre_hook(lambda m_, i: got.__setitem__("h", i[0].detach().clone()))
            saved, a.indexer = a.indexer, None
            o, _, _ = a(hidden_states=h, attention_mask=mask, prev_topk_indices=idx)
            a.indexer = saved
            hk.remove()
            R.stage(L, "attn(our sel)", "composite", D("attn", L), o[0],
                    prod_bound(got["h"].reshape(S, -1), a.o_proj.weight, 2.0))
        R.stage(L, "attn_mid", "reduce", D("attn_mid", L), combine(L, "attn", D("attn", L), X).reshape(S, -1))
        X2 = streams(D("attn_mid", L))
        hc(layer.ffn_hc, X2, L, "ffn")
        R.stage(L, "post_ln", "reduce", D("post_ln", L), layer.post_attention_layernorm(D("hccol_ffn", L)))
        h2 = D("post_ln", L)
        if hasattr(layer.mlp, "gate"):
            mb, bad = moe_check(R, L, D, layer.mlp, h2, lim, "routed")
        else:
            mb, bad = mlp_bound(layer.mlp, h2, lim), []
        R.stage(L, "mlp", "composite", D("mlp", L), layer.mlp(h2[None])[0], mb, skip_rows=bad or None)
        R.stage(L, "layer_out", "reduce", D("layer_out", L), combine(L, "ffn", D("mlp", L), X2).reshape(S, -1))
        X = streams(D("layer_out", L))
    R.stage(-1, "final", "reduce", D("final"), tm.norm(tm.hc_head(X))[0])


# ---- qwen3_5 / qwen3_5_moe ---------------------------------------------------------------------------

def run_q35(model, D, R):
    import transformers.models.qwen3_5.modeling_qwen3_5 as mod
    tm = model.model
    cfg, S = tm.config, D.S
    ids = torch.from_numpy(D.ids)[None]
    R.stage(-1, "embed", "exact", D("embed"), tm.embed_tokens(ids)[0])
    x_in = D("embed")
    pos = torch.arange(S)[None]
    pe = tm.rotary_emb(x_in[None], pos[None].expand(3, 1, S))
    mask = torch.zeros(1, 1, S, S, dtype=bf).masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), torch.finfo(bf).min)
    for L, layer in enumerate(tm.layers):
        print("--- %s layer %d (%s)" % (R.arch, L, cfg.layer_types[L]))
        R.stage(L, "attn_in", "reduce", D("attn_in", L), layer.input_layernorm(x_in))
        h = D("attn_in", L)[None]
        if layer.block_type == "linear_attention":
            a = layer.linear_attn
            mixed = a.in_proj_qkv(h).transpose(1, 2)
            conv = mod.causal_conv1d_fn(mixed, a.conv1d.weight.squeeze(1), a.conv1d.bias, activation=a.activation)
            R.stage(L, "gdn_conv", "row", D("gdn_conv", L, "f32"), conv.transpose(1, 2)[0].float())
            g = -a.A_log.float().exp() * F.softplus(a.in_proj_a(h).float() + a.dt_bias)
            R.stage(L, "gdn_g", "row", D("gdn_g", L, "f32"), g[0].float())
            R.stage(L, "gdn_beta", "row", D("gdn_beta", L, "f32"), a.in_proj_b(h).sigmoid()[0].float())
            qkv = D("gdn_conv", L, "f32").to(bf)
            kd = a.key_dim
            core, _ = mod.torch_chunk_gated_delta_rule(
                qkv[:, :kd].reshape(1, S, -1, a.head_k_dim), qkv[:, kd:2 * kd].reshape(1, S, -1, a.head_k_dim),
                qkv[:, 2 * kd:].reshape(1, S, -1, a.head_v_dim), g=D("gdn_g", L, "f32")[None],
                beta=D("gdn_beta", L, "f32").to(bf)[None], use_qk_l2norm_in_kernel=True)
            R.stage(L, "gdn_core(bf16)", "row", D("gdn_core", L, "f32").to(bf), core[0].reshape(S, -1))
            z = a.in_proj_z(h).reshape(-1, a.head_v_dim)
            o = a.norm(D("gdn_core", L, "f32").to(bf).reshape(-1, a.head_v_dim), z)
            R.stage(L, "gdn_o", "reduce", D("gdn_o", L), o.reshape(S, -1))
            R.stage(L, "mixer(out_proj)", "linear", D("mixer", L), a.out_proj(D("gdn_o", L)),
                    prod_bound(D("gdn_o", L), a.out_proj.weight))
        else:
            a = layer.self_attn
            got = {}
            hk = a.o_proj.register_forward_pre_hook(lambda m_, i: got.__setitem__("h", i[0].detach().clone()))
            y, _ = a(hidden_states=h, position_embeddings=pe, attention_mask=mask)
            hk.remove()
            R.stage(L, "attn(o_proj)", "composite", D("mixer", L), y[0],
                    prod_bound(got["h"].reshape(S, -1), a.o_proj.weight, 2.0))
        R.stage(L, "attn_resid", "exact", D("attn_resid", L), x_in + D("mixer", L))
        R.stage(L, "post_ln", "reduce", D("post_ln", L), layer.post_attention_layernorm(D("attn_resid", L)))
        h2 = D("post_ln", L)
        if hasattr(layer.mlp, "gate"):
            moe = layer.mlp
            _, tw, ti = moe.gate(h2)
            routed = moe.experts(h2, ti, tw)
            rb = experts_bound(moe.experts, h2, ti, tw, None, routed.double().abs())
            R.stage(L, "routed", "composite", D("routed", L), routed, rb)
            sh = F.sigmoid(moe.shared_expert_gate(h2)) * moe.shared_expert(h2)
            sb = mlp_bound(moe.shared_expert, h2, None) + ulp(sh.double().abs(), bf)
            R.stage(L, "shared(gated)", "composite", D("shared", L), sh, sb)
            mb = rb + sb + ulp(routed.double().abs(), bf)
        else:
            mb = mlp_bound(layer.mlp, h2, None)
        R.stage(L, "mlp", "composite", D("mlp", L), layer.mlp(h2[None])[0], mb)
        R.stage(L, "layer_out", "exact", D("layer_out", L), D("attn_resid", L) + D("mlp", L))
        x_in = D("layer_out", L)
    R.stage(-1, "final", "reduce", D("final"), tm.norm(x_in))


# ---- deepseek_v4 -----------------------------------------------------------------------------------

def run_v4(model, D, R):
    """Teacher-forced per block: each module gets OUR dumped input; the bounds are "reduce" for the
    norm / mHC stages and "row" for the attention block and the MoE block (their inner products are
    not exposed by the module's interface: an engineering bound; measured exact on the golden host)."""
    m, S = model.model, D.S
    M, H = model.config.hc_mult, model.config.hidden_size
    ids = torch.from_numpy(D.ids.astype(np.int64))[None]
    kw = {}
    for L, layer in enumerate(m.layers):  # the attention's own kwargs (rope tables, mask, positions)
        layer.self_attn.register_forward_pre_hook(
            lambda mod, args, kwargs, L=L: kw.__setitem__(L, kwargs), with_kwargs=True)
    model(input_ids=ids, use_cache=False)
    R.stage(-1, "embed", "exact", D("embed"), m.embed_tokens(ids)[0])
    X = D("embed").reshape(1, S, 1, H).expand(1, S, M, H).contiguous()
    for L, layer in enumerate(m.layers):
        print("--- %s layer %d (%s, %s)" % (R.arch, L, layer.self_attn.layer_type, model.config.mlp_layer_types[L]))
        post, comb, col = layer.attn_hc(X)
        R.stage(L, "attn_in", "reduce", D("attn_in", L), layer.input_layernorm(col)[0])
        h = D("attn_in", L)[None]
        a = layer.self_attn
        out, _ = a(h, **kw[L])
        R.stage(L, "attn", "row", D("attn", L), out[0])
        if a.compressor is not None:
            qres = a.q_a_norm(a.q_a_proj(h))
            ck, _ = a.compressor(h, qres, kw[L]["position_ids"], None, L)
            R.stage(L, "v4_comp", "row", D("v4_comp", L), ck[0, 0])
            if hasattr(a.compressor, "indexer"):
                tk = a.compressor.indexer(h, qres, kw[L]["position_ids"], None, L)[0]
                ours = D("v4_index_sel", L, "u8")
                R.select(L, "indexer(top-k)", [frozenset(ours[t].nonzero()[:, 0].tolist()) for t in range(S)],
                         [frozenset(j for j in tk[t].tolist() if j >= 0) for t in range(S)])
        Xm = post.to(bf).unsqueeze(-1) * D("attn", L)[None].unsqueeze(-2) + torch.matmul(comb.to(bf).transpose(-1, -2), X)
        R.stage(L, "attn_mid", "reduce", D("attn_mid", L), Xm[0])
        X = D("attn_mid", L).reshape(1, S, M, H)
        post, comb, col = layer.ffn_hc(X)
        R.stage(L, "post_ln", "reduce", D("post_ln", L), layer.post_attention_layernorm(col)[0])
        h2 = D("post_ln", L)
        g = layer.mlp.gate
        _, _, ti = g(h2[None], ids) if layer.mlp.is_hash else g(h2[None])
        oe = D("experts", L, "i64")
        R.select(L, "experts(top-k)", [frozenset(r.tolist()) for r in oe], [frozenset(r.tolist()) for r in ti])
        R.stage(L, "mlp", "row", D("mlp", L), layer.mlp(h2[None], input_ids=ids)[0])
        Xo = post.to(bf).unsqueeze(-1) * D("mlp", L)[None].unsqueeze(-2) + torch.matmul(comb.to(bf).transpose(-1, -2), X)
        R.stage(L, "layer_out", "reduce", D("layer_out", L), Xo[0])
        X = D("layer_out", L).reshape(1, S, M, H)
    R.stage(-1, "hc_head", "reduce", D("hc_head"), m.hc_head(X)[0])
    R.stage(-1, "final", "reduce", D("final"), m.norm(D("hc_head")[None])[0])


def run_q4x(model, D, R):
    """qwen4_exp: qwen3_5_moe's stages (the MoE, the gated delta net, the
    gated attention) between hyper-connection residuals, QSA selections"""
    tm = model.model
    cfg, S = tm.config, D.S
    n, H = cfg.hc_count, cfg.hidden_size
    ids = torch.from_numpy(D.ids)[None]
    R.stage(-1, "embed(streams)", "exact", D("embed"), tm.embed_tokens(ids)[0].repeat(1, n))
    X = D("embed")
    pos = torch.arange(S)[None]
    pe = tm.rotary_emb(X[None], pos[None].expand(3, 1, S))
    mask = torch.zeros(1, 1, S, S, dtype=bf).masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), torch.finfo(bf).min)

    def hc(res, X, L, site):
        """the gated residual on our streams: mixed input (row bound), injection weights (row bound)"""
        mixed, _, inj = res(X[None])
        R.stage(L, site + "_in(hc)", "row", D(site + "_in" if site == "attn" else "post_ln", L), mixed[0])
        R.stage(L, site + "_inj(hc)", "row", D(site + "_inj", L), inj[0])

    def write(L, name, X, y, site):
        out = X + (y.unsqueeze(-2) * D(site + "_inj", L).unsqueeze(-1)).flatten(-2)
        R.stage(L, name, "exact", D(name, L), out)

    for L, layer in enumerate(tm.layers):
        print("--- %s layer %d (%s)" % (R.arch, L, cfg.layer_types[L]))
        hc(layer.attn_hyper_connection, X, L, "attn")
        h = D("attn_in", L)[None]
        if layer.layer_type == "linear_attention":
            a = layer.linear_attn
            y = a(h)
            R.stage(L, "mixer(gdn)", "row", D("mixer", L), y[0])
        else:
            a = layer.self_attn
            sel = a.indexer(h, pe, mask, None)[0, 0]
            ours = D("qsa_sel", L, "u8")
            R.select(L, "qsa(blocks)", sets_of_sel(ours) if ours is not None else [None] * S, sets_of_sel(sel))
            got = {}
            hk = a.o_proj.register_forward_pre_hook(lambda m_, i: got.__setitem__("h", i[0].detach().clone()))
            y, _ = a(hidden_states=h, position_embeddings=pe, attention_mask=mask)
            hk.remove()
            R.stage(L, "attn(o_proj)", "composite", D("mixer", L), y[0],
                    prod_bound(got["h"].reshape(S, -1), a.o_proj.weight, 2.0))
        write(L, "attn_resid", X, D("mixer", L), "attn")
        X = D("attn_resid", L)
        hc(layer.mlp_hyper_connection, X, L, "mlp")
        h2 = D("post_ln", L)
        moe = layer.mlp
        _, tw, ti = moe.gate(h2)
        routed = moe.experts(h2, ti, tw)
        rb = experts_bound(moe.experts, h2, ti, tw, None, routed.double().abs())
        R.stage(L, "routed", "composite", D("routed", L), routed, rb)
        sh = F.sigmoid(moe.shared_expert_gate(h2)) * moe.shared_expert(h2)
        sb = mlp_bound(moe.shared_expert, h2, None) + ulp(sh.double().abs(), bf)
        R.stage(L, "shared(gated)", "composite", D("shared", L), sh, sb)
        R.stage(L, "mlp", "composite", D("mlp", L), moe(h2[None])[0], rb + sb + ulp(routed.double().abs(), bf))
        write(L, "layer_out", X, D("mlp", L), "mlp")
        X = D("layer_out", L)
    R.stage(-1, "final(mixer)", "row", D("final"), tm.hyper_connection_mixer(X[None])[0])


def q35_config(fixture):
    """qwen35-tiny's / qwen35-moe-tiny's config.json"""
    return json.load(open(os.path.join(fixture, "config.json")))


# ---- checkpoints and capture -----------------------------------------------------------------------

def next_config(fixture_next):
    """the flash-0.1b-next config.json shrunk to a 4-layer, 64-wide model over the tiny vocabulary"""
    c = json.load(open(os.path.join(fixture_next, "config.json")))
    t = c["text_config"]
    t.update(hidden_size=64, intermediate_size=128, moe_intermediate_size=32, vocab_size=260, num_hidden_layers=4,
             layer_types=["linear_attention", "deepseek_sparse_attention", "deepseek_sparse_attention",
                          "linear_attention"],
             indexer_types=["full", "full", "shared", "full"], mlp_layer_types=["dense", "sparse", "sparse", "sparse"],
             index_topk=16, index_head_dim=16, kv_lora_rank=16, q_lora_rank=32, qk_nope_head_dim=16,
             qk_head_dim=16, v_head_dim=16, linear_head_dim=16, num_experts_per_tok=2, max_position_embeddings=4096)
    c["vision_config"].update(hidden_size=32, intermediate_size=64, out_hidden_size=64,
                              projection_intermediate_size=64, depth=1)
    return c


def make_checkpoint(arch, src_config, out, seed):
    cfg = transformers.AutoConfig.for_model(**{k: v for k, v in src_config.items() if k != "transformers_version"})
    cls = {"glm_moe_dsa": transformers.GlmMoeDsaForCausalLM,
           "glm5_next": transformers.Glm5NextForConditionalGeneration,
           "minimax_m2": transformers.MiniMaxM2ForCausalLM,
           "qwen3_5": transformers.Qwen3_5ForCausalLM, "qwen3_5_moe": transformers.Qwen3_5MoeForCausalLM,
           "qwen4_exp": transformers.Qwen4ExpForCausalLM, "deepseek_v4": transformers.DeepseekV4ForCausalLM}[arch]
    torch.manual_seed(seed)
    # _from_config with a dtype keeps the classes' _keep_in_fp32_modules (router, e_score_correction_bias) F32,
    # as a real checkpoint has them
    model = cls._from_config(cfg, dtype=bf).eval()
    model.save_pretrained(out)
    return model


def capture(binary, model_dir, panel, work, tag, perturb, inject=None):
    dump = os.path.join(work, tag + "-dump")
    os.makedirs(dump)
    env = dict(os.environ, FIDELITY_FORWARD_DUMP=dump)
    env.pop("FIDELITY_FORWARD_INJECT", None)
    if inject:
        env["FIDELITY_FORWARD_INJECT"] = inject
    r = subprocess.run([binary, "capture", "--model", model_dir, "--panel", panel, "--out",
                        os.path.join(work, tag + "-ds"), "--role", "root", "--lane", "other", "--windows", "1",
                        "--dataset-id", "fidelity--layer-parity." + tag, "--dataset-name", "layer-parity",
                        "--no-sanity-check"], env=env, capture_output=True, text=True)
    if r.returncode:
        sys.exit("layer_parity: capture of %s failed (rc %d): %s" % (model_dir, r.returncode, r.stderr.strip()))
    return Dump(dump, perturb)


def run_inject(binary, model, ck, panel, work, arch, D, R):
    """The other direction (--inject): transformers' own input of layer L (output_hidden_states[L] of the
    whole model on the same window) replaces our residual stream before our layer L
    (FIDELITY_FORWARD_INJECT), and our layer L's output is compared with transformers' output of that
    layer (hidden_states[L + 1]; after the last layer transformers' hidden state is the final norm's, so
    ours is `final`).  Bound: 4 bf16 ulps of the row's largest |value| ("row": a whole layer's products,
    routing and attention, an engineering bound, not a derivation); a host whose torch order the engine
    reproduces (the golden hosts) shows 0."""
    ids = torch.from_numpy(D.ids.astype(np.int64))[None]
    hs = model(input_ids=ids, output_hidden_states=True).hidden_states
    n = len(hs) - 1
    print("--- %s: transformers' input of layer L into our layer L (%d layers)" % (arch, n))
    for L in range(n):
        tag = "%s-inject-L%d" % (arch, L)
        src = os.path.join(work, tag + ".npy")
        np.save(src, hs[L][0].contiguous().view(torch.int16).numpy())
        for d in ("-dump", "-ds"):
            shutil.rmtree(os.path.join(work, tag + d), ignore_errors=True)
        E = capture(binary, ck, panel, work, tag, None, inject="%d:%s" % (L, src))
        last = L == n - 1
        R.stage(L, "inject:" + ("final" if last else "layer_out"), "row", E("final") if last else E("layer_out", L),
                hs[L + 1][0])


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    ap.add_argument("binary")
    ap.add_argument("--arch", action="append", choices=["glm_moe_dsa", "glm5_next", "minimax_m2", "qwen3_5", "qwen3_5_moe",
                                                   "qwen4_exp", "deepseek_v4"])
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--keep", help="keep the checkpoints, dumps and a JSON of every row here")
    ap.add_argument("--json", help="write every row to this file")
    ap.add_argument("--inject", action="store_true", help="also the other direction: transformers' own input of "
                    "layer L into our layer L (FIDELITY_FORWARD_INJECT), every layer (not glm5_next, qwen4_exp)")
    ap.add_argument("--perturb", metavar="STAGE.LN", help="fault injection (the harness's own test): move one "
                    "element of our bf16 dump of that stage by 64 ulps; the run must then fail")
    a = ap.parse_args()
    torch.set_num_threads(1)
    binary = os.path.abspath(a.binary)
    work = a.keep or tempfile.mkdtemp(prefix="layer-parity-")
    os.makedirs(work, exist_ok=True)
    print("layer_parity: torch %s, transformers %s, seed %d, host %s" % (
        torch.__version__, transformers.__version__, a.seed, torch.backends.cpu.get_cpu_capability()))
    fails, allrows = 0, {}
    try:
        fx = os.path.join(work, "fixture-tiny")
        if not os.path.isdir(fx):
            subprocess.run([binary, "fixture", "--preset", "tiny", "--seed", "1", "--out", fx], check=True,
                           stdout=subprocess.DEVNULL)
        for arch in a.arch or ["glm_moe_dsa", "glm5_next", "minimax_m2", "qwen3_5", "qwen3_5_moe", "qwen4_exp", "deepseek_v4"]:
            panel = os.path.join(fx, "panel")
            if arch == "glm_moe_dsa":
                src = json.load(open(os.path.join(fx, "config.json")))
            elif arch == "minimax_m2":
                fm = os.path.join(work, "fixture-mm2")
                if not os.path.isdir(fm):
                    subprocess.run([binary, "fixture", "--preset", "minimax-m2-tiny", "--seed", "1", "--out", fm],
                                   check=True, stdout=subprocess.DEVNULL)
                src = json.load(open(os.path.join(fm, "config.json")))
            elif arch == "deepseek_v4":
                fv = os.path.join(work, "fixture-v4")
                if not os.path.isdir(fv):
                    subprocess.run([binary, "fixture", "--preset", "deepseek-v4-tiny", "--seed", "1", "--out", fv],
                                   check=True, stdout=subprocess.DEVNULL)
                src = json.load(open(os.path.join(fv, "config.json")))
            elif arch in ("qwen3_5", "qwen3_5_moe", "qwen4_exp"):
                fq = os.path.join(work, "fixture-" + arch)
                if not os.path.isdir(fq):
                    subprocess.run([binary, "fixture", "--preset", {"qwen3_5_moe": "qwen35-moe-tiny", "qwen3_5": "qwen35-tiny",
                                                                    "qwen4_exp": "qwen4-exp-tiny"}[arch],
                                    "--seed", "1", "--out", fq], check=True, stdout=subprocess.DEVNULL)
                src = q35_config(fq)
                panel = os.path.join(fq, "panel")  # 100 tokens: two delta-rule chunks
            else:
                fn = os.path.join(work, "fixture-next")
                if not os.path.isdir(fn):
                    subprocess.run([binary, "fixture", "--preset", "flash-0.1b-next", "--seed", "1", "--out", fn],
                                   check=True, stdout=subprocess.DEVNULL)
                src = next_config(fn)
            ck = os.path.join(work, arch)
            shutil.rmtree(ck, ignore_errors=True)
            model = make_checkpoint(arch, src, ck, a.seed)
            for f in ("tokenizer.json", "tokenizer_config.json"):
                shutil.copy(os.path.join(fx, f), ck)
            shutil.rmtree(os.path.join(work, arch + "-dump"), ignore_errors=True)
            shutil.rmtree(os.path.join(work, arch + "-ds"), ignore_errors=True)
            D = capture(binary, ck, panel, work, arch, a.perturb)
            # reload what save_pretrained wrote (the same bits our capture read)
            model = type(model).from_pretrained(ck, dtype=bf, attn_implementation="eager").eval()
            R = Report(arch)
            with torch.inference_mode():
                {"glm_moe_dsa": run_dsa, "glm5_next": run_next, "minimax_m2": run_mm2, "qwen3_5": run_q35,
                 "qwen3_5_moe": run_q35, "qwen4_exp": run_q4x, "deepseek_v4": run_v4}[arch](model, D, R)
                if a.inject and arch not in ("glm5_next", "qwen4_exp", "deepseek_v4"):
                    run_inject(binary, model, ck, panel, work, arch, D, R)
                elif a.inject:
                    print("--- %s: --inject not run (its hc_mult streams are not transformers' hidden_states)" % arch)
            n = sum(1 for r in R.rows if r["kind"] != "select")
            print("== %s: %d stage checks, %d selection checks, %d failed" % (
                arch, n, len(R.rows) - n, R.fail))
            fails += R.fail
            allrows[arch] = R.rows
    finally:
        if a.json:
            json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "seed": a.seed,
                       "rows": allrows}, open(a.json, "w"), indent=1)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("layer_parity: %s" % ("FAIL (%d bound violations)" % fails if fails else "ok, every bound holds"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

/* The name table of llama.cpp's DeepseekV2Model converter family
 * (convert_hf_to_gguf.py DeepseekV2Model and its subclasses: general.architecture
 * "deepseek2", "deepseek32", "glm-dsa"): kv_b_proj split into attn_k_b
 * (transposed) and attn_v_b, the routed experts stacked, the indexer under
 * blk.N.indexer., no Q/K permutation; and KimiLinearModel's ("kimi-linear":
 * the same MLA / MoE names, plus the KDA ones: the conv1d reshaped [C, 1, K]
 * -> [1, C, 1, K] (FD_GG_RESHAPE), dt_bias renamed ssm_dt.bias, A_log stored
 * as ssm_a = -exp(A_log), read as stored: arch/kimi_linear/kl_gguf.c).
 * Shared by arch/deepseek_v3/ds3_gguf.c, arch/glm_moe_dsa/dsa_gguf.c and
 * arch/kimi_linear/kl_gguf.c; an entry whose HF tensor an architecture does
 * not list (q_proj without q_lora, the KDA tensors outside kimi_linear) is
 * never looked up. */
#include "engine/gguf_model.h"

#define P "model.layers.%L."
const fd_gguf_name FD_GGUF_DS2_MAP[] = {
    {"model.embed_tokens.weight", "token_embd.weight", FD_GG_ROWS, NULL},
    {"model.norm.weight", "output_norm.weight", FD_GG_ROWS, NULL},
    {"lm_head.weight", "output.weight", FD_GG_ROWS, NULL},
    {P "input_layernorm.weight", "blk.%L.attn_norm.weight", FD_GG_ROWS, NULL},
    {P "post_attention_layernorm.weight", "blk.%L.ffn_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.q_proj.weight", "blk.%L.attn_q.weight", FD_GG_ROWS, NULL},
    {P "self_attn.q_a_proj.weight", "blk.%L.attn_q_a.weight", FD_GG_ROWS, NULL},
    {P "self_attn.q_a_proj.bias", "blk.%L.attn_q_a.bias", FD_GG_ROWS, NULL},
    {P "self_attn.q_a_layernorm.weight", "blk.%L.attn_q_a_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.q_b_proj.weight", "blk.%L.attn_q_b.weight", FD_GG_ROWS, NULL},
    {P "self_attn.kv_a_proj_with_mqa.weight", "blk.%L.attn_kv_a_mqa.weight", FD_GG_ROWS, NULL},
    {P "self_attn.kv_a_proj_with_mqa.bias", "blk.%L.attn_kv_a_mqa.bias", FD_GG_ROWS, NULL},
    {P "self_attn.kv_a_layernorm.weight", "blk.%L.attn_kv_a_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.kv_b_proj.weight", "blk.%L.attn_k_b.weight", FD_GG_KV_B, "blk.%L.attn_v_b.weight"},
    {P "self_attn.o_proj.weight", "blk.%L.attn_output.weight", FD_GG_ROWS, NULL},
    {P "self_attn.o_proj.bias", "blk.%L.attn_output.bias", FD_GG_ROWS, NULL},
    /* kimi-linear's KDA (q_proj and o_proj: the entries above) */
    {P "self_attn.k_proj.weight", "blk.%L.attn_k.weight", FD_GG_ROWS, NULL},
    {P "self_attn.v_proj.weight", "blk.%L.attn_v.weight", FD_GG_ROWS, NULL},
    {P "self_attn.q_conv1d.weight", "blk.%L.ssm_conv1d_q.weight", FD_GG_RESHAPE, NULL},
    {P "self_attn.k_conv1d.weight", "blk.%L.ssm_conv1d_k.weight", FD_GG_RESHAPE, NULL},
    {P "self_attn.v_conv1d.weight", "blk.%L.ssm_conv1d_v.weight", FD_GG_RESHAPE, NULL},
    {P "self_attn.f_a_proj.weight", "blk.%L.ssm_f_a.weight", FD_GG_ROWS, NULL},
    {P "self_attn.f_b_proj.weight", "blk.%L.ssm_f_b.weight", FD_GG_ROWS, NULL},
    {P "self_attn.dt_bias", "blk.%L.ssm_dt.bias", FD_GG_ROWS, NULL},
    {P "self_attn.A_log", "blk.%L.ssm_a", FD_GG_ROWS, NULL},
    {P "self_attn.b_proj.weight", "blk.%L.ssm_beta.weight", FD_GG_ROWS, NULL},
    {P "self_attn.g_a_proj.weight", "blk.%L.ssm_g_a.weight", FD_GG_ROWS, NULL},
    {P "self_attn.g_b_proj.weight", "blk.%L.ssm_g_b.weight", FD_GG_ROWS, NULL},
    {P "self_attn.o_norm.weight", "blk.%L.ssm_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.indexer.wq_b.weight", "blk.%L.indexer.attn_q_b.weight", FD_GG_ROWS, NULL},
    {P "self_attn.indexer.wk.weight", "blk.%L.indexer.attn_k.weight", FD_GG_ROWS, NULL},
    {P "self_attn.indexer.k_norm.weight", "blk.%L.indexer.k_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.indexer.k_norm.bias", "blk.%L.indexer.k_norm.bias", FD_GG_ROWS, NULL},
    {P "self_attn.indexer.weights_proj.weight", "blk.%L.indexer.proj.weight", FD_GG_ROWS, NULL},
    {P "mlp.gate_proj.weight", "blk.%L.ffn_gate.weight", FD_GG_ROWS, NULL},
    {P "mlp.up_proj.weight", "blk.%L.ffn_up.weight", FD_GG_ROWS, NULL},
    {P "mlp.down_proj.weight", "blk.%L.ffn_down.weight", FD_GG_ROWS, NULL},
    {P "mlp.gate.weight", "blk.%L.ffn_gate_inp.weight", FD_GG_ROWS, NULL},
    {P "mlp.gate.e_score_correction_bias", "blk.%L.exp_probs_b.bias", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.gate_proj.weight", "blk.%L.ffn_gate_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.up_proj.weight", "blk.%L.ffn_up_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.down_proj.weight", "blk.%L.ffn_down_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_experts.gate_proj.weight", "blk.%L.ffn_gate_shexp.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_experts.up_proj.weight", "blk.%L.ffn_up_shexp.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_experts.down_proj.weight", "blk.%L.ffn_down_shexp.weight", FD_GG_ROWS, NULL},
    {NULL, NULL, 0, NULL},
};
#undef P

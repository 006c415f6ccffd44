/* inspect-model DIR [--json] (FILE.gguf: cmd_inspect_gguf.c): the derived glm_moe_dsa config (per-layer MLP
 * and indexer types, dims) and the checkpoint's tensor check (counts,
 * parameters, bytes).  Exit 0 ok, 3 refused, 4 usage. */
#include "cli.h"
#include "engine/config.h"
#include "engine/model.h"
#include "engine/weights.h"
#include "util/buf.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity inspect-model: %s\n", why);
    fprintf(stderr, "usage: fidelity inspect-model DIR|FILE.gguf [--json]\n");
    return FD_EXIT_USAGE;
}

static jv *strv_json(const fd_strv *s)
{
    jv *a = jv_arr();
    for (size_t i = 0; i < s->n; i++) jv_push(a, jv_str(s->v[i]));
    return a;
}

static jv *config_json(const fd_glm_config *c, const fd_weights *w)
{
    jv *o = jv_obj();
#define I(f) jv_set(o, #f, jv_int(c->f))
    I(vocab_size); I(hidden_size); I(intermediate_size); I(moe_intermediate_size); I(num_hidden_layers);
    I(num_attention_heads); I(num_key_value_heads); I(q_lora_rank); I(kv_lora_rank); I(qk_nope_head_dim);
    I(qk_rope_head_dim); I(v_head_dim); I(qk_head_dim); I(head_dim); I(index_n_heads); I(index_head_dim);
    I(index_topk); I(n_routed_experts); I(n_shared_experts); I(num_experts_per_tok); I(n_group); I(topk_group);
    I(first_k_dense_replace); I(max_position_embeddings);
#undef I
    jv_set(o, "norm_topk_prob", jv_bool(c->norm_topk_prob));
    jv_set(o, "attention_bias", jv_bool(c->attention_bias));
    jv_set(o, "tie_word_embeddings", jv_bool(c->tie_word_embeddings));
    jv_set(o, "routed_scaling_factor", jv_float(c->routed_scaling_factor));
    jv_set(o, "rms_norm_eps", jv_float(c->rms_norm_eps));
    jv_set(o, "rope_theta", jv_float(c->rope_theta));
    jv_set(o, "rope_type", jv_str(c->rope_type));
    jv_set(o, "hidden_act", jv_str(c->hidden_act));
    jv *ml = jv_arr(), *it = jv_arr(), *fu = jv_arr();
    for (int64_t l = 0; l < c->num_hidden_layers; l++) {
        jv_push(ml, jv_str(c->mlp_sparse[l] ? "sparse" : "dense"));
        jv_push(it, jv_str(c->indexer_full[l] ? "full" : "shared"));
        jv_push(fu, c->mlp_sparse[l] ? jv_str(w->fused[l] ? "fused" : "per-expert") : jv_null());
    }
    jv_set(o, "mlp_layer_types", ml);
    jv_set(o, "indexer_types", it);
    jv_set(o, "expert_spelling", fu);
    return o;
}

static void print_text(const fd_glm_config *c, const fd_weights *w)
{
    printf("model_type %s\n", c->arch->info.model_type);
    printf("dims: vocab %lld hidden %lld layers %lld heads %lld (kv %lld) q_lora %lld kv_lora %lld "
           "qk_nope %lld qk_rope %lld v %lld qk_head %lld head_dim %lld\n",
           (long long)c->vocab_size, (long long)c->hidden_size, (long long)c->num_hidden_layers,
           (long long)c->num_attention_heads, (long long)c->num_key_value_heads, (long long)c->q_lora_rank,
           (long long)c->kv_lora_rank, (long long)c->qk_nope_head_dim, (long long)c->qk_rope_head_dim,
           (long long)c->v_head_dim, (long long)c->qk_head_dim, (long long)c->head_dim);
    printf("mlp: intermediate %lld moe_intermediate %lld experts %lld top-%lld shared %lld groups %lld/%lld "
           "scaling %g norm_topk_prob %s first_k_dense %lld act %s\n",
           (long long)c->intermediate_size, (long long)c->moe_intermediate_size, (long long)c->n_routed_experts,
           (long long)c->num_experts_per_tok, (long long)c->n_shared_experts, (long long)c->topk_group,
           (long long)c->n_group, c->routed_scaling_factor, c->norm_topk_prob ? "true" : "false",
           (long long)c->first_k_dense_replace, c->hidden_act);
    printf("indexer: heads %lld head_dim %lld topk %lld\n", (long long)c->index_n_heads, (long long)c->index_head_dim,
           (long long)c->index_topk);
    printf("misc: rms_norm_eps %g rope %s theta %g attention_bias %s tie_word_embeddings %s max_pos %lld\n",
           c->rms_norm_eps, c->rope_type, c->rope_theta, c->attention_bias ? "true" : "false",
           c->tie_word_embeddings ? "true" : "false", (long long)c->max_position_embeddings);
    for (int64_t l = 0; l < c->num_hidden_layers; l++)
        printf("layer %lld: mlp %s indexer %s%s\n", (long long)l, c->mlp_sparse[l] ? "sparse" : "dense",
               c->indexer_full[l] ? "full" : "shared",
               c->mlp_sparse[l] ? (w->fused[l] ? " experts fused" : " experts per-expert") : "");
    printf("tensors: %zu in %zu file(s), %zu expected, %zu missing, %zu unexpected, %zu mis-shaped, %zu ignored (MTP, vision tower)\n",
           w->n, w->nshards, w->nexpected, w->missing.n, w->unexpected.n, w->misshaped.n, w->ignored.n);
    printf("parameters: %llu (+ %llu fp32 router-bias elements = %llu)\n", (unsigned long long)w->params,
           (unsigned long long)w->bias_elems, (unsigned long long)(w->params + w->bias_elems));
    printf("bytes: %llu\n", (unsigned long long)w->bytes);
    if (w->q.kind != FD_Q_NONE) {
        char codec[64];
        fd_q_codec(&w->q, codec, sizeof codec);
        printf("quantization: %s (%s), %zu quantized weights, %llu bytes with their scales\n", codec, w->q.source,
               w->nquant, (unsigned long long)w->qbytes);
    }
}

int cmd_inspect_model(int argc, char **argv)
{
    const char *dir = NULL;
    int as_json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) as_json = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(NULL); return FD_EXIT_OK; }
        else if (!strncmp(argv[i], "--", 2)) return usage("unknown option");
        else if (dir) return usage("only one DIR");
        else dir = argv[i];
    }
    if (!dir) return usage("DIR is required");
    size_t dl = strlen(dir);
    struct stat st;
    if ((dl > 5 && !strcmp(dir + dl - 5, ".gguf")) || (!stat(dir, &st) && S_ISREG(st.st_mode)))
        return fd_inspect_gguf(dir, as_json);
    fd_err e;
    fd_err_clear(&e);
    fd_glm_config c;
    fd_weights w;
    memset(&w, 0, sizeof w);
    int rc = FD_EXIT_OK, checked = 0;
    int have_config = !fd_glm_config_load(dir, &c, &e);
    if (!have_config) rc = FD_EXIT_REFUSED;
    else if (fd_weights_open(dir, &w, &e)) rc = FD_EXIT_REFUSED;
    else {
        checked = 1;
        if (fd_weights_check(&w, &c, &e)) rc = FD_EXIT_REFUSED;
    }
    if (as_json) {
        /* stdout is always one JSON document; the REFUSED line goes to stderr */
        jv *o = jv_obj();
        if (checked) {
            jv_set(o, "config", config_json(&c, &w));
            jv *k = jv_obj();
            jv_set(k, "tensors", jv_int((int64_t)w.n));
            jv_set(k, "files", jv_int((int64_t)w.nshards));
            jv_set(k, "expected", jv_int((int64_t)w.nexpected));
            jv_set(k, "missing", strv_json(&w.missing));
            jv_set(k, "unexpected", strv_json(&w.unexpected));
            jv_set(k, "misshaped", strv_json(&w.misshaped));
            jv_set(k, "ignored", strv_json(&w.ignored));
            jv_set(k, "parameters", jv_int((int64_t)w.params));
            jv_set(k, "router_bias_elements", jv_int((int64_t)w.bias_elems));
            jv_set(k, "bytes", jv_int((int64_t)w.bytes));
            if (w.q.kind != FD_Q_NONE) {
                char codec[64];
                fd_q_codec(&w.q, codec, sizeof codec);
                jv *q = jv_obj();
                jv_set(q, "codec", jv_str(codec));
                jv_set(q, "source", jv_str(w.q.source));
                jv_set(q, "quantized_weights", jv_int((int64_t)w.nquant));
                jv_set(q, "quantized_bytes", jv_int((int64_t)w.qbytes));
                jv_set(k, "quantization", q);
            }
            jv_set(o, "check", k);
        }
        jv_set(o, "ok", jv_bool(!rc));
        if (rc) {
            jv *r = jv_obj();
            jv_set(r, "code", jv_str(e.code));
            jv_set(r, "message", jv_str(e.msg));
            jv_set(o, "refused", r);
        }
        fd_buf b = {0};
        fd_err je;
        if (!jv_dump(o, &JV_PRETTY, &b, &je)) printf("%s\n", fd_buf_cstr(&b));
        fd_buf_free(&b);
        jv_free(o);
        if (rc) fprintf(stderr, "REFUSED [%s]: %s\n", e.code, e.msg); /* stdout is the JSON document */
    } else if (rc)
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
    else {
        print_text(&c, &w);
        printf("OK\n");
    }
    if (checked) fd_weights_close(&w);
    if (have_config) fd_glm_config_free(&c);
    return rc;
}

/* The C unit test runner: runs every suite, prints `suite NAME: N failed`
 * per suite, then exactly `N passed, M failed` (suites), and exits nonzero
 * if any suite failed.  Run from the repository root. */
#include <stdio.h>
#include "check.h"

long check_count;

int test_json(void);
int test_digest(void);
int test_paths(void);
int test_checksums(void);
int test_safetensors(void);
int test_schema(void);
int test_stats(void);
int test_report(void);
int test_qformat(void);
int test_packed(void);
int test_tokenizer(void);
int test_hub(void);
int test_torch_ops(void);
int test_mkl_vml(void);
int test_dist(void);
int test_parallel(void);
int test_kblocks(void);
int test_gemm_f32(void);
int test_gemm_edges(void);
int test_rowops(void);
int test_gguf_views(void);
int test_embed(void);
int test_softplus(void);

static const struct {
    const char *name;
    int (*fn)(void);
} SUITES[] = {
    {"json", test_json},
    {"digest", test_digest},
    {"paths", test_paths},
    {"checksums", test_checksums},
    {"safetensors", test_safetensors},
    {"schema", test_schema},
    {"stats", test_stats},
    {"report", test_report},
    {"qformat", test_qformat},
    {"packed", test_packed},
    {"tokenizer", test_tokenizer},
    {"hub", test_hub},
    {"torch_ops", test_torch_ops},
    {"kblocks", test_kblocks},
    {"mkl_vml", test_mkl_vml},
    {"dist", test_dist},
    {"parallel", test_parallel},
    {"gemm_f32", test_gemm_f32},
    {"gemm_edges", test_gemm_edges},
    {"rowops", test_rowops},
    {"gguf_views", test_gguf_views},
    {"embed", test_embed},
    {"softplus", test_softplus},
};

int main(void)
{
    int passed = 0, failed = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; i < sizeof SUITES / sizeof *SUITES; i++) {
        long before = check_count;
        int n = SUITES[i].fn();
        printf("suite %s: %d failed\n", SUITES[i].name, n);
        if (check_count > before) fprintf(stderr, "  (%s: %ld checks)\n", SUITES[i].name, check_count - before);
        if (n) failed++;
        else passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

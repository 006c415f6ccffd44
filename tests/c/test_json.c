/* Unit tests for src/format/json.c and pyfloat.c: Python json semantics.
 * Every expected string was produced by CPython 3.11 (json.dumps with the
 * stated options, repr(float), hashlib.sha256) and is hard-coded here. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "format/json.h"
#include "format/pyfloat.h"
#include "format/sha.h"

#define VECTOR_PATH "tests/vectors/fidelity-dataset.root-glm53-bf16.json"

/* Parses from an exact-size heap copy (no terminator), so ASan sees any
 * read past the end. */
static jv *parse_exact(const char *s, size_t n, fd_err *e)
{
    char *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, s, n);
    jv *v = jv_parse(copy, n, e);
    free(copy);
    return v;
}

/* Dumps v with st into a fresh NUL-terminated string (NULL on failure). */
static char *dump_str(const jv *v, const jv_style *st, size_t *len)
{
    fd_buf b = {0};
    fd_err e = {0};
    if (jv_dump(v, st, &b, &e)) { fd_buf_free(&b); return NULL; }
    fd_buf_cstr(&b);
    if (len) *len = b.n;
    return b.p;
}

/* parse(in) then dump(st) must equal want (want_len bytes; may hold NUL). */
static int rt_n(const char *in, size_t in_len, const jv_style *st, const char *want, size_t want_len, int line)
{
    int fails = 0;
    fd_err e = {0};
    jv *v = parse_exact(in, in_len, &e);
    if (!v) {
        CHECKF(0, "line %d: parse of '%.*s' failed: %s", line, (int)in_len, in, e.msg);
        return fails;
    }
    size_t n = 0;
    char *got = dump_str(v, st, &n);
    CHECKF(got && n == want_len && memcmp(got, want, n) == 0, "line %d: '%.*s' dumps as '%s', want '%.*s'",
           line, (int)in_len, in, got ? got : "(dump failed)", (int)want_len, want);
    free(got);
    jv_free(v);
    return fails;
}
#define RT(in, want) (fails += rt_n((in), strlen(in), &JV_CANON, (want), strlen(want), __LINE__))
#define RT_ST(in, st, want) (fails += rt_n((in), strlen(in), (st), (want), strlen(want), __LINE__))
#define RT_N(in, st, want) (fails += rt_n((in), sizeof(in) - 1, (st), (want), sizeof(want) - 1, __LINE__))

/* parse(in) must fail with bad_json. */
static int refuse_n(const char *in, size_t n, int line)
{
    int fails = 0;
    fd_err e = {0};
    jv *v = parse_exact(in, n, &e);
    CHECKF(!v && strcmp(e.code, "bad_json") == 0, "line %d: '%.*s' was %s (code '%s'), want a bad_json refusal",
           line, n > 80 ? 80 : (int)n, in, v ? "accepted" : "refused", e.code);
    jv_free(v);
    return fails;
}
#define REFUSE(in) (fails += refuse_n((in), strlen(in), __LINE__))
#define REFUSE_N(in) (fails += refuse_n((in), sizeof(in) - 1, __LINE__))

static jv_type type_of(const char *in)
{
    fd_err e = {0};
    jv *v = parse_exact(in, strlen(in), &e);
    jv_type t = v ? v->t : (jv_type)-1;
    jv_free(v);
    return t;
}

static const struct { uint64_t bits; const char *repr; } FLOATS[] = {
    {0x0000000000000001ull, "5e-324"},
    {0x0000000020000000ull, "2.65249474e-315"},
    {0x0070000000000000ull, "1.424047269444609e-306"},
    {0x0240000000000000ull, "7.645295562778369e-298"},
    {0x0410000000000000ull, "4.1045368012983762e-289"},
    {0x05e0000000000000ull, "2.203606415850622e-280"},
    {0x07b0000000000000ull, "1.1830521861667747e-271"},
    {0x0980000000000000ull, "6.351463061309501e-263"},
    {0x0b50000000000000ull, "3.409915766259544e-254"},
    {0x0d20000000000000ull, "1.8306845872749401e-245"},
    {0x0ef0000000000000ull, "9.828413039546407e-237"},
    {0x10c0000000000000ull, "5.276589072053972e-228"},
    {0x1290000000000000ull, "2.8328471873628494e-219"},
    {0x1460000000000000ull, "1.520873253036128e-210"},
    {0x1630000000000000ull, "8.165126103939127e-202"},
    {0x1800000000000000ull, "4.383618698016806e-193"},
    {0x19d0000000000000ull, "2.3534373682645353e-184"},
    {0x1ba0000000000000ull, "1.263492066235061e-175"},
    {0x1d70000000000000ull, "6.783321379043816e-167"},
    {0x1f40000000000000ull, "3.641767935156351e-158"},
    {0x2110000000000000ull, "1.955159272639747e-149"},
    {0x22e0000000000000ull, "1.0496681418073576e-140"},
    {0x24b0000000000000ull, "5.635362925894614e-132"},
    {0x2680000000000000ull, "3.02546243347603e-123"},
    {0x2850000000000000ull, "1.6242827758820155e-114"},
    {0x2a20000000000000ull, "8.720301752336693e-106"},
    {0x2bf0000000000000ull, "4.6816763546921983e-97"},
    {0x2dc0000000000000ull, "2.513455854232436e-88"},
    {0x2f90000000000000ull, "1.349401336733507e-79"},
    {0x3160000000000000ull, "7.24454326306137e-71"},
    {0x3330000000000000ull, "3.8893845486632136e-62"},
    {0x3500000000000000ull, "2.088097429759528e-53"},
    {0x36d0000000000000ull, "1.1210387714598537e-44"},
    {0x38a0000000000000ull, "6.018531076210112e-36"},
    {0x3a70000000000000ull, "3.2311742677852644e-27"},
    {0x3c40000000000000ull, "1.734723475976807e-18"},
    {0x3e10000000000000ull, "9.313225746154785e-10"},
    {0x3fe0000000000000ull, "0.5"},
    {0x41b0000000000000ull, "268435456.0"},
    {0x4380000000000000ull, "1.4411518807585587e+17"},
    {0x4550000000000000ull, "7.737125245533627e+25"},
    {0x4720000000000000ull, "4.153837486827862e+34"},
    {0x48f0000000000000ull, "2.2300745198530623e+43"},
    {0x4ac0000000000000ull, "1.1972621413014757e+52"},
    {0x4c90000000000000ull, "6.427752177035961e+60"},
    {0x4e60000000000000ull, "3.450873173395282e+69"},
    {0x5030000000000000ull, "1.8526734277970591e+78"},
    {0x5200000000000000ull, "9.946464728195733e+86"},
    {0x53d0000000000000ull, "5.339967589802275e+95"},
    {0x55a0000000000000ull, "2.8668732699875894e+104"},
    {0x5770000000000000ull, "1.5391408670466593e+113"},
    {0x5940000000000000ull, "8.263199609878108e+121"},
    {0x5b10000000000000ull, "4.436271510593304e+130"},
    {0x5ce0000000000000ull, "2.3817051317718447e+139"},
    {0x5eb0000000000000ull, "1.2786682062094304e+148"},
    {0x6080000000000000ull, "6.86479766013061e+156"},
    {0x6250000000000000ull, "3.6855101804897865e+165"},
    {0x6420000000000000ull, "1.9786432117848363e+174"},
    {0x65f0000000000000ull, "1.0622759856335342e+183"},
    {0x67c0000000000000ull, "5.703050772027744e+191"},
    {0x6990000000000000ull, "3.061802069160839e+200"},
    {0x6b60000000000000ull, "1.6437924692338667e+209"},
    {0x6d30000000000000ull, "8.82504362096318e+217"},
    {0x6f00000000000000ull, "4.737909217226285e+226"},
    {0x70d0000000000000ull, "2.5436456424254815e+235"},
    {0x72a0000000000000ull, "1.3656093558537942e+244"},
    {0x7470000000000000ull, "7.33155940312959e+252"},
    {0x7640000000000000ull, "3.936100983140359e+261"},
    {0x7810000000000000ull, "2.113178124542661e+270"},
    {0x79e0000000000000ull, "1.134503866941668e+279"},
    {0x7bb0000000000000ull, "6.090821257125e+287"},
    {0x7d80000000000000ull, "3.269984763141685e+296"},
    {0x7f50000000000000ull, "1.7555597020139804e+305"},
    {0x0000000000000001ull, "5e-324"},
    {0x0000000000000002ull, "1e-323"},
    {0x0010000000000000ull, "2.2250738585072014e-308"},
    {0x0020000000000000ull, "4.450147717014403e-308"},
    {0x0170000000000000ull, "9.332636185032189e-302"},
    {0x39b0000000000000ull, "7.888609052210118e-31"},
    {0x3f50000000000000ull, "0.0009765625"},
    {0x3fe0000000000000ull, "0.5"},
    {0x3ff0000000000000ull, "1.0"},
    {0x4000000000000000ull, "2.0"},
    {0x4090000000000000ull, "1024.0"},
    {0x4330000000000000ull, "4503599627370496.0"},
    {0x4340000000000000ull, "9007199254740992.0"},
    {0x4350000000000000ull, "1.8014398509481984e+16"},
    {0x43e0000000000000ull, "9.223372036854776e+18"},
    {0x43f0000000000000ull, "1.8446744073709552e+19"},
    {0x4630000000000000ull, "1.2676506002282294e+30"},
    {0x7e70000000000000ull, "1.0715086071862673e+301"},
    {0x7fd0000000000000ull, "4.49423283715579e+307"},
    {0x7fe0000000000000ull, "8.98846567431158e+307"},
    {0x0000000000000001ull, "5e-324"},
    {0x0000000000000002ull, "1e-323"},
    {0x000fffffffffffffull, "2.225073858507201e-308"},
    {0x0010000000000000ull, "2.2250738585072014e-308"},
    {0x7fefffffffffffffull, "1.7976931348623157e+308"},
    {0x4340000000000000ull, "9007199254740992.0"},
    {0x3fb999999999999aull, "0.1"},
    {0x3fc999999999999aull, "0.2"},
    {0x3fd3333333333334ull, "0.30000000000000004"},
    {0x4341c37937e08000ull, "1e+16"},
    {0x4376345785d8a000ull, "1e+17"},
    {0x4341c37937e07fffull, "9999999999999998.0"},
    {0x3f1a36e2eb1c432dull, "0.0001"},
    {0x3ee4f8b588e368f1ull, "1e-05"},
    {0x3f1cd5f99c38b04bull, "0.00011"},
    {0x437b69b4ba630f35ull, "1.2345678901234568e+17"},
    {0x44b52d02c7e14af6ull, "1e+23"},
    {0x447c7e83209e90b2ull, "8.41e+21"},
    {0x00005c0ab9347ed7ull, "5e-310"},
    {0x4011666666666666ull, "4.35"},
    {0x4005666666666666ull, "2.675"},
    {0x3ff199999999999aull, "1.1"},
    {0x400921f9f01b866eull, "3.14159"},
    {0x44dfe185ca57c517ull, "6.02214076e+23"},
    {0x3c07a4da290c1653ull, "1.602176634e-19"},
    {0x4059000000000000ull, "100.0"},
    {0x7fe1ccf385ebc8a0ull, "1e+308"},
    {0xbb91433a6aa79987ull, "-9.1387497028769e-22"},
    {0xd1f6f86c029a7245ull, "-7.139820454309632e+86"},
    {0xcd8778e7d340bbcdull, "-3.089900467300506e+65"},
    {0xdaea58ba4c73a942ull, "-9.131299887434701e+129"},
    {0xee8971105e503a67ull, "-2.942877356480083e+224"},
    {0x452ec40a3193ca54ull, "1.8596773229471727e+25"},
    {0x6facaa5090e5e945ull, "8.692067227002291e+229"},
    {0x5f811cb929645f8bull, "1.1202983176732331e+152"},
    {0xdfc9e3b11fcff454ull, "-2.71187804877673e+153"},
    {0x42d6cb5c6ed4e94bull, "100250739757989.17"},
    {0xa091250e8fe46024ull, "-8.183770430730414e-152"},
    {0x9c9cea0c2ca1c789ull, "-7.481942688750341e-171"},
    {0x2fd2b7a48d9fe5b9ull, "2.525722336173709e-78"},
    {0xbcf74d7a5adad121ull, "-5.1742273216317384e-15"},
    {0xbb9d58e4f543bbcfull, "-1.5536301412264183e-21"},
    {0x87f26aee175f0cd2ull, "-2.1789094907487126e-270"},
    {0xbc428d42fa882692ull, "-2.011390540120253e-18"},
    {0x95c5fb986980a81full, "-8.764271883973625e-204"},
    {0x2aa4857e8101e89aull, "2.863253393402251e-103"},
    {0x34a9af4125ece845ull, "5.2374923668024025e-55"},
    {0x13ed748bb80e3b0dull, "1.0936941514836716e-212"},
    {0xd64a3ce030a1f6d5ull, "-4.8141078806962144e+107"},
    {0x527122dc57708107ull, "1.3635548534927665e+89"},
    {0x7576714a06057c82ull, "6.739508595758605e+257"},
    {0x06e0f45856eaa301ull, "1.5303059611217572e-275"},
    {0x82bde024f7acee22ull, "-1.8272601399104736e-295"},
    {0xb0d26ee6fa928906ull, "-1.6301294128168097e-73"},
    {0x6a5ccc2cbe99854aull, "2.2572140005785964e+204"},
    {0x01b5577d00e266d0ull, "1.9917479904700448e-300"},
    {0xa9f559fcf0b37868ull, "-1.4546223495953267e-106"},
    {0x29ef41d0deea959eull, "1.0647315861075762e-106"},
    {0x94820a06c555663full, "-6.85882119867777e-210"},
    {0x495cfa4f2dcaabd5ull, "2.5849035208654928e+45"},
    {0xa70ce1b51978cec0ull, "-1.3980865026926386e-120"},
    {0x1b1bcf726a1eccdaull, "4.2893241473530543e-178"},
    {0xae711399e2b2848bull, "-5.493913207906451e-85"},
    {0x2e80dbd593fd7234ull, "1.084765896058589e-84"},
    {0x600027e8bc90a6ecull, "2.7076892184663095e+154"},
    {0xf5cdb9413b8d0e76ull, "-2.8563304288860733e+259"},
    {0x9893588c860a7da1ull, "-2.713760756235414e-190"},
    {0xe9c329a8b59a5969ull, "-2.9336244025820534e+201"},
    {0x5473da68d3285151ull, "6.784975464656184e+98"},
    {0x0a4de3e4ce9fb6a8ull, "4.860072067895261e-259"},
    {0x1eab5cd83b788b66ull, "6.082062402788562e-161"},
    {0x7fcd33d2df8960adull, "4.10132964629943e+307"},
    {0xbcb8a0843764b52eull, "-3.417685226750283e-16"},
    {0xc18c6da1cd4944b6ull, "-59618361.66077559"},
    {0xab721ab08e1a11f0ull, "-2.0692936927247466e-99"},
    {0x41fad2962f927291ull, "7200137977.15297"},
    {0x6f05571896af0deaull, "6.319251251549195e+226"},
    {0xea80db0684ab5616ull, "-1.056940311011457e+205"},
    {0x213f191ff56ae7eaull, "1.5200456102231995e-148"},
    {0xfad2b6c50aa25068ull, "-4.348117394333563e+283"},
    {0x4d23bed52a04f77aull, "4.061401464333647e+63"},
    {0xdd533730fbb91133ull, "-3.661269769061302e+141"},
    {0x026530cdd50b612bull, "4.0502177924977255e-297"},
    {0xf70ae8c026784184ull, "-2.711481795810649e+265"},
    {0x5987baf13aa725cbull, "1.9608773770896137e+123"},
    {0x578b24268a04f74full, "5.22176877534521e+113"},
    {0x62d1c049282fe557ull, "1.0467507166491465e+168"},
    {0x03499f8452e1fbb0ull, "8.023911259315103e-293"},
    {0x0f967bcc0ca02f4dull, "1.4142587738176482e-233"},
    {0x71f2f9c4b6307badull, "7.908122518568666e+240"},
    {0x635a8ce2141cb03eull, "4.007997109135255e+170"},
    {0xcc905983fe9e6246ull, "-6.568226815218018e+60"},
    {0x2df2b7c8ebaa7701ull, "2.3523319674493097e-87"},
    {0x02ff5f56c9f0b072ull, "3.0700980282040266e-294"},
    {0xb65b9045c5bc647aull, "-7.543902500927032e-47"},
    {0x372139f35e2503ddull, "3.862285675622193e-43"},
    {0x8334bb82adbfb00eull, "-3.246198895799575e-293"},
    {0x1f1af1fac2e1dac4ull, "7.666272183892173e-159"},
    {0x9f3180427b142708ull, "-1.9917072854191663e-158"},
    {0x03898f4e0fc01b11ull, "1.2806528033449365e-291"},
    {0x7de6002da0485922ull, "2.8776776539821043e+298"},
    {0xc5a0ff6d53650fc7ull, "-2.63027625872595e+27"},
    {0xf74fd9ec9c2ecc16ull, "-5.135147086239563e+266"},
    {0xec2fc96a6bbb69f5ull, "-1.3376222657141875e+213"},
    {0x8cc05570f3d90ebdull, "-2.920112608168592e-247"},
    {0x5d41eb25339bb47eull, "1.7070668040312532e+141"},
    {0xa9b04e95c4d3c54cull, "-6.943443525783314e-108"},
    {0x1e8fcb74b2d4f32aull, "1.7668014370103972e-161"},
    {0x265015788e7ae9afull, "3.801652100133177e-124"},
    {0x7eb14f84147de9b0ull, "1.8548466680109644e+302"},
    {0xe47b342b2a3a4667ull, "-1.0765316368766168e+176"},
    {0x55e6fa5af79fcaa0ull, "6.587487223251784e+105"},
    {0x340856933b0b6398ull, "4.8466205199672995e-58"},
    {0x29aa57a529ddf4c7ull, "5.608236388575786e-108"},
    {0x266fdf5c49cdbec7ull, "1.5067040208393873e-123"},
    {0x173148758980bb2cull, "5.780202677294167e-197"},
    {0xb21ab98f85056138ull, "-2.4781990961863778e-67"},
    {0x2583bf9000da5a80ull, "5.697985911077337e-128"},
    {0xa85dffca00d0bac4ull, "-3.0454465617270388e-114"},
    {0xe2cce77b7efe369aull, "-8.522146168608318e+167"},
    {0xd5d3cee22f529fb3ull, "-2.839371183697284e+105"},
    {0xef0e1c779b852cbcull, "-8.916508270791997e+226"},
    {0xd9c1aa99cc6812b6ull, "-2.335697060103056e+124"},
    {0x43a7c488188b2694ull, "8.563216986513925e+17"},
    {0xc00187a68152a2c5ull, "-2.1912355521529627"},
    {0x10ed026067f8ab1full, "3.826751713004138e-227"},
    {0xc05f69afca5b2579ull, "-125.65135439778341"},
    {0x75fb4415f46d4e1dull, "2.0961244526611627e+260"},
    {0x2e93761b6aae0b74ull, "2.504461249650085e-84"},
    {0xeb3f4d0a3e46cc1cull, "-4.0197066737830738e+208"},
    {0x2f2faab7e0e3a17dull, "2.0864899591815364e-81"},
    {0x5f77442206fb8a80ull, "7.615917795541164e+151"},
    {0x2d0bc102549968e7ull, "1.0644272998136749e-91"},
    {0x2d87bab8650ffbcfull, "2.3297945069853475e-89"},
    {0x92573b502d9059c6ull, "-2.5707747585340037e-220"},
    {0xd2cf5d1dae103641ull, "-7.9861318468407615e+90"},
    {0xe4b1455b84ad1903ull, "-1.0935361238560972e+177"},
    {0xf5ce60113fba91d2ull, "-2.9189478353657627e+259"},
    {0x836170c269cacc7bull, "-2.184601947794285e-292"},
    {0x6ae36852b11f43a4ull, "7.788555104309424e+206"},
    {0x1ec1db445330d7c5ull, "1.5876286696466443e-160"},
    {0xa4cc1ad011552ddfull, "-1.9797549370939524e-131"},
    {0xbe5a445275e38718ull, "-2.4462941333113226e-08"},
    {0xa0ce08bb31efbef6ull, "-1.1469035461866962e-150"},
    {0x923c73249f0e5690ull, "-7.870495342264318e-221"},
    {0xbfc8436533af061bull, "-0.1895567419397118"},
    {0x87ed24ba22910c37ull, "-1.7239120105766284e-270"},
    {0x40889f60c5827b06ull, "787.9222517198366"},
    {0x400a666666666666ull, "3.3"},
    {0xc0876a39d58b7b6cull, "-749.2782393357315"},
    {0x401469c3ce2089e3ull, "5.103286"},
    {0x40755fe8676defa0ull, "341.99423926299824"},
    {0x401feb851eb851ecull, "7.98"},
    {0x4081535ae905c080ull, "554.4193897675868"},
    {0x3fdc2f837b4a233aull, "0.4404"},
    {0x4040afe1d2fcdc00ull, "33.37407910677575"},
    {0x4016f63b256ffc11ull, "5.74046"},
    {0x40802d3cade7e872ull, "517.6546285741626"},
    {0x3ff8fcd898b2e9cdull, "1.56173"},
    {0x4070d9d5bced4f24ull, "269.61468212794193"},
    {0x4005fdf3b645a1cbull, "2.749"},
    {0x40773cd86162bdc0ull, "371.80282724924837"},
    {0x4010126e978d4fdfull, "4.018"},
    {0x406b97ea3702b9c8ull, "220.74734068424573"},
    {0x4008f1a9fbe76c8bull, "3.118"},
    {0xc0439835e0b45780ull, "-39.18914421849968"},
    {0x4008000000000000ull, "3.0"},
    {0xc08185d641cddb69ull, "-560.7296176989158"},
    {0x3ff0000000000000ull, "1.0"},
    {0x407604a31fc65f34ull, "352.2898252247717"},
    {0x4018000000000000ull, "6.0"},
    {0xc08d5651f6e1e0d9ull, "-938.7900216719382"},
    {0x4018000000000000ull, "6.0"},
    {0x4086af295fb9e378ull, "725.8952021143477"},
    {0x4013a3d70a3d70a4ull, "4.91"},
    {0xc072dbd8d1fdc950ull, "-301.74043463836006"},
    {0x4022070e2c12ad82ull, "9.01378"},
    {0xc077163a6186d556ull, "-369.38925316495204"},
    {0x400f0ff972474539ull, "3.8828"},
    {0xc078e50310fe60bcull, "-398.31324862829547"},
    {0x4020000000000000ull, "8.0"},
    {0xc0642f7e8452385cull, "-161.48419395502685"},
    {0x3ff999999999999aull, "1.6"},
    {0x4083d8e656250646ull, "635.1124689953365"},
    {0x40029374bc6a7efaull, "2.322"},
    {0xc082b183fac449acull, "-598.1894431433661"},
    {0x3ff7fbe76c8b4396ull, "1.499"},
    {0xc08d4794d7816102ull, "-936.9476766689043"},
    {0x4023f1a9fbe76c8bull, "9.972"},
    {0xc07694d929f610dcull, "-361.3030185329387"},
    {0x0000000000000000ull, "0.0"},
    {0xc03eb9a16adf0c20ull, "-30.72511928506367"},
    {0x40171eb851eb851full, "5.78"},
    {0x4061765304e2db28ull, "139.6976341658385"},
    {0x400cb620ee8d10f5ull, "3.58893"},
    {0xc07afc7b39c7f2d0ull, "-431.7800844011772"},
    {0x4022000000000000ull, "9.0"},
    {0xc089603a7800ca61ull, "-812.0285492002259"},
    {0x4000961e4f765fd9ull, "2.0733"},
    {0x4073a97916e54f64ull, "314.5920628507067"},
    {0x401067d566cf41f2ull, "4.1014"},
    {0xc08e4c93ff4c6002ull, "-969.5722642866897"},
    {0x4014ccb295e9e1b1ull, "5.1999"},
    {0x404f9e9318ab76a0ull, "63.23886402485118"},
    {0x401785f41aef6f8full, "5.880814"},
    {0x4088fffe13876c22ull, "799.9990606860995"},
    {0x40124ccccccccccdull, "4.575"},
    {0xc08db6e42f787f4full, "-950.8614186681606"},
    {0x401a8092ccf6be38ull, "6.62556"},
    {0xc06be4398a33c798ull, "-223.13202390778747"},
    {0x401af74bc6a7ef9eull, "6.7415"},
    {0x4073c0e9ad691d58ull, "316.0570501428642"},
    {0x3fc5c28f5c28f5c3ull, "0.17"},
    {0xc05f2da8ad242d00ull, "-124.7134201863555"},
    {0x4009851eb851eb85ull, "3.19"},
    {0x4082ca39ac34f000ull, "601.27816048963"},
    {0x3ff412d77318fc50ull, "1.2546"},
    {0x406ea1e7d6c5c020ull, "245.05955065367834"},
    {0x4016cfdf3b645a1dull, "5.703"},
    {0x408c42a0f1ed64f4ull, "904.3285864397462"},
    {0x3ff0000000000000ull, "1.0"},
    {0xc08d2bd64c57d989ull, "-933.4796378005277"},
    {0x3fe0638433d6c722ull, "0.512148"},
    {0xc081b826ce45d9edull, "-567.0189481217509"},
    {0x3feee147ae147ae1ull, "0.965"},
    {0xc04ee72851a37b80ull, "-61.80591793520489"},
    {0x4010cccccccccccdull, "4.2"},
    {0x8000000000000001ull, "-5e-324"},
    {0x8000000020000000ull, "-2.65249474e-315"},
    {0x8070000000000000ull, "-1.424047269444609e-306"},
    {0x8240000000000000ull, "-7.645295562778369e-298"},
    {0x8410000000000000ull, "-4.1045368012983762e-289"},
    {0x85e0000000000000ull, "-2.203606415850622e-280"},
    {0x87b0000000000000ull, "-1.1830521861667747e-271"},
    {0x8980000000000000ull, "-6.351463061309501e-263"},
    {0x8b50000000000000ull, "-3.409915766259544e-254"},
    {0x8d20000000000000ull, "-1.8306845872749401e-245"},
};

static int numbers(void)
{
    int fails = 0;
    /* int vs float stay distinct */
    CHECK(type_of("4") == JV_INT, "4 parses as an int");
    CHECK(type_of("4.0") == JV_FLOAT, "4.0 parses as a float");
    CHECK(type_of("4e0") == JV_FLOAT, "4e0 parses as a float");
    CHECK(type_of("-0") == JV_INT, "-0 parses as an int");
    CHECK(type_of("123456789012345678901234567890") == JV_BIGINT, "a 97-bit int is kept as a big int");
    RT("4.0", "4.0");
    RT("4", "4");
    RT("-0", "0");
    RT("-0.0", "-0.0");
    RT("0.0", "0.0");
    RT("[1,2.0,-3]", "[1,2.0,-3]");
    RT("100.0", "100.0");
    RT("1.5", "1.5");
    RT("0.1", "0.1");
    /* Python float repr */
    RT("1e-05", "1e-05");
    RT("1e-5", "1e-05");
    RT("2.5e-5", "2.5e-05");
    RT("0.00001234", "1.234e-05");
    RT("1e-7", "1e-07");
    RT("0.0001", "0.0001");
    RT("1e16", "1e+16");
    RT("1E16", "1e+16");
    RT("1e15", "1000000000000000.0");
    RT("1e22", "1e+22");
    RT("12345678901234567.0", "1.2345678901234568e+16");
    RT("123456789012345680.0", "1.2345678901234568e+17");
    RT("5e-324", "5e-324");
    RT("1e-320", "1e-320");
    RT("1e-400", "0.0");
    RT("1.7976931348623157e308", "1.7976931348623157e+308");
    /* ints: 64-bit edges and beyond kept exactly */
    RT("9007199254740993", "9007199254740993");
    RT("9223372036854775807", "9223372036854775807");
    RT("9223372036854775808", "9223372036854775808");
    RT("-9223372036854775808", "-9223372036854775808");
    RT("-9223372036854775809", "-9223372036854775809");
    RT("123456789012345678901234567890", "123456789012345678901234567890");
    RT("-123456789012345678901234567890", "-123456789012345678901234567890");
    RT("[123456789012345678901234567890,-123456789012345678901234567890]",
       "[123456789012345678901234567890,-123456789012345678901234567890]");

    /* programmatic floats, repr table */
    struct { double d; const char *want; } direct[] = {
        {0x1p-1074, "5e-324"}, {0x1p-1022, "2.2250738585072014e-308"}, {0x1p63, "9.223372036854776e+18"},
        {9007199254740994.0, "9007199254740994.0"}, {1.0 / 3.0, "0.3333333333333333"}, {1e16, "1e+16"},
        {-0.0, "-0.0"}, {0.0, "0.0"}, {2.0, "2.0"}, {-1e-05, "-1e-05"},
    };
    for (size_t i = 0; i < sizeof direct / sizeof *direct; i++) {
        jv *v = jv_float(direct[i].d);
        char *got = dump_str(v, &JV_CANON, NULL);
        CHECK_STR(got, direct[i].want, "jv_float dump");
        free(got);
        jv_free(v);
    }
    int bad_repr = 0;
    for (size_t i = 0; i < sizeof FLOATS / sizeof *FLOATS; i++) {
        double d;
        char got[40];
        memcpy(&d, &FLOATS[i].bits, sizeof d);
        int n = fd_pyfloat_repr(d, got, sizeof got);
        if (n < 0 || strcmp(got, FLOATS[i].repr)) {
            if (bad_repr++ < 10)
                printf("  repr mismatch: bits %016llx got '%s' want '%s'\n", (unsigned long long)FLOATS[i].bits,
                       n < 0 ? "(error)" : got, FLOATS[i].repr);
        } else {
            /* and the repr parses back through jv_parse to the same bits */
            fd_err e = {0};
            jv *v = jv_parse(got, (size_t)n, &e);
            uint64_t back = 0;
            if (v && v->t == JV_FLOAT) memcpy(&back, &v->u.f, sizeof back);
            if (!v || v->t != JV_FLOAT || back != FLOATS[i].bits) {
                if (bad_repr++ < 10) printf("  repr '%s' does not parse back to bits %016llx\n", got,
                                            (unsigned long long)FLOATS[i].bits);
            }
            jv_free(v);
        }
    }
    CHECKF(bad_repr == 0, "%d of %zu float reprs differ from CPython", bad_repr, sizeof FLOATS / sizeof *FLOATS);
    char tmp[40];
    CHECK(fd_pyfloat_repr(NAN, tmp, sizeof tmp) < 0, "repr(NaN) refused");
    CHECK(fd_pyfloat_repr(INFINITY, tmp, sizeof tmp) < 0, "repr(inf) refused");
    CHECK(fd_pyfloat_repr(-INFINITY, tmp, sizeof tmp) < 0, "repr(-inf) refused");
    return fails;
}

static int objects_and_strings(void)
{
    int fails = 0;
    /* duplicate keys: refused by name (docs/FORMAT-IMPL.md), at any depth;
     * jv_parse_lenient (the debug-json oracle) keeps the last, as Python */
    {
        static const char *const dups[] = {"{\"b\":1,\"a\":2,\"b\":3}", "{\"a\":1,\"a\":{\"x\":1},\"a\":[true]}",
                                           "{\"o\":{\"b\":1,\"b\":1}}", "[{\"z\":{},\"y\":0,\"z\":{}}]"};
        static const char *const names[] = {"'b'", "'a'", "'b'", "'z'"};
        for (int i = 0; i < 4; i++) {
            fd_err e = {0};
            jv *v = jv_parse(dups[i], strlen(dups[i]), &e);
            CHECKF(!v && !strcmp(e.code, "bad_json") && strstr(e.msg, names[i]) && strstr(e.msg, "duplicate object key"),
                   "duplicate key refused by name: %s -> %s", dups[i], v ? "accepted" : e.msg);
            jv_free(v);
        }
        static const char *const want[] = {"{\"a\":2,\"b\":3}", "{\"a\":[true]}"};
        for (int i = 0; i < 2; i++) {
            fd_err e = {0};
            jv *v = jv_parse_lenient(dups[i], strlen(dups[i]), &e);
            char *got = v ? dump_str(v, &JV_CANON, NULL) : NULL;
            CHECKF(got && !strcmp(got, want[i]), "lenient parse keeps the last: %s -> %s", dups[i], got ? got : e.msg);
            free(got);
            jv_free(v);
        }
    }
    RT("{\"ab\":1,\"a\":2,\"b\":3}", "{\"a\":2,\"ab\":1,\"b\":3}"); /* near-equal keys are distinct */
    /* key order by code point: U+FFFF (EF BF BF) before U+1F600 (F0 9F 98 80);
     * UTF-16 order would put the surrogate pair D83D.. first. */
    RT("{\"\\ud83d\\ude00\":2,\"\\uffff\":1}", "{\"\xef\xbf\xbf\":1,\"\xf0\x9f\x98\x80\":2}");
    RT_ST("{\"\\ud83d\\ude00\":2,\"\\uffff\":1}", &JV_CANON_ASCII, "{\"\\uffff\":1,\"\\ud83d\\ude00\":2}");
    RT("{\"\xc3\xa9\":1,\"z\":2,\"Z\":3,\"\":4}", "{\"\":4,\"Z\":3,\"z\":2,\"\xc3\xa9\":1}");
    /* escapes: python json.dumps("\x1f/\x7f\u00e9\U0001F600\"\\\n\r\t\b\f\x00", ...) */
    const char *esc = "\"\\u001F\\/\\u007f\\u00e9\\ud83d\\ude00\\\"\\\\\\n\\r\\t\\b\\f\\u0000\"";
    RT_N("\"\\u001F\\/\\u007f\\u00e9\\ud83d\\ude00\\\"\\\\\\n\\r\\t\\b\\f\\u0000\"", &JV_CANON,
         "\"\\u001f/\x7f\xc3\xa9\xf0\x9f\x98\x80\\\"\\\\\\n\\r\\t\\b\\f\\u0000\"");
    RT_ST(esc, &JV_CANON_ASCII, "\"\\u001f/\\u007f\\u00e9\\ud83d\\ude00\\\"\\\\\\n\\r\\t\\b\\f\\u0000\"");
    RT_ST(esc, &JV_DEFAULT, "\"\\u001f/\\u007f\\u00e9\\ud83d\\ude00\\\"\\\\\\n\\r\\t\\b\\f\\u0000\"");
    RT("\"\x7f\"", "\"\x7f\"");
    RT_ST("\"\x7f\"", &JV_CANON_ASCII, "\"\\u007f\"");
    RT("\"a/b\"", "\"a/b\"");
    RT("\"\\u0001\\u000b\\u001b\\u0080\"", "\"\\u0001\\u000b\\u001b\xc2\x80\"");
    RT_ST("\"\\u0001\\u000b\\u001b\\u0080\\u20ac\\uFFFF\"", &JV_CANON_ASCII,
          "\"\\u0001\\u000b\\u001b\\u0080\\u20ac\\uffff\"");
    RT_ST("\"\xf4\x8f\xbf\xbf\"", &JV_CANON_ASCII, "\"\\udbff\\udfff\"");
    /* raw UTF-8 input is accepted and kept */
    RT("\"\xe2\x82\xac\xf0\x9f\x98\x80\"", "\"\xe2\x82\xac\xf0\x9f\x98\x80\"");
    /* keys with a NUL keep their full length */
    RT_N("{\"a\\u0000b\":1,\"a\":2}", &JV_CANON, "{\"a\":2,\"a\\u0000b\":1}");
    /* whitespace allowed around values */
    RT(" \t\r\n{ \"a\" : [ 1 , 2 ] } \n", "{\"a\":[1,2]}");
    RT("true", "true");
    RT("[false,null]", "[false,null]");
    /* json.dumps defaults and pretty form with nested empties */
    RT_ST("{\"b\":[1,2],\"a\":{\"c\":null}}", &JV_DEFAULT, "{\"a\": {\"c\": null}, \"b\": [1, 2]}");
    RT_ST("{\"d\":\"\xc3\xa9\",\"c\":[{},[],{\"x\":[1,{}]}],\"b\":[],\"a\":{}}", &JV_PRETTY,
          "{\n  \"a\": {},\n  \"b\": [],\n  \"c\": [\n    {},\n    [],\n    {\n      \"x\": [\n        1,\n"
          "        {}\n      ]\n    }\n  ],\n  \"d\": \"\xc3\xa9\"\n}");
    RT_ST("{}", &JV_PRETTY, "{}");
    RT_ST("[]", &JV_PRETTY, "[]");
    RT_ST("[[]]", &JV_PRETTY, "[\n  []\n]");

    /* jv_set replaces and keeps order; jv_del */
    jv *o = jv_obj();
    jv_set(o, "b", jv_int(1));
    jv_set(o, "a", jv_float(4.0));
    jv_set(o, "b", jv_str("x"));
    jv_set(o, "\xf0\x9f\x98\x80", jv_null());
    jv_set(o, "\xef\xbf\xbf", jv_bool(1));
    char *got = dump_str(o, &JV_CANON, NULL);
    CHECK_STR(got, "{\"a\":4.0,\"b\":\"x\",\"\xef\xbf\xbf\":true,\"\xf0\x9f\x98\x80\":null}", "jv_set order/replace");
    free(got);
    CHECK(jv_del(o, "b") == 1 && jv_get(o, "b") == NULL, "jv_del removes");
    CHECK(jv_del(o, "b") == 0, "jv_del of an absent key");
    int64_t i64 = 0;
    CHECK(jv_get_i64(o, "a", &i64) != 0, "jv_get_i64 refuses a float");
    jv_free(o);
    /* a NaN/Infinity float cannot be dumped */
    jv *a = jv_arr();
    jv_push(a, jv_float(NAN));
    fd_buf b = {0};
    fd_err e = {0};
    CHECK(jv_dump(a, &JV_CANON, &b, &e) != 0 && !strcmp(e.code, "bad_json"), "dump of NaN refused");
    CHECK(b.n == 0, "a refused dump leaves the buffer as it was");
    fd_buf_free(&b);
    jv_free(a);
    a = jv_float(-INFINITY);
    CHECK(jv_dump(a, &JV_CANON, &b, &e) != 0, "dump of -Infinity refused");
    fd_buf_free(&b);
    jv_free(a);
    /* equality */
    fd_err e2 = {0};
    const char *xs = "{\"a\":[1,2.5,\"s\"],\"b\":{}}", *ys = "{\"b\":{},\"a\":[1,2.5,\"s\"]}";
    jv *x = jv_parse(xs, strlen(xs), &e2), *y = jv_parse(ys, strlen(ys), &e2);
    CHECK(x && y && jv_equal(x, y), "jv_equal ignores source key order");
    jv *z = x ? jv_copy(x) : NULL;
    CHECK(z && jv_equal(x, z), "jv_copy is equal");
    jv_free(x);
    jv_free(y);
    jv_free(z);
    return fails;
}

static int refusals(void)
{
    int fails = 0;
    REFUSE("NaN");
    REFUSE("[NaN]");
    REFUSE("Infinity");
    REFUSE("-Infinity");
    REFUSE("{\"a\":-Infinity}");
    REFUSE("1e999");
    REFUSE("-1e999");
    REFUSE("[1E400]");
    REFUSE("nan");
    REFUSE("\"\\ud800\"");
    REFUSE("\"\\udc00\"");
    REFUSE("\"\\ud800\\u0041\"");
    REFUSE("\"\\ud800x\"");
    REFUSE("\"\\ud800\\ud800\"");
    REFUSE("{\"\\udfff\":1}");
    REFUSE("\"\xff\"");
    REFUSE("\"\xc0\x80\"");         /* overlong NUL */
    REFUSE("\"\xe0\x80\xaf\"");     /* overlong '/' */
    REFUSE("\"\xed\xa0\x80\"");     /* encoded surrogate */
    REFUSE("\"\xf4\x90\x80\x80\""); /* > U+10FFFF */
    REFUSE("\"\xe2\x82\"");         /* truncated sequence */
    REFUSE("\"\x80\"");             /* lone continuation byte */
    REFUSE("\xef\xbb\xbf{}");       /* BOM */
    REFUSE("\xef\xbb\xbf");
    REFUSE("{} x");
    REFUSE("1 2");
    REFUSE("[]]");
    REFUSE("{}{}");
    REFUSE("\"a\x01b\"");
    REFUSE("\"a\tb\"");
    REFUSE("\"a\nb\"");
    REFUSE("\"\x1f\"");
    REFUSE("");
    REFUSE("   ");
    REFUSE("01");
    REFUSE("-01");
    REFUSE("1.");
    REFUSE(".5");
    REFUSE("+1");
    REFUSE("-");
    REFUSE("1e");
    REFUSE("1e+");
    REFUSE("[1,]");
    REFUSE("{\"a\":1,}");
    REFUSE("{\"a\"}");
    REFUSE("{\"a\" 1}");
    REFUSE("{1:2}");
    REFUSE("'a'");
    REFUSE("tru");
    REFUSE("nul");
    REFUSE("True");
    REFUSE("\"abc");
    REFUSE("\"\\x41\"");
    REFUSE("\"\\u12\"");
    REFUSE("\"\\u12G4\"");
    REFUSE("\"\\");
    REFUSE("[");
    REFUSE("{");
    REFUSE_N("[1]\0");
    REFUSE_N("\0");
    /* 600 levels: refused without a crash (both arrays and objects) */
    enum { DEEP = 600 };
    char *deep = malloc(2 * DEEP + 1);
    memset(deep, '[', DEEP);
    memset(deep + DEEP, ']', DEEP);
    fails += refuse_n(deep, 2 * DEEP, __LINE__);
    free(deep);
    fd_buf ob = {0};
    for (int i = 0; i < DEEP; i++) fd_buf_puts(&ob, "{\"a\":");
    fd_buf_puts(&ob, "1");
    for (int i = 0; i < DEEP; i++) fd_buf_putc(&ob, '}');
    fails += refuse_n(ob.p, ob.n, __LINE__);
    fd_buf_free(&ob);
    /* a very deep unterminated prefix must not crash either */
    enum { PREFIX = 100000 };
    deep = malloc(PREFIX);
    memset(deep, '[', PREFIX);
    fails += refuse_n(deep, PREFIX, __LINE__);
    free(deep);
    /* 500 levels are fine (CPython accepts them too) */
    enum { FINE = 500 };
    deep = malloc(2 * FINE);
    memset(deep, '[', FINE);
    memset(deep + FINE, ']', FINE);
    fd_err e = {0};
    jv *v = parse_exact(deep, 2 * FINE, &e);
    CHECKF(v != NULL, "500 nested arrays refused: %s", e.msg);
    jv_free(v);
    free(deep);
    return fails;
}

static int seals(void)
{
    int fails = 0;
    fd_err e = {0};
    char hex[65] = "";
    /* json.dumps({"a":{"y":True,"z":None},"b":[1,2.0,"é"],"dataset_sha256":""}, canonical) */
    const char *doc = "{\"dataset_sha256\":\"abc\",\"b\":[1,2.0,\"\xc3\xa9\"],\"a\":{\"z\":null,\"y\":true}}";
    jv *v = jv_parse(doc, strlen(doc), &e);
    CHECK(v != NULL, "seal doc parses");
    if (v) {
        CHECK(jv_seal(v, "dataset_sha256", hex, &e) == 0, "jv_seal succeeds");
        CHECK_STR(hex, "315d85e5c8de6933ccb657aba6f6fc6a2ffab87379d8b7ce29037a8fcad0c495", "jv_seal digest");
        CHECK_STR(jv_get_str(v, "dataset_sha256"), "abc", "jv_seal leaves the document unchanged");
    }
    jv_free(v);
    /* an absent seal field is inserted blank: {"b":1,"dataset_sha256":""} */
    v = jv_parse("{\"b\":1}", 7, &e);
    CHECK(v && jv_seal(v, "dataset_sha256", hex, &e) == 0, "jv_seal with an absent field");
    CHECK_STR(hex, "d256ddcfb78c2987c5b60288501337f599e3ec6f11443c64f39699662302637b", "jv_seal inserts the blank field");
    CHECK(v && jv_get(v, "dataset_sha256") == NULL, "jv_seal does not insert into the original");
    jv_free(v);
    v = jv_arr();
    CHECK(jv_seal(v, "dataset_sha256", hex, &e) != 0, "jv_seal refuses a non-object");
    jv_free(v);
    /* the published vector: its stored seal recomputes, and a changed value breaks it */
    v = jv_parse_file(VECTOR_PATH, &e);
    CHECKF(v != NULL, "vector %s: %s", VECTOR_PATH, e.msg);
    if (v) {
        CHECK(jv_seal(v, "dataset_sha256", hex, &e) == 0, "vector seal computes");
        CHECK_STR(hex, "fb9594c6b3646726d0fb637c26833e8c6a3bb078c8fee1463df3ebdcce8021f2", "vector dataset_sha256");
        CHECK(jv_get(v, "_example_note") != NULL, "vector keeps _example_note");
        /* canonical dump re-parses to an equal value with identical bytes */
        size_t n1 = 0, n2 = 0;
        char *c1 = dump_str(v, &JV_CANON, &n1);
        jv *w = c1 ? jv_parse(c1, n1, &e) : NULL;
        char *c2 = w ? dump_str(w, &JV_CANON, &n2) : NULL;
        CHECK(w && jv_equal(v, w), "vector canonical re-parse is equal");
        CHECK(c2 && n1 == n2 && !memcmp(c1, c2, n1), "vector canonical dump is stable");
        /* pretty form also re-parses to the same seal */
        char *p = dump_str(v, &JV_PRETTY, &n2);
        jv *pv = p ? jv_parse(p, n2, &e) : NULL;
        char hex2[65] = "";
        CHECK(pv && jv_seal(pv, "dataset_sha256", hex2, &e) == 0 && !strcmp(hex, hex2),
              "vector seal survives a pretty re-indent");
        jv_free(pv);
        free(p);
        free(c1);
        free(c2);
        jv_free(w);
        jv_set(v, "_example_note", jv_str("changed"));
        CHECK(jv_seal(v, "dataset_sha256", hex2, &e) == 0 && strcmp(hex, hex2) != 0, "a changed value changes the seal");
    }
    jv_free(v);
    v = jv_parse_file("/nonexistent/fidelity-unit-test.json", &e);
    CHECK(!v && !strcmp(e.code, "missing_file"), "jv_parse_file of a missing file: missing_file");
    return fails;
}

int test_json(void)
{
    return numbers() + objects_and_strings() + refusals() + seals();
}

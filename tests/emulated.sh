# Sourced by tests/avx2.sh and tests/aarch64.sh: the checks both run on an
# emulated CPU against the native x86-64 release binary.  Needs W (a scratch
# folder), B (the native binary) and fail=0 set by the caller.
check() { if [ "$2" = ok ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
# a dataset's capture digest; a missing dataset gives a value no other can equal
digest() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/fidelity-dataset.json"))["capture"]["capture_content_digest"])' \
        "$1" 2>/dev/null || echo "no dataset at $1"
}
# same_bits LABEL RUNNER...: the tiny glm_moe_dsa fixture and its RTN int8 copy
# captured in both bf16 product orders natively and through RUNNER, then root vs
# int8 compared on each; the capture digests and tokenwise bytes must agree.
# Leaves $W/ORDER-{native,emul}-{root,q8,cmp}.
same_bits() {
    local label=$1; shift
    local emul=("$@") o k
    $B fixture --preset tiny --seed 3 --out "$W/m" >/dev/null
    $B quantize --src "$W/m" --dst "$W/q8" --bits 8 --match mlp.experts --emit-scope "$W/s8.json" >/dev/null
    for o in tile pair; do
        for k in native emul; do
            local run=("$B"); [ $k = emul ] && run=("${emul[@]}")
            "${run[@]}" capture --model "$W/m" --panel "$W/m/panel" --out "$W/$o-$k-root" --role root --lane other \
                --gemm-order $o --dataset-id fidelity--emul.root --dataset-name emul --no-sanity-check >/dev/null 2>&1
            "${run[@]}" capture --model "$W/q8" --panel "$W/m/panel" --out "$W/$o-$k-q8" --role quant --lane other \
                --gemm-order $o --dataset-id fidelity--emul.quant --dataset-name emul --no-sanity-check \
                --scope-file "$W/s8.json" >/dev/null 2>&1
            "${run[@]}" compare --reference "$W/$o-$k-root" --candidate "$W/$o-$k-q8" --out "$W/$o-$k-cmp" \
                --no-bootstrap >/dev/null 2>&1
        done
        [ "$(digest "$W/$o-native-root")" = "$(digest "$W/$o-emul-root")" ] && r=ok || r=bad
        check "$o order: root capture digest on $label = x86-64 native" $r
        [ "$(digest "$W/$o-native-q8")" = "$(digest "$W/$o-emul-q8")" ] && r=ok || r=bad
        check "$o order: int8 capture digest on $label = x86-64 native" $r
        cmp -s "$W/$o-native-cmp/tokenwise-kld.npy" "$W/$o-emul-cmp/tokenwise-kld.npy" && r=ok || r=bad
        check "$o order: compare tokenwise KL bytes on $label = x86-64 native" $r
    done
}

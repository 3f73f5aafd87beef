#!/bin/bash
# On the H200 (no LLVM): the static fmha-compile compiles fresh signatures
# there; each bundle runs against the float64 reference (fmha-run --validate)
# with and without a CUDA toolkit (PTX for the driver), and the Python
# package compiles a missing signature on first use.
set -u
here=$(cd "${1:?usage: static_compiler.sh DIR (DIR/bin: fmha-compile-static.xz, fmha-run; DIR/lib: libfmha_runtime.so)}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
xz -dc "$here/bin/fmha-compile-static.xz" > "$t/fmha-compile" && chmod +x "$t/fmha-compile"
export LD_LIBRARY_PATH=$here/lib
FC=$t/fmha-compile; FR=$here/bin/fmha-run
echo "== ldd"; ldd $FC
echo "== toolkit: $(which ptxas 2>/dev/null) CUDA_HOME=${CUDA_HOME:-} $(ls -d /usr/local/cuda* 2>/dev/null | tr '\n' ' ')"
echo "== glibc $(ldd --version | head -1)"
run() { name=$1; shift; s=$(date +%s.%N); "$@"; rc=$?; e=$(date +%s.%N); echo "[$name rc=$rc $(python3 -c "print(round($e-$s,2))") s]"; }
run fwd-cubin $FC --target=cuda --chip=sm_90a --dtype=bf16 --hq=12 --hk=4 -d 128 --mask=b:200,0,4 --softcap 30 -o $t/a.fmha
$FR $t/a.fmha --print-manifest | head -3
$FR $t/a.fmha -b 2 --sq 1000 --sk 1500 --validate | tail -2
run bwd-cubin $FC --target=cuda --chip=sm_90a --dtype=bf16 --hq=8 --hk=2 -d 64 --mask=t --bwd -o $t/b.fmha
$FR $t/b.fmha -b 1 --sq 333 --sk 333 --validate | tail -2
# No toolkit: PTX in the bundle, the driver finishes it.
mkdir -p $t/empty
# Hide the toolkit in a mount namespace (its default places too).
nocuda() { unshare -m sh -c "mount --bind $t/empty /usr/local/cuda && mount --bind $t/empty /usr/local/cuda-13.0 && env -u CUDA_HOME -u CUDA_PATH -u CUDA_ROOT PATH=/usr/bin:/bin \"\$@\"" sh "$@"; }
run fwd-ptx nocuda $FC --target=cuda --chip=sm_90a --dtype=f16 --hq=8 --hk=8 -d 64 --mask=t -o $t/d.fmha
strings $t/d.fmha | grep -m1 binary_format
$FR $t/d.fmha -b 2 --sq 500 --sk 500 --validate | tail -2
# An sm_80 kernel as PTX runs on the H200 too (the driver compiles it).
run fwd-sm80-ptx nocuda $FC --target=cuda --chip=sm_80 --dtype=f16 --hq=4 --hk=4 -d 32 --mask=xt:100 -o $t/c.fmha
strings $t/c.fmha | grep -m1 binary_format
$FR $t/c.fmha -b 1 --sq 257 --sk 300 --validate | tail -2
# --cuda-binary=ptx with the toolkit present: every kind as PTX.
run bwd-ptx $FC --target=cuda --chip=sm_90a --dtype=bf16 --hq=8 --hk=2 -d 128 --mask=b --bwd --cuda-binary=ptx -o $t/e.fmha
$FR $t/e.fmha -b 1 --sq 300 --sk 400 --validate | tail -1
run bwd-det-sm80-ptx $FC --target=cuda --chip=sm_80 --dtype=f16 --hq=4 --hk=4 -d 64 --softcap=5 --bwd --deterministic --cuda-binary=ptx -o $t/f.fmha
$FR $t/f.fmha -b 1 --sq 200 --sk 129 --validate | tail -1
run merge-ptx $FC --target=cuda --chip=sm_90a --dtype=f16 --merge --hq 4 --dv 64 --cuda-binary=ptx -o $t/g.fmha
$FR $t/g.fmha -b 2 --sq 100 --validate | tail -1
run acc-ptx $FC --target=cuda --chip=sm_90a --accumulate --cuda-binary=ptx -o $t/h.fmha
$FR $t/h.fmha -n 100000 --validate | tail -1
echo "== python: compile on first use"
FMHA_COMPILE=$FC FMHA_CACHE=$t/cache FMHA_RUNTIME_LIB=$here/lib/libfmha_runtime.so PYTHONPATH=$repo/python python3 - <<'PY'
import torch, fmha, os, time
torch.manual_seed(0)
q = torch.randn(1, 16, 777, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(1, 4, 777, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn(1, 4, 777, 128, device="cuda", dtype=torch.bfloat16)
s = time.time()
o = fmha.attention(q, k, v, mask="b")
torch.cuda.synchronize()
print("first call (compiles): %.2f s" % (time.time() - s))
ref = torch.nn.functional.scaled_dot_product_attention(
    q.float(), k.float().repeat_interleave(4, 1), v.float().repeat_interleave(4, 1), is_causal=True)
err = (o.float() - ref).abs().max().item()
print("max |o - sdpa(f32)| = %.3e" % err, "PASS" if err < 2e-2 else "FAIL")
print("cache:", sorted(os.listdir(os.environ["FMHA_CACHE"])))
PY
rm -rf "$t"

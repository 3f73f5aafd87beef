#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz targets into fuzz/corpus/<target>/.

Seeds are named seed-*; scripts/fuzz.sh adds what the fuzzers find beside
them (named by their SHA-1). Running this again rewrites the seeds only.
"""
import hashlib
import os
import struct
import sys

root = os.path.dirname(os.path.abspath(__file__))
src = os.path.dirname(root)


def write(target, name, data):
    d = os.path.join(root, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# --- mask-spec ---
specs = ["0", "none", "t", "b", "t:-1,0", "b:-1,0", "t:3,2", "b:256,0",
         "b:256,0,4", "t:0,0,1", "t:-1,-1,7", "xt:5", "xb:-1", "xt:1",
         "b:2,3,100", "t:9223372036854775807,0", "b:0,9223372036854775807,1",
         "xb:9223372036854775807", "t:1,2,3,4", "x:3", "t:+1,2", "b:,1"]
for i, s in enumerate(specs):
    write("mask-spec", "%02d" % i, s)


# --- bundle ---
def bundle(fields, binary):
    head = "FMHA-BUNDLE 1\n" + "".join("%s=%s\n" % kv for kv in fields)
    return head.encode() + b"\n" + binary


def cpu_fields(binary, **over):
    f = [("target", "cpu"), ("chip", ""), ("kind", "fwd"), ("dtype", "f32"),
         ("hq", "8"), ("hk", "2"), ("d", "64"), ("dv", "64"),
         ("mask", "b:256,0,4"), ("scale", "0"), ("softcap", "0"),
         ("block_m", "64"), ("block_n", "64"), ("kernel", "fmha_fwd"),
         ("abi", "memref-ciface-v1"), ("binary_format", "elf-so"),
         ("binary_size", str(len(binary)))]
    return [(k, over.get(k, v)) for k, v in f]


elf = b"\x7fELF\x02\x01\x01" + bytes(57)
write("bundle", "cpu", bundle(cpu_fields(elf), elf))
write("bundle", "cpu-f16-softcap", bundle(
    cpu_fields(elf, dtype="f16", scale="0.125", softcap="30", mask="t:7,0,2",
               dv="32"), elf))
write("bundle", "cpu-launch-keys", bundle(
    cpu_fields(elf)[:13] + [("block_threads", "0"), ("shared_bytes", "0")] +
    cpu_fields(elf)[13:], elf))
ptx = b".version 8.0\n.target sm_90a\n\0"
cuda = [("target", "cuda"), ("chip", "sm_90a"), ("kind", "fwd"),
        ("dtype", "bf16"), ("hq", "32"), ("hk", "8"), ("d", "128"),
        ("dv", "128"), ("mask", "xb:1024"), ("scale", "0.0883883476"),
        ("softcap", "0"), ("block_m", "128"), ("block_n", "64"),
        ("block_threads", "256"), ("shared_bytes", "73728"),
        ("kernel", "fmha_fwd"), ("abi", "gpu-flat-v1"),
        ("binary_format", "ptx"), ("binary_size", str(len(ptx)))]
write("bundle", "cuda-ptx", bundle(cuda, ptx))
write("bundle", "hip", bundle(
    [(k, {"target": "hip", "chip": "gfx942", "binary_format": "hsaco",
          "binary_size": "4"}.get(k, v)) for k, v in cuda], b"HSAC"))
write("bundle", "version2", b"FMHA-BUNDLE 2\n")


def bundle2(fields, manifest, binary):
    head = "FMHA-BUNDLE 2\n" + "".join("%s=%s\n" % kv for kv in fields)
    return head.encode() + b"\n" + manifest.encode() + b"\n" + binary


def v2(fields):
    return [kv for kv in fields if kv[0] not in ("abi", "block_threads", "shared_bytes")]


write("bundle", "v2-cpu", bundle2(v2(cpu_fields(elf)), """call ciface
size b
size sq
size sk
operand q in f32 b 8 sq 64
operand k in f32 b 2 sk 64
operand v in f32 b 2 sk 64
operand o out f32 b 8 sq 64
operand lse out f32 b 8 sq optional
kernel fmha_fwd
param q memref @q
param k memref @k
param v memref @v
param o memref @o
param lse memref @lse
""", elf))
write("bundle", "v2-cuda", bundle2(v2(cuda), """call gpu
size b
size sq
size sk
size window
operand q in bf16 b 32 sq 128 strided
operand lse out f32 b 32 sq optional
workspace acc b*32*sq*4 zero
kernel fmha_fwd
when min(window,1)
grid cdiv(sq,128) 32 b
block 256 1 1
shared 73728
param q.allocated ptr @q
param q.stride_b i64 stride(q,0)
param acc ptr @acc
param tiles i32 max(cdiv(sk,64)-1,0)%7
param sms i64 num_sms
""", ptx))


# --- npy ---
def npy(descr, shape, data, version=1, fortran=False):
    shape_s = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1
                                                         else "") + ")"
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape_s)
    pre = 10 if version == 1 else 12
    total = pre + len(d) + 1
    pad = (total + 63) // 64 * 64 - total
    d = d + " " * pad + "\n"
    ln = struct.pack("<H", len(d)) if version == 1 else struct.pack("<I",
                                                                     len(d))
    return b"\x93NUMPY" + bytes([version, 0]) + ln + d.encode() + data


write("npy", "f4-2x3", npy("<f4", [2, 3], struct.pack("<6f", *range(6))))
write("npy", "f2-4", npy("<f2", [4], struct.pack("<4e", 1, -2, 0.5, 65504)))
write("npy", "scalar", npy("<f4", [], struct.pack("<f", 3.5)))
write("npy", "v2-empty", npy("<f4", [0, 5], b"", version=2))
write("npy", "bhsd", npy("<f4", [1, 2, 3, 4], bytes(4 * 24)))
write("npy", "fortran", npy("<f4", [2], bytes(8), fortran=True))
write("npy", "f8", npy("<f8", [1], bytes(8)))


# --- run-options / compile-options: NUL-separated arguments ---
def args(*a):
    return "\0".join(a)


run = [
    args("attn.fmha", "-b", "2", "--sq", "1000", "--sk", "1200", "--validate",
         "--bench"),
    args("attn.fmha", "-b", "1", "--sq", "300", "--sk", "700", "--show-mask"),
    args("--show-mask", "--mask", "b:256,0,4", "--sq", "300", "--sk", "700",
         "--block-m=32", "--block-n", "16"),
    args("attn.fmha", "-b=1", "--sq=64", "--sk=64", "--save", "out/"),
    args("attn.fmha", "--load", "out/", "--validate", "--seed", "7"),
    args("attn.fmha", "-b", "1", "--sq", "4", "--sk", "4", "--hq", "8", "--hk",
         "2", "-d", "64", "--dv", "64", "--dtype", "f32", "--mask",
         "b:256,0,4", "--scale", "0.125", "--softcap", "0"),
    args("attn.fmha", "--iters", "5", "--warmup=0", "--bench=true",
         "--validate=0", "-b", "1", "--sq", "1", "--sk", "1"),
    args("--help"), args("-h"), args("--version"),
    args("attn.fmha", "--", "-b"),
]
for i, a in enumerate(run):
    write("run-options", "%02d" % i, a)

comp = [
    args("--target=cpu", "--dtype=f32", "--hq=8", "--hk=2", "-d", "64",
         "--mask=b:256,0,4", "-o", "attn.fmha"),
    args("--target=cuda", "--chip=sm_90a", "--dtype=bf16", "--hq=32",
         "--hk=8", "-d=128", "--dv=128", "--block-m=128", "--block-n=64",
         "--mask=xb:1024", "-o", "a.fmha"),
    args("--dtype=f16", "--hq", "4", "--hk", "4", "-d", "32", "--dv", "16",
         "--scale=0.5", "--softcap=30", "--emit=mlir"),
    args("--hq=3", "--hk=2", "-d", "8", "--emit", "isa"),
    args("--target=hip", "--hq=1", "--hk=1", "-d", "1", "--bwd", "-o", "x"),
    args("--hq=1", "--hk=1", "-d", "1", "--block-m=0", "--emit=llvm",
         "--chip=native"),
]
for i, a in enumerate(comp):
    write("compile-options", "%02d" % i, a)

# --- fmha-ir: the lit tests' cases, comment lines dropped ---
n = 0
for dirpath, _, files in sorted(os.walk(os.path.join(src, "test"))):
    for fn in sorted(files):
        if not fn.endswith(".mlir"):
            continue
        text = open(os.path.join(dirpath, fn)).read()
        for case in text.split("// -----"):
            lines = [l for l in case.split("\n")
                     if not l.lstrip().startswith("//")]
            body = "\n".join(lines).strip() + "\n"
            if len(body) < 10 or len(body) > 8192:
                continue
            h = hashlib.sha1(body.encode()).hexdigest()[:8]
            write("fmha-ir", "%s-%s" % (fn[:-5], h), body)
            n += 1
print("seeds written (%d fmha-ir cases)" % n)

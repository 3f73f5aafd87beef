#!/usr/bin/env python3
"""fmha.Kernel.forward_varlen and fmha.attention_varlen (FlashAttention's
varlen layout) on real cpu bundles that fmha-compile --varlen makes, without
torch: tensor stand-ins over host memory, o and lse against a float64
softmax written out here per sequence (the mask local to each), empty
sequences, rows past the last offset left as they were, packed QKV views,
and the errors (argument checks, offsets the runtime refuses).

Usage: python_varlen_test.py RUNTIME_LIB FMHA_COMPILE [unittest args]
"""

import array
import ctypes
import math
import os
import random
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

from python_module_test import FakeTensor  # noqa: E402  (the tensor stand-in)

FMHA_COMPILE = None


class HostTensor(FakeTensor):
    """A host array seen as a tensor of `shape` (row-major, or `strides` of
    a view into `base` from element `offset`)."""

    def __init__(self, shape, typecode="f", values=None, base=None, offset=0, strides=None):
        if base is None:
            n = 1
            for s in shape:
                n *= s
            base = array.array(typecode, values if values is not None else [0] * n)
        self.base, self.offset = base, offset
        addr, _ = base.buffer_info()
        super().__init__(shape, "torch.float32" if base.typecode == "f" else "torch.int32",
                         ("cpu",), ptr=addr + offset * base.itemsize,
                         contiguous=strides is None, strides=strides)

    def at(self, *index):
        return self.base[self.offset + sum(i * s for i, s in zip(index, self.stride()))]


def visible(i, j, sq, sk, spec):
    """Masks 0 and b:L,R (bottom-right, DESIGN.md section 1; -1 unbounded)."""
    if spec == "0":
        return True
    left, right = (int(x) for x in spec[2:].split(","))
    off = sk - sq
    return (left < 0 or j >= i + off - left) and (right < 0 or j <= i + off + right)


def reference(q, k, v, cu_q, cu_k, hq, hk, d, dv, spec, sinks=None):
    """o[(row, h)] and lse[(h, row)] of every sequence's own rows."""
    o, lse = {}, {}
    scale = 1.0 / math.sqrt(d)
    for n in range(len(cu_q) - 1):
        sq, sk = cu_q[n + 1] - cu_q[n], cu_k[n + 1] - cu_k[n]
        for h in range(hq):
            g = h // (hq // hk)
            for i in range(sq):
                row = cu_q[n] + i
                scores = [(cu_k[n] + j, scale * sum(q.at(row, h, e) * k.at(cu_k[n] + j, g, e)
                                                    for e in range(d)))
                          for j in range(sk) if visible(i, j, sq, sk, spec)]
                logits = [s for _, s in scores] + ([sinks[h]] if sinks else [])
                if not logits:
                    lse[(h, row)] = -math.inf
                    o[(row, h)] = [0.0] * dv
                    continue
                m = max(logits)
                total = sum(math.exp(s - m) for s in logits)
                lse[(h, row)] = m + math.log(total)
                acc = [0.0] * dv
                for j, s in scores:
                    p = math.exp(s - lse[(h, row)])
                    for e in range(dv):
                        acc[e] += p * v.at(j, g, e)
                o[(row, h)] = acc
    return o, lse


def offsets(lengths):
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return cu


class Varlen(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import fmha
        cls.fmha = fmha
        cls.tmp = tempfile.TemporaryDirectory()
        os.environ["FMHA_COMPILE"] = FMHA_COMPILE

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def random(self, shape, rnd):
        n = 1
        for s in shape:
            n *= s
        return HostTensor(shape, values=[rnd.gauss(0, 1) for _ in range(n)])

    def check(self, o, lse, ref_o, ref_lse, rows, hq, dv, untouched=()):
        for (row, h), want in ref_o.items():
            for e in range(dv):
                self.assertAlmostEqual(o.at(row, h, e), want[e], delta=1e-4 * (1 + abs(want[e])),
                                       msg="o row %d head %d" % (row, h))
        for (h, row), want in ref_lse.items():
            if math.isinf(want):
                self.assertEqual(lse.at(h, row), want)
            else:
                self.assertAlmostEqual(lse.at(h, row), want, delta=1e-4 * (1 + abs(want)))
        for row in untouched:
            for h in range(hq):
                self.assertTrue(math.isnan(lse.at(h, row)), "lse row %d written" % row)
                self.assertTrue(all(math.isnan(o.at(row, h, e)) for e in range(dv)))

    def test_kernel_forward_varlen(self):
        fmha = self.fmha
        hq, hk, d, dv, spec = 4, 2, 16, 8, "b:5,0"
        path = os.path.join(self.tmp.name, "v.fmha")
        fmha.compile_bundle(path, target="cpu", chip="", dtype="f32", hq=hq, hk=hk, d=d, dv=dv,
                            mask=spec, block_m=8, block_n=8, varlen=True)
        kernel = fmha.Kernel(path)
        self.assertTrue(kernel.takes_varlen)
        rnd = random.Random(5)
        lq, lk = [3, 0, 17, 1], [9, 4, 20, 0]
        cu_q, cu_k = offsets(lq), offsets(lk)
        total_q, total_k = cu_q[-1] + 5, cu_k[-1]  # 5 rows past the last offset
        q = self.random((total_q, hq, d), rnd)
        k = self.random((total_k, hk, d), rnd)
        v = self.random((total_k, hk, dv), rnd)
        nan = float("nan")
        o = HostTensor((total_q, hq, dv), values=[nan] * (total_q * hq * dv))
        lse = HostTensor((hq, total_q), values=[nan] * (hq * total_q))
        cq = HostTensor((len(cu_q),), "i", cu_q)
        ck = HostTensor((len(cu_k),), "i", cu_k)
        got_o, got_lse = kernel.forward_varlen(q, k, v, cq, ck, o, lse)
        self.assertIs(got_o, o)
        ref_o, ref_lse = reference(q, k, v, cu_q, cu_k, hq, hk, d, dv, spec)
        self.check(o, lse, ref_o, ref_lse, cu_q[-1], hq, dv,
                   untouched=range(cu_q[-1], total_q))

        # Packed QKV: q, k, v views of one (total, 3, H, D) buffer.
        h = hq
        cu = offsets([7, 0, 14, 0, 2])
        packed = self.random((cu[-1], 3, h, d), rnd)
        views = [HostTensor((cu[-1], h, d), base=packed.base, offset=i * h * d,
                            strides=(3 * h * d, d, 1)) for i in range(3)]
        path2 = os.path.join(self.tmp.name, "p.fmha")
        fmha.compile_bundle(path2, target="cpu", chip="", dtype="f32", hq=h, hk=h, d=d, dv=d,
                            mask="0", varlen=True)
        k2 = fmha.Kernel(path2)
        cu_t = HostTensor((len(cu),), "i", cu)
        o2, lse2 = (HostTensor((cu[-1], h, d)), HostTensor((h, cu[-1])))
        k2.forward_varlen(views[0], views[1], views[2], cu_t, cu_t, o2, lse2)
        ref_o, ref_lse = reference(views[0], views[1], views[2], cu, cu, h, h, d, d, "0")
        self.check(o2, lse2, ref_o, ref_lse, cu[-1], h, d)

        # Offsets the runtime refuses, before the kernel reads past them.
        bad = HostTensor((len(cu_q),), "i", [0, 3, 2, 20, 21])
        with self.assertRaises(fmha.FmhaError) as cm:
            kernel.forward_varlen(q, k, v, bad, ck, o, lse)
        self.assertEqual(str(cm.exception),
                         "FMHA_ERROR_INVALID_ARGUMENT: cu_seqlens_q: cu_seqlens_q[2]=2 is "
                         "less than cu_seqlens_q[1]=3: the offsets must be nondecreasing; "
                         "nothing was launched")
        past = HostTensor((len(cu_k),), "i", [0, 9, 13, 33, total_k + 1])
        with self.assertRaises(fmha.FmhaError) as cm:
            kernel.forward_varlen(q, k, v, cq, past, o, lse)
        self.assertIn("cu_seqlens_k[4]=34 is past the tensors' 33 rows", str(cm.exception))

        # Argument errors name the tensor.
        with self.assertRaises(ValueError) as cm:
            kernel.forward_varlen(q, k, v, cq, HostTensor((3,), "i", [0, 9, 13]), o, lse)
        self.assertEqual(str(cm.exception), "cu_seqlens_k: 3 offsets, cu_seqlens_q 5: B + 1 each")
        with self.assertRaises(ValueError) as cm:
            kernel.forward_varlen(q, k, v, HostTensor((5,), values=[0] * 5), ck, o, lse)
        self.assertEqual(str(cm.exception),
                         "cu_seqlens_q: expected dtype torch.int32, got torch.float32")
        with self.assertRaises(ValueError) as cm:
            kernel.forward_varlen(q, HostTensor((total_k, hk, 8)), v, cq, ck, o, lse)
        self.assertEqual(str(cm.exception), "k: D (dim 3) is 8, expected 16")
        with self.assertRaises(ValueError) as cm:
            kernel.forward_varlen(HostTensor((1, total_q, hq, d)), k, v, cq, ck, o, lse)
        self.assertIn("q: expected a 3-d (total, H, D) tensor", str(cm.exception))
        fixed = os.path.join(self.tmp.name, "f.fmha")
        fmha.compile_bundle(fixed, target="cpu", chip="", dtype="f32", hq=hq, hk=hk, d=d, dv=dv,
                            mask=spec)
        with self.assertRaises(ValueError) as cm:
            fmha.Kernel(fixed).forward_varlen(q, k, v, cq, ck, o, lse)
        self.assertEqual(str(cm.exception), "bundle '%s' is not a variable-length forward "
                         "(fmha-compile --varlen)" % fixed)

    def test_attention_varlen(self):
        fmha = self.fmha
        hq, hk, d = 4, 1, 8
        rnd = random.Random(11)
        lq, lk = [1, 6, 0, 12], [5, 6, 3, 12]
        cu_q, cu_k = offsets(lq), offsets(lk)
        q = self.random((cu_q[-1], hq, d), rnd)
        k = self.random((cu_k[-1], hk, d), rnd)
        v = self.random((cu_k[-1], hk, d), rnd)
        sinks = HostTensor((hq,), values=[0.5, -1.0, 2.0, 0.0])
        o = HostTensor((cu_q[-1], hq, d))
        lse_out = HostTensor((hq, cu_q[-1]))
        bundles = os.path.join(self.tmp.name, "bundles")
        cq = HostTensor((len(cu_q),), "i", cu_q)
        ck = HostTensor((len(cu_k),), "i", cu_k)
        got, lse = fmha.attention_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=True,
                                         sinks=sinks, bundle_dir=bundles, out=o, lse=lse_out,
                                         return_lse=True)
        self.assertIs(got, o)
        self.assertIs(lse, lse_out)
        name = fmha.bundle_name("cpu", "", "f32", hq, hk, d, d, mask="b", sinks=True,
                                varlen=True)
        self.assertTrue(name.endswith("-sinks-varlen.fmha"), name)
        self.assertTrue(os.path.exists(os.path.join(bundles, name)))
        self.assertIn("--varlen", fmha.compile_args("cpu", "", "f32", hq, hk, d, varlen=True))
        # FlashAttention's name for it, positional arguments as flash_attn's.
        self.assertIs(fmha.flash_attn_varlen_func, fmha.attention_varlen)
        o2 = HostTensor((cu_q[-1], hq, d))
        fmha.flash_attn_varlen_func(q, k, v, cq, ck, max(lq), max(lk), 0.0, None, True,
                                    sinks=sinks, bundle_dir=bundles, out=o2,
                                    lse=HostTensor((hq, cu_q[-1])))
        self.assertEqual(list(o2.base), list(o.base))
        ref_o, _ = reference(q, k, v, cu_q, cu_k, hq, hk, d, d, "b:-1,0",
                             sinks=[0.5, -1.0, 2.0, 0.0])
        for (row, h), want in ref_o.items():
            for e in range(d):
                self.assertAlmostEqual(o.at(row, h, e), want[e], delta=1e-4 * (1 + abs(want[e])))
        for kw, message in ((dict(dropout_p=0.1), "dropout_p=0.1 is not supported"),
                            (dict(alibi_slopes=1), "alibi_slopes is not supported"),
                            (dict(causal=True, mask="0"), "give mask= or causal/window_size")):
            with self.assertRaises(ValueError) as cm:
                fmha.attention_varlen(q, k, v, cq, ck, 12, 12, bundle_dir=bundles, **kw)
            self.assertIn(message, str(cm.exception))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    os.environ["FMHA_RUNTIME_LIB"] = sys.argv[1]
    # The sanitizer build preloads the ASan runtime into this interpreter
    # (test/sanitizers/Sanitizers.cmake); fmha-compile, which carries its
    # own, runs without it.
    os.environ.pop("LD_PRELOAD", None)
    FMHA_COMPILE = os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    unittest.main()

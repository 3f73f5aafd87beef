#!/usr/bin/env python3
"""fmha.Kernel.forward_paged and fmha.attention_with_kvcache (FlashAttention's
flash_attn_with_kvcache layout) on real cpu bundles that fmha-compile
--page-size makes, without torch: tensor stand-ins over host memory, o and
lse against a float64 softmax written out here per batch over the keys its
table row names (pages in a shuffled order, spare pages and table entries
out of range that must not be read, an empty cache), and the errors
(argument checks, tables the runtime refuses).

Usage: python_paged_test.py RUNTIME_LIB FMHA_COMPILE [unittest args]
"""

import math
import os
import random
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import python_varlen_test  # noqa: E402  (sets up the import of fmha)
from python_varlen_test import HostTensor, visible  # noqa: E402


def reference(q, kc, vc, table, lengths, page, hq, hk, d, dv, spec, sinks=None):
    """o[(b, i, h)] and lse[(b, h, i)] of q (B, Sq, Hq, D) against each
    batch's cache."""
    o, lse = {}, {}
    scale = 1.0 / math.sqrt(d)
    b_count, sq = q.shape[0], q.shape[1]
    for b in range(b_count):
        sk = lengths[b]
        slots = [(table[b][j // page], j % page) for j in range(sk)]
        for h in range(hq):
            g = h // (hq // hk)
            for i in range(sq):
                scores = [(pg, sl, scale * sum(q.at(b, i, h, e) * kc.at(pg, sl, g, e)
                                               for e in range(d)))
                          for j, (pg, sl) in enumerate(slots) if visible(i, j, sq, sk, spec)]
                logits = [s for _, _, s in scores] + ([sinks[h]] if sinks else [])
                if not logits:
                    lse[(b, h, i)], o[(b, i, h)] = -math.inf, [0.0] * dv
                    continue
                m = max(logits)
                lse[(b, h, i)] = m + math.log(sum(math.exp(s - m) for s in logits))
                acc = [0.0] * dv
                for pg, sl, s in scores:
                    p = math.exp(s - lse[(b, h, i)])
                    for e in range(dv):
                        acc[e] += p * vc.at(pg, sl, g, e)
                o[(b, i, h)] = acc
    return o, lse


class Paged(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import fmha
        cls.fmha = fmha
        cls.tmp = tempfile.TemporaryDirectory()
        os.environ["FMHA_COMPILE"] = python_varlen_test.FMHA_COMPILE

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def random(self, shape, rnd):
        n = 1
        for s in shape:
            n *= s
        return HostTensor(shape, values=[rnd.gauss(0, 1) for _ in range(n)])

    def problem(self, rnd, hq, hk, d, dv, page):
        # Three batches: 9 keys over pages 5, 0, 3; none; 4 keys in page 6.
        # Pages 1, 2 and 4 are spare (NaN: a read of one shows in o); the
        # entries past each batch's pages are out of range.
        pages, lengths = 7, [9, 0, 4]
        table = [[5, 0, 3], [99, -1, 99], [6, 99, 99]]
        q = self.random((3, 2, hq, d), rnd)
        kc = self.random((pages, page, hk, d), rnd)
        vc = self.random((pages, page, hk, dv), rnd)
        nan = float("nan")
        for t in (kc, vc):
            width = t.shape[3]
            for pg in (1, 2, 4):
                for at in range(pg * page * hk * width, (pg + 1) * page * hk * width):
                    t.base[at] = nan
        tt = HostTensor((3, 3), "i", [x for row in table for x in row])
        lt = HostTensor((3,), "i", lengths)
        return q, kc, vc, table, lengths, tt, lt

    def check(self, o, lse, ref_o, ref_lse, dv):
        for (b, i, h), want in ref_o.items():
            for e in range(dv):
                self.assertAlmostEqual(o.at(b, i, h, e), want[e], delta=1e-4 * (1 + abs(want[e])),
                                       msg="o batch %d row %d head %d" % (b, i, h))
        for (b, h, i), want in ref_lse.items():
            if math.isinf(want):
                self.assertEqual(lse.at(b, h, i), want)
            else:
                self.assertAlmostEqual(lse.at(b, h, i), want, delta=1e-4 * (1 + abs(want)))

    def test_kernel_forward_paged(self):
        fmha = self.fmha
        hq, hk, d, dv, page, spec = 4, 2, 16, 8, 4, "b:5,0"
        path = os.path.join(self.tmp.name, "p.fmha")
        fmha.compile_bundle(path, target="cpu", chip="", dtype="f32", hq=hq, hk=hk, d=d, dv=dv,
                            mask=spec, page_size=page)
        kernel = fmha.Kernel(path)
        self.assertEqual(kernel.page_size, page)
        rnd = random.Random(7)
        q, kc, vc, table, lengths, tt, lt = self.problem(rnd, hq, hk, d, dv, page)
        o, lse = HostTensor((3, 2, hq, dv)), HostTensor((3, hq, 2))
        got_o, got_lse = kernel.forward_paged(q, kc, vc, tt, lt, o, lse)
        self.assertIs(got_o, o)
        ref_o, ref_lse = reference(q, kc, vc, table, lengths, page, hq, hk, d, dv, spec)
        self.check(o, lse, ref_o, ref_lse, dv)

        # A table entry a length reaches that is not a page, a length past
        # the cache: refused before the kernel reads.
        with self.assertRaises(fmha.FmhaError) as cm:
            kernel.forward_paged(q, kc, vc, tt, HostTensor((3,), "i", [9, 1, 4]), o, lse)
        self.assertEqual(str(cm.exception),
                         "FMHA_ERROR_INVALID_ARGUMENT: block_table[1, 0]=99 is past the "
                         "cache's 7 pages (seqlens_k[1]=1 reads it); nothing was launched")
        with self.assertRaises(fmha.FmhaError) as cm:
            kernel.forward_paged(q, kc, vc, tt, HostTensor((3,), "i", [13, 0, 4]), o, lse)
        self.assertIn("seqlens_k[0]=13 is outside the cache's [0, 12] keys", str(cm.exception))

        # Argument errors name the tensor.
        for args, message in (
                ((q, kc, vc, HostTensor((3, 3), values=[0] * 9), lt),
                 "block_table: expected dtype torch.int32, got torch.float32"),
                ((q, kc, vc, HostTensor((2, 3), "i", [0] * 6), lt),
                 "block_table: B (dim 0) is 2, expected 3 (q's)"),
                ((q, HostTensor((7, 8, hk, d)), vc, tt, lt),
                 "k_cache: page size (dim 1) is 8, the bundle's is 4"),
                ((q, kc, HostTensor((6, page, hk, dv)), tt, lt),
                 "v: pages (dim 0) is 6, expected 7"),
                ((q, kc, vc, tt, HostTensor((3, 1), "i", [1, 1, 1])),
                 "cache_seqlens: expected a 1-d")):
            with self.assertRaises(ValueError) as cm:
                kernel.forward_paged(*args)
            self.assertIn(message, str(cm.exception))
        fixed = os.path.join(self.tmp.name, "f.fmha")
        fmha.compile_bundle(fixed, target="cpu", chip="", dtype="f32", hq=hq, hk=hk, d=d, dv=dv,
                            mask=spec)
        with self.assertRaises(ValueError) as cm:
            fmha.Kernel(fixed).forward_paged(q, kc, vc, tt, lt, o, lse)
        self.assertEqual(str(cm.exception), "bundle '%s' is not a paged-cache forward of "
                         "fixed-length queries (fmha-compile --page-size)" % fixed)

    def test_attention_with_kvcache(self):
        fmha = self.fmha
        hq, hk, d, page = 4, 1, 8, 4
        rnd = random.Random(13)
        q, kc, vc, table, lengths, tt, lt = self.problem(rnd, hq, hk, d, d, page)
        sinks = HostTensor((hq,), values=[0.5, -1.0, 2.0, 0.0])
        bundles = os.path.join(self.tmp.name, "bundles")
        o, lse = HostTensor((3, 2, hq, d)), HostTensor((3, hq, 2))
        got, got_lse = fmha.attention_with_kvcache(
            q, kc, vc, cache_seqlens=lt, block_table=tt, causal=True, sinks=sinks,
            bundle_dir=bundles, out=o, lse=lse, return_softmax_lse=True)
        self.assertIs(got, o)
        self.assertIs(got_lse, lse)
        name = fmha.bundle_name("cpu", "", "f32", hq, hk, d, d, mask="b", sinks=True,
                                page_size=page)
        self.assertTrue(name.endswith("-sinks-page4.fmha"), name)
        self.assertTrue(os.path.exists(os.path.join(bundles, name)))
        self.assertIn("--page-size=4", fmha.compile_args("cpu", "", "f32", hq, hk, d,
                                                         page_size=4))
        ref_o, ref_lse = reference(q, kc, vc, table, lengths, page, hq, hk, d, d, "b:-1,0",
                                   sinks=[0.5, -1.0, 2.0, 0.0])
        self.check(o, lse, ref_o, ref_lse, d)
        # FlashAttention's name for it, its keyword arguments.
        self.assertIs(fmha.flash_attn_with_kvcache, fmha.attention_with_kvcache)
        o2 = HostTensor((3, 2, hq, d))
        fmha.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lt, block_table=tt, causal=True,
                                     sinks=sinks, bundle_dir=bundles, out=o2,
                                     lse=HostTensor((3, hq, 2)))
        self.assertEqual(list(o2.base), list(o.base))
        for kw, message in ((dict(k=q, v=q), "k is not supported (write new keys"),
                            (dict(rotary_cos=q), "rotary_cos is not supported"),
                            (dict(alibi_slopes=1), "alibi_slopes is not supported"),
                            (dict(block_table=None), "a cache without block_table"),
                            (dict(cache_seqlens=None), "give cache_seqlens"),
                            (dict(causal=True, mask="0"), "give mask= or causal/window_size")):
            args = dict(cache_seqlens=lt, block_table=tt, bundle_dir=bundles)
            args.update(kw)
            with self.assertRaises(ValueError) as cm:
                fmha.attention_with_kvcache(q, kc, vc, **args)
            self.assertIn(message, str(cm.exception))

    def test_chunked_prefill(self):
        """Variable-length queries against the paged cache (--varlen
        --page-size): Kernel.forward_chunked and attention_varlen with a
        block table; rows past the last offset stay as they were."""
        fmha = self.fmha
        hq, hk, d, page = 4, 2, 8, 4
        rnd = random.Random(17)
        _, kc, vc, table, lengths, tt, lt = self.problem(rnd, hq, hk, d, d, page)
        lq = [3, 0, 2]  # the new rows of each sequence: the cache's last
        cu = [0, 3, 3, 5]
        total = cu[-1] + 2
        q = self.random((total, hq, d), rnd)
        nan = float("nan")
        o = HostTensor((total, hq, d), values=[nan] * (total * hq * d))
        lse = HostTensor((hq, total), values=[nan] * (hq * total))
        cq = HostTensor((4,), "i", cu)
        path = os.path.join(self.tmp.name, "c.fmha")
        fmha.compile_bundle(path, target="cpu", chip="", dtype="f32", hq=hq, hk=hk, d=d, dv=d,
                            mask="b", varlen=True, page_size=page)
        kernel = fmha.Kernel(path)
        kernel.forward_chunked(q, kc, vc, cq, tt, lt, o, lse)

        class Rows:
            """Sequence n's rows of q as a batch of one (B, Sq, Hq, D)."""

            def __init__(self, n):
                self.n, self.shape = n, (1, lq[n], hq, d)

            def at(self, b, i, h, e):
                return q.at(cu[self.n] + i, h, e)

        for n in range(3):
            ref_o, ref_lse = reference(Rows(n), kc, vc, [table[n]], [lengths[n]], page, hq,
                                       hk, d, d, "b:-1,0")
            for (_, i, h), want in ref_o.items():
                for e in range(d):
                    self.assertAlmostEqual(o.at(cu[n] + i, h, e), want[e],
                                           delta=1e-4 * (1 + abs(want[e])))
            for (_, h, i), want in ref_lse.items():
                if math.isinf(want):
                    self.assertEqual(lse.at(h, cu[n] + i), want)
                else:
                    self.assertAlmostEqual(lse.at(h, cu[n] + i), want, delta=1e-4 * (1 + abs(want)))
        for row in range(cu[-1], total):
            self.assertTrue(math.isnan(lse.at(0, row)) and math.isnan(o.at(row, 0, 0)))

        # attention_varlen with FlashAttention's paged arguments.
        bundles = os.path.join(self.tmp.name, "chunked")
        o2 = HostTensor((total, hq, d), values=[nan] * (total * hq * d))
        fmha.attention_varlen(q, kc, vc, cq, None, 3, 12, causal=True, block_table=tt,
                              seqused_k=lt, bundle_dir=bundles, out=o2,
                              lse=HostTensor((hq, total)))
        self.assertEqual([x for x in o2.base if x == x], [x for x in o.base if x == x])
        self.assertTrue(os.path.exists(os.path.join(bundles, fmha.bundle_name(
            "cpu", "", "f32", hq, hk, d, d, mask="b", varlen=True, page_size=page))))
        with self.assertRaises(ValueError) as cm:
            fmha.attention_varlen(q, kc, vc, cq, None, 3, 12, causal=True, block_table=tt,
                                  bundle_dir=bundles)
        self.assertIn("with block_table, give seqused_k or cu_seqlens_k", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            kernel.forward_chunked(q, kc, vc, cq, HostTensor((2, 3), "i", [0] * 6), lt, o, lse)
        self.assertEqual(str(cm.exception),
                         "block_table: B (dim 0) is 2, expected 3 (cu_seqlens_q's N)")
        with self.assertRaises(ValueError) as cm:
            kernel.forward_paged(HostTensor((3, 2, hq, d)), kc, vc, tt, lt)
        self.assertIn("is not a paged-cache forward of fixed-length queries", str(cm.exception))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    os.environ["FMHA_RUNTIME_LIB"] = sys.argv[1]
    # As python_varlen_test: fmha-compile runs without the sanitizer preload.
    os.environ.pop("LD_PRELOAD", None)
    python_varlen_test.FMHA_COMPILE = os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    unittest.main()

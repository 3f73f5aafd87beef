#!/usr/bin/env python3
"""Tests of the `fmha` Python module (python/fmha) that need neither torch nor
a GPU: the argument checks on tensor-like stand-ins, bundle names and
fmha-compile arguments, the library loader, and kernels run through the
runtime's CUDA backend over the fake driver (test/unit/FakeCuda.cpp).

Usage: python_module_test.py RUNTIME_LIB FAKE_CUDA_LIB [unittest args]
"""

import array
import ctypes
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

RUNTIME_LIB = FAKE_CUDA = None


class DType:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


class Device:
    def __init__(self, kind, index=None):
        self.type = kind
        self.index = index


class FakeTensor:
    """What fmha.Kernel.forward reads of a torch tensor."""

    def __init__(self, shape, dtype="torch.float32", device=("cuda", 0), ptr=0,
                 contiguous=True, strides=None):
        self.shape = tuple(shape)
        self.dtype = DType(dtype)
        self.device = Device(*device)
        self._ptr = ptr
        self._contiguous = contiguous
        if strides is None:
            strides, n = [], 1
            for size in reversed(self.shape):
                strides.insert(0, n)
                n *= size
        self._strides = tuple(strides)

    def is_contiguous(self):
        return self._contiguous

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr


def visible_b(i, j, sq, sk, left, right, sink):
    """Mask b:left,right,sink (DESIGN.md section 1)."""
    off = sk - sq
    return j < sink or (i + off - left <= j <= i + off + right)


def reference(q, k, v, b, hq, hk, sq, sk, d, dv, left, right, sink):
    o = [0.0] * (b * hq * sq * dv)
    lse = [0.0] * (b * hq * sq)
    scale = 1.0 / math.sqrt(d)
    for bb in range(b):
        for h in range(hq):
            kh = h // (hq // hk)
            for i in range(sq):
                qrow = q[((bb * hq + h) * sq + i) * d:][:d]
                scores = []
                for j in range(sk):
                    if visible_b(i, j, sq, sk, left, right, sink):
                        krow = k[((bb * hk + kh) * sk + j) * d:][:d]
                        scores.append((j, scale * sum(x * y for x, y in zip(qrow, krow))))
                r = (bb * hq + h) * sq + i
                if not scores:
                    lse[r] = -math.inf
                    continue
                m = max(s for _, s in scores)
                total = sum(math.exp(s - m) for _, s in scores)
                lse[r] = m + math.log(total)
                for j, s in scores:
                    p = math.exp(s - lse[r])
                    for c in range(dv):
                        o[r * dv + c] += p * v[((bb * hk + kh) * sk + j) * dv + c]
    return o, lse


def fake_module(kernel, dtype, hq, hk, d, dv, mask, block_m=16, block_threads=128,
                shared_bytes=0):
    return ("FAKE-CUDA-MODULE\nkernel=%s\ndtype=%s\nhq=%d\nhk=%d\nd=%d\ndv=%d\n"
            "mask=%s\nscale=%.9g\nsoftcap=0\nblock_m=%d\nblock_threads=%d\n"
            "shared_bytes=%d\n" % (kernel, dtype, hq, hk, d, dv, mask,
                                   1 / math.sqrt(d), block_m, block_threads,
                                   shared_bytes))


def fake_bundle(dtype, hq, hk, d, dv, mask, block_m=16, backward=None):
    """A forward bundle, or with backward="0" (atomic) or "1"
    (deterministic) a gpu-bwd-v1 one, for the fake driver."""
    kernel = "fmha_bwd" if backward else "fmha_fwd"
    kind = "bwd\ndeterministic=%s" % backward if backward else "fwd"
    binary = (fake_module(kernel, dtype, hq, hk, d, dv, mask, block_m) +
              ("block_n=16\nkind=%s\n" % kind if backward else "")).encode()
    header = ("FMHA-BUNDLE 1\ntarget=cuda\nchip=sm_90a\nkind=%s\ndtype=%s\n"
              "hq=%d\nhk=%d\nd=%d\ndv=%d\nmask=%s\nscale=0\nsoftcap=0\n"
              "block_m=%d\nblock_n=16\nblock_threads=128\nshared_bytes=0\n"
              "kernel=%s\nabi=%s\nbinary_format=ptx\n"
              "binary_size=%d\n\n" % (kind, dtype, hq, hk, d, dv, mask, block_m, kernel,
                                         "gpu-bwd-v1" if backward else "gpu-flat-v1",
                                         len(binary)))
    return header.encode() + binary


INFO = {"target": "cuda", "dtype": "bf16", "hq": 8, "hk": 2, "d": 64, "dv": 32}


class ArgumentChecks(unittest.TestCase):
    def check(self, *tensors, **kw):
        import fmha
        return fmha.check_forward_args(INFO, *tensors, **kw)

    def good(self):
        bf = "torch.bfloat16"
        return (FakeTensor((2, 8, 100, 64), bf), FakeTensor((2, 2, 300, 64), bf),
                FakeTensor((2, 2, 300, 32), bf))

    def test_accepts_and_returns_sizes(self):
        q, k, v = self.good()
        self.assertEqual(self.check(q, k, v), (2, 100, 300))
        o = FakeTensor((2, 8, 100, 32), "torch.bfloat16")
        lse = FakeTensor((2, 8, 100), "torch.float32")
        self.assertEqual(self.check(q, k, v, o, lse, device_index=0), (2, 100, 300))

    def expect_error(self, message, *tensors, **kw):
        with self.assertRaises(ValueError) as cm:
            self.check(*tensors, **kw)
        self.assertEqual(str(cm.exception), message)

    def test_errors(self):
        q, k, v = self.good()
        bf = "torch.bfloat16"
        self.expect_error("q: expected a 4-d BHSD [B, Hq, Sq, D] tensor, got shape (8, 100, 64)",
                          FakeTensor((8, 100, 64), bf), k, v)
        self.expect_error("q: expected a tensor, got int", 3, k, v)
        self.expect_error("k: expected dtype torch.bfloat16 (the bundle's bf16), got torch.float16",
                          q, FakeTensor((2, 2, 300, 64), "torch.float16"), v)
        self.expect_error("lse: expected dtype torch.float32, got torch.bfloat16",
                          q, k, v, None, FakeTensor((2, 8, 100), bf))
        self.expect_error("q is on cpu; a cuda bundle runs on cuda tensors",
                          FakeTensor((2, 8, 100, 64), bf, ("cpu",)), k, v)
        self.expect_error("v is on cuda:1 but the FMHA runtime runs on cuda:0 (set "
                          "FMHA_CUDA_DEVICE before the first cuda bundle is loaded)",
                          q, k, FakeTensor((2, 2, 300, 32), bf, ("cuda", 1)), device_index=0)
        self.expect_error("v is on cuda:1, q on cuda:0",
                          q, k, FakeTensor((2, 2, 300, 32), bf, ("cuda", 1)))
        self.expect_error("q: expected a contiguous BHSD tensor (call .contiguous(), or use "
                          "a bundle compiled with --strides=any)",
                          FakeTensor((2, 8, 100, 64), bf, contiguous=False), k, v)
        # A bundle taking strided q: views pass, a strided last dim does not.
        view = FakeTensor((2, 8, 100, 64), bf, contiguous=False,
                          strides=(8 * 100 * 64, 64, 8 * 64, 1))
        self.assertEqual(self.check(view, k, v, strided={"q": 16}), (2, 100, 300))
        self.expect_error("q: expected a contiguous last dim (stride 1), got strides "
                          "(51200, 64, 512, 2)",
                          FakeTensor((2, 8, 100, 64), bf, contiguous=False,
                                     strides=(51200, 64, 512, 2)), k, v,
                          strided={"q": 16})
        self.expect_error("q: Hq (dim 1) is 4, expected 8", FakeTensor((2, 4, 100, 64), bf), k, v)
        self.expect_error("q: D (dim 3) is 128, expected 64", FakeTensor((2, 8, 100, 128), bf), k, v)
        self.expect_error("k: B (dim 0) is 3, expected 2", q, FakeTensor((3, 2, 300, 64), bf), v)
        self.expect_error("k: Hk (dim 1) is 8, expected 2", q, FakeTensor((2, 8, 300, 64), bf), v)
        self.expect_error("v: Sk (dim 2) is 299, expected 300", q, k, FakeTensor((2, 2, 299, 32), bf))
        self.expect_error("v: Dv (dim 3) is 64, expected 32", q, k, FakeTensor((2, 2, 300, 64), bf))
        self.expect_error("o: Sq (dim 2) is 99, expected 100", q, k, v,
                          FakeTensor((2, 8, 99, 32), bf))
        self.expect_error("lse: expected a 3-d [B, Hq, Sq] tensor, got shape (2, 8, 100, 1)",
                          q, k, v, None, FakeTensor((2, 8, 100, 1), "torch.float32"))


class Names(unittest.TestCase):
    def test_bundle_names(self):
        import fmha
        self.assertEqual(fmha.bundle_name("cuda", "sm_90a", "bf16", 16, 4, 128, mask="b:4095,0,4"),
                         "fwd-cuda-sm_90a-bf16-hq16-hk4-d128-dv128-mask_b_4095_0_4.fmha")
        self.assertEqual(fmha.bundle_name("cuda", "sm_90a", "f16", 8, 8, 64, 32, mask="t:-1,0",
                                          scale=0.5, softcap=30, block_m=128, block_n=64),
                         "fwd-cuda-sm_90a-f16-hq8-hk8-d64-dv32-mask_t_m1_0-scale0.5-"
                         "softcap30-bm128-bn64.fmha")
        self.assertEqual(fmha.bundle_name("cpu", "", "f32", 2, 1, 8, mask="none"),
                         "fwd-cpu-host-f32-hq2-hk1-d8-dv8-mask_0.fmha")
        with self.assertRaises(ValueError):
            fmha.bundle_name("cuda", "sm_90a", "f64", 1, 1, 8)
        with self.assertRaises(ValueError):
            fmha.bundle_name("cuda", "sm_90a", "f16", 1, 1, 8, mask="causal!")
        with self.assertRaises(ValueError):
            fmha.bundle_name("cuda", "sm 90", "f16", 1, 1, 8)
        self.assertEqual(fmha.bundle_name("cuda", "sm_90a", "bf16", 16, 4, 128, mask="b",
                                          kind="bwd"),
                         "bwd-cuda-sm_90a-bf16-hq16-hk4-d128-dv128-mask_b.fmha")
        self.assertEqual(fmha.bundle_name("cuda", "sm_90a", "bf16", 16, 4, 128, mask="b",
                                          kind="bwd", deterministic=True),
                         "bwd-cuda-sm_90a-bf16-hq16-hk4-d128-dv128-mask_b-det.fmha")
        with self.assertRaises(ValueError) as cm:
            fmha.bundle_name("cuda", "sm_90a", "f16", 1, 1, 8, deterministic=True)
        self.assertEqual(str(cm.exception), "deterministic applies to kind='bwd' bundles only")
        with self.assertRaises(ValueError):
            fmha.bundle_name("cuda", "sm_90a", "f16", 1, 1, 8, kind="merge")

    def test_compile_args(self):
        import fmha
        self.assertEqual(
            fmha.compile_args("cuda", "sm_90a", "bf16", 16, 4, 64, mask="xb:7", softcap=50),
            ["--target=cuda", "--chip=sm_90a", "--dtype=bf16", "--hq=16", "--hk=4", "-d=64",
             "--dv=64", "--mask=xb:7", "--softcap=50"])
        self.assertEqual(
            fmha.compile_args("cuda", "sm_90a", "f16", 4, 1, 64, mask="t", kind="bwd",
                              deterministic=True)[-3:],
            ["--mask=t", "--bwd", "--deterministic"])

    def test_learned_sinks_signature(self):
        # sinks=True names its own bundle and asks fmha-compile for --sinks;
        # check_forward_args takes sinks float32 [Hq] and names what is wrong.
        import fmha
        from fmha._checks import check_forward_args
        self.assertEqual(fmha.bundle_name("cuda", "sm_90a", "bf16", 64, 8, 64, mask="b:127,0",
                                          sinks=True),
                         "fwd-cuda-sm_90a-bf16-hq64-hk8-d64-dv64-mask_b_127_0-sinks.fmha")
        self.assertEqual(fmha.compile_args("cpu", "", "f32", 4, 2, 8, sinks=True)[-2:],
                         ["--mask=0", "--sinks"])
        info = dict(target="cpu", dtype="f32", hq=4, hk=2, d=8, dv=8)
        f32 = "torch.float32"
        q = FakeTensor((1, 4, 3, 8), f32, device=("cpu",))
        k = FakeTensor((1, 2, 5, 8), f32, device=("cpu",))
        self.assertEqual(check_forward_args(info, q, k, k, sinks=FakeTensor((4,), f32,
                                                                            device=("cpu",))),
                         (1, 3, 5))
        for sinks, message in (
                (FakeTensor((2,), f32, device=("cpu",)), "sinks: Hq (dim 0) is 2, expected 4"),
                (FakeTensor((4,), "torch.float16", device=("cpu",)),
                 "sinks: expected dtype torch.float32, got torch.float16"),
                (FakeTensor((4, 1), f32, device=("cpu",)),
                 "sinks: expected a 1-d [Hq] tensor, got shape (4, 1)")):
            with self.assertRaises(ValueError) as cm:
                check_forward_args(info, q, k, k, sinks=sinks)
            self.assertEqual(str(cm.exception), message)

    def test_default_backward_mode(self):
        # attention(deterministic=None) takes the mode measured faster: the
        # deterministic kernels on cuda, atomic accumulation elsewhere.
        import fmha
        self.assertFalse(fmha.default_deterministic("cuda"))
        self.assertFalse(fmha.default_deterministic("cpu"))
        self.assertFalse(fmha.default_deterministic("hip"))
        with self.assertRaises(ValueError) as cm:
            fmha.default_deterministic("tpu")
        self.assertIn("unknown target 'tpu'", str(cm.exception))


def run_python(code, **env):
    full = dict(os.environ)
    full.update(env)
    full["PYTHONPATH"] = os.path.join(ROOT, "python")
    return subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=full)


class Loader(unittest.TestCase):
    def test_missing_library(self):
        r = run_python("import fmha; fmha.load_library()",
                       FMHA_RUNTIME_LIB="/nonexistent/libfmha_runtime.so")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("OSError: cannot load the FMHA runtime (libfmha_runtime.so); build it "
                      "(target fmha_runtime) or set FMHA_RUNTIME_LIB to its path. Tried: "
                      "/nonexistent/libfmha_runtime.so: no such file", r.stdout)

    def test_version(self):
        import fmha
        self.assertEqual(fmha.runtime_version(), "0.1.0")

    def test_flash_attn_func_arguments(self):
        import fmha
        from fmha._attention import _flash_mask
        self.assertEqual(_flash_mask(False, (-1, -1)), "0")
        self.assertEqual(_flash_mask(True, (-1, -1)), "b")
        self.assertEqual(_flash_mask(True, (128, -1)), "b:128,0")
        self.assertEqual(_flash_mask(False, (128, 0)), "b:128,0")
        self.assertEqual(_flash_mask(False, (-1, 5)), "b:-1,5")
        self.assertEqual(_flash_mask(False, (3, 7)), "b:3,7")
        for kwargs, message in (({"dropout_p": 0.1}, "dropout_p=0.1 is not supported"),
                                ({"alibi_slopes": object()}, "alibi_slopes is not supported"),
                                ({"return_attn_probs": True}, "return_attn_probs is not"),
                                ({"window_size": 4}, "window_size must be a pair of ints")):
            with self.assertRaises(ValueError) as e:
                fmha.flash_attn_func(None, None, None, **kwargs)
            self.assertIn(message, str(e.exception))

    def test_transformers_integration_masks(self):
        # Without transformers: the module imports; its masks are the
        # bottom-right causal spec and transformers' sliding window
        # (keys i - W < j <= i); a non-causal module is refused.
        from fmha.integrations import transformers as hf

        class Module:
            is_causal = True
        self.assertEqual(hf._mask_spec(Module(), None, None, None), "b")
        self.assertEqual(hf._mask_spec(Module(), None, None, 4096), "b:4095,0")
        Module.is_causal = False
        with self.assertRaises(ValueError) as e:
            hf._mask_spec(Module(), None, None, None)
        self.assertIn("only causal attention is supported", str(e.exception))
        # Attention dropout while training is refused before anything runs.
        Module.is_causal, Module.training = True, True
        with self.assertRaises(ValueError) as e:
            hf.attention(Module(), None, None, None, None, dropout=0.1)
        self.assertIn("attention dropout (0.1) is not supported", str(e.exception))

    def test_host_threads(self):
        import fmha
        fmha.set_num_threads(2)
        self.assertEqual(fmha.get_num_threads(), 2)
        with self.assertRaises(fmha.FmhaError) as e:
            fmha.set_num_threads(-3)
        self.assertIn("is not in [0, 1024]", str(e.exception))
        with self.assertRaises(TypeError):
            fmha.set_num_threads(2.0)
        fmha.set_num_threads(0)
        self.assertGreaterEqual(fmha.get_num_threads(), 1)
        r = run_python("import fmha; print(fmha.get_num_threads())", FMHA_NUM_THREADS="5")
        self.assertEqual(r.stdout.strip(), "5", r.stdout)

    def test_constants_match_the_header(self):
        """Every value the package mirrors from fmha_runtime.h: statuses,
        targets, kinds, dtypes, argument kinds and the API version."""
        from fmha import _capi
        header = os.path.join(ROOT, "runtime", "include", "fmha", "Runtime", "fmha_runtime.h")
        defines = {}
        with open(header) as f:
            for line in f:
                m = re.match(r"#define (FMHA_\w+) (\d+)\s*$", line)
                if m:
                    defines[m.group(1)] = int(m.group(2))
        def family(prefix):
            return {v: k[len(prefix):].lower() for k, v in defines.items()
                    if k.startswith(prefix)}
        self.assertEqual({v: k for k, v in defines.items()
                          if k == "FMHA_SUCCESS" or k.startswith("FMHA_ERROR_")},
                         _capi._STATUS_NAMES)
        self.assertEqual(family("FMHA_TARGET_"), _capi._TARGET_NAMES)
        self.assertEqual(family("FMHA_KIND_"), _capi._KIND_NAMES)
        self.assertEqual(family("FMHA_DTYPE_"), _capi._DTYPE_NAMES)
        self.assertEqual((defines["FMHA_ARG_SIZE"], defines["FMHA_ARG_TENSOR"]),
                         (_capi._ARG_SIZE, _capi._ARG_TENSOR))
        self.assertEqual(defines["FMHA_API_VERSION"], _capi.API_VERSION)
        self.assertEqual((defines["FMHA_TARGET_CPU"], defines["FMHA_TARGET_CUDA"],
                          defines["FMHA_TARGET_HIP"]),
                         (_capi.TARGET_CPU, _capi.TARGET_CUDA, _capi.TARGET_HIP))

    def test_missing_driver_and_no_device(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "a.fmha")
            with open(path, "wb") as f:
                f.write(fake_bundle("f32", 2, 2, 8, 8, "0"))
            code = ("import fmha\ntry:\n    fmha.Kernel(%r)\nexcept fmha.FmhaError as e:\n"
                    "    print(e.status, '|', e)\n" % path)
            r = run_python(code, FMHA_RUNTIME_LIB=RUNTIME_LIB,
                           FMHA_CUDA_LIBRARY="/nonexistent/libcuda.so.1")
            self.assertIn("FMHA_ERROR_BACKEND_UNAVAILABLE | FMHA_ERROR_BACKEND_UNAVAILABLE: "
                          "bundle '%s': CUDA driver not found: dlopen /nonexistent/libcuda.so.1 "
                          "failed: " % path, r.stdout)
            r = run_python(code, FMHA_RUNTIME_LIB=RUNTIME_LIB, FMHA_CUDA_LIBRARY=FAKE_CUDA,
                           FMHA_FAKE_CUDA="none")
            self.assertIn("bundle '%s': no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE "
                          "(no CUDA-capable device is detected)" % path, r.stdout)


class FakeDevice(unittest.TestCase):
    """Runs through the CUDA backend with the fake driver's one device."""

    @classmethod
    def setUpClass(cls):
        import fmha
        cls.fmha = fmha
        cls.lib = fmha.load_library()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.allocations = []

    @classmethod
    def tearDownClass(cls):
        for ptr in cls.allocations:
            cls.lib.fmhaDeviceFree(1, ptr)
        cls.tmp.cleanup()

    def device_array(self, values):
        """Copies float32 values to fake-device memory; returns the address."""
        host = array.array("f", values)
        ptr = ctypes.c_void_p()
        self.assertEqual(self.lib.fmhaDeviceMalloc(1, max(4 * len(host), 4), ctypes.byref(ptr)), 0,
                         self.lib.fmhaGetLastError())
        self.allocations.append(ptr.value)
        if len(host):
            addr, _ = host.buffer_info()
            self.assertEqual(self.lib.fmhaMemcpyHostToDevice(1, ptr.value, addr, 4 * len(host)), 0)
        return ptr.value

    def read(self, ptr, n):
        host = array.array("f", [0.0] * n)
        addr, _ = host.buffer_info()
        self.assertEqual(self.lib.fmhaMemcpyDeviceToHost(1, addr, ptr, 4 * n), 0)
        return list(host)

    def make_problem(self, b, hq, hk, sq, sk, d, dv, seed):
        rnd = random.Random(seed)
        data = {}
        for name, n in (("q", b * hq * sq * d), ("k", b * hk * sk * d), ("v", b * hk * sk * dv)):
            # float32-representable values
            data[name] = list(array.array("f", [rnd.gauss(0, 1) for _ in range(n)]))
        return data

    def compare(self, got_o, got_lse, ref_o, ref_lse):
        for x, y in zip(got_o, ref_o):
            self.assertAlmostEqual(x, y, delta=1e-4 * (1 + abs(y)))
        for x, y in zip(got_lse, ref_lse):
            if math.isinf(y):
                self.assertEqual(x, y)
            else:
                self.assertAlmostEqual(x, y, delta=1e-4 * (1 + abs(y)))

    def test_kernel_forward(self):
        fmha = self.fmha
        b, hq, hk, sq, sk, d, dv = 2, 4, 2, 9, 13, 8, 4
        path = os.path.join(self.tmp.name, "k.fmha")
        with open(path, "wb") as f:
            f.write(fake_bundle("f32", hq, hk, d, dv, "b:3,0,1"))
        kernel = fmha.Kernel(path)
        self.assertEqual(kernel.target, "cuda")
        self.assertEqual(kernel.device_index, 0)
        self.assertEqual(kernel.block_threads, 128)
        self.assertEqual(kernel.abi, "gpu-flat-v1")
        self.assertEqual(kernel.mask, "b:3,0,1")
        # A version-1 bundle: the runtime gives it the manifest of its abi.
        self.assertEqual(kernel.bundle_version, 1)
        self.assertEqual(kernel.num_kernels, 1)
        self.assertTrue(kernel.manifest.startswith("call gpu\nsize b\nsize sq\nsize sk\n"),
                        kernel.manifest)
        self.assertIn("\noperand lse out f32 b 4 sq optional\n", kernel.manifest)
        with self.assertRaises(fmha.FmhaError) as cm:
            kernel.launch({"b": 1, "sq": 1, "sk": 1, "window": 2}, {})
        self.assertEqual(str(cm.exception), "FMHA_ERROR_INVALID_ARGUMENT: bundle '%s': the "
                         "bundle takes no size 'window' (its sizes: b, sq and sk); nothing "
                         "was launched" % path)
        self.assertEqual(kernel.workspace_bytes({"b": 1, "sq": 1, "sk": 1}), 0)
        self.assertEqual(fmha.API_VERSION, self.lib.fmhaGetApiVersion())
        self.assertIn("fmha.Kernel(", repr(kernel))
        self.assertEqual(fmha.backend_description("cuda"), "cuda: FMHA fake GPU (sm_90, device 0)")

        data = self.make_problem(b, hq, hk, sq, sk, d, dv, 5)
        ptrs = {n: self.device_array(x) for n, x in data.items()}
        o_ptr = self.device_array([float("nan")] * (b * hq * sq * dv))
        lse_ptr = self.device_array([float("nan")] * (b * hq * sq))
        f32 = "torch.float32"
        q = FakeTensor((b, hq, sq, d), f32, ptr=ptrs["q"])
        k = FakeTensor((b, hk, sk, d), f32, ptr=ptrs["k"])
        v = FakeTensor((b, hk, sk, dv), f32, ptr=ptrs["v"])
        o = FakeTensor((b, hq, sq, dv), f32, ptr=o_ptr)
        lse = FakeTensor((b, hq, sq), f32, ptr=lse_ptr)
        got_o, got_lse = kernel.forward(q, k, v, o, lse, stream=0)
        self.assertIs(got_o, o)
        self.assertEqual(self.lib.fmhaDeviceSynchronize(1, None), 0)
        ref_o, ref_lse = reference(data["q"], data["k"], data["v"], b, hq, hk, sq, sk, d, dv, 3, 0, 1)
        self.compare(self.read(o_ptr, len(ref_o)), self.read(lse_ptr, len(ref_lse)), ref_o, ref_lse)

        # A bundle without learned sink logits refuses them.
        self.assertFalse(kernel.takes_sinks)
        with self.assertRaises(ValueError) as cm:
            kernel.forward(q, k, v, o, lse, sinks=FakeTensor((hq,), f32))
        self.assertEqual(str(cm.exception), "sinks: bundle '%s' takes no learned sink logits; "
                         "drop sinks=" % path)

        # Shape errors before anything runs; runtime errors as FmhaError.
        with self.assertRaises(ValueError) as cm:
            kernel.forward(q, k, FakeTensor((b, hk, sk, d), f32, ptr=ptrs["v"]), o, lse)
        self.assertEqual(str(cm.exception), "v: Dv (dim 3) is 8, expected 4")
        with self.assertRaises(fmha.FmhaError) as cm:
            kernel.forward_ptrs(70000, sq, sk, ptrs["q"], ptrs["k"], ptrs["v"], o_ptr, lse_ptr)
        self.assertEqual(cm.exception.status, "FMHA_ERROR_INVALID_ARGUMENT")
        self.assertEqual(str(cm.exception), "FMHA_ERROR_INVALID_ARGUMENT: kernel 'fmha_fwd': "
                         "grid.z = b = 70000 exceeds the device limit 65535; nothing was "
                         "launched")
        with self.assertRaises(fmha.FmhaError) as cm:
            kernel.check_problem(b, 0, sk)
        self.assertEqual(str(cm.exception), "FMHA_ERROR_INVALID_ARGUMENT: problem Sq must be "
                         "positive, got 0")
        kernel.close()
        with self.assertRaises(ValueError):
            kernel.forward_ptrs(b, sq, sk, 1, 1, 1, 1, 1)

    def test_kernel_backward(self):
        """Kernel.backward on the fake driver: the gradients of a float64
        reference written here (mask b:3,0,1, GQA 2:1), the workspace the
        runtime asks for, and the errors."""
        fmha = self.fmha
        b, hq, hk, sq, sk, d, dv = 1, 4, 2, 6, 9, 8, 4
        left, right, sink = 3, 0, 1
        data = self.make_problem(b, hq, hk, sq, sk, d, dv, 8)
        rnd = random.Random(3)
        do = list(array.array("f", [rnd.gauss(0, 1) for _ in range(b * hq * sq * dv)]))
        o, lse = reference(data["q"], data["k"], data["v"], b, hq, hk, sq, sk, d, dv,
                           left, right, sink)
        o = list(array.array("f", o))
        lse = list(array.array("f", lse))
        # The gradients (DESIGN.md section 1) in float64.
        scale = 1 / math.sqrt(d)
        q, k, v = data["q"], data["k"], data["v"]
        dq = [0.0] * len(q)
        dk = [0.0] * len(k)
        dvv = [0.0] * len(v)
        for h in range(hq):
            kh = h // (hq // hk)
            for i in range(sq):
                r = h * sq + i
                dsum = sum(do[r * dv + c] * o[r * dv + c] for c in range(dv))
                for j in range(sk):
                    if not visible_b(i, j, sq, sk, left, right, sink):
                        continue
                    s = scale * sum(q[r * d + c] * k[(kh * sk + j) * d + c] for c in range(d))
                    p = math.exp(s - lse[r])
                    dp = sum(do[r * dv + c] * v[(kh * sk + j) * dv + c] for c in range(dv))
                    ds = p * (dp - dsum)
                    for c in range(d):
                        dq[r * d + c] += scale * ds * k[(kh * sk + j) * d + c]
                        dk[(kh * sk + j) * d + c] += scale * ds * q[r * d + c]
                    for c in range(dv):
                        dvv[(kh * sk + j) * dv + c] += p * do[r * dv + c]

        f32 = "torch.float32"
        tensors = {}
        for name, values, shape in (("q", q, (b, hq, sq, d)), ("k", k, (b, hk, sk, d)),
                                    ("v", v, (b, hk, sk, dv)), ("o", o, (b, hq, sq, dv)),
                                    ("lse", lse, (b, hq, sq)), ("do", do, (b, hq, sq, dv)),
                                    ("dq", [float("nan")] * len(q), (b, hq, sq, d)),
                                    ("dk", [float("nan")] * len(k), (b, hk, sk, d)),
                                    ("dv", [float("nan")] * len(v), (b, hk, sk, dv))):
            tensors[name] = FakeTensor(shape, f32, ptr=self.device_array(values))
        t = tensors
        for det in ("0", "1"):
            path = os.path.join(self.tmp.name, "bwd%s.fmha" % det)
            with open(path, "wb") as f:
                f.write(fake_bundle("f32", hq, hk, d, dv, "b:3,0,1", backward=det))
            kernel = fmha.Kernel(path)
            self.assertEqual(kernel.kind, "bwd")
            self.assertEqual(kernel.deterministic, det == "1")
            self.assertEqual(kernel.abi, "gpu-bwd-v1")
            need = kernel.backward_workspace_bytes(b, sq, sk)
            self.assertEqual(need, 4 * b * hq * sq if det == "1" else 256 + 4 * b * hq * sq * d)
            ws = FakeTensor((need,), "torch.uint8", ptr=self.device_array([0.0] * (need // 4)))
            got = kernel.backward(t["q"], t["k"], t["v"], t["o"], t["lse"], t["do"], t["dq"],
                                  t["dk"], t["dv"], workspace=ws, stream=0)
            self.assertEqual(got, (t["dq"], t["dk"], t["dv"]))
            self.assertEqual(self.lib.fmhaDeviceSynchronize(1, None), 0)
            for name, want in (("dq", dq), ("dk", dk), ("dv", dvv)):
                for x, y in zip(self.read(t[name].data_ptr(), len(want)), want):
                    self.assertAlmostEqual(x, y, delta=1e-4 * (1 + abs(y)), msg=name)
            # Errors: do shaped unlike o; a workspace too small; a forward
            # bundle.
            with self.assertRaises(ValueError) as cm:
                kernel.backward(t["q"], t["k"], t["v"], t["o"], t["lse"], t["q"])
            self.assertEqual(str(cm.exception), "do: expected the shape of o (1, 4, 6, 4), "
                             "got (1, 4, 6, 8)")
            # A backward bundle without learned sinks refuses them.
            self.assertFalse(kernel.takes_sinks)
            with self.assertRaises(ValueError) as cm:
                kernel.backward(t["q"], t["k"], t["v"], t["o"], t["lse"], t["do"],
                                sinks=FakeTensor((hq,), f32))
            self.assertEqual(str(cm.exception), "sinks: bundle '%s' takes no learned sink "
                             "logits; drop sinks=" % path)
            with self.assertRaises(ValueError) as cm:
                kernel.backward(t["q"], t["k"], t["v"], t["o"], t["lse"], t["do"],
                                dsinks=FakeTensor((hq,), f32))
            self.assertEqual(str(cm.exception), "dsinks= needs sinks=")
            small = FakeTensor((need - 4,), "torch.uint8", ptr=ws.data_ptr())
            with self.assertRaises(fmha.FmhaError) as cm:
                kernel.backward(t["q"], t["k"], t["v"], t["o"], t["lse"], t["do"], t["dq"],
                                t["dk"], t["dv"], workspace=small, stream=0)
            self.assertIn("FMHA_ERROR_INVALID_ARGUMENT: workspace of %d bytes is too "
                          "small: this launch needs %d bytes" % (need - 4, need),
                          str(cm.exception))
            kernel.close()
        path = os.path.join(self.tmp.name, "fwd-for-bwd.fmha")
        with open(path, "wb") as f:
            f.write(fake_bundle("f32", hq, hk, d, dv, "b:3,0,1"))
        with self.assertRaises(ValueError) as cm:
            fmha.Kernel(path).backward(t["q"], t["k"], t["v"], t["o"], t["lse"], t["do"])
        self.assertIn("is a fwd bundle; backward needs a kind=bwd one", str(cm.exception))

    def test_attention_finds_and_compiles_bundles(self):
        fmha = self.fmha
        b, hq, hk, sq, sk, d, dv = 1, 2, 1, 5, 7, 8, 8
        mask = "b:2,0,1"
        os.environ["FMHA_CHIP"] = "sm_90a"
        signature = dict(target="cuda", chip="sm_90a", dtype="f32", hq=hq, hk=hk, d=d, dv=dv,
                         mask=mask)
        data = self.make_problem(b, hq, hk, sq, sk, d, dv, 9)
        ptrs = {n: self.device_array(x) for n, x in data.items()}
        f32 = "torch.float32"
        q = FakeTensor((b, hq, sq, d), f32, ptr=ptrs["q"])
        k = FakeTensor((b, hk, sk, d), f32, ptr=ptrs["k"])
        v = FakeTensor((b, hk, sk, dv), f32, ptr=ptrs["v"])
        ref_o, ref_lse = reference(data["q"], data["k"], data["v"], b, hq, hk, sq, sk, d, dv, 2, 0, 1)

        # A bundle directory without the bundle and no compiler: the message
        # says how to make it.
        bundles = os.path.join(self.tmp.name, "bundles")
        os.makedirs(bundles)
        name = fmha.bundle_name(**signature)
        saved_path = os.environ.get("PATH", "")
        os.environ["PATH"] = bundles
        try:
            with self.assertRaises(FileNotFoundError) as cm:
                fmha.attention(q, k, v, mask=mask, bundle_dir=bundles)
        finally:
            os.environ["PATH"] = saved_path
        self.assertEqual(
            str(cm.exception),
            "no bundle %s/%s, and it cannot be compiled here: fmha-compile not found (set "
            "FMHA_COMPILE or put it on PATH). Compile it where LLVM is: fmha-compile "
            "--target=cuda --chip=sm_90a --dtype=f32 --hq=2 --hk=1 -d=8 --dv=8 --mask=b:2,0,1 "
            "-o %s" % (bundles, name, name))
        os.environ["FMHA_COMPILE"] = os.path.join(self.tmp.name, "no-such-compiler")
        try:
            with self.assertRaises(FileNotFoundError) as cm:
                fmha.attention(q, k, v, mask=mask, bundle_dir=bundles)
        finally:
            del os.environ["FMHA_COMPILE"]
        self.assertIn("cannot be compiled here: FMHA_COMPILE=%s/no-such-compiler is not an "
                      "executable file" % self.tmp.name, str(cm.exception))

        # A stand-in fmha-compile that writes the fake bundle and logs its
        # arguments.
        log = os.path.join(self.tmp.name, "compile.log")
        compiler = os.path.join(self.tmp.name, "fmha-compile")
        bundle_bytes = fake_bundle("f32", hq, hk, d, dv, mask)
        with open(compiler, "w") as f:
            f.write(textwrap.dedent("""\
                #!%s
                import sys
                args = sys.argv[1:]
                open(%r, "a").write(" ".join(args) + "\\n")
                out = args[args.index("-o") + 1]
                open(out, "wb").write(%r)
                """ % (sys.executable, log, bundle_bytes)))
        os.chmod(compiler, 0o755)
        os.environ["FMHA_COMPILE"] = compiler
        try:
            o_ptr = self.device_array([float("nan")] * (b * hq * sq * dv))
            lse_ptr = self.device_array([float("nan")] * (b * hq * sq))
            o = FakeTensor((b, hq, sq, dv), f32, ptr=o_ptr)
            lse = FakeTensor((b, hq, sq), f32, ptr=lse_ptr)
            got, got_lse = fmha.attention(q, k, v, mask=mask, bundle_dir=bundles, out=o, lse=lse,
                                          return_lse=True)
            self.assertIs(got, o)
            self.compare(self.read(o_ptr, len(ref_o)), self.read(lse_ptr, len(ref_lse)),
                         ref_o, ref_lse)
            with open(log) as f:
                calls = f.read().splitlines()
            self.assertEqual(len(calls), 1)
            self.assertTrue(calls[0].startswith(
                "--target=cuda --chip=sm_90a --dtype=f32 --hq=2 --hk=1 -d=8 --dv=8 "
                "--mask=b:2,0,1 -o %s/.fmha-" % bundles), calls[0])
            self.assertTrue(os.path.exists(os.path.join(bundles, fmha.bundle_name(**signature))))
            # Found the second time: no compile.
            fmha.attention(q, k, v, mask=mask, bundle_dir=bundles, out=o, lse=lse)
            with open(log) as f:
                self.assertEqual(len(f.read().splitlines()), 1)
            # Without bundle_dir, the cache: what this fmha-compile makes goes
            # to its own folder (compiler_id); another build of it compiles
            # again instead of reusing the first build's bundle.
            cache = os.path.join(self.tmp.name, "cache")
            os.environ["FMHA_CACHE"] = cache
            try:
                fmha.attention(q, k, v, mask=mask, out=o, lse=lse)
                first = os.path.join(cache, fmha.compiler_id(compiler), name)
                self.assertTrue(os.path.exists(first), first)
                with open(compiler, "a") as f:
                    f.write("# another build\n")
                fmha.attention(q, k, v, mask=mask, out=o, lse=lse)
                second = os.path.join(cache, fmha.compiler_id(compiler), name)
                self.assertNotEqual(first, second)
                self.assertTrue(os.path.exists(second), second)
                with open(log) as f:
                    self.assertEqual(len(f.read().splitlines()), 3)
            finally:
                del os.environ["FMHA_CACHE"]
            # A failing compiler: its message comes through.
            with open(compiler, "w") as f:
                f.write("#!/bin/sh\necho 'fmha-compile: error: no such luck' >&2\nexit 2\n")
            with self.assertRaises(RuntimeError) as cm:
                fmha.attention(q, k, v, mask="t", bundle_dir=bundles, out=o, lse=lse)
            self.assertIn("failed (exit 2): fmha-compile: error: no such luck", str(cm.exception))
            self.assertEqual([n for n in os.listdir(bundles) if n.startswith(".fmha-")], [])
        finally:
            del os.environ["FMHA_COMPILE"]
        with self.assertRaises(ValueError) as cm:
            fmha.attention(q, k, v, layout="sbhd")
        self.assertEqual(str(cm.exception), "layout must be 'bhsd' or 'bshd', got 'sbhd'")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    RUNTIME_LIB, FAKE_CUDA = sys.argv[1], sys.argv[2]
    del sys.argv[1:3]
    os.environ["FMHA_RUNTIME_LIB"] = RUNTIME_LIB
    os.environ["FMHA_CUDA_LIBRARY"] = FAKE_CUDA
    os.environ["FMHA_FAKE_CUDA"] = "device"
    os.environ.pop("FMHA_CUDA_DEVICE", None)
    unittest.main()

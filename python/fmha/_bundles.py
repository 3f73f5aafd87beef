"""Bundles by signature: their names, the cache, fmha-compile."""

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading

from ._capi import _TORCH_DTYPES
from ._kernel import _torch

#
# Bundles by signature
#


def _mask_token(mask):
    mask = str(mask).strip()
    if mask in ("none", ""):
        mask = "0"
    if not re.fullmatch(r"[0-9a-z:,\-]+", mask):
        raise ValueError("mask %r is not a mask spec (0, t, b, t:L,R[,S], "
                         "b:L,R[,S], xt:W, xb:W)" % mask)
    return mask.replace(":", "_").replace(",", "_").replace("-", "m")


def _number_token(x):
    return ("%.9g" % float(x)).replace("-", "m").replace("+", "")


def _check_kind(kind, deterministic):
    if kind not in ("fwd", "bwd"):
        raise ValueError("kind %r is not fwd or bwd" % (kind,))
    if deterministic and kind != "bwd":
        raise ValueError("deterministic applies to kind='bwd' bundles only")


def bundle_name(target, chip, dtype, hq, hk, d, dv=None, mask="0", scale=None,
                softcap=None, block_m=None, block_n=None, kind="fwd", deterministic=False,
                sinks=False, varlen=False, page_size=0):
    """The file name of a bundle for a signature, e.g.
    'fwd-cuda-sm_90a-bf16-hq16-hk4-d128-dv128-mask_b.fmha', or for a
    backward 'bwd-...-mask_b.fmha' ('bwd-...-det.fmha' when deterministic).
    Shared by fmha.attention's cache and test/gpu/make_bundles.py."""
    dv = d if dv is None else dv
    _check_kind(kind, deterministic)
    if dtype not in _TORCH_DTYPES:
        raise ValueError("dtype %r is not one of f32, f16, bf16" % (dtype,))
    if not re.fullmatch(r"[A-Za-z0-9_.]*", chip or ""):
        raise ValueError("chip %r has characters other than [A-Za-z0-9_.]" % (chip,))
    parts = [kind, target, chip or "host", dtype, "hq%d" % hq, "hk%d" % hk,
             "d%d" % d, "dv%d" % dv, "mask_" + _mask_token(mask)]
    if scale:
        parts.append("scale" + _number_token(scale))
    if softcap:
        parts.append("softcap" + _number_token(softcap))
    if sinks:
        parts.append("sinks")
    if varlen:
        parts.append("varlen")
    if page_size:
        parts.append("page%d" % page_size)
    if block_m:
        parts.append("bm%d" % block_m)
    if block_n:
        parts.append("bn%d" % block_n)
    if deterministic:
        parts.append("det")
    return "-".join(parts) + ".fmha"


def cache_dir():
    return os.environ.get("FMHA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "fmha")


_which = {}  # PATH -> fmha-compile found on it, or None


def _compiler():
    env = os.environ.get("FMHA_COMPILE")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise FileNotFoundError("FMHA_COMPILE=%s is not an executable file" % env)
        return env
    # The PATH search, once per PATH value (it costs more than a launch).
    key = os.environ.get("PATH")
    if key not in _which:
        _which[key] = shutil.which("fmha-compile")
    path = _which[key]
    if not path:
        raise FileNotFoundError(
            "fmha-compile not found (set FMHA_COMPILE or put it on PATH)")
    return path


def compile_args(target, chip, dtype, hq, hk, d, dv=None, mask="0", scale=None,
                 softcap=None, block_m=None, block_n=None, kind="fwd", deterministic=False,
                 sinks=False, varlen=False, page_size=0):
    """The fmha-compile arguments (without -o) for a signature."""
    dv = d if dv is None else dv
    _check_kind(kind, deterministic)
    args = ["--target=%s" % target]
    if chip:
        args.append("--chip=%s" % chip)
    args += ["--dtype=%s" % dtype, "--hq=%d" % hq, "--hk=%d" % hk, "-d=%d" % d,
             "--dv=%d" % dv, "--mask=%s" % mask]
    if scale:
        args.append("--scale=%.9g" % scale)
    if softcap:
        args.append("--softcap=%.9g" % softcap)
    if sinks:
        args.append("--sinks")
    if varlen:
        args.append("--varlen")
    if page_size:
        args.append("--page-size=%d" % page_size)
    if block_m:
        args.append("--block-m=%d" % block_m)
    if block_n:
        args.append("--block-n=%d" % block_n)
    if kind == "bwd":
        args.append("--bwd")
    if deterministic:
        args.append("--deterministic")
    return args


def compile_bundle(path, compiler=None, **signature):
    """Runs fmha-compile for `signature` (bundle_name's arguments) and writes
    the bundle to `path` atomically. Raises RuntimeError with the compiler's
    message on failure."""
    compiler = compiler or _compiler()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".fmha-", suffix=".tmp", dir=folder)
    os.close(fd)
    cmd = [compiler] + compile_args(**signature) + ["-o", tmp]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s failed (exit %d): %s"
                               % (" ".join(cmd), r.returncode, (r.stderr or r.stdout).strip()))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


_compiler_ids = {}
_compiler_ids_lock = threading.Lock()


def compiler_id(path):
    """A short hash of the fmha-compile binary at `path` (its bytes): the
    cache folder of the bundles that build compiles (another build, other
    defaults or kernels, compiles its own)."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    with _compiler_ids_lock:
        found = _compiler_ids.get(key)
        if found is None:
            h = hashlib.sha1()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            found = _compiler_ids[key] = "fmha-compile-" + h.hexdigest()[:16]
        return found


def find_bundle(signature, bundle_dir=None, compile_missing=True):
    """The path of the bundle for `signature` (bundle_name's arguments): in
    `bundle_dir` if given; else in the cache (FMHA_CACHE, ~/.cache/fmha): in
    its folder of the fmha-compile found here (compiler_id), or, with none
    found, in the cache itself (bundles carried from a machine with LLVM).
    When it is missing and compile_missing, fmha-compile makes it there."""
    compiler, missing = None, None
    try:
        compiler = _compiler()
    except FileNotFoundError as e:
        missing = e
    folder = bundle_dir
    if not folder:
        folder = cache_dir()
        if compiler:
            folder = os.path.join(folder, compiler_id(compiler))
    path = os.path.join(folder, bundle_name(**signature))
    if os.path.exists(path):
        return path
    if not compile_missing:
        raise FileNotFoundError("no bundle %s" % path)
    if missing is not None:
        e = missing
        raise FileNotFoundError(
            "no bundle %s, and it cannot be compiled here: %s. Compile it "
            "where LLVM is: fmha-compile %s -o %s"
            % (path, e, " ".join(compile_args(**signature)), os.path.basename(path)))
    return compile_bundle(path, compiler=compiler, **signature)


def _chip_for(t):
    env = os.environ.get("FMHA_CHIP")
    if env:
        return env
    kind = getattr(t.device, "type", "cpu")
    if kind != "cuda":
        return ""
    index = getattr(t.device, "index", None)
    if index is None:
        index = _torch().cuda.current_device()
    chip = _chips.get(index)
    if chip is not None:
        return chip
    major, minor = _torch().cuda.get_device_capability(index)
    # Hopper's wgmma/TMA need the arch-specific target.
    chip = _chips[index] = "sm_%d%d%s" % (major, minor, "a" if (major, minor) == (9, 0) else "")
    return chip


_chips = {}  # CUDA device index -> chip

"""Puts libfmha_runtime.so inside the package (pyproject.toml has the rest).

The library: $FMHA_RUNTIME_LIB when it names a file, else built here with
CMake from the source tree this folder is in ($FMHA_SOURCE_DIR when this
folder was copied out of it; the runtime alone:
-DFMHA_ENABLE_MLIR=OFF, no LLVM needed). The wheel is then specific to the
platform.
"""

import os
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = "libfmha_runtime.so"


def _runtime_library(scratch):
    given = os.environ.get("FMHA_RUNTIME_LIB")
    if given:
        if not os.path.isfile(given):
            raise SystemExit("fmha setup: FMHA_RUNTIME_LIB=%s is not a file" % given)
        return given
    source = os.environ.get("FMHA_SOURCE_DIR") or os.path.dirname(HERE)
    if not os.path.isfile(os.path.join(source, "runtime", "CMakeLists.txt")):
        raise SystemExit("fmha setup: %s is not the FMHA source tree (no runtime/); set "
                         "FMHA_RUNTIME_LIB to a built %s" % (source, LIB))
    cmake = shutil.which("cmake")
    if not cmake:
        raise SystemExit("fmha setup: cmake not found; install it or set FMHA_RUNTIME_LIB "
                         "to a built %s" % LIB)
    build = os.path.join(scratch, "build")
    configure = [cmake, "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                 "-DFMHA_ENABLE_MLIR=OFF", "-DFMHA_ENABLE_TESTS=OFF"]
    for cmd in (configure, [cmake, "--build", build, "--target", "fmha_runtime", "-j",
                            str(os.cpu_count() or 2)]):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise SystemExit("fmha setup: %s failed:\n%s" % (" ".join(cmd), r.stdout[-4000:]))
    for root, _, files in os.walk(build):
        if LIB in files:
            return os.path.join(root, LIB)
    raise SystemExit("fmha setup: the build made no %s" % LIB)


class BuildPy(build_py):
    def run(self):
        super().run()
        with tempfile.TemporaryDirectory(prefix="fmha-runtime-") as scratch:
            lib = _runtime_library(scratch)
            target = os.path.join(self.build_lib, "fmha", LIB)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(lib, target)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution)

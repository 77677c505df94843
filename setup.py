"""coral's Python package, built from source for the interpreter running pip.

    pip install --no-index --no-build-isolation .

The pure Python files are python/coral/. The extension, coral._coral, is
built by CMake, configured for this interpreter (-DCORAL_PYTHON) in
build/python-<interpreter>/ with the tests and benchmarks left out, and only
its target (coral_python) and what it links are built. A second install for
the same interpreter rebuilds only what changed.

Settings (environment variables):
  CMAKE_BUILD_PARALLEL_LEVEL  compile jobs (default: the number of CPUs);
                              `setup.py build_ext -j N` sets it too
  CORAL_CMAKE_ARGS            more CMake arguments, e.g. "-DCORAL_WITH_MUJOCO=OFF"
ccache is used when it is on PATH (CMAKE_CXX_COMPILER_LAUNCHER), as
scripts/test.sh does.

The extension links what the build tree's does: Debian's libtorch (coral.train
runs the torch learners in-process, --backend torch), TBB, MuJoCo, OpenMPI and
BLAS, found at run time where Debian installs them, so the wheel runs on the
machine that built it (or one with the same Debian packages).
"""

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
MISSING_TOOLS = "scripts/deps.sh main installs what the build needs (Debian 12)"


def _version():
    with open(os.path.join(HERE, "python", "coral", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _interpreter():
    """The interpreter the extension is built for: a venv's base interpreter (same headers and ABI),
    so that every venv of one interpreter shares one build folder, and the folder outlives a venv."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _build_dir(interpreter):
    # build/<name>: the depth of build/release, so that ccache (base_dir) sees the same relative
    # source paths and a tree already built by the presets is mostly cache hits.
    digest = hashlib.sha1(interpreter.encode()).hexdigest()[:8]
    return os.path.join(HERE, "build", f"python-{sys.implementation.cache_tag}-{digest}")


def _check_wheel_maker():
    """--no-build-isolation builds with this environment's setuptools and wheel; without wheel (before
    setuptools 70.1, which has bdist_wheel itself) setuptools says only "invalid command 'bdist_wheel'"."""
    try:
        Distribution().get_command_class("bdist_wheel")
    except Exception:  # distutils' DistutilsModuleError, whose module differs between setuptools versions
        sys.exit(f"coral: {sys.executable} has setuptools but not wheel, which builds the package with "
                 "--no-build-isolation: make the venv with --system-site-packages (Debian's python3-wheel), "
                 "or install wheel into it")


class CMakeBuild(build_ext):
    """Builds coral._coral with CMake, then puts it where setuptools packages it."""

    def build_extension(self, ext):
        cmake = shutil.which("cmake")
        if cmake is None:
            sys.exit(f"coral: building the extension needs cmake on PATH; {MISSING_TOOLS}")
        interpreter = _interpreter()
        where = _build_dir(interpreter)
        args = [cmake, "-S", HERE, "-B", where,
                "-DCMAKE_BUILD_TYPE=Release",
                f"-DCORAL_PYTHON={interpreter}",
                "-DCORAL_WITH_PYTHON=ON", "-DCORAL_BUILD_TESTS=OFF", "-DCORAL_BUILD_BENCH=OFF"]
        extra = shlex.split(os.environ.get("CORAL_CMAKE_ARGS", ""))
        if shutil.which("ccache") and not any(a.startswith("-DCMAKE_CXX_COMPILER_LAUNCHER") for a in extra):
            args.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        args += extra
        self._run(args, f"configuring coral for {interpreter} in {where} failed (CMake's output is above); "
                        f"{MISSING_TOOLS}")

        build = [cmake, "--build", where, "--target", "coral_python"]
        if self.parallel:
            build += ["--parallel", str(self.parallel)]
        elif not os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL"):  # CMake reads it itself when set
            build += ["--parallel", str(os.cpu_count() or 1)]
        self._run(build, f"building coral's extension in {where} failed (the compiler's output is above)")

        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(where, "python", "coral", "_coral" + suffix)
        if not os.path.isfile(built):
            sys.exit(f"coral: the build made no {built}: CMake did not build the extension for {interpreter} "
                     f"(is CORAL_WITH_PYTHON on, with CORAL_WITH_TORCH and CORAL_BUILD_APPS?)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)

    @staticmethod
    def _run(command, failure):
        print(" ".join(shlex.quote(c) for c in command), flush=True)
        if subprocess.run(command, check=False).returncode != 0:
            sys.exit(f"coral: {failure}")


_check_wheel_maker()
setup(
    name="coral",
    version=_version(),
    description="coral's envs as a Gymnasium vector env, Python envs inside coral, and coral train in-process",
    python_requires=">=3.9",
    install_requires=["numpy"],
    packages=["coral"],
    package_dir={"coral": "python/coral"},
    ext_modules=[Extension("coral._coral", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)

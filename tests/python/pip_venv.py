"""pip installs coral into a fresh venv, offline, and the venv imports it
(ctest python_pip_venv and python_pip_source).

Usage: pip_venv.py <project folder> <scratch folder> [--bare]

<project folder> is the build tree's package (build/<preset>/python: it
packages the extension the build made) or coral's source tree (its setup.py
builds the extension with CMake for the venv's interpreter).

The venv is made with --system-site-packages, and that is the one thing it
takes from the system: numpy, coral's only dependency, and setuptools and
wheel, which build the wheel (--no-build-isolation). There is no package
index here. coral itself must come from the venv: the check below fails if
the import finds another copy (a `cmake --install` into the system's
dist-packages, or the build tree). The venv's coral also trains in-process,
with the torch learners its extension links.

--bare also makes a venv without the system's packages (no numpy, and on
Debian no wheel) and checks that pip refuses coral there, naming what is
missing, instead of failing deep inside a build.
"""

import os
import shutil
import subprocess
import sys
import venv

CHECK = """
import sys, tempfile, numpy, coral
assert coral.__file__.startswith(sys.prefix + "/"), (coral.__file__, sys.prefix)
env = coral.make_vec("cartpole", 4)
env.reset(seed=0)
env.step(numpy.zeros(4, dtype=numpy.int64))
env.close()
with tempfile.TemporaryDirectory() as run_dir:
    result = coral.train(env="cartpole", total_steps=2048, backend="torch", run_dir=run_dir, verbose=False)
assert result["env_steps"] >= 2048, result
print("ok", coral.__version__, coral.__file__)
"""

# What pip or coral's setup.py says in a bare venv: one of them names the missing piece.
BARE_REFUSALS = ("has setuptools but not wheel", "requirement numpy")


def _pip_install(python, project):
    # --no-cache-dir: pip caches a wheel built from a folder whose name looks like name-version
    # (coral-main, wt-x) and would install that stale wheel again.
    return [python, "-m", "pip", "install", "--no-cache-dir", "--no-index", "--no-build-isolation", project]


def _without_pythonpath():
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def check_system_site(project, where):
    venv.EnvBuilder(system_site_packages=True, with_pip=True, clear=True).create(where)
    python = os.path.join(where, "bin", "python")
    subprocess.run(_pip_install(python, project) + ["--quiet"], check=True, env=_without_pythonpath())
    # From / : neither the source tree nor the build tree is on the path.
    result = subprocess.run([python, "-c", CHECK], cwd="/", check=True, capture_output=True, text=True,
                            env=_without_pythonpath())
    return result.stdout


def check_bare(project, where):
    venv.EnvBuilder(system_site_packages=False, with_pip=True, clear=True).create(where)
    python = os.path.join(where, "bin", "python")
    result = subprocess.run(_pip_install(python, project), capture_output=True, text=True,
                            env=_without_pythonpath())
    said = result.stdout + result.stderr
    if result.returncode == 0 or not any(refusal in said for refusal in BARE_REFUSALS):
        sys.exit(f"a venv without numpy: pip exited {result.returncode}, naming neither wheel nor numpy:\n{said}")


def main(project, where, bare):
    shutil.rmtree(where, ignore_errors=True)
    try:
        if bare:
            check_bare(project, where + "-bare")
        print(check_system_site(project, where), end="")
    finally:
        shutil.rmtree(where, ignore_errors=True)
        shutil.rmtree(where + "-bare", ignore_errors=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--bare"):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], len(sys.argv) == 4))

"""pip installs coral into a fresh venv, offline, and the venv imports it (ctest python_pip_venv).

Usage: pip_venv.py <project folder: build/<preset>/python> <venv folder to create>

The venv is made with --system-site-packages, and that is the one thing it
takes from the system: numpy, coral's only dependency, and setuptools and
wheel, which build the wheel (--no-build-isolation). There is no package
index here, and a bare venv has no numpy, so it could not import coral at
all. coral itself must come from the venv: the check below fails if the
import finds another copy (a `cmake --install` into the system's
dist-packages, or the build tree).
"""

import os
import shutil
import subprocess
import sys
import venv

CHECK = """
import sys, numpy, coral
assert coral.__file__.startswith(sys.prefix + "/"), (coral.__file__, sys.prefix)
env = coral.make_vec("cartpole", 2)
env.reset(seed=0)
env.step(numpy.zeros(2, dtype=numpy.int64))
env.close()
print("ok", coral.__version__, coral.__file__)
"""


def main(project, where):
    shutil.rmtree(where, ignore_errors=True)
    venv.EnvBuilder(system_site_packages=True, with_pip=True, clear=True).create(where)
    python = os.path.join(where, "bin", "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation", project],
                   check=True)
    # From / : neither the source tree nor the build tree is on the path.
    result = subprocess.run([python, "-c", CHECK], cwd="/", check=True, capture_output=True, text=True,
                            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    print(result.stdout, end="")
    shutil.rmtree(where, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

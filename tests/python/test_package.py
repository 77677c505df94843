"""`import coral` without numpy: one ImportError that names numpy and the fix."""

import os
import subprocess
import sys

import coral


def test_import_without_numpy_names_numpy_and_the_fix():
    # sys.modules["numpy"] = None makes `import numpy` raise ImportError, as in a venv without it.
    code = "import sys; sys.modules['numpy'] = None; import coral"
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(coral.__file__)))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                            env={**os.environ, "PYTHONPATH": package_root})
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: coral needs numpy, which "), result.stderr
    assert "--system-site-packages" in last and "pip install numpy" in last
    # One frame: the package's own check, not a failure deep inside a module that uses numpy.
    assert result.stderr.count('File "') == 2, result.stderr

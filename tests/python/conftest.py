"""Test set-up for the pytest suite of python/: import the package from the build tree.

ctest passes CORAL_PYTHON_PATH (the build's python/ folder); run by hand with
`PYTHONPATH=build/release/python /usr/bin/python3 -m pytest tests/python`.
"""

import os
import sys

path = os.environ.get("CORAL_PYTHON_PATH")
if path and path not in sys.path:
    sys.path.insert(0, path)

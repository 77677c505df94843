"""Packages a built coral/ folder; see pyproject.toml.

The wheel is binary: it carries the extension the build made for one
interpreter. An interpreter that cannot load that extension is refused here,
naming the fix, rather than left with a package whose import fails.
"""

import glob
import importlib.machinery
import os
import sys

from setuptools import setup
from setuptools.dist import Distribution

_here = os.path.dirname(os.path.abspath(__file__))
_built = [os.path.basename(p) for p in glob.glob(os.path.join(_here, "coral", "_coral*.so"))]
if not any(name.endswith(suffix) for name in _built for suffix in importlib.machinery.EXTENSION_SUFFIXES):
    sys.exit(f"coral: this build's extension ({', '.join(_built) or 'none: build the coral_python target first'}) "
             f"is not loadable by {sys.executable} (Python {sys.version.split()[0]}); configure the build with "
             f"-DCORAL_PYTHON={sys.executable}, or run `pip install .` in coral's source tree with it")


class _BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=_BinaryDistribution)

"""What tests that run code in a fresh interpreter share."""

from __future__ import annotations

#: the first lines of a fresh interpreter's code that must run as without numba installed:
#: importing numba or llvmlite raises ImportError
WITHOUT_NUMBA = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('numba', 'llvmlite'):\n"
    "            raise ImportError(f'{name} is blocked')\n"
    "sys.meta_path.insert(0, Block())\n"
)

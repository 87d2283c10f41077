#!/usr/bin/env python3
"""Generates ONNX's backend node tests (model.onnx + test_data_set_0/*.pb per case) into a folder,
with Debian's python3-onnx (1.12).

Usage: gen_node_tests.py OUT_DIR

Debian 12's onnx generators still use numpy's removed aliases (np.float, np.int, np.bool,
np.object); they are restored here before the generator runs. Exits 3 (a skip for CTest) when
the onnx module is missing.
"""
import sys
import warnings

try:
    import numpy as np
    import onnx  # noqa: F401
except ImportError as e:
    print(f"gen_node_tests: {e}: install python3-onnx (scripts/install-deps.sh)", file=sys.stderr)
    sys.exit(3)

for alias, builtin in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, builtin)
warnings.simplefilter("ignore")

from onnx.backend.test import cmd_tools  # noqa: E402

if len(sys.argv) != 2:
    print(__doc__, file=sys.stderr)
    sys.exit(2)
sys.argv = [sys.argv[0], "generate-data", "-o", sys.argv[1]]
cmd_tools.main()

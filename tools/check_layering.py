#!/usr/bin/env python3
"""Checks that includes point down the stage order only.

    ir <- sched <- codegen <- runtime <- vk, cpu <- engine <- tensor <- onnx, gguf <- llm

Every #include in src/<stage>/** and include/vkgrad/** is resolved to the stage it names:
  - a quoted include that exists relative to the including file belongs to that file's stage;
  - "x/..." or <x/...> whose first component is a stage name belongs to stage x;
  - "vkgrad/..." and <vkgrad/...> are public headers and always allowed.
Public headers (include/vkgrad/) may include only other public headers. Platform headers are
confined to their runtime: Vulkan, volk, glslang and SPIRV-Tools to src/vk, dlfcn.h to src/cpu.

Usage: check_layering.py [--self-test] [ROOT]
  ROOT         repository root to check (default: the parent of this script's folder;
               with --self-test and no ROOT, only the self-test runs)
  --self-test  first check a generated tree with planted violations and fail unless exactly
               those are reported, so the check can never pass silently
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

# stage -> stages it may include (besides itself)
ALLOWED: dict[str, set[str]] = {
    "ir": set(),
    "sched": {"ir"},
    "codegen": {"sched", "ir"},
    "runtime": {"codegen", "sched", "ir"},
    "vk": {"runtime", "codegen", "sched", "ir"},
    "cpu": {"runtime", "codegen", "sched", "ir"},
    "engine": {"vk", "cpu", "runtime", "codegen", "sched", "ir"},
    "tensor": {"engine", "vk", "cpu", "runtime", "codegen", "sched", "ir"},
    "onnx": {"tensor", "engine", "vk", "cpu", "runtime", "codegen", "sched", "ir"},
    "gguf": {"tensor", "engine", "vk", "cpu", "runtime", "codegen", "sched", "ir"},
    "llm": {"gguf", "tensor", "engine", "vk", "cpu", "runtime", "codegen", "sched", "ir"},
}
STAGES = set(ALLOWED)
PUBLIC = "public"  # the stage name reported for include/vkgrad/

# platform header prefix -> the only stages that may include it
PLATFORM: list[tuple[str, set[str]]] = [
    ("vulkan/", {"vk"}),
    ("volk.h", {"vk"}),
    ("glslang/", {"vk"}),
    ("spirv-tools/", {"vk"}),
    ("dlfcn.h", {"cpu"}),
    ("google/protobuf/", {"onnx"}),
    ("unicode/", {"llm"}),
]

SOURCE_SUFFIXES = {".hpp", ".cpp", ".h", ".c", ".def", ".inc", ".ipp"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def stage_of_path(root: Path, path: Path) -> str | None:
    """The stage a file in the tree belongs to, or None if it is in neither src/ nor include/vkgrad/."""
    rel = path.relative_to(root).parts
    if len(rel) >= 3 and rel[0] == "src":
        return rel[1]
    if len(rel) >= 3 and rel[0] == "include" and rel[1] == "vkgrad":
        return PUBLIC
    return None


def target_of_include(root: Path, including: Path, kind: str, name: str) -> str | None:
    """The stage an include refers to: a stage name, PUBLIC, or None (not part of vkgrad)."""
    if kind == '"':
        local = (including.parent / name).resolve()
        if local.is_file():
            try:
                return stage_of_path(root.resolve(), local)
            except ValueError:  # resolved outside the tree
                return None
    first = name.split("/", 1)[0]
    if "/" in name and first == "vkgrad":
        return PUBLIC
    if "/" in name and first in STAGES:
        return first
    return None


def platform_violation(stage: str, name: str) -> bool:
    for prefix, owners in PLATFORM:
        if name == prefix or (prefix.endswith("/") and name.startswith(prefix)):
            return stage not in owners
    return False


def files_to_check(root: Path) -> list[Path]:
    found: list[Path] = []
    for top in (root / "src", root / "include" / "vkgrad"):
        if top.is_dir():
            found += [p for p in top.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES]
    return sorted(found)


def check(root: Path) -> list[str]:
    violations: list[str] = []
    for path in files_to_check(root):
        stage = stage_of_path(root, path)
        shown = path.relative_to(root).as_posix()
        if stage is None:
            violations.append(f"{shown}:1: not inside a stage folder (src/<stage>/)")
            continue
        if stage != PUBLIC and stage not in STAGES:
            violations.append(f"{shown}:1: unknown stage '{stage}' (add it to ALLOWED in "
                              f"tools/check_layering.py)")
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), start=1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            kind, name = m.group(1), m.group(2).strip()
            if platform_violation(stage, name):
                violations.append(f"{shown}:{lineno}: stage {stage} may not include {name}")
                continue
            target = target_of_include(root, path, kind, name)
            if target is None or target == stage or target == PUBLIC:
                continue
            if stage == PUBLIC or target not in ALLOWED[stage]:
                violations.append(f"{shown}:{lineno}: stage {stage} may not include {target} "
                                  f"({name})")
    return violations


def self_test() -> bool:
    files = {
        # allowed
        "src/ir/uop.hpp": '#include <vector>\n#include "ir/dtype.hpp"\n',
        "src/ir/dtype.hpp": '#include <vkgrad/dtype.hpp>\n',
        "src/ir/symbolic/rules_add.cpp": '#include "../uop.hpp"\n#include "ir/uop.hpp"\n',
        "src/sched/schedule.cpp": '#include "ir/uop.hpp"\n#include "schedule.hpp"\n',
        "src/sched/schedule.hpp": '#include "vkgrad/dtype.hpp"\n',
        "src/runtime/device.hpp": '#include "codegen/program.hpp"\n',
        "src/vk/context.cpp": '#include <volk.h>\n#include "runtime/device.hpp"\n#include "ir/uop.hpp"\n',
        "src/cpu/compile.cpp": '#include <dlfcn.h>\n#include "runtime/device.hpp"\n',
        "src/engine/backends.cpp": '#include "vk/context.hpp"\n#include "cpu/compile.hpp"\n',
        "src/engine/realize.cpp": '#include "runtime/device.hpp"\n',
        "src/tensor/tensor.cpp": '#include "engine/realize.hpp"\n#include "ir/uop.hpp"\n',
        "include/vkgrad/vkgrad.hpp": '#include "dtype.hpp"\n#include <vkgrad/tensor.hpp>\n',
        "include/vkgrad/dtype.hpp": "#pragma once\n",
        # violations
        "src/ir/bad_up.cpp": '#include <string>\n#include "sched/schedule.hpp"\n',
        "src/vk/bad_sibling.cpp": '#include "cpu/compile.hpp"\n',
        "src/cpu/bad_sibling.cpp": '#  include "vk/context.hpp"\n',
        "src/codegen/bad_vulkan.cpp": "#include <vulkan/vulkan.h>\n",
        "src/codegen/bad_up.cpp": '#include "runtime/device.hpp"\n',
        "src/runtime/bad_backend.cpp": '#include "vk/context.hpp"\n',
        "src/engine/bad_dlfcn.cpp": "#include <dlfcn.h>\n",
        "src/ir/bad_relative.cpp": '#include "../sched/schedule.hpp"\n',
        "include/vkgrad/bad_public.hpp": '#pragma once\n#include "ir/uop.hpp"\n',
        "src/util/stray.cpp": "int x;\n",
        "src/bad_loose.cpp": "int y;\n",
    }
    expected = {
        "src/ir/bad_up.cpp:2: stage ir may not include sched (sched/schedule.hpp)",
        "src/vk/bad_sibling.cpp:1: stage vk may not include cpu (cpu/compile.hpp)",
        "src/cpu/bad_sibling.cpp:1: stage cpu may not include vk (vk/context.hpp)",
        "src/codegen/bad_vulkan.cpp:1: stage codegen may not include vulkan/vulkan.h",
        "src/codegen/bad_up.cpp:1: stage codegen may not include runtime (runtime/device.hpp)",
        "src/runtime/bad_backend.cpp:1: stage runtime may not include vk (vk/context.hpp)",
        "src/engine/bad_dlfcn.cpp:1: stage engine may not include dlfcn.h",
        "src/ir/bad_relative.cpp:1: stage ir may not include sched (../sched/schedule.hpp)",
        "include/vkgrad/bad_public.hpp:2: stage public may not include ir (ir/uop.hpp)",
        "src/util/stray.cpp:1: unknown stage 'util' (add it to ALLOWED in tools/check_layering.py)",
        "src/bad_loose.cpp:1: not inside a stage folder (src/<stage>/)",
    }
    with tempfile.TemporaryDirectory(prefix="check_layering_") as tmp:
        root = Path(tmp).resolve()
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        got = set(check(root))
        # the same tree without the planted violations must be clean
        for rel in files:
            if "bad_" in rel or "/util/" in rel:
                (root / rel).unlink()
        clean = check(root)
    ok = got == expected and not clean
    if not ok:
        for v in sorted(expected - got):
            print(f"self-test: expected but not reported: {v}")
        for v in sorted(got - expected):
            print(f"self-test: reported but not expected: {v}")
        for v in clean:
            print(f"self-test: reported on the clean tree: {v}")
    print(f"check_layering self-test: {'ok' if ok else 'FAILED'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("root", nargs="?", type=Path)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()

    if args.self_test:
        if not self_test():
            return 1
        if args.root is None:
            return 0
    root = (args.root or Path(__file__).resolve().parent.parent).resolve()
    if not (root / "src").is_dir() and not (root / "include").is_dir():
        print(f"check_layering: {root} has no src/ or include/", file=sys.stderr)
        return 1
    violations = check(root)
    for v in violations:
        print(v)
    count = len(files_to_check(root))
    print(f"check_layering: {count} files, {len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())

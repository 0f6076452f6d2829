"""The structure figures issue #54 asks for, measured from the tree (python hack/structure_figures.py).

Lines of Python outside tests and generated code, the largest classes, the count of `Any`
(and of `dict[str, Any]`), functions over 80 lines, imports placed inside functions, and the
lengths of README.md and bench/README.md.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "kemu",
    "apiserver",
    "scheduler",
    "kubelet",
    "controllermanager",
    "cloud",
    "autoscaler",
    "bench",
)
GENERATED = ("kemu/api/",)


def sources() -> list[Path]:
    files: list[Path] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(GENERATED) or "__pycache__" in rel:
                continue
            files.append(path)
    return files


def count_any(text: str) -> tuple[int, int]:
    names = 0
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and tok.string == "Any":
            names += 1
    imports = len(re.findall(r"^\s*from typing import[^\n]*\bAny\b", text, re.M))
    imports += len(re.findall(r"^\s+Any,\s*$", text, re.M))
    return names - imports, len(re.findall(r"dict\[str, Any\]", text))


def main() -> int:
    lines = 0
    anys = 0
    dict_anys = 0
    classes: list[tuple[int, str]] = []
    long_functions: list[tuple[int, str]] = []
    local_imports: list[str] = []
    for path in sources():
        text = path.read_text()
        rel = path.relative_to(ROOT).as_posix()
        lines += text.count("\n")
        a, d = count_any(text)
        anys += a
        dict_anys += d
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                classes.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.name}"))
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.end_lineno is not None
            ):
                length = node.end_lineno - node.lineno + 1
                if length > 80:
                    long_functions.append((length, f"{rel}:{node.name}"))
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        local_imports.append(f"{rel}:{inner.lineno}")
    classes.sort(reverse=True)
    long_functions.sort(reverse=True)
    print(f"lines outside tests and generated code: {lines}")
    print(f"Any: {anys} (dict[str, Any]: {dict_anys})")
    print(f"functions over 80 lines: {len(long_functions)}")
    for length, name in long_functions[:10]:
        print(f"  {length:5d} {name}")
    print(f"imports inside functions: {len(local_imports)}")
    if "-v" in sys.argv:
        for where in local_imports:
            print(f"  {where}")
    print("largest classes:")
    for length, name in classes[:10]:
        print(f"  {length:5d} {name}")
    for doc in ("README.md", "bench/README.md", "ARCHITECTURE.md"):
        text = (ROOT / doc).read_text()
        print(f"{doc}: {text.count(chr(10))} lines, {len(text.split())} words")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

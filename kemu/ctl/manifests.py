"""Reading manifests (`-f FILE|-`): YAML or JSON, `---` separated documents, `kind: List`.

Everything is read and checked before anything is sent: a syntax error, an unknown kind or an
unknown field is one CtlError naming the file, the document and the problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import yaml
from google.protobuf.message import Message

from kemu.ctl.common import CtlError
from kemu.machinery import kinds, podgroups
from kemu.machinery.errors import ApiError
from kemu.machinery.keys import object_meta

STDIN = "-"


@dataclass(frozen=True)
class Manifest:
    source: str  # the file name as given ("STDIN" for -)
    index: int  # the document's position in the file, from 1
    kind: kinds.Kind
    obj: Message
    data: dict[str, object]  # the document as written (after List expansion)

    @property
    def name(self) -> str:
        return object_meta(self.obj).name


def _documents(text: str, source: str) -> list[object]:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except ValueError:
            pass  # may still be YAML flow style
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        raise CtlError(f"error parsing {source}: {yaml_problem(e)}") from None


def where(source: str, index: int) -> str:
    return f'error validating "{source}": document {index}'


def yaml_problem(e: yaml.YAMLError) -> str:
    """A YAML error in one line: where, what, and in which construct."""
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:
        mark = e.problem_mark
        text = f"yaml: line {mark.line + 1}, column {mark.column + 1}: {e.problem}"
        if e.context:
            text += f" ({e.context})"
        return text
    return "yaml: " + " ".join(str(e).split())


def _expand(doc: object, source: str, index: int) -> list[dict[str, object]]:
    if not isinstance(doc, dict):
        raise CtlError(f"{where(source, index)}: expected an object, got {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise CtlError(f"{where(source, index)}: items must be a list")
        out: list[dict[str, object]] = []
        for item in items:
            out.extend(_expand(item, source, index))
        return out
    return [doc]


def parse(text: str, source: str) -> list[Manifest]:
    """The objects in one file's text, in order."""
    out: list[Manifest] = []
    for index, doc in enumerate(_documents(text, source), start=1):
        for data in _expand(doc, source, index):
            at = where(source, index)
            kind_name = data.get("kind")
            if not kind_name:
                raise CtlError(f"{at}: Object 'Kind' is missing")
            kind = kinds.BY_KIND.get(str(kind_name))
            if kind is None:
                raise CtlError(
                    f'{at}: no matches for kind "{kind_name}" in version '
                    f'"{data.get("apiVersion", "")}"'
                )
            try:
                obj = podgroups.from_manifest(kind, data)
            except ApiError as e:
                raise CtlError(f"{at} ({kind.kind}): {e.message}") from None
            if not object_meta(obj).name and not object_meta(obj).generate_name:
                raise CtlError(f"{at} ({kind.kind}): metadata.name: Required value")
            out.append(Manifest(source, index, kind, obj, data))
    return out


def read(paths: list[str], stdin: TextIO) -> list[Manifest]:
    """Every object of every file (a directory: its .yaml, .yml and .json files, sorted)."""
    out: list[Manifest] = []
    for given in paths:
        if given == STDIN:
            out.extend(parse(stdin.read(), "STDIN"))
            continue
        path = Path(given)
        files = (
            sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
            if path.is_dir()
            else [path]
        )
        for f in files:
            try:
                text = f.read_text()
            except OSError as e:
                raise CtlError(f'the path "{f}" cannot be read: {e.strerror or e}') from None
            out.extend(parse(text, str(f)))
    if not out:
        raise CtlError("no objects passed to the command")
    return out

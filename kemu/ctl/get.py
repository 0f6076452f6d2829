"""`kemuctl get KIND [NAME...] [-o json|yaml|wide|name|jsonpath=...] [-w] [-l ...] [-A]`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.interface import BOOKMARK
from kemu.ctl import jsonpath, printers
from kemu.ctl.common import Context, CtlError, format_api_error, namespace_for, plain, split_targets
from kemu.machinery import convert, kinds
from kemu.machinery.errors import ApiError
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.keys import object_meta

OUTPUTS = ("json", "yaml", "wide", "name")


def check_output(output: str | None) -> None:
    if output is None or output in OUTPUTS or output.startswith("jsonpath="):
        return
    raise CtlError(
        f'unable to match a printer suitable for the output format "{output}", allowed formats '
        "are: json, jsonpath, name, wide, yaml"
    )


class Printer:
    """Prints objects in the chosen output, a piece at a time (a watch adds objects)."""

    def __init__(
        self,
        ctx: Context,
        kind: kinds.Kind,
        output: str | None,
        all_ns: bool,
        *,
        with_kind: bool = False,
        show_managed_fields: bool = False,
    ) -> None:
        """`show_managed_fields`: kubectl's --show-managed-fields (its printers omit
        metadata.managedFields otherwise)."""
        self.ctx = ctx
        self.show_managed_fields = show_managed_fields
        self.kind = kind
        self.output = output
        self.with_kind = with_kind
        self.with_namespace = all_ns and kind.namespaced
        self.table = printers.Table()
        self._header_printed = False
        self._yaml_docs = 0

    def _rows(self, objs: Sequence[Message]) -> list[list[str]]:
        now = self.ctx.clock.now()
        wide = self.output == "wide"
        return [
            printers.row(
                self.kind,
                o,
                now,
                wide=wide,
                with_namespace=self.with_namespace,
                with_kind=self.with_kind,
            )
            for o in objs
        ]

    def table_lines(self, objs: Sequence[Message]) -> list[str]:
        rows = self._rows(objs)
        if not self._header_printed:
            header = printers.headers(
                self.kind, wide=self.output == "wide", with_namespace=self.with_namespace
            )
            rows.insert(0, header)
            self._header_printed = True
        return self.table.render(rows)

    def _doc(self, obj: Message) -> JSONObject:
        data = convert.to_dict(obj, wire=True)
        meta = data.get("metadata")
        if not self.show_managed_fields and isinstance(meta, dict):
            meta.pop("managedFields", None)
        return data

    def print_each(self, objs: Sequence[Message]) -> None:
        """Objects one by one (a watch): rows, names, or one document per object."""
        out = self.output
        if out is None or out == "wide":
            for line in self.table_lines(objs):
                self.ctx.print(line)
        elif out == "name":
            for o in objs:
                self.ctx.print(printers.name_of(o))
        elif out == "json":
            for o in objs:
                self.ctx.print(printers.dump_json(self._doc(o)))
        elif out == "yaml":
            for o in objs:
                if self._yaml_docs:
                    self.ctx.print("---")
                self._yaml_docs += 1
                self.ctx.print(printers.dump_yaml(self._doc(o)))
        else:
            for o in objs:
                self.ctx.print(_jsonpath(out, self._doc(o)))

    def print_result(self, objs: Sequence[Message], *, single: bool) -> None:
        """The answer of a get: one object as itself when `single`, otherwise a List."""
        out = self.output
        if out is None or out == "wide" or out == "name":
            self.print_each(objs)
            return
        data = (
            self._doc(objs[0])
            if single
            else {"apiVersion": "v1", "kind": "List", "items": [self._doc(o) for o in objs]}
        )
        if out == "json":
            self.ctx.print(printers.dump_json(data))
        elif out == "yaml":
            self.ctx.print(printers.dump_yaml(data))
        else:
            self.ctx.print(_jsonpath(out, data))


def _jsonpath(output: str, data: object) -> str:
    expr = output.removeprefix("jsonpath=")
    try:
        path = jsonpath.parse(expr)
    except jsonpath.JsonPathError as e:
        raise CtlError(f"error parsing jsonpath {expr}: {e}") from None
    value = path.find(data)
    if value is jsonpath.MISSING:
        raise CtlError(f"error executing jsonpath {expr!r}: the path is not found")
    return plain(value)


def _event_time(obj: Message) -> float:
    assert isinstance(obj, types_pb2.Event)
    return printers.seconds_of(printers.event_last_seen(obj))


def _no_resources(ctx: Context, kind: kinds.Kind, namespace: str) -> None:
    if kind.namespaced and namespace:
        ctx.warn(f"No resources found in {namespace} namespace.")
    else:
        ctx.warn("No resources found")


async def cmd_get(ctx: Context, args: argparse.Namespace) -> int:
    check_output(args.output)
    targets = split_targets(args.targets, require_name=False)
    if args.all_namespaces and any(name is not None for _, name in targets):
        raise CtlError("a resource cannot be retrieved by name across all namespaces")
    if args.watch:
        return await _watch(ctx, args, targets)
    groups: dict[str, tuple[kinds.Kind, list[str]]] = {}
    listed: list[kinds.Kind] = []
    for kind, name in targets:
        if name is None:
            listed.append(kind)
        else:
            groups.setdefault(kind.kind, (kind, []))[1].append(name)
    errors: list[str] = []
    first = True
    several = len({kind.kind for kind, _ in targets}) > 1
    for kind in listed:
        ns = "" if args.all_namespaces else namespace_for(ctx, kind)
        result = await ctx.client.list_all(
            kind.message,
            ns,
            label_selector=args.selector or "",
            field_selector=args.field_selector or "",
        )
        items = result.items
        if kind.kind == "Event":
            items = sorted(items, key=_event_time)
        if not items and args.output in (None, "wide", "name"):
            _no_resources(ctx, kind, ns)
            continue
        if not first and args.output in (None, "wide"):
            ctx.print()
        first = False
        Printer(
            ctx,
            kind,
            args.output,
            args.all_namespaces,
            with_kind=several,
            show_managed_fields=args.show_managed_fields,
        ).print_result(items, single=False)
    named = [(kind, names) for kind, names in groups.values()]
    total_named = sum(len(names) for _, names in named)
    for kind, names in named:
        found: list[Message] = []
        for name in names:
            try:
                found.append(await ctx.client.get(kind.message, name, namespace_for(ctx, kind)))
            except ApiError as e:
                errors.append(format_api_error(e))
        if not found:
            continue
        if not first and args.output in (None, "wide"):
            ctx.print()
        first = False
        single = total_named == 1 and not listed
        Printer(
            ctx,
            kind,
            args.output,
            False,
            with_kind=several,
            show_managed_fields=args.show_managed_fields,
        ).print_result(found, single=single)
    for message in errors:
        ctx.warn(f"error: {message}")
    return 1 if errors else 0


async def _watch(
    ctx: Context, args: argparse.Namespace, targets: list[tuple[kinds.Kind, str | None]]
) -> int:
    kinds_given = {k.kind for k, _ in targets}
    if len(kinds_given) != 1:
        raise CtlError("watch is only supported on individual resources and resource collections")
    kind = targets[0][0]
    names = {name for _, name in targets if name is not None}
    ns = "" if args.all_namespaces else namespace_for(ctx, kind)
    selector = args.selector or ""
    fields = args.field_selector or ""
    result = await ctx.client.list_all(
        kind.message, ns, label_selector=selector, field_selector=fields
    )
    items = [o for o in result.items if not names or object_meta(o).name in names]
    printer = Printer(
        ctx, kind, args.output, args.all_namespaces, show_managed_fields=args.show_managed_fields
    )
    if items:
        printer.print_each(items)
    rv = result.resource_version
    # A stream the server ends (a restart, a timeout) is resumed from the last revision seen;
    # Gone or an unreachable server ends the command with the error.
    while True:
        async with ctx.client.watch(
            kind.message, ns, resource_version=rv, label_selector=selector, field_selector=fields
        ) as events:
            async for event in events:
                rv = object_meta(event.object).resource_version or rv
                if event.type == BOOKMARK:
                    continue
                if names and object_meta(event.object).name not in names:
                    continue
                printer.print_each([event.object])

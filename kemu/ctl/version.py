"""`kemuctl version`: the client's version, the server's, every registered component's, and
the modeled feature gates each one runs with."""

from __future__ import annotations

import argparse

from kemu.api.v1 import api_pb2
from kemu.component.version import BINARY_VERSION
from kemu.ctl.common import Context, CtlError
from kemu.ctl.printers import dump_json, dump_yaml
from kemu.machinery.jsonvalue import JSONObject


def component_dict(c: api_pb2.ComponentVersion) -> JSONObject:
    return {
        "component": c.component,
        "identity": c.identity,
        "binaryVersion": c.binary_version,
        "emulatedVersion": c.emulated_version,
        "featureGates": [
            {"name": g.name, "enabled": g.enabled, "stage": g.stage, "locked": g.locked}
            for g in c.feature_gates
        ],
    }


def _version_text(c: api_pb2.ComponentVersion) -> str:
    binary = c.binary_version or "unknown"
    if c.emulated_version:
        return f"{binary} (emulated version {c.emulated_version})"
    return binary


def _gates(c: api_pb2.ComponentVersion) -> str:
    if not c.feature_gates:
        return "<none>"
    return ", ".join(
        f"{g.name}={'true' if g.enabled else 'false'}"
        for g in sorted(c.feature_gates, key=lambda g: g.name)
    )


def version_lines(info: api_pb2.VersionInfo) -> list[str]:
    lines = [f"Server Version: {_version_text(info.server)}"]
    lines.append(f"  Feature Gates: {_gates(info.server)}")
    if info.components:
        lines.append("Components:")
        ordered = sorted(info.components, key=lambda c: (c.component, c.identity))
        for c in ordered:
            who = f"{c.component} ({c.identity})" if c.identity else c.component
            lines.append(f"  {who}: {_version_text(c)}")
            lines.append(f"    Feature Gates: {_gates(c)}")
    return lines


async def cmd_version(ctx: Context, args: argparse.Namespace) -> int:
    if args.output not in (None, "json", "yaml"):
        raise CtlError(f"--output must be 'yaml' or 'json', got {args.output!r}")
    data: JSONObject = {"clientVersion": {"gitVersion": BINARY_VERSION}}
    if args.output is None:
        # Printed first, so that an unreachable server still leaves the client's version.
        ctx.print(f"Client Version: {BINARY_VERSION}")
    if not args.client:
        info = await ctx.client.version()
        data["serverVersion"] = component_dict(info.server)
        data["components"] = [component_dict(c) for c in info.components]
        if args.output is None:
            for line in version_lines(info):
                ctx.print(line)
    if args.output == "json":
        ctx.print(dump_json(data))
    elif args.output == "yaml":
        ctx.print(dump_yaml(data))
    return 0

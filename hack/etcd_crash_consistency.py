"""Does SIGKILL under writes leave an etcd member's revisions behind its peers'? (etcd 3.5.0-3.5.2:
etcd-io/etcd#13766; kemu/testing/etcd.py CRASH_CONSISTENT is the harness's answer.)

    .venv/bin/python hack/etcd_crash_consistency.py DIR [ETCD FLAGS...]

Three members, 8 writers; every 1.5 s one member (even rounds) or all three (odd rounds) are
SIGKILLed and restarted a second later, 20 rounds; then every member's revision and raft index.
Members at one raft index with different revisions have diverged for good. Measured 2026-11-26:
with etcd's default commits 2 runs of 3 diverged; with CRASH_CONSISTENT's flags
(--backend-batch-interval 24h --backend-batch-limit 1000000000) 0 of 3.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from apiserver.storage.etcd import EtcdStore
from kemu.testing.cluster import Cluster


async def main(root: Path, flags: list[str]) -> None:
    with Cluster(root) as c:
        c.start_etcd(members=3, extra_args=flags)
        members = c.etcd_members
        store = EtcdStore([m.url for m in members], timeout=3.0)
        stop = anyio.Event()
        writes = 0

        async def writer(k: int) -> None:
            nonlocal writes
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    await store.create(f"/registry/x/w{k}-{i}", b"v" * 200)
                    writes += 1
                except Exception:
                    await anyio.sleep(0.05)

        async with anyio.create_task_group() as tg:
            for k in range(8):
                tg.start_soon(writer, k)
            for round_ in range(20):
                await anyio.sleep(1.5)
                victims = members if round_ % 2 else [members[round_ % 3]]
                for v in victims:
                    c.kill(v.name)
                await anyio.sleep(1)
                for v in victims:
                    c.restart(v.name, wait=False)
                for v in victims:
                    await anyio.to_thread.run_sync(c.wait_ready, v.name)
                print(round_, [m.status()["revision"] for m in members], flush=True)
            await anyio.sleep(2)
            stop.set()
        await anyio.sleep(3)
        await store.close()
        print("writes", writes)
        for m in members:
            print(m.name, m.status())


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), sys.argv[2:])

"""Reading a whole list in pages, as client-go's tools/pager (staging/src/k8s.io/client-go/
tools/pager/pager.go) does: any ApiClient (the real one and the fake) lists through it."""

from __future__ import annotations

import logging

from kemu.client.interface import LIST_PAGE_SIZE, ApiClient, ListResult, M
from kemu.machinery.errors import Gone

logger = logging.getLogger(__name__)


async def list_pages(
    client: ApiClient,
    kind: type[M],
    namespace: str = "",
    *,
    label_selector: str = "",
    field_selector: str = "",
    resource_version: str = "",
    resource_version_match: str = "",
    page_size: int = LIST_PAGE_SIZE,
) -> ListResult[M]:
    """Reads every page of a list; if a continue token expires (Gone), reads it all at once,
    as client-go's pager does."""
    items: list[M] = []
    token = ""
    while True:
        try:
            page: ListResult[M] = await client.list(
                kind,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resource_version="" if token else resource_version,
                resource_version_match="" if token else resource_version_match,
                limit=page_size,
                continue_=token,
            )
        except Gone:
            if not token:
                raise
            logger.info("list of %s: continue token expired, listing without paging", kind)
            full: ListResult[M] = await client.list(
                kind,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resource_version=resource_version,
                resource_version_match=resource_version_match,
            )
            return full
        items.extend(page.items)
        if not page.continue_:
            return ListResult(items, page.resource_version, "")
        token = page.continue_

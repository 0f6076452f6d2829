"""Column alignment as Go's text/tabwriter does it, which is what kubectl's output looks like.

Cells are separated by tabs; the last cell of a line is not part of any column. A column is
aligned over each block of consecutive lines that have a cell in it, so a nested section of a
`describe` output aligns on its own.
"""

from __future__ import annotations


def align(lines: list[list[str]], *, minwidth: int = 0, padding: int = 2) -> list[str]:
    """The lines with every tab-terminated cell padded to its column block's width."""
    out: list[str] = []
    widths: list[int] = []

    def write(line0: int, line1: int) -> None:
        for cells in lines[line0:line1]:
            text = "".join(
                cell.ljust(widths[j]) if j < len(widths) and j < len(cells) - 1 else cell
                for j, cell in enumerate(cells)
            )
            out.append(text.rstrip() if len(cells) > 1 and not cells[-1] else text)

    def format_block(line0: int, line1: int) -> None:
        column = len(widths)
        this = line0
        while this < line1:
            if column >= len(lines[this]) - 1:
                this += 1
                continue
            write(line0, this)
            line0 = this
            width = minwidth
            while this < line1 and column < len(lines[this]) - 1:
                width = max(width, len(lines[this][column]) + padding)
                this += 1
            widths.append(width)
            format_block(line0, this)
            widths.pop()
            line0 = this
        write(line0, line1)

    format_block(0, len(lines))
    return out


def table(rows: list[list[str]], *, minwidth: int = 6, padding: int = 3) -> list[str]:
    """kubectl get's table: every column but the last padded (kubectl's tabwriter settings)."""
    return align(rows, minwidth=minwidth, padding=padding)

"""A table of the report, rendered as markdown here and as HTML by the report's template."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    anchor: str = ""  # the HTML table's id, where a page links or a test looks for it

    def markdown(self) -> str:
        lines = [f"| {' | '.join(self.header)} |", f"|{' --- |' * len(self.header)}"]
        lines += [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in self.rows]
        return "\n".join(lines)


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"

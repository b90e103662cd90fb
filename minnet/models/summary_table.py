"""The table ``model.summary()`` shows: plain text in a terminal, an HTML table in Jupyter.

``show_table`` prints the Keras-style text table line by line through ``print_fn``; when
``print_fn`` is the built-in ``print`` and the code runs in a Jupyter kernel, it displays
the same table as HTML instead (the object has both representations, so a notebook saved
as text still reads well).
"""
import html
import sys

__all__ = ["SummaryTable", "show_table", "in_notebook"]


def in_notebook():
    """True inside a Jupyter kernel (an IPython kernel shell, not the terminal IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class SummaryTable:
    """A title, a header row, rows of cells and footer lines.

    Args:
        title: the first line (``Model: "sequential"``).
        headers: the column names.
        rows: tuples of strings, one per layer.
        footer: lines under the table (totals).
        left: how many leading columns are left-aligned (the others are right-aligned),
            plus the indices in ``left_also``.
        min_widths: the least width of the first columns.
    """

    def __init__(self, title, headers, rows, footer=(), left=2, left_also=(), min_widths=(28, 18)):
        self.title = title
        self.headers = tuple(headers)
        self.rows = [tuple(row) for row in rows]
        self.footer = list(footer)
        self.left = left
        self.left_also = tuple(left_also)
        self.min_widths = tuple(min_widths)

    def _left(self, i):
        return i < self.left or i in self.left_also

    def text_lines(self):
        widths = [max([len(h)] + [len(r[i]) for r in self.rows]) for i, h in enumerate(self.headers)]
        for i, w in enumerate(self.min_widths[:len(widths)]):
            widths[i] = max(widths[i], w)

        def line(cells):
            return "  ".join(c.ljust(w) if self._left(i) else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths)))

        width = sum(widths) + 2 * (len(widths) - 1)
        lines = [self.title, "_" * width, line(self.headers), "=" * width]
        lines += [line(row) for row in self.rows]
        lines.append("=" * width)
        if self.footer:
            lines += self.footer + ["_" * width]
        return lines

    def __repr__(self):
        return "\n".join(self.text_lines())

    def _repr_html_(self):
        def cells(row, tag):
            return "".join(f'<{tag} style="text-align:{"left" if self._left(i) else "right"}">'
                           f"{html.escape(c)}</{tag}>" for i, c in enumerate(row))

        body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in self.rows)
        footer = "".join(f"<div>{html.escape(line)}</div>" for line in self.footer)
        return (f"<div><b>{html.escape(self.title)}</b>"
                f"<table><thead><tr>{cells(self.headers, 'th')}</tr></thead>"
                f"<tbody>{body}</tbody></table>{footer}</div>")


def show_table(table, print_fn=print):
    """Print ``table`` through ``print_fn``, or display it as HTML in a Jupyter kernel."""
    if print_fn is print and in_notebook():
        import IPython.display
        IPython.display.display(table)
        return
    for line in table.text_lines():
        print_fn(line)

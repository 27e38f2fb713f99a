"""The one look of the harness's HTML pages: the run page, and the HTML twin of every Markdown report
(the conformance report, certificates and their comparison, the version matrix) and the nightly report.

A Markdown report stays where it is useful (certificates live in the repository as Markdown); beside it,
`<name>.html` is the same text rendered by markdown-it-py (CommonMark with tables: the library `rich`
already brings) inside this page's style, with every result word in a table cell shown as a coloured
badge (and so is a verdict in bold that opens a paragraph). Self-contained: the style is inline, nothing is fetched.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1600px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.word { padding: 0.1em 0.5em; border-radius: 4px; color: white; white-space: nowrap; }
.PASS, .CERTIFIED { background: #2a7d2a; } .FAIL, .NOT-CERTIFIED { background: #c62828; }
.UNKNOWN, .INCONCLUSIVE, .inconclusive, .NONE, .error { background: #8a6d00; } .KNOWN-BUG, .KNOWN-DEVIATION { background: #6a1b9a; }
.NOT-SUPPORTED, .SKIPPED, .NOT-RUN, .not-supported, .not-applicable, .not-run, .older-contract { background: #757575; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { border: 1px solid #ccc; padding: 0.3em 0.6em;
vertical-align: top; text-align: left; font-size: 0.92em; } th { background: #f3f3f3; }
code, pre { background: #f6f6f6; padding: 0.1em 0.3em; } pre { padding: 0.6em; overflow-x: auto; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em; vertical-align: middle; }
ul.anomalies { margin: 0.2em 0; padding-left: 1.2em; }
"""

#: result words shown as badges (the class is the word with spaces as dashes)
WORDS = ("PASS", "FAIL", "UNKNOWN", "INCONCLUSIVE", "KNOWN BUG", "KNOWN DEVIATION", "NOT SUPPORTED", "SKIPPED",
         "NOT RUN", "CERTIFIED", "NOT CERTIFIED", "not supported", "not applicable", "not run", "pass", "inconclusive")
_ALTERNATIVES = "|".join(sorted(map(re.escape, WORDS), key=len, reverse=True))
_CELL = re.compile(r"<td>(?:<strong>)?(" + _ALTERNATIVES + r")(?:</strong>)?(?=[ <(])")
#: a paragraph that opens with its verdict in bold (a certificate's "**NOT CERTIFIED** against ...")
_LEAD = re.compile(r"<p><strong>(" + _ALTERNATIVES + r")</strong>")


def badge(word: str) -> str:
    cls = "PASS" if word == "pass" else word.replace(" ", "-")
    return f'<span class="word {html.escape(cls)}">{html.escape(word)}</span>'


def page(title: str, body: str) -> str:
    """A whole page in the harness's look around `body` (HTML)."""
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def markdown_page(text: str, title: str) -> str:
    """A Markdown report as a page: its own headings and tables, result words in cells as badges."""
    from markdown_it import MarkdownIt
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    body = _CELL.sub(lambda m: "<td>" + badge(m.group(1)), body)
    body = _LEAD.sub(lambda m: "<p>" + badge(m.group(1)), body)
    return page(title, body)


def write_html_twin(markdown_path: Path, title: str) -> Path:
    """`<name>.html` beside `<name>.md`, from its text."""
    out = markdown_path.with_suffix(".html")
    out.write_text(markdown_page(markdown_path.read_text(), title))
    return out

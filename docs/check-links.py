#!/usr/bin/env python3
"""Checks every link inside the built book: each relative `href` and `src` of every page
must name a file of the book, and its `#fragment` an element of that page (an `id`, or an
`<a name>`). External links (with a scheme) are not fetched.

LinkChecker (PyPI) finds the same faults, but its anchor check reads and parses the target
page again for every link with a fragment: over this book, whose generated reference pages
hold hundreds of links into each other, it took minutes. This reads each page once.

It also checks the relative links of Markdown files given with --markdown (the README,
which is read on the forge, not in the book): each must name a file or folder of the
repository.

Usage: docs/check-links.py [docs/book] [--markdown README.md ...]
"""

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

DEFAULT = Path(__file__).resolve().parent / "book"
# mdBook's own 404 page links from the site's root (`<base href="/">`), not from its folder.
SKIP = {"404.html"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("id",) + (("name",) if tag == "a" else ()):
            if attrs.get(name):
                self.ids.add(attrs[name])
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                self.links.append((self.getpos()[0], attrs[name]))


MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_faults(path):
    """Relative links of a Markdown file that name nothing in the repository."""
    faults, checked = [], 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for link in MARKDOWN_LINK.findall(line):
            parts = urlsplit(link)
            if parts.scheme or not parts.path:
                continue
            checked += 1
            if not (path.parent / unquote(parts.path)).exists():
                faults.append(f"{path}:{number}: {link}: no such file")
    return checked, faults


def main():
    args = sys.argv[1:]
    markdown = []
    if "--markdown" in args:
        at = args.index("--markdown")
        args, markdown = args[:at], args[at + 1:]
    root = Path(args[0] if args else DEFAULT).resolve()
    pages = {}
    for path in sorted(root.rglob("*.html")):
        page = Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path] = page
    broken, checked = [], 0
    for path, page in pages.items():
        if path.name in SKIP:
            continue
        for line, link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue  # external: not fetched
            checked += 1
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(root)}:{line}: {link}"
            if not target.exists() or root not in target.parents and target != root:
                broken.append(f"{where}: no such file")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where}: no such anchor")
    for name in markdown:
        count, faults = markdown_faults(Path(name))
        checked += count
        broken += faults
    for fault in broken:
        print(fault)
    print(f"links: {checked} checked in {len(pages)} pages and {len(markdown)} Markdown files, "
          f"{len(broken)} broken")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()

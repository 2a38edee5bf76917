#!/usr/bin/env python3
"""Checks the links of the built book (docs/book/) and of README.md.

In the book's HTML, every relative link must name a file of the built book
and, with a #fragment, an id in that file (mdBook turns each chapter's .md
links into .html ones; a link to a chapter that is not in SUMMARY.md, or to a
heading that was renamed, fails here). In README.md, every relative link
must name a file of the repository and, for a #fragment into a Markdown
file, one of its headings. External links (with a scheme) are not fetched.

Usage: .ci/book-links.py BOOK_DIR README.md
"""

import html.parser
import os
import re
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if tag in ("a", "img", "link", "script") and attrs.get(key):
                self.links.append((attrs[key], self.getpos()[0]))


def parse(path, cache={}):
    if path not in cache:
        page = Page()
        with open(path, encoding="utf-8") as f:
            page.feed(f.read())
        cache[path] = page
    return cache[path]


def external(link):
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", link)) or link.startswith("//")


def check_book(book):
    errors = []
    pages = 0
    for root, _, files in os.walk(book):
        for name in files:
            if not name.endswith(".html"):
                continue
            path = os.path.join(root, name)
            pages += 1
            for link, line in parse(path).links:
                if external(link):
                    continue
                url = urllib.parse.urlsplit(link)
                target = path if not url.path else os.path.normpath(
                    os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not os.path.isfile(target):
                    errors.append(f"{path}:{line}: {link}: no such file")
                    continue
                if url.fragment and target.endswith(".html"):
                    if urllib.parse.unquote(url.fragment) not in parse(target).ids:
                        errors.append(f"{path}:{line}: {link}: no id #{url.fragment}")
    return pages, errors


def slug(heading):
    """GitHub's heading anchors (as mdBook's for these headings)."""
    text = re.sub(r"[`*_]", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(path):
    out, fence = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            elif not fence and re.match(r"^#{1,6} ", line):
                out.add(slug(line.lstrip("#")))
    return out


def check_markdown(md):
    errors = []
    base = os.path.dirname(os.path.abspath(md))
    fence = False
    with open(md, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for link in re.findall(r"\]\(([^)\s]+)\)", line):
                if external(link):
                    continue
                url = urllib.parse.urlsplit(link)
                target = os.path.normpath(os.path.join(base, url.path)) if url.path else os.path.abspath(md)
                if not os.path.exists(target):
                    errors.append(f"{md}:{n}: {link}: no such file")
                elif url.fragment and target.endswith(".md") and url.fragment not in headings(target):
                    errors.append(f"{md}:{n}: {link}: no heading #{url.fragment}")
    return errors


def main():
    book, readme = sys.argv[1], sys.argv[2]
    pages, errors = check_book(book)
    errors += check_markdown(readme)
    for e in errors:
        print(e)
    print(f"book links: {pages} pages and {readme} checked, {len(errors)} broken")
    return 1 if errors or pages == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

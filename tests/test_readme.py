"""README.md is the users' and operators' manual: its contents list must lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation other than `-` dropped (letters
    of any script, digits and `_` kept), spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings() -> list[tuple[int, str]]:
    return [(len(m[1]), m[2]) for m in re.finditer(r"^(#{2,3}) (.+)$", README, re.M)]


def contents_links() -> list[tuple[str, str]]:
    block = README.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\s*- \[(.+)\]\(#(.+)\)$", block, re.M)


def test_every_contents_link_leads_to_a_heading_of_the_readme():
    anchors = {github_anchor(text) for _, text in headings()}
    links = contents_links()
    assert links
    assert [target for _, target in links if target not in anchors] == []


def test_every_section_and_subsection_is_in_the_contents():
    listed = {text for text, _ in contents_links()}
    missing = [text for _, text in headings() if text != "Contents" and text not in listed]
    assert missing == []

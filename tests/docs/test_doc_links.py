"""Every relative link of README.md and docs/*.md points at a file that exists, and a
``#fragment`` at a heading of that page (GitHub's anchors: lower case, punctuation dropped,
spaces as hyphens)."""

import re

from helpers.doc_blocks import PAGES, ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")


def prose(path) -> str:
    """The page without its code blocks (a link inside one is not a link)."""
    return re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)


def anchors(path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} +(.*?)\s*$", prose(path), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def broken_links(pages=PAGES) -> list[str]:
    broken = []
    for page in pages:
        for target in LINK.findall(prose(page)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            file, _, fragment = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name}: {target}"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                broken.append(f"{where}: no heading with that anchor")
    return broken


def test_every_relative_link_resolves():
    assert len(PAGES) > 10
    assert broken_links() == []


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n[a](page.md#a-title) [b](gone.md) [c](#nowhere)\n\n```sh\n[d](in-a-block.md)\n```\n")
    assert broken_links([page]) == ["page.md: gone.md: no such file", "page.md: #nowhere: no heading with that anchor"]

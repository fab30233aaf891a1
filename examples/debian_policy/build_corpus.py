"""Rebuild corpus/ from Debian's `debian-policy` package (policy.txt.gz, version 4.6.2.0).

Takes the numbered sections N.M of chapters 3, 4, 7, 8, 9, 10 and 12 of the
Debian Policy Manual (each with its subsections) and writes one Markdown file
per chapter, one `## N.M Title` document per section. Run it after
`apt-get install debian-policy`; the committed corpus/ is its output.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

SOURCE = Path("/usr/share/doc/debian-policy/policy.txt.gz")
CHAPTERS = {
    3: "binary_packages",
    4: "source_packages",
    7: "package_relationships",
    8: "shared_libraries",
    9: "operating_system",
    10: "files",
    12: "documentation",
}
HEADING = re.compile(r"^(\d+)\.(\d+)\. (.+)$")
CHAPTER = re.compile(r"^(\d+)\. (.+)$")
UNDERLINE = re.compile(r"^[=\-*~^\"]{3,}$")


def main() -> None:
    lines = gzip.decompress(SOURCE.read_bytes()).decode("utf-8").splitlines()
    end = len(lines)
    sections: dict[int, list[tuple[str, str, list[str]]]] = {c: [] for c in CHAPTERS}
    chapter = 0
    expected = 1
    current: list[str] | None = None
    for i, line in enumerate(lines[:end]):
        underlined = i + 1 < end and UNDERLINE.match(lines[i + 1] or "") is not None
        match = HEADING.match(line)
        top = CHAPTER.match(line)
        if top and underlined and lines[i + 1].startswith("*"):
            if int(top.group(1)) != chapter + 1:
                break  # numbering restarts: the appendices (old Packaging Manual) begin
            chapter, expected, current = chapter + 1, 1, None
            continue
        if (
            match
            and underlined
            and int(match.group(1)) == chapter
            and int(match.group(2)) == expected
        ):
            expected += 1
            if chapter in CHAPTERS:
                current = []
                sections[chapter].append((f"{chapter}.{match.group(2)}", match.group(3), current))
            else:
                current = None
            continue
        if current is not None and not UNDERLINE.match(line):
            current.append(line.rstrip())
    out = Path(__file__).resolve().parent / "corpus"
    out.mkdir(exist_ok=True)
    for number, name in CHAPTERS.items():
        parts = [
            "---",
            "kind: requirement",
            "source: Debian Policy Manual 4.6.2.0 (package debian-policy), GPL-2+",
            "---",
            "",
        ]
        chapter_sections = sections[number]
        last = chapter_sections[-1][2]
        # The chapter's footnotes follow its last section: cut them off.
        notes = [j for j, line in enumerate(last) if line.startswith("[1] ")]
        if notes:
            del last[notes[-1] :]
        for sid, title, body in chapter_sections:
            text = re.sub(r"\n{3,}", "\n\n", "\n".join(body)).strip()
            parts += [f"## {sid} {title}", "", text, ""]
        (out / f"{number:02d}_{name}.md").write_text("\n".join(parts), encoding="utf-8")
        print(number, name, len(sections[number]))


if __name__ == "__main__":
    main()

"""Each format read with its structure; each refusal with its message; the caps."""

from __future__ import annotations

import pytest
from ebooklib import epub
from tests.services.library import builders

from talekeeper.core.errors import InvalidInput
from talekeeper.services.library import Caps, DocumentKind, read_document

pytestmark = pytest.mark.no_database


def refusal(data: bytes, filename: str, caps: Caps | None = None) -> str:
    with pytest.raises(InvalidInput) as caught:
        read_document(data, filename, caps=caps or Caps())
    return caught.value.message


def test_plain_text_splits_on_blank_lines_and_collapses_whitespace() -> None:
    document = read_document(b"First  line\nsame paragraph.\n\n\n  Second.\r\n\r\nThird.", "a.txt")
    assert document.kind is DocumentKind.TXT
    assert document.title == "a"
    assert [s.paragraphs for s in document.sections] == [
        ["First line same paragraph.", "Second.", "Third."]
    ]
    assert document.sections[0].heading_path == () and document.sections[0].page is None


@pytest.mark.parametrize(
    ("data", "encoding", "text"),
    [
        ("Café".encode(), "utf-8", "Café"),
        (b"\xef\xbb\xbf" + "Café".encode(), "utf-8-sig", "Café"),
        ("Café".encode("utf-16"), "utf-16", "Café"),
        ("\ufeffCafé".encode("utf-16-be"), "utf-16", "Café"),
        ("Café – “quoted”".encode("cp1252"), "cp1252", "Café – “quoted”"),
    ],
)
def test_encodings(data: bytes, encoding: str, text: str) -> None:
    document = read_document(data, "notes.txt")
    assert document.encoding == encoding
    assert document.text == text


def test_markdown_headings_give_the_heading_path() -> None:
    source = (
        "Before any heading.\n\n# Book One\n\nOpening.\n\n## The Harbour ##\n\nShips, see "
        "[the map](map.png).\n\n```\n# not a heading\n```\n\n### Docks\n\nRope.\n\n"
        "## The Hill\n\nGrass.\n\n# Book Two\n\nEnd."
    )
    document = read_document(source.encode(), "bible.md")
    assert document.kind is DocumentKind.MD and document.title == "Book One"
    assert [(s.heading_path, s.paragraphs) for s in document.sections] == [
        ((), ["Before any heading."]),
        (("Book One",), ["Opening."]),
        (("Book One", "The Harbour"), ["Ships, see the map.", "# not a heading"]),
        (("Book One", "The Harbour", "Docks"), ["Rope."]),
        (("Book One", "The Hill"), ["Grass."]),
        (("Book Two",), ["End."]),
    ]


def test_markdown_extension_only_tells_markdown_from_text() -> None:
    assert read_document(b"# Title\n\nBody.", "notes.txt").kind is DocumentKind.TXT
    assert read_document(b"# Title\n\nBody.", "notes.MD").kind is DocumentKind.MD


def test_html_by_content_drops_scripts_styles_and_chrome() -> None:
    page = (
        "<!DOCTYPE html><html><head><title>The Wiki</title><style>p{}</style>"
        "<script>document.write('evil')</script></head><body>"
        "<nav><a href='/'>Home</a></nav><div role='navigation'><div>Menu</div></div>"
        "<h1>Places</h1><p>The <b>harbour</b> &amp; the hill.</p>"
        "<h2>Harbour</h2><p>Ships<br>come.</p><ul><li>one</li><li>two</li></ul>"
        "<footer>Copyright</footer><aside>Ads</aside></body></html>"
    )
    document = read_document(page.encode(), "export.txt")
    assert document.kind is DocumentKind.HTML and document.title == "The Wiki"
    assert [(s.heading_path, s.paragraphs) for s in document.sections] == [
        (("Places",), ["The harbour & the hill."]),
        (("Places", "Harbour"), ["Ships come.", "one", "two"]),
    ]
    for chrome in ("evil", "Home", "Menu", "Copyright", "Ads", "p{}"):
        assert chrome not in document.text


def test_html_without_title_takes_its_first_heading() -> None:
    document = read_document(b"<body><h2>Lore</h2><p>Text.</p></body>", "x.html")
    assert document.title == "Lore"


def test_pdf_pages_and_outline_headings() -> None:
    data = builders.pdf(
        [
            ("Book One", 0, ["The first page. It has two sentences."]),
            (None, 0, ["Still book one, on page two."]),
            ("The Harbour", 1, ["Ships came in."]),
        ],
        title="The Saga",
    )
    document = read_document(data, "saga.pdf")
    assert document.kind is DocumentKind.PDF and document.title == "The Saga"
    assert [(s.heading_path, s.page) for s in document.sections] == [
        (("Book One",), 1),
        (("Book One",), 2),
        (("Book One", "The Harbour"), 3),
    ]
    assert "Still book one, on page two." in document.sections[1].paragraphs
    assert document.encoding is None


def test_pdf_with_an_empty_password_is_read() -> None:
    data = builders.encrypted(builders.pdf([(None, 0, ["Open to all."])]), password="")
    assert read_document(data, "open.pdf").text == "Open to all."


def test_epub_in_spine_order_with_toc_titles() -> None:
    harbour = builders.chapter(
        "harbour.xhtml",
        "The Harbour",
        "<h1>The Harbour</h1><p>Ships.</p><h2>Docks</h2><p>Rope.</p>",
    )
    hill = builders.chapter("hill.xhtml", "The Hill", "<p>Grass.</p><script>x()</script>")
    toc = [(epub.Section("Book One"), [harbour]), (epub.Section("Book Two"), [hill])]
    document = read_document(builders.ebook([harbour, hill], toc, title="Saga"), "saga.bin")
    assert document.kind is DocumentKind.EPUB and document.title == "Saga"
    assert [(s.heading_path, s.paragraphs) for s in document.sections] == [
        (("Book One", "The Harbour"), ["Ships."]),
        (("Book One", "The Harbour", "Docks"), ["Rope."]),
        (("Book Two", "The Hill"), ["Grass."]),
    ]


def test_epub_chapter_titles_from_headings_without_toc() -> None:
    one = builders.chapter("one.xhtml", "", "<h1>Arrival</h1><p>A.</p>")
    two = builders.chapter("two.xhtml", "", "<h1>Departure</h1><p>B.</p>")
    document = read_document(builders.ebook([one, two], toc=[]), "t.epub")
    assert [s.heading_path for s in document.sections] == [("Arrival",), ("Departure",)]


# --- refusals -------------------------------------------------------------------------------


def test_file_over_the_size_cap() -> None:
    message = refusal(b"x" * 101, "big.txt", Caps(file_bytes=100))
    assert "big.txt" in message and "Split it into smaller files" in message


def test_epub_with_too_many_entries() -> None:
    data = builders.zip_of({"mimetype": b"application/epub+zip"} | {f"f{i}": b"" for i in range(9)})
    assert "holds 10 files" in refusal(data, "bomb.epub", Caps(archive_entries=5))


def test_epub_that_unpacks_past_the_cap() -> None:
    data = builders.zip_of({"mimetype": b"application/epub+zip", "big.xhtml": b"a" * 10_000})
    message = refusal(data, "bomb.epub", Caps(unpacked_bytes=5_000))
    assert "unpacks to" in message


@pytest.mark.parametrize("path", ["../evil.xhtml", "/etc/passwd", "OEBPS/../../x", "C:/x"])
def test_epub_path_escaping_the_archive(path: str) -> None:
    data = builders.zip_of({"mimetype": b"application/epub+zip", path: b"x"})
    assert "outside the archive" in refusal(data, "evil.epub")


def test_zip_that_is_not_an_epub() -> None:
    assert "not an EPUB" in refusal(builders.zip_of({"a.txt": b"hello"}), "a.epub")


def test_pdf_with_too_many_pages() -> None:
    data = builders.pdf([(None, 0, ["a"]), (None, 0, ["b"]), (None, 0, ["c"])])
    assert "has 3 pages" in refusal(data, "long.pdf", Caps(pdf_pages=2))


@pytest.mark.parametrize(
    ("data", "filename"),
    [
        (b"a" * 50, "a.txt"),
        (b"# H\n\n" + b"a" * 50, "a.md"),
        (b"<html><body><p>" + b"a" * 50 + b"</p></body></html>", "a.html"),
    ],
)
def test_text_over_the_character_cap(data: bytes, filename: str) -> None:
    assert "more than 20 characters" in refusal(data, filename, Caps(text_chars=20))


def test_pdf_and_epub_text_over_the_character_cap() -> None:
    pdf = builders.pdf([(None, 0, ["a" * 30]), (None, 0, ["b" * 30])])
    assert "more than 40 characters" in refusal(pdf, "a.pdf", Caps(text_chars=40))
    chapters = [builders.chapter(f"c{i}.xhtml", "", f"<p>{'c' * 30}</p>") for i in range(2)]
    book = builders.ebook(chapters)
    assert "more than 40 characters" in refusal(book, "a.epub", Caps(text_chars=40))


def test_encrypted_pdf() -> None:
    data = builders.encrypted(builders.pdf([(None, 0, ["Secret plans."])]))
    assert "protected by a password" in refusal(data, "secret.pdf")


def test_pdf_without_text_may_be_a_scan() -> None:
    assert "it may be a scan: run OCR first" in refusal(builders.blank_pdf(2), "scan.pdf")


def test_truncated_pdf_names_the_reason() -> None:
    data = builders.pdf([(None, 0, ["Hello there."])])
    message = refusal(data[: len(data) // 3], "cut.pdf")
    assert message.startswith("cut.pdf cannot be read: ") or "no text" in message


def test_corrupt_epub_names_the_reason() -> None:
    data = builders.zip_of({"mimetype": b"application/epub+zip", "x.txt": b"no container"})
    message = refusal(data, "broken.epub")
    assert message.startswith("broken.epub cannot be read: ")
    assert "container" in message.lower()


@pytest.mark.parametrize(
    ("data", "filename"),
    [
        (b"", "empty.txt"),
        (b"  \n\n\t ", "blank.md"),
        (b"<html><body><script>x()</script></body></html>", "chrome.html"),
    ],
)
def test_empty_document(data: bytes, filename: str) -> None:
    assert "has no text" in refusal(data, filename)


def test_empty_epub() -> None:
    book = builders.ebook([builders.chapter("c.xhtml", "", "<p> </p>")])
    assert "has no text" in refusal(book, "empty.epub")

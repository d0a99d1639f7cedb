"""The knowledge library's first floor: uploaded documents read and split into passages.

Pure: bytes in, a ``Document`` (title, kind, sections of paragraphs under heading paths and,
for a PDF, pages) and then ``Passage``s out; no database, no web, no embedding.

Invariants:

- ``read_document`` recognises .txt, .md, .html, .pdf and .epub by content first (the
  extension only tells Markdown from plain text) and either returns a ``Document`` or
  raises ``InvalidInput`` with a message that says what to do; no other exception leaves
  it, whatever the bytes.
- Caps are checked before the work they bound (``Caps``): 50 MB a file; an EPUB's entries
  at most 5,000 and 200 MB decompressed, none with a path out of the archive, each
  inflated in bounded pieces before ebooklib sees it and refused when it unpacks past its
  declared size, fails its CRC or packs tighter than 100 to 1 (``services.common.archives``);
  5,000 PDF pages; 20 million characters of text. Encrypted PDFs, PDFs without
  extractable text, corrupt files, empty documents and binary files under a text name (an
  image, an archive, a program: by signature or NUL bytes) are refused.
- The work of a read is bounded by ``parsing``: an upload is read in a child process
  limited to 60 s of CPU and 1 GiB of memory (120 s of wall time), one file per user at a
  time.
- Nothing in a document is run; scripts, styles and navigation chrome are dropped.
- Text files are read as UTF-8 (with or without BOM), else UTF-16 with BOM, else cp1252;
  ``Document.encoding`` says which.
- ``split_passages`` never lets a passage cross a section; merges whole paragraphs while
  they fit ``max_tokens``; cuts a longer paragraph at sentence ends, a longer sentence at
  word boundaries; joins a short last piece to its neighbour when together they fit.
  Every passage fits the budget (unless one character alone does not), and every
  character of the document's text, apart from whitespace, is in exactly one passage, in
  order.
"""

from talekeeper.services.library.documents import (
    CAPS,
    Caps,
    Document,
    DocumentKind,
    Section,
    read_document,
)
from talekeeper.services.library.passages import Passage, split_passages

__all__ = [
    "CAPS",
    "Caps",
    "Document",
    "DocumentKind",
    "Passage",
    "Section",
    "read_document",
    "split_passages",
]

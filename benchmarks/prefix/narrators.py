"""The narrators a game can be played with, and what makes a real one play the script.

- ``scripted``: the kit's model double at the runtime's endpoint, scripted with the
  turn's narration: instant, nothing is evaluated, the figures are the product's counts
  alone.
- ``embedded``: the app's own in-process narrator (SmolLM2-135M on llama-cpp-python,
  ``talekeeper.providers.embedded``), the ``EmbeddedProvider`` the runtime built for the
  game's context size.
- ``server``: the same model behind ``python -m llama_cpp.server`` (``llama_server``) on a
  free loopback port, started for each game with ``--n_ctx`` the context size under test;
  the runtime's endpoint points at it (``TALEKEEPER_ENDPOINT_URL``, ``TALEKEEPER_MODEL``).

A narrator is really asked every turn, but the story stays the script's: each turn's
narrator provider (the double's too) is wrapped in a ``ScriptedReply``, which forwards the
request (its reply capped at ``REPLY_CAP`` tokens), hands the product the script's
narration as the reply as soon as the model's first token arrives (so the product's
``timings.first_token_ms`` is the model's), lets the model finish, and ends with the
model's own completion figures (tokens in, out and evaluated) carrying the script's text.
So every game at a size plays the same turns whichever narrator answers, and its prompts
are the ones the product builds for that narrator (the embedded one's carry its example
turn and reserve its tokens).

What the model really evaluated is read from llama.cpp itself where it can be
(``EvalProbe``): the in-process narrator's performance counters, the server's own timing
lines in its log. A model keeps in its cache the tokens it generated after the prompt; the
next prompt holds the script's narration there instead, so those are evaluated again, as
the product's count assumes (it compares prompt with prompt).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from talekeeper.core.errors import ProviderError
from talekeeper.core.tokens import TokenCounter
from talekeeper.providers.base import (
    Chunk,
    Completion,
    CompletionRequest,
    Embeddings,
    Provider,
    ProviderInfo,
)
from talekeeper.providers.embedded import EmbeddedProvider
from talekeeper.providers.embedded_models import narrator_path

NARRATORS = ("scripted", "embedded", "server")
REAL = ("embedded", "server")  # the narrators that run a model
REPLY_CAP = 32  # tokens a real narrator may generate a turn: enough for its first-token time
SERVER_ALIAS = "smollm2"
SERVER_START_S = 90.0
REPLY_PIECES = 4  # the script's reply goes out in a few chunks, as a stream does


def reply_pieces(text: str, pieces: int = REPLY_PIECES) -> list[str]:
    """``text`` in at most ``pieces`` consecutive chunks (one empty chunk for no text)."""
    step = max(1, -(-len(text) // pieces))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


@dataclass
class Said:
    """What the model did on one turn, as the wrapper saw it."""

    request: CompletionRequest | None = None  # as the product sent it (before the cap)
    text: str = ""  # the model's own reply (capped), never stored
    completion: Completion | None = None  # its completion figures
    calls: int = 0


class ScriptedReply:
    """A narrator's provider, wrapped for one turn: the model is asked, the script answers.

    ``stream`` forwards the request with ``max_tokens`` capped at ``cap`` and passes the
    script's ``reply`` on in its place: the first piece when the model's first token comes,
    the rest once the model is done, then the model's completion with the reply as its
    text. ``complete`` does the same in one call. Everything else is the wrapped provider's
    (its name, reserved tokens, tokenizer), so the product measures and budgets the prompt
    as it does for that provider."""

    def __init__(self, inner: Provider, reply: str, cap: int = REPLY_CAP) -> None:
        self.inner = inner
        self.info: ProviderInfo = inner.info
        self.reply = reply
        self.cap = cap
        self.said = Said()

    def _capped(self, request: CompletionRequest) -> CompletionRequest:
        self.said.calls += 1
        self.said.request = request
        return dataclasses.replace(request, max_tokens=min(request.max_tokens, self.cap))

    def _answer(self, done: Completion) -> Completion:
        self.said.completion = done
        self.said.text = done.text
        return dataclasses.replace(done, text=self.reply)

    async def complete(self, request: CompletionRequest) -> Completion:
        return self._answer(await self.inner.complete(self._capped(request)))

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]:
        pieces = reply_pieces(self.reply)
        given = 0
        done: Completion | None = None
        async for chunk in self.inner.stream(self._capped(request)):
            if chunk.text and given == 0:  # the model's first token: the reply starts now
                yield Chunk(pieces[0])
                given = 1
            done = chunk.done or done
        if done is None:
            raise ProviderError(f"{self.info.name} ended its stream without a completion")
        answer = self._answer(done)
        for piece in pieces[given:]:
            yield Chunk(piece)
        yield Chunk("", done=answer)

    async def embed(self, texts: list[str], model: str) -> Embeddings:
        return await self.inner.embed(texts, model)

    async def list_models(self) -> list[str]:
        return await self.inner.list_models()

    def token_counter(self, model: str) -> TokenCounter:
        return self.inner.token_counter(model)

    async def aclose(self) -> None:
        """The wrapped provider belongs to the game, which closes it."""


# -- what llama.cpp really evaluated -----------------------------------------------------------


class EvalProbe(Protocol):
    def evaluated(self) -> int | None:
        """The prompt tokens the model evaluated on the last call (None: not known)."""
        ...


@dataclass
class LlamaPerf:
    """The in-process narrator's llama.cpp performance counters: prompt tokens evaluated
    since the context was made, read after each call (the difference is the call's)."""

    provider: EmbeddedProvider
    _last: int = 0

    def evaluated(self) -> int | None:
        if not self.provider.narrator.loaded:
            return None
        try:
            import llama_cpp

            llama = self.provider.narrator.get()
            total = int(llama_cpp.llama_perf_context(llama._ctx.ctx).n_p_eval)
        except (AttributeError, ImportError, TypeError):  # another llama-cpp-python
            return None
        delta, self._last = total - self._last, total
        return delta


# llama.cpp's performance line, printed by the server after each generation (verbose).
PROMPT_EVAL = re.compile(r"prompt eval time\s*=\s*[\d.]+ ms\s*/\s*(\d+) tokens")


@dataclass
class ServerLog:
    """The server's log: llama.cpp's ``prompt eval time = ... / N tokens`` line of the
    last generation (the server resets the counters before each)."""

    path: Path
    _read: int = 0

    def evaluated(self) -> int | None:
        with self.path.open("rb") as f:
            f.seek(self._read)
            new = f.read().decode("utf-8", errors="replace")
            self._read = f.tell()
        found = PROMPT_EVAL.findall(new)
        return int(found[-1]) if found else None


# -- the server --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str  # its OpenAI-compatible base URL
    log: ServerLog
    command: list[str] = field(default_factory=list)


def server_command(port: int, n_ctx: int) -> list[str]:
    """``llama_cpp.server`` on the embedded narrator's GGUF, with as many threads as the
    in-process narrator uses (its own default for generation is half the cores)."""
    threads = str(max(1, os.cpu_count() or 1))
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(narrator_path()), "--model_alias", SERVER_ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
        "--n_threads", threads, "--n_threads_batch", threads,
    ]  # fmt: skip


@asynccontextmanager
async def llama_server(n_ctx: int, timeout: float = SERVER_START_S) -> AsyncIterator[Server]:
    """A ``llama_cpp.server`` of its own, up and answering, stopped on leaving."""
    port = free_port()
    command = server_command(port, n_ctx)
    with tempfile.TemporaryDirectory(prefix="talekeeper-prefix-server-") as root:
        log_path = Path(root) / "server.log"
        with log_path.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            await _wait_ready(url, process, log_path, timeout)
            yield Server(url, ServerLog(log_path), command)
        finally:
            process.terminate()
            try:
                await asyncio.to_thread(process.wait, 10)
            except subprocess.TimeoutExpired:
                process.kill()
                await asyncio.to_thread(process.wait)


async def _wait_ready(url: str, process: subprocess.Popen[Any], log: Path, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with httpx.AsyncClient() as client:
        while loop.time() < deadline:
            if process.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited with {process.returncode}:\n{_tail(log)}"
                )
            try:
                if (await client.get(url + "/models", timeout=1)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.3)
    raise RuntimeError(f"llama_cpp.server did not answer within {timeout:.0f} s:\n{_tail(log)}")


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# -- what it was measured on -------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def llama_build() -> str:
    """llama-cpp-python's version and its llama.cpp's system info (the CPU features built
    in), or why it is not known."""
    try:
        import llama_cpp

        info = llama_cpp.llama_print_system_info()
    except Exception as exc:  # noqa: BLE001 -- a description only
        return f"llama-cpp-python not loadable ({exc})"
    text = info.decode() if isinstance(info, bytes) else str(info)
    return f"llama-cpp-python {llama_cpp.__version__}: {' '.join(text.split())}"

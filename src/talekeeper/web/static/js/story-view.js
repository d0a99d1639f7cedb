// The story list of the play page (#story): a page of the newest actions, "Show earlier" to
// page back, the reply being written, and the notice of a turn still waiting for its reply.
// Invariants:
// - Only the newest PAGE actions are rendered at first; "Show earlier" asks the API for the
//   PAGE actions before the oldest one shown (before_depth), so a long story stays fast.
//   A reload keeps as many actions as are shown (up to the API's page limit).
// - The reply being written is one element with the class "streaming" whose text grows chunk
//   by chunk (text nodes only), kept at the end of the list through reloads; while other
//   turns go first it says how many. When the turn ends the story is reloaded from the
//   server, so what stays on the page is what was saved.
// - #story is the scrolling box: a new turn scrolls to the end, an edit keeps the place.
import { h, fill, api } from "./ui.js";
import { entryFor } from "./story-entry.js";

export const PAGE = 40;
const MAX_PAGE = 500; // the API's largest page

export class StoryView {
  constructor(root, play) {
    this.root = root;
    this.play = play;
    this.actions = []; // oldest first
    this.earlier = h("div", { class: "story-earlier" });
    this.list = h("div", { class: "story-list" });
    this.notice = h("div", { class: "story-notice" });
    fill(root, this.earlier, this.list, this.notice);
  }

  /** The newest actions, as many as are shown now (at least a page). */
  fetchLatest() {
    const limit = Math.min(MAX_PAGE, Math.max(PAGE, this.actions.length));
    return api("GET", `${this.play.base}/actions?limit=${limit}`);
  }

  render(page, state, failure, scroll) {
    const top = this.root.scrollTop;
    this.actions = page.actions;
    const headId = state.head ? state.head.id : null;
    fill(this.list, this.actions.map((a) => entryFor(a, this.play, a.id === headId)));
    if (!this.actions.length) {
      this.list.append(h("p", {
        class: "story-empty muted",
        text: "The story has not begun yet. Write the first action below, or choose Continue "
          + "to let the narrator open it.",
      }));
    }
    if (this.streaming) this.list.append(this.streaming); // a reload keeps the reply being written
    this.renderEarlier(page.more_before);
    this.renderNotice(state, failure);
    if (scroll === "bottom") this.toBottom();
    else this.root.scrollTop = top;
  }

  renderEarlier(more) {
    this.moreBefore = more;
    fill(this.earlier, more
      ? h("button", {
        type: "button", class: "link show-earlier", text: "Show earlier",
        on: { click: () => this.showEarlier() },
      })
      : null);
  }

  /** The notice after the story: the narrator failed, whose turns are being answered (a
   * shared adventure's), or the newest action has no reply. */
  renderNotice(state, failure) {
    const turns = (state && state.turns) || [];
    if (!failure && turns.length) {
      const [now, ...next] = turns.map((t) => t.persona_name);
      const after = next.length ? `; then ${next.join(", ")}` : "";
      fill(this.notice, h("p", { class: "turn-status muted", attrs: { role: "status" },
        text: `The narrator is answering ${now}${after}.` }));
      return;
    }
    if (!failure && !(state && state.awaiting_reply)) {
      fill(this.notice);
      return;
    }
    const message = failure
      ? failure.message
      : "The narrator has not answered your last action yet.";
    const unsaved = failure && failure.unsaved
      ? h("blockquote", { class: "turn-unsaved", text: failure.unsaved })
      : null;
    fill(this.notice, h("div", { class: "turn-error", attrs: { role: "alert" } },
      h("span", { class: "turn-error-text", text: message }),
      unsaved,
      h("button", {
        type: "button", class: "primary", text: "Retry",
        on: { click: () => this.play.retryFailed() },
      })));
  }

  async showEarlier() {
    const button = this.earlier.querySelector("button");
    if (button) button.disabled = true;
    const first = this.actions[0];
    try {
      const page = await api("GET",
        `${this.play.base}/actions?limit=${PAGE}&before_depth=${first.depth}`);
      const fromBottom = this.root.scrollHeight - this.root.scrollTop;
      this.actions = [...page.actions, ...this.actions];
      this.list.prepend(...page.actions.map((a) => entryFor(a, this.play, false)));
      this.renderEarlier(page.more_before);
      this.root.scrollTop = this.root.scrollHeight - fromBottom; // the reader keeps their place
    } catch (error) {
      if (button) button.disabled = false;
      throw error;
    }
  }

  setBusy(busy) {
    this.root.classList.toggle("busy", busy);
    this.root.setAttribute("aria-busy", String(busy));
  }

  atBottom() {
    return this.root.scrollHeight - this.root.scrollTop - this.root.clientHeight < 60;
  }

  toBottom() {
    this.root.scrollTop = this.root.scrollHeight;
  }

  /** Another member's turn: its reply as far as it is written (the feed's "reply_text"). It
   * lasts until the story is next drawn, which shows the reply as it was saved. */
  showOthersReply(sofar) {
    let el = this.list.querySelector(".entry.others-reply");
    if (!el) {
      el = h("article", {
        class: "entry entry-narration streaming others-reply",
        attrs: { "aria-label": "Narration (being written)", "aria-busy": "true" },
      }, h("div", { class: "entry-text" }), h("div", { class: "entry-tools" },
        h("span", { class: "muted small writing", text: "The narrator is writing…" })));
      this.list.querySelector(".story-empty")?.remove();
      this.list.append(el);
    }
    const pinned = this.atBottom();
    el.querySelector(".entry-text").textContent = sofar;
    if (pinned) this.toBottom();
  }

  /** A saved player action shown before its reply arrives (from the "action" event). */
  appendAction(action) {
    const pinned = this.atBottom();
    const el = entryFor({ ...action, has_insights: false }, this.play, false);
    const streaming = this.list.querySelector(".entry.streaming");
    this.list.querySelector(".story-empty")?.remove();
    this.list.insertBefore(el, streaming);
    if (pinned) this.toBottom();
  }

  /** The reply being written. `replacing`: the id of the reply a retry replaces (hidden
   * meanwhile). Returns {append(text), finish(), cancel()}. */
  startReply(replacing) {
    fill(this.notice);
    const old = replacing ? this.list.querySelector(`.entry[data-id="${replacing}"]`) : null;
    if (old) old.hidden = true;
    const text = h("div", { class: "entry-text" });
    const writing = h("span", { class: "muted small writing", text: "The narrator is writing…" });
    const el = h("article", {
      class: "entry entry-narration streaming",
      attrs: { "aria-label": "Narration (being written)", "aria-busy": "true" },
    }, text, h("div", { class: "entry-tools" }, writing));
    this.list.querySelector(".story-empty")?.remove();
    this.list.append(el);
    this.streaming = el;
    this.toBottom();
    return {
      append: (piece) => {
        const pinned = this.atBottom();
        text.append(piece);
        if (pinned) this.toBottom();
      },
      /** Other turns of a shared adventure go first (`ahead` of them); 0: this one's turn. */
      waiting: (ahead) => {
        writing.textContent = ahead
          ? `Waiting for ${ahead} turn${ahead === 1 ? "" : "s"} ahead of yours…`
          : "The narrator is writing…";
      },
      finish: () => {
        el.classList.remove("streaming");
        el.removeAttribute("aria-busy");
        this.streaming = null;
      },
      cancel: () => {
        el.remove();
        this.streaming = null;
        if (old) old.hidden = false;
      },
    };
  }
}

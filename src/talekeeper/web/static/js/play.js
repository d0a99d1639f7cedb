// The play page's story column: the toolbar (#story-toolbar), the story (#story), the action box
// (#action-box) and the branch tree (#tree-dialog). Invariants:
// - The server is the truth: after every change (turn, retry, take, undo, redo, edit, delete,
//   fork, branch switch) the story and the state (head, awaiting_reply, can_redo) are read
//   again, then "story-changed" {reason} is emitted for the other parts of the page.
// - One change at a time: while a reply is being written or a change is on its way, the page
//   is busy and further changes wait (their buttons are disabled).
// - Every failure reaches the player as a readable message: a narrator failure as a notice in
//   the story with Retry, anything else in the page's error banner.
// - A shared adventure's page shows another member's reply as it is written (the feed's
//   "reply_text"), then the reply as saved once the story is read again.
// - A shared adventure's page says who is here and who is writing, and tells the others when
//   its reader types an action (at most every 3 s) and when they stop or send it.
// - A shared adventure's page follows its feed (docs/sharing.md): every change another member
//   makes reloads the story unless this page is busy with a change of its own other than a
//   turn (that change reloads it anyway; a turn may wait behind the others'). A member's page has only what their role may do: a player the action box and
//   Retry, a viewer the story alone; a member removed while reading is told so.
import { h, fill, api, adventureId, attempt, emit, notify, on, showError } from "./ui.js";
import { StoryView } from "./story-view.js";
import { ActionBox } from "./story-box.js";
import { Turns } from "./story-turns.js";
import { TreeDialog } from "./story-tree.js";

class Play {
  constructor(root) {
    this.role = root.dataset.role || "host";
    this.id = adventureId();
    this.base = `/api/adventures/${this.id}`;
    this.state = null; // {head, awaiting_reply, can_redo, branch_id, ...}
    this.busy = false;
    this.failure = null; // {message, again} after a failed turn, until the next change
    this.turns = new Turns(this);
    this.view = new StoryView(document.getElementById("story"), this);
    this.box = new ActionBox(document.getElementById("action-box"), this);
    this.tree = new TreeDialog(document.getElementById("tree-dialog"), this);
    this.toolbar = this.buildToolbar(document.getElementById("story-toolbar"));
    this.updateToolbar();
  }

  buildToolbar(root) {
    const button = (text, title, onClick, extra = {}) =>
      h("button", { type: "button", text, title, on: { click: onClick }, ...extra });
    const bar = {
      retry: button("Retry", "Write the newest reply again, as a new take",
        () => this.turns.retry()),
      undo: button("Undo", "Take back the newest action",
        () => this.change("undo", () => api("POST", `${this.base}/undo`))),
      redo: button("Redo", "Bring back what Undo took away",
        () => this.change("redo", () => api("POST", `${this.base}/redo`))),
      branches: button("Branches", "See the branches of this story and switch between them",
        () => attempt(() => this.tree.open())),
      dryRun: button("Preview next context",
        "Dry run: see what the narrator would be given for the action in the box, without sending it",
        () => emit("open-insights", { dryRun: this.box.draft() })),
    };
    if (this.role !== "host" && this.role !== "cohost") {
      // A player retries their own newest action; the rest is the host's and co-hosts'.
      const own = this.role === "player" ? { retry: bar.retry } : {};
      fill(root, h("div", { class: "row", attrs: { role: "toolbar", "aria-label": "Story tools" } },
        ...Object.values(own)));
      return own;
    }
    fill(root, h("div", { class: "row", attrs: { role: "toolbar", "aria-label": "Story tools" } },
      bar.retry, bar.undo, bar.redo, h("span", { class: "sep" }), bar.branches, bar.dryRun));
    return bar;
  }

  /** Follow the adventure's feed: another member's change reloads the story. */
  follow() {
    if (this.feed) return this.feed;
    const feed = new EventSource(`${this.base}/events`);
    this.feed = feed;
    feed.addEventListener("members", () => emit("members-changed"));
    feed.addEventListener("presence", (event) => this.showPresence(JSON.parse(event.data)));
    feed.addEventListener("reply_text", (event) => {
      // Another's turn, as it is written; this page's own turn streams its own reply.
      if (!this.turns.running) this.view.showOthersReply(String(JSON.parse(event.data).text ?? ""));
    });
    if (this.role !== "viewer") {
      this.box.area.addEventListener("input", () => this.writing(this.box.area.value.trim() !== ""));
    }
    const changed = () => {
      // During its own turn the page still shows the others' (the reply being written stays).
      if (!this.busy || this.turns.running) attempt(() => this.reload("bottom"));
    };
    for (const kind of FEED_KINDS) feed.addEventListener(kind, changed);
    feed.addEventListener("removed", () => {
      feed.close();
      showError(new Error("You are no longer a member of this adventure."));
    });
    return feed;
  }

  /** Who is here and who (else) is writing, under the title. */
  showPresence({ here, writing }) {
    const line = document.getElementById("presence");
    if (!line) return;
    const me = Number(document.getElementById("play").dataset.userId);
    const names = (people) => people.map((p) => p.persona_name).join(", ");
    const others = writing.filter((p) => p.user_id !== me);
    const typing = others.length
      ? ` · ${names(others)} ${others.length === 1 ? "is" : "are"} writing…` : "";
    line.textContent = `Here: ${names(here)}${typing}`;
    line.hidden = !here.length;
  }

  /** Tell the others this reader is typing an action (at most every 3 s), or stopped. */
  writing(typing) {
    if (!this.feed) return;
    const now = Date.now();
    if (typing && this.typing && now - this.typedAt < 3000) return;
    if (!typing && !this.typing) return;
    this.typing = typing;
    this.typedAt = now;
    api("POST", `${this.base}/presence`, { writing: typing }).catch(() => {}); // only a courtesy
  }

  updateToolbar() {
    if (!this.toolbar) return;
    const state = this.state || {};
    const set = (name, disabled) => {
      if (this.toolbar[name]) this.toolbar[name].disabled = disabled;
    };
    set("retry", this.busy || !state.head);
    set("undo", this.busy || !state.head);
    set("redo", this.busy || !state.can_redo);
    set("branches", this.busy);
    set("dryRun", this.busy);
  }

  setBusy(busy) {
    this.busy = busy;
    this.box.setBusy(busy);
    this.view.setBusy(busy);
    this.updateToolbar();
  }

  /** Read the shown part of the story and the state again and draw them. */
  async reload(scroll = "keep") {
    const [page, state] = await Promise.all([this.view.fetchLatest(), api("GET", this.base)]);
    this.state = state;
    this.view.render(page, state, this.failure, scroll);
    this.updateToolbar();
  }

  async reloadAfterTurn() {
    await attempt(() => this.reload("bottom"));
  }

  /** Run one change of the story: `request` is the API call. Resolves to its answer (or true),
   * or undefined when it was refused (the message is shown). */
  async change(reason, request, { scroll = "bottom" } = {}) {
    if (this.busy) {
      notify("Wait until the reply is written.");
      return undefined;
    }
    this.setBusy(true);
    let result;
    try {
      result = (await request()) ?? true;
    } catch (error) {
      showError(error);
      this.setBusy(false);
      return undefined;
    }
    this.failure = null;
    await attempt(() => this.reload(scroll));
    this.setBusy(false);
    emit("story-changed", { reason });
    return result;
  }

  /** The Retry of the failure notice: the same continue again, or a retry of the reply. */
  retryFailed() {
    const again = this.failure && this.failure.again;
    return again ? again() : this.turns.retry();
  }

  say(message) {
    notify(message);
  }
}

// The feed's story and membership events (the server's FeedKind), each a reason to reload.
const FEED_KINDS = ["append", "reply", "retry", "switch_take", "undo", "redo", "edit", "delete",
  "fork", "members"];

const root = document.getElementById("play");
if (root) {
  const play = new Play(root);
  attempt(() => play.reload("bottom"));
  if (root.dataset.feed) play.follow();
  on("sharing-started", () => play.follow()); // the host made an invite (the People panel)
}

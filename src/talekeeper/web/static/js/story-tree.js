// The branch tree (<dialog id="tree-dialog">): every branch of the adventure nested under the
// branch it was forked from, with where it forked, how many actions it has of its own, and
// which one is current; a click switches to it. Invariants:
// - Names come from players: text only.
// - The tree is read fresh from GET /tree each time the dialog opens; a failed read shows its
//   message inside the dialog, never an empty box.
import { h, fill, api } from "./ui.js";

export class TreeDialog {
  constructor(dialog, play) {
    this.dialog = dialog;
    this.play = play;
    dialog.addEventListener("click", (event) => {
      if (event.target === dialog) dialog.close(); // a click on the backdrop
    });
  }

  async open() {
    const body = h("div", { class: "tree-body" },
      h("p", { class: "muted", text: "Loading the branches…" }));
    fill(this.dialog,
      h("div", { class: "row tree-head" },
        h("h2", { text: "Branches" }),
        h("span", { class: "spacer" }),
        h("button", { type: "button", text: "Close", on: { click: () => this.dialog.close() } })),
      body);
    if (!this.dialog.open) this.dialog.showModal();
    try {
      const tree = await api("GET", `${this.play.base}/tree`);
      fill(body,
        h("p", { class: "muted small", text: "Each branch continues the story of the branch it was forked "
          + "from. Choose one to read and play it." }),
        this.branches(tree.branches));
    } catch (error) {
      fill(body, h("p", { class: "turn-error", attrs: { role: "alert" }, text: error.message }));
    }
  }

  branches(all) {
    const known = new Set(all.map((b) => b.id));
    const children = new Map();
    for (const branch of all) {
      const parent = known.has(branch.parent_id) ? branch.parent_id : null;
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(branch);
    }
    const names = new Map(all.map((b) => [b.id, b.name]));
    const list = (parent) => {
      const kids = (children.get(parent) || []).sort((a, b) => a.fork_depth - b.fork_depth || a.id - b.id);
      if (!kids.length) return null;
      return h("ul", { class: "tree-list" }, kids.map((branch) =>
        h("li", {}, this.item(branch, names), list(branch.id))));
    };
    return list(null);
  }

  item(branch, names) {
    const where = branch.parent_id === null
      ? "the story from its beginning"
      : `forked from “${names.get(branch.parent_id) || "?"}” after action ${branch.fork_depth}`;
    const own = `${branch.own_actions} ${branch.own_actions === 1 ? "action" : "actions"} of its own`;
    const reach = branch.head_depth === null ? "empty" : `reaches action ${branch.head_depth + 1}`;
    const name = branch.current
      ? h("span", { class: "tree-name current", text: branch.name })
      : h("button", {
        type: "button", class: "link tree-name", text: branch.name,
        title: `Switch to ${branch.name}`,
        on: { click: () => this.choose(branch) },
      });
    return h("div", {
      class: "tree-item" + (branch.current ? " current" : ""),
      dataset: { branchId: String(branch.id) },
      attrs: branch.current ? { "aria-current": "true" } : {},
    },
      name,
      branch.current ? h("span", { class: "badge current-badge", text: "current" }) : null,
      h("div", { class: "muted small", text: `${where} · ${own} · ${reach}` }));
  }

  async choose(branch) {
    const switched = await this.play.change("branch",
      () => api("POST", `${this.play.base}/switch-branch`, { branch_id: branch.id }));
    if (switched) {
      this.dialog.close();
      this.play.say(`Now on the branch “${branch.name}”.`);
    }
  }
}

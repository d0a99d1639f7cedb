// The People panel (accounts mode, the host's page only): who shares this adventure and how
// (docs/sharing.md). Invariants:
// - An invite's link is shown once, in the answer that made it, with Copy; afterwards the
//   invites list shows its role, uses left and expiry, never the code, and Revoke.
// - The people list is what GET /api/adventures/{id}/members answers, the host first; the
//   host changes a member's role, removes a member, or ends sharing (after asking). Every
//   list is read again after a change, and when the feed says the members changed.
// - "Round-robin" is the adventure's `turn_order` (PATCH /api/adventures/{id}); refused,
//   the box goes back.
// - The first invite starts the page following the adventure's feed ("sharing-started").
import { h, fill, api, attempt, emit, notify, on, plural, when } from "./ui.js";
import { block, confirmButton, refresher } from "./panel-kit.js";

const ROLES = ["player", "viewer"]; // what an invite admits as
const MEMBER_ROLES = [["cohost", "co-host"], ["player", "player"], ["viewer", "viewer"]];
const EXPIRY = [[24, "1 day"], [72, "3 days"], [168, "a week"], [720, "30 days"]];

function select(label, options, value) {
  const el = h("select", { attrs: { "aria-label": label } },
    options.map(([v, text]) => h("option", { value: String(v), text })));
  el.value = String(value);
  return el;
}

export function sharingPanel(ctx) {
  const base = () => `/api/adventures/${ctx.id}`;
  const made = h("div", { class: "invite-made" });
  const invites = h("ul", { class: "invites", attrs: { "aria-label": "Invites" } });
  const people = h("ul", { class: "people", attrs: { "aria-label": "People" } });
  const rounds = h("input", { type: "checkbox", id: "sharing-rounds" });
  const role = select("Invite as", ROLES.map((r) => [r, r]), "player");
  const expiry = select("Expires after", EXPIRY, 72);
  const uses = h("input", {
    type: "number", value: "1", min: "1", max: "7",
    attrs: { "aria-label": "Uses", inputmode: "numeric" },
  });
  const invite = h("button", { type: "button", class: "primary", text: "Make an invite link" });

  invite.addEventListener("click", async () => {
    invite.disabled = true;
    const body = { role: role.value, expires_in_hours: Number(expiry.value), uses: Number(uses.value) };
    const answer = await attempt(() => api("POST", `${base()}/invites`, body));
    invite.disabled = false;
    if (answer === undefined) return;
    showLink(answer);
    emit("sharing-started");
    refresh();
  });

  function showLink(answer) {
    const link = h("input", { type: "text", readonly: true, value: answer.url, attrs: { "aria-label": "Invite link" } });
    const copy = h("button", {
      type: "button", text: "Copy",
      on: {
        click: async () => {
          link.select();
          try {
            await navigator.clipboard.writeText(answer.url);
            notify("Invite link copied.");
          } catch {
            notify("Select the link and copy it."); // the clipboard can be refused
          }
        },
      },
    });
    fill(made, h("p", { class: "note small", text: "Shown once: copy it now and send it to whoever you invite." }),
      h("div", { class: "row" }, link, copy));
  }

  rounds.addEventListener("change", async () => {
    // What the host asked for, kept: a list read again meanwhile (the feed saying the members
    // changed) sets the box from the adventure as it was before this answer.
    const wanted = rounds.checked;
    const saved = await attempt(() => api("PATCH", base(), { turn_order: wanted ? "round_robin" : "free" }));
    if (saved === undefined) {
      rounds.checked = !wanted;
      return;
    }
    ctx.setAdventure(saved);
    rounds.checked = saved.turn_order === "round_robin";
    notify(rounds.checked ? "Players now take turns round-robin." : "Players act whenever they like.");
  });

  function inviteItem(row) {
    const open = !row.revoked && row.uses_left > 0 && new Date(row.expires_at) > new Date();
    const state = row.revoked ? "revoked" : !open ? "spent or expired" : `${plural(row.uses_left, "use")} left, until ${when(row.expires_at)}`;
    return h("li", { class: "invite", dataset: { inviteId: row.id } },
      h("span", { text: `${row.role} · ${state}` }),
      open ? h("button", {
        type: "button", class: "link", text: "Revoke",
        attrs: { "aria-label": `Revoke the ${row.role} invite` },
        on: { click: () => change(() => api("DELETE", `${base()}/invites/${row.id}`), "Invite revoked.") },
      }) : null);
  }

  function personItem(member) {
    const persona = member.persona && member.persona.name ? ` as ${member.persona.name}` : "";
    const item = h("li", { class: "person", dataset: { userId: member.user_id } },
      h("span", { class: "person-name", text: `${member.name}${persona}` }));
    if (member.role === "host") {
      item.append(h("span", { class: "badge", text: "host" }));
      return item;
    }
    const roleBox = select(`Role of ${member.name}`, MEMBER_ROLES, member.role);
    roleBox.addEventListener("change", () => change(
      () => api("PATCH", `${base()}/members/${member.user_id}`, { role: roleBox.value }),
      `${member.name} is now a ${roleBox.value}.`));
    item.append(roleBox, confirmButton({
      label: "Remove",
      question: `Remove ${member.name}?`,
      ariaLabel: `Remove ${member.name}`,
      onConfirm: () => change(() => api("DELETE", `${base()}/members/${member.user_id}`), `${member.name} removed.`),
    }));
    return item;
  }

  async function change(request, message) {
    const done = await attempt(request);
    if (done !== undefined) notify(message);
    refresh();
  }

  const end = confirmButton({
    label: "End sharing",
    question: "Remove everyone and every invite?",
    onConfirm: () => change(() => api("DELETE", `${base()}/members`), "Sharing ended."),
  });

  const el = h("div", { class: "panel-body" },
    block("Invite",
      h("p", { class: "muted small", text: "A link lets someone with an account here join this adventure, with a character of their own." }),
      h("div", { class: "row invite-form" }, role, expiry, uses, invite),
      made),
    block("People", people,
      h("label", { class: "inline small", attrs: { for: rounds.id } }, rounds,
        "Round-robin: each player acts once per round"),
      end),
    block("Invites", invites));

  const refresh = refresher(el, () => Promise.all([
    api("GET", `${base()}/members`), api("GET", `${base()}/invites`),
  ]), ([members, rows]) => {
    fill(people, members.map(personItem));
    fill(invites, rows.length ? rows.map(inviteItem) : h("li", { class: "muted small", text: "No invites yet." }));
    rounds.checked = Boolean(ctx.adventure && ctx.adventure.turn_order === "round_robin");
  });
  on("members-changed", refresh);

  return { el, refresh };
}

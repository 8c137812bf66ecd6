// The page of `xai serve` (docs/web.md): plain DOM, no framework, no build step.
// Every text that comes from the Agent (messages, facts, tool arguments) is put in the page
// as text (textContent / Text nodes), never as HTML.
"use strict";
(() => {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`).content;
  const agent = meta("xai-agent");
  const csrf = meta("xai-csrf");
  // Relative to the page's <base> (where the gateway is mounted): never an absolute path.
  const base = "agents/" + encodeURIComponent(agent);
  const $ = (id) => document.getElementById(id);

  // -- helpers -------------------------------------------------------------------------

  /** An element with attributes and children (strings become Text nodes: never HTML). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("data-")) node.setAttribute(key, String(value));
      else if (key in node) node[key] = value;
      else node.setAttribute(key, String(value));
    }
    node.append(...children.filter((c) => c !== null && c !== undefined));
    return node;
  }

  async function api(method, path, body) {
    const init = { method, headers: { "X-XAI-CSRF": csrf }, credentials: "same-origin" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(base + path, init);
    const text = await response.text();
    const data = text ? JSON.parse(text) : null;
    if (!response.ok) {
      const error = new Error((data && data.message) || response.statusText);
      error.status = response.status;
      error.type = data && data.type;
      throw error;
    }
    return data;
  }

  /** Replace the items of ``list`` keeping the keyboard's place: a redraw (a live update,
   * a reconnect) must not drop the focus to <body>. Items are matched by their ``key``
   * attribute, buttons by their place in the item. */
  function redraw(list, items, key) {
    const focused = document.activeElement;
    const item = focused && list.contains(focused) ? focused.closest(`[${key}]`) : null;
    const index = item ? Array.from(item.querySelectorAll("button")).indexOf(focused) : -1;
    list.replaceChildren(...items);
    if (index < 0) return;
    const again = list.querySelector(`[${key}="${CSS.escape(item.getAttribute(key))}"]`);
    const button = again && again.querySelectorAll("button")[index];
    if (button) button.focus();
  }

  const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "—");
  const number = (n) => Number(n || 0).toLocaleString();

  function notice(text) {
    $("live").textContent = text;
  }

  function failed(error) {
    if (error.type === "agent_not_found") unknownAgent();
    else notice("Error: " + error.message);
  }

  // -- tabs ----------------------------------------------------------------------------

  // False while the Agent does not exist: reads of it answer 404, and the first write that
  // means to (opening a Session, adding a wake-up) creates it.
  let known = true;
  const tabs = Array.from(document.querySelectorAll('[role="tab"]'));
  const loaders = {};

  function select(tab, focus) {
    for (const other of tabs) {
      const chosen = other === tab;
      other.setAttribute("aria-selected", String(chosen));
      other.tabIndex = chosen ? 0 : -1;
      $(other.getAttribute("aria-controls")).hidden = !chosen;
    }
    if (focus) tab.focus();
    const view = tab.id.slice(4);
    history.replaceState(null, "", location.pathname + location.search + "#" + view);
    if (loaders[view] && known) loaders[view]().catch(failed);
  }

  for (const tab of tabs) {
    tab.addEventListener("click", () => select(tab, false));
    tab.addEventListener("keydown", (event) => {
      const at = tabs.indexOf(tab);
      const next = {
        ArrowRight: tabs[(at + 1) % tabs.length],
        ArrowLeft: tabs[(at - 1 + tabs.length) % tabs.length],
        Home: tabs[0],
        End: tabs[tabs.length - 1],
      }[event.key];
      if (next) {
        event.preventDefault();
        select(next, true);
      }
    });
  }

  const visible = (view) => !$("view-" + view).hidden;

  // -- chat ----------------------------------------------------------------------------

  const transcript = $("transcript");
  const storageKey = "xai-session:" + document.baseURI + agent; // (two gateways, one origin)
  let session = null;
  let source = null;
  let lastSeq = 0;
  let turn = null; // the turn being shown: {li, blocks: Map}
  let leaving = false;
  for (const kind of ["beforeunload", "pagehide"]) {
    window.addEventListener(kind, () => {
      leaving = true;
    });
  }
  const helpers = new Map(); // helper Session id -> its stream and view (nested in a call)
  const helpersKey = (sessionId) => storageKey + ":helpers:" + sessionId;

  function setComposer(open, running) {
    $("message").disabled = !open;
    $("send").disabled = !open;
    $("close").disabled = !open;
    $("cancel").disabled = !(open && running);
  }

  /** A turn's view: its list item and one block per model round. */
  function newTurn(container, input, number_) {
    const li = el("li", { class: "turn", "data-turn": number_, "data-status": "running" });
    if (input) {
      const who = input.origin === "user" ? "You" : "Task (" + input.origin + ")";
      li.append(el("div", { class: "msg user" }, el("span", { class: "who" }, who), el("p", { class: "text" }, input.content)));
    }
    container.append(li);
    return { li, blocks: new Map() };
  }

  function block(view, body) {
    const key = body.query_id + ":" + body.round;
    let found = view.blocks.get(key);
    if (!found) {
      const thinking = el("details", { class: "thinking", hidden: true }, el("summary", {}, "Thinking"), el("p", {}));
      const text = el("p", { class: "text" });
      const tools = el("ul", { class: "tools", "aria-label": "Tool calls" });
      const div = el("div", { class: "msg assistant" }, el("span", { class: "who" }, "Agent"), thinking, text, tools);
      view.li.append(div);
      found = { div, thinking, text, tools };
      view.blocks.set(key, found);
    }
    return found;
  }

  /** JSON on one line when short, else indented; text that is not JSON as it is. */
  function pretty(value) {
    if (typeof value === "string") {
      try {
        value = JSON.parse(value);
      } catch (_) {
        return value;
      }
    }
    const line = JSON.stringify(value);
    return line.length <= 72 ? line : JSON.stringify(value, null, 1);
  }

  /** Show one Session event in ``view`` (a top-level turn, or a helper's). */
  function render(view, body) {
    switch (body.type) {
      case "text_delta":
        block(view, body).text.append(body.text);
        break;
      case "thinking_delta": {
        const thinking = block(view, body).thinking;
        thinking.hidden = false;
        thinking.lastChild.append(body.text);
        break;
      }
      case "tool_call_started": {
        const call = body.call;
        let task = null;
        try {
          task = call.name === "delegate" ? JSON.parse(call.arguments).task : null;
        } catch (_) {
          task = null;
        }
        const item = el(
          "li",
          { class: "tool", "data-call": call.id, "data-name": call.name, "data-task": task, "data-state": "running" },
          el("span", { class: "name" }, call.name),
          " ",
          el("span", { class: "state" }, "running…"),
          el("pre", { class: "args", "aria-label": "arguments" }, pretty(call.arguments)),
        );
        block(view, body).tools.append(item);
        if (call.name === "delegate") nestHelpers();
        break;
      }
      case "tool_call_finished": {
        const result = body.result;
        const item = view.li.querySelector(`li.tool[data-call="${CSS.escape(result.call_id)}"]`);
        if (!item) break;
        item.dataset.state = result.success ? "done" : "failed";
        item.querySelector(".state").textContent = result.success ? "done" : "failed";
        const shown = result.success ? pretty(result.result) : result.error || "failed";
        item.append(el("pre", { class: result.success ? "result" : "error", "aria-label": result.success ? "result" : "error" }, shown));
        break;
      }
      case "message_committed": {
        const message = body.message;
        if (message.role === "assistant" && message.interrupted) {
          block(view, body).div.dataset.interrupted = "true";
        }
        break;
      }
      default:
        break;
    }
  }

  function finishTurn(view, outcome) {
    view.li.dataset.status = outcome.status;
    if (outcome.status === "cancelled") {
      view.li.append(el("p", { class: "mark" }, "Cancelled: the partial answer is kept."));
    } else if (outcome.status !== "completed") {
      const why = outcome.error ? ": " + outcome.error.message : "";
      view.li.append(el("p", { class: "mark error" }, "Ended " + outcome.status + why));
    }
  }

  function onSessionEvent(message) {
    const data = JSON.parse(message.data);
    if (data.seq <= lastSeq) {
      transcript.dataset.repeats = String(Number(transcript.dataset.repeats) + 1);
      return;
    }
    if (lastSeq && data.seq !== lastSeq + 1) {
      transcript.dataset.gaps = String(Number(transcript.dataset.gaps) + 1);
    }
    lastSeq = data.seq;
    transcript.dataset.lastSeq = String(lastSeq);
    const body = data.event;
    switch (body.type) {
      case "turn_started":
        turn = newTurn(transcript, body.input, body.turn);
        setComposer(true, true);
        break;
      case "turn_done":
        if (turn) finishTurn(turn, body.outcome);
        turn = null;
        setComposer(true, false);
        break;
      case "candidates_proposed":
        transcript.append(el("li", { class: "note" }, `${body.candidates.length} point(s) to remember proposed`));
        break;
      case "compacted":
        transcript.append(el("li", { class: "note" }, `Older messages summarised (${body.removed_messages})`));
        break;
      case "events_dropped":
        transcript.append(el("li", { class: "note error" }, `${body.count} events were lost`));
        break;
      case "session_failed":
        transcript.append(el("li", { class: "note error" }, "Failed: " + body.error.message));
        break;
      case "session_closed":
        transcript.append(el("li", { class: "note" }, "Session closed (" + body.reason + ")"));
        endSession();
        break;
      default:
        if (turn) render(turn, body);
    }
  }

  const SESSION_KINDS = [
    "turn_started", "text_delta", "thinking_delta", "tool_call_started", "tool_call_finished",
    "message_committed", "query_done", "turn_done", "compacted", "candidates_proposed",
    "session_finalizing", "session_closed", "session_failed", "events_dropped",
  ];

  function follow(sessionId) {
    if (source) source.close();
    session = sessionId;
    dropHelpers();
    sessionStorage.setItem(storageKey, sessionId);
    lastSeq = 0;
    turn = null;
    transcript.replaceChildren();
    transcript.dataset.lastSeq = "0";
    $("session-line").textContent = "Session " + sessionId;
    setComposer(true, false);
    // From the first event kept; EventSource itself resumes after the last `id:` it saw
    // (Last-Event-ID) when the connection drops.
    source = new EventSource(`${base}/sessions/${encodeURIComponent(sessionId)}/events`);
    for (const kind of SESSION_KINDS) source.addEventListener(kind, onSessionEvent);
    // Its helpers seen before a reload: read again, each nested once its call is shown.
    for (const saved of JSON.parse(sessionStorage.getItem(helpersKey(sessionId)) || "[]")) {
      addHelper(saved.id, saved.task);
    }
    source.addEventListener("open", () => transcript.setAttribute("aria-busy", "false"));
    source.addEventListener("error", (event) => {
      if (leaving) return; // a reload or a new page: the Session is followed again there
      if (event.data) {
        const error = JSON.parse(event.data);
        transcript.append(el("li", { class: "note error" }, error.message));
      }
      if (source && source.readyState === EventSource.CLOSED) {
        // Refused (closed and no longer kept, unknown, expired): nothing more will come.
        // (A stream cut by leaving the page must not forget the Session: it is followed
        // again after a reload.)
        if (lastSeq === 0) sessionStorage.removeItem(storageKey);
        source = null;
        setComposer(false, false);
        $("session-line").textContent = "Session " + sessionId + " (its events are not available)";
      }
    });
  }

  /** The Agent's open Sessions (not the helpers: they show under their call), each with a
   * button that follows it: a new tab, or another device, picks up a conversation. */
  async function loadSessions() {
    const open = (await api("GET", "/sessions")).filter((s) => !s.parent_id);
    $("sessions-empty").hidden = open.length > 0;
    redraw($("sessions"), open.map(sessionItem), "data-session");
  }

  function sessionItem(s) {
    const current = s.session_id === session;
    const turns = s.turns === 1 ? "1 turn" : `${s.turns} turns`;
    const item = el("li", { "data-session": s.session_id, "data-state": s.state, "aria-current": current ? "true" : null },
      el("span", { class: "who" }, `Session ${s.session_id} · ${turns}` + (s.busy ? " · running" : "")),
      el("p", { class: "label" }, s.label || "(no message yet)"));
    const show = el("button", { type: "button", disabled: current, "aria-label": `Show Session ${s.session_id}` }, current ? "Shown" : "Show");
    show.addEventListener("click", () => {
      follow(s.session_id);
      loadSessions().catch(failed);
    });
    item.append(show);
    return item;
  }
  loaders.chat = () => Promise.all([loadSessions(), loadApprovals()]);

  // -- approvals (docs/approvals.md): tool calls that wait for a person ----------------

  /** The held calls of the Agent's Sessions, each with its arguments (as text) and the
   * buttons that decide it. */
  async function loadApprovals() {
    const pending = await api("GET", "/approvals");
    $("approvals-title").hidden = pending.length === 0;
    redraw($("approvals"), pending.map(approvalItem), "data-call");
  }

  function approvalItem(p) {
    const call = p.call;
    const reason = el("input", { "aria-label": `Reason to deny ${call.name}`, placeholder: "reason (optional)", maxLength: 2000 });
    const item = el("li", { "data-call": call.id, "data-session": p.session_id },
      el("span", { class: "who" }, `${call.name} · Session ${p.session_id}`),
      el("pre", { class: "args" }, pretty(call.arguments)),
      reason);
    const decide = async (approved) => {
      const path = `/sessions/${encodeURIComponent(p.session_id)}/approvals/${encodeURIComponent(call.id)}`;
      try {
        await api("POST", path, approved ? { approved } : { approved, reason: reason.value });
        item.dataset.decided = approved ? "approved" : "denied";
        await loadApprovals();
      } catch (error) {
        failed(error);
      }
    };
    const approve = el("button", { type: "button", "aria-label": `Approve ${call.name}` }, "Approve");
    const deny = el("button", { type: "button", "aria-label": `Deny ${call.name}` }, "Deny");
    approve.addEventListener("click", () => decide(true));
    deny.addEventListener("click", () => decide(false));
    item.append(approve, deny);
    return item;
  }

  function endSession() {
    if (source) source.close();
    source = null;
    sessionStorage.removeItem(storageKey);
    if (session) sessionStorage.removeItem(helpersKey(session));
    setComposer(false, false);
  }

  $("open-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const purpose = $("purpose").value.trim();
    try {
      const info = await api("POST", "/sessions", purpose ? { purpose } : {});
      created();
      follow(info.session_id);
      loadSessions().catch(failed);
      $("message").focus();
    } catch (error) {
      failed(error);
    }
  });

  $("send-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("message").value;
    if (!session || !text.trim()) return;
    try {
      await api("POST", `/sessions/${encodeURIComponent(session)}/messages`, { text });
      $("message").value = "";
    } catch (error) {
      failed(error);
    }
  });

  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("send-form").requestSubmit();
    }
  });

  $("cancel").addEventListener("click", () => {
    if (session) api("POST", `/sessions/${encodeURIComponent(session)}/cancel`).catch(failed);
  });

  $("close").addEventListener("click", () => {
    if (session) api("DELETE", `/sessions/${encodeURIComponent(session)}`).catch(failed);
  });

  // -- memory --------------------------------------------------------------------------

  function factMeta(fact) {
    const valid = `${when(fact.valid_from)} – ${fact.valid_to ? when(fact.valid_to) : "now"}`;
    const pairs = [
      ["Tier", fact.tier], ["Kind", fact.kind], ["Count", String(fact.count)],
      ["First seen", when(fact.first_seen)], ["Last seen", when(fact.last_seen)],
      ["Valid", valid], ["Status", fact.status],
    ];
    return el("dl", { class: "meta" }, ...pairs.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  }

  async function showDetail(fact, region, button) {
    const open = button.getAttribute("aria-expanded") === "true";
    button.setAttribute("aria-expanded", String(!open));
    region.hidden = open;
    if (open) return;
    const detail = await api("GET", "/facts/" + encodeURIComponent(fact.id));
    const evidence = detail.evidence.map((e) =>
      el("li", {}, el("span", { class: "who" }, `${e.speaker} · ${when(e.at)} · session ${e.session_id}`), el("p", { class: "text" }, e.text)),
    );
    if (detail.missing_evidence) evidence.push(el("li", { class: "muted" }, `${detail.missing_evidence} episode(s) no longer kept`));
    const history = detail.history.map((h) =>
      el("li", { "data-kind": h.kind }, el("strong", {}, h.kind), ` · ${when(h.at)}` + (h.session_id ? ` · session ${h.session_id}` : "") + (h.judge ? " · judged" : "") + " — ", h.reason),
    );
    region.replaceChildren(
      el("h3", {}, "Said in"), el("ul", { class: "evidence" }, ...evidence),
      el("h3", {}, "History"), el("ol", { class: "history" }, ...history),
    );
  }

  const FORGET_SCOPES = [
    ["fact", "The fact only", "It leaves search and the memory prefix; what was said stays searchable, and everything stays on disk."],
    ["evidence", "The fact and what was said", "The turns it came from leave search and the prefix too; the files on disk keep them."],
    ["erase", "Erase everywhere", "Its text and the turns it came from are removed from every file of the Agent (ledger, episodes, index, closed Sessions' journals and logs); the ledger keeps only a hash and the reason. It cannot be undone."],
  ];

  function forgetChoices(fact, forget, confirm) {
    const name = "scope-" + fact.id;
    const options = FORGET_SCOPES.map(([scope, label, removes], i) =>
      el("label", { class: "scope" },
        el("input", { type: "radio", name, value: scope, checked: i === 0 }),
        " ", el("strong", {}, label), el("span", { class: "removes" }, " — " + removes)),
    );
    const go = el("button", { type: "button", class: "danger" }, "Confirm forget");
    const cancel = el("button", { type: "button" }, "Cancel");
    cancel.addEventListener("click", () => {
      confirm.hidden = true;
      forget.setAttribute("aria-expanded", "false");
      forget.focus();
    });
    go.addEventListener("click", async () => {
      const scope = confirm.querySelector("input:checked").value;
      try {
        const at = Array.from($("facts").children).findIndex((li) => li.dataset.fact === fact.id);
        await api("DELETE", "/facts/" + encodeURIComponent(fact.id) + "?scope=" + scope);
        await loadFacts();
        notice(scope === "erase" ? "Erased everywhere." : "Forgotten: " + fact.text);
        // The list is drawn again: the keyboard goes on from the fact now in its place
        // (its Details, not its Forget: a second Enter must not forget another), else
        // from the heading, never lost to <body>.
        const next = $("facts").children[Math.max(0, Math.min(at, $("facts").children.length - 1))];
        (next ? next.querySelector("button") : $("facts-title")).focus();
      } catch (error) {
        failed(error);
      }
    });
    return [el("fieldset", {}, el("legend", {}, "Forget what?"), ...options), el("div", { class: "buttons" }, go, cancel)];
  }

  function factItem(fact) {
    const detailId = "fact-detail-" + fact.id;
    const region = el("div", { class: "detail", id: detailId, hidden: true, role: "region", "aria-label": "Fact details" });
    const details = el("button", { type: "button", "aria-expanded": "false", "aria-controls": detailId }, "Details");
    details.addEventListener("click", () => showDetail(fact, region, details).catch(failed));
    const forget = el("button", { type: "button", class: "danger", "aria-expanded": "false" }, "Forget");
    forget.setAttribute("aria-label", "Forget: " + fact.text);
    // Forgetting asks first, showing what each scope removes (Agent.forget's scopes).
    const confirmId = "fact-forget-" + fact.id;
    const confirm = el("div", { class: "confirm", id: confirmId, hidden: true, role: "group", "aria-label": "Forget this fact" });
    forget.setAttribute("aria-controls", confirmId);
    forget.addEventListener("click", () => {
      const open = confirm.hidden;
      confirm.hidden = !open;
      forget.setAttribute("aria-expanded", String(open));
      if (open) {
        confirm.replaceChildren(...forgetChoices(fact, forget, confirm));
        confirm.querySelector("input:checked").focus();
      }
    });
    return el("li", { class: "fact", "data-fact": fact.id, "data-tier": fact.tier },
      el("p", { class: "text" }, fact.text), factMeta(fact), el("div", { class: "buttons" }, details, forget), confirm, region);
  }

  async function loadFacts() {
    const facts = await api("GET", "/facts");
    redraw($("facts"), facts.map(factItem), "data-fact");
    $("facts-empty").hidden = facts.length > 0;
  }
  loaders.memory = loadFacts;

  $("search-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = $("search").value.trim();
    if (!q) return;
    try {
      const hits = await api("GET", "/memory/search?q=" + encodeURIComponent(q));
      // The order is the answer: the search fuses meaning, words, time and who said it, so
      // one part's score (cosine, or a z-score below zero) would contradict the order shown.
      const items = hits.map((hit, i) =>
        hit.kind === "fact"
          ? el("li", { class: "hit" }, el("span", { class: "who" }, `#${i + 1} · fact · ${hit.fact.tier}`), el("p", { class: "text" }, hit.fact.text))
          : el("li", { class: "hit" }, el("span", { class: "who" }, `#${i + 1} · said by ${hit.episode.speaker} · ${when(hit.episode.at)}`), el("p", { class: "text" }, hit.episode.text)),
      );
      if (!items.length) items.push(el("li", { class: "muted" }, "Nothing found."));
      $("hits").replaceChildren(...items);
    } catch (error) {
      failed(error);
    }
  });

  // -- wake-ups ------------------------------------------------------------------------

  function wakeupRow(w) {
    const state = w.finished ? "finished" : w.paused ? "paused" : "active";
    const toggle = el("button", { type: "button" }, w.paused ? "Resume" : "Pause");
    toggle.setAttribute("aria-label", (w.paused ? "Resume " : "Pause ") + w.id);
    toggle.addEventListener("click", async () => {
      try {
        await api("POST", `/wakeups/${encodeURIComponent(w.id)}/${w.paused ? "resume" : "pause"}`);
        await loadWakeups();  // (drawn again: the keyboard stays on this wake-up's button)
      } catch (error) {
        failed(error);
      }
    });
    return el("tr", { "data-wakeup": w.id, "data-state": state },
      el("th", { scope: "row" }, w.id, w.text ? el("span", { class: "muted block" }, w.text) : null),
      el("td", {}, w.trigger), el("td", { class: "next" }, w.paused ? "—" : when(w.next_at)),
      el("td", {}, String(w.runs)), el("td", { class: "state" }, state), el("td", {}, toggle));
  }

  async function loadWakeups() {
    const list = await api("GET", "/wakeups");
    redraw($("wakeups").tBodies[0], list.map(wakeupRow), "data-wakeup");
    $("wakeups-empty").hidden = list.length > 0;
  }
  loaders.wakeups = loadWakeups;

  // The form: the fields of the chosen trigger only (the others hidden and disabled, so
  // the browser neither shows nor checks them).
  const kindField = $("wakeup-kind");
  function showKind() {
    for (const node of $("wakeup-form").querySelectorAll("[data-kind]")) {
      const chosen = node.dataset.kind === kindField.value;
      node.hidden = !chosen;
      if (node.tagName === "INPUT") node.disabled = !chosen;
    }
  }
  kindField.addEventListener("change", showKind);
  showKind();

  function trigger(kind) {
    const minutes = (id) => Number($(id).value) * 60;
    switch (kind) {
      case "every": return { type: "every", seconds: minutes("wakeup-every") };
      case "at": return { type: "at", time: new Date($("wakeup-at").value).getTime() / 1000 };
      case "cron": return { type: "cron", expression: $("wakeup-cron").value.trim() };
      case "idle": return { type: "idle", seconds: minutes("wakeup-idle") };
      case "event": return { type: "event", name: $("wakeup-event").value.trim() };
      default: throw new Error("unknown trigger " + kind);
    }
  }

  $("wakeup-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const id = $("wakeup-id").value.trim();
    try {
      const body = { id, trigger: trigger(kindField.value), text: $("wakeup-text").value.trim() };
      const added = await api("POST", "/wakeups", body);
      created();
      await loadWakeups();
      notice(`Wake-up ${added.id} added: next ${added.next_at ? when(added.next_at) : "when it is due"}`);
      $("wakeup-id").value = "";
      $("wakeup-text").value = "";
    } catch (error) {
      failed(error);
    }
  });

  const fired = new Map(); // wake-up Session id -> its list item

  function firedItem(sessionId, purpose) {
    let item = fired.get(sessionId);
    if (!item) {
      item = el("li", { class: "fired-session", "data-session": sessionId, "data-state": "running" },
        el("span", { class: "who" }, `${new Date().toLocaleString()} · session ${sessionId}`),
        el("p", { class: "purpose" }, purpose || ""), el("p", { class: "text answer" }));
      fired.set(sessionId, item);
      $("fired").prepend(item);
    }
    return item;
  }

  // -- usage ---------------------------------------------------------------------------

  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    node.append(...children);
    return node;
  }

  function chart(days) {
    const figure = $("chart");
    if (!days.length) {
      figure.replaceChildren(el("figcaption", { class: "muted" }, "No tokens spent yet."));
      return;
    }
    const shown = days.slice(-14);
    const width = 320, height = 160, pad = 24, gap = 4;
    const top = Math.max(...shown.map((d) => d.prompt_tokens + d.completion_tokens), 1);
    const bar = Math.min(36, (width - pad) / shown.length - gap);
    const scale = (height - 2 * pad) / top;
    const parts = [svg("line", { x1: pad, y1: height - pad, x2: width, y2: height - pad, class: "axis" })];
    shown.forEach((d, i) => {
      const x = pad + i * (bar + gap);
      const p = d.prompt_tokens * scale, c = d.completion_tokens * scale;
      const total = d.prompt_tokens + d.completion_tokens;
      const label = `${d.day}: ${number(total)} tokens (${number(d.prompt_tokens)} prompt, ${number(d.completion_tokens)} completion)`;
      parts.push(svg("g", { class: "day" },
        svg("title", {}, label),
        svg("rect", { x, y: height - pad - p, width: bar, height: p, class: "prompt" }),
        svg("rect", { x, y: height - pad - p - c, width: bar, height: c, class: "completion" }),
        svg("text", { x: x + bar / 2, y: height - pad + 14, "text-anchor": "middle" }, d.day.slice(5))));
    });
    parts.push(svg("text", { x: 2, y: pad - 8 }, number(top)));
    const summary = shown.map((d) => `${d.day} ${number(d.prompt_tokens + d.completion_tokens)}`).join(", ");
    const image = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Tokens per day: " + summary }, ...parts);
    figure.replaceChildren(image, el("figcaption", {}, el("span", { class: "key prompt" }, "prompt"), " ", el("span", { class: "key completion" }, "completion")));
  }

  async function loadUsage() {
    const report = await api("GET", "/usage");
    chart(report.days);
    const rows = report.sessions.map((s) =>
      el("tr", { "data-session": s.session_id },
        el("th", { scope: "row" }, s.parent_id ? "↳ " : "", el("span", { class: "label" }, s.label || s.session_id), el("span", { class: "muted block" }, s.session_id)),
        el("td", {}, when(s.created_at)), el("td", {}, s.origin || "—"), el("td", {}, String(s.turns)),
        el("td", {}, number(s.usage.prompt_tokens)), el("td", {}, number(s.usage.completion_tokens)),
        el("td", { class: "total" }, number(s.usage.prompt_tokens + s.usage.completion_tokens))));
    $("usage").tBodies[0].replaceChildren(...rows);
  }
  loaders.usage = loadUsage;

  // -- mood ----------------------------------------------------------------------------

  const signed = (x) => (x >= 0 ? "+" : "−") + Math.abs(Number(x)).toFixed(2);
  const feeling = (m) => `valence ${signed(m.valence)}, arousal ${signed(m.arousal)}` +
    (Object.keys(m.emotions || {}).length ? " · " + Object.entries(m.emotions).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ") : "");

  function moodChart(history) {
    const figure = $("mood-chart");
    if (!history.length) {
      figure.replaceChildren(el("figcaption", { class: "muted" }, "Nothing to chart yet."));
      return;
    }
    const points = [{ at: history[0].before.at, state: history[0].before }, ...history.map((e) => ({ at: e.at, state: e.after }))];
    const width = 320, height = 160, pad = 24;
    const x = (i) => pad + (points.length > 1 ? (i * (width - pad - 6)) / (points.length - 1) : 0);
    const y = (v) => height / 2 - v * (height / 2 - pad / 2);
    const path = (who) => points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p.state[who].valence).toFixed(1)}`).join(" ");
    const parts = [
      svg("line", { x1: pad, y1: y(0), x2: width, y2: y(0), class: "axis" }),
      svg("text", { x: 2, y: y(1) + 4 }, "+1"), svg("text", { x: 2, y: y(0) + 3 }, "0"), svg("text", { x: 2, y: y(-1) }, "−1"),
      svg("path", { d: path("agent"), class: "mood-agent" }),
      svg("path", { d: path("user"), class: "mood-user" }),
    ];
    points.forEach((p, i) => {
      const label = `${when(p.at)}: user ${signed(p.state.user.valence)}, agent ${signed(p.state.agent.valence)}`;
      parts.push(svg("circle", { cx: x(i), cy: y(p.state.user.valence), r: 3, class: "mood-user" }, svg("title", {}, label)));
    });
    const summary = points.map((p) => signed(p.state.user.valence)).join(", ");
    const image = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "The user's valence after each conversation: " + summary }, ...parts);
    figure.replaceChildren(image, el("figcaption", {}, el("span", { class: "key mood-user" }, "user"), " ", el("span", { class: "key mood-agent" }, "agent")));
  }

  async function loadMood() {
    const view = await api("GET", "/mood");
    $("mood-user").textContent = view.enabled ? feeling(view.user) : "mood is off";
    $("mood-agent").textContent = view.enabled ? feeling(view.agent) : "—";
    $("mood-baseline").textContent = feeling(view.baseline);
    moodChart(view.history);
    const rows = [];
    for (const entry of view.history.slice().reverse()) {
      for (const d of entry.deltas) {
        rows.push(el("tr", { "data-session": entry.session_id },
          el("th", { scope: "row" }, entry.session_id), el("td", {}, when(entry.at)), el("td", {}, String(d.turn)),
          el("td", {}, d.who), el("td", {}, signed(d.valence)), el("td", {}, signed(d.arousal)),
          el("td", {}, `${d.source} (${Math.round(d.confidence * 100)}%)`)));
      }
    }
    $("mood-empty").hidden = rows.length > 0;
    $("mood-deltas").tBodies[0].replaceChildren(...rows);
  }
  loaders.mood = loadMood;

  // -- the Agent's live events ---------------------------------------------------------

  function helperEvent(helper, body) {
    if (body.type === "turn_started") helper.view = newTurn(helper.container, body.input, body.turn);
    else if (body.type === "turn_done" && helper.view) finishTurn(helper.view, body.outcome);
    else if (helper.view) render(helper.view, body);
  }

  /** Follow helper ``id`` of this Session (its ``task``) on its own event stream, which
   * the host keeps from its first event: resumable like the Session's, and read again
   * after a reload (the tab keeps the helpers' ids with the Session's). */
  function addHelper(id, task) {
    if (helpers.has(id)) return;
    const helper = { task, container: null, view: null, queue: [], lastSeq: 0, source: null };
    helpers.set(id, helper);
    const saved = JSON.parse(sessionStorage.getItem(helpersKey(session)) || "[]");
    if (!saved.some((h) => h.id === id)) {
      saved.push({ id, task });
      sessionStorage.setItem(helpersKey(session), JSON.stringify(saved));
    }
    const stream = new EventSource(`${base}/sessions/${encodeURIComponent(id)}/events`);
    helper.source = stream;
    const onEvent = (message) => {
      const data = JSON.parse(message.data);
      if (data.seq <= helper.lastSeq) return; // (shown already)
      helper.lastSeq = data.seq;
      if (data.event.type === "session_closed") stream.close(); // nothing more will come
      if (helper.container) helperEvent(helper, data.event);
      else helper.queue.push(data.event);
    };
    for (const kind of SESSION_KINDS) stream.addEventListener(kind, onEvent);
    nestHelpers();
  }

  function dropHelpers() {
    for (const helper of helpers.values()) if (helper.source) helper.source.close();
    helpers.clear();
  }

  /** Put each helper not yet shown under the running delegate call of its task. */
  function nestHelpers() {
    for (const [id, helper] of helpers) {
      if (helper.container) continue;
      const calls = Array.from(transcript.querySelectorAll('li.tool[data-name="delegate"]'));
      const free = calls.filter((c) => !c.querySelector(".helper"));
      const call =
        free.find((c) => c.dataset.task === helper.task && c.dataset.state === "running") ||
        free.find((c) => c.dataset.task === helper.task) ||
        free.filter((c) => c.dataset.state === "running").pop();
      if (!call) continue;
      helper.container = el("ol", { class: "helper", "aria-label": "Helper Session " + id });
      call.append(helper.container);
      for (const body of helper.queue.splice(0)) helperEvent(helper, body);
    }
  }

  function onAgentEvent(message) {
    const data = JSON.parse(message.data);
    const body = data.event;
    const id = data.session_id;
    if (visible("chat") && ["session_opened", "session_ended", "turn_started", "turn_done"].includes(body.type)) {
      loadSessions().catch(failed); // (the list: which are open, their turns)
    }
    switch (body.type) {
      case "session_opened":
        if (body.parent_id && body.parent_id === session) {
          // A helper of this Session: nested under its delegate call, now or once that
          // call is shown (separate connections: either may come first).
          addHelper(id, body.purpose);
        } else if (!body.parent_id && body.origin === "agent") {
          firedItem(id, body.purpose);
          if (visible("wakeups")) loadWakeups().catch(failed);
        }
        break;
      case "wakeup_fired": {
        const item = firedItem(id, body.input);
        item.querySelector(".who").append(` · ${body.wakeup_id} (${body.reason})`);
        break;
      }
      case "session_ended": {
        const item = fired.get(id);
        if (item) item.dataset.state = body.reason;
        if (visible("usage")) loadUsage().catch(failed);
        break;
      }
      case "memory_decided":
        if (visible("memory")) loadFacts().catch(failed);
        break;
      case "approval_requested":
      case "approval_decided":
        loadApprovals().catch(failed);
      case "mood_changed":
        if (visible("mood")) loadMood().catch(failed);
        break;
      default: {
        // (A helper's events come on its own stream.)
        if (fired.has(id) && body.type === "text_delta") {
          fired.get(id).querySelector(".answer").append(body.text);
        }
      }
    }
  }

  const AGENT_KINDS = ["session_opened", "session_ended", "memory_decided", "wakeup_fired", "wakeup_skipped", "approval_requested", "approval_decided", "mood_changed", ...SESSION_KINDS];
  let agentSource = null;
  let reconnecting = false;

  /** The Agent's live events (EventSource reconnects by itself after a network error). */
  function listen() {
    agentSource = new EventSource(base + "/events");
    for (const kind of AGENT_KINDS) agentSource.addEventListener(kind, onAgentEvent);
    agentSource.addEventListener("open", opened);
    agentSource.addEventListener("error", () => {
      if (leaving) return;
      if (agentSource.readyState === EventSource.CLOSED) {
        checkKnown(); // refused, not cut: EventSource does not try again
        return;
      }
      document.body.dataset.live = "false";
      notice("Reconnecting…");
    });
  }

  /** Refused: the Agent may not exist yet (then ``failed`` says so); else reload. */
  async function checkKnown() {
    try {
      await api("GET", "/sessions");
      document.body.dataset.live = "false";
      notice("The Agent's events were refused: reload the page");
    } catch (error) {
      failed(error);
    }
  }

  /** The Agent does not exist (yet): nothing to read or listen to until a write creates it. */
  function unknownAgent() {
    known = false;
    $("sessions-empty").hidden = false;
    $("sessions-empty").textContent = "A new Agent: opening a Session creates it.";
    document.body.dataset.live = "true"; // (nothing to listen to yet)
    document.body.dataset.agent = "new";
    notice("New Agent: opening a Session creates it");
  }

  /** The Agent exists now (a write created it): listen to it, read its views. */
  function created() {
    if (known) return;
    known = true;
    delete document.body.dataset.agent;
    $("sessions-empty").textContent = "None open.";
    listen();
  }

  function opened() {
    notice("Live");
    document.body.dataset.live = "true";
    if (reconnecting) {
      // The Agent's stream is live only (no Last-Event-ID): what happened while the page
      // was away (a wake-up fired, a fact decided) is read again from the views.
      const view = tabs.find((t) => t.getAttribute("aria-selected") === "true").id.slice(4);
      if (loaders[view]) loaders[view]().catch(failed);
    }
    reconnecting = true;
  }
  listen();

  // -- start ---------------------------------------------------------------------------

  const kept = sessionStorage.getItem(storageKey);
  if (kept) follow(kept);
  const start = tabs.find((t) => "#" + t.id.slice(4) === location.hash) || tabs[0];
  select(start, false);
})();

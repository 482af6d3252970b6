// flume monitor: keeps an open page live. No framework, nothing fetched from elsewhere.
// It listens to the monitor's server-sent events (one poll of the journals for every page),
// shows each event of the page's place as it comes (as text, never as markup), and fetches
// the page's live parts again, drawn and escaped by the server, keeping what a person typed.
(() => {
  "use strict";
  const body = document.body;
  const live = body.dataset.live || "";
  const place = body.dataset.place || "";
  const events = document.getElementById("events");
  const drawn = new Map();
  const state = { events: 0, refreshed: 0, supervisor: 0, last: null, open: false };
  window.flumeMonitor = state;
  let pending = null;

  function keep(region) {
    const typed = [];
    for (const field of region.querySelectorAll("input, textarea")) {
      if (field.type === "hidden") continue;
      if (field.type === "radio") {
        if (field.checked) typed.push([field.id, true]);
      } else if (field.value) {
        typed.push([field.id, field.value]);
      }
    }
    const focused = region.contains(document.activeElement) ? document.activeElement.id : "";
    return { typed, focused };
  }

  function restore(kept) {
    for (const [id, value] of kept.typed) {
      const field = id && document.getElementById(id);
      if (!field) continue;
      if (value === true) field.checked = true;
      else field.value = value;
    }
    const again = kept.focused && document.getElementById(kept.focused);
    if (again) again.focus();
  }

  function put(id, html) {
    const region = document.getElementById(id);
    if (!region || drawn.get(id) === html) return;
    const kept = keep(region);
    const open = Array.from(region.querySelectorAll("details[open]"), (each) => each.id);
    region.innerHTML = html;
    for (const each of open) {
      const details = each && document.getElementById(each);
      if (details) details.open = true;
    }
    restore(kept);
    drawn.set(id, html);
  }

  async function refresh() {
    try {
      const answer = await fetch(live, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (!answer.ok) return;
      const data = await answer.json();
      for (const [id, html] of Object.entries(data.regions)) put(id, html);
      state.refreshed += 1;
    } catch (error) {
      // The monitor went away; the events' source tries again by itself.
    }
  }

  function schedule() {
    if (pending !== null) return;
    pending = setTimeout(() => {
      pending = null;
      refresh();
    }, 80);
  }

  function show(said) {
    const item = document.createElement("li");
    const when = document.createElement("time");
    when.textContent = said.when;
    const kind = document.createElement("span");
    kind.className = "event event-" + said.event;
    kind.textContent = said.event;
    const where = document.createElement("span");
    where.className = "where";
    where.textContent = said.stage || "";
    const text = document.createElement("span");
    text.className = "text";
    text.textContent = said.text;
    item.append(when, " ", kind, " ", where, " ", text);
    events.append(item);
    while (events.children.length > 500) events.firstElementChild.remove();
    events.parentElement.scrollTop = events.parentElement.scrollHeight;
  }

  if (live && window.EventSource) {
    const asked = new URLSearchParams({ after: body.dataset.seen || "" });
    if (place) asked.set("place", place);
    const source = new EventSource("/stream?" + asked.toString());
    source.addEventListener("open", () => {
      state.open = true;
    });
    source.addEventListener("flume", (message) => {
      const said = JSON.parse(message.data);
      state.events += 1;
      state.last = said;
      if (events && said.address === place) show(said);
      schedule();
    });
    source.addEventListener("supervisor", () => {
      state.supervisor += 1;
      schedule();
    });
  }
  const said = document.getElementById("said");
  if (said) said.focus();
})();

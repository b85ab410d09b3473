// Live validators: the phases of the validators this installation manages,
// as they change, from release 1.11's watch stream (GET /api/watch/validators,
// Server-Sent Events). EventSource cannot send the Authorization header, so
// the stream is read with fetch; after an interruption the page reconnects
// with Last-Event-ID and gets only what changed meanwhile. The token comes
// from the fragment (#token=..., never sent to a server), the form, or the
// documentation page's saved authorization.
(function () {
  "use strict";
  const fragment = new URLSearchParams(location.hash.slice(1));
  const form = document.getElementById("connect");
  const status = document.getElementById("status");
  const body = document.getElementById("validators");
  const root = location.pathname.replace(/\/docs-ui\/.*$/, "");
  let token = fragment.get("token") || saved();
  if (fragment.has("token")) {
    history.replaceState(null, "", location.pathname + location.search);
  }
  document.getElementById("token").value = token || "";
  // history: every phase shown, in order ("name PHASE"), for a reader of the page.
  const page = (window.liveValidators = { history: [], events: 0, generation: 0 });

  function saved() {
    try {
      const a = JSON.parse(localStorage.getItem("authorized") || "{}");
      return (a.bearerAuth && a.bearerAuth.value) || "";
    } catch (e) {
      return "";
    }
  }

  function setStatus(state, text) {
    status.dataset.state = state;
    status.textContent = text;
  }

  function row(name) {
    let tr = body.querySelector('tr[data-name="' + CSS.escape(name) + '"]');
    if (!tr) {
      tr = document.createElement("tr");
      tr.dataset.name = name;
      for (const cls of ["name", "phase", "reason"]) {
        const td = document.createElement("td");
        td.className = cls;
        tr.appendChild(td);
      }
      tr.cells[0].textContent = name;
      const after = [...body.rows].find((r) => r.dataset.name > name);
      body.insertBefore(tr, after || null);
    }
    return tr;
  }

  function handle(block) {
    const ev = { event: "message", data: "", id: null };
    for (const line of block.split("\n")) {
      const i = line.indexOf(":");
      if (i === 0) continue; // a comment: the heartbeat
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
      if (field === "event") ev.event = value;
      else if (field === "data") ev.data += value;
      else if (field === "id") ev.id = value;
    }
    if (ev.id) lastId = ev.id;
    page.events++;
    const data = ev.data ? JSON.parse(ev.data) : {};
    switch (ev.event) {
      case "reset":
        body.replaceChildren();
        break;
      case "validator": {
        const tr = row(data.name);
        if (tr.dataset.phase !== data.phase) page.history.push(data.name + " " + data.phase);
        tr.dataset.phase = data.phase;
        tr.cells[1].textContent = data.phase;
        tr.cells[2].textContent = data.reason ? data.reason + (data.message ? ": " + data.message : "") : "";
        break;
      }
      case "deleted": {
        const tr = body.querySelector('tr[data-name="' + CSS.escape(data.name) + '"]');
        if (tr) tr.remove();
        break;
      }
      case "synced":
        setStatus("live", "Live: phases change here as they change in the cluster.");
        break;
    }
  }

  let lastId = null;

  async function follow(generation) {
    while (generation === page.generation) {
      try {
        const headers = { Authorization: "Bearer " + token, Accept: "text/event-stream" };
        if (lastId) headers["Last-Event-ID"] = lastId;
        const resp = await fetch(root + "/api/watch/validators", { headers: headers, cache: "no-store" });
        if (resp.status === 401) {
          setStatus("unauthorized", "The token was refused (401): enter another.");
          return;
        }
        if (!resp.ok) throw new Error("HTTP " + resp.status);
        setStatus("open", "Connected, catching up…");
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done || generation !== page.generation) break;
          buf += value;
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            handle(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
        }
        setStatus("retrying", "The stream ended; reconnecting…");
      } catch (e) {
        setStatus("retrying", "Disconnected (" + e.message + "); reconnecting…");
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
  }

  function start() {
    page.generation++;
    lastId = null;
    body.replaceChildren();
    follow(page.generation);
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    token = document.getElementById("token").value.trim();
    if (token) start();
  });
  if (token) start();
})();

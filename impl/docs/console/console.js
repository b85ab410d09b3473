// The ledger console page: an xterm.js terminal bridged to
// GET /api/ws/ledger-console. Browsers cannot set Authorization on a
// WebSocket, so the token travels as the subprotocol pair "bearer, <token>".
// Parameters come from the query (validator) and the fragment (token=...):
// the fragment never reaches a server or its logs.
(function () {
  "use strict";
  const params = new URLSearchParams(location.search);
  const fragment = new URLSearchParams(location.hash.slice(1));
  const form = document.getElementById("connect");
  const status = document.getElementById("status");
  document.getElementById("validator").value = params.get("validator") || "";
  document.getElementById("token").value = fragment.get("token") || "";
  if (fragment.has("token")) {
    history.replaceState(null, "", location.pathname + location.search);
  }

  const term = new Terminal({ cols: 120, rows: 32, cursorBlink: true, convertEol: false });
  term.open(document.getElementById("terminal"));
  window.ledgerConsole = { term: term, socket: null };
  const encoder = new TextEncoder();
  let socket = null;
  const send = (data) => { if (socket && socket.readyState === WebSocket.OPEN) socket.send(data); };
  term.onData((d) => send(encoder.encode(d)));
  term.onResize(({ cols, rows }) => send(JSON.stringify({ type: "resize", cols: cols, rows: rows })));

  function open(validator, token) {
    if (socket) socket.close(1000, "reconnect");
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const root = location.pathname.replace(/\/docs-ui\/.*$/, "");
    const url = scheme + "//" + location.host + root + "/api/ws/ledger-console?validator=" + encodeURIComponent(validator);
    status.textContent = "Connecting to " + validator + "…";
    socket = new WebSocket(url, ["bearer", token]);
    window.ledgerConsole.socket = socket;
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      status.textContent = "Connected to the console of " + validator + ".";
      status.dataset.state = "open";
      send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
      term.focus();
    };
    socket.onmessage = (e) => term.write(typeof e.data === "string" ? e.data : new Uint8Array(e.data));
    socket.onclose = (e) => {
      status.dataset.state = "closed";
      // A refused handshake (401, 404) gives the browser no status: 1006.
      status.textContent = e.code === 1006
        ? "Connection refused: check the token and the validator name."
        : "Session closed (" + e.code + (e.reason ? ": " + e.reason : "") + ").";
    };
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    open(document.getElementById("validator").value, document.getElementById("token").value);
  });
  if (params.get("validator") && fragment.get("token")) {
    open(params.get("validator"), fragment.get("token"));
  }
})();

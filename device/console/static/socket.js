// edgevoice console: the shared WebSocket client and theme switch. No dependencies.
"use strict";

(function () {
  // ?theme=dark|light pins a theme (a kiosk may); otherwise the system's preference, followed live.
  const pinned = new URLSearchParams(location.search).get("theme");
  const root = document.documentElement;
  if (pinned === "dark" || pinned === "light") {
    root.dataset.theme = pinned;
  } else {
    const light = window.matchMedia("(prefers-color-scheme: light)");
    const follow = () => { root.dataset.theme = light.matches ? "light" : "dark"; };
    follow();
    light.addEventListener("change", follow);
  }

  // The login form returns to the page that sent the browser here.
  const form = document.getElementById("login-form");
  if (form) {
    const next = new URLSearchParams(location.search).get("next");
    const field = form.querySelector("input[name=next]");
    if (field) field.value = next || (location.pathname === "/login" ? "" : location.pathname);
  }
})();

// Connect to /v1/events and keep connected; onMessage gets each JSON object.
function consoleSocket(onMessage, onStatus) {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/v1/events";
  let delay = 500;
  let socket = null;
  const api = {
    send(message) {
      if (socket && socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify(message));
        return true;
      }
      return false;
    },
  };
  function connect() {
    let opened = false;
    socket = new WebSocket(url);
    socket.onopen = () => { opened = true; delay = 500; onStatus(true); };
    socket.onmessage = (event) => {
      try { onMessage(JSON.parse(event.data)); } catch (err) { console.error(err); }
    };
    socket.onclose = () => {
      onStatus(false);
      if (!opened) {
        // Refused before opening: if the session is gone, go and log in again.
        fetch(location.pathname, { credentials: "same-origin" }).then((r) => {
          if (r.status === 401) location.href = "/login?next=" + encodeURIComponent(location.pathname);
        }).catch(() => {});
      }
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
  return api;
}

const STATE_LABELS = {
  idle: "Ready",
  listening: "Listening",
  thinking: "Thinking",
  speaking: "Speaking",
  muted: "Microphone off",
  starting: "Starting",
};

function showState(element, state) {
  element.dataset.state = state;
  element.querySelector(".label").textContent = STATE_LABELS[state] || state;
}

// Split into words, keeping the spaces (so the reply reads exactly as written).
function splitWords(text) {
  return text.match(/\S+\s*/g) || [];
}

function normWord(word) {
  return word.toLowerCase().replace(/[^\p{L}\p{N}']/gu, "");
}

// How many words of `spoken` the visitor heard, given heard_text (a prefix of it).
function heardCount(spokenWords, heardText) {
  const heard = splitWords(heardText).map(normWord).filter((w) => w);
  let count = 0;
  let h = 0;
  for (const word of spokenWords) {
    if (h >= heard.length) break;
    const w = normWord(word);
    if (w && w !== heard[h]) break;
    count += 1;
    if (w) h += 1;
  }
  return h === 0 ? 0 : count;
}

// Render a reply into `element`: heard words highlighted, the cut-off part struck out.
function renderReply(element, sentences, heardWords, finished) {
  element.textContent = "";
  const words = splitWords(sentences.join(" "));
  const heard = heardWords === null ? words.length : heardWords;
  const cut = finished === "interrupted";
  if (heard > 0) {
    const span = document.createElement("span");
    span.className = "heard";
    span.textContent = words.slice(0, heard).join("").trimEnd();
    element.appendChild(span);
  }
  if (heard < words.length) {
    if (heard > 0) element.appendChild(document.createTextNode(" "));
    const rest = document.createElement(cut ? "del" : "span");
    rest.className = cut ? "cut" : "word";
    rest.textContent = words.slice(heard).join("").trimEnd();
    element.appendChild(rest);
  }
  if (cut) {
    const note = document.createElement("span");
    note.className = "cut-note";
    note.textContent = heard < words.length ? "Interrupted: the struck-out part was not heard." : "Interrupted.";
    element.appendChild(note);
  }
  element.scrollTop = element.scrollHeight;  // the latest words stay in view
}

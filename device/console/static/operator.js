// /operator: a person answers the visitor. First answer wins; "say nothing" is an answer.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const stateEl = $("state");
  const visitor = $("visitor");
  const status = $("turn-status");
  const answer = $("answer");
  const send = $("send");
  const sayNothing = $("say-nothing");
  const quick = $("quick");
  const heard = $("heard");
  const log = $("log");
  const mute = $("mute");
  const volume = $("volume");
  const commandStatus = $("command-status");
  let turn = null;
  let me = null;
  let muted = false;
  let deadline = 0;
  let replySentences = [];
  let commandId = 0;

  function addLog(who, text) {
    const item = document.createElement("li");
    const label = document.createElement("span");
    label.className = "who";
    label.textContent = who;
    item.appendChild(label);
    item.appendChild(document.createTextNode(text));
    log.prepend(item);
  }

  function setTurn(next) {
    turn = next;
    send.disabled = sayNothing.disabled = !turn;
    for (const button of quick.querySelectorAll("button")) button.disabled = !turn;
    status.classList.remove("taken");
    if (turn) {
      deadline = Date.now() + turn.timeout_s * 1000;
      tick();
      answer.focus();
    }
  }

  function tick() {
    if (!turn) return;
    const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    status.textContent = "Waiting for your answer: " + left + " s before the fallback answers.";
    if (left > 0) setTimeout(tick, 500);
  }

  function reply(text) {
    if (!turn) return;
    socket.send({ type: "operator.answer", turn_id: turn.turn_id, text: text });
  }

  function command(name, args) {
    commandId += 1;
    socket.send(Object.assign({ command: name, id: "op-" + commandId }, args || {}));
  }

  function onMessage(m) {
    switch (m.type) {
      case "console.hello":
        showState(stateEl, m.state);
        muted = m.mic_muted;
        mute.textContent = muted ? "Unmute microphone" : "Mute microphone";
        volume.value = Math.round((m.volume || 0) * 100);
        if (m.role === "full") socket.send({ type: "operator.join" });
        break;
      case "operator.hello":
        me = m.operator_id;
        quick.textContent = "";
        for (const text of m.quick_replies) {
          const button = document.createElement("button");
          button.type = "button";
          button.textContent = text;
          button.disabled = !turn;
          button.addEventListener("click", () => reply(text));
          quick.appendChild(button);
        }
        break;
      case "operator.count":
        $("operators").textContent = "\u00b7 " + m.operators + (m.operators === 1 ? " operator" : " operators");
        break;
      case "operator.turn":
        visitor.textContent = m.text;
        visitor.classList.remove("partial");
        setTurn(m);
        break;
      case "operator.taken":
        if (turn && turn.turn_id === m.turn_id) setTurn(null);
        status.classList.add("taken");
        status.textContent = (m.by === me ? "You answered" : "Taken by " + m.by) +
          (m.say_nothing ? ": said nothing." : ": \u201c" + m.text + "\u201d");
        addLog(m.by === me ? "You" : m.by, m.say_nothing ? "(said nothing)" : m.text);
        if (m.by === me) answer.value = "";
        break;
      case "operator.closed":
        if (turn && turn.turn_id === m.turn_id) setTurn(null);
        status.textContent = m.reason === "timeout" ? "Nobody answered in time: the fallback answered." :
          "The visitor's turn ended before an answer (" + m.reason + ").";
        break;
      case "operator.heard":
        heard.textContent = (m.heard_text || "(nothing)") + (m.interrupted ? "  \u2014 interrupted here" : "");
        break;
      case "operator.answer.result":
        if (!m.ok) status.textContent = m.error.message;
        break;
      case "state.changed":
        showState(stateEl, m.state);
        break;
      case "transcript.user.delta":
        visitor.textContent = m.text;
        visitor.classList.add("partial");
        break;
      case "transcript.user":
        visitor.textContent = m.text;
        visitor.classList.remove("partial");
        addLog("Visitor", m.text);
        break;
      case "reply.requested":
        replySentences = [];
        break;
      case "transcript.agent":
        replySentences.push(m.text);
        break;
      case "reply.done":
        if (m.status !== "completed" && typeof m.heard_text === "string") {
          heard.textContent = (m.heard_text || "(nothing)") + "  \u2014 " + m.status;
        } else if (m.status === "completed" && replySentences.length) {
          heard.textContent = replySentences.join(" ");
        }
        break;
      case "mic.muted":
        muted = m.muted;
        mute.textContent = muted ? "Unmute microphone" : "Mute microphone";
        break;
      case "volume.changed":
        volume.value = Math.round(m.level * 100);
        break;
      case "command.result":
        commandStatus.textContent = m.ok ? "" : m.error.message;
        break;
      case "console.error":
        commandStatus.textContent = m.error.message;
        break;
      default:
        break;
    }
  }

  const socket = consoleSocket(onMessage, (up) => {
    stateEl.classList.toggle("offline", !up);
    if (!up) { showState(stateEl, "starting"); setTurn(null); }
  });

  $("answer-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = answer.value.trim();
    if (text) reply(text);
  });
  answer.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("answer-form").requestSubmit();
    }
  });
  sayNothing.addEventListener("click", () => reply(""));
  $("interrupt").addEventListener("click", () => command("interrupt"));
  $("reset").addEventListener("click", () => command("reset_session"));
  mute.addEventListener("click", () => command("mute", { mic: !muted }));
  volume.addEventListener("change", () => command("set_volume", { level: Number(volume.value) / 100 }));
})();

// /captions: what the visitor says, live, and the reply as it is heard.
"use strict";

(function () {
  const stateEl = document.getElementById("state");
  const userEl = document.getElementById("user");
  const replyEl = document.getElementById("reply");
  const footer = document.getElementById("notice");
  let sentences = [];
  let replyId = null;
  let transcripts = true;
  let lastFinal = "";

  function onMessage(event) {
    switch (event.type) {
      case "console.hello":
        transcripts = event.transcripts;
        showState(stateEl, event.state);
        footer.textContent = transcripts ? "" :
          "Captions are off on this device ([console] transcripts = false).";
        break;
      case "state.changed":
        showState(stateEl, event.state);
        break;
      case "transcript.user.delta":
        userEl.textContent = event.text;
        userEl.classList.add("partial");
        break;
      case "transcript.user":
        lastFinal = event.text;
        userEl.textContent = event.text;
        userEl.classList.remove("partial");
        break;
      case "input.turn.discarded":
        userEl.textContent = lastFinal;
        userEl.classList.remove("partial");
        break;
      // The last reply stays on screen until the next one starts playing.
      case "transcript.agent":
        if (event.utterance_id !== replyId) { replyId = event.utterance_id; sentences = []; }
        sentences.push(event.text);
        renderReply(replyEl, sentences, null, null);
        break;
      case "reply.done":
        if (event.utterance_id !== replyId) break;
        if (event.status === "interrupted" && typeof event.heard_text === "string") {
          renderReply(replyEl, sentences, heardCount(splitWords(sentences.join(" ")), event.heard_text),
                      "interrupted");
        }
        break;
      case "session.reset":
        userEl.textContent = "";
        replyEl.textContent = "";
        sentences = [];
        lastFinal = "";
        break;
      default:
        break;
    }
  }

  consoleSocket(onMessage, (up) => {
    stateEl.classList.toggle("offline", !up);
    if (!up) footer.textContent = "Reconnecting to the device\u2026";
    else if (transcripts) footer.textContent = "";
  });
})();

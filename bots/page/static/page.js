// The live page: while a debate runs, the front streams what changed (Server-Sent Events).
// "main": everything inside <main>, rendered and made inert by the server; "live": a turn still being
// written; "end": the debate settled, the stream closes. Nothing from the stream is ever run.
(function () {
  "use strict";
  var main = document.getElementById("debate");
  if (!main || !main.dataset.events || !window.EventSource) { return; }
  var source = new EventSource(main.dataset.events);
  source.addEventListener("main", function (event) {
    main.innerHTML = event.data;
  });
  source.addEventListener("live", function (event) {
    var turn = JSON.parse(event.data);
    var box = document.getElementById("live-turns");
    if (!box) { return; }
    var holder = document.createElement("div");
    holder.innerHTML = turn.html;
    var fresh = holder.firstElementChild;
    var old = null;
    for (var i = 0; i < box.children.length; i++) {
      if (box.children[i].dataset.live === turn.key) { old = box.children[i]; }
    }
    if (old) { box.replaceChild(fresh, old); } else { box.appendChild(fresh); }
  });
  source.addEventListener("end", function () {
    source.close();
    delete main.dataset.events;
  });
})();

// perfkb: copy buttons, "/" to search, add form rows, confirm deletes. No dependencies.
(function () {
  "use strict";

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // http on a non-localhost host has no clipboard API: fall back to a selected textarea
    var ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.className = "visually-hidden";
    document.body.appendChild(ta);
    ta.select();
    try { document.execCommand("copy"); } finally { document.body.removeChild(ta); }
    return Promise.resolve();
  }

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest("button.copy");
    if (btn) {
      copyText(btn.getAttribute("data-copy") || "").then(function () {
        var label = btn.textContent;
        btn.textContent = "Copied";
        btn.classList.add("done");
        setTimeout(function () { btn.textContent = label; btn.classList.remove("done"); }, 1500);
      });
      return;
    }
    var add = ev.target.closest("button[data-add-row]");
    if (add) {
      var table = document.querySelector('table[data-rows="' + add.getAttribute("data-add-row") + '"] tbody');
      var last = table && table.lastElementChild;
      if (!last) return;
      var row = last.cloneNode(true);
      var n = table.children.length;
      row.querySelectorAll("input, select").forEach(function (el) {
        el.name = el.name.replace(/-\d+-/, "-" + n + "-");
        if (el.tagName === "INPUT") el.value = "";
      });
      table.appendChild(row);
      var first = row.querySelector("input");
      if (first) first.focus();
    }
  });

  document.addEventListener("submit", function (ev) {
    var msg = ev.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) ev.preventDefault();
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var boxes = document.querySelectorAll("[data-search-box]");
    var box = boxes[boxes.length - 1];
    if (box) {
      ev.preventDefault();
      box.focus();
      box.select();
    }
  });
})();

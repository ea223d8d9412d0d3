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
      row.querySelectorAll("input, select, textarea").forEach(function (el) {
        el.name = el.name.replace(/-\d+-/, "-" + n + "-");
        if (el.tagName !== "SELECT") el.value = "";
      });
      table.appendChild(row);
      var first = row.querySelector("input, textarea");
      if (first) first.focus();
    }
  });

  function mb(bytes) { return (bytes / 1048576).toFixed(1) + " MB"; }

  // The analyze form: sizes checked here, before anything is sent, so a paste that is too big is
  // refused at once, in words, with the limit and with the text still in the box.
  function sizeProblem(form) {
    var maxText = parseInt(form.getAttribute("data-max-text-bytes") || "0", 10);
    var maxFile = parseInt(form.getAttribute("data-max-file-bytes") || "0", 10);
    var problems = [];
    var ta = form.querySelector("textarea[name=text]");
    var file = form.querySelector("input[type=file]");
    var f = file && file.files && file.files[0];
    if (ta && maxText && !f) {
      var size = new Blob([ta.value]).size;
      if (size > maxText) {
        problems.push("The pasted text is " + mb(size) + "; this server takes at most " + mb(maxText) +
          " of pasted text. Upload it as a file (up to " + mb(maxFile) + ") or keep the part around " +
          "the incident. Your text is still in the box.");
      }
    }
    if (f && maxFile && f.size > maxFile) {
      problems.push("The file " + f.name + " is " + mb(f.size) + "; this server takes files of up to " +
        mb(maxFile) + ". Cut it to the part around the incident (head, tail or grep) and upload that.");
    }
    return problems.join(" ");
  }

  function showSizeProblem(form) {
    var box = document.querySelector("[data-size-error]");
    var problem = sizeProblem(form);
    if (box) {
      box.textContent = problem;
      box.hidden = !problem;
    }
    return problem;
  }

  document.addEventListener("change", function (ev) {
    var form = ev.target.closest && ev.target.closest("form[data-max-file-bytes]");
    if (form) showSizeProblem(form);
  });

  document.addEventListener("submit", function (ev) {
    var msg = ev.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { ev.preventDefault(); return; }
    if (ev.target.hasAttribute("data-max-file-bytes") && showSizeProblem(ev.target)) {
      ev.preventDefault();
    }
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

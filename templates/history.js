/* axl-eval report: History panel. Tap or focus a chart point to read its values. Text only
 * (textContent), no network. The panel is fully readable without this script. */
(function () {
  "use strict";
  var panel = document.getElementById("history");
  var readout = document.getElementById("history-readout");
  if (!panel || !readout) { return; }
  readout.hidden = false;
  readout.textContent = "Hover, tap or focus a point for its values.";
  var current = null;
  function show(target) {
    if (!target || !target.getAttribute) { return; }
    var tip = target.getAttribute("data-tip");
    if (!tip) { return; }
    if (current && current !== target) { current.classList.remove("h-on"); }
    current = target;
    target.classList.add("h-on");
    readout.textContent = tip;
    var href = target.getAttribute("data-href");
    if (href && /^https?:\/\//.test(href)) {
      var link = document.createElement("a");
      link.href = href;
      link.rel = "noopener noreferrer";
      link.textContent = "commit";
      readout.appendChild(document.createTextNode(" · "));
      readout.appendChild(link);
    }
  }
  panel.addEventListener("click", function (ev) { show(ev.target); });
  panel.addEventListener("focusin", function (ev) { show(ev.target); });
  panel.addEventListener("mouseover", function (ev) { show(ev.target); });
  panel.addEventListener("keydown", function (ev) {
    if (ev.key !== "ArrowRight" && ev.key !== "ArrowLeft") { return; }
    var t = ev.target;
    if (!t || !t.getAttribute || !t.getAttribute("data-tip")) { return; }
    var svg = t.ownerSVGElement;
    if (!svg) { return; }
    var pts = Array.prototype.slice.call(svg.querySelectorAll("[data-tip]"));
    var at = pts.indexOf(t) + (ev.key === "ArrowRight" ? 1 : -1);
    if (at >= 0 && at < pts.length) { ev.preventDefault(); pts[at].focus(); }
  });
})();

"use strict";
// The students table: a click on a header sorts on its column, a second click reverses; the filter hides rows.
(function () {
  var table = document.getElementById("students");
  var body = table.tBodies[0];
  var numeric = { score: true, duration: true };
  var headers = Array.prototype.slice.call(table.querySelectorAll("th[data-sort]"));
  var current = "student";
  var ascending = true;

  function value(row, key) {
    var text = row.getAttribute("data-" + key) || "";
    return numeric[key] ? parseFloat(text) : text.toLowerCase();
  }

  function compare(a, b, key) {
    var x = value(a, key), y = value(b, key);
    if (x < y) { return -1; }
    if (x > y) { return 1; }
    if (key === "student") { return 0; }
    return compare(a, b, "student");
  }

  function sortOn(key) {
    ascending = key === current ? !ascending : true;
    current = key;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) { return ascending ? compare(a, b, key) : -compare(a, b, key); });
    rows.forEach(function (row) { body.appendChild(row); });
    headers.forEach(function (th) {
      if (th.getAttribute("data-sort") === key) {
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      } else {
        th.removeAttribute("aria-sort");
      }
    });
  }

  headers.forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener("click", function () { sortOn(th.getAttribute("data-sort")); });
    th.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        sortOn(th.getAttribute("data-sort"));
      }
    });
  });

  var filter = document.getElementById("filter");
  var shown = document.getElementById("shown");
  function applyFilter() {
    var query = filter.value.trim().toLowerCase();
    var count = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var text = (row.getAttribute("data-student") + " " + row.getAttribute("data-status")).toLowerCase();
      row.hidden = query !== "" && text.indexOf(query) === -1;
      if (!row.hidden) { count += 1; }
    });
    shown.textContent = query === "" ? "" : count + " of " + body.rows.length + " shown";
  }
  filter.addEventListener("input", applyFilter);
  applyFilter();
}());

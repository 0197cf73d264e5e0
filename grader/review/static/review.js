// The review app's pages: marking by keyboard, saving with the version each save changed, conflicts shown.
"use strict";

const AUTHOR_KEY = "grader-review-author";
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const authorInput = document.getElementById("author");
// The marker's name is kept in this browser; inside a course platform's frame the tool gives it (readonly), and a
// browser that keeps no storage for a frame of another site refuses localStorage: the name is then typed per page.
function remembered() {
  try { return localStorage.getItem(AUTHOR_KEY) || ""; } catch (error) { return ""; }
}
if (!authorInput.readOnly) {
  authorInput.value = remembered();
  authorInput.addEventListener("change", () => {
    try { localStorage.setItem(AUTHOR_KEY, authorInput.value.trim()); } catch (error) { /* not kept: see above */ }
  });
}

function pageData() {
  const node = document.getElementById("page-data");
  return node ? JSON.parse(node.textContent) : null;
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf},
    body: JSON.stringify({...body, author: authorInput.value.trim()}),
    credentials: "same-origin",
  });
  let answer = {};
  try { answer = await response.json(); } catch (error) { answer = {error: `the app answered ${response.status}`}; }
  return {status: response.status, answer};
}

function typing(event) {
  const target = event.target;
  return target.matches("input, textarea, select") || target.isContentEditable;
}

// ----- the marking page -------------------------------------------------------------------------------------
function markingPage(data) {
  const state = document.getElementById("state");
  const conflict = document.getElementById("conflict");
  const items = [...document.querySelectorAll("input.item")];
  const comment = document.getElementById("comment");
  const adjustment = document.getElementById("adjustment");
  let version = data.mark ? data.mark.version : 0;
  let saving = Promise.resolve();

  function current() {
    return {
      question: data.question, index: data.index, base_version: version, answer_sha256: data.answer_sha256,
      items: items.filter(box => box.checked).map(box => Number(box.dataset.id)),
      adjustment: Number(adjustment.value || 0), comment: comment.value,
    };
  }

  function show(mark, points) {
    version = mark.version;
    items.forEach(box => { box.checked = mark.items.includes(Number(box.dataset.id)); });
    adjustment.value = mark.adjustment;
    comment.value = mark.comment;
    if (points !== undefined) {
      document.getElementById("points").textContent = `${points} / ${data.max}`;
    }
  }

  function save() {
    saving = saving.then(async () => {
      if (!authorInput.value.trim()) {
        state.textContent = "Type your name at the top first: every mark is kept with who gave it";
        authorInput.focus();
        return;
      }
      state.textContent = "Saving…";
      const sent = current();
      const {status, answer} = await post(data.save, sent);
      if (status === 200) {
        conflict.hidden = true;
        const changed = document.getElementById("answer-changed");
        if (changed) { changed.remove(); }  // marked again: the mark is for the answer as it is now
        show(answer.mark, answer.points);
        state.textContent = `Saved by ${answer.mark.author}`;
        document.getElementById("progress").textContent = `${answer.marked} of ${data.count} marked`;
      } else if (status === 409 && answer.answer_changed) {
        conflict.hidden = false;
        conflict.textContent = answer.error;
        state.textContent = "Not saved: the answer changed";
      } else if (status === 409) {
        const theirs = answer.conflict;
        conflict.hidden = false;
        conflict.textContent = theirs
          ? `${theirs.author} saved a mark for this answer at ${theirs.saved_at} while you were marking. Their mark is `
            + "shown now; yours was not saved. Make your change again to save it over theirs."
          : "This mark was removed while you were marking: yours was not saved.";
        if (theirs) { show(theirs); }
        state.textContent = "Not saved: conflict";
      } else {
        state.textContent = `Not saved: ${answer.error || status}`;
      }
    });
    return saving;
  }

  items.forEach(box => box.addEventListener("change", save));
  document.getElementById("save").addEventListener("click", save);
  comment.addEventListener("keydown", event => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); save(); }
  });
  adjustment.addEventListener("keydown", event => { if (event.key === "Enter") { save(); } });

  document.addEventListener("keydown", event => {
    if (event.key === "Escape") { document.activeElement.blur(); return; }
    if (typing(event) || event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (/^[1-9]$/.test(event.key)) {
      const box = items[Number(event.key) - 1];
      if (box) { box.checked = !box.checked; save(); }
    } else if (event.key === "j" && data.next) {
      saving.then(() => { location.href = data.next; });
    } else if (event.key === "k" && data.previous) {
      saving.then(() => { location.href = data.previous; });
    } else if (event.key === "c") {
      event.preventDefault(); comment.focus();
    } else if (event.key === "a") {
      event.preventDefault(); adjustment.focus();
    } else if (event.key === "s") {
      save();
    } else if (event.key === "h") {
      location.href = document.getElementById("toggle-names").href;
    } else { return; }
    event.preventDefault();
  });

  document.querySelectorAll("form.rubric-item").forEach(form => form.addEventListener("submit", async event => {
    event.preventDefault();
    const fields = new FormData(form);
    const {status, answer} = await post(data.save_item, {
      question: data.question, id: form.dataset.id ? Number(form.dataset.id) : null,
      base_version: Number(form.dataset.version), title: fields.get("title"), points: Number(fields.get("points")),
      comment: fields.get("comment"), deleted: fields.get("deleted") === "on",
    });
    if (status === 200) { location.reload(); return; }
    state.textContent = status === 409
      ? "Someone changed this rubric item in between: reload to see it" : `Not saved: ${answer.error || status}`;
  }));
}

// ----- a student's checks: overrides ------------------------------------------------------------------------
function studentPage(data) {
  document.querySelectorAll("form.override").forEach(form => form.addEventListener("submit", async event => {
    event.preventDefault();
    const fields = new FormData(form);
    const check = form.dataset.check;
    const points = fields.get("points");
    const stateNode = form.querySelector(".state");
    const {status, answer} = await post(data.save, {
      student: data.student, check_id: check, points: points === "" ? null : Number(points),
      reason: fields.get("reason"), base_version: data.versions[check],
    });
    if (status === 200) {
      data.versions[check] = answer.override.version;
      stateNode.textContent = `saved by ${answer.override.author}`;
    } else if (status === 409) {
      stateNode.textContent = `${answer.conflict ? answer.conflict.author : "someone"} changed it in between: reload`;
    } else {
      stateNode.textContent = `not saved: ${answer.error || status}`;
    }
  }));
}

const data = pageData();
if (data && data.save_item) { markingPage(data); } else if (data && data.versions) { studentPage(data); }

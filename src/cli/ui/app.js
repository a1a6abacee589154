// convdex ui: keyboard first, results as you type, copy buttons. The page works without it.
"use strict";
(function () {
  const q = document.getElementById("q");
  const form = document.getElementById("search");
  let selected = -1;
  let timer = null;
  let asked = 0;

  function hits() {
    return Array.from(document.querySelectorAll("#results .hit a, #results .session h3 a"));
  }

  function select(i) {
    const all = hits();
    if (all.length === 0) return;
    selected = Math.max(0, Math.min(all.length - 1, i));
    all.forEach((a, k) => a.classList.toggle("selected", k === selected));
    all[selected].focus();
  }

  function params() {
    const data = new URLSearchParams(new FormData(form));
    for (const [k, v] of Array.from(data.entries())) {
      if (v === "") data.delete(k);
    }
    return data;
  }

  async function live() {
    const data = params();
    const mine = ++asked;
    history.replaceState(null, "", "/search?" + data.toString());
    data.set("fragment", "1");
    const response = await fetch("/search?" + data.toString(), { credentials: "same-origin" });
    if (!response.ok || mine !== asked) return;
    const text = await response.text();
    const holder = document.getElementById("results");
    if (holder) {
      // The server escaped every piece of transcript text in this fragment.
      const doc = new DOMParser().parseFromString(text, "text/html");
      const fresh = doc.getElementById("results");
      if (fresh) holder.replaceWith(fresh);
      selected = -1;
    }
  }

  if (q && form) {
    q.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(live, 150);
    });
    form.querySelectorAll("select").forEach((s) => s.addEventListener("change", live));
  }

  document.addEventListener("keydown", (e) => {
    const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
    if (e.key === "/" && !typing && q) {
      e.preventDefault();
      q.focus();
      q.select();
    } else if (e.key === "ArrowDown" && (!typing || e.target === q)) {
      e.preventDefault();
      select(selected + 1);
    } else if (e.key === "ArrowUp" && !typing) {
      e.preventDefault();
      select(selected - 1);
    } else if (e.key === "Escape" && q) {
      q.focus();
    }
  });

  document.querySelectorAll("[data-copy]").forEach((button) => {
    button.addEventListener("click", async () => {
      const text = button.getAttribute("data-copy") || "";
      try {
        await navigator.clipboard.writeText(text);
        button.textContent = "Copied";
      } catch (_) {
        const code = document.getElementById("resume");
        if (code) {
          const range = document.createRange();
          range.selectNodeContents(code);
          const s = window.getSelection();
          s.removeAllRanges();
          s.addRange(range);
        }
        button.textContent = "Selected: press Ctrl-C";
      }
      button.setAttribute("data-copied", "1");
    });
  });
})();

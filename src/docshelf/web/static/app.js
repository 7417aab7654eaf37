// docshelf's web page: sign in with a token, then search, upload and browse the library.
// Plain ES modules, no build step; views live in search.js, upload.js and library.js.
//
// The token is kept in localStorage, so a citation opened in a new tab is signed in too.
// It is never sent by the browser on its own (so no cross-site request can use it), only
// scripts of this origin — which the Content-Security-Policy limits to these files — can
// read it, and signing out in one tab signs out every tab of this browser.

import { Api } from "./api.js";
import { AskView } from "./ask.js";
import { Catalog } from "./catalog.js";
import { LibraryView } from "./library.js";
import { NotebookPicker, NotebooksView, addToNotebook } from "./notebooks.js";
import { OpenView } from "./open.js";
import { SearchView } from "./search.js";
import { hashFor, parseHash, remember } from "./state.js";
import { UploadView } from "./upload.js";

const TOKEN_KEY = "docshelf.token";
const SIGNOUT_KEY = "docshelf.signout";
const VIEWS = ["search", "ask", "upload", "library", "notebooks", "open"];

const $ = (id) => document.getElementById(id);

class App {
  constructor() {
    this.api = null;
    this.views = null;
    this.routed = null; // the address last shown (route)
    $("signin-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.signIn($("token").value.trim());
    });
    $("sign-out").addEventListener("click", () => this.signOut());
    // A link to another address fires popstate, then hashchange: the second is the same
    // move, shown once (routed again, it would reset what was typed in between).
    window.addEventListener("hashchange", () => {
      if (window.location.hash !== this.routed) this.route();
    });
    // Back and Forward through states a view put in the address (state.js)
    window.addEventListener("popstate", () => this.route());
    document.addEventListener("keydown", (event) => this.shortcut(event));
    // Another tab signed out (or in with another token): follow it.
    window.addEventListener("storage", (event) => {
      if (event.key === TOKEN_KEY && this.api && event.newValue !== this.api.token) {
        this.signOut(event.newValue ? "" : "You signed out in another tab.");
      }
    });
    const saved = localStorage.getItem(TOKEN_KEY);
    if (saved) this.signIn(saved);
    else this.showSignIn();
  }

  async signIn(token) {
    const error = $("signin-error");
    error.textContent = "";
    if (!token) {
      error.textContent = "Paste your access token.";
      $("token").focus();
      return;
    }
    const api = new Api(token); // a refusal while signing in is answered below
    const catalog = new Catalog(api);
    const button = $("signin-form").querySelector("button[type=submit]");
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    $("signin-status").textContent = "Signing in…";
    try {
      await catalog.load();
    } catch (err) {
      localStorage.removeItem(TOKEN_KEY);
      this.showSignIn(
        err.status === 401 ? "This token is unknown or revoked." : `Cannot sign in: ${err.message}`,
      );
      return;
    } finally {
      button.disabled = false;
      button.removeAttribute("aria-busy");
      $("signin-status").textContent = "";
    }
    localStorage.setItem(TOKEN_KEY, token);
    $("token").value = "";
    api.onUnauthorized = () => this.signOut("Your token was refused; sign in again.");
    this.api = api;
    this.catalog = catalog;
    // Views are made once per page load: signing out reloads the page.
    this.picker = new NotebookPicker(api, (id) => this.pickNotebook(id));
    this.views = {
      search: new SearchView(api, catalog),
      ask: new AskView(api),
      upload: new UploadView(api, { onDone: () => this.documentsChanged() }),
      library: new LibraryView(api, catalog, {
        onDeleted: () => this.documentsChanged({ reloadLibrary: false }),
        extraActions: (doc) => addToNotebook(api, this.picker, doc.id),
      }),
      notebooks: new NotebooksView(api, catalog, this.picker, {
        onChanged: () => this.views.search.refresh(),
      }),
      open: new OpenView(api),
    };
    this.picker.load().catch(() => undefined); // the picker stays on "Whole library"
    $("signin-view").hidden = true;
    $("nav").hidden = false;
    $("sign-out").hidden = false;
    document.body.classList.add("signed-in");
    this.route();
  }

  signOut(message = "") {
    if (localStorage.getItem(TOKEN_KEY) === this.api?.token) localStorage.removeItem(TOKEN_KEY);
    // The simplest way to drop every view's state (streams, results, rows): start afresh.
    if (this.api) {
      this.api = null;
      if (message) sessionStorage.setItem(SIGNOUT_KEY, message);
      window.location.hash = "";
      window.location.reload();
      return;
    }
    this.showSignIn(message);
  }

  showSignIn(message = "") {
    for (const view of VIEWS) $(`${view}-view`).hidden = true;
    $("signin-view").hidden = false;
    $("nav").hidden = true;
    $("sign-out").hidden = true;
    document.body.classList.remove("signed-in");
    const reason = message || sessionStorage.getItem(SIGNOUT_KEY) || "";
    sessionStorage.removeItem(SIGNOUT_KEY);
    $("signin-error").textContent = reason;
    $("token").focus();
  }

  route() {
    if (!this.api) return;
    this.routed = window.location.hash;
    const { name, args, params } = parseHash();
    const [arg, ...rest] = args;
    // #cite/<chunk id>: the open view finds the chunk's document itself.
    const view = name === "cite" ? "open" : VIEWS.includes(name) ? name : "search";
    if (view === "search" || view === "ask") {
      const notebook = params.get("notebook") ?? "";
      this.picker.show(notebook);
      this.views[view].restore(params, notebook);
      // the other view's link keeps the notebook chosen (and Search its last search)
      const ask = new URLSearchParams({ notebook });
      document.querySelector('#nav a[data-view="ask"]').href = hashFor("ask", ask);
      const search = parseHash(this.views.search.hash()).params;
      search.set("notebook", notebook);
      document.querySelector('#nav a[data-view="search"]').href = hashFor("search", search);
    }
    for (const v of VIEWS) $(`${v}-view`).hidden = v !== view;
    for (const link of document.querySelectorAll("#nav a")) {
      if (link.dataset.view === view) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    if (view === "search") this.views.search.focus();
    if (view === "ask") this.views.ask.focus();
    if (view === "notebooks") this.views.notebooks.load();
    if (view === "open") {
      if (name === "cite") this.views.open.show("", arg ?? "", null);
      else {
        const anchor = rest[2] === undefined || rest[2] === "" ? null : Number(rest[2]);
        this.views.open.show(arg ?? "", rest[0] ?? "", Number(rest[1]) || null, anchor);
      }
    }
    if (view === "library") {
      const library = this.views.library;
      library.load(0).then(() => {
        if (arg) library.open(arg);
      });
    }
  }

  /** A notebook chosen at the top: Search or Ask (whichever is shown) within it. */
  pickNotebook(id) {
    const { name, params } = parseHash();
    const view = name === "ask" ? "ask" : "search";
    if (id) params.set("notebook", id);
    else params.delete("notebook");
    params.delete("source"); // a new answer: its sources are not the old one's
    remember(hashFor(view, params), true);
    this.route();
  }

  documentsChanged({ reloadLibrary = true } = {}) {
    this.catalog.load().catch(() => undefined);
    this.views.search.refresh();
    if (reloadLibrary && !$("library-view").hidden) this.views.library.load(0);
  }

  shortcut(event) {
    if (event.key !== "/" || !this.api || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target.closest("input, textarea, select, [contenteditable]")) return;
    event.preventDefault();
    // back to the search as it was left (route() focuses it)
    if ($("search-view").hidden) window.location.hash = this.views.search.hash();
    else this.views.search.focus();
  }
}

new App();

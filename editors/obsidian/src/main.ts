// The docshelf plugin: Search and Ask from inside the vault (a hit opens the note at its
// heading), "Index this vault" against a local `docshelf serve`, and its settings.

import * as fs from "fs";

import { FileSystemAdapter, Notice, Plugin, TFile } from "obsidian";

import {
  type AnswerCitation,
  type Citation,
  DocshelfClient,
  type Fetch,
  type SearchFilters,
  isAbort,
  normalizeBaseUrl,
} from "./api";
import { AskModal } from "./ask-modal";
import { type AskMemory, type Host } from "./host";
import { nodeFetch } from "./http";
import { type IndexReport, describeProgress, describeReport, runIndex } from "./indexer";
import { openTarget } from "./open";
import { NeedsSetup, explain } from "./present";
import { SearchModal } from "./search-modal";
import { type DocshelfSettings, DEFAULT_SETTINGS, withDefaults } from "./settings";
import { DocshelfSettingTab } from "./settings-tab";
import { type VaultView, resolveCitation, vaultFilter, webUrl } from "./vault-path";

export default class DocshelfPlugin extends Plugin implements Host {
  settings: DocshelfSettings = { ...DEFAULT_SETTINGS };
  lastAsk: AskMemory | undefined;
  /** How requests leave (tests may hand in another). */
  fetch: Fetch = nodeFetch;
  /** Opens docshelf's web page in the browser. */
  openExternal = (url: string): void => {
    window.open(url);
  };
  private indexing: AbortController | undefined;
  private statusEl: HTMLElement | undefined;
  private savedServer = "";

  async onload(): Promise<void> {
    this.settings = withDefaults(await this.loadData());
    this.savedServer = this.serverKey();
    this.addSettingTab(new DocshelfSettingTab(this.app, this));
    this.addCommand({ id: "search", name: "Search", callback: () => this.openSearch() });
    this.addCommand({ id: "ask", name: "Ask", callback: () => new AskModal(this.app, this).open() });
    this.addCommand({ id: "index-vault", name: "Index this vault", callback: () => void this.indexVault() });
    this.addCommand({
      id: "stop-indexing",
      name: "Stop indexing",
      checkCallback: (checking) => {
        if (!this.indexing) return false;
        if (!checking) this.indexing.abort();
        return true;
      },
    });
    this.addRibbonIcon("library", "docshelf: Search", () => this.openSearch());
    this.statusEl = this.addStatusBarItem();
    this.statusEl.addClass("docshelf-statusbar");
    this.statusEl.addEventListener("click", () => this.indexing?.abort());
  }

  onunload(): void {
    this.indexing?.abort();
  }

  openSearch(): SearchModal {
    const modal = new SearchModal(this.app, this);
    modal.open();
    return modal;
  }

  private serverKey(): string {
    return `${this.settings.serverUrl}\n${this.settings.token}`;
  }

  async saveSettings(): Promise<void> {
    // Another server or token: the last answer was someone else's to see.
    if (this.serverKey() !== this.savedServer) this.lastAsk = undefined;
    this.savedServer = this.serverKey();
    await this.saveData(this.settings);
  }

  client(): DocshelfClient {
    if (!this.settings.token) {
      throw new NeedsSetup(
        "Set the server's token in Settings → docshelf first (the first `docshelf serve` prints the admin's).",
      );
    }
    return new DocshelfClient({
      baseUrl: this.settings.serverUrl,
      token: this.settings.token,
      fetch: this.fetch,
    });
  }

  /** The vault's folder on this computer; undefined on a vault that is not one. */
  vaultBasePath(): string | undefined {
    const adapter = this.app.vault.adapter;
    return adapter instanceof FileSystemAdapter ? adapter.getBasePath() : undefined;
  }

  /** The folders the vault's notes may be indexed under (see VaultView). */
  vaultRoots(): string[] {
    const roots = [this.settings.serverVaultPath];
    const base = this.vaultBasePath();
    if (base) {
      roots.push(base);
      try {
        roots.push(fs.realpathSync.native(base));
      } catch {
        // gone: the base path is all there is
      }
    }
    return [...new Set(roots.filter(Boolean))];
  }

  vaultView(): VaultView {
    return {
      roots: this.vaultRoots(),
      exists: (p) => this.app.vault.getAbstractFileByPath(p) instanceof TFile,
    };
  }

  async searchFilters(client: DocshelfClient): Promise<SearchFilters | undefined> {
    if (!this.settings.vaultOnly) return undefined;
    const filter = vaultFilter(await client.sources(), this.vaultRoots());
    if (filter) return filter;
    throw new NeedsSetup(
      `This vault is not in the library at ${client.baseUrl}: run “docshelf: Index this vault”, or turn off “This vault only” in the settings.`,
    );
  }

  async openCitation(
    citation: Citation,
    chunkId: string,
    documentId: string | undefined,
    snippet: string,
  ): Promise<void> {
    try {
      const baseUrl = normalizeBaseUrl(this.settings.serverUrl);
      const target = resolveCitation(citation, chunkId, documentId, baseUrl, this.vaultView());
      await openTarget(this.app, target, citation.heading_path, snippet, this.openExternal);
    } catch (error) {
      new Notice(explain(error));
    }
  }

  async openSource(source: AnswerCitation): Promise<void> {
    if (source.citation) return this.openCitation(source.citation, source.chunk_id, undefined, "");
    try {
      this.openExternal(webUrl(normalizeBaseUrl(this.settings.serverUrl), source.chunk_id));
    } catch (error) {
      new Notice(explain(error));
    }
  }

  async checkConnection(): Promise<void> {
    try {
      const client = this.client();
      await client.verify();
      const indexed = vaultFilter(await client.sources(), this.vaultRoots()) !== undefined;
      new Notice(
        `Connected to docshelf at ${client.baseUrl}. ${
          indexed
            ? "This vault is in its library."
            : "This vault is not in its library yet: run “Index this vault”."
        }`,
      );
    } catch (error) {
      new Notice(explain(error));
    }
  }

  private setStatus(text: string): void {
    this.statusEl?.setText(text);
    if (this.statusEl) this.statusEl.title = text ? "Click to stop indexing" : "";
  }

  /** Runs `docshelf add VAULT` with its progress shown; the report, or undefined. */
  async indexVault(): Promise<IndexReport | undefined> {
    if (this.indexing) {
      new Notice("docshelf is indexing this vault already.");
      return undefined;
    }
    const base = this.vaultBasePath();
    if (!base) {
      new Notice("This vault is not a folder on this computer: docshelf cannot index it from here.");
      return undefined;
    }
    const abort = new AbortController();
    this.indexing = abort;
    const notice = new Notice("docshelf: indexing this vault…", 0);
    this.setStatus("docshelf: indexing…");
    try {
      const report = await runIndex({
        executable: this.settings.executable,
        home: this.settings.home,
        vaultPath: base,
        signal: abort.signal,
        onProgress: (event) => {
          const text = `docshelf: ${describeProgress(event)}`;
          notice.setMessage(text);
          this.setStatus(text);
        },
      });
      notice.hide();
      new Notice(`${describeReport(report)}${await this.whetherServerSees()}`, 10_000);
      return report;
    } catch (error) {
      notice.hide();
      new Notice(isAbort(error) ? "docshelf: indexing stopped." : explain(error), 10_000);
      return undefined;
    } finally {
      this.indexing = undefined;
      this.setStatus("");
    }
  }

  /** After indexing: whether the server (with this token) has the vault, in a sentence. */
  private async whetherServerSees(): Promise<string> {
    if (!this.settings.token) return ". Set the server's token in Settings → docshelf to search it.";
    let client: DocshelfClient | undefined;
    try {
      client = this.client();
      if (vaultFilter(await client.sources(), this.vaultRoots())) return ".";
      return `. But the server at ${client.baseUrl} does not list this vault among your sources: it keeps another library (set “docshelf home” to its DOCSHELF_HOME), or the token is not the local admin's.`;
    } catch (error) {
      return `. ${explain(error)}`;
    }
  }
}

// A fake of the `obsidian` module — only the part of the API the plugin uses — for tests in
// Node (Obsidian itself cannot be downloaded here). The vault is a real folder on disk;
// the workspace records what was opened and where; notices, modals and the plugin's data
// are kept in `fake`. Pieces are checked against the real typings with `satisfies`, so a
// fake that drifts from the real signatures fails the type-check. The DOM comes from
// happy-dom (a test's `@vitest-environment happy-dom` docblock), with the helpers Obsidian
// adds to every element (createEl, createDiv, empty, setText, addClass…).

import * as fs from "node:fs";
import * as nodePath from "node:path";

import type * as real from "obsidian";

export interface Opened {
  path: string;
  /** The line the view was scrolled to (the ephemeral state's `line`). */
  line: number | undefined;
  /** Where the editor's cursor went, in the editing view. */
  cursor: number | undefined;
}

export interface FakeState {
  notices: Notice[];
  /** Modals open now, the newest last. */
  modals: Modal[];
  opened: Opened[];
  /** openLinkText calls: the link text (`papers/p.pdf#page=4`). */
  links: string[];
  /** The view mode a note opens in: the editor ("source") or the reading view. */
  mode: "source" | "preview";
}

function fresh(): FakeState {
  return { notices: [], modals: [], opened: [], links: [], mode: "source" };
}

export const fake: FakeState = fresh();

export function resetFake(): void {
  Object.assign(fake, fresh());
}

/** The notices' texts, in order. */
export function noticeTexts(): string[] {
  return fake.notices.map((n) => n.message);
}

// -- the DOM helpers Obsidian adds to elements --------------------------------------------

interface ElementInfo {
  cls?: string | string[];
  text?: string;
  attr?: Record<string, string | number | boolean | null>;
  type?: string;
  placeholder?: string;
  value?: string;
  href?: string;
  title?: string;
}

function installDomHelpers(): void {
  const proto = (globalThis as { HTMLElement?: { prototype: HTMLElement } }).HTMLElement?.prototype;
  if (!proto || "createEl" in proto) return;
  function createEl(
    this: HTMLElement,
    tag: string,
    o?: ElementInfo | string,
    cb?: (el: HTMLElement) => void,
  ) {
    const el = this.ownerDocument.createElement(tag);
    const info: ElementInfo = typeof o === "string" ? { cls: o } : (o ?? {});
    if (info.cls) el.className = Array.isArray(info.cls) ? info.cls.join(" ") : info.cls;
    if (info.text !== undefined) el.textContent = info.text;
    for (const key of ["type", "placeholder", "value", "href", "title"] as const) {
      if (info[key] !== undefined) el.setAttribute(key, info[key]);
    }
    for (const [k, v] of Object.entries(info.attr ?? {})) if (v !== null) el.setAttribute(k, String(v));
    this.appendChild(el);
    cb?.(el);
    return el;
  }
  Object.assign(proto, {
    createEl,
    createDiv(this: HTMLElement, o?: ElementInfo | string, cb?: (el: HTMLElement) => void) {
      return createEl.call(this, "div", o, cb);
    },
    createSpan(this: HTMLElement, o?: ElementInfo | string, cb?: (el: HTMLElement) => void) {
      return createEl.call(this, "span", o, cb);
    },
    empty(this: HTMLElement) {
      while (this.firstChild) this.removeChild(this.firstChild);
    },
    setText(this: HTMLElement, text: string) {
      this.textContent = text;
    },
    addClass(this: HTMLElement, ...classes: string[]) {
      this.classList.add(...classes);
    },
    removeClass(this: HTMLElement, ...classes: string[]) {
      this.classList.remove(...classes);
    },
  });
}

installDomHelpers();

function div(): HTMLElement {
  return document.createElement("div");
}

// -- files ----------------------------------------------------------------------------------

export class TAbstractFile {
  name: string;
  constructor(readonly path: string) {
    this.name = path.split("/").pop() ?? path;
  }
}

export class TFile extends TAbstractFile {
  get extension(): string {
    const dot = this.name.lastIndexOf(".");
    return dot > 0 ? this.name.slice(dot + 1) : "";
  }
  get basename(): string {
    return this.extension ? this.name.slice(0, -this.extension.length - 1) : this.name;
  }
}

null as unknown as TFile satisfies Pick<real.TFile, "path" | "name" | "extension" | "basename">;

export class FileSystemAdapter {
  constructor(private readonly basePath: string) {}
  getBasePath(): string {
    return this.basePath;
  }
  getName(): string {
    return nodePath.basename(this.basePath);
  }
}

null as unknown as FileSystemAdapter satisfies Pick<real.FileSystemAdapter, "getBasePath" | "getName">;

/** A vault over a real folder; like Obsidian's, it does not list dot-folders (.obsidian …). */
export class Vault {
  readonly adapter: FileSystemAdapter | { getName(): string };

  constructor(readonly basePath: string | undefined) {
    this.adapter = basePath ? new FileSystemAdapter(basePath) : { getName: () => "mobile" };
  }

  getName(): string {
    return this.adapter.getName();
  }

  getAbstractFileByPath(path: string): TFile | null {
    if (!this.basePath || path.split("/").some((part) => part.startsWith(".") || part === "")) return null;
    try {
      return fs.statSync(nodePath.join(this.basePath, path)).isFile() ? new TFile(path) : null;
    } catch {
      return null;
    }
  }

  cachedRead(file: TFile): Promise<string> {
    return fs.promises.readFile(nodePath.join(this.basePath ?? "", file.path), "utf8");
  }
}

null as unknown as Vault satisfies Pick<real.Vault, "getName">;

// -- the workspace ----------------------------------------------------------------------------

interface Position {
  line: number;
  ch: number;
}

export class Editor {
  cursor: Position | undefined;
  scrolledTo: Position | undefined;
  setCursor(pos: Position): void {
    this.cursor = pos;
  }
  scrollIntoView(range: { from: Position; to: Position }, _center?: boolean): void {
    this.scrolledTo = range.from;
  }
}

null as unknown as Editor satisfies Pick<real.Editor, "setCursor" | "scrollIntoView">;

export class MarkdownView {
  readonly editor = new Editor();
  constructor(
    readonly leaf: WorkspaceLeaf,
    readonly file: TFile,
    private readonly opened: Opened,
  ) {
    this.editor.setCursor = (pos) => {
      this.editor.cursor = pos;
      this.opened.cursor = pos.line;
    };
  }
  getMode(): "source" | "preview" {
    return fake.mode;
  }
  setEphemeralState(state: { line?: number }): void {
    this.opened.line = state.line;
  }
}

null as unknown as MarkdownView satisfies Pick<real.MarkdownView, "getMode" | "setEphemeralState">;

export class WorkspaceLeaf {
  view: MarkdownView | null = null;

  openFile(file: TFile, openState?: { eState?: { line?: number }; active?: boolean }): Promise<void> {
    const opened: Opened = { path: file.path, line: undefined, cursor: undefined };
    fake.opened.push(opened);
    this.view = new MarkdownView(this, file, opened);
    if (openState?.eState) this.view.setEphemeralState(openState.eState);
    return Promise.resolve();
  }
}

null as unknown as WorkspaceLeaf["openFile"] satisfies (
  file: real.TFile,
  openState?: real.OpenViewState,
) => Promise<void>;

export class Workspace {
  readonly leaf = new WorkspaceLeaf();

  getLeaf(_newLeaf?: boolean): WorkspaceLeaf {
    return this.leaf;
  }

  openLinkText(linktext: string, _sourcePath: string, _newLeaf?: boolean): Promise<void> {
    fake.links.push(linktext);
    return Promise.resolve();
  }
}

null as unknown as Workspace["openLinkText"] satisfies real.Workspace["openLinkText"];

export class App {
  readonly vault: Vault;
  readonly workspace = new Workspace();
  constructor(basePath: string | undefined) {
    this.vault = new Vault(basePath);
  }
}

// -- notices, modals ---------------------------------------------------------------------------

export class Notice {
  readonly noticeEl: HTMLElement;
  message: string;
  hidden = false;

  constructor(
    message: string | DocumentFragment,
    readonly duration?: number,
  ) {
    this.message = String(typeof message === "string" ? message : message.textContent);
    this.noticeEl = typeof document === "undefined" ? ({} as HTMLElement) : div();
    fake.notices.push(this);
  }

  setMessage(message: string | DocumentFragment): this {
    this.message = String(typeof message === "string" ? message : message.textContent);
    return this;
  }

  hide(): void {
    this.hidden = true;
  }
}

null as unknown as Notice satisfies Pick<real.Notice, "noticeEl">;
null as unknown as Notice["hide"] satisfies real.Notice["hide"];

export class Modal {
  readonly containerEl = div();
  readonly modalEl = div();
  readonly titleEl = div();
  readonly contentEl = div();
  scope = {};
  shouldRestoreSelection = false;

  constructor(readonly app: App) {
    this.modalEl.append(this.titleEl, this.contentEl);
    this.containerEl.append(this.modalEl);
  }

  open(): void {
    fake.modals.push(this);
    this.onOpen();
  }

  close(): void {
    const at = fake.modals.indexOf(this);
    if (at < 0) return;
    fake.modals.splice(at, 1);
    this.onClose();
  }

  onOpen(): void {}
  onClose(): void {}

  setTitle(title: string): this {
    this.titleEl.textContent = title;
    return this;
  }
}

null as unknown as Parameters<Modal["setTitle"]> satisfies Parameters<real.Modal["setTitle"]>;

export interface Instruction {
  command: string;
  purpose: string;
}

export abstract class SuggestModal<T> extends Modal {
  limit = 100;
  emptyStateText = "No results found.";
  readonly inputEl: HTMLInputElement = document.createElement("input");
  readonly resultContainerEl = div();
  placeholder = "";
  instructions: Instruction[] = [];
  /** The suggestions shown now. */
  suggestions: T[] = [];
  /** The last update of the list (typing starts one). */
  updated: Promise<void> = Promise.resolve();

  constructor(app: App) {
    super(app);
    this.modalEl.prepend(this.inputEl);
    this.modalEl.append(this.resultContainerEl);
    this.inputEl.addEventListener("input", () => {
      this.updated = this.update();
    });
  }

  setPlaceholder(placeholder: string): void {
    this.placeholder = placeholder;
  }

  setInstructions(instructions: Instruction[]): void {
    this.instructions = instructions;
  }

  open(): void {
    super.open();
    this.updated = this.update();
  }

  /** Asks for the suggestions of the input's text and shows them when they come. */
  private async update(): Promise<void> {
    const items = await this.getSuggestions(this.inputEl.value);
    this.suggestions = items.slice(0, this.limit);
    this.resultContainerEl.empty();
    if (this.suggestions.length === 0) {
      this.resultContainerEl.createDiv({ cls: "suggestion-empty", text: this.emptyStateText });
      return;
    }
    for (const item of this.suggestions) {
      this.renderSuggestion(item, this.resultContainerEl.createDiv({ cls: "suggestion-item" }));
    }
  }

  selectSuggestion(value: T, evt: MouseEvent | KeyboardEvent): void {
    this.close();
    this.onChooseSuggestion(value, evt);
  }

  abstract getSuggestions(query: string): T[] | Promise<T[]>;
  abstract renderSuggestion(value: T, el: HTMLElement): unknown;
  abstract onChooseSuggestion(item: T, evt: MouseEvent | KeyboardEvent): unknown;
}

null as unknown as Parameters<SuggestModal<string>["setInstructions"]> satisfies Parameters<
  real.SuggestModal<string>["setInstructions"]
>;

/** Types `text` in a suggest modal, as a person would, and waits for the list it brings. */
export async function typeInto<T>(modal: real.SuggestModal<T>, text: string): Promise<T[]> {
  const own = modal as unknown as SuggestModal<T>;
  own.inputEl.value = text;
  own.inputEl.dispatchEvent(new Event("input"));
  await own.updated;
  return own.suggestions;
}

// -- the plugin, its settings --------------------------------------------------------------------

export interface Command {
  id: string;
  name: string;
  callback?: () => unknown;
  checkCallback?: (checking: boolean) => boolean | void;
}

null as unknown as Command satisfies real.Command;

export interface PluginManifest {
  id: string;
  name: string;
  version: string;
  minAppVersion: string;
  description: string;
  author: string;
  isDesktopOnly?: boolean;
  dir?: string;
}

export class Plugin {
  readonly commands = new Map<string, Command>();
  readonly settingTabs: PluginSettingTab[] = [];
  readonly ribbon: { icon: string; title: string; el: HTMLElement }[] = [];
  readonly statusBar: HTMLElement[] = [];
  /** What saveData() stored (loadData() gives it back). */
  data: unknown = null;

  constructor(
    readonly app: App,
    readonly manifest: PluginManifest,
  ) {}

  addCommand(command: Command): Command {
    this.commands.set(command.id, command);
    return command;
  }

  addSettingTab(tab: PluginSettingTab): void {
    this.settingTabs.push(tab);
  }

  addRibbonIcon(icon: string, title: string, callback: (evt: MouseEvent) => unknown): HTMLElement {
    const el = div();
    el.addEventListener("click", (evt) => callback(evt));
    this.ribbon.push({ icon, title, el });
    return el;
  }

  addStatusBarItem(): HTMLElement {
    const el = div();
    this.statusBar.push(el);
    return el;
  }

  loadData(): Promise<unknown> {
    return Promise.resolve(this.data === null ? null : structuredClone(this.data));
  }

  saveData(data: unknown): Promise<void> {
    this.data = structuredClone(data);
    return Promise.resolve();
  }

  onload(): void | Promise<void> {}
  onunload(): void {}
}

null as unknown as Parameters<Plugin["addRibbonIcon"]> satisfies Parameters<real.Plugin["addRibbonIcon"]>;
null as unknown as Plugin["loadData"] satisfies real.Plugin["loadData"];
null as unknown as Plugin["saveData"] satisfies real.Plugin["saveData"];

/** Runs a command as the palette does (a checkCallback is asked first, then run). */
export function runCommand(plugin: Plugin, id: string): boolean {
  const command = plugin.commands.get(id);
  if (!command) throw new Error(`no command ${id}`);
  if (command.checkCallback) {
    if (!command.checkCallback(true)) return false;
    command.checkCallback(false);
    return true;
  }
  void command.callback?.();
  return true;
}

export abstract class PluginSettingTab {
  readonly containerEl = div();
  constructor(
    readonly app: App,
    readonly plugin: Plugin,
  ) {}
  abstract display(): unknown;
  hide(): void {}
}

class TextComponent {
  readonly inputEl: HTMLInputElement = document.createElement("input");
  constructor(containerEl: HTMLElement) {
    containerEl.append(this.inputEl);
  }
  setValue(value: string): this {
    this.inputEl.value = value;
    return this;
  }
  getValue(): string {
    return this.inputEl.value;
  }
  setPlaceholder(placeholder: string): this {
    this.inputEl.placeholder = placeholder;
    return this;
  }
  onChange(callback: (value: string) => unknown): this {
    this.inputEl.addEventListener("input", () => void callback(this.inputEl.value));
    return this;
  }
}

null as unknown as Parameters<TextComponent["onChange"]> satisfies Parameters<real.TextComponent["onChange"]>;

class ToggleComponent {
  readonly toggleEl = div();
  private value = false;
  private changed: ((value: boolean) => unknown) | undefined;
  constructor(containerEl: HTMLElement) {
    containerEl.append(this.toggleEl);
    this.toggleEl.addEventListener("click", () => {
      this.setValue(!this.value);
      void this.changed?.(this.value);
    });
  }
  setValue(on: boolean): this {
    this.value = on;
    this.toggleEl.classList.toggle("is-enabled", on);
    return this;
  }
  getValue(): boolean {
    return this.value;
  }
  onChange(callback: (value: boolean) => unknown): this {
    this.changed = callback;
    return this;
  }
}

null as unknown as Parameters<ToggleComponent["onChange"]> satisfies Parameters<
  real.ToggleComponent["onChange"]
>;

class ButtonComponent {
  readonly buttonEl: HTMLButtonElement = document.createElement("button");
  constructor(containerEl: HTMLElement) {
    containerEl.append(this.buttonEl);
  }
  setButtonText(name: string): this {
    this.buttonEl.textContent = name;
    return this;
  }
  onClick(callback: (evt: MouseEvent) => unknown): this {
    this.buttonEl.addEventListener("click", (evt) => void callback(evt));
    return this;
  }
}

null as unknown as Parameters<ButtonComponent["onClick"]> satisfies Parameters<
  real.ButtonComponent["onClick"]
>;

export class Setting {
  readonly settingEl = div();
  readonly nameEl = div();
  readonly descEl = div();
  readonly controlEl = div();

  constructor(containerEl: HTMLElement) {
    this.settingEl.className = "setting-item";
    this.settingEl.append(this.nameEl, this.descEl, this.controlEl);
    containerEl.append(this.settingEl);
  }

  setName(name: string): this {
    this.nameEl.textContent = name;
    return this;
  }

  setDesc(desc: string): this {
    this.descEl.textContent = desc;
    return this;
  }

  setHeading(): this {
    this.settingEl.classList.add("setting-item-heading");
    return this;
  }

  addText(cb: (component: TextComponent) => unknown): this {
    cb(new TextComponent(this.controlEl));
    return this;
  }

  addToggle(cb: (component: ToggleComponent) => unknown): this {
    cb(new ToggleComponent(this.controlEl));
    return this;
  }

  addButton(cb: (component: ButtonComponent) => unknown): this {
    cb(new ButtonComponent(this.controlEl));
    return this;
  }
}

null as unknown as Parameters<Setting["setName"]> satisfies Parameters<real.Setting["setName"]>;

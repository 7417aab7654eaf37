// A fake of the `vscode` module — only the part of the API the extension uses — for tests
// in Node (VS Code itself cannot be downloaded here). Each piece is checked against
// @types/vscode with `satisfies`, so a fake that drifts from the real signatures fails the
// type-check. Tests script the user (`fake.inputs`, `fake.choose`) and read what the
// extension showed (`fake.messages`, `fake.opened`, …); `resetFake()` starts afresh.

import * as fs from "node:fs";
import * as nodePath from "node:path";

import type * as vscode from "vscode";

type Thenable<T> = PromiseLike<T>;

export interface Shown {
  level: "info" | "warning" | "error";
  text: string;
  items: string[];
}

export interface FakeState {
  /** Answers to showInputBox, in order; undefined = the user pressed Escape. */
  inputs: (string | undefined)[];
  /** Picks an action of a message (default: none, as if dismissed). */
  choose: (shown: Shown) => string | undefined;
  messages: Shown[];
  settings: Record<string, unknown>;
  contexts: Record<string, unknown>;
  external: string[];
  opened: { path: string; line: number }[];
  progress: string[];
  statusTexts: string[];
  quickPicks: FakeQuickPick<vscode.QuickPickItem>[];
  webviews: FakeWebviewPanel[];
  workspaceFolders: string[];
  files: string[];
  activeFile: string | undefined;
  commands: Map<string, (...args: unknown[]) => unknown>;
}

function fresh(): FakeState {
  return {
    inputs: [],
    choose: () => undefined,
    messages: [],
    settings: {},
    contexts: {},
    external: [],
    opened: [],
    progress: [],
    statusTexts: [],
    quickPicks: [],
    webviews: [],
    workspaceFolders: [],
    files: [],
    activeFile: undefined,
    commands: new Map(),
  };
}

export const fake: FakeState = fresh();

export function resetFake(): void {
  Object.assign(fake, fresh());
}

// --- values -------------------------------------------------------------------------------

export class Disposable {
  constructor(private readonly callOnDispose: () => void = () => undefined) {}
  dispose(): void {
    this.callOnDispose();
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => unknown)[] = [];
  readonly event = (listener: (e: T) => unknown): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(data: T): void {
    for (const listener of [...this.listeners]) listener(data);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(path: string): Uri {
    return new Uri("file", nodePath.resolve(path));
  }
  static parse(value: string): Uri {
    const colon = value.indexOf(":");
    return new Uri(value.slice(0, colon), value.slice(colon + 1));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return this.scheme === "file" ? `file://${this.path}` : `${this.scheme}:${this.path}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export class RelativePattern {
  readonly baseUri: Uri;
  constructor(
    base: Uri,
    readonly pattern: string,
  ) {
    this.baseUri = base;
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string;
  contextValue?: string;
  iconPath?: ThemeIcon;
  command?: vscode.Command;
  constructor(
    readonly label: string,
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}

// --- the real API's types, checked --------------------------------------------------------
// Checked against @types/vscode: the enums' values and the classes' shapes must match.
type Same<A extends B, B> = [B] extends [A] ? A : never;
export type Checked = [
  Same<`${ProgressLocation.Notification}`, `${vscode.ProgressLocation.Notification}`>,
  Same<`${StatusBarAlignment.Left}`, `${vscode.StatusBarAlignment.Left}`>,
  Same<`${ViewColumn.Beside}`, `${vscode.ViewColumn.Beside}`>,
  Same<`${TreeItemCollapsibleState.None}`, `${vscode.TreeItemCollapsibleState.None}`>,
];
null as unknown as Position satisfies Pick<vscode.Position, "line" | "character">;
null as unknown as Uri satisfies Pick<vscode.Uri, "scheme" | "path" | "fsPath" | "toString">;

// --- SecretStorage ------------------------------------------------------------------------

export class FakeSecrets implements Pick<vscode.SecretStorage, "get" | "store" | "delete"> {
  readonly values = new Map<string, string>();
  readonly calls: string[] = [];
  get(key: string): Thenable<string | undefined> {
    this.calls.push(`get ${key}`);
    return Promise.resolve(this.values.get(key));
  }
  store(key: string, value: string): Thenable<void> {
    this.calls.push(`store ${key}`);
    this.values.set(key, value);
    return Promise.resolve();
  }
  delete(key: string): Thenable<void> {
    this.calls.push(`delete ${key}`);
    this.values.delete(key);
    return Promise.resolve();
  }
}

// --- window -------------------------------------------------------------------------------

function show(level: Shown["level"], text: string, items: string[]): Thenable<string | undefined> {
  const shown = { level, text, items };
  fake.messages.push(shown);
  const chosen = fake.choose(shown);
  return Promise.resolve(chosen !== undefined && items.includes(chosen) ? chosen : undefined);
}

export class FakeStatusBarItem {
  name: string | undefined;
  command: string | undefined;
  tooltip: string | undefined;
  visible = false;
  private current = "";
  get text(): string {
    return this.current;
  }
  set text(value: string) {
    this.current = value;
    fake.statusTexts.push(value);
  }
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.visible = false;
  }
}
null as unknown as FakeStatusBarItem satisfies Pick<
  vscode.StatusBarItem,
  "text" | "tooltip" | "show" | "hide" | "dispose"
>;

export class FakeQuickPick<T extends vscode.QuickPickItem> {
  title: string | undefined;
  placeholder: string | undefined;
  matchOnDescription = false;
  matchOnDetail = false;
  busy = false;
  items: readonly T[] = [];
  activeItems: readonly T[] = [];
  selectedItems: readonly T[] = [];
  visible = false;
  private typed = "";
  get value(): string {
    return this.typed;
  }
  /** Set by the extension: VS Code echoes it back as a change of value, a moment later. */
  set value(value: string) {
    if (value === this.typed) return;
    this.typed = value;
    queueMicrotask(() => this.changeValue.fire(value));
  }
  readonly changeValue = new EventEmitter<string>();
  readonly accept = new EventEmitter<void>();
  readonly hidden = new EventEmitter<void>();
  readonly onDidChangeValue = this.changeValue.event;
  readonly onDidAccept = this.accept.event;
  readonly onDidHide = this.hidden.event;
  show(): void {
    this.visible = true;
  }
  hide(): void {
    if (!this.visible) return;
    this.visible = false;
    this.hidden.fire();
  }
  dispose(): void {
    this.visible = false;
  }
  /** The user types `value`. */
  type(value: string): void {
    this.typed = value;
    this.changeValue.fire(value);
  }
  /** The user picks `item` and presses Enter. */
  pick(item: T): void {
    this.selectedItems = [item];
    this.accept.fire();
  }
}
null as unknown as FakeQuickPick<vscode.QuickPickItem> satisfies Pick<
  vscode.QuickPick<vscode.QuickPickItem>,
  | "title"
  | "placeholder"
  | "value"
  | "busy"
  | "items"
  | "selectedItems"
  | "activeItems"
  | "show"
  | "hide"
  | "dispose"
>;

export class FakeWebviewPanel {
  readonly messages = new EventEmitter<unknown>();
  readonly disposed = new EventEmitter<void>();
  /** Every page the extension set, in order. */
  readonly pages: string[] = [];
  readonly webview = {
    pages: this.pages,
    get html(): string {
      return this.pages.at(-1) ?? "";
    },
    set html(value: string) {
      this.pages.push(value);
    },
    onDidReceiveMessage: this.messages.event,
  };
  readonly onDidDispose = this.disposed.event;
  constructor(readonly title: string) {}
  reveal(): void {}
  dispose(): void {
    this.disposed.fire();
  }
}

export const window = {
  activeTextEditor: undefined as
    undefined | { document: { uri: Uri; getText: () => string }; selection: Range },
  showInputBox(options?: vscode.InputBoxOptions): Thenable<string | undefined> {
    const answer = fake.inputs.shift();
    if (answer !== undefined && options?.validateInput) {
      const problem = options.validateInput(answer);
      if (problem) throw new Error(`the fake user typed an invalid value: ${JSON.stringify(problem)}`);
    }
    return Promise.resolve(answer);
  },
  showInformationMessage: (text: string, ...items: string[]) => show("info", text, items),
  showWarningMessage: (text: string, ...items: string[]) => show("warning", text, items),
  showErrorMessage: (text: string, ...items: string[]) => show("error", text, items),
  showOpenDialog: (): Thenable<Uri[] | undefined> => Promise.resolve(undefined),
  createStatusBarItem: (): FakeStatusBarItem => new FakeStatusBarItem(),
  createQuickPick<T extends vscode.QuickPickItem>(): FakeQuickPick<T> {
    const pick = new FakeQuickPick<T>();
    fake.quickPicks.push(pick);
    return pick;
  },
  async withProgress<R>(
    _options: vscode.ProgressOptions,
    task: (
      progress: vscode.Progress<{ message?: string; increment?: number }>,
      token: Pick<vscode.CancellationToken, "onCancellationRequested">,
    ) => Thenable<R>,
  ): Promise<R> {
    const cancel = new EventEmitter<unknown>();
    return task(
      { report: ({ message }) => void (message !== undefined && fake.progress.push(message)) },
      { onCancellationRequested: cancel.event },
    );
  },
  showTextDocument(document: { uri: Uri }, options?: { selection?: Range }): Thenable<unknown> {
    fake.opened.push({ path: document.uri.fsPath, line: options?.selection?.start.line ?? 0 });
    return Promise.resolve(undefined);
  },
  createWebviewPanel(_viewType: string, title: string): FakeWebviewPanel {
    const panel = new FakeWebviewPanel(title);
    fake.webviews.push(panel);
    return panel;
  },
  createTreeView: (): Disposable => new Disposable(),
};
// The signatures the extension calls must be the real ones (overloads aside, narrower here).
// eslint-disable-next-line @typescript-eslint/unbound-method -- a type check, never called
window.showInputBox satisfies (options?: vscode.InputBoxOptions) => Thenable<string | undefined>;
window.showErrorMessage satisfies (message: string, ...items: string[]) => Thenable<string | undefined>;
window.showInformationMessage satisfies (message: string, ...items: string[]) => Thenable<string | undefined>;
window.showWarningMessage satisfies (message: string, ...items: string[]) => Thenable<string | undefined>;

// --- workspace ----------------------------------------------------------------------------

/** A glob as VS Code reads one (`**`, `*`, `?`, `{a,b}`), as a RegExp over `/` paths. */
export function globRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (glob.startsWith("**/", i)) {
      out += "(?:.*/)?";
      i += 2;
    } else if (glob.startsWith("**", i)) {
      out += ".*";
      i += 1;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else if (c === "{") out += "(?:";
    else if (c === "}") out += ")";
    else if (c === ",") out += "|";
    else out += c.replace(/[.+^$()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

export const workspace = {
  get workspaceFolders(): { uri: Uri; name: string; index: number }[] {
    return fake.workspaceFolders.map((folder, index) => ({
      uri: Uri.file(folder),
      name: nodePath.basename(folder),
      index,
    }));
  },
  getConfiguration(section?: string) {
    return {
      get<T>(key: string): T | undefined {
        return fake.settings[section ? `${section}.${key}` : key] as T | undefined;
      },
    };
  },
  fs: {
    readFile: (uri: Uri): Thenable<Uint8Array> => fs.promises.readFile(uri.fsPath),
  },
  /** Files under the pattern's base (its pattern taken as `**` + `/*`), less the exclude glob. */
  findFiles(include: RelativePattern, exclude?: string | null): Thenable<Uri[]> {
    const root = include.baseUri.fsPath;
    const skip = exclude ? globRegExp(exclude) : undefined;
    const out: Uri[] = [];
    const walk = (dir: string): void => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = nodePath.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (!skip?.test(nodePath.relative(root, full).split(nodePath.sep).join("/")))
          out.push(Uri.file(full));
      }
    };
    walk(root);
    return Promise.resolve(out);
  },
  openTextDocument(uri: Uri): Thenable<{ uri: Uri; getText: () => string; lineCount: number }> {
    const text = fs.readFileSync(uri.fsPath, "utf8");
    return Promise.resolve({ uri, getText: () => text, lineCount: text.split("\n").length });
  },
  onDidChangeConfiguration: new EventEmitter<{ affectsConfiguration: (s: string) => boolean }>().event,
};
// eslint-disable-next-line @typescript-eslint/unbound-method -- a type check, never called
workspace.getConfiguration satisfies (section?: string) => Pick<vscode.WorkspaceConfiguration, "get">;

// --- commands, env ------------------------------------------------------------------------

export const commands = {
  executeCommand(command: string, ...rest: unknown[]): Thenable<unknown> {
    if (command === "setContext") fake.contexts[rest[0] as string] = rest[1];
    const registered = fake.commands.get(command);
    return Promise.resolve(registered?.(...rest));
  },
  registerCommand(command: string, callback: (...args: never[]) => unknown): Disposable {
    fake.commands.set(command, callback as (...args: unknown[]) => unknown);
    return new Disposable(() => fake.commands.delete(command));
  },
};
// eslint-disable-next-line @typescript-eslint/unbound-method -- a type check, never called
commands.executeCommand satisfies (command: string, ...rest: unknown[]) => Thenable<unknown>;

export const env = {
  openExternal(target: Uri): Thenable<boolean> {
    fake.external.push(target.toString());
    return Promise.resolve(true);
  },
};

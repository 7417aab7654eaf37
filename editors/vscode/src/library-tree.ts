// The Library view's shape: documents grouped by source, then by folder inside it (a chain
// of folders with nothing else in them shown as one, `a/b/c`); uploads by file type; the
// failed ones also in a group of their own, first. Plain module (no `vscode` import): a
// group's children are made only when it is expanded, from the list loaded once.

import { type DocumentRecord, type SourceRecord } from "./api";

export interface DocumentNode {
  kind: "document";
  /** Unique in the tree (a failed document is shown twice: in Failed, and in its folder). */
  id: string;
  doc: DocumentRecord;
}

export interface GroupNode {
  kind: "group";
  id: string;
  label: string;
  role: "failed" | "source" | "folder" | "uploads" | "type" | "other";
  /** Every document under the group, with the folders between the group and it. */
  entries: readonly Entry[];
  /** Failed: its documents as they are, no folders; uploads: by file type. */
  layout: "folders" | "flat" | "types";
  /** Its folder's path (a source's, a folder's), for the tooltip; "" for the other groups. */
  path: string;
  tooltip: string;
  expanded: boolean;
}

export type LibraryNode = DocumentNode | GroupNode;

export interface Entry {
  doc: DocumentRecord;
  dirs: readonly string[];
}

const TYPE_NAMES: Record<string, string> = {
  pdf: "PDF",
  markdown: "Markdown",
  text: "Text",
  rst: "reStructuredText",
  html: "HTML",
  docx: "Word",
};

export function typeName(fileType: string): string {
  return TYPE_NAMES[fileType] ?? fileType;
}

export function pathParts(p: string): string[] {
  return p.split(/[\\/]+/).filter(Boolean);
}

const byName = (a: string, b: string): number => a.localeCompare(b, undefined, { numeric: true });

/** Failed first (they need attention), then by title. */
export function documentOrder(a: DocumentRecord, b: DocumentRecord): number {
  return (
    Number(b.status === "failed") - Number(a.status === "failed") || byName(a.title || a.id, b.title || b.id)
  );
}

/** The group's line beside its name: how many documents, of which types, how many failed. */
export function groupDescription(node: GroupNode): string {
  const docs = node.entries.map((e) => e.doc);
  if (node.role === "failed") return String(docs.length);
  const types = new Map<string, number>();
  for (const d of docs) types.set(d.file_type, (types.get(d.file_type) ?? 0) + 1);
  const parts =
    node.role === "type"
      ? [String(docs.length)]
      : [...types].sort((a, b) => b[1] - a[1] || byName(a[0], b[0])).map(([t, n]) => `${n} ${t}`);
  const failed = docs.filter((d) => d.status === "failed").length;
  if (failed) parts.push(`${failed} failed`);
  return parts.join(", ");
}

/** Distinct short labels for sources: the folder's name, more of its path where two share it. */
function sourceLabels(sources: readonly SourceRecord[]): Map<string, string> {
  const labels = new Map<string, string>();
  const parts = new Map(sources.map((s) => [s.id, pathParts(s.path)]));
  for (const s of sources) {
    const mine = parts.get(s.id) ?? [];
    let take = 1;
    const tail = (p: string[], n: number): string => p.slice(-n).join("/");
    while (
      take < mine.length &&
      sources.some((o) => o.id !== s.id && tail(parts.get(o.id) ?? [], take) === tail(mine, take))
    )
      take += 1;
    labels.set(s.id, tail(mine, take) || s.path);
  }
  return labels;
}

/** The folders between a source's root and the document (none when it is not under it). */
function dirsUnder(root: readonly string[], docPath: string): string[] {
  const parts = pathParts(docPath);
  const inside = root.length > 0 && root.every((part, i) => parts[i] === part);
  return inside ? parts.slice(root.length, -1) : [];
}

/**
 * The top of the tree: Failed (when any failed), one group per folder source, the documents
 * of any other source (a single file added, or a source that is not the caller's) by their
 * folders, and the uploads. A lone group is shown expanded.
 */
export function rootNodes(
  documents: readonly DocumentRecord[],
  sources: readonly SourceRecord[],
): GroupNode[] {
  const folders = sources.filter((s) => s.kind === "folder");
  const labels = sourceLabels(folders);
  const roots = new Map(folders.map((s) => [s.id, pathParts(s.path)]));
  const bySource = new Map<string, Entry[]>();
  const others: Entry[] = [];
  const uploads: Entry[] = [];
  for (const doc of documents) {
    const source = doc.source_id ?? null;
    const root = source === null ? undefined : roots.get(source);
    if (source === null) uploads.push({ doc, dirs: [] });
    else if (root) append(bySource, source, { doc, dirs: dirsUnder(root, doc.path) });
    else others.push({ doc, dirs: pathParts(doc.path).slice(0, -1) });
  }
  const groups: GroupNode[] = folders
    .filter((s) => bySource.has(s.id))
    .map((s): GroupNode => ({
      kind: "group",
      id: `source:${s.id}`,
      label: labels.get(s.id) ?? s.path,
      role: "source",
      entries: bySource.get(s.id) ?? [],
      layout: "folders",
      path: s.path,
      tooltip: s.path,
      expanded: false,
    }))
    .sort((a, b) => byName(a.label, b.label));
  if (others.length)
    groups.push({
      kind: "group",
      id: "other",
      label: "Other files",
      role: "other",
      entries: others,
      layout: "folders",
      path: "",
      tooltip: "Documents that are not in one of your folder sources",
      expanded: false,
    });
  if (uploads.length)
    groups.push({
      kind: "group",
      id: "uploads",
      label: "Uploads",
      role: "uploads",
      entries: uploads,
      layout: "types",
      path: "",
      tooltip: "Files you uploaded",
      expanded: false,
    });
  if (groups.length === 1) groups[0].expanded = true;
  const failed = documents.filter((d) => d.status === "failed");
  if (failed.length)
    groups.unshift({
      kind: "group",
      id: "failed",
      label: "Failed",
      role: "failed",
      entries: failed.map((doc) => ({ doc, dirs: [] })),
      layout: "flat",
      path: "",
      tooltip: "Documents that could not be processed: Retry is in their menu",
      expanded: true,
    });
  return groups;
}

/** `parts` under `base`, with the separator `base` is written with. */
function joinPath(base: string, parts: readonly string[]): string {
  const sep = base.includes("\\") && !base.includes("/") ? "\\" : "/";
  return [base.replace(/[\\/]+$/, ""), ...parts].join(sep);
}

function append<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** A group's children: its folders (by name), then its own documents (failed first). */
export function childNodes(group: GroupNode): LibraryNode[] {
  const documents = (entries: readonly Entry[]): DocumentNode[] =>
    [...entries]
      .sort((a, b) => documentOrder(a.doc, b.doc))
      .map(({ doc }) => ({ kind: "document", id: `${group.id}/${doc.id}`, doc }));
  if (group.layout === "flat") return documents(group.entries);
  if (group.layout === "types") {
    const types = new Map<string, Entry[]>();
    for (const e of group.entries) append(types, e.doc.file_type, e);
    if (types.size < 2) return documents(group.entries);
    return [...types]
      .map(([type, entries]): GroupNode => ({
        kind: "group",
        id: `${group.id}/type:${type}`,
        label: typeName(type),
        role: "type",
        entries,
        layout: "flat",
        path: "",
        tooltip: `${typeName(type)} files`,
        expanded: false,
      }))
      .sort((a, b) => byName(a.label, b.label));
  }
  const own: Entry[] = [];
  const sub = new Map<string, Entry[]>();
  for (const e of group.entries) {
    if (e.dirs.length === 0) own.push(e);
    else append(sub, e.dirs[0], { doc: e.doc, dirs: e.dirs.slice(1) });
  }
  const folders = [...sub]
    .sort((a, b) => byName(a[0], b[0]))
    .map(([name, entries]): GroupNode => {
      // A folder holding only one folder is shown with it: `languages/haskell`.
      const label = [name];
      while (entries.every((e) => e.dirs.length > 0 && e.dirs[0] === entries[0].dirs[0])) {
        label.push(entries[0].dirs[0]);
        entries = entries.map((e) => ({ doc: e.doc, dirs: e.dirs.slice(1) }));
      }
      const folder = label.join("/");
      // Under "Other files" the folders are the whole path: `/srv/notes` (or `C:/notes`).
      const path = group.path
        ? joinPath(group.path, label)
        : `${/^[A-Za-z]:/.test(folder) ? "" : "/"}${folder}`;
      return {
        kind: "group",
        id: `${group.id}/${folder}`,
        label: folder,
        role: "folder",
        entries,
        layout: "folders",
        path,
        tooltip: path,
        expanded: false,
      };
    });
  return [...folders, ...documents(own)];
}

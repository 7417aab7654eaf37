// What the modals need of the plugin: its settings, a client, and where a citation opens.

import { type App } from "obsidian";

import {
  type Answer,
  type AnswerCitation,
  type Citation,
  type DocshelfClient,
  type SearchFilters,
} from "./api";
import { type DocshelfSettings } from "./settings";

/** The last question and its answer, shown again when Ask opens (a citation click closes it). */
export interface AskMemory {
  baseUrl: string;
  question: string;
  answer: Answer;
}

export interface Host {
  readonly app: App;
  settings: DocshelfSettings;
  /** A client for the settings' server and token; throws NeedsSetup without a token. */
  client(): DocshelfClient;
  /** The search filter of "Search this vault only", or undefined to search everything. */
  searchFilters(client: DocshelfClient): Promise<SearchFilters | undefined>;
  /** Opens a cited chunk in the vault (or on the web page); reports a failure itself. */
  openCitation(
    citation: Citation,
    chunkId: string,
    documentId: string | undefined,
    snippet: string,
  ): Promise<void>;
  openSource(source: AnswerCitation): Promise<void>;
  lastAsk: AskMemory | undefined;
}

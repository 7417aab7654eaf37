// Settings → docshelf: the server and its token, the search, and the indexing command.

import { type App, type Plugin, PluginSettingTab, Setting } from "obsidian";

import { DEFAULT_SETTINGS, type DocshelfSettings, MAX_SEARCH_LIMIT, clampLimit } from "./settings";

export interface SettingsOwner extends Plugin {
  settings: DocshelfSettings;
  saveSettings(): Promise<void>;
  /** Checks the server and the token, and says how it went. */
  checkConnection(): Promise<void>;
}

export class DocshelfSettingTab extends PluginSettingTab {
  constructor(
    app: App,
    private readonly owner: SettingsOwner,
  ) {
    super(app, owner);
  }

  display(): void {
    const { containerEl } = this;
    const settings = this.owner.settings;
    const save = (): Promise<void> => this.owner.saveSettings();
    containerEl.empty();

    new Setting(containerEl)
      .setName("Server URL")
      .setDesc("Where `docshelf serve` answers.")
      .addText((text) =>
        text
          .setPlaceholder(DEFAULT_SETTINGS.serverUrl)
          .setValue(settings.serverUrl)
          .onChange(async (value) => {
            settings.serverUrl = value.trim() || DEFAULT_SETTINGS.serverUrl;
            await save();
          }),
      );
    new Setting(containerEl)
      .setName("Token")
      .setDesc(
        "The first `docshelf serve` on a library prints its admin's token; `docshelf users create NAME` makes one for another user. Kept in this vault's plugin data.",
      )
      .addText((text) => {
        text.inputEl.type = "password";
        text
          .setPlaceholder("dsk_…")
          .setValue(settings.token)
          .onChange(async (value) => {
            settings.token = value.trim();
            await save();
          });
      })
      .addButton((button) =>
        button.setButtonText("Check").onClick(() => {
          void this.owner.checkConnection();
        }),
      );

    new Setting(containerEl).setName("Search").setHeading();
    new Setting(containerEl)
      .setName("Hits per search")
      .setDesc(`How many hits a search shows (1–${MAX_SEARCH_LIMIT}).`)
      .addText((text) => {
        text.inputEl.type = "number";
        text.setValue(String(settings.searchLimit)).onChange(async (value) => {
          settings.searchLimit = clampLimit(value);
          await save();
        });
      });
    new Setting(containerEl)
      .setName("This vault only")
      .setDesc("Searches keep to this vault's notes, not the rest of the library (Ask uses all of it).")
      .addToggle((toggle) =>
        toggle.setValue(settings.vaultOnly).onChange(async (value) => {
          settings.vaultOnly = value;
          await save();
        }),
      );

    new Setting(containerEl).setName("Indexing").setHeading();
    new Setting(containerEl)
      .setName("docshelf executable")
      .setDesc(
        "What “Index this vault” runs (`docshelf add VAULT`): a name on PATH, or the full path `which docshelf` prints.",
      )
      .addText((text) =>
        text
          .setPlaceholder(DEFAULT_SETTINGS.executable)
          .setValue(settings.executable)
          .onChange(async (value) => {
            settings.executable = value.trim() || DEFAULT_SETTINGS.executable;
            await save();
          }),
      );
    new Setting(containerEl)
      .setName("docshelf home")
      .setDesc("The server's library folder (DOCSHELF_HOME), if it is not the default one.")
      .addText((text) =>
        text.setValue(settings.home).onChange(async (value) => {
          settings.home = value.trim();
          await save();
        }),
      );
    new Setting(containerEl)
      .setName("Vault folder on the server")
      .setDesc(
        "When the library was made from a copy of this vault elsewhere: that folder's path, so its hits open here. Empty: this vault's own folder.",
      )
      .addText((text) =>
        text.setValue(settings.serverVaultPath).onChange(async (value) => {
          settings.serverVaultPath = value.trim();
          await save();
        }),
      );
  }
}

// The "Datasets" section of the Yitong sidebar: datasets you can see, their versions, a diff of
// two versions, copy-path of a materialised version, and a folder upload with a progress bar.
// DOM hooks for browser tests: .yt-datasets, .yt-dataset[data-dataset="vc/name"],
// .yt-version[data-version=N] (data-path once materialised), .yt-version-select, .yt-diff-button,
// .yt-diff, .yt-copy-path, .yt-upload (.yt-upload-dataset, .yt-upload-message,
// input[type=file], .yt-upload-button, .yt-upload-progress, .yt-upload-status), .yt-datasets-error.
import { formatAmount } from './api';
import {
  IDataset,
  IVersion,
  fetchDatasets,
  fetchDiff,
  fetchVersions,
  materialize,
  uploadFolder
} from './datasetsApi';
import { el } from './dom';

const size = (bytes: number | undefined): string => formatAmount('memory', bytes);
const PHASES: Record<string, string> = {
  send: 'sending',
  hash: 'hashing',
  upload: 'storing',
  done: 'done'
};

export class DatasetsSection {
  readonly node = el('div', 'yt-datasets');

  constructor(defaultVC: () => string | null) {
    this._defaultVC = defaultVC;
    const header = el('div', 'yt-header');
    header.append(el('span', 'yt-title', 'Datasets'));
    this._error.hidden = true;
    this.node.append(header, this._error, this._list, this._uploadForm());
  }

  /** Reload the list (and the versions of expanded datasets). */
  async refresh(): Promise<void> {
    try {
      const datasets = await fetchDatasets();
      this._error.hidden = true;
      this._list.replaceChildren(
        ...(datasets.length
          ? datasets.map(d => this._datasetCard(d))
          : [
              el('div', 'yt-empty', 'No datasets yet: upload a folder below or run yt data commit.')
            ])
      );
      await Promise.all(
        [...this._expanded].map(name => this._loadVersions(name).catch(() => undefined))
      );
    } catch (error) {
      this._showError(error);
    }
  }

  private _showError(error: unknown): void {
    this._error.textContent = error instanceof Error ? error.message : String(error);
    this._error.hidden = false;
  }

  private _datasetCard(d: IDataset): HTMLElement {
    const name = `${d.vc}/${d.name}`;
    const card = el('div', 'yt-dataset');
    card.dataset.dataset = name;
    const title = el('div', 'yt-dataset-name');
    title.append(
      el('span', '', name),
      el(
        'span',
        'yt-dataset-meta',
        `${d.versions} version${d.versions === 1 ? '' : 's'}` +
          (d.latest !== null ? ` · latest v${d.latest} · ${size(d.bytes)}` : '')
      )
    );
    title.onclick = () => {
      if (this._expanded.has(name)) {
        this._expanded.delete(name);
        card.querySelector('.yt-versions')?.remove();
      } else {
        this._expanded.add(name);
        void this._loadVersions(name).catch(error => this._showError(error));
      }
    };
    card.append(title);
    if (d.description) {
      card.append(el('div', 'yt-vc-description', d.description));
    }
    return card;
  }

  private async _loadVersions(name: string): Promise<void> {
    const versions = await fetchVersions(name);
    const card = this._list.querySelector(`.yt-dataset[data-dataset="${CSS.escape(name)}"]`);
    if (!card) {
      return;
    }
    const box = el('div', 'yt-versions');
    box.append(...versions.map(v => this._versionRow(name, v)));
    const diffButton = el(
      'button',
      'yt-diff-button jp-Button jp-mod-styled',
      'Diff selected'
    ) as HTMLButtonElement;
    const diffOut = el('pre', 'yt-diff');
    diffOut.hidden = true;
    diffButton.onclick = async () => {
      const picked = Array.from(
        box.querySelectorAll<HTMLInputElement>('.yt-version-select:checked')
      )
        .map(c => Number(c.value))
        .sort((a, b) => a - b);
      if (picked.length !== 2) {
        diffOut.textContent = 'Select two versions to compare.';
      } else {
        try {
          const d = await fetchDiff(name, picked[0], picked[1]);
          diffOut.textContent = [
            `v${picked[0]} -> v${picked[1]}: ${d.added.length} added, ${d.removed.length} removed, ${d.changed.length} changed`,
            ...d.added.map(f => `+ ${f.path}  (${size(f.size)})`),
            ...d.removed.map(f => `- ${f.path}  (${size(f.size)})`),
            ...d.changed.map(f => `M ${f.path}  (${size(f.old_size)} -> ${size(f.size)})`)
          ].join('\n');
        } catch (error) {
          diffOut.textContent = error instanceof Error ? error.message : String(error);
        }
      }
      diffOut.hidden = false;
    };
    if (versions.length > 1) {
      box.append(diffButton);
    }
    box.append(diffOut);
    card.querySelector('.yt-versions')?.remove();
    card.append(box);
  }

  private _versionRow(name: string, v: IVersion): HTMLElement {
    const row = el('div', 'yt-version');
    row.dataset.version = String(v.number);
    const select = el('input', 'yt-version-select') as HTMLInputElement;
    select.type = 'checkbox';
    select.value = String(v.number);
    select.title = 'Select two versions, then Diff selected';
    const label = el('div', 'yt-version-label');
    label.append(
      el('span', 'yt-version-number', `v${v.number}`),
      el('span', 'yt-version-message', v.message || '(no message)'),
      el(
        'span',
        'yt-version-meta',
        `${v.author} · ${v.files} files · ${size(v.bytes)}` +
          (v.parent !== null ? ` · from v${v.parent}` : '') +
          (v.tags?.length ? ` · ${v.tags.join(', ')}` : '')
      )
    );
    const copy = el(
      'button',
      'yt-copy-path jp-Button jp-mod-minimal',
      'Copy path'
    ) as HTMLButtonElement;
    copy.title = 'Materialise this version read-only and copy its local path';
    const pathText = el('div', 'yt-version-path');
    copy.onclick = async () => {
      try {
        const path = await materialize(name, v.number);
        row.dataset.path = path;
        pathText.textContent = path;
        await navigator.clipboard?.writeText(path).catch(() => undefined);
        copy.textContent = 'Copied';
      } catch (error) {
        pathText.textContent = error instanceof Error ? error.message : String(error);
      }
    };
    row.append(select, label, copy, pathText);
    return row;
  }

  private _uploadForm(): HTMLElement {
    const form = el('form', 'yt-upload') as HTMLFormElement;
    const dataset = el('input', 'yt-upload-dataset jp-mod-styled') as HTMLInputElement;
    dataset.placeholder = 'vc/name';
    dataset.onfocus = () => {
      if (!dataset.value && this._defaultVC()) {
        dataset.value = `${this._defaultVC()}/`;
      }
    };
    const message = el('input', 'yt-upload-message jp-mod-styled') as HTMLInputElement;
    message.placeholder = 'message: what changed';
    const files = el('input', 'yt-upload-files') as HTMLInputElement;
    files.type = 'file';
    files.multiple = true;
    files.setAttribute('webkitdirectory', '');
    const button = el(
      'button',
      'yt-upload-button jp-Button jp-mod-styled jp-mod-accept',
      'Upload folder'
    ) as HTMLButtonElement;
    button.type = 'submit';
    const bar = el('progress', 'yt-upload-progress') as HTMLProgressElement;
    bar.hidden = true;
    const status = el('div', 'yt-upload-status');
    form.onsubmit = async event => {
      event.preventDefault();
      const picked = Array.from(files.files ?? []);
      if (!dataset.value.includes('/') || !picked.length) {
        status.textContent = 'Name the dataset (vc/name) and pick a folder.';
        return;
      }
      button.disabled = true;
      bar.hidden = false;
      form.dataset.state = 'running';
      try {
        const task = await uploadFolder(
          dataset.value.trim(),
          message.value,
          picked,
          (phase, done, total) => {
            bar.max = Math.max(total, 1);
            bar.value = Math.min(done, total);
            status.textContent = `${PHASES[phase] ?? phase}: ${size(done)} / ${size(total)}`;
          }
        );
        if (task.state === 'error') {
          throw new Error(task.error || 'the commit failed');
        }
        form.dataset.state = 'done';
        status.textContent = task.unchanged
          ? `Nothing changed: ${task.dataset} v${task.version} has this content.`
          : `Committed ${task.dataset} v${task.version}.`;
        this._expanded.add(task.dataset);
        await this.refresh();
      } catch (error) {
        form.dataset.state = 'error';
        status.textContent = error instanceof Error ? error.message : String(error);
      } finally {
        button.disabled = false;
      }
    };
    form.append(
      el('div', 'yt-upload-title', 'Upload a folder as a new version'),
      dataset,
      message,
      files,
      button,
      bar,
      status
    );
    return form;
  }

  private _defaultVC: () => string | null;
  private _error = el('div', 'yt-error yt-datasets-error');
  private _list = el('div', 'yt-dataset-list');
  private _expanded = new Set<string>();
}

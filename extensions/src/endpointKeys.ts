// An admin's keys of one endpoint, in the Models view's deployments (modelDetail.ts adds it to
// an endpoint's row only for admins): list them, issue one (its secret shown once, with a copy
// button: only its hash is kept), revoke one. The routes are routes/endpoint_keys.py's; the
// platform refuses non-admins whatever the page shows. Every value reaches the page as text.
// DOM hooks: .yt-endpoint-keys[data-endpoint] .yt-endpoint-keys-toggle, .yt-endpoint-keys-panel
// (.yt-endpoint-key-note input, .yt-endpoint-key-issue, .yt-endpoint-key-secret[data-key-id]
// (.yt-endpoint-key-secret-value input, .yt-endpoint-key-copy), .yt-endpoint-key[data-key-id]
// [data-state=in-use|revoked] .yt-endpoint-key-revoke, .yt-endpoint-keys-error).
import { el } from './dom';
import { keyLine } from './endpointText';
import { IEndpointKey, fetchKeys, issueKey, revokeKey } from './modelsApi';

const message = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

function button(cls: string, label: string): HTMLButtonElement {
  const b = el('button', `${cls} jp-Button jp-mod-styled`, label) as HTMLButtonElement;
  b.type = 'button';
  return b;
}

/** Copy `text` to the clipboard; where the browser offers no clipboard API (a page not served
 * over https), select it in `input` and use the older copy command. */
async function copy(text: string, input: HTMLInputElement): Promise<boolean> {
  try {
    if (navigator.clipboard) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection
  }
  input.select();
  return document.execCommand('copy');
}

export class EndpointKeys {
  readonly node = el('div', 'yt-endpoint-keys');

  constructor(readonly endpoint: string) {
    this.node.dataset.endpoint = endpoint;
    this._toggle.title = 'Keys for callers outside the endpoint\u2019s VC (admins)';
    this._toggle.onclick = () => void this._open(this._panel.hidden);
    this._note.placeholder = 'who the key is for';
    this._note.maxLength = 255;
    this._issue.onclick = () => void this._create();
    this._error.hidden = true;
    this._secret.hidden = true;
    this._panel.hidden = true;
    const form = el('div', 'yt-endpoint-keys-form');
    form.append(this._note, this._issue);
    this._panel.append(this._secret, form, this._error, this._list);
    this.node.append(this._toggle, this._panel);
  }

  private async _open(open: boolean): Promise<void> {
    this._panel.hidden = !open;
    this._toggle.textContent = open ? 'Hide keys' : 'Keys';
    if (open) {
      await this._reload();
    }
  }

  private async _reload(): Promise<void> {
    try {
      this._show(await fetchKeys(this.endpoint));
      this._error.hidden = true;
    } catch (error) {
      this._fail(error);
    }
  }

  private _show(keys: IEndpointKey[]): void {
    const rows = keys.map(k => {
      const row = el('div', 'yt-endpoint-key');
      row.dataset.keyId = String(k.id);
      row.dataset.state = k.revoked ? 'revoked' : 'in-use';
      row.append(el('span', 'yt-endpoint-key-text', keyLine(k)));
      if (!k.revoked) {
        const revoke = button('yt-endpoint-key-revoke', 'Revoke');
        revoke.title = 'Refuse every request with this key from now on';
        revoke.onclick = () => void this._revoke(k.id, revoke);
        row.append(revoke);
      }
      return row;
    });
    this._list.replaceChildren(
      ...(rows.length
        ? rows
        : [el('div', 'yt-empty', 'No keys: issue one for a caller outside the VC.')])
    );
  }

  private async _create(): Promise<void> {
    this._issue.disabled = true;
    try {
      const made = await issueKey(this.endpoint, this._note.value.trim());
      this._note.value = '';
      this._showSecret(made.id, made.key);
      await this._reload();
    } catch (error) {
      this._fail(error);
    } finally {
      this._issue.disabled = false;
    }
  }

  /** The secret, this once: a read-only field, a copy button, and a button that hides it. */
  private _showSecret(id: number, key: string): void {
    const value = el('input', 'yt-endpoint-key-secret-value') as HTMLInputElement;
    value.readOnly = true;
    value.value = key;
    value.size = Math.min(key.length, 60);
    const copied = el('span', 'yt-endpoint-key-copied');
    const copyButton = button('yt-endpoint-key-copy', 'Copy');
    copyButton.onclick = async () => {
      copied.textContent = (await copy(key, value)) ? 'copied' : 'select it and copy';
    };
    const done = button('yt-endpoint-key-done', 'Done');
    done.onclick = () => {
      this._secret.hidden = true;
      this._secret.replaceChildren();
    };
    this._secret.dataset.keyId = String(id);
    this._secret.replaceChildren(
      el(
        'div',
        'yt-endpoint-key-secret-note',
        `Key ${id}: shown once (only its hash is kept). Callers send it as Authorization: Bearer <key>.`
      ),
      value,
      copyButton,
      done,
      copied
    );
    this._secret.hidden = false;
  }

  private async _revoke(id: number, revoke: HTMLButtonElement): Promise<void> {
    revoke.disabled = true;
    try {
      await revokeKey(this.endpoint, id);
      await this._reload();
    } catch (error) {
      revoke.disabled = false;
      this._fail(error);
    }
  }

  private _fail(error: unknown): void {
    this._error.textContent = message(error);
    this._error.hidden = false;
  }

  private _toggle = button('yt-endpoint-keys-toggle', 'Keys');
  private _panel = el('div', 'yt-endpoint-keys-panel');
  private _note = el('input', 'yt-endpoint-key-note') as HTMLInputElement;
  private _issue = button('yt-endpoint-key-issue', 'Issue key');
  private _secret = el('div', 'yt-endpoint-key-secret');
  private _error = el('div', 'yt-endpoint-keys-error yt-error');
  private _list = el('div', 'yt-endpoint-key-list');
}

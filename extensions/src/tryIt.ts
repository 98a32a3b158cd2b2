// The Models view's "try it" form: pick an endpoint of the model, write an Open Inference
// Protocol request (it starts as an example from the version's signature; rows alone do for a
// model with one input), send it through the platform's endpoint route, see the answer's outputs
// as lines (or the refusal's sentence) and the raw answer folded. The request builders are
// inferRequest.ts (pure). What is typed is kept across the view's refreshes.
// DOM hooks: .yt-tryit (.yt-tryit-endpoint, .yt-tryit-request, .yt-tryit-send, .yt-tryit-example,
// .yt-tryit-response[data-state=running|ok|error] .yt-tryit-lines).
import { el } from './dom';
import { exampleRequest, parseInferRequest, responseLines, signatureInputs } from './inferRequest';
import { IEndpoint, IModelVersion, infer } from './modelsApi';

/** The raw answer is shown up to this many characters (an answer may be up to 64 MiB). */
export const RAW_MAX = 100_000;

const message = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

export class TryIt {
  readonly node = el('form', 'yt-tryit') as HTMLFormElement;

  constructor() {
    this._build();
  }

  /** The model's endpoints and versions (for their signatures), as the view last fetched them. */
  update(endpoints: IEndpoint[], versions: IModelVersion[]): void {
    this._endpoints = endpoints;
    this._versions = versions;
    // the model's endpoints, keeping the one picked
    const picked = this._target.value;
    this._target.replaceChildren(
      ...this._endpoints.map(e => {
        const option = el(
          'option',
          '',
          `${e.name} (v${e.version}, ${e.state})`
        ) as HTMLOptionElement;
        option.value = e.name;
        return option;
      })
    );
    if (this._endpoints.some(e => e.name === picked)) {
      this._target.value = picked;
    }
    this._send.disabled = !this._endpoints.length;
    if (
      !this._request.value.trim() ||
      (this._request.dataset.example === 'yes' && picked !== this._target.value)
    ) {
      this._fillExample();
    }
  }

  private _signature(): Record<string, unknown> {
    const e = this._endpoints.find(x => x.name === this._target.value);
    const v = e && this._versions.find(x => x.number === e.version);
    return (v?.signature as Record<string, unknown>) ?? {};
  }

  private _fillExample(): void {
    if (!this._endpoints.length) {
      return;
    }
    const signature = this._signature();
    this._request.value = exampleRequest(signature);
    this._request.dataset.example = 'yes';
    const one = signatureInputs(signature).length === 1;
    this._hint.textContent =
      'A V2 infer request' + (one ? ', or the rows of its one input as a JSON array.' : '.');
  }

  private _build(): void {
    const form = this.node;
    this._target.onchange = () => this._fillExample();
    this._request.spellcheck = false;
    this._request.rows = 6;
    this._request.oninput = () => (this._request.dataset.example = 'no');
    this._send.type = 'submit';
    const example = el(
      'button',
      'yt-tryit-example jp-Button jp-mod-styled',
      'Example'
    ) as HTMLButtonElement;
    example.type = 'button';
    example.title = 'An example request from the version’s signature';
    example.onclick = () => this._fillExample();
    this._answer.hidden = true;
    form.onsubmit = async event => {
      event.preventDefault();
      const e = this._endpoints.find(x => x.name === this._target.value);
      if (!e) {
        return;
      }
      const request = parseInferRequest(this._request.value, this._signature());
      this._answer.hidden = false;
      if (request instanceof Error) {
        this._showAnswer('error', [request.message], null);
        return;
      }
      this._send.disabled = true;
      this._answer.dataset.state = 'running';
      const started = performance.now();
      try {
        const answer = await infer(e, request);
        const ms = Math.round(performance.now() - started);
        this._showAnswer('ok', [...responseLines(answer), `(${ms} ms)`], answer);
      } catch (error) {
        this._showAnswer('error', [message(error)], null);
      } finally {
        this._send.disabled = false;
      }
    };
    const buttons = el('div', 'yt-tryit-buttons');
    buttons.append(this._send, example);
    form.append(this._target, this._hint, this._request, buttons, this._answer);
  }

  private _showAnswer(state: 'ok' | 'error', lines: string[], raw: unknown): void {
    this._answer.dataset.state = state;
    const parts: HTMLElement[] = [
      el('pre', `yt-tryit-lines${state === 'error' ? ' yt-error' : ''}`, lines.join('\n'))
    ];
    if (raw !== null) {
      const details = el('details', 'yt-tryit-raw');
      const text = JSON.stringify(raw, null, 2);
      const shown =
        text.length > RAW_MAX ? `${text.slice(0, RAW_MAX)}\n… (${text.length} characters)` : text;
      details.append(el('summary', '', 'Raw answer'), el('pre', '', shown));
      parts.push(details);
    }
    this._answer.replaceChildren(...parts);
  }

  private _endpoints: IEndpoint[] = [];
  private _versions: IModelVersion[] = [];
  private _target = el('select', 'yt-tryit-endpoint jp-mod-styled') as HTMLSelectElement;
  private _hint = el('div', 'yt-tryit-hint');
  private _request = el('textarea', 'yt-tryit-request jp-mod-styled') as HTMLTextAreaElement;
  private _send = el(
    'button',
    'yt-tryit-send jp-Button jp-mod-styled jp-mod-accept',
    'Send'
  ) as HTMLButtonElement;
  private _answer = el('div', 'yt-tryit-response');
}

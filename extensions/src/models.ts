// The Models main-area view (opened by index.ts like the Jobs and Datasets tabs; deep link
// `?yt=models` for this server's VC, `?yt=models/<vc>` for another of yours): the models of a
// VC (or of all yours) and, for the one picked, modelDetail.ts (versions, metrics compared,
// lineage graph, deployments, try it). It polls while visible: every 2 s while an endpoint of
// the picked model is starting, else every REFRESH_MS.
// DOM hooks: .yt-view[data-view=models] .yt-models (.yt-models-vc select, .yt-models-error,
// .yt-models-list .yt-model[data-model="vc/name"], .yt-model.yt-selected).
import { LabIcon } from '@jupyterlab/ui-components';

import { REFRESH_MS, fetchVCs } from './api';
import { el } from './dom';
import { ModelDetail } from './modelDetail';
import {
  IEndpoint,
  IModel,
  fetchEndpoint,
  fetchEndpoints,
  fetchMe,
  fetchModelVersions,
  fetchModels
} from './modelsApi';
import { YitongView, serverInfo } from './views';

/** While an endpoint starts, the view looks again this often. */
export const STARTING_REFRESH_MS = 2000;

/** Models: a box with a layer on top (the launcher card and the Models tab). */
export const modelsIcon = new LabIcon({
  name: 'yitong-lab:models',
  svgstr: `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M12 2l9 5-9 5-9-5z"/>
    <path d="M3 11.5l9 5 9-5v3l-9 5-9-5z"/>
    <path d="M3 16.5l9 5 9-5v2l-9 5-9-5z" opacity=".6"/>
  </g>
</svg>`
});

export class ModelsView extends YitongView {
  /** `vc`: the VC shown first ('' = this server's VC, or all yours outside a VC). */
  constructor(vc: string) {
    super('models', vc);
    this.title.label = vc ? `Models · ${vc}` : 'Models';
    const header = el('div', 'yt-header');
    header.append(el('span', 'yt-title', 'Models'), this._vcSelect);
    this._vcSelect.onchange = () => {
      this._vc = this._vcSelect.value;
      void this.refresh();
    };
    this._error.hidden = true;
    const body = el('div', 'yt-models-body');
    body.append(this._list, this._detailBox);
    this._root.append(header, this._error, body);
    this.node.append(this._root);
    void this._start(vc);
  }

  private async _start(vc: string): Promise<void> {
    const [vcs, here, me] = await Promise.all([
      fetchVCs().catch(() => []),
      vc ? Promise.resolve(null) : serverInfo(),
      fetchMe().catch(() => null)
    ]);
    this._admin = me?.admin ?? false;
    this._vc = vc || here?.vc || '';
    const names = vcs.map(v => v.name);
    if (this._vc && !names.includes(this._vc)) {
      names.push(this._vc); // the list then says it has nothing there you can see
    }
    const all = el('option', '', 'all your VCs') as HTMLOptionElement;
    all.value = '';
    this._vcSelect.replaceChildren(
      all,
      ...names.map(name => {
        const option = el('option', '', name) as HTMLOptionElement;
        option.value = name;
        return option;
      })
    );
    this._vcSelect.value = this._vc;
    this._started = true;
    await this.refresh();
  }

  async refresh(): Promise<void> {
    if (!this._started || this.isDisposed) {
      return;
    }
    window.clearTimeout(this._timer);
    let starting = false;
    try {
      const models = await fetchModels(this._vc || undefined);
      this._error.hidden = true;
      if (!models.some(m => m.full_name === this._picked)) {
        this._picked = models[0]?.full_name ?? null; // the first, until another is picked
      }
      this._showList(models);
      const picked = models.find(m => m.full_name === this._picked) ?? null;
      if (!picked) {
        this._detail = null;
        this._detailBox.replaceChildren();
      } else {
        const [versions, endpoints] = await Promise.all([
          fetchModelVersions(picked.full_name),
          this._endpointsOf(picked.full_name)
        ]);
        if (!this._detail || this._detail.model.full_name !== picked.full_name) {
          this._detail = new ModelDetail(picked, this._admin);
          this._detailBox.replaceChildren(this._detail.node);
        }
        this._detail.update(picked, versions, endpoints);
        // sooner while one starts or rolls (a ready endpoint with a reason is rolling or draining)
        // (not while a replica only waits in the queue: that may take long)
        starting = endpoints.some(
          e =>
            e.state === 'starting' ||
            (e.state === 'ready' && e.reason !== '' && !e.reason.includes('queued'))
        );
      }
    } catch (error) {
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    }
    if (!this.isDisposed) {
      this._timer = window.setTimeout(
        () => {
          if (this.isVisible) {
            void this.refresh();
          }
        },
        starting ? STARTING_REFRESH_MS : REFRESH_MS
      );
    }
  }

  /** The model's endpoints, each probed by the platform (its state as it is now). */
  private async _endpointsOf(model: string): Promise<IEndpoint[]> {
    const listed = (await fetchEndpoints()).filter(e => e.model === model);
    return Promise.all(listed.map(e => fetchEndpoint(e.name).catch(() => e)));
  }

  private _showList(models: IModel[]): void {
    if (!models.length) {
      this._list.replaceChildren(
        el(
          'div',
          'yt-empty',
          (this._vc ? `No models in VC ${this._vc} that you can see.` : 'No models yet.') +
            ' Register one: yt model register <vc>/<name> <folder> --framework sklearn.'
        )
      );
      return;
    }
    this._list.replaceChildren(
      ...models.map(m => {
        const card = el('button', 'yt-model') as HTMLButtonElement;
        card.type = 'button';
        card.dataset.model = m.full_name;
        card.classList.toggle('yt-selected', m.full_name === this._picked);
        const aliases = Object.entries(m.aliases ?? {})
          .map(([a, v]) => `${a} → v${v}`)
          .join(', ');
        card.append(
          el('span', 'yt-model-name', m.full_name),
          el(
            'span',
            'yt-model-meta',
            `${m.versions} version${m.versions === 1 ? '' : 's'}` +
              (m.latest !== null ? ` · latest v${m.latest}` : '') +
              (aliases ? ` · ${aliases}` : '')
          ),
          ...(m.description ? [el('span', 'yt-model-description', m.description)] : [])
        );
        card.onclick = () => {
          this._picked = m.full_name;
          this._list
            .querySelectorAll('.yt-model')
            .forEach(c => c.classList.toggle('yt-selected', c === card));
          void this.refresh();
        };
        return card;
      })
    );
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    super.dispose();
  }

  private _vc = '';
  private _picked: string | null = null;
  private _started = false;
  private _admin = false;
  private _timer = 0;
  private _detail: ModelDetail | null = null;
  private _root = el('div', 'yt-models');
  private _vcSelect = el('select', 'yt-models-vc jp-mod-styled') as HTMLSelectElement;
  private _error = el('div', 'yt-error yt-models-error');
  private _list = el('div', 'yt-models-list');
  private _detailBox = el('div', 'yt-models-detail');
}

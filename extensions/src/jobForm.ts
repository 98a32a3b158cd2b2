// The "New job" form of the Jobs section: either fields (VC, name, command, shape, resources) or a
// whole spec document (YAML or JSON) typed into a textarea. The service validates; its sentence
// (422/403/404 `detail`) is shown next to the form.
// DOM hooks: form.yt-job-form (data-state: idle | sending | error | done, data-mode: fields |
// yaml), .yt-job-form-mode-fields / .yt-job-form-mode-yaml (radios), .yt-job-form-vc,
// .yt-job-form-name, .yt-job-form-command, .yt-job-form-kernel, .yt-job-form-framework,
// .yt-job-form-nodes, .yt-job-form-procs, .yt-job-form-cpu, .yt-job-form-memory,
// .yt-job-form-accel-type, .yt-job-form-accel-count, .yt-job-form-yaml, .yt-job-form-submit,
// .yt-job-form-cancel, .yt-job-form-error.
import { el } from './dom';
import { IJob, submitSpec, submitYAML } from './jobsApi';

const FRAMEWORKS = ['plain', 'pytorch', 'mpi', 'tensorflow', 'mindspore'];
const ACCELERATORS = ['', 'nvidia.com/gpu', 'huawei.com/Ascend910'];

export type FormValues = Record<string, string>;

/** Field values -> a job spec (plain values in, a plain dict out). Empty optional fields are left
 * out so the service's defaults apply; numbers that do not parse are sent as typed, for the
 * service to name the field. */
export function specFromFields(v: FormValues): Record<string, unknown> {
  const number = (text: string): number | string => {
    const n = Number(text);
    return text.trim() !== '' && isFinite(n) ? n : text;
  };
  const spec: Record<string, unknown> = {
    name: v.name.trim(),
    vc: v.vc,
    environment: v.image?.trim()
      ? { image: v.image.trim(), ...(v.kernel?.trim() ? { kernel: v.kernel.trim() } : {}) }
      : { kernel: v.kernel?.trim() || 'python3' },
    command: v.command
  };
  if (v.framework && v.framework !== 'plain') {
    spec.framework = v.framework;
  }
  for (const [key, field] of [
    ['nodes', 'nodes'],
    ['procs_per_node', 'procs'],
    ['cpu', 'cpu']
  ]) {
    if (v[field]?.trim()) {
      spec[key] = number(v[field]);
    }
  }
  if (v.memory?.trim()) {
    spec.memory = v.memory.trim();
  }
  if (v.accelType?.trim()) {
    spec.accelerator = {
      type: v.accelType.trim(),
      count: v.accelCount?.trim() ? number(v.accelCount) : 1
    };
  }
  return spec;
}

/** A spec as the text of the YAML textarea: JSON (valid YAML), without empty values. */
export function specText(spec: Record<string, unknown>): string {
  const kept = Object.fromEntries(
    Object.entries(spec).filter(([, value]) => value !== null && value !== undefined)
  );
  return JSON.stringify(kept, null, 2);
}

function labelled(text: string, input: HTMLElement): HTMLElement {
  const label = el('label', 'yt-job-form-field');
  label.append(el('span', 'yt-job-form-label', text), input);
  return label;
}

function input(cls: string, placeholder = '', type = 'text'): HTMLInputElement {
  const node = el('input', `${cls} jp-mod-styled`) as HTMLInputElement;
  node.type = type;
  node.placeholder = placeholder;
  return node;
}

function select(
  cls: string,
  options: string[],
  labels: Record<string, string> = {}
): HTMLSelectElement {
  const node = el('select', `${cls} jp-mod-styled`) as HTMLSelectElement;
  node.append(
    ...options.map(o => {
      const option = el('option', '', labels[o] ?? o) as HTMLOptionElement;
      option.value = o;
      return option;
    })
  );
  return node;
}

export class JobForm {
  readonly node = el('form', 'yt-job-form') as HTMLFormElement;

  /** `onSubmitted(job)` once the service accepted a job. */
  constructor(onSubmitted: (job: IJob) => void, onClose: () => void) {
    this._onSubmitted = onSubmitted;
    this.node.hidden = true;
    this.node.dataset.state = 'idle';
    this.node.noValidate = true;
    this.node.setAttribute('aria-label', 'Submit a job');
    const modes = el('div', 'yt-job-form-modes');
    modes.setAttribute('role', 'radiogroup');
    modes.setAttribute('aria-label', 'How to describe the job');
    for (const [mode, text] of [
      ['fields', 'Fields'],
      ['yaml', 'Spec (YAML or JSON)']
    ]) {
      const radio = el('input', `yt-job-form-mode-${mode}`) as HTMLInputElement;
      radio.type = 'radio';
      radio.name = 'yt-job-form-mode';
      radio.value = mode;
      radio.onchange = () => this.setMode(mode as 'fields' | 'yaml');
      const label = el('label', 'yt-job-form-mode');
      label.append(radio, el('span', '', text));
      modes.append(label);
    }
    this._command.placeholder = 'python train.py --epochs 3   (run by bash -c)';
    this._command.rows = 3;
    this._command.setAttribute('aria-label', 'Command');
    this._yaml.rows = 12;
    this._yaml.spellcheck = false;
    this._yaml.setAttribute('aria-label', 'Job spec (YAML or JSON)');
    this._yaml.placeholder =
      'name: train\nvc: vision\nenvironment: {kernel: python3}\ncommand: python train.py';
    this._kernel.value = 'python3';
    const accel = el('div', 'yt-job-form-row');
    accel.append(labelled('Accelerator', this._accelType), labelled('Count', this._accelCount));
    const shape = el('div', 'yt-job-form-row');
    shape.append(labelled('Nodes', this._nodes), labelled('Procs/node', this._procs));
    const resources = el('div', 'yt-job-form-row');
    resources.append(labelled('CPU', this._cpu), labelled('Memory', this._memory));
    const env = el('div', 'yt-job-form-row');
    env.append(labelled('Kernel', this._kernel), labelled('Image', this._image));
    this._fields.append(
      labelled('VC', this._vc),
      labelled('Name', this._name),
      labelled('Command', this._command),
      env,
      labelled('Framework', this._framework),
      shape,
      resources,
      accel
    );
    this._yamlBox.append(this._yaml);
    const submit = el(
      'button',
      'yt-job-form-submit jp-Button jp-mod-styled jp-mod-accept',
      'Submit'
    ) as HTMLButtonElement;
    submit.type = 'submit';
    const close = el(
      'button',
      'yt-job-form-cancel jp-Button jp-mod-styled jp-mod-reject',
      'Close'
    ) as HTMLButtonElement;
    close.type = 'button';
    close.onclick = () => {
      this.hide();
      onClose();
    };
    const buttons = el('div', 'yt-job-form-buttons');
    buttons.append(submit, close);
    this._error.hidden = true;
    this._error.setAttribute('role', 'alert');
    this._submit = submit;
    this.node.append(
      el('div', 'yt-job-form-title', 'Submit a job'),
      modes,
      this._fields,
      this._yamlBox,
      this._error,
      buttons
    );
    this.node.onsubmit = event => {
      event.preventDefault();
      void this._send();
    };
    this.setMode('fields');
  }

  /** The VCs offered (the user's), with `preferred` (this server's VC) chosen when nothing is. */
  setVCs(names: string[], preferred: string | null): void {
    const current = this._vc.value || preferred || '';
    this._vc.replaceChildren(
      ...names.map(name => {
        const option = el('option', '', name) as HTMLOptionElement;
        option.value = name;
        return option;
      })
    );
    if (names.includes(current)) {
      this._vc.value = current;
    }
  }

  setMode(mode: 'fields' | 'yaml'): void {
    this.node.dataset.mode = mode;
    this._fields.hidden = mode !== 'fields';
    this._yamlBox.hidden = mode !== 'yaml';
    (this.node.querySelector(`.yt-job-form-mode-${mode}`) as HTMLInputElement).checked = true;
  }

  /** Open the form empty (fields) or with `spec` as text (Clone). */
  show(spec?: Record<string, unknown>): void {
    this._error.hidden = true;
    this.node.dataset.state = 'idle';
    if (spec) {
      this._yaml.value = specText(spec);
      this.setMode('yaml');
    }
    this.node.hidden = false;
    (spec ? this._yaml : this._name).focus();
  }

  hide(): void {
    this.node.hidden = true;
  }

  private async _send(): Promise<void> {
    this._submit.disabled = true;
    this.node.dataset.state = 'sending';
    this._error.hidden = true;
    try {
      const job =
        this.node.dataset.mode === 'yaml'
          ? await submitYAML(this._yaml.value)
          : await submitSpec(
              specFromFields({
                vc: this._vc.value,
                name: this._name.value,
                command: this._command.value,
                kernel: this._kernel.value,
                image: this._image.value,
                framework: this._framework.value,
                nodes: this._nodes.value,
                procs: this._procs.value,
                cpu: this._cpu.value,
                memory: this._memory.value,
                accelType: this._accelType.value,
                accelCount: this._accelCount.value
              })
            );
      this.node.dataset.state = 'done';
      this.hide();
      this._onSubmitted(job);
    } catch (error) {
      this.node.dataset.state = 'error';
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    } finally {
      this._submit.disabled = false;
    }
  }

  private _onSubmitted: (job: IJob) => void;
  private _submit: HTMLButtonElement;
  private _fields = el('div', 'yt-job-form-fields');
  private _yamlBox = el('div', 'yt-job-form-yaml-box');
  private _error = el('div', 'yt-error yt-job-form-error');
  private _vc = select('yt-job-form-vc', []);
  private _name = input('yt-job-form-name', 'train (a-z, 0-9, -)');
  private _command = el('textarea', 'yt-job-form-command jp-mod-styled') as HTMLTextAreaElement;
  private _kernel = input('yt-job-form-kernel', 'python3');
  private _image = input('yt-job-form-image', 'optional: registry/name:tag');
  private _framework = select('yt-job-form-framework', FRAMEWORKS);
  private _nodes = input('yt-job-form-nodes', '1', 'number');
  private _procs = input('yt-job-form-procs', 'auto', 'number');
  private _cpu = input('yt-job-form-cpu', '1');
  private _memory = input('yt-job-form-memory', '2Gi');
  private _accelType = select('yt-job-form-accel-type', ACCELERATORS, { '': 'none' });
  private _accelCount = input('yt-job-form-accel-count', '1', 'number');
  private _yaml = el('textarea', 'yt-job-form-yaml jp-mod-styled') as HTMLTextAreaElement;
}

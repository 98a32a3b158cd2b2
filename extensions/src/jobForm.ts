// The job form (a main-area tab, views.ts): fields on the left and the whole spec as YAML on the
// right, kept in sync: editing a field rewrites the YAML, editing the YAML (when it parses) fills
// the fields. Fields the form has no input for (env, retries, ...) live on in the YAML. The YAML
// is what is submitted; the service validates and its sentence (422/403/404 `detail`) is shown
// under the form. Clone opens it with a job's spec in human units (specText.ts).
// DOM hooks: form.yt-job-form (data-state: idle | sending | error | done), .yt-job-form-vc,
// .yt-job-form-name, .yt-job-form-command, .yt-job-form-kernel, .yt-job-form-image,
// .yt-job-form-framework, .yt-job-form-nodes, .yt-job-form-procs, .yt-job-form-cpu,
// .yt-job-form-memory, .yt-job-form-accel-type, .yt-job-form-accel-count, .yt-job-form-dataset,
// .yt-job-form-yaml, .yt-job-form-yaml-error, .yt-job-form-submit, .yt-job-form-error.
import { el } from './dom';
import { IJob, submitYAML } from './jobsApi';
import { FormValues, fieldsFromSpec, parseSpecYAML, specFromFields, specYAML } from './specText';

const FRAMEWORKS = ['plain', 'pytorch', 'mpi', 'tensorflow', 'mindspore'];
const ACCELERATORS = ['', 'nvidia.com/gpu', 'huawei.com/Ascend910'];

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

function options(node: HTMLSelectElement, values: string[], labels: Record<string, string> = {}) {
  const current = node.value;
  node.replaceChildren(
    ...values.map(o => {
      const option = el('option', '', labels[o] ?? o) as HTMLOptionElement;
      option.value = o;
      return option;
    })
  );
  if (values.includes(current)) {
    node.value = current;
  }
}

function select(cls: string, values: string[], labels: Record<string, string> = {}) {
  const node = el('select', `${cls} jp-mod-styled`) as HTMLSelectElement;
  options(node, values, labels);
  return node;
}

export class JobForm {
  readonly node = el('form', 'yt-job-form') as HTMLFormElement;

  /** `onSubmitted(job)` once the service accepted a job. */
  constructor(onSubmitted: (job: IJob) => void) {
    this._onSubmitted = onSubmitted;
    this.node.dataset.state = 'idle';
    this.node.noValidate = true;
    this.node.setAttribute('aria-label', 'Submit a job');
    this._command.placeholder = 'python train.py --epochs 3   (run by bash -c)';
    this._command.rows = 3;
    this._command.setAttribute('aria-label', 'Command');
    this._yaml.rows = 24;
    this._yaml.spellcheck = false;
    this._yaml.setAttribute('aria-label', 'Job spec (YAML)');
    this._kernel.value = 'python3';
    const row = (...children: HTMLElement[]) => {
      const box = el('div', 'yt-job-form-row');
      box.append(...children);
      return box;
    };
    this._fields.append(
      labelled('VC', this._vc),
      labelled('Name', this._name),
      labelled('Command', this._command),
      row(labelled('Kernel', this._kernel), labelled('Image', this._image)),
      labelled('Framework', this._framework),
      row(labelled('Nodes', this._nodes), labelled('Procs/node', this._procs)),
      row(labelled('CPU', this._cpu), labelled('Memory', this._memory)),
      row(labelled('Accelerator', this._accelType), labelled('Count', this._accelCount)),
      labelled('Input dataset', this._dataset)
    );
    this._yamlError.hidden = true;
    this._yamlBox.append(
      el('div', 'yt-job-form-label', 'Spec (YAML, docs/jobs-spec.md)'),
      this._yaml,
      this._yamlError
    );
    const sides = el('div', 'yt-job-form-sides');
    sides.append(this._fields, this._yamlBox);
    const submit = el(
      'button',
      'yt-job-form-submit jp-Button jp-mod-styled jp-mod-accept',
      'Submit'
    ) as HTMLButtonElement;
    submit.type = 'submit';
    this._error.hidden = true;
    this._error.setAttribute('role', 'alert');
    this._submit = submit;
    const buttons = el('div', 'yt-job-form-buttons');
    buttons.append(submit);
    this.node.append(el('div', 'yt-job-form-title', 'Submit a job'), sides, this._error, buttons);
    this._fields.addEventListener('input', () => this._fromFields());
    this._fields.addEventListener('change', () => this._fromFields());
    this._yaml.addEventListener('input', () => this._fromYAML());
    this.node.onsubmit = event => {
      event.preventDefault();
      void this._send();
    };
    this._fromFields();
  }

  /** The VCs offered (the user's), with `preferred` (this server's VC) chosen when nothing is. */
  setVCs(names: string[], preferred: string | null): void {
    const current = this._vc.value || preferred || '';
    options(this._vc, names);
    if (names.includes(current)) {
      this._vc.value = current;
    }
    this._fromFields();
  }

  /** The datasets offered as the input (`vc/name`); a chosen one not listed stays as chosen. */
  setDatasets(names: string[]): void {
    const current = this._dataset.value;
    const values = ['', ...names];
    if (current && !values.includes(current)) {
      values.push(current);
    }
    options(this._dataset, values, { '': 'none' });
    this._dataset.value = current;
  }

  /** Fill the form from `spec` (Clone): the YAML in human units, the fields from it. */
  load(spec: Record<string, unknown>): void {
    this._yaml.value = specYAML(spec);
    this._fromYAML();
  }

  /** The spec the YAML holds now (the last one that parsed). */
  get spec(): Record<string, unknown> {
    return this._spec;
  }

  private _values(): FormValues {
    return {
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
      accelCount: this._accelCount.value,
      dataset: this._dataset.value
    };
  }

  private _fromFields(): void {
    let command: unknown = this._command.value;
    this._spec = specFromFields(this._values(), this._spec);
    // a list command shown as JSON in the field stays a list
    if (typeof command === 'string' && command.trim().startsWith('[')) {
      try {
        command = JSON.parse(command);
        this._spec.command = command;
      } catch {
        // a string that starts with [
      }
    }
    this._yaml.value = specYAML(this._spec);
    this._yamlError.hidden = true;
  }

  private _fromYAML(): void {
    const spec = parseSpecYAML(this._yaml.value);
    if (spec instanceof Error) {
      this._yamlError.textContent = spec.message;
      this._yamlError.hidden = false;
      return;
    }
    this._yamlError.hidden = true;
    this._spec = spec;
    const values = fieldsFromSpec(spec);
    if (values.dataset) {
      this.setDatasets(
        Array.from(this._dataset.options)
          .map(o => o.value)
          .filter(Boolean)
          .concat(values.dataset)
          .filter((v, i, all) => all.indexOf(v) === i)
      );
    }
    if (values.vc && !Array.from(this._vc.options).some(o => o.value === values.vc)) {
      const option = el('option', '', values.vc) as HTMLOptionElement;
      option.value = values.vc;
      this._vc.append(option);
    }
    const inputs: [HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, string][] = [
      [this._vc, values.vc],
      [this._name, values.name],
      [this._command, values.command],
      [this._kernel, values.kernel],
      [this._image, values.image],
      [this._framework, values.framework],
      [this._nodes, values.nodes],
      [this._procs, values.procs],
      [this._cpu, values.cpu],
      [this._memory, values.memory],
      [this._accelType, values.accelType],
      [this._accelCount, values.accelCount],
      [this._dataset, values.dataset]
    ];
    for (const [node, value] of inputs) {
      node.value = value;
    }
  }

  private async _send(): Promise<void> {
    this._submit.disabled = true;
    this.node.dataset.state = 'sending';
    this._error.hidden = true;
    try {
      const job = await submitYAML(this._yaml.value);
      this.node.dataset.state = 'done';
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
  private _spec: Record<string, unknown> = {};
  private _submit: HTMLButtonElement;
  private _fields = el('div', 'yt-job-form-fields');
  private _yamlBox = el('div', 'yt-job-form-yaml-box');
  private _yamlError = el('div', 'yt-error yt-job-form-yaml-error');
  private _error = el('div', 'yt-error yt-job-form-error');
  private _vc = select('yt-job-form-vc', []);
  private _name = input('yt-job-form-name', 'train (a-z, 0-9, -)');
  private _command = el('textarea', 'yt-job-form-command jp-mod-styled') as HTMLTextAreaElement;
  private _kernel = input('yt-job-form-kernel', 'python3');
  private _image = input('yt-job-form-image', 'optional: registry/name:tag');
  private _framework = select('yt-job-form-framework', FRAMEWORKS);
  private _nodes = input('yt-job-form-nodes', '1', 'number');
  private _procs = input('yt-job-form-procs', 'auto', 'number');
  private _cpu = input('yt-job-form-cpu', '1 or 500m');
  private _memory = input('yt-job-form-memory', '2Gi');
  private _accelType = select('yt-job-form-accel-type', ACCELERATORS, { '': 'none' });
  private _accelCount = input('yt-job-form-accel-count', '1', 'number');
  private _dataset = select('yt-job-form-dataset', [''], { '': 'none' });
  private _yaml = el('textarea', 'yt-job-form-yaml jp-mod-styled') as HTMLTextAreaElement;
}

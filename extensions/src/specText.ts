// A job spec as the form's YAML, in the units people write (docs/jobs-spec.md): memory `2Gi`,
// cpu `500m` or `2`, and as the form's field values. Pure functions (tests/extensions/test_spec_text.py).
import { parse, stringify } from 'yaml';

const BINARY = ['Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/** Bytes as a quantity: the largest binary unit that divides it exactly (`2147483648` -> `2Gi`). */
export function memoryText(value: unknown): unknown {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    return value;
  }
  let amount = value;
  let unit = -1;
  while (amount % 1024 === 0 && unit < BINARY.length - 1) {
    amount /= 1024;
    unit += 1;
  }
  return unit < 0 ? value : `${amount}${BINARY[unit]}`;
}

/** Cores as a quantity: whole numbers stay numbers, fractions become millicores (`0.5` -> `500m`). */
export function cpuText(value: unknown): unknown {
  if (typeof value !== 'number' || Number.isInteger(value)) {
    return value;
  }
  const milli = Math.round(value * 1000);
  return Math.abs(milli - value * 1000) < 1e-6 ? `${milli}m` : value;
}

/** The spec without empty values and with memory/cpu in human units. */
export function humanSpec(spec: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(spec)) {
    if (value === null || value === undefined) {
      continue;
    }
    if (key === 'memory') {
      kept[key] = memoryText(value);
    } else if (key === 'cpu') {
      kept[key] = cpuText(value);
    } else if (key === 'environment' && typeof value === 'object') {
      kept[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== null && v !== '')
      );
    } else {
      kept[key] = value;
    }
  }
  return kept;
}

/** The YAML the form shows for `spec` (block style, no line folding). */
export function specYAML(spec: Record<string, unknown>): string {
  return stringify(humanSpec(spec), { lineWidth: 0 });
}

/** The form's YAML as a spec object, or an Error naming the line (the service re-validates). */
export function parseSpecYAML(text: string): Record<string, unknown> | Error {
  try {
    const value = text.trim() ? parse(text) : {};
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return new Error('the spec is a mapping of fields (name: ..., vc: ..., command: ...)');
    }
    return value as Record<string, unknown>;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

export type FormValues = Record<string, string>;

/** Field values -> a job spec over `base` (what the YAML holds besides the fields). Empty optional
 * fields are left out so the service's defaults apply; numbers that do not parse are kept as
 * typed, for the service to name the field. */
export function specFromFields(
  v: FormValues,
  base: Record<string, unknown> = {}
): Record<string, unknown> {
  const number = (text: string): number | string => {
    const n = Number(text);
    return text.trim() !== '' && isFinite(n) ? n : text.trim();
  };
  const spec: Record<string, unknown> = { ...base };
  spec.name = v.name?.trim() ?? '';
  spec.vc = v.vc ?? '';
  spec.environment = v.image?.trim()
    ? { image: v.image.trim(), ...(v.kernel?.trim() ? { kernel: v.kernel.trim() } : {}) }
    : { kernel: v.kernel?.trim() || 'python3' };
  spec.command = v.command ?? '';
  spec.framework = v.framework && v.framework !== 'plain' ? v.framework : undefined;
  const optional: [string, string, boolean][] = [
    ['nodes', 'nodes', true],
    ['procs_per_node', 'procs', true],
    ['cpu', 'cpu', true],
    ['memory', 'memory', false]
  ];
  for (const [key, field, numeric] of optional) {
    const text = v[field]?.trim() ?? '';
    spec[key] = text ? (numeric ? number(text) : text) : undefined;
  }
  spec.accelerator = v.accelType?.trim()
    ? { type: v.accelType.trim(), count: v.accelCount?.trim() ? number(v.accelCount) : 1 }
    : undefined;
  const others = Array.isArray(base.inputs) ? base.inputs.slice(1) : [];
  const first = Array.isArray(base.inputs) ? (base.inputs[0] as Record<string, unknown>) : null;
  const chosen = v.dataset?.trim()
    ? [{ ...(first?.dataset === v.dataset.trim() ? first : {}), dataset: v.dataset.trim() }]
    : [];
  spec.inputs = chosen.length || others.length ? [...chosen, ...others] : undefined;
  return Object.fromEntries(Object.entries(spec).filter(([, value]) => value !== undefined));
}

/** A spec -> the field values (the inverse of `specFromFields` for what the fields show). */
export function fieldsFromSpec(spec: Record<string, unknown>): FormValues {
  const text = (value: unknown): string =>
    value === null || value === undefined
      ? ''
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);
  const env = (spec.environment ?? {}) as Record<string, unknown>;
  const accel = (spec.accelerator ?? {}) as Record<string, unknown>;
  const human = parseSpecYAML(specYAML(spec)) as Record<string, unknown>;
  const inputs = Array.isArray(spec.inputs) ? spec.inputs : [];
  const first = (inputs[0] ?? {}) as Record<string, unknown>;
  return {
    vc: text(spec.vc),
    name: text(spec.name),
    command: Array.isArray(spec.command) ? JSON.stringify(spec.command) : text(spec.command),
    kernel: text(env.kernel),
    image: text(env.image),
    framework: text(spec.framework) || 'plain',
    nodes: text(spec.nodes),
    procs: text(spec.procs_per_node),
    cpu: text(human.cpu),
    memory: text(human.memory),
    accelType: text(accel.type),
    accelCount: text(accel.count),
    dataset: text(first.dataset)
  };
}

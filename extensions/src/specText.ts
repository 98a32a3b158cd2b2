// A job spec as the form's YAML, in the units people write (docs/jobs-spec.md): memory `2Gi`,
// cpu `500m` or `2`. Pure functions: a spec in, text out, and back.
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

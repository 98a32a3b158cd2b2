// The Models view's "try it" form: an Open Inference Protocol (KServe V2) infer request from
// what is typed, an example request from the version's signature, and the answer as lines.
// Pure functions, no DOM (tests/extensions/test_models_view.py). The platform's endpoint route
// checks the request against the signature again and the server answers for the rest.

/** One tensor of a V2 request or answer (`data` flat, row-major, or nested). */
export interface IV2Tensor {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
  parameters?: Record<string, unknown>;
}

export interface IV2Request {
  inputs: IV2Tensor[];
  outputs?: { name: string; parameters?: Record<string, unknown> }[];
  id?: string;
  parameters?: Record<string, unknown>;
}

export interface IV2Response {
  model_name: string;
  model_version?: string | null;
  id?: string | null;
  outputs: IV2Tensor[];
}

/** A tensor of a signature: `shape` may hold -1 (any size). */
export interface ITensorSpec {
  name: string;
  datatype: string;
  shape?: number[];
}

/** At most this many values are shown per output (the raw answer has them all). */
export const SHOWN_VALUES = 20;
/** An example tensor has at most this many values (a large fixed shape gets one row). */
export const EXAMPLE_VALUES = 64;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The signature's inputs, keeping only well-formed ones. */
export function signatureInputs(signature: Record<string, unknown>): ITensorSpec[] {
  const inputs = Array.isArray(signature.inputs) ? signature.inputs : [];
  return inputs
    .filter(isRecord)
    .filter(t => typeof t.name === 'string' && typeof t.datatype === 'string')
    .map(t => ({
      name: t.name as string,
      datatype: t.datatype as string,
      shape: Array.isArray(t.shape) ? t.shape.filter(n => typeof n === 'number') : []
    }));
}

function zero(datatype: string): unknown {
  return datatype === 'BOOL' ? false : datatype === 'BYTES' ? '' : 0;
}

/** An example request for `signature` (pretty JSON): each input with -1 read as 1 and zeros for
 * data, one tensor a line; a signature without inputs gives a template to fill in. */
export function exampleRequest(signature: Record<string, unknown>): string {
  const specs = signatureInputs(signature);
  const tensors = (
    specs.length ? specs : [{ name: 'input-0', datatype: 'FP32', shape: [1, 1] }]
  ).map(t => {
    let shape = (t.shape?.length ? t.shape : [1]).map(n => (n < 0 ? 1 : n));
    if (shape.reduce((a, b) => a * b, 1) > EXAMPLE_VALUES) {
      shape = [1, ...shape.slice(1)];
    }
    const size = Math.min(
      shape.reduce((a, b) => a * b, 1),
      EXAMPLE_VALUES
    );
    return { name: t.name, datatype: t.datatype, shape, data: Array(size).fill(zero(t.datatype)) };
  });
  return `{"inputs": [\n${tensors.map(t => `  ${JSON.stringify(t)}`).join(',\n')}\n]}`;
}

/** The shape of a rectangular nested array (`[[1,2],[3,4]]` -> [2, 2]), or null when ragged. */
export function shapeOf(value: unknown): number[] | null {
  if (!Array.isArray(value)) {
    return [];
  }
  if (value.length === 0) {
    return [0];
  }
  const inner = value.map(shapeOf);
  const first = inner[0];
  if (first === null || inner.some(s => s === null || s.join(',') !== first.join(','))) {
    return null;
  }
  return [value.length, ...first];
}

const flat = (value: unknown): unknown[] =>
  Array.isArray(value) ? value.flatMap(v => flat(v)) : [value];

/** What is typed -> a V2 infer request, or an Error with a sentence. Either a request
 * (`{"inputs": [...]}`), or, for a model with one input, its rows as a JSON array
 * (`[[5.1, 3.5, 1.4, 0.2]]`), sent as that input with the rows' shape. */
export function parseInferRequest(
  typed: string,
  signature: Record<string, unknown>
): IV2Request | Error {
  let value: unknown;
  try {
    value = JSON.parse(typed);
  } catch (error) {
    return new Error(`the request is not JSON: ${error instanceof Error ? error.message : error}`);
  }
  if (Array.isArray(value)) {
    const specs = signatureInputs(signature);
    if (specs.length !== 1) {
      return new Error(
        'rows alone are for a model with one input in its signature; write the request ' +
          '{"inputs": [{"name", "datatype", "shape", "data"}]}'
      );
    }
    const shape = shapeOf(value);
    if (shape === null) {
      return new Error('the rows are not all of one length');
    }
    return {
      inputs: [{ name: specs[0].name, datatype: specs[0].datatype, shape, data: flat(value) }]
    };
  }
  if (!isRecord(value) || !Array.isArray(value.inputs) || !value.inputs.length) {
    return new Error(
      'a V2 infer request is {"inputs": [{"name", "datatype", "shape", "data"}, ...]}' +
        ' (or, for a model with one input, its rows as a JSON array)'
    );
  }
  const bad = value.inputs.findIndex(
    t => !isRecord(t) || typeof t.name !== 'string' || typeof t.datatype !== 'string'
  );
  if (bad >= 0) {
    return new Error(`inputs[${bad}] needs a name and a datatype`);
  }
  return value as unknown as IV2Request;
}

/** The answer's outputs as lines: `name DATATYPE [shape]: v1, v2, …`. */
export function responseLines(answer: unknown): string[] {
  if (!isRecord(answer) || !Array.isArray(answer.outputs)) {
    return ['(the server answered without outputs)'];
  }
  return answer.outputs.filter(isRecord).map(o => {
    const values = flat(o.data ?? []);
    const shown = values
      .slice(0, SHOWN_VALUES)
      .map(v => (typeof v === 'string' ? v : JSON.stringify(v)));
    const more = values.length > SHOWN_VALUES ? `, … (${values.length} values)` : '';
    const shape = Array.isArray(o.shape) ? `[${o.shape.join(', ')}]` : '';
    return `${String(o.name)} ${String(o.datatype ?? '')} ${shape}: ${shown.join(', ')}${more}`;
  });
}

// Model registry and endpoint calls of the Models view: the platform's /models and /endpoints
// routes through yitong/api/ (the server extension adds the server's token), and a V2 infer
// request through the platform's endpoint route (`/endpoints/{name}/v2/models/{name}/infer`).
import { getJSON, requestJSON } from './api';
import type { Schemas } from './api';
import type { IV2Request, IV2Response } from './inferRequest';

/** A model as the platform answers it (generated `ModelOut`). */
export type IModel = Schemas['ModelOut'];
/** A model version with its metadata, lineage and aliases (generated `ModelVersionOut`). */
export type IModelVersion = Schemas['ModelVersionOut'];
/** Versions' metrics side by side (generated `ModelComparison`); each of `versions` is
 * `{number, aliases, metrics: {name: value | null}}`. */
export type IComparison = Schemas['ModelComparison'];
/** An endpoint (generated `EndpointOut`); `state` is queued, starting, ready or failed. */
export type IEndpoint = Schemas['EndpointOut'];

/** `vision/iris` -> `yitong/api/models/vision/iris` with each part escaped. */
export function modelPath(model: string): string {
  return 'yitong/api/models/' + model.split('/').map(encodeURIComponent).join('/');
}

export const fetchModels = (vc?: string): Promise<IModel[]> =>
  getJSON<IModel[]>(`yitong/api/models${vc ? `?vc=${encodeURIComponent(vc)}` : ''}`);

export const fetchModelVersions = (model: string): Promise<IModelVersion[]> =>
  getJSON<IModelVersion[]>(`${modelPath(model)}/versions`);

/** The compare route over `refs` (every version when empty). */
export const fetchComparison = (model: string, refs: (number | string)[]): Promise<IComparison> =>
  getJSON<IComparison>(
    `${modelPath(model)}/compare` +
      (refs.length ? `?versions=${encodeURIComponent(refs.join(','))}` : '')
  );

export const fetchEndpoints = (): Promise<IEndpoint[]> =>
  getJSON<IEndpoint[]>('yitong/api/endpoints');

/** One endpoint: queued (the quota's reason), starting, ready (a roll under way in `reason`), failed. */
export const fetchEndpoint = (name: string): Promise<IEndpoint> =>
  getJSON<IEndpoint>(`yitong/api/endpoints/${encodeURIComponent(name)}`);

/** POST a V2 infer request to an endpoint (its `url`: `endpoints/<name>/v2/models/<name>`);
 * rejects with the sentence of the platform or the server (`detail`, or V2's `error`). */
export function infer(endpoint: IEndpoint, request: IV2Request): Promise<IV2Response> {
  const path = endpoint.url.split('/').map(encodeURIComponent).join('/');
  return requestJSON<IV2Response>('POST', `yitong/api/${path}/infer`, request);
}

/** A key of an endpoint (generated `EndpointKeyOut`): never the key itself, only its prefix. */
export type IEndpointKey = Schemas['EndpointKeyOut'];
/** A key just issued (generated `EndpointKeyNew`): `key` is the secret, answered this once. */
export type INewEndpointKey = Schemas['EndpointKeyNew'];
/** The caller as the platform sees them (generated `Me`): `admin` shows the keys control. */
export type IMe = Schemas['Me'];

export const fetchMe = (): Promise<IMe> => getJSON<IMe>('yitong/api/me');

const keysPath = (endpoint: string): string =>
  `yitong/api/endpoints/${encodeURIComponent(endpoint)}/keys`;

/** Admins: an endpoint's keys, revoked ones included. */
export const fetchKeys = (endpoint: string): Promise<IEndpointKey[]> =>
  getJSON<IEndpointKey[]>(keysPath(endpoint));

/** Admins: issue a key for callers outside the endpoint's VC; its secret is in the answer only. */
export const issueKey = (endpoint: string, note: string): Promise<INewEndpointKey> =>
  requestJSON<INewEndpointKey>('POST', keysPath(endpoint), { note });

/** Admins: revoke a key; the next request with it is refused. */
export const revokeKey = (endpoint: string, id: number): Promise<null> =>
  requestJSON<null>('DELETE', `${keysPath(endpoint)}/${encodeURIComponent(String(id))}`);

// What the Models view's deployments say of an endpoint's replicas and keys (pure: no DOM, run
// under node by tests/extensions/test_models_view.py).

/** The fields of an endpoint these lines read (generated `EndpointOut`). */
export interface IReplicaFacts {
  scale?: number;
  replicas: {
    version: number;
    job: number;
    job_state: string;
    routed: boolean;
    draining: boolean;
  }[];
}

/** The fields of a key these lines read (generated `EndpointKeyOut`). */
export interface IKeyFacts {
  id: number;
  prefix: string;
  note: string;
  created_by: string;
  created: string;
  revoked?: string | null;
}

/** `2 of 3 replicas ready · 1 queued` (draining ones are not counted). */
export function replicaSummary(e: IReplicaFacts): string {
  const live = e.replicas.filter(r => !r.draining);
  const ready = live.filter(r => r.routed).length;
  const queued = live.filter(r => !r.routed && r.job_state === 'queued').length;
  const wanted = Math.max(e.scale ?? 1, 1);
  const versions = new Set(live.map(r => r.version)).size || 1;
  const total = wanted * versions;
  const word = total === 1 ? 'replica' : 'replicas';
  return `${ready} of ${total} ${word} ready` + (queued ? ` · ${queued} queued` : '');
}

/** One key as listed: `yte_ab12cd34... · partner A · admin · 2026-11-26 04:40 · in use`. */
export function keyLine(k: IKeyFacts): string {
  const when = k.created.slice(0, 16).replace('T', ' ');
  const parts = [`${k.prefix}...`, ...(k.note ? [k.note] : []), k.created_by, when];
  return parts.join(' · ') + (k.revoked ? ' · revoked' : ' · in use');
}

// A VC drawn as a card: quota / used / free per resource as bars (the sidebar and the VC tab).
// DOM hooks: .yt-vc[data-vc=NAME] (.yt-vc-name, .yt-vc-badge, .yt-vc-description),
// .yt-resource[data-resource=R] (data-quota/data-used/data-free).
import { IVC, formatAmount, resourceNames } from './api';
import { el } from './dom';

function resourceRow(vc: IVC, name: string): HTMLElement {
  const quota = vc.quota?.[name];
  const used = vc.used?.[name] ?? 0;
  const free = vc.free?.[name];
  const row = el('div', 'yt-resource');
  row.dataset.resource = name;
  row.dataset.quota = String(quota ?? '');
  row.dataset.used = String(used);
  row.dataset.free = String(free ?? '');
  const label = el('div', 'yt-resource-label');
  label.append(
    el('span', 'yt-resource-name', name),
    el(
      'span',
      'yt-resource-amounts',
      `${formatAmount(name, used)} / ${formatAmount(name, quota)} used · ${formatAmount(name, free)} free`
    )
  );
  const bar = el('div', 'yt-bar');
  const fill = el('div', 'yt-bar-used');
  const share = quota ? Math.min(100, (100 * used) / quota) : 0;
  fill.style.width = `${share}%`;
  if (share >= 90) {
    fill.classList.add('yt-bar-full');
  }
  bar.title = quota ? `${Math.round(share)}% used` : 'no quota';
  bar.appendChild(fill);
  row.append(label, bar);
  return row;
}

export function vcCard(vc: IVC, current: string | null): HTMLElement {
  const card = el('div', 'yt-vc');
  card.dataset.vc = vc.name;
  const title = el('div', 'yt-vc-name', vc.name);
  if (vc.name === current) {
    card.classList.add('yt-current');
    title.appendChild(el('span', 'yt-vc-badge', 'this server'));
  }
  card.appendChild(title);
  if (vc.description) {
    card.appendChild(el('div', 'yt-vc-description', vc.description));
  }
  for (const name of resourceNames(vc)) {
    card.appendChild(resourceRow(vc, name));
  }
  return card;
}

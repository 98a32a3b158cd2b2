// The Yitong sidebar icon: three stacked bars (a cluster's share of resources).
import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="3" y="3" width="18" height="4" rx="1"/>
    <rect x="3" y="10" width="12" height="4" rx="1"/>
    <rect x="3" y="17" width="7" height="4" rx="1"/>
    <circle cx="19" cy="19" r="2.5"/>
  </g>
</svg>`;

export const yitongIcon = new LabIcon({ name: 'yitong-lab:yitong', svgstr });

/** Jobs: a terminal window with a prompt (the launcher card and the Jobs tab). */
export const jobsIcon = new LabIcon({
  name: 'yitong-lab:jobs',
  svgstr: `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M3 4h18a1 1 0 0 1 1 1v14a1 1 0 0 1-1 1H3a1 1 0 0 1-1-1V5a1 1 0 0 1 1-1zm1 4v10h16V8H4z"/>
    <path d="M6.3 10.3l1.4-1.4L11.8 13l-4.1 4.1-1.4-1.4L9 13z"/>
    <rect x="12" y="15.5" width="6" height="1.8" rx=".5"/>
  </g>
</svg>`
});

/** Datasets: a stack of disks (the launcher card and the Datasets tab). */
export const datasetsIcon = new LabIcon({
  name: 'yitong-lab:datasets',
  svgstr: `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <ellipse cx="12" cy="5" rx="8" ry="3"/>
    <path d="M4 7.5v4c0 1.7 3.6 3 8 3s8-1.3 8-3v-4c0 1.7-3.6 3-8 3s-8-1.3-8-3z"/>
    <path d="M4 14v4c0 1.7 3.6 3 8 3s8-1.3 8-3v-4c0 1.7-3.6 3-8 3s-8-1.3-8-3z"/>
  </g>
</svg>`
});

/** Experiments: a search curve over a grid of trials (the launcher card and the Experiments tabs). */
export const experimentsIcon = new LabIcon({
  name: 'yitong-lab:experiments',
  svgstr: `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M3 3h2v16h16v2H3z"/>
    <circle cx="8" cy="15" r="1.6"/>
    <circle cx="12" cy="10" r="1.6"/>
    <circle cx="15" cy="13" r="1.6"/>
    <circle cx="19" cy="6" r="1.6"/>
    <path d="M7 9h3v1.8H7zM13 6h3v1.8h-3z"/>
  </g>
</svg>`
});

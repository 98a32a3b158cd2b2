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

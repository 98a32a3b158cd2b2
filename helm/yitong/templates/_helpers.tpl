{{- /* Names: fixed, like zero-to-jupyterhub's (one release per namespace); the hub config relies on them. */}}
{{- define "yitong.platform" -}}yitong-platform{{- end }}
{{- define "yitong.settingsSecret" -}}yitong-settings{{- end }}
{{- define "yitong.clusterName" -}}yitong-{{ .Release.Namespace }}{{- end }}
{{- define "yitong.proxyURL" -}}http://proxy-public.{{ .Release.Namespace }}.svc.cluster.local{{- end }}

{{- define "yitong.labels" -}}
app.kubernetes.io/name: yitong
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end }}

{{- define "yitong.platformSelector" -}}
app.kubernetes.io/name: yitong
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: platform
{{- end }}

{{- /* The labels of a VC's objects: the same as the platform service's builders (jobs/kueue.py, jobs/netpol.py). */}}
{{- define "yitong.vcLabels" -}}
app.kubernetes.io/managed-by: yitong
yitong.io/vc: {{ . | quote }}
{{- end }}

{{- /* A resource amount as Kubernetes writes it: a whole number stays whole (Helm reads YAML numbers as floats). */}}
{{- define "yitong.quantity" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- end }}

{{- /* The Kubernetes backend's section with the chart's defaults filled in. */}}
{{- define "yitong.kube" -}}
{{- $kube := deepCopy (dig "kubernetes" dict (.Values.backends | default dict)) }}
{{- $_ := set $kube "namespace_prefix" ($kube.namespace_prefix | default "yitong-") }}
{{- /* values.yaml sets cohort and network_policy: a key that is gone was set to null (Helm drops nulls) */}}
{{- if not (hasKey $kube "cohort") }}{{ $_ := set $kube "cohort" nil }}{{ end }}
{{- if kindIs "map" $kube.network_policy }}
{{- $_ := set $kube.network_policy "hub_namespace" ($kube.network_policy.hub_namespace | default .Release.Namespace) }}
{{- else }}
{{- $_ := set $kube "network_policy" nil }}
{{- end }}
{{- toYaml $kube }}
{{- end }}

{{- /* The Kueue ResourceFlavors (jobs/kueue.py default_flavors): default for cpu and memory, one per device type. */}}
{{- define "yitong.flavors" -}}
{{- $out := list (dict "name" "default" "resources" (list "cpu" "memory")) }}
{{- range $type := keys (.Values.devices | default dict) | sortAlpha }}
{{- $dev := index $.Values.devices $type }}
{{- if $dev }}
{{- $name := $dev.flavor | default ($type | replace "/" "-" | replace "." "-" | lower) }}
{{- $out = append $out (dict "name" $name "resources" (list $type) "nodeLabels" ($dev.node_selector | default dict) "tolerations" ($dev.tolerations | default list)) }}
{{- end }}
{{- end }}
{{- toYaml (dict "flavors" $out) }}
{{- end }}

{{- /* Seconds as Prometheus durations, as alerts/config.py `_seconds` writes them: "15s" (rounded half to even). */}}
{{- define "yitong.seconds" -}}{{ printf "%.0fs" (float64 .) }}{{- end }}

{{- /* The scrape and evaluation intervals of the `alerts` settings section (alerts/settings.py defaults). */}}
{{- define "yitong.scrapeInterval" -}}{{ dig "scrape_interval" 15.0 (.Values.alerts | default dict) }}{{- end }}
{{- define "yitong.evaluationInterval" -}}{{ dig "evaluation_interval" 15.0 (.Values.alerts | default dict) }}{{- end }}

{{- /* A z2jh profileList entry's slug: its own, else its display name slugified (vcs/profile_list.py slugify). */}}
{{- define "yitong.slug" -}}
{{- if .slug }}{{ toString .slug }}{{ else }}{{ regexReplaceAll "[^a-z0-9]+" (lower (toString (.display_name | default ""))) "-" | trimAll "-" }}{{ end }}
{{- end }}

{{- /*
  Stop with a sentence, in `helm template`/`install` and in `helm lint` alike. Helm's lint mode turns
  `fail` into a log line and renders on, so a check that only calls `fail` passes lint and fails the
  install; after `fail` (which ends a real render with the sentence) the include of a template named
  after the sentence, which does not exist, is an error lint reports, with the sentence quoted.
*/}}
{{- define "yitong.fail" -}}
{{- fail . -}}
{{- include (printf "yitong: %s" .) dict -}}
{{- end }}

{{- /* The names of values.yaml's own profiles (test_chart.py keeps them equal to its `profiles`). */}}
{{- define "yitong.chartProfiles" -}}cpu-small,gpu-1{{- end }}

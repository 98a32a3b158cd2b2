{{- /*
  The auth section's cross-checks, with the sentences of yitong_spawner/oauth.py validate()
  (tests/helm/test_chart.py compares them): the hub would refuse these values at start.
*/}}
{{- define "yitong.checkAuth" -}}
{{- $auth := .Values.auth | default dict }}
{{- $kind := $auth.kind | default "password" }}
{{- $common := list "kind" "client_id" "client_secret" "client_secret_file" "username_claim" "scope" "groups_claim" "allowed_groups" "admin_groups" "allow_all" "login_service" "callback_url" }}
{{- $keys := dict "password" (list "kind") "generic" (concat $common (list "issuer" "authorize_url" "token_url" "userdata_url")) "azuread" (concat $common (list "tenant_id")) }}
{{- $allowed := index $keys $kind }}
{{- $unknown := list }}
{{- range $k := keys $auth | sortAlpha }}{{ if not (has $k $allowed) }}{{ $unknown = append $unknown $k }}{{ end }}{{ end }}
{{- if $unknown }}
{{- include "yitong.fail" (printf "auth: unknown key(s) for kind %s: %s. Allowed: %s" $kind (join ", " $unknown) (join ", " $allowed)) }}
{{- end }}
{{- if ne $kind "password" }}
{{- if not $auth.client_id }}
{{- include "yitong.fail" (printf "auth.client_id is required for kind %s: the id the provider gave this hub" $kind) }}
{{- end }}
{{- if eq (empty $auth.client_secret) (empty $auth.client_secret_file) }}
{{- fail "auth: give exactly one of client_secret_file (a file readable only by the hub; preferred) or client_secret (inline)" }}
{{- end }}
{{- if and (eq $kind "generic") (not $auth.issuer) }}
{{- $missing := list }}
{{- range $k := list "authorize_url" "token_url" "userdata_url" }}{{ if not (index $auth $k) }}{{ $missing = append $missing $k }}{{ end }}{{ end }}
{{- if $missing }}
{{- include "yitong.fail" (printf "auth: give issuer (OpenID discovery) or all of authorize_url, token_url, userdata_url; missing %s" (join ", " $missing)) }}
{{- end }}
{{- end }}
{{- if and (eq $kind "azuread") (not $auth.tenant_id) }}
{{- fail "auth.tenant_id is required for kind azuread: your directory (tenant) id" }}
{{- end }}
{{- if and (not $auth.allowed_groups) (not $auth.allow_all) }}
{{- fail "auth: name allowed_groups (the provider's groups whose members may log in), or set allow_all: true to let everyone the provider knows log in" }}
{{- end }}
{{- if .Values.groups }}
{{- include "yitong.fail" (printf "groups: with auth.kind %s the provider's groups are the hub's groups (set at every login); remove the groups section and name the provider's groups in vcs.<vc>.groups" $kind) }}
{{- end }}
{{- end }}
{{- end }}

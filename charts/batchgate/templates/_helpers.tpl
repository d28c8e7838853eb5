{{/*
A file of manifests/ (linked under files/) with batchgate-system replaced by
the release's namespace: the chart renders the shipped objects, so it and
manifests/ cannot drift apart (tests/e2e_helm.rs).
*/}}
{{- define "batchgate.file" -}}
{{ replace "batchgate-system" .root.Release.Namespace (.root.Files.Get .path) }}
{{- end }}

{{/* Values the chart cannot render, refused with what would be right. */}}
{{- define "batchgate.validate" -}}
{{- if not (has .Values.certificates.mode (list "secret" "certManager" "managed")) }}
{{- fail (printf "certificates.mode: %q is not one of secret, certManager, managed" .Values.certificates.mode) }}
{{- end }}
{{- if not (has .Values.antiAffinity (list "preferred" "required" "none")) }}
{{- fail (printf "antiAffinity: %q is not one of preferred, required, none" .Values.antiAffinity) }}
{{- end }}
{{- if not (has .Values.webhook.failurePolicy (list "Fail" "Ignore")) }}
{{- fail (printf "webhook.failurePolicy: %q is not one of Fail, Ignore" .Values.webhook.failurePolicy) }}
{{- end }}
{{- if and .Values.besideKueue (eq .Values.config.admission "builtin") }}
{{- fail "besideKueue: Kueue admits; config.admission must be external or unset, not builtin" }}
{{- end }}
{{- range $i, $k := .Values.appwrapper.wrappedKinds }}
{{- if not (and (kindIs "slice" $k.apiGroups) (kindIs "slice" $k.resources) $k.resources) }}
{{- fail (printf "appwrapper.wrappedKinds[%d]: needs apiGroups and resources, as lists (apiGroups: [\"batch\"], resources: [\"jobs\"])" $i) }}
{{- end }}
{{- end }}
{{- if and .Values.config.admission (not (has .Values.config.admission (list "builtin" "external"))) }}
{{- fail (printf "config.admission: %q is not one of builtin, external" .Values.config.admission) }}
{{- end }}
{{- end }}

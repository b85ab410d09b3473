{{- define "vm.name" -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- define "vm.labels" -}}
app.kubernetes.io/name: validator-manager
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
{{- define "vm.selector" -}}
app.kubernetes.io/name: validator-manager
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "vm.serviceAccount" -}}{{ default (include "vm.name" .) .Values.serviceAccount.name }}{{- end -}}
{{- define "vm.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- if not $cfg.api.namespace }}{{- $_ := set $cfg.api "namespace" .Release.Namespace -}}{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

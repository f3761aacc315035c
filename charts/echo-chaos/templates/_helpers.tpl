{{/* The chart name, possibly overridden. */}}
{{- define "echo-chaos.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's resources. */}}
{{- define "echo-chaos.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "echo-chaos.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "echo-chaos.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "echo-chaos.operatorName" -}}
{{- printf "%s-operator" (include "echo-chaos.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "echo-chaos.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: echo-chaos
{{- end }}

{{- define "echo-chaos.selectorLabels" -}}
app.kubernetes.io/name: {{ include "echo-chaos.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: echo
{{- end }}

{{- define "echo-chaos.operatorSelectorLabels" -}}
app.kubernetes.io/name: {{ include "echo-chaos.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "echo-chaos.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ include "echo-chaos.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end }}

{{- define "echo-chaos.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "echo-chaos.operatorImage" -}}
{{- printf "%s:%s" .Values.operator.image.repository (default (default .Chart.AppVersion .Values.image.tag) .Values.operator.image.tag) }}
{{- end }}

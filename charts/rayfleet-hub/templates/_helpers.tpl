{{/* The chart name, as the app.kubernetes.io/name label. */}}
{{- define "rayfleet-hub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: the release name, suffixed with the chart name unless
it already contains it; 63 characters at most (a DNS label).
*/}}
{{- define "rayfleet-hub.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The helm.sh/chart label: name and version. */}}
{{- define "rayfleet-hub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the hub's Pods; a Deployment's selector cannot change later. */}}
{{- define "rayfleet-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rayfleet-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object of the release. */}}
{{- define "rayfleet-hub.labels" -}}
helm.sh/chart: {{ include "rayfleet-hub.chart" . }}
{{ include "rayfleet-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: hub
{{- end }}

{{/* The ServiceAccount the hub runs as. */}}
{{- define "rayfleet-hub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rayfleet-hub.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference; the tag defaults to the chart's appVersion. */}}
{{- define "rayfleet-hub.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The rules of generated/role.yaml (written by `make manifests` from the hub's RBAC markers) by
kind: {"ClusterRole": [rules...], "Role": [rules...]}, as JSON. Namespaced Roles are merged into
one, because the chart grants them all in the release namespace, the hub's namespace.
*/}}
{{- define "rayfleet-hub.generatedRules" -}}
{{- $file := .Files.Get "generated/role.yaml" }}
{{- if not $file }}
{{- fail "generated/role.yaml is missing from the chart: run `make manifests`" }}
{{- end }}
{{- $rules := dict "ClusterRole" list "Role" list }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" $file -1 }}
{{- $obj := fromYaml $doc }}
{{- if hasKey $obj "Error" }}
{{- fail (printf "generated/role.yaml: %s" $obj.Error) }}
{{- end }}
{{- if $obj.kind }}
{{- if not (hasKey $rules $obj.kind) }}
{{- fail (printf "generated/role.yaml: unexpected kind %s" $obj.kind) }}
{{- end }}
{{- $_ := set $rules $obj.kind (concat (get $rules $obj.kind) ($obj.rules | default list)) }}
{{- end }}
{{- end }}
{{- toJson $rules }}
{{- end }}

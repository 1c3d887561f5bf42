{{/* The chart name, as the app.kubernetes.io/name label. */}}
{{- define "rayfleet-spoke.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: the release name, suffixed with the chart name unless
it already contains it; 63 characters at most (a DNS label).
*/}}
{{- define "rayfleet-spoke.fullname" -}}
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
{{- define "rayfleet-spoke.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the spoke's Pods; a Deployment's selector cannot change later. */}}
{{- define "rayfleet-spoke.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rayfleet-spoke.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of the release's objects but the hub's identity and guard (see hubaccess.yaml). */}}
{{- define "rayfleet-spoke.labels" -}}
{{ include "rayfleet-spoke.commonLabels" . }}
app.kubernetes.io/component: spoke
{{- end }}

{{/* The labels of the hub's identity on this member. */}}
{{- define "rayfleet-spoke.hubAccessLabels" -}}
{{ include "rayfleet-spoke.commonLabels" . }}
app.kubernetes.io/component: hub-access
{{- end }}

{{/* The labels of the hub's guard on this member (see hubpolicy.yaml). */}}
{{- define "rayfleet-spoke.hubPolicyLabels" -}}
{{ include "rayfleet-spoke.commonLabels" . }}
app.kubernetes.io/component: hub-guard
{{- end }}

{{/* The labels every object of the release carries. */}}
{{- define "rayfleet-spoke.commonLabels" -}}
helm.sh/chart: {{ include "rayfleet-spoke.chart" . }}
{{ include "rayfleet-spoke.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The ServiceAccount the spoke runs as. */}}
{{- define "rayfleet-spoke.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rayfleet-spoke.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference; the tag defaults to the chart's appVersion. */}}
{{- define "rayfleet-spoke.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The rules of generated/role.yaml (written by `make manifests` from the spoke's RBAC markers) by
kind: {"ClusterRole": [rules...], "Role": [rules...]}, as JSON. Namespaced Roles (none today)
would be merged into one, granted in the release namespace.
*/}}
{{- define "rayfleet-spoke.generatedRules" -}}
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

{{/*
The spoke's KubeRay operator configuration (--config): the sidecars of every head and worker Pod.
The Deployment hashes it, so that changing a sidecar rolls the spoke.
*/}}
{{- define "rayfleet-spoke.operatorConfig" -}}
apiVersion: config.ray.io/v1alpha1
kind: Configuration
{{- with .Values.headSidecarContainers }}
headSidecarContainers:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- with .Values.workerSidecarContainers }}
workerSidecarContainers:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end }}

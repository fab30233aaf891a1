{{/*
Names and labels shared by every object of the release.
*/}}
{{- define "reag.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "reag.fullname" -}}
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

{{- define "reag.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "reag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: reag
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "reag.selectorLabels" -}}
app.kubernetes.io/name: {{ include "reag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "reag.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "reag.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "reag.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The Secret every component loads, or "" when there is none.
*/}}
{{- define "reag.secretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else if .Values.secrets.create }}
{{- printf "%s-secrets" (include "reag.fullname" .) }}
{{- end }}
{{- end }}

{{- define "reag.settingsName" -}}
{{- printf "%s-settings" (include "reag.fullname" .) }}
{{- end }}

{{- define "reag.kafkaTlsDir" -}}
/etc/reag/kafka-tls
{{- end }}

{{/*
envFrom, volumes and mounts every reag container shares (components and the
topics job): the settings ConfigMap, the Secret, scratch space under a
read-only root filesystem, the Kafka TLS material.
*/}}
{{- define "reag.envFrom" -}}
- configMapRef:
    name: {{ include "reag.settingsName" . }}
{{- with (include "reag.secretName" .) }}
- secretRef:
    name: {{ . }}
{{- end }}
{{- end }}

{{- define "reag.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: state
  mountPath: {{ .Values.stateDir }}
{{- if .Values.kafka.tls.existingSecret }}
- name: kafka-tls
  mountPath: {{ include "reag.kafkaTlsDir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* Takes (dict "root" $ "tmp" size "state" size). */}}
{{- define "reag.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .tmp }}
- name: state
  emptyDir:
    sizeLimit: {{ .state }}
{{- if .root.Values.kafka.tls.existingSecret }}
- name: kafka-tls
  secret:
    secretName: {{ .root.Values.kafka.tls.existingSecret }}
{{- end }}
{{- end }}

{{/*
Pod annotations that restart pods when the shared settings change (envFrom is
read only at container start).
*/}}
{{- define "reag.configChecksum" -}}
checksum/settings: {{ include (print .Template.BasePath "/settings.yaml") . | sha256sum }}
{{- end }}

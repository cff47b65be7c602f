{{- /*
SPDX-License-Identifier: Apache-2.0

Helpers of the compute servers (`ringcache server`, compute-*.yaml): their
names and labels, apart from the cache nodes' so that no selector of one
matches the other's pods.
*/ -}}

{{- define "ringcache.computeName" -}}
{{- printf "%s-compute" (include "ringcache.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ringcache.computeSelectorLabels" -}}
app.kubernetes.io/name: {{ include "ringcache.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: compute
{{- end -}}

{{- define "ringcache.computeLabels" -}}
{{ include "ringcache.computeSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: ringcache
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- /* The cache endpoint the servers read through: compute.cache, else this
chart's cache nodes by the headless Service's SRV records. */ -}}
{{- define "ringcache.computeCache" -}}
{{- default (include "ringcache.members" .) .Values.compute.cache -}}
{{- end -}}

{{- /* The compute servers' headless Service: its DNS records are the members
of the compute cluster (compute.cluster). */ -}}
{{- define "ringcache.computeHeadlessName" -}}
{{- printf "%s-headless" (include "ringcache.computeName" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ringcache.computeClusterSpec" -}}
{{- printf "%s=dns:%s.%s.svc.%s:%d" .Values.compute.cluster.name (include "ringcache.computeHeadlessName" .) .Release.Namespace .Values.clusterDomain (int .Values.compute.port) -}}
{{- end -}}

{{- /* The Secret holding the cluster secret: compute.cluster.existingSecret,
else the chart's own (compute-secret.yaml). */ -}}
{{- define "ringcache.computeSecretName" -}}
{{- default (printf "%s-cluster" (include "ringcache.computeName" .)) .Values.compute.cluster.existingSecret -}}
{{- end -}}


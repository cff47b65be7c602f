{{- /*
SPDX-License-Identifier: Apache-2.0

Named templates shared by the chart's manifests: names, labels, the headless
Service's fully qualified name (the ring's membership source), the capacities
derived from storage and resources, the Secret references (S3, tenants, peer
token, TLS) and the mount paths of the secret files, and the checks on
combinations of values that values.schema.json cannot express.
*/ -}}

{{- define "ringcache.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- /* release-chart, or the release name alone when it already holds the chart name.
StatefulSet pod names add "-N" and a controller-revision-hash label: keep 52. */ -}}
{{- define "ringcache.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ringcache.headlessName" -}}
{{- printf "%s-headless" (include "ringcache.fullname" .) -}}
{{- end -}}

{{- /* The membership source: SRV records of the headless Service, by FQDN. */ -}}
{{- define "ringcache.headlessFqdn" -}}
{{- printf "%s.%s.svc.%s" (include "ringcache.headlessName" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{- define "ringcache.members" -}}
{{- printf "dns:%s:%d" (include "ringcache.headlessFqdn" .) (int .Values.ports.protocol) -}}
{{- end -}}

{{- define "ringcache.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ringcache.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: cache-node
{{- end -}}

{{- define "ringcache.labels" -}}
{{ include "ringcache.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: ringcache
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "ringcache.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ringcache.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ringcache.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- /* Worker threads: config.threads, else one per requested core. */ -}}
{{- define "ringcache.threads" -}}
{{- if gt (int .Values.config.threads) 0 -}}
{{- int .Values.config.threads -}}
{{- else -}}
{{- int .Values.resources.cpu -}}
{{- end -}}
{{- end -}}

{{- /* --ssd-capacity in MiB: ssdPercent of the volume. */ -}}
{{- define "ringcache.ssdCapacityMiB" -}}
{{- div (mul (int .Values.storage.sizeGiB) 1024 (int .Values.storage.ssdPercent)) 100 -}}
{{- end -}}

{{- /* --ram-capacity in MiB: ramTierPercent of the memory limit. */ -}}
{{- define "ringcache.ramCapacityMiB" -}}
{{- div (mul (int .Values.resources.memoryMiB) (int .Values.config.ramTierPercent)) 100 -}}
{{- end -}}

{{- /* Secret names: an existing one, else the chart's own. */ -}}
{{- define "ringcache.secretName" -}}
{{- printf "%s-secrets" (include "ringcache.fullname" .) -}}
{{- end -}}

{{- define "ringcache.s3SecretName" -}}
{{- if .Values.s3.credentials.existingSecret -}}
{{- .Values.s3.credentials.existingSecret -}}
{{- else if .Values.s3.credentials.accessKeyId -}}
{{- include "ringcache.secretName" . -}}
{{- end -}}
{{- end -}}

{{- define "ringcache.tenantsSecretName" -}}
{{- if .Values.tenants.enabled -}}
{{- if .Values.tenants.existingSecret -}}
{{- .Values.tenants.existingSecret -}}
{{- else -}}
{{- include "ringcache.secretName" . -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ringcache.peerTokenSecretName" -}}
{{- if .Values.peerToken.existingSecret -}}
{{- .Values.peerToken.existingSecret -}}
{{- else if .Values.peerToken.value -}}
{{- include "ringcache.secretName" . -}}
{{- end -}}
{{- end -}}

{{- /* The peer token is a file: the Secret's key mounted read-only here. */ -}}
{{- define "ringcache.peerTokenPath" -}}
{{- printf "/etc/ringcache/peer-token/%s" .Values.peerToken.key -}}
{{- end -}}

{{- /* TLS: the kubernetes.io/tls Secret (existing, else the chart's
<fullname>-tls), mounted read-only at /etc/ringcache/tls. */ -}}
{{- define "ringcache.tlsDir" -}}/etc/ringcache/tls{{- end -}}

{{- define "ringcache.tlsSecretName" -}}
{{- if .Values.tls.enabled -}}
{{- if .Values.tls.existingSecret -}}
{{- .Values.tls.existingSecret -}}
{{- else -}}
{{- printf "%s-tls" (include "ringcache.fullname" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* Does the chart create the TLS Secret from tls.cert/tls.key? "true" or "". */ -}}
{{- define "ringcache.createsTlsSecret" -}}
{{- if and .Values.tls.enabled (not .Values.tls.existingSecret) -}}true{{- end -}}
{{- end -}}

{{- /* Is there a ca.crt in the TLS Secret? "true" or "". */ -}}
{{- define "ringcache.tlsHasCA" -}}
{{- if .Values.tls.enabled -}}
{{- if .Values.tls.existingSecret -}}
{{- if .Values.tls.existingSecretHasCA -}}true{{- end -}}
{{- else if .Values.tls.ca -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{- /* The name Prometheus verifies in the nodes' certificate. */ -}}
{{- define "ringcache.scrapeServerName" -}}
{{- default (printf "%s.%s.svc.%s" (include "ringcache.fullname" .) .Release.Namespace .Values.clusterDomain) .Values.metrics.serviceMonitor.serverName -}}
{{- end -}}

{{- /* Does the chart create its own Secret? "true" or "". */ -}}
{{- define "ringcache.createsSecret" -}}
{{- $s3 := and (not .Values.s3.credentials.existingSecret) .Values.s3.credentials.accessKeyId -}}
{{- $ten := and .Values.tenants.enabled (not .Values.tenants.existingSecret) -}}
{{- $peer := and (not .Values.peerToken.existingSecret) .Values.peerToken.value -}}
{{- if or $s3 $ten $peer -}}true{{- end -}}
{{- end -}}

{{- /* Combinations the schema cannot express; rendered (empty) by the
StatefulSet so every install checks them. */ -}}
{{- define "ringcache.validate" -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (int .Values.config.drainTimeoutSeconds) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed config.drainTimeoutSeconds (%d): the kubelet would kill ringcached before it drains" (int .Values.terminationGracePeriodSeconds) (int .Values.config.drainTimeoutSeconds)) -}}
{{- end -}}
{{- if eq (int .Values.ports.protocol) (int .Values.ports.admin) -}}
{{- fail "ports.protocol and ports.admin must differ" -}}
{{- end -}}
{{- if and (eq .Values.config.io "io_uring") (eq .Values.seccompProfile.type "RuntimeDefault") -}}
{{- fail "config.io is io_uring but seccompProfile.type is RuntimeDefault, which blocks io_uring: set seccompProfile.type to Localhost (see README) or config.io to auto" -}}
{{- end -}}
{{- if and .Values.tenants.enabled (not .Values.tenants.existingSecret) -}}
{{- $_ := required "tenants.enabled needs tenants.file (the tenants file) or tenants.existingSecret" .Values.tenants.file -}}
{{- end -}}
{{- if and .Values.tenants.enabled (not (include "ringcache.peerTokenSecretName" .)) -}}
{{- fail "tenants.enabled needs peerToken.value or peerToken.existingSecret: without it nodes cannot hand blocks to each other" -}}
{{- end -}}
{{- if and .Values.s3.credentials.accessKeyId (not .Values.s3.credentials.existingSecret) -}}
{{- $_ := required "s3.credentials.accessKeyId is set but s3.credentials.secretAccessKey is not; set both" .Values.s3.credentials.secretAccessKey -}}
{{- end -}}
{{- $smNs := default .Release.Namespace .Values.metrics.serviceMonitor.namespace -}}
{{- if and .Values.metrics.serviceMonitor.enabled (include "ringcache.tlsHasCA" .) (ne $smNs .Release.Namespace) (not .Values.metrics.serviceMonitor.insecureSkipVerify) -}}
{{- fail (printf "metrics.serviceMonitor.namespace %s differs from the release namespace %s, but the ServiceMonitor's TLS CA is read from the Secret %s, which the Prometheus Operator looks up in the ServiceMonitor's namespace: leave the namespace empty (or set insecureSkipVerify)" $smNs .Release.Namespace (include "ringcache.tlsSecretName" .)) -}}
{{- end -}}
{{- if and (eq .Values.storage.type "hostPath") (ne .Values.podAntiAffinity "hard") -}}
{{- fail "storage.type hostPath needs podAntiAffinity: hard, or two pods on one node would share the folder" -}}
{{- end -}}
{{- if lt (int (include "ringcache.ssdCapacityMiB" .)) 1024 -}}
{{- fail "the SSD capacity (storage.sizeGiB * storage.ssdPercent / 100) is under 1 GiB; raise storage.sizeGiB" -}}
{{- end -}}
{{- end -}}

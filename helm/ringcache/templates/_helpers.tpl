{{- /*
SPDX-License-Identifier: Apache-2.0

Named templates shared by the chart's manifests: names, labels and
annotations, the image, the headless Service's fully qualified name (the ring's
membership source), the container's resources (resources or a preset) and the
settings derived from them (threads, RAM tier) by reading Kubernetes
quantities, the termination grace, the data ports, the Secret references (S3,
tenants, peer token, TLS) and the mount paths of the secret files, and the
checks on combinations of values that values.schema.json cannot express.
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
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- /* The annotations of an object's metadata (its own, extra, over
commonAnnotations), as lines indented for the metadata block and starting with
a newline; nothing when both are empty. Called with (dict "ctx" $ "extra" MAP)
right after the labels. */ -}}
{{- define "ringcache.annotations" -}}
{{- $a := merge (dict) (.extra | default dict) (.ctx.Values.commonAnnotations | default dict) -}}
{{- with $a }}
  annotations:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end -}}

{{- define "ringcache.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ringcache.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- /* [registry/]repository:tag, or [registry/]repository@digest when
image.digest is set; global.imageRegistry wins over image.registry. */ -}}
{{- define "ringcache.image" -}}
{{- $registry := .Values.image.registry -}}
{{- with .Values.global }}{{ with .imageRegistry }}{{ $registry = . }}{{ end }}{{ end -}}
{{- $name := .Values.image.repository -}}
{{- if $registry }}{{ $name = printf "%s/%s" (trimSuffix "/" $registry) $name }}{{ end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $name .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $name (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- /* The pod's imagePullSecrets items: global.imagePullSecrets then
imagePullSecrets, each name once; entries are {name: N} objects or bare names. */ -}}
{{- define "ringcache.imagePullSecrets" -}}
{{- $names := list -}}
{{- $global := list -}}
{{- with .Values.global }}{{ $global = .imagePullSecrets | default list }}{{ end -}}
{{- range concat $global (.Values.imagePullSecrets | default list) -}}
{{- if kindIs "string" . -}}
{{- $names = append $names . -}}
{{- else -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- end -}}
{{- range uniq $names }}
- name: {{ . }}
{{- end }}
{{- end -}}

{{- /* ---- resources ------------------------------------------------------------
The presets (Bitnami's resourcesPreset): memory request = limit, so the RAM
tier is sized against memory the pod is sure to have; no CPU limit, so a node
may burst on an idle host (set resources.limits.cpu for that). */ -}}
{{- define "ringcache.resourcesPresets" -}}
small:
  requests:
    cpu: "1"
    memory: 2Gi
  limits:
    memory: 2Gi
medium:
  requests:
    cpu: "2"
    memory: 4Gi
  limits:
    memory: 4Gi
large:
  requests:
    cpu: "4"
    memory: 16Gi
  limits:
    memory: 16Gi
{{- end -}}

{{- /* The container's resources as YAML: resources when it is not empty, else
the preset (none: nothing). */ -}}
{{- define "ringcache.resources" -}}
{{- if .Values.resources -}}
{{- toYaml .Values.resources -}}
{{- else if ne .Values.resourcesPreset "none" -}}
{{- $presets := fromYaml (include "ringcache.resourcesPresets" .) -}}
{{- if not (hasKey $presets .Values.resourcesPreset) -}}
{{- fail (printf "resourcesPreset %q is not one of none, small, medium, large" .Values.resourcesPreset) -}}
{{- end -}}
{{- toYaml (get $presets .Values.resourcesPreset) -}}
{{- end -}}
{{- end -}}

{{- /* A Kubernetes quantity in its base unit (bytes, cores), printed as a
float: a number, or a string of a decimal number and an optional suffix
(m, k M G T P E, Ki Mi Gi Ti Pi Ei): 500m = 0.5, 4Gi = 4294967296, 1.5G =
1500000000. Anything else fails, naming the value. Called with (list NAME Q). */ -}}
{{- define "ringcache.quantity" -}}
{{- $what := index . 0 -}}
{{- $q := index . 1 -}}
{{- if or (kindIs "float64" $q) (kindIs "int" $q) (kindIs "int64" $q) -}}
{{- float64 $q -}}
{{- else -}}
{{- $s := toString $q -}}
{{- $num := regexFind "^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)" $s -}}
{{- $suffix := trimPrefix $num $s -}}
{{- $unit := dict "" 1.0 "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 -}}
{{- if or (not $num) (not (hasKey $unit $suffix)) -}}
{{- fail (printf "%s %q is not a Kubernetes quantity (e.g. 500m or 2 for CPU, 4Gi or 4096Mi for memory)" $what $s) -}}
{{- end -}}
{{- mulf (float64 $num) (get $unit $suffix) -}}
{{- end -}}
{{- end -}}

{{- /* Cores of the CPU request (else the limit), as a float; 0 when neither. */ -}}
{{- define "ringcache.cpuCores" -}}
{{- $r := fromYaml (include "ringcache.resources" .) -}}
{{- $req := $r.requests | default dict -}}
{{- $lim := $r.limits | default dict -}}
{{- if hasKey $req "cpu" -}}
{{- include "ringcache.quantity" (list "resources.requests.cpu" $req.cpu) -}}
{{- else if hasKey $lim "cpu" -}}
{{- include "ringcache.quantity" (list "resources.limits.cpu" $lim.cpu) -}}
{{- else -}}
0
{{- end -}}
{{- end -}}

{{- /* MiB of the memory limit (else the request), rounded down; 0 when neither.
The RAM tier is a share of it. */ -}}
{{- define "ringcache.memoryMiB" -}}
{{- $r := fromYaml (include "ringcache.resources" .) -}}
{{- $req := $r.requests | default dict -}}
{{- $lim := $r.limits | default dict -}}
{{- $bytes := 0.0 -}}
{{- if hasKey $lim "memory" -}}
{{- $bytes = float64 (include "ringcache.quantity" (list "resources.limits.memory" $lim.memory)) -}}
{{- else if hasKey $req "memory" -}}
{{- $bytes = float64 (include "ringcache.quantity" (list "resources.requests.memory" $req.memory)) -}}
{{- end -}}
{{- floor (divf $bytes 1048576.0) | int64 -}}
{{- end -}}

{{- /* Worker threads: config.threads, else one per requested core, rounded up. */ -}}
{{- define "ringcache.threads" -}}
{{- if gt (int .Values.config.threads) 0 -}}
{{- int .Values.config.threads -}}
{{- else -}}
{{- $cores := float64 (include "ringcache.cpuCores" .) -}}
{{- if le $cores 0.0 -}}
{{- fail "config.threads is 0 (one worker per requested core) but the container has no CPU request or limit: set resources.requests.cpu, a resourcesPreset, or config.threads (counting the node's cores would overload the pod)" -}}
{{- end -}}
{{- ceil $cores | int64 -}}
{{- end -}}
{{- end -}}

{{- /* terminationGracePeriodSeconds: the value, else the drain and 20 seconds
for ringcached to close its store (index flush) and exit. */ -}}
{{- define "ringcache.terminationGracePeriodSeconds" -}}
{{- if eq (toString .Values.terminationGracePeriodSeconds) "" -}}
{{- add (int .Values.config.drainTimeoutSeconds) 20 -}}
{{- else -}}
{{- int .Values.terminationGracePeriodSeconds -}}
{{- end -}}
{{- end -}}

{{- /* The data ports, the ones clients connect to, as NetworkPolicy port items:
the protocol port, and the S3 API port when one is configured (ports.s3api).
Every policy rule that opens the data ports takes this list. */ -}}
{{- define "ringcache.dataPorts" -}}
- port: {{ int .Values.ports.protocol }}
  protocol: TCP
{{- with .Values.ports.s3api }}
- port: {{ int . }}
  protocol: TCP
{{- end }}
{{- end -}}

{{- /* TCP ports of S3 for the NetworkPolicy's egress, comma-separated:
networkPolicy.s3.ports, else the port of s3.endpoint (its scheme's when it
names none), else 443. */ -}}
{{- define "ringcache.s3Ports" -}}
{{- if .Values.networkPolicy.s3.ports -}}
{{- join "," .Values.networkPolicy.s3.ports -}}
{{- else if .Values.s3.endpoint -}}
{{- $u := urlParse .Values.s3.endpoint -}}
{{- $port := regexFind "[0-9]+$" (regexFind ":[0-9]+$" $u.host) -}}
{{- default (ternary "443" "80" (eq $u.scheme "https")) $port -}}
{{- else -}}
443
{{- end -}}
{{- end -}}

{{- /* --ssd-capacity in MiB: ssdPercent of the volume. */ -}}
{{- define "ringcache.ssdCapacityMiB" -}}
{{- div (mul (int .Values.storage.sizeGiB) 1024 (int .Values.storage.ssdPercent)) 100 -}}
{{- end -}}

{{- /* --ram-capacity in MiB: ramTierPercent of the memory limit (else request). */ -}}
{{- define "ringcache.ramCapacityMiB" -}}
{{- $mem := int64 (include "ringcache.memoryMiB" .) -}}
{{- if and (gt (int .Values.config.ramTierPercent) 0) (eq $mem 0) -}}
{{- fail "config.ramTierPercent sizes the RAM tier from the container's memory, but it has no memory limit or request: set resources.limits.memory, a resourcesPreset, or config.ramTierPercent 0" -}}
{{- end -}}
{{- div (mul $mem (int .Values.config.ramTierPercent)) 100 -}}
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
{{- $grace := int (include "ringcache.terminationGracePeriodSeconds" .) -}}
{{- if le $grace (int .Values.config.drainTimeoutSeconds) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed config.drainTimeoutSeconds (%d): the kubelet would kill ringcached before it drains (leave it empty for the drain + 20 s)" $grace (int .Values.config.drainTimeoutSeconds)) -}}
{{- end -}}
{{- $r := fromYaml (include "ringcache.resources" .) -}}
{{- range $k := list "cpu" "memory" -}}
{{- $req := $r.requests | default dict -}}
{{- $lim := $r.limits | default dict -}}
{{- if and (hasKey $req $k) (hasKey $lim $k) -}}
{{- if gt (float64 (include "ringcache.quantity" (list (printf "resources.requests.%s" $k) (get $req $k)))) (float64 (include "ringcache.quantity" (list (printf "resources.limits.%s" $k) (get $lim $k)))) -}}
{{- fail (printf "resources.requests.%s (%v) exceeds resources.limits.%s (%v); Kubernetes refuses that" $k (get $req $k) $k (get $lim $k)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := include "ringcache.threads" . -}}
{{- $_ := include "ringcache.ramCapacityMiB" . -}}
{{- $chartVolumes := list "data" "config" "tmp" "tenants" "peer-token" "tls" -}}
{{- range .Values.extraVolumes -}}
{{- if has .name $chartVolumes -}}
{{- fail (printf "extraVolumes has a volume named %s, a name the chart uses for its own volumes (%s): pick another name" .name (join ", " $chartVolumes)) -}}
{{- end -}}
{{- end -}}
{{- $chartEnv := list "POD_NAME" "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" "AWS_SESSION_TOKEN" -}}
{{- range .Values.extraEnvVars -}}
{{- if has .name $chartEnv -}}
{{- fail (printf "extraEnvVars sets %s, which the chart sets itself (POD_NAME is the node id; the AWS_ variables come from s3.credentials): remove it" .name) -}}
{{- end -}}
{{- end -}}
{{- range $k, $_ := .Values.podLabels -}}
{{- if hasKey ($.Values.commonLabels | default dict) $k -}}
{{- fail (printf "podLabels and commonLabels both set the label %s: keep it in one of them" $k) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.persistentVolumeClaimRetentionPolicy.enabled (ne .Values.storage.type "persistentVolumeClaim") -}}
{{- fail (printf "persistentVolumeClaimRetentionPolicy.enabled applies to PVCs, but storage.type is %s: turn it off or use persistentVolumeClaim" .Values.storage.type) -}}
{{- end -}}
{{- if and (eq .Values.updateStrategy.type "OnDelete") .Values.updateStrategy.rollingUpdate -}}
{{- fail "updateStrategy.rollingUpdate is set but updateStrategy.type is OnDelete: Kubernetes refuses that; remove rollingUpdate or use RollingUpdate" -}}
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

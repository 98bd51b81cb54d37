{{- define "sitebus.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sitebus.labels" -}}
app.kubernetes.io/name: sitebus
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: sitebus
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sitebus.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "sitebus.fullname" .) -}}
{{- end -}}

{{- define "sitebus.secretName" -}}
{{- .Values.existingSecret | default (printf "%s-config" (include "sitebus.fullname" .)) -}}
{{- end -}}

{{- define "sitebus.natsName" -}}
{{- printf "%s-nats" (include "sitebus.fullname" .) -}}
{{- end -}}

{{- define "sitebus.natsURL" -}}
{{- if .Values.nats.enabled -}}
{{- printf "nats://%s.%s.svc:4222" (include "sitebus.natsName" .) .Release.Namespace -}}
{{- else -}}
{{- required "nats.url is required when nats.enabled is false" .Values.nats.url -}}
{{- end -}}
{{- end -}}

{{/* The configuration as stored: with the chart's NATS, streams and buckets
get as many replicas as it has nodes unless the file says otherwise; the
ordering mode and slots come from .Values.ordering unless the file says. */}}
{{- define "sitebus.config" -}}
{{- $cfg := fromYaml .Values.config -}}
{{- if hasKey $cfg "Error" -}}
{{- fail (printf "config is not YAML: %s" $cfg.Error) -}}
{{- end -}}
{{- if .Values.nats.enabled -}}
{{- $sb := get $cfg "sitebus" | default dict -}}
{{- $st := get $sb "streams" | default dict -}}
{{- if not (hasKey $st "replicas") -}}
{{- $_ := set $st "replicas" (int .Values.nats.replicas) -}}
{{- end -}}
{{- $_ := set $sb "streams" $st -}}
{{- $_ := set $cfg "sitebus" $sb -}}
{{- end -}}
{{- $sb := get $cfg "sitebus" | default dict -}}
{{- $ord := get $sb "ordering" | default dict -}}
{{- if not (hasKey $ord "mode") -}}
{{- $_ := set $ord "mode" .Values.ordering.mode -}}
{{- end -}}
{{- if not (hasKey $ord "slots") -}}
{{- $_ := set $ord "slots" (int .Values.ordering.slots) -}}
{{- end -}}
{{- $_ := set $sb "ordering" $ord -}}
{{- $_ := set $cfg "sitebus" $sb -}}
{{- toYaml $cfg -}}
{{- end -}}

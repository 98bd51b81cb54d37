{{/* The names of the objects: all derive from the release name, as vCluster's do. */}}
{{- define "vcluster.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "vcluster.serviceAccount" -}}vc-{{ .Release.Name }}{{- end -}}
{{- define "vcluster.workloadServiceAccount" -}}vc-workload-{{ .Release.Name }}{{- end -}}
{{- define "vcluster.kubeconfigSecret" -}}vc-{{ .Release.Name }}{{- end -}}
{{- define "vcluster.configSecret" -}}vc-config-{{ .Release.Name }}{{- end -}}

{{/* Labels of every object: vCluster's app/release pair (Loft's Rancher operator finds the Service by app=vcluster) and sitebus's mark. */}}
{{- define "vcluster.labels" -}}
app: vcluster
release: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
sitebus.io/vcluster: "true"
{{- end -}}

{{/* sitebus's ownership marks, those of the host namespace. */}}
{{- define "vcluster.annotations" -}}
waldur/managed: "true"
sitebus.io/resource-uuid: {{ required "sitebus.resourceUUID is required" .Values.sitebus.resourceUUID | quote }}
{{- end -}}

{{- define "vcluster.selector" -}}
app: vcluster
release: {{ .Release.Name | quote }}
{{- end -}}

{{- define "vcluster.server" -}}
{{- default (printf "https://%s.%s:443" .Release.Name .Release.Namespace) .Values.exportKubeConfig.server -}}
{{- end -}}

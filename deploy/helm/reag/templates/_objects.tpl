{{/*
The objects of one component. Each takes the dict built in component.yaml:
  root  the chart's top-level context ($)
  name  the component's key in .Values.components (= its service name in topology.py)
  c     the component's values
  d     .Values.default
A component's value replaces the default one whole.
*/}}

{{- define "reag.componentName" -}}
{{- printf "%s-%s" (include "reag.fullname" .root) .name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "reag.componentLabels" -}}
{{ include "reag.labels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{- define "reag.componentSelectorLabels" -}}
{{ include "reag.selectorLabels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{- define "reag.autoscaled" -}}
{{- if and .c.autoscaling .c.autoscaling.enabled }}true{{ end }}
{{- end }}

{{- define "reag.deployment" }}
{{- $root := .root }}
{{- $c := .c }}
{{- $d := .d }}
{{- $probes := $c.probes | default dict }}
{{- $podAnnotations := merge (dict) ($c.podAnnotations | default dict) $d.podAnnotations }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "reag.componentName" . }}
  labels:
    {{- include "reag.componentLabels" . | nindent 4 }}
spec:
  {{- if not (include "reag.autoscaled" .) }}
  replicas: {{ hasKey $c "replicas" | ternary $c.replicas $d.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "reag.componentSelectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "reag.componentSelectorLabels" . | nindent 8 }}
      annotations:
        {{- include "reag.configChecksum" $root | nindent 8 }}
        {{- if $root.Values.scrapeAnnotations }}
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $root.Values.httpPort | quote }}
        prometheus.io/path: /metrics
        {{- end }}
        {{- with $podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "reag.serviceAccountName" $root }}
      # The services never call the Kubernetes API.
      automountServiceAccountToken: false
      {{- with $root.Values.image.pullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml ($c.podSecurityContext | default $d.podSecurityContext) | nindent 8 }}
      terminationGracePeriodSeconds: {{ $c.terminationGracePeriodSeconds | default $d.terminationGracePeriodSeconds }}
      containers:
        - name: {{ .name }}
          image: {{ include "reag.componentImage" (dict "root" $root "c" $c) | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: {{ $c.command | default (list "python" "-m" $c.module) | toJson }}
          ports:
            - name: http
              containerPort: {{ $root.Values.httpPort }}
              protocol: TCP
            {{- with $c.grpc }}
            - name: grpc
              containerPort: {{ .port }}
              protocol: TCP
            {{- end }}
          envFrom:
            {{- include "reag.envFrom" $root | nindent 12 }}
          {{- if or $c.tier $c.grpc $c.env }}
          env:
            {{- with $c.tier }}
            # services/judge/settings.py: JudgeSettings.tier
            - name: REAG_TIER
              value: {{ . | quote }}
            {{- end }}
            {{- with $c.grpc }}
            {{- include "reag.grpcGuard" (dict "root" $root "name" $.name "grpc" .) }}
            - name: {{ .hostEnv }}
              value: "0.0.0.0"
            - name: {{ .portEnv }}
              value: {{ .port | quote }}
            {{- with $root.Values.grpc.token.existingSecret }}
            - name: REAG_LEDGER_GRPC_TOKEN
              valueFrom:
                secretKeyRef:
                  name: {{ . }}
                  key: {{ $root.Values.grpc.token.key | default "REAG_LEDGER_GRPC_TOKEN" }}
            {{- end }}
            {{- if $root.Values.grpc.allowInsecure }}
            # Chosen in values (grpc.allowInsecure): the port takes any caller.
            - name: REAG_LEDGER_GRPC_ALLOW_INSECURE
              value: "true"
            {{- end }}
            {{- if (.tls).existingSecret }}
            # services/ledger/settings.py: the gRPC APIs' server certificate and key.
            - name: REAG_LEDGER_GRPC_TLS_CERT
              value: "/etc/reag/grpc-tls/{{ .tls.certKey | default "tls.crt" }}"
            - name: REAG_LEDGER_GRPC_TLS_KEY
              value: "/etc/reag/grpc-tls/{{ .tls.keyKey | default "tls.key" }}"
            {{- end }}
            {{- end }}
            {{- range $key, $value := $c.env }}
            - name: {{ $key }}
              value: {{ $value | toString | quote }}
            {{- end }}
          {{- end }}
          resources:
            {{- toYaml ($c.resources | default $d.resources) | nindent 12 }}
          securityContext:
            {{- toYaml ($c.securityContext | default $d.securityContext) | nindent 12 }}
          startupProbe:
            {{- toYaml ($probes.startup | default $d.probes.startup) | nindent 12 }}
          livenessProbe:
            {{- toYaml ($probes.liveness | default $d.probes.liveness) | nindent 12 }}
          readinessProbe:
            {{- if $probes.readiness }}
            {{- toYaml $probes.readiness | nindent 12 }}
            {{- else if and $c.grpc ($c.grpc.tls).existingSecret }}
            # Kubernetes' gRPC probe cannot speak TLS: with TLS on, the port accepting is ready.
            tcpSocket:
              port: {{ $c.grpc.port }}
            periodSeconds: 10
            timeoutSeconds: 5
            failureThreshold: 3
            {{- else if $c.grpc }}
            # grpc.health.v1 of the results API: SERVING once the API is up.
            grpc:
              port: {{ $c.grpc.port }}
            periodSeconds: 10
            timeoutSeconds: 5
            failureThreshold: 3
            {{- else }}
            {{- toYaml $d.probes.readiness | nindent 12 }}
            {{- end }}
          volumeMounts:
            {{- include "reag.volumeMounts" $root | nindent 12 }}
            {{- if and $c.grpc ($c.grpc.tls).existingSecret }}
            - name: grpc-tls
              mountPath: /etc/reag/grpc-tls
              readOnly: true
            {{- end }}
      volumes:
        {{- include "reag.volumes" (dict "root" $root "tmp" ($c.tmpSizeLimit | default $d.tmpSizeLimit) "state" ($c.stateSizeLimit | default $d.stateSizeLimit)) | nindent 8 }}
        {{- if and $c.grpc ($c.grpc.tls).existingSecret }}
        - name: grpc-tls
          secret:
            secretName: {{ $c.grpc.tls.existingSecret }}
        {{- end }}
      {{- with ($c.nodeSelector | default $d.nodeSelector) }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with ($c.tolerations | default $d.tolerations) }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with ($c.affinity | default $d.affinity) }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}

{{- define "reag.service" }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "reag.componentName" . }}
  labels:
    {{- include "reag.componentLabels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "reag.componentSelectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: {{ .root.Values.httpPort }}
      targetPort: http
      protocol: TCP
    {{- with .c.grpc }}
    - name: grpc
      port: {{ .port }}
      targetPort: grpc
      protocol: TCP
      appProtocol: grpc
    {{- end }}
{{- end }}

{{/*
Scale a component on its consumer group's lag on its input topic.
keda: a ScaledObject with KEDA's Kafka trigger, which reads the lag from Kafka
      itself (the same broker settings and credentials as the services).
hpa:  an autoscaling/v2 HPA on the external metric reag_consumer_lag_messages,
      which needs prometheus-adapter to serve it (deploy/helm/README.md).
*/}}
{{- define "reag.autoscaler" }}
{{- if include "reag.autoscaled" . }}
{{- $root := .root }}
{{- $a := .c.autoscaling }}
{{- $topic := required (printf "components.%s.autoscaling.topic is required when autoscaling is enabled" .name) $a.topic }}
{{- $group := required (printf "components.%s.autoscaling.consumerGroup is required when autoscaling is enabled" .name) $a.consumerGroup }}
{{- $kafka := $root.Values.kafka }}
{{- if gt (int $a.maxReplicas) (int $kafka.partitions) }}
{{- fail (printf "components.%s.autoscaling.maxReplicas is %v but reag's topics have kafka.partitions=%v: a consumer group gives each partition to one replica, so replicas past %v would sit idle while the lag grows. Lower maxReplicas, or raise kafka.partitions (topics the chart's job creates; existing topics must be altered on the broker)." .name $a.maxReplicas $kafka.partitions $kafka.partitions) }}
{{- end }}
{{- $sasl := hasPrefix "SASL" $kafka.securityProtocol }}
{{- $tls := or (eq $kafka.securityProtocol "SSL") (eq $kafka.securityProtocol "SASL_SSL") }}
{{- if eq $a.mode "keda" }}
{{- if or $sasl $kafka.tls.existingSecret }}
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: {{ include "reag.componentName" . }}
  labels:
    {{- include "reag.componentLabels" . | nindent 4 }}
spec:
  {{- if $sasl }}
  # Read from the scale target's environment (its ConfigMap and Secret), so
  # KEDA uses exactly the credentials the service uses.
  env:
    - parameter: username
      name: REAG_KAFKA__SASL_USERNAME
      containerName: {{ .name }}
    - parameter: password
      name: REAG_KAFKA__SASL_PASSWORD
      containerName: {{ .name }}
  {{- end }}
  {{- with $kafka.tls.existingSecret }}
  secretTargetRef:
    - parameter: ca
      name: {{ . }}
      key: {{ $kafka.tls.caKey }}
    {{- with $kafka.tls.certKey }}
    - parameter: cert
      name: {{ $kafka.tls.existingSecret }}
      key: {{ . }}
    {{- end }}
    {{- with $kafka.tls.keyKey }}
    - parameter: key
      name: {{ $kafka.tls.existingSecret }}
      key: {{ . }}
    {{- end }}
  {{- end }}
{{- end }}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ include "reag.componentName" . }}
  labels:
    {{- include "reag.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    name: {{ include "reag.componentName" . }}
  minReplicaCount: {{ $a.minReplicas }}
  maxReplicaCount: {{ $a.maxReplicas }}
  triggers:
    - type: kafka
      metadata:
        bootstrapServers: {{ $kafka.bootstrapServers | quote }}
        consumerGroup: {{ $group | quote }}
        topic: {{ $topic | quote }}
        lagThreshold: {{ $a.lagThreshold | quote }}
        # services/kit/consume.py starts a new group at the earliest offset.
        offsetResetPolicy: earliest
        {{- if $sasl }}
        sasl: {{ get (dict "PLAIN" "plaintext" "SCRAM-SHA-256" "scram_sha256" "SCRAM-SHA-512" "scram_sha512") $kafka.saslMechanism | quote }}
        {{- end }}
        {{- if $tls }}
        tls: enable
        {{- end }}
      {{- if or $sasl $kafka.tls.existingSecret }}
      authenticationRef:
        name: {{ include "reag.componentName" . }}
      {{- end }}
{{- else }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "reag.componentName" . }}
  labels:
    {{- include "reag.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "reag.componentName" . }}
  minReplicas: {{ $a.minReplicas }}
  maxReplicas: {{ $a.maxReplicas }}
  metrics:
    - type: External
      external:
        metric:
          name: reag_consumer_lag_messages
          selector:
            matchLabels:
              service: {{ .name | quote }}
              topic: {{ $topic | quote }}
        target:
          type: AverageValue
          averageValue: {{ $a.lagThreshold | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Fails the render when a component serves gRPC with neither a bearer token nor
TLS and grpc.allowInsecure is not set: such a port takes any caller. Takes
(dict "root" $ "name" component "grpc" its grpc values); renders nothing.
*/}}
{{- define "reag.grpcGuard" -}}
{{- $v := .root.Values }}
{{- $token := or $v.grpc.token.existingSecret (and $v.secrets.create (get ($v.secrets.values | default dict) "REAG_LEDGER_GRPC_TOKEN")) }}
{{- $tls := (.grpc.tls).existingSecret }}
{{- if not (or $token $tls $v.grpc.allowInsecure) }}
{{- fail (printf "components.%s serves gRPC APIs (results, traffic) on port %v with neither a bearer token nor TLS, so any caller that reaches it can read results and submit traffic. Set grpc.token.existingSecret (a Secret with the token under grpc.token.key, default REAG_LEDGER_GRPC_TOKEN; it may be secrets.existingSecret), or secrets.create=true with secrets.values.REAG_LEDGER_GRPC_TOKEN, or components.%s.grpc.tls.existingSecret; or set grpc.allowInsecure=true to accept an open port." .name .grpc.port .name) }}
{{- end }}
{{- end }}

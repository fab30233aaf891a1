{{/*
The judge tiers' defaults come from their own folders, services/judge-tier<N>/tier.yaml,
through the checked copies in tiers/ (`make tiers`; tests/unit/deploy/test_tiers.py
fails when a copy differs from its source). .Files.Get cannot reach outside the
chart, and a symlink would make helm print a warning on every render and break
on checkouts without symlinks, hence copies.

reag.tierDefaults takes (dict "root" $ "name" <component>) and returns, as YAML, the
component values the tier file gives (its `deployment` section, its tier, its
command, and the topic and consumer group autoscaling watches), or nothing for a
component without a tier file. components.<name> in values overrides any key.
*/}}
{{- define "reag.tierDefaults" -}}
{{- with .root.Files.Get (printf "tiers/%s.yaml" .name) }}
{{- $t := fromYaml . }}
{{- $d := deepCopy $t.deployment }}
{{- $_ := set $d "tier" (int $t.tier) }}
{{- $_ := set $d "command" $t.command }}
{{- $_ := set $d.autoscaling "topic" $t.consumes }}
{{- $_ := set $d.autoscaling "consumerGroup" $t.consumerGroup }}
{{- toYaml $d }}
{{- end }}
{{- end }}

{{/*
"true" when the component runs in the configured cascade: anything but a judge
tier, or a tier within cascade.tierModels (one tier per entry; an empty list is
three tiers, as REAG_TIER_MODELS="" is). A judge past the list would refuse to start.
*/}}
{{- define "reag.inCascade" -}}
{{- $n := len .root.Values.cascade.tierModels | default 3 }}
{{- if or (not .c.tier) (le (int .c.tier) (int $n)) }}true{{ end }}
{{- end }}

{{/*
The image a component runs: with image.perFloor, the build of its floor
(Dockerfile FLOOR: services, local or embeddings) tagged <tag>-<floor>;
otherwise the one image <repository>:<tag>.
*/}}
{{- define "reag.componentImage" -}}
{{- if and .root.Values.image.perFloor .c.floor }}
{{- printf "%s-%s" (include "reag.image" .root) .c.floor }}
{{- else }}
{{- include "reag.image" .root }}
{{- end }}
{{- end }}

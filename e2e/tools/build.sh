#!/usr/bin/env bash
# Builds the tools RayFleet's tests, e2e and demo need, from the Go module proxy only:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (scratch modules,
# because k8s.io/kubernetes and etcd's server module use replace directives that `go install`
# refuses), kwok, helm, controller-gen and golangci-lint (plain `go install`), and traefik (a copy
# of its module, because its own replace directives rule out `go install` too). The real Node's
# tools (`make node-tools`: kubelet, kube-proxy, containerd, its runc shim, ctr and the CNI
# plugins) are built the same ways but only on request. promtool, prometheus and promql-names
# (the chart's dashboards and alerts under test) come from Prometheus' module.
#
# Every binary is built once per version into $TOOLS_CACHE (shared by all clones) and then
# linked into $BIN_DIR, so a warm run takes a second. Usage: build.sh <bin-dir> [tool...]
set -euo pipefail
shopt -s inherit_errexit # a failed build inside $(build ...) stops the script

BIN_DIR=$(mkdir -p "${1:?usage: build.sh <bin-dir> [tool...]}" && cd "$1" && pwd)
shift
TOOLS=("$@")
[ ${#TOOLS[@]} -gt 0 ] || TOOLS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok helm controller-gen traefik
  promtool prometheus promql-names)

K8S_VERSION=${K8S_VERSION:-v1.36.1}
STAGING_VERSION=${STAGING_VERSION:-v0.36.1}
ETCD_VERSION=${ETCD_VERSION:-v3.6.8}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
CONTROLLER_TOOLS_VERSION=${CONTROLLER_TOOLS_VERSION:-v0.21.0}
GOLANGCI_LINT_VERSION=${GOLANGCI_LINT_VERSION:-v2.15.0}
# The local fleet's Gateway API data plane (`rayfleet dev up --traffic`). v3.6.12 is the only
# 3.6 release the proxy lists; 3.7's module cannot be built from the proxy.
TRAEFIK_VERSION=${TRAEFIK_VERSION:-v3.6.12}
# Prometheus' Go module: v0.316.0 is Prometheus 3.16.0 (its module versions are v0.3xx for 3.xx).
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CNI_PLUGINS_VERSION=${CNI_PLUGINS_VERSION:-v1.10.0}
TOOLS_CACHE=${TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rayfleet/tools}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod

HERE=$(cd "$(dirname "$0")" && pwd)
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms
  kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver streaming)

log() { printf '### %s %s\n' "$(date +%T)" "$*" >&2; }

# scratch_module <dir> <module> <require-lines> <import paths...>: a throwaway module under the
# cache whose only job is to pin one version of a server's module graph.
scratch_module() {
  local dir=$1 mod=$2 req=$3; shift 3
  mkdir -p "$dir"
  printf 'module %s\n\ngo 1.26\n\n%s\n' "$mod" "$req" > "$dir/go.mod"
  { printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n'; } > "$dir/tools.go"
  (cd "$dir" && go mod tidy >/dev/null 2>&1 || (cd "$dir" && go mod tidy))
}

k8s_module() {
  local dir=$TOOLS_CACHE/src/kubernetes-$K8S_VERSION req m
  # A module resolved before a staging module joined the list lacks its replace directive.
  [ -f "$dir/go.sum" ] && grep -q "k8s.io/${STAGING[-1]} =>" "$dir/go.mod" && { echo "$dir"; return; }
  req="require k8s.io/kubernetes $K8S_VERSION"$'\n\nreplace (\n'
  for m in "${STAGING[@]}"; do req+=$'\t'"k8s.io/$m => k8s.io/$m $STAGING_VERSION"$'\n'; done
  req+=")"
  log "resolving k8s.io/kubernetes $K8S_VERSION" 
  scratch_module "$dir" rayfleet.local/k8sbuild "$req" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
  echo "$dir"
}

etcd_module() {
  local dir=$TOOLS_CACHE/src/etcd-$ETCD_VERSION
  [ -f "$dir/go.sum" ] && { echo "$dir"; return; }
  log "resolving etcd $ETCD_VERSION"
  scratch_module "$dir" rayfleet.local/etcdbuild "require go.etcd.io/etcd/server/v3 $ETCD_VERSION" go.etcd.io/etcd/server/v3
  echo "$dir"
}

# traefik_module: a writable copy of traefik's module (the module cache is read-only), whose go.mod
# carries replace directives from module to module, which resolve when built in its own tree.
traefik_module() {
  local dir=$TOOLS_CACHE/src/traefik-$TRAEFIK_VERSION src
  [ -f "$dir/go.mod" ] && { echo "$dir"; return; }
  log "fetching traefik $TRAEFIK_VERSION"
  src=$(GOFLAGS= go mod download -json "github.com/traefik/traefik/v3@$TRAEFIK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$src" ] || { echo "build.sh: cannot download traefik $TRAEFIK_VERSION" >&2; return 1; }
  rm -rf "$dir.tmp" && mkdir -p "$(dirname "$dir")"
  cp -R "$src" "$dir.tmp" && chmod -R u+w "$dir.tmp"
  # The web UI is built with npm, not Go; `//go:embed static` only needs one file to compile,
  # and the local fleet runs Traefik without its dashboard.
  mkdir -p "$dir.tmp/webui/static"
  [ -n "$(ls -A "$dir.tmp/webui/static")" ] || echo 'web UI not built' > "$dir.tmp/webui/static/placeholder.txt"
  mv "$dir.tmp" "$dir"
  echo "$dir"
}

# prometheus_release: the Prometheus release of $PROMETHEUS_VERSION (v0.316.0 is 3.16.0).
prometheus_release() {
  local minor=${PROMETHEUS_VERSION#v0.}
  echo "$((${minor%%.*} / 100)).$((${minor%%.*} % 100)).${minor#*.}"
}

# build <tool>: prints the cached binary's path, building it first when missing.
build() {
  local tool=$1 out dir ldf
  case $tool in
    etcd) out=$TOOLS_CACHE/etcd-$ETCD_VERSION ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy) out=$TOOLS_CACHE/$tool-$K8S_VERSION ;;
    containerd|containerd-shim-runc-v2|ctr) out=$TOOLS_CACHE/$tool-$CONTAINERD_VERSION ;;
    # One directory of plugins, which is what a CNI bin dir is.
    cni-plugins) out=$TOOLS_CACHE/cni-plugins-$CNI_PLUGINS_VERSION ;;
    kwok) out=$TOOLS_CACHE/kwok-$KWOK_VERSION ;;
    helm) out=$TOOLS_CACHE/helm-$HELM_VERSION-k8s1.$MINOR ;;
    controller-gen) out=$TOOLS_CACHE/controller-gen-$CONTROLLER_TOOLS_VERSION ;;
    golangci-lint) out=$TOOLS_CACHE/golangci-lint-$GOLANGCI_LINT_VERSION ;;
    traefik) out=$TOOLS_CACHE/traefik-$TRAEFIK_VERSION ;;
    promtool) out=$TOOLS_CACHE/$tool-$PROMETHEUS_VERSION ;;
    # Named for its discoveries: a build without Kubernetes' is cached under the plain name.
    prometheus) out=$TOOLS_CACHE/$tool-$PROMETHEUS_VERSION-kubernetes-sd ;;
    # Ours, so its cached build is keyed by its source too.
    promql-names) out=$TOOLS_CACHE/$tool-$(cat "$HERE"/promql/{go.mod,go.sum,main.go} | sha256sum | cut -c1-12) ;;
    *) echo "build.sh: unknown tool $tool" >&2; return 2 ;;
  esac
  if [ ! -x "$out" ] || { [ -d "$out" ] && [ ! -x "$out/portmap" ]; }; then
    log "building $tool (cold: minutes; cached afterwards in $TOOLS_CACHE)"
    local tmp=$out.tmp.$$
    case $tool in
      etcd)
        dir=$(etcd_module)
        (cd "$dir" && go build -trimpath -ldflags '-s -w' -o "$tmp" go.etcd.io/etcd/server/v3) ;;
      kube-*|kubectl|kubelet)
        dir=$(k8s_module)
        # Without the -X flags the binaries call themselves v0.0.0-master.
        ldf="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
        ldf+=" -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean"
        ldf+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
        (cd "$dir" && go build -trimpath -ldflags "$ldf" -o "$tmp" "k8s.io/kubernetes/cmd/$tool") ;;
      containerd|containerd-shim-runc-v2|ctr)
        ldf="-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
        go_install "$tmp" "github.com/containerd/containerd/v2/cmd/$tool@$CONTAINERD_VERSION" "$ldf" ;;
      cni-plugins)
        local m=github.com/containernetworking/plugins/plugins
        go_install "$tmp" "$m/main/bridge@$CNI_PLUGINS_VERSION" "$m/ipam/host-local@$CNI_PLUGINS_VERSION" \
          "$m/main/loopback@$CNI_PLUGINS_VERSION" "$m/meta/portmap@$CNI_PLUGINS_VERSION" ;;
      kwok) go_install "$tmp" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "-s -w" ;;
      helm)
        ldf="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
        ldf+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$MINOR"
        ldf+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$MINOR"
        go_install "$tmp" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "$ldf" ;;
      controller-gen) go_install "$tmp" "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION" "-s -w" ;;
      golangci-lint) go_install "$tmp" "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION" "-s -w" ;;
      traefik)
        dir=$(traefik_module)
        ldf="-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION"
        ldf+=" -X github.com/traefik/traefik/v3/pkg/version.BuildDate=1970-01-01T00:00:00Z"
        (cd "$dir" && go build -trimpath -ldflags "$ldf" -o "$tmp" ./cmd/traefik) ;;
      promtool|prometheus)
        # remove_all_sd leaves out the cloud service discoveries, most of the server's build;
        # the server keeps Kubernetes', which e2e/install scrapes the charts' Pods with. The web
        # UI is not embedded (no builtinassets tag); the HTTP API works without it.
        tags=remove_all_sd
        if [ "$tool" = prometheus ]; then tags+=,enable_kubernetes_sd; fi
        ldf="-s -w -X github.com/prometheus/common/version.Version=$(prometheus_release)"
        GO_TAGS=$tags go_install "$tmp" "github.com/prometheus/prometheus/cmd/$tool@$PROMETHEUS_VERSION" "$ldf" ;;
      promql-names)
        # Its own module (e2e/tools/promql), whose go.mod pins the Prometheus of
        # PROMETHEUS_VERSION's default.
        (cd "$HERE/promql" && go build -trimpath -ldflags '-s -w' -o "$tmp" .) ;;
    esac
    if [ -d "$tmp" ]; then rm -rf "$out"; fi
    mv -f "$tmp" "$out"
  fi
  echo "$out"
}

# go_install <out> <pkg@version> <ldflags>: `go install` into a private GOBIN, then move. With
# several packages (go_install <out-dir> <pkg@version>...) the binaries land in <out-dir>.
# GO_TAGS, when set, are the build tags.
go_install() {
  local out=$1 gobin
  gobin=$(mktemp -d)
  if [ $# -eq 3 ] && [[ $3 == -* ]]; then
    GOBIN=$gobin GOFLAGS= go install -trimpath -tags "${GO_TAGS:-}" -ldflags "$3" "$2"
    mv -f "$gobin"/* "$out"
    rmdir "$gobin"
  else
    shift
    GOBIN=$gobin GOFLAGS= go install -trimpath -ldflags "-s -w" "$@"
    rm -rf "$out" && chmod 755 "$gobin" && mv "$gobin" "$out"
  fi
}

mkdir -p "$TOOLS_CACHE"
for t in "${TOOLS[@]}"; do
  src=$(build "$t")
  ln -sfn "$src" "$BIN_DIR/$t"
done

# kwok refuses to start without stage definitions; render its "fast" stages once.
if [[ " ${TOOLS[*]} " == *" kwok "* && ! -s $BIN_DIR/kwok-stages.yaml ]]; then
  kw=$(GOFLAGS= go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  "$(build kubectl)" kustomize "$kw/kustomize/stage/fast" > "$BIN_DIR/kwok-stages.yaml"
fi
log "tools ready in $BIN_DIR"

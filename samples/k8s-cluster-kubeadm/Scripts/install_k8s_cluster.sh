#!/bin/bash
# Builds one node of a kubeadm Kubernetes cluster: the main master (`kubeadm init`), another master
# (`kubeadm join --control-plane`) or a worker (`kubeadm join`). The VNFM's `k8s-kubeadm` management
# driver copies it to each VM and runs it; it keeps the options and output markers of Tacker's
# install_k8s_cluster.sh so that Tacker-style callers keep working.
#
# The host must already have kubeadm, kubelet and a container runtime (installing them is not this
# script's job), and the login user needs passwordless sudo. Every phase checks its result first,
# so running the script again on a node that is done changes nothing and prints the same markers.
#
# Usage:
#   install_k8s_cluster.sh -m <master IPs, comma-separated; the first is the main master>
#                          -i <cluster IP> [-p <pod CIDR>] [-a <service CIDR>]
#                          [-t <token> -s <CA hash> -k <certificate key>]     (other masters)
#   install_k8s_cluster.sh -w <worker IP> -i <cluster IP> -t <token> -s <CA hash>
#   options: -d verbose, -o log to /tmp/k8s_install_<timestamp>.log, -h help
#
# Environment: ha_flag=True|False (workers: False joins <cluster IP>:6443, anything else :16443;
#   masters: True forces the HA layout with one master), http_proxy/https_proxy/no_proxy (passed to
#   kubeadm), K8S_CNI_MANIFEST (file or URL applied with kubectl after init; none by default),
#   K8S_NODE_IP (this node's cluster address when it is not on one of the host's interfaces),
#   K8S_HAPROXY_BIND (address of the HAProxy frontend, default `*`), HVLAB_ETC (test prefix of
#   every /etc path; empty on real hosts).
#
# Output: the main master prints `token:<t>`, `server:<url>`, the cluster CA (PEM),
# `ssl_ca_cert_hash:<hex>` and `certificate_key:<k>`; every run ends with one line
# `HEALVNFM-RESULT {json}` ({"role","node","ip","joined",...}; token/server/caHash/certificateKey/
# caCert for the main master; "error" on failure). Exit 0 on success, 255 on failure.
set -uo pipefail

MODE=''
MASTER_IPADDRS=''
WORKER_IPADDR=''
CLUSTER_IP=''
K8S_API_CLUSTER_CIDR=10.96.0.0/12
K8S_POD_CIDR=192.168.0.0/16
TOKEN_NAME=''
TOKEN_HASH=''
CERT_KEY=''
DEBUG_MODE=0
OUTPUT_LOGFILE=0
MASTER_CLUSTER_PORT=16443

ETC_ROOT=${HVLAB_ETC:-}
K8S_DIR="$ETC_ROOT/etc/kubernetes"
HAPROXY_CFG="$ETC_ROOT/etc/haproxy/haproxy.cfg"
HOSTS_FILE="$ETC_ROOT/etc/hosts"

ROLE=''
NODE_NAME=''
NODE_IP=''
MAIN_MASTER=0
RESULT_EXTRA=''

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 1
}

say() { printf '%s\n' "$*"; }
debug() { [ "$DEBUG_MODE" = 1 ] && printf '[debug] %s\n' "$*" >&2; return 0; }

json_str() { # a JSON string literal of $1
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/}
  s=${s//$'\t'/\\t}
  printf '"%s"' "$s"
}

result_line() { # joined(true|false) [error]
  local line
  line="{\"role\":$(json_str "${ROLE:-unknown}"),\"node\":$(json_str "$NODE_NAME"),\"ip\":$(json_str "$NODE_IP"),\"joined\":$1"
  [ -n "$RESULT_EXTRA" ] && line+=",$RESULT_EXTRA"
  [ -n "${2:-}" ] && line+=",\"error\":$(json_str "$2")"
  printf 'HEALVNFM-RESULT %s}\n' "$line"
}

fail() {
  say "Install Failed! $*" >&2
  result_line false "$*"
  exit 255
}

# Root commands: direct as root, else passwordless sudo keeping the proxy variables.
if [ "$(id -u)" = 0 ]; then
  SUDO=()
else
  # shellcheck disable=SC2054 # one sudo option listing the variables
  SUDO=(sudo -n --preserve-env=http_proxy,https_proxy,no_proxy,HTTP_PROXY,HTTPS_PROXY,NO_PROXY)
fi
as_root() { "${SUDO[@]}" "$@"; }

# write_root FILE: replaces FILE's content with stdin, in place (bind-mounted files cannot be renamed over).
write_root() { as_root tee "$1" >/dev/null; }

# ---------- options ----------

while getopts 'dom:w:i:a:p:t:s:k:h' opt; do
  case $opt in
  m)
    MASTER_IPADDRS=$OPTARG
    MODE=master
    ;;
  w)
    WORKER_IPADDR=$OPTARG
    MODE=worker
    ;;
  i) CLUSTER_IP=$OPTARG ;;
  a) K8S_API_CLUSTER_CIDR=$OPTARG ;;
  p) K8S_POD_CIDR=$OPTARG ;;
  t) TOKEN_NAME=$OPTARG ;;
  s) TOKEN_HASH=${OPTARG#sha256:} ;;
  k) CERT_KEY=$OPTARG ;;
  d) DEBUG_MODE=1 ;;
  o) OUTPUT_LOGFILE=1 ;;
  h) usage ;;
  *) fail "unknown option (see -h)" ;;
  esac
done

# The VNFM passes the join secrets in the environment (never as arguments, which every process
# list shows); -t / -k still work for callers that pass them the Tacker way.
TOKEN_NAME=${TOKEN_NAME:-${HEALVNFM_TOKEN:-}}
CERT_KEY=${CERT_KEY:-${HEALVNFM_CERT_KEY:-}}
[ -z "${TOKEN_HASH:-}" ] && [ -n "${HEALVNFM_CA_HASH:-}" ] && TOKEN_HASH=${HEALVNFM_CA_HASH#sha256:}

if [ "$OUTPUT_LOGFILE" = 1 ]; then
  umask 077
  exec >"/tmp/k8s_install_$(date +%Y%m%d%H%M%S).log" 2>&1
fi

IFS=, read -r -a MASTER_IPS <<<"$MASTER_IPADDRS"
[ -n "$MODE" ] || fail "one of -m <masters> or -w <worker IP> is required"
[ -n "$CLUSTER_IP" ] || fail "-i <cluster IP> is required"

valid_ip() { [[ $1 =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]]; }
valid_cidr() { [[ $1 =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}/[0-9]{1,2}$ ]]; }
valid_ip "$CLUSTER_IP" || fail "-i: not an IPv4 address: $CLUSTER_IP"
valid_cidr "$K8S_POD_CIDR" || fail "-p: not a CIDR: $K8S_POD_CIDR"
valid_cidr "$K8S_API_CLUSTER_CIDR" || fail "-a: not a CIDR: $K8S_API_CLUSTER_CIDR"

# ---------- this node ----------

local_addresses() {
  ip -4 -o addr show 2>/dev/null | awk '{print $4}' | cut -d/ -f1
}

if [ "$MODE" = master ]; then
  ROLE=master
  [ ${#MASTER_IPS[@]} -gt 0 ] || fail "-m: no master address"
  for m in "${MASTER_IPS[@]}"; do valid_ip "$m" || fail "-m: not an IPv4 address: $m"; done
  if [ -n "${K8S_NODE_IP:-}" ]; then
    NODE_IP=$K8S_NODE_IP
  else
    locals=$(local_addresses)
    for m in "${MASTER_IPS[@]}"; do
      if printf '%s\n' "$locals" | grep -qxF -- "$m"; then
        NODE_IP=$m
        break
      fi
    done
  fi
  [ -n "$NODE_IP" ] || fail "none of the master addresses ($MASTER_IPADDRS) is on this host (set K8S_NODE_IP)"
  [ "$NODE_IP" = "${MASTER_IPS[0]}" ] && MAIN_MASTER=1
  NODE_NAME="master${NODE_IP##*.}"
  HA=0
  if [ ${#MASTER_IPS[@]} -gt 1 ] || [ "${ha_flag:-}" = True ]; then HA=1; fi
  if [ "$HA" = 1 ]; then ENDPOINT="$CLUSTER_IP:$MASTER_CLUSTER_PORT"; else ENDPOINT="$CLUSTER_IP:6443"; fi
  if [ "$MAIN_MASTER" = 0 ]; then
    if [ -z "$TOKEN_NAME" ] || [ -z "$TOKEN_HASH" ] || [ -z "$CERT_KEY" ]; then fail "a joining master needs -t <token>, -s <CA hash> and -k <certificate key>"; fi
  fi
else
  ROLE=worker
  valid_ip "$WORKER_IPADDR" || fail "-w: not an IPv4 address: $WORKER_IPADDR"
  NODE_IP=${K8S_NODE_IP:-$WORKER_IPADDR}
  NODE_NAME="worker${NODE_IP##*.}"
  if [ -z "$TOKEN_NAME" ] || [ -z "$TOKEN_HASH" ]; then fail "a worker needs -t <token> and -s <CA hash>"; fi
  if [ "${ha_flag:-}" = False ]; then ENDPOINT="$CLUSTER_IP:6443"; else ENDPOINT="$CLUSTER_IP:$MASTER_CLUSTER_PORT"; fi
fi
debug "role=$ROLE node=$NODE_NAME ip=$NODE_IP endpoint=$ENDPOINT main=$MAIN_MASTER"

# ---------- prerequisites ----------

as_root true 2>/dev/null || fail "the login user needs passwordless sudo"
as_root sh -c 'command -v kubeadm' >/dev/null 2>&1 ||
  fail "kubeadm is not installed on this host: install kubeadm, kubelet and a container runtime (and turn swap off) before running this script"

# ---------- host name and /etc/hosts ----------

ensure_hosts_alias() {
  if [ -f "$HOSTS_FILE" ] && grep -Eq "^[[:space:]]*[^#[:space:]]+([[:space:]]+[^[:space:]]+)*[[:space:]]+$NODE_NAME([[:space:]]|\$)" "$HOSTS_FILE"; then
    debug "/etc/hosts already names $NODE_NAME"
    return 0
  fi
  local nl=''
  [ -s "$HOSTS_FILE" ] && [ -n "$(tail -c1 "$HOSTS_FILE")" ] && nl=$'\n'
  printf '%s%s %s\n' "$nl" "$NODE_IP" "$NODE_NAME" | as_root tee -a "$HOSTS_FILE" >/dev/null || fail "cannot add $NODE_NAME to $HOSTS_FILE"
  say "added \"$NODE_IP $NODE_NAME\" to $HOSTS_FILE"
}

current_hostname() {
  if [ -n "$ETC_ROOT" ]; then cat "$ETC_ROOT/etc/hostname" 2>/dev/null; else hostname; fi
}

set_hostname() {
  [ "$(current_hostname)" = "$NODE_NAME" ] && return 0
  if [ -n "$ETC_ROOT" ]; then
    printf '%s\n' "$NODE_NAME" | write_root "$ETC_ROOT/etc/hostname" || fail "cannot set the host name"
  elif ! as_root hostnamectl set-hostname "$NODE_NAME" >/dev/null 2>&1; then
    # no systemd (lab hosts, containers): the kernel host name of this UTS namespace
    as_root hostname "$NODE_NAME" || fail "cannot set the host name to $NODE_NAME"
  fi
  say "host name set to $NODE_NAME"
}

ensure_hosts_alias
set_hostname

# ---------- HAProxy in front of the masters' API servers (HA masters) ----------

haproxy_config() {
  local bind=${K8S_HAPROXY_BIND:-*} m
  cat <<EOF
# Written by install_k8s_cluster.sh: TCP load balancing of the Kubernetes API over the masters.
global
    maxconn 4096
    stats socket $ETC_ROOT/etc/haproxy/admin.sock mode 600 level admin
    stats timeout 30s

defaults
    log     global
    mode    tcp
    option  dontlognull
    option  redispatch 1
    retries 3
    timeout connect 5s
    timeout client  1h
    timeout server  1h

frontend kubernetes-apiserver
    mode                 tcp
    bind                 $bind:$MASTER_CLUSTER_PORT
    option               tcplog
    default_backend      kubernetes-apiserver

backend kubernetes-apiserver
    mode        tcp
    balance     roundrobin
EOF
  for m in "${MASTER_IPS[@]}"; do
    printf '    server  master%s  %s:6443 check\n' "${m##*.}" "$m"
  done
}

setup_haproxy() {
  as_root sh -c 'command -v haproxy' >/dev/null 2>&1 || fail "haproxy is not installed on this host (needed by a cluster with several masters)"
  local want changed=0
  want=$(haproxy_config)
  if [ "$(as_root cat "$HAPROXY_CFG" 2>/dev/null)" != "$want" ]; then
    as_root mkdir -p "$(dirname "$HAPROXY_CFG")"
    printf '%s\n' "$want" | write_root "$HAPROXY_CFG" || fail "cannot write $HAPROXY_CFG"
    changed=1
    say "wrote $HAPROXY_CFG (${#MASTER_IPS[@]} masters)"
  fi
  if as_root systemctl is-active --quiet haproxy >/dev/null 2>&1; then
    if [ "$changed" = 1 ]; then
      as_root systemctl reload haproxy || fail "haproxy did not accept the new configuration"
      say "haproxy reloaded"
    fi
  else
    as_root systemctl enable haproxy >/dev/null 2>&1 || true
    as_root systemctl start haproxy || fail "haproxy did not start"
    say "haproxy started"
  fi
}

if [ "$ROLE" = master ] && [ "$HA" = 1 ]; then setup_haproxy; fi

# ---------- the Kubernetes API through admin.conf ----------

# api_get PATH: GET on the cluster's API as the cluster admin (bearer token in admin.conf, else kubectl).
api_get() {
  local conf="$K8S_DIR/admin.conf" server token ca rc
  server=$(as_root sed -n 's/^ *server: *//p' "$conf" | head -1)
  token=$(as_root sed -n 's/^ *token: *//p' "$conf" | head -1)
  if [ -n "$token" ]; then
    ca=$(mktemp)
    as_root sed -n 's/^ *certificate-authority-data: *//p' "$conf" | head -1 | base64 -d >"$ca"
    printf 'header = "Authorization: Bearer %s"\n' "$token" | curl -sSf --max-time 15 --cacert "$ca" -K - "$server$1"
    rc=$?
    rm -f "$ca"
    return $rc
  fi
  as_root kubectl --kubeconfig "$conf" get --raw "$1"
}

# Waits until the cluster lists this node with its address (Tacker's success rule for masters).
wait_node_listed() {
  local deadline=$(($(date +%s) + ${K8S_NODE_WAIT_SECONDS:-300})) body
  while :; do
    body=$(api_get "/api/v1/nodes/$NODE_NAME" 2>/dev/null) && printf '%s' "$body" | grep -q "\"address\": *\"$NODE_IP\"" && return 0
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 2
  done
}

user_kubeconfig() {
  [ -n "$ETC_ROOT" ] && return 0 # tests: the caller's home is not the node's
  [ "$(id -u)" = 0 ] && return 0
  mkdir -p "$HOME/.kube" && as_root cat "$K8S_DIR/admin.conf" >"$HOME/.kube/config" && chmod 600 "$HOME/.kube/config"
}

# ---------- kubeadm ----------

JOINED_BEFORE=false

kubeadm_init() {
  if as_root test -f "$K8S_DIR/admin.conf"; then
    say "kubeadm init already done on this node: skipped"
    JOINED_BEFORE=true
    return 0
  fi
  say "kubeadm init (control-plane endpoint $ENDPOINT)"
  as_root kubeadm init --pod-network-cidr "$K8S_POD_CIDR" --service-cidr "$K8S_API_CLUSTER_CIDR" \
    --control-plane-endpoint "$ENDPOINT" --upload-certs --apiserver-advertise-address "$NODE_IP" ||
    fail "kubeadm init failed"
}

apply_cni() {
  [ -n "${K8S_CNI_MANIFEST:-}" ] || return 0
  as_root sh -c 'command -v kubectl' >/dev/null 2>&1 || fail "K8S_CNI_MANIFEST is set but kubectl is not installed"
  local deadline=$(($(date +%s) + 300)) out
  while :; do
    out=$(as_root kubectl --kubeconfig "$K8S_DIR/admin.conf" apply -f "$K8S_CNI_MANIFEST" 2>&1) && {
      say "$out"
      return 0
    }
    [ "$(date +%s)" -lt "$deadline" ] || fail "applying the pod network $K8S_CNI_MANIFEST failed: $out"
    sleep 10
  done
}

# kubeadm_join [control-plane]: `kubeadm join --config` with a JoinConfiguration written by the
# shell (printf is a builtin) into a root-only temp file, so the bootstrap token and the certificate
# key never appear on a command line (visible to every user in the process list); removed after.
kubeadm_join() {
  local out rc cfg
  if as_root test -f "$K8S_DIR/kubelet.conf" && { [ "$ROLE" = worker ] || as_root test -f "$K8S_DIR/admin.conf"; }; then
    say "This node has joined the cluster before ($K8S_DIR/kubelet.conf exists): kubeadm join skipped"
    JOINED_BEFORE=true
    return 0
  fi
  say "kubeadm join $ENDPOINT${1:+ (control plane)}"
  cfg=$(as_root mktemp /tmp/kubeadm-join-XXXXXXXX.yaml) || fail "cannot create the kubeadm join configuration file"
  {
    printf 'apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n'
    printf '    apiServerEndpoint: "%s"\n    token: "%s"\n    caCertHashes:\n    - "sha256:%s"\n' "$ENDPOINT" "$TOKEN_NAME" "$TOKEN_HASH"
    if [ "${1:-}" = control-plane ]; then
      printf 'controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: "%s"\n  certificateKey: "%s"\n' "$NODE_IP" "$CERT_KEY"
    fi
  } | write_root "$cfg"
  out=$(as_root kubeadm join --config "$cfg" 2>&1)
  rc=$?
  as_root rm -f "$cfg"
  printf '%s\n' "$out"
  if [ "$rc" != 0 ] || [[ $out != *"This node has joined the cluster"* ]]; then
    fail "kubeadm join failed: $(printf '%s\n' "$out" | grep -m1 '^error' || printf '%s\n' "$out" | tail -n 1)"
  fi
}

if [ "$ROLE" = master ] && [ "$MAIN_MASTER" = 1 ]; then
  kubeadm_init
  user_kubeconfig
  apply_cni
elif [ "$ROLE" = master ]; then
  kubeadm_join control-plane
  user_kubeconfig
else
  kubeadm_join
fi

# ---------- result ----------

if [ "$ROLE" = master ]; then
  wait_node_listed || fail "the node $NODE_NAME ($NODE_IP) does not appear in the cluster's nodes"
fi

RESULT_EXTRA="\"mainMaster\":$([ "$MAIN_MASTER" = 1 ] && echo true || echo false),\"alreadyJoined\":$JOINED_BEFORE,\"endpoint\":$(json_str "$ENDPOINT")"

if [ "$ROLE" = master ] && [ "$MAIN_MASTER" = 1 ]; then
  token=$(as_root kubeadm token create | tail -n 1) || fail "kubeadm token create failed"
  server=$(as_root sed -n 's/^ *server: *//p' "$K8S_DIR/admin.conf" | head -1)
  ca_cert=$(cat "$K8S_DIR/pki/ca.crt") || fail "cannot read $K8S_DIR/pki/ca.crt"
  ca_hash=$(openssl x509 -pubkey -in "$K8S_DIR/pki/ca.crt" | openssl rsa -pubin -outform der 2>/dev/null | openssl dgst -sha256 -hex | sed 's/^.* //')
  cert_key=$(as_root kubeadm init phase upload-certs --upload-certs | tail -n 1) || fail "kubeadm init phase upload-certs failed"
  if [ -z "$token" ] || [ -z "$server" ] || [ -z "$ca_hash" ] || [ -z "$cert_key" ]; then fail "could not read the cluster's join data"; fi
  say "token:$token"
  say "server:$server"
  say "$ca_cert"
  say "ssl_ca_cert_hash:$ca_hash"
  say "certificate_key:$cert_key"
  RESULT_EXTRA+=",\"token\":$(json_str "$token"),\"server\":$(json_str "$server"),\"caHash\":$(json_str "$ca_hash"),\"certificateKey\":$(json_str "$cert_key"),\"caCert\":$(json_str "$ca_cert")"
fi

say "Install Success!"
result_line true
exit 0

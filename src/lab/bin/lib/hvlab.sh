# shellcheck shell=bash
# Shared functions of the lab stand-ins (kubeadm, systemctl, service). Sourced, never run.
#
# Host contract: `${HVLAB_ENV_FILE:-/etc/hvlab/env}` holds `KEY=value` lines (HVLAB_IP,
# HVLAB_STATE, HVLAB_SHARED, HVLAB_K8S_URL, HVLAB_K8S_TOKEN, HVLAB_K8S_CA, HVLAB_BIN); every /etc
# path is prefixed with `${HVLAB_ETC:-}` so that tests can run several "hosts" without network
# namespaces. Daemons keep their pid files and logs under HVLAB_STATE (never /run: it is shared).

HV_PROG=${HV_PROG:-$(basename "$0")}

hv_die() {
  printf '%s\n' "$*" >&2
  exit 1
}

hv_warn() {
  printf '%s\n' "$*" >&2
}

# Reads the env file: only HVLAB_* keys, values taken verbatim (optional surrounding quotes).
hv_load_env() {
  HVLAB_ETC=${HVLAB_ETC:-}
  local file=${HVLAB_ENV_FILE:-/etc/hvlab/env} line key val
  [ -r "$file" ] || hv_die "$HV_PROG: cannot read the lab host file $file (HVLAB_ENV_FILE)"
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%$'\r'}
    [[ $line =~ ^[[:space:]]*(export[[:space:]]+)?(HVLAB_[A-Z0-9_]+)=(.*)$ ]] || continue
    key=${BASH_REMATCH[2]}
    val=${BASH_REMATCH[3]}
    if [[ $val =~ ^\"(.*)\"$ ]] || [[ $val =~ ^\'(.*)\'$ ]]; then val=${BASH_REMATCH[1]}; fi
    [ "$key" = HVLAB_ETC ] && continue
    printf -v "$key" '%s' "$val"
  done <"$file"
  local k
  for k in HVLAB_IP HVLAB_STATE HVLAB_SHARED HVLAB_K8S_URL HVLAB_K8S_TOKEN HVLAB_K8S_CA; do
    [ -n "${!k:-}" ] || hv_die "$HV_PROG: $k is not set in $file"
  done
  mkdir -p "$HVLAB_STATE/log"
  # shellcheck disable=SC2034 # used by the stand-ins that source this file
  HV_ETC_K8S="$HVLAB_ETC/etc/kubernetes"
  HV_PKI="$HV_ETC_K8S/pki"
  # shellcheck disable=SC2034
  HV_ETC_HAPROXY="$HVLAB_ETC/etc/haproxy"
  # shellcheck disable=SC2034
  HV_K8S_RECORDS="$HVLAB_SHARED/kubeadm"
}

# The host's name: `$HVLAB_ETC/etc/hostname` when tests run hosts without UTS namespaces,
# else the kernel's host name (each lab host has its own UTS namespace).
hv_hostname() {
  if [ -n "$HVLAB_ETC" ] && [ -s "$HVLAB_ETC/etc/hostname" ]; then
    tr -d ' \n' <"$HVLAB_ETC/etc/hostname"
  else
    hostname
  fi
}

# Hosts on loopback addresses (tests) cannot all listen on 127.0.0.1: only there is the
# 127.0.0.1 listener left out.
hv_loopback_host() {
  [[ ${1:-$HVLAB_IP} == 127.* ]]
}

# ---------- processes ----------

# True when the pid file names a live process whose command line contains $2.
hv_pid_alive() {
  local pidfile=$1 what=$2 pid
  [ -s "$pidfile" ] || return 1
  pid=$(tr -dc '0-9' <"$pidfile")
  [ -n "$pid" ] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$what"
}

hv_pid_of() {
  tr -dc '0-9' <"$1" 2>/dev/null
}

# hv_spawn PIDFILE LOGFILE CMD...: starts CMD detached (own session, stdin /dev/null, output
# appended to LOGFILE, no inherited descriptor above 2) and writes its pid to PIDFILE.
hv_spawn() {
  local pidfile=$1 log=$2
  shift 2
  rm -f "$pidfile"
  # shellcheck disable=SC2016
  setsid -f /bin/bash -c '
    pidfile=$1 log=$2; shift 2
    for fd in /proc/$$/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null; fi
    done
    echo $$ >"$pidfile"
    exec nohup "$@" </dev/null >>"$log" 2>&1' hv-spawn "$pidfile" "$log" "$@" </dev/null >/dev/null 2>&1
  for _ in $(seq 1 100); do
    [ -s "$pidfile" ] && return 0
    sleep 0.02
  done
  hv_die "$HV_PROG: $1 did not start (no pid file $pidfile)"
}

# hv_stop PIDFILE WHAT [group]: SIGTERM (to the process group with `group`), up to 10 s, then SIGKILL.
hv_stop() {
  local pidfile=$1 what=$2 group=${3:-} pid target
  if ! hv_pid_alive "$pidfile" "$what"; then
    rm -f "$pidfile"
    return 0
  fi
  pid=$(hv_pid_of "$pidfile")
  target=$pid
  [ -n "$group" ] && target=-$pid
  kill -TERM -- "$target" 2>/dev/null || true
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL -- "$target" 2>/dev/null || true; fi
  rm -f "$pidfile"
}

# True when something accepts TCP connections on HOST PORT.
hv_port_open() {
  # shellcheck disable=SC2016 # expanded by the inner shell
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' hv-probe "$1" "$2" 2>/dev/null
}

# ---------- simulated Kubernetes API (the lab's cluster state) ----------

# hv_k8s METHOD PATH OUT_FILE [BODY_FILE]: the response body goes to OUT_FILE, the HTTP status to
# HV_HTTP_CODE (000 when the API does not answer). The bearer token travels on stdin (curl -K -),
# never on a command line.
hv_k8s() {
  local method=$1 path=$2 out=$3 body=${4:-} args
  args=(-sS -o "$out" -w '%{http_code}' --max-time 20 --cacert "$HVLAB_K8S_CA" -X "$method" -K -)
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "@$body")
  HV_HTTP_CODE=$(printf 'header = "Authorization: Bearer %s"\n' "$HVLAB_K8S_TOKEN" | curl "${args[@]}" "${HVLAB_K8S_URL%/}$path" 2>/dev/null) || HV_HTTP_CODE=000
}

# Sets HV_NODE_STATE to the status (True/False/Unknown) of the Node's Ready condition, `absent`
# when there is no such Node, or `error` when the API does not answer.
hv_node_ready() {
  local name=$1 out cond
  out=$(mktemp "$HVLAB_STATE/.k8s.XXXXXX")
  hv_k8s GET "/api/v1/nodes/$name" "$out"
  case $HV_HTTP_CODE in
  200)
    cond=$(grep -o '{[^{}]*"type":"Ready"[^{}]*}' "$out" | head -1 || true)
    if [[ $cond =~ \"status\":\"([A-Za-z]+)\" ]]; then HV_NODE_STATE=${BASH_REMATCH[1]}; else HV_NODE_STATE=Unknown; fi
    ;;
  404) HV_NODE_STATE=absent ;;
  *) HV_NODE_STATE=error ;;
  esac
  rm -f "$out"
}

# hv_register_node NAME IP ROLE(control-plane|worker): creates the Node (Ready, InternalIP,
# Hostname), replacing a NotReady one of that name. Refuses a Ready one (kubeadm's rule; the
# caller checks first for the right message).
hv_register_node() {
  local name=$1 ip=$2 role=$3 now labels taints body
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  labels='"kubernetes.io/arch":"amd64","kubernetes.io/os":"linux","beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/os":"linux","kubernetes.io/hostname":"'$name'"'
  taints=''
  if [ "$role" = control-plane ]; then
    labels+=',"node-role.kubernetes.io/control-plane":"","node.kubernetes.io/exclude-from-external-load-balancers":""'
    taints=',"taints":[{"key":"node-role.kubernetes.io/control-plane","effect":"NoSchedule"}]'
  fi
  body=$(mktemp "$HVLAB_STATE/.node.XXXXXX")
  cat >"$body" <<EOF
{"apiVersion":"v1","kind":"Node","metadata":{"name":"$name","labels":{$labels},"annotations":{"kubeadm.alpha.kubernetes.io/cri-socket":"unix:///var/run/containerd/containerd.sock","node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true","hvlab.healvnfm/host-ip":"$ip"}},
"spec":{"providerID":"hvlab://$name"$taints},
"status":{"capacity":{"cpu":"2","memory":"2048Mi","pods":"110","ephemeral-storage":"10240Mi"},"allocatable":{"cpu":"2","memory":"1948Mi","pods":"110","ephemeral-storage":"10240Mi"},
"conditions":[{"type":"MemoryPressure","status":"False","lastHeartbeatTime":"$now","lastTransitionTime":"$now","reason":"KubeletHasSufficientMemory","message":"kubelet has sufficient memory available"},{"type":"DiskPressure","status":"False","lastHeartbeatTime":"$now","lastTransitionTime":"$now","reason":"KubeletHasNoDiskPressure","message":"kubelet has no disk pressure"},{"type":"PIDPressure","status":"False","lastHeartbeatTime":"$now","lastTransitionTime":"$now","reason":"KubeletHasSufficientPID","message":"kubelet has sufficient PID available"},{"type":"Ready","status":"True","lastHeartbeatTime":"$now","lastTransitionTime":"$now","reason":"KubeletReady","message":"kubelet is posting ready status"}],
"addresses":[{"type":"InternalIP","address":"$ip"},{"type":"Hostname","address":"$name"}],
"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},
"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"$(uname -r)","osImage":"healvnfm lab host","containerRuntimeVersion":"containerd://1.7.0-hvlab","kubeletVersion":"$HV_K8S_VERSION","kubeProxyVersion":"$HV_K8S_VERSION","operatingSystem":"linux","architecture":"amd64"}}}
EOF
  hv_node_ready "$name"
  case $HV_NODE_STATE in
  True)
    rm -f "$body"
    hv_die "a Node with name \"$name\" and status \"Ready\" already exists in the cluster"
    ;;
  error)
    rm -f "$body"
    hv_die "cannot reach the Kubernetes API at $HVLAB_K8S_URL to register Node $name"
    ;;
  absent) ;;
  *)
    hv_k8s DELETE "/api/v1/nodes/$name" /dev/null
    ;;
  esac
  hv_k8s POST /api/v1/nodes "$HVLAB_STATE/log/node-register.json" "$body"
  rm -f "$body"
  [ "$HV_HTTP_CODE" = 201 ] || hv_die "registering Node $name failed (HTTP $HV_HTTP_CODE): $(head -c 400 "$HVLAB_STATE/log/node-register.json")"
  printf '%s\n' "$name" >"$HVLAB_STATE/node-name"
}

hv_delete_node() {
  hv_k8s DELETE "/api/v1/nodes/$1" /dev/null
  case $HV_HTTP_CODE in 200 | 202 | 404) return 0 ;; *) return 1 ;; esac
}

# ---------- certificates ----------

# CA hash as kubeadm computes it (SHA-256 of the DER public key), hex.
hv_ca_hash() {
  openssl x509 -pubkey -noout -in "$1" | openssl rsa -pubin -outform der 2>/dev/null | openssl dgst -sha256 -hex | sed 's/^.* //'
}

# A private key: RSA 2048 (`rsa`) or ECDSA P-256 (`ec`, much faster to make).
hv_new_key() { # file rsa|ec
  if [ "$2" = rsa ]; then
    (umask 077 && openssl genrsa -out "$1" 2048 2>/dev/null)
  else
    (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null)
  fi
}

# hv_new_ca CRT KEY CN [rsa|ec]
hv_new_ca() {
  local crt=$1 key=$2 cn=$3
  hv_new_key "$key" "${4:-rsa}" || return 1
  openssl req -x509 -new -key "$key" -sha256 -days 3650 -subj "/CN=$cn" -out "$crt" \
    -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign' 2>/dev/null
}

# hv_new_cert CRT KEY CA_CRT CA_KEY SUBJECT EXT_KEY_USAGE [SAN]: an ECDSA P-256 leaf certificate.
hv_new_cert() {
  local crt=$1 key=$2 cacrt=$3 cakey=$4 subj=$5 eku=$6 san=${7:-} ext csr
  hv_new_key "$key" ec || return 1
  ext=$(mktemp "$HVLAB_STATE/.ext.XXXXXX")
  csr=$(mktemp "$HVLAB_STATE/.csr.XXXXXX")
  {
    echo 'basicConstraints=critical,CA:FALSE'
    echo 'keyUsage=critical,digitalSignature,keyEncipherment,keyAgreement'
    echo "extendedKeyUsage=$eku"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } >"$ext"
  openssl req -new -key "$key" -subj "$subj" -out "$csr" 2>/dev/null &&
    openssl x509 -req -in "$csr" -CA "$cacrt" -CAkey "$cakey" -CAcreateserial -days 365 -sha256 -extfile "$ext" -out "$crt" 2>/dev/null
  local rc=$?
  rm -f "$ext" "$csr" "${cacrt%.crt}.srl"
  return $rc
}

# ---------- etcd ----------

hv_etcdctl() {
  ETCDCTL_API=3 etcdctl --cacert "$HV_PKI/etcd/ca.crt" --cert "$HV_PKI/etcd/healthcheck-client.crt" \
    --key "$HV_PKI/etcd/healthcheck-client.key" --dial-timeout=3s --command-timeout=5s "$@"
}

# Client URL of the local etcd as other hosts reach it.
hv_etcd_client_url() {
  echo "https://$1:2379"
}

# ---------- misc ----------

# Go-style duration (`24h`, `1h30m`, `90s`, `0` = never) to seconds.
hv_duration_seconds() {
  local d=$1 total=0 n u
  [ "$d" = 0 ] && {
    echo 0
    return 0
  }
  [[ $d =~ ^([0-9]+(h|m|s))+$ ]] || return 1
  while [[ $d =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
    n=${BASH_REMATCH[1]}
    u=${BASH_REMATCH[2]}
    d=${BASH_REMATCH[3]}
    case $u in h) total=$((total + n * 3600)) ;; m) total=$((total + n * 60)) ;; s) total=$((total + n)) ;; esac
  done
  echo "$total"
}

hv_sha256() {
  sha256sum | cut -d' ' -f1
}

hv_random_lower() {
  local n=$1 out=''
  while [ ${#out} -lt "$n" ]; do
    out+=$(head -c 64 /dev/urandom | tr -dc 'a-z0-9')
  done
  printf '%s' "${out:0:n}"
}

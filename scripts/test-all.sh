#!/usr/bin/env bash
# Runs the whole test suite with every test stage required (docs/testing.md), on a Debian 12
# machine, as root:
#
#   sudo bash scripts/test-all.sh
#
# 1. installs the Debian packages the stages need (python3-tackerclient for `tacker-cli`,
#    kubernetes-client when no kubectl is installed, PostgreSQL when its binaries are missing;
#    scripts/real-heat/setup.sh installs the packages of `real-heat`),
# 2. starts a throwaway PostgreSQL on a free port (`pg`) and the real Keystone + Heat (`real-heat`),
# 3. runs the README's test command, `npm ci && npm test`, with VNFM_TEST_REQUIRE=all: a stage
#    that cannot run fails the run.
#
# The throwaway PostgreSQL is removed at the end; the real Keystone + Heat keeps running
# (`bash scripts/real-heat.sh down` stops it). .ci/run is this script.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "[test-all] $*"; }
die() { echo "[test-all] ERROR: $*" >&2; exit 1; }
T0=$(date +%s)
since() { echo "$(( $(date +%s) - T0 )) s"; }

[ "$(id -u)" = 0 ] || die "run as root (it installs Debian packages and starts services): sudo bash $0"
command -v apt-get >/dev/null || die "apt-get not found: the stages need a Debian (12) machine"

export DEBIAN_FRONTEND=noninteractive
APT_UPDATED=0
apt_install() {  # apt_install <package>...: installs what is missing
    local missing=() p
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$APT_UPDATED" = 0 ]; then apt-get update -qq; APT_UPDATED=1; fi
    say "installing ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ---- 1. packages of the stages
apt_install python3-tackerclient python3-openstackclient ca-certificates curl
# the dashboard's browser tests (stage browser)
apt_install chromium
# the live-VM lab (stage lab): sshd, etcd, HAProxy, Ansible in network namespaces
apt_install openssh-server etcd-server etcd-client haproxy ansible sshpass socat iproute2 sudo nftables
command -v kubectl >/dev/null 2>&1 || apt_install kubernetes-client
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
    apt_install postgresql
    PGBIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
fi
id postgres >/dev/null 2>&1 || die "no postgres system user after installing PostgreSQL"
say "packages ready ($(since))"

# ---- 2a. throwaway PostgreSQL (stage pg)
PGDIR="$(mktemp -d /tmp/vnfm-test-pg.XXXXXX)"
cleanup() {
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PGDIR"
}
trap cleanup EXIT
chown postgres "$PGDIR"
PGPORT="$(node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGDIR/data" -U postgres -A trust >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -o "-p $PGPORT -k $PGDIR -c listen_addresses=127.0.0.1 -c max_connections=300" -l "$PGDIR/log" -w start >/dev/null
export VNFM_TEST_PG_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres"
say "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') at $VNFM_TEST_PG_URL ($(since))"

# ---- 2b. real Keystone + Heat (stage real-heat)
eval "$(bash scripts/real-heat.sh up)"
say "real Keystone + Heat at $OS_AUTH_URL ($(since))"

# ---- 3. the README's test command, every stage required
export VNFM_TEST_REQUIRE=all
say "running: npm ci && npm test (VNFM_TEST_REQUIRE=$VNFM_TEST_REQUIRE)"
T1=$(date +%s)
status=0
{ npm ci --no-audit --no-fund && npm test; } || status=$?
say "tests finished with exit $status in $(( $(date +%s) - T1 )) s (whole run $(since))"
exit "$status"

#!/usr/bin/env bash
# The real Keystone + Heat of the VNFM's real-Heat test stage (docs/real-heat.md), on 127.0.0.1.
#
#   scripts/real-heat.sh up [--full]   set up (first time: Debian packages, a few minutes) or just
#                                      start (seconds), then print the credentials env on stdout
#   scripts/real-heat.sh down          stop every service
#   scripts/real-heat.sh status        ports, processes, heat-engine workers, a token request
#   scripts/real-heat.sh env           print the credentials env only
#
# Then:  node scripts/run-tests.mjs test/infra/openstack/real-heat.test.ts ...
# The tests find the stage by themselves (a token from Keystone with the credentials of
# /etc/real-heat/admin-openrc); `eval "$(bash scripts/real-heat.sh up)"` also puts OS_* in the
# shell for the `openstack` CLI. Progress goes to stderr.
#
# The work is done by scripts/real-heat/setup.sh (root, apt, Debian 12, no systemd needed).
# `up` runs its full, idempotent setup when Keystone/Heat are not set up yet, or when `--full` is
# given (re-applies the configuration); otherwise only `setup.sh start`, falling back to the full
# setup when the services are not healthy afterwards.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SETUP="$REPO/scripts/real-heat/setup.sh"
OPENRC=/etc/real-heat/admin-openrc

die() { echo "real-heat: $*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo --preserve-env=REAL_HEAT_ADMIN_PASS,REAL_HEAT_SERVICE_PASS,REAL_HEAT_DOMAIN_ADMIN_PASS,REAL_HEAT_KEYSTONE_DB_PASS,REAL_HEAT_HEAT_DB_PASS,REAL_HEAT_RABBIT_PASS,REAL_HEAT_REGION,REAL_HEAT_VNFM_ENDPOINT "$@"
    else die "needs root (Debian packages, services, /etc): run it with sudo"
    fi
}

openrc() {  # openrc <VAR>: a value of admin-openrc, quotes removed
    sed -n "s/^export $1=//p" "$OPENRC" | head -n1 | sed -e "s/^'\(.*\)'$/\1/" -e 's/^"\(.*\)"$/\1/'
}

print_env() {
    [ -r "$OPENRC" ] || die "$OPENRC is missing: run '$0 up' first"
    grep -E '^export OS_[A-Z_]+=' "$OPENRC"
}

# Healthy = Keystone issues a token with the admin-openrc credentials and heat-api lists stacks
# (the same check the tests make, test/helpers/stages.ts).
healthy() {
    [ -r "$OPENRC" ] || return 1
    local url user pass project udom pdom headers token heat
    url=$(openrc OS_AUTH_URL); user=$(openrc OS_USERNAME); pass=$(openrc OS_PASSWORD)
    project=$(openrc OS_PROJECT_NAME); udom=$(openrc OS_USER_DOMAIN_NAME); pdom=$(openrc OS_PROJECT_DOMAIN_NAME)
    headers=$(mktemp)
    local body
    body=$(curl -s -m 15 -D "$headers" "${url%/}/auth/tokens" -H 'Content-Type: application/json' -d "{\"auth\": {
        \"identity\": {\"methods\": [\"password\"], \"password\": {\"user\": {\"name\": \"$user\",
            \"domain\": {\"name\": \"$udom\"}, \"password\": \"$pass\"}}},
        \"scope\": {\"project\": {\"name\": \"$project\", \"domain\": {\"name\": \"$pdom\"}}}}}") || { rm -f "$headers"; return 1; }
    token=$(sed -n 's/^[Xx]-[Ss]ubject-[Tt]oken: *\([^[:space:]]*\).*/\1/p' "$headers")
    rm -f "$headers"
    [ -n "$token" ] || return 1
    heat=$(printf '%s' "$body" | /usr/bin/python3 -c 'import json, sys
cat = json.load(sys.stdin)["token"]["catalog"]
print(next(e["url"] for c in cat if c["type"] == "orchestration" for e in c["endpoints"] if e["interface"] == "public"))' 2>/dev/null) || return 1
    [ "$(curl -s -o /dev/null -w '%{http_code}' -m 15 -H "X-Auth-Token: $token" "$heat/stacks")" = 200 ]
}

set_up() { [ -r "$OPENRC" ] && [ -f /etc/heat/heat.conf ] && [ -f /etc/real-heat/heat-api-uwsgi.ini ] && command -v heat-engine >/dev/null; }

case "${1:-}" in
    up)
        t0=$SECONDS
        if [ "${2:-}" = --full ] || ! set_up; then
            as_root bash "$SETUP" setup >&2
        else
            as_root bash "$SETUP" start >&2 || true
            if ! healthy; then
                echo "real-heat: not healthy after start; running the full setup" >&2
                as_root bash "$SETUP" setup >&2
            fi
        fi
        healthy || die "Keystone/Heat do not answer after the setup (logs: /var/log/keystone, /var/log/heat, /etc/real-heat/setup.log)"
        echo "real-heat: up in $(( SECONDS - t0 )) s: Keystone $(openrc OS_AUTH_URL), Heat http://127.0.0.1:8004/v1/<project id>" >&2
        print_env
        ;;
    down)
        as_root bash "$SETUP" stop >&2
        ;;
    status)
        rc=0
        as_root bash "$SETUP" status || rc=1
        if healthy; then echo "token: OK (Keystone issues a token, Heat lists stacks)"; else echo "token: NOT OK"; rc=1; fi
        exit $rc
        ;;
    env)
        print_env
        ;;
    *)
        die "usage: $0 up [--full] | down | status | env"
        ;;
esac

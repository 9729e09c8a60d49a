#!/usr/bin/env bash
# Real Keystone + Heat on 127.0.0.1 for the VNFM's real-Heat test stage (docs/real-heat.md).
#
#   scripts/real-heat.sh up [--full]   install (first time) / start, then print the credentials env
#   scripts/real-heat.sh down          stop the services
#   scripts/real-heat.sh status        ports, processes, heat-engine workers, token check
#   scripts/real-heat.sh env           print the credentials env only
#
# Typical use:   eval "$(bash scripts/real-heat.sh up)" && node scripts/run-tests.mjs test/infra/openstack/real-heat.test.ts
#
# It drives ${VNFM_SHARED_DIR:-<repo>/../shared}/tools/real-heat/setup.sh, which needs root, apt
# (Debian 12 packages) and no systemd. `up` runs the full, idempotent setup the first time (about
# 2-4 minutes) and only starts the services afterwards (seconds); `up --full` always runs the
# full setup (re-applies the configuration). Progress goes to stderr, the env to stdout.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${VNFM_SHARED_DIR:-$REPO/../shared}"
SETUP="$SHARED/tools/real-heat/setup.sh"
OPENRC=/etc/real-heat/admin-openrc
AUTH_URL=http://127.0.0.1:5000/v3

die() { echo "real-heat: $*" >&2; exit 1; }

[ -f "$SETUP" ] || die "setup script not found: $SETUP (set VNFM_SHARED_DIR)"

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo -E "$@"
    else die "must run as root (apt packages, services on 127.0.0.1)"
    fi
}

# Prints the env a test run needs; the values come from the file setup.sh writes.
print_env() {
    [ -r "$OPENRC" ] || die "no $OPENRC: run '$0 up' first"
    echo "export VNFM_REAL_HEAT=1"
    grep -E '^export OS_(AUTH_URL|USERNAME|PASSWORD|PROJECT_NAME|USER_DOMAIN_NAME|PROJECT_DOMAIN_NAME|REGION_NAME)=' "$OPENRC"
}

# True when Keystone issues a token with the configured credentials and heat-api answers.
healthy() {
    [ -r "$OPENRC" ] || return 1
    local user pass project
    user=$(sed -n "s/^export OS_USERNAME=//p" "$OPENRC" | tr -d "'")
    pass=$(sed -n "s/^export OS_PASSWORD=//p" "$OPENRC" | tr -d "'")
    project=$(sed -n "s/^export OS_PROJECT_NAME=//p" "$OPENRC" | tr -d "'")
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$AUTH_URL/auth/tokens" \
        -H 'Content-Type: application/json' -d "{\"auth\": {\"identity\": {\"methods\": [\"password\"],
        \"password\": {\"user\": {\"name\": \"$user\", \"domain\": {\"name\": \"Default\"}, \"password\": \"$pass\"}}},
        \"scope\": {\"project\": {\"name\": \"$project\", \"domain\": {\"name\": \"Default\"}}}}}" || true)
    [ "$code" = 201 ] || return 1
    curl -s -o /dev/null -m 5 http://127.0.0.1:8004/ || return 1
}

installed() {
    [ -r "$OPENRC" ] && command -v heat-engine >/dev/null 2>&1 && command -v keystone-manage >/dev/null 2>&1
}

cmd="${1:-up}"
case "$cmd" in
    up)
        t0=$(date +%s)
        if [ "${2:-}" = "--full" ] || ! installed; then
            as_root bash "$SETUP" >&2
        else
            as_root bash "$SETUP" start >&2
            if ! healthy; then
                echo "real-heat: services not healthy after start, running the full setup" >&2
                as_root bash "$SETUP" >&2
            fi
        fi
        healthy || die "Keystone/Heat not answering after setup (see /var/log/keystone, /var/log/heat)"
        echo "real-heat: up in $(( $(date +%s) - t0 )) s (Keystone $AUTH_URL, Heat http://127.0.0.1:8004/v1/<project>)" >&2
        print_env
        ;;
    down)
        as_root bash "$SETUP" stop >&2
        ;;
    status)
        as_root bash "$SETUP" status
        if healthy; then echo "token: OK (Keystone issues tokens, heat-api answers)"; else echo "token: NOT OK"; exit 1; fi
        ;;
    env)
        print_env
        ;;
    *)
        die "usage: $0 up [--full] | down | status | env"
        ;;
esac

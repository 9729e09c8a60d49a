#!/usr/bin/env bash
# Brings up the real OpenStack Keystone + Heat of the VNFM's real-Heat test stage
# (docs/real-heat.md) from Debian 12 packages, on 127.0.0.1 only. Needs root and apt; no systemd.
#
#   setup.sh [setup]   install missing packages, configure, start, smoke-test (idempotent)
#   setup.sh start     start whatever is not running (packages and configuration must exist)
#   setup.sh stop      stop everything this script starts
#   setup.sh status    ports, processes, heat-engine workers (exit status 1 when something is down)
#
#   127.0.0.1:3306  MariaDB           127.0.0.1:5672  RabbitMQ (epmd 4369, distribution 25672)
#   127.0.0.1:5000  Keystone (uwsgi)  127.0.0.1:8004  heat-api (uwsgi); heat-engine: RPC only
#
# The admin credentials end up in /etc/real-heat/admin-openrc. Passwords can be set through the
# environment (letters, digits and . _ ~ + - only); see "Settings" below.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONF="$HERE/conf"
TEMPLATES="$HERE/templates"

ETC_DIR=/etc/real-heat
RUN_DIR=/run/real-heat
LIB_DIR=/usr/local/lib/real-heat
OPENRC="$ETC_DIR/admin-openrc"
SETUP_LOG="$ETC_DIR/setup.log"
ENGINE_LAUNCHER="$LIB_DIR/heat-engine-launcher"
PY=/usr/bin/python3            # Debian's Python (the OpenStack modules), whatever PATH says
KEYSTONE_URL=http://127.0.0.1:5000/v3
HEAT_URL_TEMPLATE='http://127.0.0.1:8004/v1/%(tenant_id)s'

# ---- Settings ---------------------------------------------------------------------------------
# The admin password defaults to the one of an existing admin-openrc, so that `start` after a
# setup with a custom password still logs in.
openrc_value() { [ -r "$OPENRC" ] && sed -n "s/^export $1='\{0,1\}\([^']*\)'\{0,1\}$/\1/p" "$OPENRC" | head -n1; }
ADMIN_PASS="${REAL_HEAT_ADMIN_PASS:-$(openrc_value OS_PASSWORD || true)}"
ADMIN_PASS="${ADMIN_PASS:-admin-secret}"
SERVICE_PASS="${REAL_HEAT_SERVICE_PASS:-heat-secret}"              # Keystone user heat (service)
DOMAIN_ADMIN_PASS="${REAL_HEAT_DOMAIN_ADMIN_PASS:-heat-domain-secret}" # heat_domain_admin
KEYSTONE_DB_PASS="${REAL_HEAT_KEYSTONE_DB_PASS:-keystone-db-secret}"
HEAT_DB_PASS="${REAL_HEAT_HEAT_DB_PASS:-heat-db-secret}"
RABBIT_PASS="${REAL_HEAT_RABBIT_PASS:-rabbit-secret}"
REGION="${REAL_HEAT_REGION:-RegionOne}"
# The catalog entry (type nfv-orchestration) that points `openstack vnflcm` at the VNFM under
# test. Empty: no entry.
VNFM_ENDPOINT="${REAL_HEAT_VNFM_ENDPOINT-http://127.0.0.1:9890/}"

PACKAGES=(
    mariadb-server rabbitmq-server
    keystone heat-api heat-engine uwsgi-core uwsgi-plugin-python3
    python3-pymysql python3-keystoneclient
    python3-openstackclient python3-heatclient python3-tackerclient
    curl iproute2
)

export LC_ALL=C.UTF-8
export ERL_EPMD_ADDRESS=127.0.0.1   # rabbitmqctl may start epmd itself: keep it on loopback

# ---- Output and timing ------------------------------------------------------------------------
T0=$EPOCHREALTIME
T_LAST=$T0
say() { printf '[real-heat] %s\n' "$*"; }
fail() { printf '[real-heat] ERROR: %s\n' "$*" >&2; exit 1; }
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
done_step() { printf '[real-heat] %-34s %6s s\n' "$1" "$(seconds_since "$T_LAST")"; T_LAST=$EPOCHREALTIME; }

[ "$(id -u)" = 0 ] || fail "must run as root (Debian packages, services, /etc)"

with_systemd() { [ -d /run/systemd/system ]; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_for() {  # wait_for <seconds> <command...>: retries the command every 0.25 s
    local until=$(( SECONDS + $1 )); shift
    while ! "$@"; do
        [ $SECONDS -lt $until ] || return 1
        sleep 0.25
    done
}
http_up() { curl -s -o /dev/null -m 2 "$1"; }

# What a service was started with (its configuration files): a setup restarts a running service
# whose configuration changed since.
fingerprint() {
    case $1 in
        keystone) cat /etc/keystone/keystone.conf "$ETC_DIR/keystone-uwsgi.ini" ;;
        heat-api) cat /etc/heat/heat.conf "$ETC_DIR/heat-api-uwsgi.ini" ;;
        heat-engine) cat /etc/heat/heat.conf "$ENGINE_LAUNCHER" ;;
    esac 2>/dev/null | sha256sum | cut -c1-16
}
remember_config() { fingerprint "$1" >"$RUN_DIR/$1.config"; }
config_changed() { [ "$(cat "$RUN_DIR/$1.config" 2>/dev/null)" != "$(fingerprint "$1")" ]; }

admin_token_ok() {  # Keystone gives the admin a project token with $ADMIN_PASS
    [ "$(curl -s -o /dev/null -w '%{http_code}' -m 20 "$KEYSTONE_URL/auth/tokens" -H 'Content-Type: application/json' \
        -d '{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "admin",
             "domain": {"name": "Default"}, "password": "'"$ADMIN_PASS"'"}}},
             "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}')" = 201 ]
}

check_passwords() {
    local v
    for v in ADMIN_PASS SERVICE_PASS DOMAIN_ADMIN_PASS KEYSTONE_DB_PASS HEAT_DB_PASS RABBIT_PASS REGION; do
        [[ "${!v}" =~ ^[A-Za-z0-9._~+-]+$ ]] || fail "$v: use letters, digits and . _ ~ + - only"
    done
}

# render <template> <target> <owner> <mode>: fills in the @NAME@ placeholders.
render() {
    local tmp="$2.real-heat-new"
    sed -e "s|@SERVICE_PASS@|$SERVICE_PASS|g" \
        -e "s|@DOMAIN_ADMIN_PASS@|$DOMAIN_ADMIN_PASS|g" \
        -e "s|@KEYSTONE_DB_PASS@|$KEYSTONE_DB_PASS|g" \
        -e "s|@HEAT_DB_PASS@|$HEAT_DB_PASS|g" \
        -e "s|@RABBIT_PASS@|$RABBIT_PASS|g" \
        -e "s|@REGION@|$REGION|g" "$1" >"$tmp"
    chown "$3" "$tmp"
    chmod "$4" "$tmp"
    mv -f "$tmp" "$2"
}

# ---- Admin helper (Python, Debian's OpenStack libraries) --------------------------------------
# One Python process does what would take dozens of `openstack` CLI calls (each ~1.5 s).
#   admin entities           Keystone projects/users/roles/services/endpoints for Heat + the VNFM
#   admin engines <seconds> <since>  waits until a heat-engine worker started after <since>
#                            (epoch) reports "up"; prints how many did
#   admin services           lists the heat-engine workers
#   admin smoke <template>   creates a stack from the template, waits, deletes it
admin() {
    RH_ADMIN_PASS="$ADMIN_PASS" RH_SERVICE_PASS="$SERVICE_PASS" RH_DOMAIN_ADMIN_PASS="$DOMAIN_ADMIN_PASS" \
    RH_REGION="$REGION" RH_VNFM_ENDPOINT="$VNFM_ENDPOINT" RH_KEYSTONE_URL="$KEYSTONE_URL" \
    RH_HEAT_URL="$HEAT_URL_TEMPLATE" "$PY" - "$@" <<'PYTHON'
import os, sys, time
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

env = os.environ
auth = v3.Password(auth_url=env["RH_KEYSTONE_URL"], username="admin", password=env["RH_ADMIN_PASS"],
                   project_name="admin", user_domain_name="Default", project_domain_name="Default")
sess = ks_session.Session(auth=auth, timeout=30)
HEAT = {"service_type": "orchestration", "interface": "public"}


def one(items, what):
    items = list(items)
    if len(items) > 1:
        sys.exit(f"more than one {what}")
    return items[0] if items else None


def entities():
    from keystoneclient.v3 import client
    ks = client.Client(session=sess, interface="public")
    region = env["RH_REGION"]

    def role(name):
        return one(ks.roles.list(name=name), f"role {name}") or ks.roles.create(name)

    def domain(name, description):
        return one(ks.domains.list(name=name), f"domain {name}") or ks.domains.create(name, description=description)

    def password_works(name, dom, password):
        try:
            v3.Password(auth_url=env["RH_KEYSTONE_URL"], username=name, password=password,
                        user_domain_id=dom.id).get_access(ks_session.Session(timeout=30))
            return True
        except Exception:  # noqa: BLE001 - any failure: set the password
            return False

    def user(name, dom, password):
        u = one(ks.users.list(name=name, domain=dom), f"user {name}")
        if u is None:
            return ks.users.create(name, domain=dom, password=password)
        # A password change revokes the user's tokens: only when the configured one fails.
        if not password_works(name, dom, password):
            ks.users.update(u, password=password)
        return u

    def service(stype, name, description):
        return one(ks.services.list(type=stype), f"service {stype}") or \
            ks.services.create(name, type=stype, description=description)

    def endpoints(svc, url):
        for interface in ("public", "internal", "admin"):
            found = list(ks.endpoints.list(service=svc, interface=interface))
            if not found:
                ks.endpoints.create(svc, url, interface=interface, region=region)
            for e in found:
                if e.url != url:
                    ks.endpoints.update(e, url=url)

    if not any(r.id == region for r in ks.regions.list()):
        ks.regions.create(id=region)
    default = ks.domains.get("default")
    admin_role = role("admin")
    service_project = one(ks.projects.list(name="service", domain=default), "project service") or \
        ks.projects.create("service", default, description="Service users")
    admin_project = one(ks.projects.list(name="admin", domain=default), "project admin")
    admin_user = one(ks.users.list(name="admin", domain=default), "user admin")

    heat_user = user("heat", default, env["RH_SERVICE_PASS"])
    ks.roles.grant(admin_role, user=heat_user, project=service_project)
    endpoints(service("orchestration", "heat", "Orchestration"), env["RH_HEAT_URL"])

    stack_domain = domain("heat", "Projects and users Heat creates for stacks")
    domain_admin = user("heat_domain_admin", stack_domain, env["RH_DOMAIN_ADMIN_PASS"])
    ks.roles.grant(admin_role, user=domain_admin, domain=stack_domain)
    owner = role("heat_stack_owner")
    role("heat_stack_user")
    ks.roles.grant(owner, user=admin_user, project=admin_project)

    vnfm = env.get("RH_VNFM_ENDPOINT", "")
    if vnfm:
        endpoints(service("nfv-orchestration", "tacker", "The VNFM under test"), vnfm)


def engines(wait, since):
    # Workers of an engine that was just stopped stay "up" for a while: only count those that
    # registered after `since` (epoch seconds; a little clock slack allowed).
    from datetime import datetime, timezone
    deadline = time.monotonic() + wait
    while True:
        try:
            svcs = sess.get("/services", endpoint_filter=HEAT).json()["services"]
            fresh = [s for s in svcs if s.get("status") == "up" and
                     datetime.fromisoformat(s["created_at"]).replace(tzinfo=timezone.utc).timestamp() >= since - 5]
            if fresh:
                print(len(fresh))
                return
        except Exception:  # noqa: BLE001 - keep polling until the deadline
            pass
        if time.monotonic() > deadline:
            sys.exit(f"no new heat-engine worker is up after {wait} s")
        time.sleep(0.5)


def services():
    for s in sess.get("/services", endpoint_filter=HEAT).json()["services"]:
        print(f"  {s['binary']} {s['engine_id']} {s['status']:4} started {s['created_at'][:19]} host {s['host']}")


def smoke(path):
    name = "real-heat-smoke"

    def wait_status(url, done, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            st = sess.get(url, endpoint_filter=HEAT).json()["stack"]
            if st["stack_status"] in done or st["stack_status"].endswith("FAILED"):
                return st
            time.sleep(0.3)
        sys.exit(f"{url}: still not {done} after {seconds} s")

    def delete(stack_id):
        url = f"/stacks/{name}/{stack_id}"
        sess.delete(url, endpoint_filter=HEAT)
        wait_status(url, ("DELETE_COMPLETE",))
        # the name is free once it is no longer listed
        for _ in range(100):
            if not sess.get(f"/stacks?stack_name={name}", endpoint_filter=HEAT).json()["stacks"]:
                return
            time.sleep(0.3)

    for old in sess.get(f"/stacks?stack_name={name}", endpoint_filter=HEAT).json()["stacks"]:
        delete(old["id"])
    with open(path) as f:
        body = {"stack_name": name, "template": f.read(), "parameters": {"label": "smoke"},
                "disable_rollback": True, "timeout_mins": 5}
    sid = sess.post("/stacks", json=body, endpoint_filter=HEAT).json()["stack"]["id"]
    st = wait_status(f"/stacks/{name}/{sid}", ("CREATE_COMPLETE",))
    if st["stack_status"] != "CREATE_COMPLETE":
        sys.exit(f"smoke stack: {st['stack_status']}: {st.get('stack_status_reason')}")
    outputs = {o["output_key"]: o.get("output_value") for o in st.get("outputs") or []}
    delete(sid)
    print(f"smoke stack created and deleted (outputs: {sorted(outputs)})")


cmd = sys.argv[1]
if cmd == "entities":
    entities()
elif cmd == "engines":
    engines(float(sys.argv[2]), float(sys.argv[3]))
elif cmd == "services":
    services()
elif cmd == "smoke":
    smoke(sys.argv[2])
else:
    sys.exit(f"unknown admin command {cmd}")
PYTHON
}

# ---- Packages ---------------------------------------------------------------------------------
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }

POLICY_RC_OURS=0
drop_policy_rc() { if [ "$POLICY_RC_OURS" = 1 ]; then rm -f /usr/sbin/policy-rc.d; POLICY_RC_OURS=0; fi; }

install_packages() {
    local p missing=()
    for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
    if [ ${#missing[@]} = 0 ]; then say "Debian packages: all present"; return; fi
    say "installing ${missing[*]}"
    # The maintainer scripts must not start keystone/heat with Debian's stock configuration
    # (all interfaces): a policy-rc.d that forbids every start, for the time of the install only.
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\n# real-heat setup: no service starts during the install\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        POLICY_RC_OURS=1
        trap drop_policy_rc EXIT
    fi
    # No questions, no dbconfig-common: this script sets up databases and Keystone itself.
    debconf-set-selections <<'EOF'
keystone keystone/configure_db boolean false
keystone keystone/dbconfig-install boolean false
keystone keystone/create-admin-tenant boolean false
keystone keystone/register-endpoint boolean false
heat-common heat/configure_db boolean false
heat-common heat-common/dbconfig-install boolean false
heat-common heat/configure_with_debconf boolean false
heat-common heat/configure_rabbit boolean false
heat-common heat/configure_ksat boolean false
heat-api heat/configure_api-endpoint boolean false
EOF
    # apt-get update only when the lists are missing, older than a day, or lack a package.
    local lists_age=999999
    if compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
        lists_age=$(( $(date +%s) - $(stat -c %Y /var/lib/apt/lists/*_Packages* | sort -n | tail -n1) ))
    fi
    local need_update=0
    [ "$lists_age" -lt 86400 ] || need_update=1
    for p in "${missing[@]}"; do
        apt-cache show "$p" >/dev/null 2>&1 || need_update=1
    done
    if [ $need_update = 1 ]; then apt-get update -q; fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; then
        say "install failed; refreshing the package lists and retrying"
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
    drop_policy_rc
    if with_systemd; then
        # Debian's units would serve keystone/heat with the stock configuration.
        systemctl disable --now keystone heat-api heat-api-cfn heat-engine 2>/dev/null || true
    fi
}

# ---- MariaDB and RabbitMQ ---------------------------------------------------------------------
start_mariadb() {
    if listening 3306; then return; fi
    if with_systemd; then systemctl start mariadb; else /etc/init.d/mariadb start >/dev/null; fi
    wait_for 30 mysqladmin --silent ping >/dev/null 2>&1 || fail "MariaDB did not start (/var/log/mysql, syslog)"
}

stop_mariadb() {
    listening 3306 || return 0
    if with_systemd; then systemctl stop mariadb; else /etc/init.d/mariadb stop >/dev/null || true; fi
}

install_rabbit_env() {
    install -m 644 "$CONF/rabbitmq-env.conf" /etc/rabbitmq/rabbitmq-env.conf
}

start_rabbitmq() {
    if listening 5672; then return; fi
    if with_systemd; then systemctl start rabbitmq-server; else /etc/init.d/rabbitmq-server start >/dev/null; fi
    rabbitmqctl -q await_startup >/dev/null 2>&1 || fail "RabbitMQ did not start (/var/log/rabbitmq)"
}

stop_rabbitmq() {
    if listening 5672 || pgrep -u rabbitmq beam.smp >/dev/null; then
        if with_systemd; then systemctl stop rabbitmq-server; else /etc/init.d/rabbitmq-server stop >/dev/null || true; fi
    fi
    if pgrep -x epmd >/dev/null; then epmd -kill >/dev/null 2>&1 || true; fi
}

configure_backends() {
    mysql --batch <<EOF
CREATE DATABASE IF NOT EXISTS keystone;
CREATE DATABASE IF NOT EXISTS heat;
CREATE USER IF NOT EXISTS 'keystone'@'localhost' IDENTIFIED BY '$KEYSTONE_DB_PASS';
CREATE USER IF NOT EXISTS 'heat'@'localhost' IDENTIFIED BY '$HEAT_DB_PASS';
ALTER USER 'keystone'@'localhost' IDENTIFIED BY '$KEYSTONE_DB_PASS';
ALTER USER 'heat'@'localhost' IDENTIFIED BY '$HEAT_DB_PASS';
GRANT ALL PRIVILEGES ON keystone.* TO 'keystone'@'localhost';
GRANT ALL PRIVILEGES ON heat.* TO 'heat'@'localhost';
FLUSH PRIVILEGES;
EOF
    if rabbitmqctl -q list_users 2>/dev/null | awk '{print $1}' | grep -qx openstack; then
        rabbitmqctl -q change_password openstack "$RABBIT_PASS" >/dev/null
    else
        rabbitmqctl -q add_user openstack "$RABBIT_PASS" >/dev/null
    fi
    rabbitmqctl -q set_permissions -p / openstack '.*' '.*' '.*' >/dev/null
}

# ---- Keystone ---------------------------------------------------------------------------------
configure_keystone() {
    mkdir -p "$ETC_DIR" "$RUN_DIR" /var/log/keystone
    render "$CONF/keystone.conf" /etc/keystone/keystone.conf root:keystone 640
    install -m 644 "$CONF/keystone-uwsgi.ini" "$ETC_DIR/keystone-uwsgi.ini"
    touch /var/log/keystone/keystone.log
    chown -R keystone:keystone /var/log/keystone
    # keystone-manage prints harmless eventlet tracebacks at exit: into the setup log with them.
    {
        su -s /bin/sh keystone -c "keystone-manage db_sync"
        if [ -z "$(ls -A /etc/keystone/fernet-keys 2>/dev/null)" ]; then
            keystone-manage fernet_setup --keystone-user keystone --keystone-group keystone
        fi
        if [ -z "$(ls -A /etc/keystone/credential-keys 2>/dev/null)" ]; then
            keystone-manage credential_setup --keystone-user keystone --keystone-group keystone
        fi
    } >>"$SETUP_LOG" 2>&1 || fail "keystone-manage failed (see $SETUP_LOG)"
    chown -R keystone:keystone /var/log/keystone
}

# Admin user, project and role, region, identity endpoints: once, and again whenever the admin
# password no longer works (bootstrap resets it). Keystone must be running.
bootstrap_keystone() {
    if admin_token_ok; then say "Keystone admin: already bootstrapped"; return; fi
    su -s /bin/sh keystone -c "keystone-manage bootstrap --bootstrap-username admin \
        --bootstrap-password '$ADMIN_PASS' --bootstrap-project-name admin \
        --bootstrap-role-name admin --bootstrap-service-name keystone \
        --bootstrap-region-id '$REGION' --bootstrap-public-url $KEYSTONE_URL/ \
        --bootstrap-internal-url $KEYSTONE_URL/ --bootstrap-admin-url $KEYSTONE_URL/" \
        >>"$SETUP_LOG" 2>&1 || fail "keystone-manage bootstrap failed (see $SETUP_LOG)"
    chown -R keystone:keystone /var/log/keystone
    admin_token_ok || fail "no admin token after keystone-manage bootstrap"
}

start_keystone() {
    mkdir -p "$RUN_DIR"
    if alive "$RUN_DIR/keystone.pid" && config_changed keystone; then
        say "Keystone: configuration changed, restarting"
        stop_services keystone
    fi
    if ! listening 5000; then
        uwsgi --ini "$ETC_DIR/keystone-uwsgi.ini" >>"$SETUP_LOG" 2>&1
        remember_config keystone
    fi
    wait_for 60 http_up "$KEYSTONE_URL" || fail "Keystone does not answer (see /var/log/keystone/)"
}

# ---- Heat -------------------------------------------------------------------------------------
configure_heat() {
    mkdir -p "$ETC_DIR" "$RUN_DIR" "$LIB_DIR" /var/lib/heat/lock /var/log/heat
    chown heat:heat /var/lib/heat/lock
    render "$CONF/heat.conf" /etc/heat/heat.conf root:heat 640
    install -m 644 "$CONF/heat-api-uwsgi.ini" "$ETC_DIR/heat-api-uwsgi.ini"
    install -m 755 "$CONF/heat-engine-launcher.py" "$ENGINE_LAUNCHER"
    chown heat:adm /var/log/heat
    chmod 2750 /var/log/heat
    su -s /bin/sh heat -c "heat-manage db_sync" >>"$SETUP_LOG" 2>&1 || fail "heat-manage db_sync failed (see $SETUP_LOG)"
}

start_heat() {
    mkdir -p "$RUN_DIR"
    # heat-engine with the context fix (conf/heat-engine-launcher.py): see docs/real-heat.md.
    local since=0
    if alive "$RUN_DIR/heat-engine.pid" && config_changed heat-engine; then
        say "heat-engine: configuration changed, restarting"
        stop_services heat-engine
    fi
    if alive "$RUN_DIR/heat-api.pid" && config_changed heat-api; then
        say "heat-api: configuration changed, restarting"
        stop_services heat-api
    fi
    if ! alive "$RUN_DIR/heat-engine.pid"; then
        since=$(date +%s)
        start-stop-daemon --start --quiet --background --make-pidfile --pidfile "$RUN_DIR/heat-engine.pid" \
            --chuid heat:heat --chdir /var/lib/heat --output /var/log/heat/heat-engine.out \
            --startas "$ENGINE_LAUNCHER" -- \
            --config-file /etc/heat/heat.conf --log-file /var/log/heat/heat-engine.log
        remember_config heat-engine
    fi
    if ! listening 8004; then
        uwsgi --ini "$ETC_DIR/heat-api-uwsgi.ini" >>"$SETUP_LOG" 2>&1
        remember_config heat-api
    fi
    wait_for 60 http_up http://127.0.0.1:8004/ || fail "heat-api does not answer (see /var/log/heat/)"
    local up
    up=$(admin engines 120 "$since") || fail "heat-engine did not report up (see /var/log/heat/heat-engine.log)"
    say "heat-engine workers up: $up"
}

running() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${st#Z}" = "$st" ]; }

# stop_services <name>...: SIGTERM to each (uwsgi master / heat-engine parent) at once, then up
# to 20 s for them and their workers to finish; whatever is left then gets SIGKILL.
stop_services() {
    local name pid pids=()
    for name in "$@"; do
        alive "$RUN_DIR/$name.pid" || continue
        pid=$(cat "$RUN_DIR/$name.pid")
        # shellcheck disable=SC2207
        pids+=("$pid" $(pgrep -P "$pid" || true))
        kill -TERM "$pid" 2>/dev/null || true
    done
    local until=$(( SECONDS + 20 ))
    for pid in "${pids[@]}"; do
        while running "$pid" && [ $SECONDS -lt $until ]; do sleep 0.25; done
        if running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    done
    for name in "$@"; do rm -f "$RUN_DIR/$name.pid"; done
}

write_openrc() {
    mkdir -p "$ETC_DIR"
    local tmp="$OPENRC.new"
    cat >"$tmp" <<EOF
# Admin credentials of the real-Heat test stage (written by scripts/real-heat/setup.sh).
# Use: . $OPENRC && openstack stack list
export OS_AUTH_URL=$KEYSTONE_URL
export OS_USERNAME=admin
export OS_PASSWORD='$ADMIN_PASS'
export OS_PROJECT_NAME=admin
export OS_USER_DOMAIN_NAME=Default
export OS_PROJECT_DOMAIN_NAME=Default
export OS_REGION_NAME=$REGION
export OS_IDENTITY_API_VERSION=3
export OS_AUTH_TYPE=password
EOF
    # readable by everyone: the tests read it, and it only opens a loopback test cloud
    chmod 644 "$tmp"
    mv -f "$tmp" "$OPENRC"
}

# ---- Subcommands ------------------------------------------------------------------------------
do_setup() {
    check_passwords
    mkdir -p "$ETC_DIR" "$RUN_DIR"
    install_packages;   done_step "packages"
    install_rabbit_env
    start_mariadb;      done_step "MariaDB started"
    start_rabbitmq;     done_step "RabbitMQ started"
    configure_backends; done_step "databases + RabbitMQ user"
    configure_keystone; done_step "Keystone configuration + db_sync"
    start_keystone;     done_step "Keystone started"
    bootstrap_keystone; done_step "Keystone bootstrap"
    admin entities;     done_step "Keystone users/services/endpoints"
    write_openrc
    configure_heat;     done_step "Heat configuration + db_sync"
    start_heat;         done_step "heat-api + heat-engine started"
    say "$(admin smoke "$TEMPLATES/simple.yaml")"
    done_step "smoke stack"
    say "ready in $(seconds_since "$T0") s; credentials: $OPENRC"
}

do_start() {
    [ -f /etc/heat/heat.conf ] && [ -f "$ETC_DIR/keystone-uwsgi.ini" ] && [ -x "$ENGINE_LAUNCHER" ] ||
        fail "not set up yet: run $0 (without arguments) first"
    mkdir -p "$RUN_DIR"
    start_mariadb;  done_step "MariaDB"
    start_rabbitmq; done_step "RabbitMQ"
    start_keystone; done_step "Keystone"
    start_heat;     done_step "heat-api + heat-engine"
    say "started in $(seconds_since "$T0") s"
}

do_stop() {
    stop_services heat-api keystone heat-engine
    done_step "heat-api, Keystone, heat-engine stopped"
    stop_rabbitmq;  done_step "RabbitMQ stopped"
    stop_mariadb;   done_step "MariaDB stopped"
}

do_status() {
    local rc=0 name
    echo "listening (loopback only):"
    ss -ltnpH 2>/dev/null | awk '$4 ~ /:(3306|4369|5000|5672|8004|25672)$/ { printf "  %-22s %s\n", $4, $6 }' | sort -t: -k2 -n
    for name in keystone heat-api heat-engine; do
        if alive "$RUN_DIR/$name.pid"; then
            local pid; pid=$(cat "$RUN_DIR/$name.pid")
            echo "$name: pid $pid, children $(pgrep -P "$pid" | tr '\n' ' ')"
        else
            echo "$name: not running"; rc=1
        fi
    done
    if listening 5000 && listening 8004; then
        echo "heat-engine workers:"
        admin services || rc=1
    else
        rc=1
    fi
    return $rc
}

case "${1:-setup}" in
    setup) do_setup ;;
    start) do_start ;;
    stop) do_stop ;;
    status) do_status ;;
    *) echo "usage: $0 [setup|start|stop|status]" >&2; exit 2 ;;
esac

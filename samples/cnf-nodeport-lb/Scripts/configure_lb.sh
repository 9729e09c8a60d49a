#!/bin/sh
# Tacker's packages carry configure_lb.sh (additionalParams.lcm-kubernetes-external-lb.script_path);
# the healvnfm driver cnf-nodeport-lb does not run it: it renders, validates (haproxy -c) and
# reloads the load balancer's configuration itself. Kept so that Tacker request files work as is.
echo "configure_lb.sh is not used by healvnfm (built-in driver cnf-nodeport-lb)" >&2
exit 1

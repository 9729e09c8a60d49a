"""Placeholder for the artifact ``mgmt-drivers-cnf-nodeport`` of this package.

Tacker runs a copy of its sample driver ``cnf_nodeport_mgmt.py`` for hooks bound to this artifact.
healvnfm never executes this file: hooks whose artifact is named ``mgmt-drivers-cnf-nodeport`` are
served by healvnfm's built-in management driver ``cnf-nodeport-lb`` (instantiate_end, terminate_end,
heal_end), which converges the external load balancer's HAProxy itself. The file only has to exist
so that the package is complete.
"""

raise SystemExit("mgmt-drivers-cnf-nodeport is served by healvnfm's built-in driver cnf-nodeport-lb; this file is not run")
